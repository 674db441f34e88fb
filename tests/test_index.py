"""python -m study index: a reports folder's README lists every results file with its page, command,
commit, date and headline, from the files alone."""

import json
import shutil
from pathlib import Path

from study.__main__ import main

DATA = Path(__file__).parent / "data" / "results_small.json"


def test_the_index_lists_each_results_file_with_its_command_commit_and_headline(tmp_path, capsys):
    shutil.copy(DATA, tmp_path / "run.json")
    assert main(["report", str(tmp_path / "run.json")]) == 0
    (tmp_path / "runs").mkdir()
    shutil.copy(DATA, tmp_path / "runs" / "page-less.json")
    env = json.loads(DATA.read_text())["environment"]
    (tmp_path / "sanitize.json").write_text(json.dumps({
        "schema": 3, "environment": env, "tool_version": "x", "complete": True,
        "results": [{"status": "clean"}, {"status": "clean"}, {"status": "hazards"}]}))
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "ncu-x.json").write_text("{}")
    (tmp_path / "half.json").write_text("{")
    assert main(["index", str(tmp_path)]) == 0
    text = (tmp_path / "README.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| page ")]
    assert len(rows) == 3  # the run, the page-less run, sanitize: not the profile, not the broken file
    run = next(r for r in rows if "[run.md](run.md)" in r)
    assert f"`{env['command']}`" in run and env["git"]["commit"][:7] in run and env["utc"][:10] in run
    assert "sgemm: " in run and "× ref" in run and "measurements" in run
    assert any("`runs/page-less.json` (no page)" in r for r in rows)
    assert any("2 clean, 1 hazards of 3 runs" in r for r in rows)
    assert "python -m study index" in text
    assert main(["index", str(tmp_path / "nowhere")]) == 2


def test_a_suite_run_is_indexed_by_its_verdict_per_series(tmp_path):
    from study import index

    doc = json.loads(DATA.read_text())
    env = {**doc["environment"], "command": "python -m study compare --op sgemm --suite llama2-7b",
           "suites": ["llama2-7b"]}  # what the page decides by, as the index does
    two_shapes = doc["measurements"] + [{**m, "shape": {"M": 64, "N": 64, "K": 64}} for m in doc["measurements"]]
    for name, measurements, environment in (("suite.json", two_shapes, env),
                                            ("one-shape.json", doc["measurements"], env),
                                            ("plain.json", two_shapes, doc["environment"])):
        (tmp_path / name).write_text(json.dumps({**doc, "environment": environment, "measurements": measurements}))
    suite_row, one_shape_row, plain_row = (index._headline(json.loads((tmp_path / n).read_text()), tmp_path / n)[4]
                                           for n in ("suite.json", "one-shape.json", "plain.json"))
    assert suite_row.startswith("geometric mean × ref over the suite: sgemm fp32 CUDA 0.50× (worst 0.50×)")
    assert "sgemm fp32 Triton 0.25×" in suite_row and suite_row.endswith("12 measurements")
    assert one_shape_row.startswith("sgemm: v0 cuda") and plain_row.startswith("sgemm: v0 cuda")  # no verdict


def test_index_commands_measure_every_file_again_where_it_lives(tmp_path, capsys):
    import shlex

    from study import index

    env = json.loads(DATA.read_text())["environment"]
    doc = json.loads(DATA.read_text())
    doc["measurements"] = [{**m, "wall_s": 60.0} for m in doc["measurements"]]  # a minute each
    (tmp_path / "runs").mkdir()
    for name, command, extra in (
            ("runs/a.json", "python -m study compare --op sgemm --out .devout/x --name other --shard 1/2", {}),
            ("runs/b.json", "python -m study sweep --op sgemm --m 64 --n=64 --k 64 --out=.devout/y", {}),
            ("merged.json", "python -m study compare --op sgemm", {"merged_from": [str(tmp_path / "runs/a.json"),
                                                                                  str(tmp_path / "runs/b.json")]}),
            ("lost.json", "python -m study compare --op sgemm", {"merged_from": [".devout/gone.json"]})):
        (tmp_path / name).write_text(json.dumps({**doc, "environment": {**env, "command": command, **extra}}))
    (tmp_path / "validate.json").write_text(json.dumps({"environment": {**env, "command": "python -m study validate "
                                                        "--out /somewhere"}, "kernels": [], "pairs": []}))
    assert main(["index", str(tmp_path), "--commands"]) == 0
    script = capsys.readouterr().out
    assert script == index.commands(tmp_path) and script.startswith("#!/usr/bin/env bash")
    runs = [shlex.split(line) for line in script.splitlines() if line.startswith("python")]
    by_out = {tuple(w[w.index("--out") + 1:]): w for w in runs}
    here = index.display(tmp_path)
    a = by_out[(f"{here}/runs", "--name", "a")]
    assert "--shard" not in a and "other" not in a and ".devout/x" not in a and a[:5] == ["python", "-m", "study",
                                                                                           "compare", "--op"]
    b = by_out[(f"{here}/runs", "--name", "b")]
    assert "--n=64" in b and not any(w.startswith("--out=") for w in b)
    assert by_out[(here,)][3] == "validate"  # a fixed file name: --out names its folder only
    merge = next(w for w in runs if w[3] == "merge")
    assert merge[4:] == [str(tmp_path / "runs/a.json"), str(tmp_path / "runs/b.json"), "--out", f"{here}/merged.json"]
    assert runs[-1] == merge  # after the runs it merges
    assert "# merged from .devout/gone.json, not all committed" in script
    assert f"# {here}/runs/a.json: compare, commit {env['git']['commit'][:7]}, {env['utc'][:10]}, " \
        f"{len(doc['measurements']):.1f} GPU min" in script


