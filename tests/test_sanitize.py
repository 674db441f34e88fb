"""study sanitize without a GPU: finding the tool, planning the runs, reading the tool's output,
the Markdown, and compare's report marking a rung whose very source was found unclean."""

import json
import os
import stat
from pathlib import Path

import pytest

from study import results, sanitize
from study.__main__ import main
from study.catalog import implementation, implementations, ladder

CLEAN = """========= COMPUTE-SANITIZER
sgemv/v1_warp_per_row/cuda 67x1031 fp32: ok
========= ERROR SUMMARY: 0 errors
"""
RACES = """========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at sgemm_v2_smem_tiling+0x1a0 in 02_smem_tiling.cu:57
=========     and Read access at sgemm_v2_smem_tiling+0x2c0 in 02_smem_tiling.cu:66 [1024 hazards]
=========
========= RACECHECK SUMMARY: 3 hazards displayed (3 errors, 0 warnings)
"""
OOB = """========= Invalid __global__ read of size 4 bytes
=========     at sgemv_v0_thread_per_row+0x90 in 00_thread_per_row.cu:25
=========     by thread (3,0,0) in block (0,0,0)
========= ERROR SUMMARY: 1 error
"""


def test_the_tools_output_is_read_into_a_count_and_the_first_reports():
    assert sanitize.parse(CLEAN) == (0, [])
    count, first = sanitize.parse(RACES)
    assert count == 3 and first[0].startswith("Error: Race reported") and "02_smem_tiling.cu:66" in first[0]
    count, first = sanitize.parse(OOB)
    assert count == 1 and "00_thread_per_row.cu:25" in first[0]
    assert sanitize.parse("Traceback (most recent call last): ...")[0] is None


INIT = """========= COMPUTE-SANITIZER
========= Uninitialized __global__ memory read of size 4 bytes
=========     at sgemv_v3_split_n+0x1720 in 03_split_n.cu:106
=========     by thread (0,0,0) in block (1,0,0)
========= Uninitialized __global__ memory read of size 4 bytes
=========     at at::native::vectorized_elementwise_kernel+0x90 in Loops.cuh:42
========= Uninitialized access to 0x7f1e96c04c00 on access by cudaMemcpy source
=========     Saved host backtrace up to driver entry point at error
========= ERROR SUMMARY: 3 errors
"""


def test_initcheck_counts_only_the_reports_inside_the_rungs_kernel():
    count, first, outside = sanitize.parse_in_kernel(INIT, "sgemv_v3_split_n")
    assert (count, outside) == (1, 2) and "03_split_n.cu:106" in first[0]
    assert sanitize.parse_in_kernel(INIT, "sgemv_v2_vector_loads")[:2] == (0, [])
    assert sanitize.parse_in_kernel("Traceback: boom", "sgemv_v3_split_n")[0] is None
    impl = implementation("sgemv/v3_split_n/cuda")
    assert "--kernel-name" not in sanitize.command("cs", "initcheck", impl, "67x1031", "fp32")
    assert "--kernel-name" in sanitize.command("cs", "racecheck", impl, "67x1031", "fp32")


def test_a_report_is_located_by_its_own_lines_and_a_cut_list_is_not_clean():
    close = """========= Uninitialized __global__ memory read of size 4 bytes
=========     at other_kernel+0x90 in x.cu:3
========= Uninitialized __global__ memory read of size 4 bytes
=========     at sgemv_v3_split_n+0x10 in 03_split_n.cu:106
========= Uninitialized __global__ memory read of size 4 bytes
=========     at not_sgemv_v3_split_n+0x10 in y.cu:1
========= ERROR SUMMARY: 3 errors
"""
    assert sanitize.parse_in_kernel(close, "sgemv_v3_split_n")[::2] == (1, 2)
    cut = INIT.replace("SUMMARY: 3 errors", "SUMMARY: 40 errors")  # 3 printed of 40 counted
    assert sanitize.parse_in_kernel(cut, "sgemv_v2_vector_loads")[0] is None
    assert sanitize.parse_in_kernel(cut, "sgemv_v3_split_n")[0] == 1  # the rung's own report is printed


