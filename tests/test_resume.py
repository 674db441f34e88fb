"""Nothing lost, and resuming instead of starting over (the flow, without a GPU)."""

import copy
import json
from pathlib import Path

import pytest

from study import results
from study.measure import resumable, run_compare
from study.plan import plan
from study.session import crashed_record

ENV = json.loads((Path(__file__).parent / "data" / "results_small.json").read_text())["environment"]


def _cases():
    return plan(["sgemm"], shapes={"sgemm": [{"M": 8, "N": 8, "K": 8}]}, rungs=["v0", "v1"],
                backends=["cuda", "triton"])


def _fake(calls):
    def measure(case):
        calls.append(case.key)
        record = crashed_record(case, "fake")  # any complete record will do
        record.update(status="ok", median_ms=1.0, samples_ms=[1.0])
        return record
    return measure


def test_results_are_written_after_every_case_and_an_interruption_keeps_them(tmp_path):
    path = tmp_path / "compare.json"
    calls = []
    measure = _fake(calls)

    def interrupting(case):
        if len(calls) == 2:
            raise KeyboardInterrupt
        return measure(case)

    with pytest.raises(KeyboardInterrupt):
        run_compare(_cases(), ENV, path, interrupting, say=lambda _: None)
    doc = results.load(path)
    assert doc["complete"] is False and len(doc["measurements"]) == 2
    assert doc["plan"] == [c.key for c in __import__("study.plan", fromlist=["ordered"]).ordered(_cases())]


def test_the_same_command_resumes_and_measures_only_what_is_missing(tmp_path):
    path = tmp_path / "compare.json"
    first_calls, messages = [], []

    def stop_after_two(case):
        if len(first_calls) == 2:
            raise KeyboardInterrupt
        return _fake(first_calls)(case)

    with pytest.raises(KeyboardInterrupt):
        run_compare(_cases(), ENV, path, stop_after_two, say=messages.append)
    kept = results.load(path)["measurements"]
    second_calls = []
    env = {**ENV, "utc": "2026-12-01T00:00:00+00:00"}
    doc = run_compare(_cases(), env, path, _fake(second_calls), say=messages.append)
    assert messages[-1].startswith("resuming: 2 of 5")
    assert set(second_calls).isdisjoint(first_calls) and len(second_calls) == 3
    assert doc["complete"] is True and len(doc["measurements"]) == 5
    assert doc["measurements"][:2] == [{**m, "x_ref": doc["measurements"][i]["x_ref"]}
                                       for i, m in enumerate(kept)]
    assert doc["environment"]["resumed_utc"] == ["2026-12-01T00:00:00+00:00"]


def test_a_complete_run_other_settings_or_fresh_start_over(tmp_path):
    path = tmp_path / "compare.json"
    run_compare(_cases(), ENV, path, _fake([]), say=lambda _: None)
    keys = [c.key for c in _cases()]
    assert resumable(path, keys, ENV) == (None, "the earlier run was complete")
    doc = results.load(path)
    doc["complete"] = False
    results.write(path, doc)
    other = copy.deepcopy(ENV)
    other["timer"]["noise"] = 0.01
    assert resumable(path, doc["plan"][:-1], ENV)[1] == "the earlier run planned other cases"
    assert resumable(path, doc["plan"], other)[1] == "the earlier run differs in timer settings"
    calls, said = [], []
    run_compare(_cases(), ENV, path, _fake(calls), fresh=True, say=said.append)
    assert said[0] == "--fresh" and len(calls) == 5


def test_a_failing_measure_becomes_a_crashed_record_and_the_run_goes_on(tmp_path):
    cases = _cases()
    calls = []

    def sometimes(case):
        if not calls:
            calls.append(case.key)
            raise RuntimeError("worker pool broke")
        return _fake(calls)(case)

    doc = run_compare(cases, ENV, tmp_path / "c.json", sometimes, say=lambda _: None)
    statuses = [m["status"] for m in doc["measurements"]]
    assert statuses[0] == "crashed" and "worker pool broke" in doc["measurements"][0]["reason"]
    assert statuses[1:] == ["ok"] * 4


