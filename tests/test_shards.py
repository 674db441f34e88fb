"""Shards, merge, rerun planning and `study env`, without a GPU: a fake measure stands in for the
GPU, as a Slurm job array's tasks would each run one shard (docs/cluster.md)."""

import copy
import json
from pathlib import Path

import pytest

from study import results
from study.__main__ import main
from study.compare import rerun_plan
from study.measure import run_compare
from study.plan import plan
from study.session import crashed_record
from study.shards import ShardError, group_of, merge, parse_shard, shard_cases

ENV = json.loads((Path(__file__).parent / "data" / "results_small.json").read_text())["environment"]
ENV = {**ENV, "timer": {k: v for k, v in ENV["timer"].items() if k not in ("mode", "flush_l2")}}


def _plan():
    return plan(["sgemm", "sgemv"], shapes={"sgemm": [{"M": 8, "N": 8, "K": 8}, {"M": 16, "N": 8, "K": 8}],
                                            "sgemv": [{"M": 8, "N": 8}]}, autotune="both")


def _measure(case):
    record = crashed_record(case, "fake")
    record.update(status="ok", median_ms=1.0 + len(case.key) / 1000, samples_ms=[1.0])
    return record


@pytest.mark.parametrize("text,message", [("3/2", "i must be in 0"), ("1/0", "n at least 1"), ("-1/2", "form i/n"),
                                          ("a/b", "form i/n"), ("2", "form i/n")])
def test_impossible_shards_are_refused(text, message, capsys):
    with pytest.raises(ShardError, match=message):
        parse_shard(text)
    assert main(["compare", f"--shard={text}"]) == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("count", [1, 2, 3, 5, 40])
def test_shards_are_disjoint_complete_and_keep_groups_whole(count):
    cases = _plan()
    shards = [shard_cases(cases, i, count) for i in range(count)]
    keys = [c.key for s in shards for c in s]
    assert sorted(keys) == sorted(c.key for c in cases) and len(keys) == len(set(keys))
    for s in shards:
        for group in {group_of(c) for c in s}:
            whole = [c.key for c in cases if group_of(c) == group]
            assert [c.key for c in s if group_of(c) == group] == whole  # rungs and baselines together
    assert [c.key for c in shard_cases(cases, 1, 3)] == [c.key for c in shard_cases(_plan(), 1, 3)]  # deterministic


def _run_array(tmp_path, count, env=ENV):
    """Each task of a job array: its shard, its own results file (SLURM_ARRAY_TASK_ID/COUNT)."""
    paths = []
    for task in range(count):
        index, n = parse_shard(f"{task}/{count}")
        path = tmp_path / f"compare-shard-{index}-of-{n}.json"
        run_compare(shard_cases(_plan(), index, n), env, path, _measure, say=lambda _: None)
        paths.append(path)
    return paths


def test_a_job_array_merged_equals_the_single_run(tmp_path):
    single = run_compare(_plan(), ENV, tmp_path / "single.json", _measure, say=lambda _: None)
    merged = merge(_run_array(tmp_path, 3))
    assert merged["complete"] and [m["case"] for m in merged["measurements"]] == [m["case"] for m in single["measurements"]]
    assert [m["x_ref"] for m in merged["measurements"]] == [m["x_ref"] for m in single["measurements"]]
    from study import report

    def strip(text):  # the merged report names its sources in one more paragraph; the rest is the same
        return "\n".join(l for l in text.splitlines() if not l.startswith("Merged by")).replace("\n\n\n", "\n\n")

    assert strip(report.render(merged, Path("x.md"), draw=False)) == strip(report.render(single, Path("x.md"), draw=False))
    assert main(["merge", *map(str, _run_array(tmp_path / "b", 2)), "--out", str(tmp_path / "m.json")]) == 0
    assert "Merged by `python -m study merge` from 2" in (tmp_path / "m.md").read_text()


def test_merge_refuses_other_environments_and_duplicates_unless_told(tmp_path, capsys):
    first = _run_array(tmp_path / "a", 2)
    other = copy.deepcopy(ENV)
    other["gpu"]["name"] = "Another GPU"
    second = _run_array(tmp_path / "b", 2, env=other)
    with pytest.raises(ShardError, match="GPU 'Another GPU' where"):
        merge([first[0], second[1]])
    doc = merge([first[0], second[1]], allow_mixed=True)
    assert doc["environment"]["mixed"] and len(doc["environment"]["environments"]) == 2
    with pytest.raises(ShardError, match="cases are in more than one file"):
        merge([first[0], first[0]])
    assert main(["merge", str(first[0]), str(first[0]), "--out", str(tmp_path / "x.json")]) == 2
    assert "more than one file" in capsys.readouterr().err


def test_rerun_plans_exactly_the_cases_and_timer_of_a_file(tmp_path):
    doc = run_compare(_plan()[:7], {**ENV, "seed": 5}, tmp_path / "r.json", _measure, say=lambda _: None)
    cases, settings, seed = rerun_plan(results.load(tmp_path / "r.json"))
    assert [c.key for c in cases] == doc["plan"] and seed == 5
    assert settings.noise == ENV["timer"]["noise"] and settings.min_samples == ENV["timer"]["min_samples"]