def test_initcheck_reports_outside_the_rung_leave_it_clean(tmp_path):
    impl = implementation("sgemv/v2_vector_loads/cuda")
    row = sanitize.run_one(_fake_tool(tmp_path, INIT, 0), "initcheck", impl, "67x1031", "fp32")
    assert row["status"] == "clean" and row["outside_kernel"] == 3
    row = sanitize.run_one(_fake_tool(tmp_path, INIT, 0), "initcheck", implementation("sgemv/v3_split_n/cuda"),
                           "67x1031", "fp32")
    assert row["status"] == "hazards" and row["count"] == 1 and row["outside_kernel"] == 2
    failing = sanitize.run_one(_fake_tool(tmp_path, INIT, 1), "initcheck", impl, "67x1031", "fp32")
    assert failing["status"] == "failed"  # the target itself failed: not clean, whatever was outside


def _fake_tool(tmp_path, text, code=0):
    tool = tmp_path / "compute-sanitizer"
    (tmp_path / "out.txt").write_text(text)
    tool.write_text(f"#!/bin/sh\ncat {tmp_path / 'out.txt'}\nexit {code}\n")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    return str(tool)


@pytest.mark.parametrize("text,code,status", [(CLEAN, 0, "clean"), (RACES, 1, "hazards"), (OOB, 1, "hazards"),
                                              ("Traceback: boom", 1, "failed"), (CLEAN, 3, "failed")])
def test_each_run_is_clean_hazards_or_failed(tmp_path, text, code, status):
    impl = implementation("sgemv/v1_warp_per_row/cuda")
    row = sanitize.run_one(_fake_tool(tmp_path, text, code), "racecheck", impl, "67x1031", "fp32")
    assert row["status"] == status and row["source_hash"] == sanitize.source_hash_of(impl)
    assert bool(row["output_tail"]) == (status == "failed")


def test_the_plan_covers_every_cuda_rung_at_its_ops_awkward_shapes():
    cuda = [i for i in implementations() if i.backend == "cuda"]
    rows = sanitize.plan(cuda, sanitize.TOOLS)
    assert {r[0].name for r in rows} == {i.name for i in cuda}
    assert {(r[2], r[3]) for r in rows if r[0].op == "sgemv"} == {("67x1031", "fp32"), ("129x4096", "fp32"),
                                                                  ("5x4099", "fp32"), ("300x64", "fp32")}
    assert len(rows) == sum(len(sanitize.TOOLS) * len(ladder(i.op).problem.sanitize_shapes) for i in cuda)
    assert all(r[3] in r[0].precisions for r in rows)  # bgemm v1 (FP16/BF16 only), gemm_bias_relu v1 (FP32 only)
    assert {(r[0].rung, r[3]) for r in rows if r[0].op == "bgemm"} >= {("v1_batched_wgmma", "fp16")}
    half = sanitize.plan(cuda, ("memcheck",), ["fp16"])
    assert {r[0].op for r in half} == {"sgemv", "softmax", "hgemm", "gemm_bias_relu", "bgemm"}
    assert {r[3] for r in half} == {"fp16"}


def test_no_compute_sanitizer_is_a_clear_message_and_exit_2(monkeypatch, capsys):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("CUDA_HOME", "/nonexistent")
    monkeypatch.delenv("CUDA_PATH", raising=False)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p).endswith("compute-sanitizer")
                        else real_access(p, mode))  # also where this machine's toolkit has one
    assert main(["sanitize"]) == 2
    assert "compute-sanitizer is not on PATH" in capsys.readouterr().err


def test_compare_marks_a_rung_whose_current_source_was_found_unclean(tmp_path):
    from study import report

    doc = results.load(Path(__file__).parent / "data" / "results_small.json")
    impl = implementation("sgemm/v0_naive_colmajor_b/cuda")
    for m in doc["measurements"]:
        m["source"] = impl.source if m["backend"] == "cuda" else m["source"]
        m["source_hash"] = sanitize.source_hash_of(impl) if m["implementation"] == impl.name else "0" * 16
    found = {"results": [{"source": impl.source, "source_hash": sanitize.source_hash_of(impl), "tool": "racecheck",
                          "count": 7, "status": "hazards"}]}
    (tmp_path / "sanitize.json").write_text(json.dumps(found))
    text = report.render(doc, tmp_path / "compare.md", draw=False, marks=sanitize.marks_beside(tmp_path))
    row = next(l for l in text.splitlines() if l.startswith("| v0"))
    assert "⚑sanitizer" in row
    stale = {"results": [{**found["results"][0], "source_hash": "f" * 16}]}
    (tmp_path / "sanitize.json").write_text(json.dumps(stale))
    assert "⚑sanitizer" not in report.render(doc, tmp_path / "compare.md", draw=False,
                                             marks=sanitize.marks_beside(tmp_path))