SCRIPT = """
import json, sys, time
from pathlib import Path
from study.measure import run_compare, run_interruptibly
from study.plan import plan
from study.session import crashed_record

cases = plan(["sgemm"], shapes={"sgemm": [{"M": 8, "N": 8, "K": 8}]}, rungs=["v0", "v1"],
             backends=["cuda", "triton"])
env = json.loads(Path(sys.argv[2]).read_text())["environment"]
path = Path(sys.argv[1])
cleaned = []

def measure(case):
    time.sleep(0.3)
    record = crashed_record(case, "fake")
    record.update(status="ok", median_ms=1.0, samples_ms=[1.0])
    return record

def cleanup():
    time.sleep(0.5)  # a second signal arriving now must change nothing
    cleaned.append(1)
    print("cleaned up", file=sys.stderr)

doc, code = run_interruptibly(lambda: run_compare(cases, env, path, measure, say=lambda _: None), path,
                              len(cases), cleanup, lambda text: print(text, file=sys.stderr))
sys.exit(code)
"""


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT"])
def test_an_interrupt_prints_one_line_and_exits_130_without_a_traceback(tmp_path, signame):
    import os
    import signal
    import subprocess
    import sys
    import time

    from study.paths import ROOT

    path = tmp_path / "compare.json"
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(path), str(Path(__file__).parent / "data" /
                                                                          "results_small.json")],
                            cwd=ROOT, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "TRITON_INTERPRET": "1"})
    deadline = time.time() + 120
    journal = results.Journal(path).path  # a line per completed case; the document waits
    while time.time() < deadline and not (journal.is_file() and len(journal.read_text().splitlines()) >= 2):
        time.sleep(0.05)
    proc.send_signal(getattr(signal, signame))
    time.sleep(0.2)
    proc.send_signal(getattr(signal, signame))  # pressed twice
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    saved = len(results.load(path)["measurements"])
    assert lines == ["cleaned up", f"interrupted: {saved} of 5 measurements are saved in {path}; "
                                   f"run the same command again to resume"] or \
        lines == [f"interrupted: {saved} of 5 measurements are saved in {path}; run the same command again to resume",
                  "cleaned up"]
    assert 1 <= saved < 5 and results.load(path)["complete"] is False


def test_a_run_killed_between_rewrites_resumes_from_its_journal(tmp_path, monkeypatch):
    path = tmp_path / "compare.json"
    writes, first_calls = [], []
    real_write = results.write

    def write_once(p, doc):  # the opening write lands; later ones never do (as if killed)
        writes.append(len(doc["measurements"]))
        if len(writes) > 1:
            raise OSError("killed")
        real_write(p, doc)

    def stop_after_two(case):
        if len(first_calls) == 2:
            raise KeyboardInterrupt
        return _fake(first_calls)(case)

    monkeypatch.setattr(results, "write", write_once)
    with pytest.raises(OSError):
        run_compare(_cases(), ENV, path, stop_after_two, say=lambda _: None)
    monkeypatch.setattr(results, "write", real_write)
    assert results.load(path)["measurements"] == [] and writes[0] == 0
    messages, second_calls = [], []
    doc = run_compare(_cases(), ENV, path, _fake(second_calls), say=messages.append)
    assert messages[-1].startswith("resuming: 2 of 5")
    assert len(second_calls) == 3 and set(second_calls).isdisjoint(first_calls)
    assert doc["complete"] is True and not (tmp_path / "compare.json.journal").exists()


def test_a_journal_of_another_run_or_a_cut_line_is_not_read(tmp_path):
    journal = results.Journal(tmp_path / "c.json")
    journal.start("run-a")
    journal.append({"case": "x", "samples_ms": [1.0]})
    journal.append({"case": "y"})
    assert [r["case"] for r in journal.records("run-a")] == ["x", "y"]
    assert journal.records("run-b") is None
    with open(journal.path, "a") as f:
        f.write('{"case": "z", "samp')  # killed mid-line
    assert [r["case"] for r in journal.records("run-a")] == ["x", "y"]
    journal.start("run-a")  # a resume begins it anew: the document holds x and y by then
    journal.append({"case": "w"})
    assert [r["case"] for r in journal.records("run-a")] == ["w"]


def test_a_resumed_run_killed_again_keeps_what_it_measured_after_the_resume(tmp_path, monkeypatch):
    path, calls = tmp_path / "compare.json", []
    real_write = results.write

    def killed_after(n):
        def measure(case):
            if len(calls) == n:
                raise KeyboardInterrupt
            return _fake(calls)(case)
        return measure

    with pytest.raises(KeyboardInterrupt):
        run_compare(_cases(), ENV, path, killed_after(1), say=lambda _: None)
    with open(results.Journal(path).path, "a") as f:
        f.write('{"case": "cut')  # as if the kill had landed mid-line
    writes = []

    def write_once(p, doc):  # the resume's opening write lands, no later one (killed again)
        writes.append(1)
        if len(writes) > 1:
            raise OSError("killed")
        real_write(p, doc)

    monkeypatch.setattr(results, "write", write_once)
    with pytest.raises(OSError):
        run_compare(_cases(), ENV, path, killed_after(3), say=lambda _: None)
    monkeypatch.setattr(results, "write", real_write)
    said = []
    run_compare(_cases(), ENV, path, _fake(calls), say=said.append)
    assert said[-1].startswith("resuming: 3 of 5")  # 1 from the first run, 2 from the second


