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