def test_the_markdown_lists_every_run():
    doc = {"environment": {"gpu": {"name": "X"}, "command": "python -m study sanitize", "git": {"commit": "abc"}},
           "results": [{"implementation": "a/v0_x/cuda", "tool": "memcheck", "shape": "1x1", "precision": "fp32",
                        "status": "clean", "count": 0, "first": [], "seconds": 1.0},
                       {"implementation": "a/v0_x/cuda", "tool": "racecheck", "shape": "1x1", "precision": "fp32",
                        "status": "hazards", "count": 3, "first": ["Race reported at x.cu:5"], "seconds": 2.0},
                       {"implementation": "a/v1_y/cuda", "tool": "memcheck", "shape": "1x1", "precision": "fp16",
                        "status": "skipped", "reason": "fp32 only", "count": None, "first": [], "seconds": 0.0}]}
    text = sanitize.markdown(doc)
    assert "**1 runs not clean.**" in text and "**3 hazards**: Race reported at x.cu:5" in text
    assert "skipped: fp32 only" in text and "Runs took 3 s together." in text
    assert "this run 2 s of wall time, 4 at once." in sanitize.markdown({**doc, "wall_s": 2.0, "jobs": 4})
    assert "stopped before its end" not in text  # a file without "complete" predates it: finished runs only


def test_a_run_stopped_before_its_end_says_so_and_study_report_renders_it(tmp_path):
    # A GPU call's time limit can kill a run between rows: sanitize.json is saved after each, but its page was
    # written only at the end, and `study report` took it for a comparison ("missing 'measurements'").
    row = {"implementation": "a/v0_x/cuda", "tool": "memcheck", "shape": "1x1", "precision": "fp32",
           "status": "clean", "count": 0, "first": [], "seconds": 1.0, "commit": "abc"}
    doc = {"schema": 1, "environment": {"gpu": {"name": "X"}, "command": "python -m study sanitize",
                                        "git": {"commit": "abc"}},
           "tool_version": "v", "results": [row, {**row, "tool": "racecheck"}], "complete": False, "planned": 5}
    assert "**This run stopped before its end:** 2 runs of the 5 it planned finished at `abc`" in sanitize.markdown(doc)
    path = tmp_path / "sanitize.json"
    path.write_text(json.dumps({k: v for k, v in doc.items() if k != "planned"}))
    assert main(["report", str(path)]) == 0
    page = (tmp_path / "sanitize.md").read_text()
    assert page.startswith("# `study sanitize` on X") and "2 runs finished at `abc`" in page  # older: by commit
    from study import index

    assert index.rows(tmp_path)[0][-1] == "2 clean of 2 runs; the run stopped before its end"