def test_results_files_hold_one_line_per_measurement_and_read_back_unchanged(tmp_path):
    doc = json.loads((Path(__file__).parent / "data" / "results_small.json").read_text())
    text = results.dumps(doc)
    lines = text.splitlines()
    assert sum(line.startswith('  {"') for line in lines) == len(doc["measurements"])
    stored = json.loads(text)
    assert isinstance(stored["measurements"][0]["samples_ms"], dict)  # a histogram on disk
    back = {**stored, "measurements": [results.unpack_samples(m) for m in stored["measurements"]]}
    assert back == {**doc, "measurements": [{**m, "samples_ms": sorted(m["samples_ms"])} for m in doc["measurements"]]}
    assert results.dumps({"schema": 3, "environment": {}, "measurements": []}).count("\n") == 5


def test_samples_are_stored_as_a_histogram_without_losing_a_sample():
    samples = [0.005088, 0.00512, 0.005088, 0.0061, 0.005088, 0.00512]
    packed = results.pack_samples({"samples_ms": samples})["samples_ms"]
    assert packed == {"value": [0.005088, 0.00512, 0.0061], "count": [3, 2, 1]}
    assert results.unpack_samples({"samples_ms": packed})["samples_ms"] == sorted(samples)
    assert results.unpack_samples({"samples_ms": [2.0, 1.0]})["samples_ms"] == [2.0, 1.0]  # older files


def test_the_best_rungs_paired_extend_the_finished_run_and_a_cut_extension_resumes(tmp_path):
    # compare's pairing: once every planned case is measured, the paired cases of the best rungs extend the
    # same plan and file; killed during the extension, the same command resumes it from the file.
    from study.plan import best_pairs, ordered

    path = tmp_path / "compare.json"
    calls = []
    cases = _cases()
    first = len(cases)

    def extension(records):
        return best_pairs(cases, records)

    def cut(case):
        if case.paired and len(calls) > first:
            raise KeyboardInterrupt
        return _fake(calls)(case)

    with pytest.raises(KeyboardInterrupt):
        run_compare(cases, ENV, path, cut, say=lambda _: None, extension=extension)
    cut_short = results.load(path)
    pairs = best_pairs(cases, cut_short["measurements"])
    assert {(c.impl.backend, c.paired) for c in pairs} == {("cuda", True), ("triton", True)}  # one per series
    assert all(c.key.endswith("|paired") for c in pairs)
    extended = ordered(cases) + ordered(pairs)
    assert cut_short["plan"] == [c.key for c in extended] and cut_short["extended_at"] == first
    old, why = resumable(path, [c.key for c in ordered(cases)], ENV)  # the command again: the extension goes on
    assert old is not None and why.startswith(f"resuming: {first + 1} of {len(extended)} cases"), why
    from study.measure import interrupted_line

    # the line an interrupt prints counts the extended plan, not the cases the run began with
    assert interrupted_line(path, first).startswith(f"interrupted: {first + 1} of {len(extended)} measurements")
    again = run_compare(cases, ENV, path, _fake(calls), say=lambda _: None, extension=extension)
    assert again["complete"] and len(again["measurements"]) == len(extended)
    assert [m["case"] for m in again["measurements"]] == [c.key for c in extended]
    assert len(calls) == len(extended)  # nothing measured twice
    finished, why = resumable(path, [c.key for c in ordered(cases)], ENV)
    assert finished is None and why == "the earlier run was complete"  # a finished run is measured afresh


def test_a_report_written_in_the_tree_leaves_it_clean_and_a_code_change_does_not(tmp_path, monkeypatch):
    # A session writing reports/… with one command and measuring with the next must not record its own
    # output as a dirty tree; a changed kernel or module must still be recorded as one.
    import subprocess

    def git(*args):
        subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=tmp_path, check=True,
                       capture_output=True)

    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "a.json").write_text("{}")
    (tmp_path / "kernel.cu").write_text("// v0\n")
    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "x")
    monkeypatch.delenv("STUDY_GIT_COMMIT", raising=False)
    monkeypatch.setattr(results, "ROOT", tmp_path)
    assert results.git_state()["dirty"] is False
    (tmp_path / "reports" / "a.json").write_text('{"measured": 1}')
    assert results.git_state()["dirty"] is False
    (tmp_path / "kernel.cu").write_text("// v1\n")
    state = results.git_state()
    assert state["dirty"] is True and len(state["commit"]) == 40