def test_index_commands_within_minutes_take_the_oldest_files_a_session_can_measure_again(tmp_path):
    from study import index

    doc = json.loads(DATA.read_text())
    env = doc["environment"]
    six = len(doc["measurements"])  # one minute a measurement below: a file of six minutes

    def put(name, day, minutes_each=1.0, **extra):
        measured = [{**m, "wall_s": 60.0 * minutes_each} for m in doc["measurements"]]
        (tmp_path / name).write_text(json.dumps({**doc, "measurements": measured, "environment": {
            **env, "utc": f"2026-11-{day:02d}T00:00:00+00:00", "command": f"python -m study compare --op sgemm "
            f"--name {name}", **extra}}))

    put("old.json", 1)
    put("big.json", 2, minutes_each=3.0)  # 18 minutes: past the budget after old.json, left for later
    put("part.json", 3)
    put("merged.json", 3, merged_from=[index.display(tmp_path / "part.json")])
    put("new.json", 9)
    (tmp_path / "validate.json").write_text(json.dumps({"environment": {**env, "command": "python -m study "
                                                        "validate"}, "kernels": [], "pairs": []}))
    (tmp_path / "sanitize.json").write_text(json.dumps({
        "schema": 3, "environment": {**env, "utc": "2026-11-02T00:00:00+00:00",
                                     "command": "python -m study sanitize --op sgemm --jobs 2"},
        "tool_version": "x", "complete": True, "results": [{"status": "clean", "seconds": 120.0}] * 3}))
    script = index.commands(tmp_path, minutes=2 * six + 3)
    names = [line.split(": ")[0].split("/")[-1] for line in script.splitlines()
             if line.startswith("# ") and ".json:" in line]
    assert names == ["old.json", "sanitize.json", "part.json", "merged.json"]  # oldest first, the merge after its part
    assert f"# {2 * six + 3:.1f} GPU minutes; 2 files left for later calls" in script  # 6 + 3 (sanitize) + 6
    assert "run apart (cost unknown or not runnable as recorded): " in script and "validate.json" in script
    assert "big.json" not in script and "new.json" not in script
    assert index.commands(tmp_path, minutes=1).count("\npython -m study") == 1  # the oldest, whatever its cost
    assert index.commands(tmp_path).count("\npython -m study") == 7  # without a budget, every runnable file
    assert main(["index", str(tmp_path), "--minutes", "5"]) == 2  # a budget without --commands
    assert main(["index", str(tmp_path), "--commands", "--minutes", "0"]) == 2


def test_a_gzipped_results_file_reads_as_its_json_and_keeps_its_page_beside_it(tmp_path, capsys):
    # the committed reports keep their largest finished files gzipped (a tenth of the JSON): load, report, index
    # and diff read them as JSON, the page is NAME.md beside NAME.json.gz, and a cut gzip file is named
    import gzip

    from study import index, results

    (tmp_path / "run.json.gz").write_bytes(gzip.compress(DATA.read_bytes()))
    assert results.load(tmp_path / "run.json.gz") == results.load(DATA)
    assert main(["report", str(tmp_path / "run.json.gz")]) == 0
    assert (tmp_path / "run.md").is_file() and not (tmp_path / "run.json.md").exists()
    assert main(["index", str(tmp_path)]) == 0
    rows = [line for line in (tmp_path / "README.md").read_text().splitlines() if line.startswith("| [")]
    assert len(rows) == 1 and "[run.md](run.md)" in rows[0]
    assert main(["diff", str(DATA), str(tmp_path / "run.json.gz")]) == 0
    assert "Generated from `run.json.gz` beside it" in (tmp_path / "run.md").read_text()
    # measured again, it would write run.json beside run.json.gz: a finished record, named in a comment instead
    assert "# a finished record, gzipped: gunzip" in index.commands(tmp_path)
    packed = gzip.compress(DATA.read_bytes())
    (tmp_path / "cut.json.gz").write_bytes(packed[:200])
    (tmp_path / "bad.json.gz").write_bytes(packed[:20] + bytes(b ^ 0xFF for b in packed[20:60]) + packed[60:])
    for name in ("cut.json.gz", "bad.json.gz"):
        capsys.readouterr()
        assert main(["report", str(tmp_path / name)]) != 0
        assert f"{name}: not a whole gzip file" in capsys.readouterr().err
    assert main(["index", str(tmp_path)]) == 0  # the broken files passed over, as a half-written JSON is