def test_resume_runs_only_what_an_earlier_run_at_this_commit_did_not_finish(tmp_path, monkeypatch):
    # A call's time limit stops a long run (35 of 36 on the H100 of 2026-12-07); --resume keeps the rows of the run
    # that last wrote the file, where it ran at this commit on a clean tree with the same GPU, driver, software and
    # tool (not a failed row), and runs the rest.
    impl = implementation("sgemv/v1_warp_per_row/cuda")
    clock = iter(range(100))
    env = {"gpu": {"name": "X", "driver": "1"}, "git": {"commit": "abc", "dirty": False}, "command": "c"}
    monkeypatch.setattr(sanitize.results, "environment",
                        lambda device, settings, argv: {**env, "utc": f"t{next(clock)}"})
    monkeypatch.setattr(sanitize.ncu, "version", lambda path: "v1")
    ran, failing = [], {("memcheck", "129x4096")}

    def run_one(tool_path, tool, impl, shape, precision):
        ran.append((tool, shape))
        return {"implementation": impl.name, "source": impl.source, "source_hash": None, "tool": tool, "shape": shape,
                "precision": precision, "status": "failed" if (tool, shape) in failing else "clean",
                "count": 0, "first": [], "seconds": 1.0}

    def sanitize_run(tools=("memcheck", "racecheck"), **kw):
        ran.clear()
        said = []
        doc, code = sanitize.run([impl], tools, "cs", tmp_path, None, [], say=said.append, **kw)
        return doc, code, said

    monkeypatch.setattr(sanitize, "run_one", run_one)
    everything = sanitize.plan([impl], ("memcheck", "racecheck"))
    doc, _, _ = sanitize_run()
    assert len(ran) == len(everything) == doc["planned"] == sanitize.finished(doc) == 8 and doc["complete"]
    assert {r["run"] for r in doc["results"]} == {"t0"}
    first = [{**r, "status": "hazards", "count": 3} if n == 0 else r for n, r in enumerate(doc["results"][:5])]
    stopped = {**doc, "results": first, "complete": False}  # killed after five, the first unclean
    (tmp_path / "sanitize.json").write_text(json.dumps(stopped))
    assert "**This run stopped before its end:** 5 runs of the 8" in sanitize.markdown(stopped)
    failing.clear()
    doc, code, said = sanitize_run(resume=True)
    kept = {(r[1], r[2]) for r in everything[:5]} - {("memcheck", "129x4096")}
    assert set(ran) == {(r[1], r[2]) for r in everything} - kept and len(ran) == 4  # the failed one again
    assert sanitize.finished(doc) == 8 and doc["complete"] and len(doc["results"]) == 8
    assert code == 1 and doc["results"][0]["status"] == "hazards"  # a kept row's hazards still count
    assert {r["run"] for r in doc["results"]} == {"t1"} and said[0].startswith("--resume: 4 of the 8 runs kept")
    doc, _, said = sanitize_run(resume=True)  # resumed again: the kept rows are that run's now
    assert ran == [] and said[0].startswith("--resume: 8 of the 8 runs kept")
    # Rows of an earlier run in the file are not kept, though the file's last run matches: a dirty tree's run of
    # every tool, then a clean run of memcheck alone, then --resume keeps memcheck's rows only.
    env["git"] = {"commit": "abc", "dirty": True}
    sanitize_run()
    env["git"] = {"commit": "abc", "dirty": False}
    sanitize_run(tools=("memcheck",))
    doc, _, said = sanitize_run(resume=True)
    assert set(ran) == {(r[1], r[2]) for r in everything if r[1] == "racecheck"} and len(ran) == 4
    for changed, why in (({"commit": "def", "dirty": False}, "it differs in commit"),
                         ({"commit": "abc", "dirty": True}, "it differs in dirty tree")):
        (tmp_path / "sanitize.json").write_text(json.dumps(stopped))
        env["git"] = changed
        _, _, said = sanitize_run(resume=True)
        assert len(ran) == 8 and said[0].endswith(f"sanitize.json (none: {why})")