def test_env_prints_what_reproduces_a_number(capsys):
    assert main(["env", "--json"]) == 0
    env = json.loads(capsys.readouterr().out)
    assert {"gpu", "cuda", "torch", "triton", "cupy", "nvmath", "numpy", "python", "git"} <= set(env)
    assert env["git"]["commit"] and (env["gpu"]["name"] or env["gpu"]["reason"])
    assert main(["env"]) == 0 and "torch" in capsys.readouterr().out


@pytest.mark.parametrize("text,count,expected", [("all", 2, [0, 1]), ("1", 2, [1]), ("0,1", 4, [0, 1]),
                                                 ("all", 1, [0])])
def test_gpus_are_chosen_from_those_the_machine_has(text, count, expected):
    from study.worker import parse_gpus

    assert parse_gpus(text, count) == expected


@pytest.mark.parametrize("text,count,message", [("7", 2, "this machine has 2 GPUs (indices 0–1)"),
                                                ("0,0", 2, "each named once"), ("x", 2, "comma-separated"),
                                                ("all", 0, "no CUDA GPU")])
def test_impossible_gpu_lists_are_refused(text, count, message):
    from study.worker import parse_gpus

    import re

    with pytest.raises(ValueError, match=re.escape(message)):
        parse_gpus(text, count)


def test_a_worker_sees_the_gpu_it_was_given_among_those_its_parent_sees(monkeypatch):
    from study.worker import visible_device

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert visible_device(1) == "1"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")
    assert visible_device(1) == "6"


def test_several_gpus_take_whole_groups_as_they_free_up_into_one_file(tmp_path):
    import time

    seen = {}

    def lane(name, delay):
        def measure(case):
            time.sleep(delay)
            seen.setdefault(group_of(case), set()).add(name)
            record = _measure(case)
            record["gpu"] = {"index": name, "uuid": f"GPU-{name}"}
            return record
        return measure

    cases = _plan()
    doc = run_compare(cases, ENV, tmp_path / "multi.json", [lane(0, 0.001), lane(1, 0.003)], say=lambda _: None)
    assert doc["complete"] and sorted(m["case"] for m in doc["measurements"]) == sorted(c.key for c in cases)
    assert all(len(gpus) == 1 for gpus in seen.values())  # a group never spans two GPUs
    assert {m["gpu"]["index"] for m in doc["measurements"]} == {0, 1}  # both worked
    single = run_compare(cases, ENV, tmp_path / "single.json", _measure, say=lambda _: None)
    assert [m["case"] for m in doc["measurements"]] == [m["case"] for m in single["measurements"]]  # same order


def test_a_lane_whose_worker_cannot_start_hands_its_group_to_the_others(tmp_path):
    from study.compare import LaneDead

    def dead(case):
        raise LaneDead("GPU 1: the measurement worker could not start: boom")

    doc = run_compare(_plan(), ENV, tmp_path / "m.json", [dead, _measure], say=lambda _: None)
    assert doc["complete"] and {m["status"] for m in doc["measurements"]} == {"ok"}
    everyone_dead = run_compare(_plan(), ENV, tmp_path / "d.json", [dead, dead], say=lambda _: None)
    assert {m["status"] for m in everyone_dead["measurements"]} == {"crashed"}
    assert "no GPU lane could measure it: GPU 1" in everyone_dead["measurements"][0]["reason"]


def test_a_lane_that_fails_outside_a_measurement_stops_the_run_and_is_raised(tmp_path):
    calls = []

    def progress(n, total, case, record):
        calls.append(n)
        if len(calls) == 3:
            raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        run_compare(_plan(), ENV, tmp_path / "f.json", [_measure, _measure], progress=progress, say=lambda _: None)
    assert results.load(tmp_path / "f.json")["complete"] is False  # never claimed complete


def test_every_record_names_its_gpu_even_a_crashed_one():
    from study.compare import pool_measure as _pool_measure

    class Pool:
        dead, gpu_index, facts = False, 1, {"index": 1, "uuid": "GPU-abc"}

        def measure(self, case, crashed):
            return crashed("the measurement worker died (exit code -11) while measuring this case")

    record = _pool_measure(Pool())(_plan()[0])
    assert record["status"] == "crashed" and record["gpu"] == {"index": 1, "uuid": "GPU-abc"}


def test_a_schema_2_file_can_be_rerun():
    cases, settings, seed = rerun_plan(results.load(Path(__file__).parent / "data" / "results_small.json"))
    assert [c.impl.name for c in cases][0] == "sgemm/torch_matmul/cublas" and len(cases) == 6
    assert {c.precision.name for c in cases} == {"fp32"} and {c.mode for c in cases} == {"cold"} and seed == 0


def test_a_merge_that_lacks_a_shard_says_so(tmp_path):
    env = lambda i: {**ENV, "shard": [i, 3], "command": f"python -m study compare --shard {i}/3"}  # noqa: E731
    paths = []
    for i in (0, 2):
        path = tmp_path / f"s{i}.json"
        run_compare(shard_cases(_plan(), i, 3), env(i), path, _measure, say=lambda _: None)
        paths.append(path)
    doc = merge(paths)
    assert doc["complete"] is False and doc["environment"]["missing_shards"] == [1]
    assert doc["environment"]["command"] == "python -m study compare"
    from study import report

    assert "**Shards missing**: 1" in report.render(doc, Path("x.md"), draw=False)