def test_a_triton_twin_runs_without_a_source_hash_and_earlier_rows_are_kept(tmp_path):
    twin = implementation("sgemv/v1_warp_per_row/triton")
    row = sanitize.run_one(_fake_tool(tmp_path, CLEAN), "memcheck", twin, "67x1031", "fp32")
    assert row["status"] == "clean" and row["source_hash"] is None
    assert sanitize.command("cs", "racecheck", twin, "1x1", "fp32")[3:5] == ["--kernel-name", "kns=sgemv_warp"]
    cuda = implementation("sgemv/v1_warp_per_row/cuda")
    assert "kns=sgemv_v1_" in sanitize.command("cs", "memcheck", cuda, "1x1", "fp32")
    # Every kernel of a rung's file (sgemm v10's reduction too), not another rung's (v1_ is no prefix of v10_).
    two_pass = implementation("sgemm/v10_split_k_two_pass/cuda")
    assert "kns=sgemm_v10_" in sanitize.command("cs", "memcheck", two_pass, "1x1x1", "fp32")
    assert not "sgemm_v10_reduce_ranges".startswith(sanitize.kernel_symbol(implementation("sgemm/v1_naive/cuda")))
    report = ("========= Invalid __global__ read of size 4 bytes\n"
              "=========     at sgemm_v10_reduce_ranges+0x70 in cuda_kernels/sgemm/10_split_k_two_pass.cu:61\n"
              "========= ERROR SUMMARY: 1 error")
    assert sanitize.parse_in_kernel(report, sanitize.kernel_symbol(two_pass))[0] == 1
    old = {"environment": {"git": {"commit": "0ld"}}, "results": [{**row, "tool": "racecheck"}, row]}
    newer = {**row, "status": "hazards", "commit": "new"}
    kept = sanitize.merged(old, [newer])
    assert [r["tool"] for r in kept] == ["racecheck", "memcheck"] and kept[-1]["status"] == "hazards"
    assert [r["commit"] for r in kept] == ["0ld", "new"]  # a kept row names its own run's commit, not the file's
    text = sanitize.markdown({"environment": {"gpu": {"name": "X"}, "command": "c", "git": {"commit": "new"}},
                              "results": kept})
    assert "the rows ran at 2 commits" in text and "| `0ld`" in text


def test_an_op_without_sanitize_shapes_is_skipped_with_the_reason_not_called_clean():
    from study.problem import Problem

    impl = implementation("sgemv/v1_warp_per_row/cuda")
    problem = ladder("sgemv").problem
    rows = sanitize.plan([impl], ("memcheck",), shapes={"sgemv": []})
    assert rows and all(r[4] is None for r in rows)  # an empty override falls back to the op's shapes
    original = type(problem).sanitize_shapes
    try:
        type(problem).sanitize_shapes = Problem.sanitize_shapes
        rows = sanitize.plan([impl], ("memcheck",))
        assert rows and "declares no sanitize shapes" in rows[0][4]
    finally:
        type(problem).sanitize_shapes = original


def test_reports_name_the_real_file_and_line_of_a_kernel():
    from study.backends.cuda import kernel_source

    path = Path(__file__).parent / "kernels" / "planted" / "01_read_past_end.cu"
    lines = kernel_source(path).splitlines()
    at = next(n for n, line in enumerate(lines) if "probe = x[N]" in line)
    marker = max(n for n in range(at) if lines[n].startswith("#line"))
    assert lines[marker].endswith('"tests/kernels/planted/01_read_past_end.cu"')
    real = next(n for n, line in enumerate(path.read_text().splitlines(), 1) if "probe = x[N]" in line)
    assert int(lines[marker].split()[1]) + (at - marker - 1) == real


def test_every_kernel_has_its_local_headers_inlined_whatever_follows_the_include():
    """NVRTC compiles the inlined text from a temporary file: a quoted include left in it is not found there
    (softmax's piece_ring.cuh includes ring.cuh with a comment after it, which the inlining once missed)."""
    import re

    from study.backends.cuda import kernel_source
    from study.paths import CUDA_DIR, MICROBENCH_DIR

    paths = sorted(CUDA_DIR.rglob("*.cu")) + sorted(MICROBENCH_DIR.rglob("*.cu"))
    assert len(paths) > 20
    for path in paths:
        left = re.findall(r'^[ \t]*#[ \t]*include[ \t]*"[^"]*".*$', kernel_source(path), re.M)
        assert not left, f"{path}: {left}"
    lines = kernel_source(CUDA_DIR / "softmax" / "08_piece_ring.cu").splitlines()
    at = next(n for n, line in enumerate(lines) if line.startswith('#line 1 "cuda_kernels/softmax/ring.cuh"'))
    resume = next(n for n in range(at + 1, len(lines)) if 'piece_ring.cuh"' in lines[n] and lines[n].startswith("#line"))
    header = (CUDA_DIR / "softmax" / "piece_ring.cuh").read_text().splitlines()
    included = next(n for n, line in enumerate(header, 1) if line.startswith('#include "ring.cuh"'))
    assert lines[resume].split()[1] == str(included + 1)
    assert lines[resume + 1] == header[included]  # the line after the include, numbered as in its file
