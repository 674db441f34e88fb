"""``python -m study``: list the ladders, compare them on the GPU, render reports.

Exit status: 0 success, 1 a measurement was wrong or crashed, 2 bad usage or no GPU.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

from study.diff import DEFAULT_THRESHOLD
from study.paths import report_dir
from study.registry import BACKENDS, PluginError, check_integrity, implementation, implementations_of, ladder, ladders

EXAMPLES_COMPARE = """examples:
  python -m study compare                                   every op, its default shapes, precisions, modes
  python -m study compare --op sgemm --rung v3 --rung v4 --backend cuda
  python -m study compare --op sgemm --shape 4096x4096x4096 --shape 1000x1500x1700 --autotune both
  python -m study compare --op sgemv --dtype fp16 --shape 16384x16384 --mode cold --mode hot
  python -m study compare --shape sgemm:2048x2048x2048 --shape sgemv:8192x1024
  python -m study compare --out /tmp/reports --name trial
  python -m study compare --mode graph --op sgemm --shape 256x256x256 --noise 1
  python -m study compare --reps 50 --fresh
"""
EXAMPLES_SWEEP = """examples:
  python -m study sweep --op sgemm --m 256:8192:x2 --n 256:8192:x2 --k 4096 --backend cuda --rung v4
  python -m study sweep --op sgemv --m 1024:16384:x2 --n 1024,4096,65536 --dtype fp16 --mode cold
  python -m study sweep --op sgemm --m 64 --n 64 --k 4096:65536:x2 --autotune on --yes
"""
EXAMPLES_ALIGN = """examples:
  python -m study align                                 sgemm at 4096³, leading dimensions 4096 … 4111
  python -m study align --base 2048 --rung v3 --autotune on
  python -m study align --dtype tf32 --backend cublas --backend cublaslt --backend triton
"""
EXAMPLES_CUBLAS_STUDY = """examples:
  python -m study cublas-study                 measure what is missing, then write reports/<gpu>/cublas-study.md
  python -m study cublas-study --gpus all
  python -m study cublas-study --page-only --out reports/h200/cublas-study
"""
EXAMPLES_REPORT = """examples:
  python -m study report reports/h200/compare.json
  python -m study report reports/h200/compare.json --md /tmp/compare.md
"""
EXAMPLES_CEILINGS = """examples:
  python -m study ceilings
  python -m study ceilings --remeasure
  python -m study ceilings --copy-sizes          add the device copy at 4 MiB … 2 GiB to the cached ones
"""
EXAMPLES_VALIDATE = """examples:
  python -m study validate
  python -m study validate --no-ncu
  python -m study validate --kernel sgemm/v1_naive/cuda 4096x4096x4096
"""
EXAMPLES_DIFF = """examples:
  python -m study diff before.json after.json
  python -m study diff reports/h200/compare.json /tmp/compare.json --threshold 3 --md /tmp/diff.md
"""
EXAMPLES_MERGE = """examples:
  python -m study merge shard-0.json shard-1.json --out reports/h200/compare.json
  python -m study merge a.json b.json --out mixed.json --allow-mixed
"""
EXAMPLES_RERUN = """examples:
  python -m study rerun reports/h200/compare.json
  python -m study rerun reports/h200/sgemv-16384.json --out /tmp/again.json
"""
EXAMPLES_SANITIZE = """examples:
  python -m study sanitize
  python -m study sanitize --op sgemv --rung v3 --tool racecheck
  python -m study sanitize --backend cuda --backend triton --dtype fp16
"""
EXAMPLES_PROFILE = """examples:
  python -m study profile sgemm/v4_double_buffer/cuda 4096x4096x4096       ncu's raw CSV to reports/<gpu>/profiles/
  python -m study profile sgemm/v4_double_buffer/triton 4096x4096x4096 --launches 3
  python -m study profile hgemm/v6_mma_sync/cuda 4096x4096x4096 --precision fp16 --config HOIST=1
  python -m study profile sgemv/v2_vector_loads/cuda 16384x16384 --precision fp16 --out /tmp/profiles
  python -m study profile --table reports/h200/profiles --md /tmp/profiles.md   the Markdown table (no GPU)
  python -m study profile --source reports/h200/profiles/source-hgemm-v6_mma_sync-cuda-4096x4096x4096-fp16.csv
                                                                           stall samples by SASS opcode (no GPU)
"""
EXAMPLES_ENV = """examples:
  python -m study env
  python -m study env --json
"""
EXAMPLES_LIST = """examples:
  python -m study list
  python -m study list --json
"""


class UsageError(Exception):
    pass


def _add_run_options(p: argparse.ArgumentParser, name: str) -> None:
    """What compare and sweep share: precisions, autotune, modes, the timer, where results go, GPUs."""
    p.add_argument("--dtype", action="append", metavar="{fp32,tf32,fp16,bf16}",
                   help="precision (repeatable; default: each op's own; an op lists those it accepts)")
    p.add_argument("--autotune", choices=("off", "on", "both"), default="off",
                   help="off: declared configs; on: search each rung's space; both: measure each way")
    p.add_argument("--mode", action="append", choices=("cold", "hot", "graph"),
                   help="cold: L2 flushed before each sample; hot: back-to-back launches; graph: N launches "
                        "replayed from one CUDA graph (repeatable; default: each op's, e.g. cold and hot for sgemv)")
    p.add_argument("--reps", type=int, default=None,
                   help="a fixed number of timed repetitions (≥ 20) instead of stopping by noise")
    p.add_argument("--noise", type=float, default=0.5,
                   help="stop when the relative stdev of the samples is at most this many %% (default 0.5)")
    p.add_argument("--ci", type=float, default=0.1,
                   help="or stop when the median's 95%% confidence interval is within ± this many %% of it "
                        "(default 0.1): kernels with an intrinsic jitter")
    p.add_argument("--trials", type=int, default=3,
                   help="correctness trials before timing: this many random-input trials (fresh seeds), then "
                        "one on structured inputs (default 3)")
    p.add_argument("--min-samples", type=int, default=20, help="at least this many samples (≥ 10; default 20)")
    p.add_argument("--min-time", type=float, default=0.1, help="at least this much GPU time, s (default 0.1)")
    p.add_argument("--timeout", type=float, default=15.0,
                   help="stop sampling a measurement after this many s and flag it (default 15)")
    p.add_argument("--throttle-threshold", type=float, default=0.75,
                   help="discard samples taken below this fraction of the max SM clock (default 0.75)")
    p.add_argument("--keep-throttled", action="store_true", help="keep throttled samples (flag them only)")
    p.add_argument("--graph-launches", type=int, default=None,
                   help="launches per CUDA graph in --mode graph (default: about 1 ms of work)")
    p.add_argument("--fresh", action="store_true", help="start over even if an unfinished run can be resumed")
    p.add_argument("--no-isolate", action="store_true",
                   help="measure in this process instead of a worker (a faulting kernel then ends the run)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    p.add_argument("--out", type=Path, default=None,
                   help="folder of the results and report (default: reports/<gpu>/)")
    p.add_argument("--name", default=None,
                   help=f"file stem of results and report (default: {name}, or {name}-shard-i-of-n)")
    p.add_argument("--gpus", default=None, metavar="0,1,…|all",
                   help="measure on these GPUs at once, one worker each, groups handed to whichever is free; "
                        "one results file")
    p.add_argument("--shard", default=None, metavar="I/N",
                   help="measure only shard I of N (0 <= I < N): whole (op, shape, precision) groups; "
                        "merge the shards' files with `study merge` (docs/cluster.md)")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m study", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    ls = sub.add_parser("list", help="print each ladder", epilog=EXAMPLES_LIST,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    ls.add_argument("--json", action="store_true", help="one JSON object per implementation")

    cmp = sub.add_parser("compare", help="measure CUDA, Triton and library baselines side by side (GPU)",
                         epilog=EXAMPLES_COMPARE, formatter_class=argparse.RawDescriptionHelpFormatter)
    cmp.add_argument("--op", action="append", help="op to run (repeatable; default: all)")
    cmp.add_argument("--backend", action="append", choices=BACKENDS,
                     help="backend to run (repeatable; the reference baseline always runs)")
    cmp.add_argument("--rung", action="append", help="rung key or vN (repeatable; default: all)")
    cmp.add_argument("--shape", action="append",
                     help="a shape in the op's form (MxNxK for sgemm, MxN for sgemv), or op:shape when several "
                          "ops run (repeatable; default: each op's shapes)")
    _add_run_options(cmp, "compare")

    aln = sub.add_parser("align", help="one square GEMM with its rows padded by 0…15 elements: throughput over the "
                                       "leading dimension (GPU)", epilog=EXAMPLES_ALIGN,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    aln.add_argument("--op", default="sgemm", help="an op of axes M, N, K (default sgemm)")
    aln.add_argument("--base", type=int, default=4096, help="M = N = K = BASE; leading dimensions BASE … BASE+15")
    aln.add_argument("--rung", default=None, help="the CUDA rung and Triton twin to measure (default: the last rung)")
    aln.add_argument("--backend", action="append", choices=BACKENDS,
                     help="backends (repeatable; default all; the reference baseline always runs)")
    _add_run_options(aln, "align-<op>-<base>")

    swp = sub.add_parser("sweep", help="one op over a grid of shapes: tidy CSV, heatmaps per backend (GPU)",
                         epilog=EXAMPLES_SWEEP, formatter_class=argparse.RawDescriptionHelpFormatter)
    swp.add_argument("--op", required=True, help="the op to sweep")
    for axis in ("m", "n", "k", "batch"):
        label = axis if axis == "batch" else axis.upper()
        swp.add_argument(f"--{axis}", default=None, metavar="SPEC",
                         help=f"values of axis {label}: e.g. 4096, 64,100,4096, 64:8192:x2 or 256:2048:256")
    swp.add_argument("--axis", action="append", metavar="NAME=SPEC", help="values of any other axis of the op")
    swp.add_argument("--backend", action="append", choices=BACKENDS,
                     help="backend to run (repeatable; the reference baseline always runs)")
    swp.add_argument("--rung", action="append", help="rung key or vN (repeatable; default: all)")
    swp.add_argument("--yes", action="store_true", help="run even above the case limit")
    swp.add_argument("--limit", type=int, default=None,
                     help="refuse above this many cases without --yes (default 300)")
    _add_run_options(swp, "sweep-<op>")

    cei = sub.add_parser("ceilings", help="measure (once per GPU, cached) FFMA, tensor-core, copy and launch ceilings",
                         epilog=EXAMPLES_CEILINGS, formatter_class=argparse.RawDescriptionHelpFormatter)
    cei.add_argument("--remeasure", action="store_true", help="measure again instead of using the cache")
    cei.add_argument("--out", type=Path, default=None, help="folder of ceilings.{json,md} (default: reports/<gpu>/)")
    cei.add_argument("--copy-sizes", action="store_true",
                     help="measure the device copy at 4 MiB … 2 GiB and add the curve to the ceilings (the rest "
                          "as cached, unless --remeasure)")

    val = sub.add_parser("validate", help="time a fixed set of kernels with the study, do_bench and ncu",
                         epilog=EXAMPLES_VALIDATE, formatter_class=argparse.RawDescriptionHelpFormatter)
    val.add_argument("--out", type=Path, default=None, help="folder of validate.{json,md} (default: reports/<gpu>/)")
    val.add_argument("--no-ncu", action="store_true", help="skip Nsight Compute even where it is installed")
    val.add_argument("--kernel", nargs=2, action="append", metavar=("IMPL", "SHAPE"),
                     help="validate these (repeatable) instead of the fixed set")
    val.add_argument("--ncu-target", nargs=3, metavar=("IMPL", "SHAPE", "LAUNCHES"), help=argparse.SUPPRESS)
    val.add_argument("--ncu-precision", default=None, help=argparse.SUPPRESS)
    val.add_argument("--ncu-config", default=None, help=argparse.SUPPRESS)

    dif = sub.add_parser("diff", help="compare two results files case by case, with noise-aware verdicts",
                         epilog=EXAMPLES_DIFF, formatter_class=argparse.RawDescriptionHelpFormatter)
    dif.add_argument("a", type=Path)
    dif.add_argument("b", type=Path)
    dif.add_argument("--threshold", type=float, default=100 * DEFAULT_THRESHOLD,
                     help="exit 1 when a pair is slower by more than this many %% beyond noise (default 5)")
    dif.add_argument("--floor", type=float, default=0.0,
                     help="also call a pair the same when its shift is within this many %% (a run-to-run spread "
                          "you declare, e.g. 1 for runs on two GPUs of one model: docs/method.md §6; default 0)")
    dif.add_argument("--md", type=Path, default=None, help="also write the diff as Markdown here")

    mrg = sub.add_parser("merge", help="join the results files of shards (or runs) into one",
                         epilog=EXAMPLES_MERGE, formatter_class=argparse.RawDescriptionHelpFormatter)
    mrg.add_argument("files", type=Path, nargs="+")
    mrg.add_argument("--out", type=Path, required=True, help="the merged results file (its report is written beside)")
    mrg.add_argument("--allow-mixed", action="store_true",
                     help="merge runs whose environments differ (each is kept; the report says so)")

    rer = sub.add_parser("rerun", help="measure again exactly the cases of a results file, then diff (GPU)",
                         epilog=EXAMPLES_RERUN, formatter_class=argparse.RawDescriptionHelpFormatter)
    rer.add_argument("results", type=Path)
    rer.add_argument("--out", type=Path, default=None,
                     help="the new results file (default: NAME-rerun.json in the current folder; an interrupted "
                          "rerun resumes when run again)")

    san = sub.add_parser("sanitize", help="run CUDA rungs under compute-sanitizer (memcheck, racecheck, synccheck, "
                                          "initcheck)", epilog=EXAMPLES_SANITIZE,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    san.add_argument("--op", action="append", help="op (repeatable; default: all)")
    san.add_argument("--rung", action="append", help="rung key or vN (repeatable; default: all)")
    san.add_argument("--tool", action="append", choices=("memcheck", "racecheck", "synccheck", "initcheck"),
                     help="tool (repeatable; default: all four)")
    san.add_argument("--shape", action="append", help="shapes instead of each op's small awkward ones (op form or op:shape)")
    san.add_argument("--dtype", action="append", metavar="{fp32,tf32,fp16,bf16}",
                     help="precisions (repeatable; default: each op's first)")
    san.add_argument("--backend", action="append", choices=("cuda", "triton"),
                     help="backends (default: cuda; triton adds the twins)")
    san.add_argument("--out", type=Path, default=None, help="folder of sanitize.{json,md} (default: reports/<gpu>/)")
    san.add_argument("--jobs", type=int, default=4,
                     help="sanitizer processes at once (default 4; each run checks correctness, times nothing)")
    san.add_argument("--target", nargs=3, metavar=("IMPL", "SHAPE", "PRECISION"), help=argparse.SUPPRESS)

    prf = sub.add_parser("profile", help="Nsight Compute on one implementation at one shape, raw output saved under "
                                          "reports/<gpu>/profiles/ (GPU); --table renders saved ones (no GPU)",
                         epilog=EXAMPLES_PROFILE, formatter_class=argparse.RawDescriptionHelpFormatter)
    prf.add_argument("targets", nargs="*", metavar="IMPL SHAPE | FILE",
                     help="an implementation and a shape; with --table, saved CSVs or their folders "
                          "(default: every reports/*/profiles/)")
    prf.add_argument("--precision", default=None, help="precision (default: the op's first)")
    prf.add_argument("--launches", type=int, default=1, help="launches profiled, one row each (default 1)")
    prf.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                     help="a parameter in place of the declared config's (repeatable, or comma-separated): "
                          "profile a point of the autotune space")
    prf.add_argument("--out", type=Path, default=None, help="folder of the CSV and its JSON (default: "
                                                            "reports/<gpu>/profiles/)")
    prf.add_argument("--table", action="store_true", help="render the Markdown table of saved profiles")
    prf.add_argument("--source", type=Path, default=None, metavar="CSV",
                     help="render stall samples by SASS opcode from a saved ncu source page (ncu --import R.ncu-rep "
                          "--page source --csv --print-source sass; no GPU)")
    prf.add_argument("--md", type=Path, default=None, help="with --table or --source: write it here instead of "
                                                           "printing it")

    envp = sub.add_parser("env", help="print what reproduces a number on this machine",
                          epilog=EXAMPLES_ENV, formatter_class=argparse.RawDescriptionHelpFormatter)
    envp.add_argument("--json", action="store_true")

    cbs = sub.add_parser("cublas-study", help="the cuBLAS study's tables on this GPU: GEMM at the seed's shapes "
                                              "and precisions, GEMV, alignment, sweeps, one page (GPU)",
                         epilog=EXAMPLES_CUBLAS_STUDY, formatter_class=argparse.RawDescriptionHelpFormatter)
    cbs.add_argument("--out", type=Path, default=None,
                     help="folder of the steps' results (default reports/<gpu>/cublas-study/); the page goes "
                          "beside it as cublas-study.md")
    cbs.add_argument("--page-only", action="store_true", help="rewrite the page from the results there (no GPU)")
    cbs.add_argument("--gpus", default=None, metavar="0,1,…|all", help="passed to every step")

    rep = sub.add_parser("report", help="regenerate Markdown and figures from a results file (no GPU)",
                         epilog=EXAMPLES_REPORT, formatter_class=argparse.RawDescriptionHelpFormatter)
    rep.add_argument("results", type=Path)
    rep.add_argument("--md", type=Path, default=None, help="Markdown path (default: beside the JSON)")
    return p


def cmd_list(args) -> int:
    from tabulate import tabulate

    problems = check_integrity()
    if args.json:
        print(json.dumps([impl.to_json() for lad in ladders().values() for impl in implementations_of(lad)],
                         indent=1))
    else:
        from study.metrics import unit

        for op, lad in ladders().items():
            impls = implementations_of(lad)
            have = {(i.rung, i.backend) for i in impls}
            p = lad.problem
            rows = [[f"v{n}", r.key, r.idea, r.removes, "✓" if (r.key, "cuda") in have else "—",
                     "✓" if (r.key, "triton") in have else "—"] for n, r in enumerate(lad.rungs)]
            rows += [["", f"{b.key} ({'reference' if b.reference else 'baseline'})", f"{b.title} → {b.library}",
                      "", "", ""] for b in lad.baselines]
            print(f"{op}  ({p.bound}-bound, {unit(p.bound)}; shape {p.shape_form}; precisions "
                  f"{', '.join(f'{x.name} ({x.dtype}, {x.math})' for x in p.precisions)}; default shapes "
                  f"{', '.join(p.shape_label(s) for s in p.default_shapes)}; modes {', '.join(p.default_modes)})")
            print(tabulate(rows, ["#", "rung", "idea", "bottleneck removed", "CUDA", "Triton"], tablefmt="simple"))
            print()
    for p in problems:
        print(f"registry problem: {p}", file=sys.stderr)
    return 2 if problems else 0


def parse_shapes(texts: list[str], ops: list[str], all_ops) -> dict:
    """op -> shapes from ``--shape`` values: ``op:shape`` goes to that op; a bare shape to every
    op of the run whose form it fits. A shape that fits none names each op's form."""
    shapes: dict = {op: [] for op in ops}
    for text in texts:
        op, sep, body = text.partition(":")
        if sep:
            if op not in ops:
                raise UsageError(f"--shape {text}: {op!r} is not an op of this run ({', '.join(ops)})")
            try:
                shapes[op].append(all_ops[op].problem.parse_shape(body))
            except ValueError as exc:
                raise UsageError(str(exc)) from None
            continue
        fitted, errors = 0, []
        for op in ops:
            try:
                shapes[op].append(all_ops[op].problem.parse_shape(text))
                fitted += 1
            except ValueError as exc:
                errors.append(str(exc))
        if not fitted:
            raise UsageError("; ".join(errors) if len(ops) == 1 else
                             f"--shape {text} fits none of the ops of this run: " + "; ".join(errors))
    return shapes


def parse_dtypes(names: list[str], ops: list[str], all_ops) -> dict:
    """op -> the --dtype names it accepts. Each name must be known and accepted by some op of
    the run; an op that accepts none of them is left out by the caller."""
    from study.precision import NAMES

    for name in names:
        if name not in NAMES:
            raise UsageError(f"unknown dtype {name!r}; known: {', '.join(NAMES)}")
    accepted = {op: [p.name for p in all_ops[op].problem.precisions] for op in ops}
    for name in names:
        if not any(name in accepted[op] for op in ops):
            raise UsageError("; ".join(f"{op} does not accept {name!r}; {op} accepts: {', '.join(accepted[op])}"
                                       for op in ops))
    return {op: [n for n in names if n in accepted[op]] for op in ops if any(n in accepted[op] for n in names)}


def _cases(args):
    all_ops = ladders()
    ops = args.op or list(all_ops)
    for op in ops:
        if op not in all_ops:
            raise UsageError(f"unknown op {op!r}; known: {', '.join(all_ops)}")
    shapes = None
    if args.shape:
        shapes = parse_shapes(args.shape, ops, all_ops)
        for op in [op for op in ops if not shapes[op]]:
            print(f"{op}: no --shape of its form {all_ops[op].problem.shape_form} was given; not run",
                  file=sys.stderr)
        ops = [op for op in ops if shapes[op]]
    precisions = None
    if args.dtype:
        precisions = parse_dtypes(args.dtype, ops, all_ops)
        for op in [op for op in ops if op not in precisions]:
            print(f"{op}: accepts none of --dtype {', '.join(args.dtype)}; not run", file=sys.stderr)
        ops = [op for op in ops if op in precisions]
    return _plan(args, ops, shapes, precisions)


def _plan(args, ops, shapes, precisions, rungs=None) -> list:
    """runner.plan with the run options of compare, sweep and align; its errors become usage errors."""
    from study.runner import plan

    try:
        return plan(ops, shapes=shapes, precisions=precisions, backends=args.backend,
                    rungs=args.rung if rungs is None else rungs, autotune=args.autotune, modes=args.mode)
    except (KeyError, ValueError) as exc:
        raise UsageError(exc.args[0] if exc.args else str(exc)) from None


def _one_op(name: str):
    """(every ladder, the problem of op ``name``); a usage error naming the known ops otherwise."""
    all_ops = ladders()
    if name not in all_ops:
        raise UsageError(f"unknown op {name!r}; known: {', '.join(all_ops)}")
    return all_ops, all_ops[name].problem


def _no_gpu_reason() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU is visible to torch"
    try:
        import cupy  # noqa: F401
    except ImportError:
        return "cupy is not installed (pip install -e '.[cuda]')"
    return None


class Progress:
    """One line per measured case, with the time left estimated from this run's pace (cases
    resumed from an earlier run do not count towards it)."""

    def __init__(self):
        self.started = time.perf_counter()
        self.first = None

    def __call__(self, n, total, case, record):
        from study import metrics
        from study.report import reason_line
        from study.sweep import eta_text

        if self.first is None:
            self.first = n - 1
        status = record["status"]
        if status == "ok":
            value = metrics.headline({**record, **metrics.derive(record, {})})
            what = f"{value:,.0f} {metrics.unit(record['work']['bound'])}  ({record['median_ms']:.4f} ms)"
        else:
            what = f"{status}: {reason_line(record['reason'])[:160]}"
        pace = (time.perf_counter() - self.started) / max(n - self.first, 1)
        print(f"[{n:>{len(str(total))}}/{total} {eta_text(pace * (total - n)):>6} left] {case.label:<72} {what}",
              file=sys.stderr, flush=True)


def _settings(args):
    from study.runner import TimerSettings, TimingConfigError

    try:
        return TimerSettings(mode=(args.mode or ["cold"])[0], reps=args.reps, noise=args.noise / 100, ci=args.ci / 100,
                             gate_trials=args.trials, min_samples=args.min_samples,
                             min_time_s=args.min_time, timeout_s=args.timeout,
                             throttle_threshold=args.throttle_threshold, discard_throttled=not args.keep_throttled,
                             graph_launches=args.graph_launches)
    except TimingConfigError as exc:
        raise UsageError(str(exc)) from None


def _gpu_or_exit(command: str) -> bool:
    reason = _no_gpu_reason()
    if reason:
        print(f"study {command} needs a CUDA GPU: {reason}.\n"
              f"To render a report from an existing results file, run: "
              f"python -m study report reports/<gpu>/compare.json", file=sys.stderr)
    return reason is None


def cmd_compare(args) -> int:
    cases = _cases(args)  # usage errors before the GPU check: they need no GPU to be told
    code, _ = _run(args, cases, "compare")
    return code


def _run(args, cases, command: str, stem: str | None = None, finish=None):
    """compare's and sweep's common end: shard, GPUs, measure, write. Returns (exit code, document)."""
    settings = _settings(args)
    stem = stem or command
    name, shard = args.name or stem, None
    if args.shard:
        from study.shards import ShardError, parse_shard, shard_cases

        try:
            index, count = parse_shard(args.shard)
        except ShardError as exc:
            raise UsageError(str(exc)) from None
        cases = shard_cases(cases, index, count)
        name, shard = args.name or f"{stem}-shard-{index}-of-{count}", [index, count]
        print(f"shard {index}/{count}: {len(cases)} cases", file=sys.stderr)
    if not _gpu_or_exit(command):
        return 2, None
    gpus = None
    if args.gpus:
        import torch

        from study.worker import parse_gpus

        try:
            gpus = parse_gpus(args.gpus, torch.cuda.device_count())
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        if args.no_isolate and len(gpus) > 1:
            raise UsageError("--gpus with several GPUs needs a worker per GPU: drop --no-isolate")
    return measure_and_report(cases, settings, args.out, name, seed=args.seed, isolate=not args.no_isolate,
                              fresh=args.fresh, what=f"autotune {args.autotune}", gpus=gpus, shard=shard,
                              finish=finish)


def cmd_align(args) -> int:
    from study import align

    all_ops, problem = _one_op(args.op)
    if not problem.paddable:
        raise UsageError(f"{args.op}'s kernels take no leading dimensions; align runs on "
                         + ", ".join(op for op, lad in all_ops.items() if lad.problem.paddable))
    if args.base < 1:
        raise UsageError(f"--base must be at least 1; got {args.base}")
    try:
        square = align.shape(problem, args.base)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if len(args.dtype or []) > 1 or len(args.mode or []) > 1:
        raise UsageError("align measures one precision and one timing mode at a time (one --dtype, one --mode)")
    rungs = all_ops[args.op].rungs
    rung = args.rung or f"v{len(rungs) - 1}"
    precisions = parse_dtypes(args.dtype, [args.op], all_ops) if args.dtype else None
    cases = align.padded(_plan(args, [args.op], {args.op: [square]}, precisions, rungs=[rung]))
    print(f"align {args.op} at {args.base}³, rung {rung}: leading dimensions {args.base} … {args.base + 15}, "
          f"{len(cases)} cases", file=sys.stderr)

    def finish(doc, json_path, md_path):
        csv_path, md = align.write_outputs(doc, json_path)
        print(f"wrote {csv_path} and {md}", file=sys.stderr)

    code, _ = _run(args, cases, "align", stem=f"align-{args.op}-{args.base}", finish=finish)
    return code


def cmd_sweep(args) -> int:
    from study import sweep

    all_ops, problem = _one_op(args.op)
    by_lower = {a.lower(): a for a in problem.axes}
    specs: dict = {}
    given = [(a, v) for a, v in (("m", args.m), ("n", args.n), ("k", args.k), ("batch", args.batch)) if v is not None]
    for item in args.axis or []:
        axis, sep, value = item.partition("=")
        if not sep or not axis.strip():
            raise UsageError(f"--axis {item!r}: expected NAME=SPEC, e.g. --axis batch=32:256:x2")
        given.append((axis.strip(), value))
    for axis, value in given:
        name = by_lower.get(axis.lower(), axis)
        if name in specs:
            raise UsageError(f"axis {name} is given twice (--{axis.lower()} and --axis, or --axis twice)")
        specs[name] = value
    try:
        shapes = sweep.grid(problem.axes, specs)
    except sweep.RangeError as exc:
        raise UsageError(f"sweep {args.op}: {exc}") from None
    precisions = parse_dtypes(args.dtype, [args.op], all_ops) if args.dtype else None
    cases = _plan(args, [args.op], {args.op: shapes}, precisions)
    counts = " × ".join(f"{len(sweep.parse_values(specs[a]))} {a}" for a in problem.axes)
    print(f"sweep {args.op}: {len(shapes)} shapes ({counts}) → {len(cases)} cases", file=sys.stderr)
    limit = sweep.CASE_LIMIT if args.limit is None else args.limit
    mine = len(cases)
    if args.shard:  # the limit is about what this process will measure
        from study.shards import ShardError, parse_shard, shard_cases

        try:
            mine = len(shard_cases(cases, *parse_shard(args.shard)))
        except ShardError as exc:
            raise UsageError(str(exc)) from None
    if mine > limit and not args.yes:
        print(f"study sweep: {mine} cases{' in this shard' if mine != len(cases) else ''} is above the limit of "
              f"{limit}; narrow the ranges, or pass --yes (or --limit N) to run them", file=sys.stderr)
        return 2

    def finish(doc, json_path, md_path):
        csv_path, md = sweep.write_outputs(doc, json_path)
        print(f"wrote {csv_path} and {md}", file=sys.stderr)

    code, _ = _run(args, cases, "sweep", stem=f"sweep-{args.op}", finish=finish)
    return code


def measure_and_report(cases, settings, out_dir, name, seed=0, isolate=True, fresh=False, what="", gpus=None,
                       shard=None, finish=None):
    """The compare flow on the GPU: ceilings, environment, every case in a worker, the report.
    With ``gpus`` (several indices) one worker per GPU, each measuring its own ceilings and launch
    overhead, recorded per GPU. Returns (exit code, the results document or None when interrupted)."""
    from study import ceilings, hardware, report, results
    from study.compare import run_compare, run_interruptibly
    from study.runner import Session, Timer

    say = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    if gpus:
        import torch

        torch.cuda.set_device(gpus[0])  # the environment describes a GPU the run uses
    device = hardware.current_device()
    json_path, md_path = results.default_paths(out_dir or report_dir(device.slug), name)
    pools = []

    def work() -> dict:
        if gpus:
            return work_on_gpus()
        clocks = hardware.Clocks()
        measured, source = ceilings.load_or_measure(device, settings, clocks)
        say(f"ceilings: {source}")
        overhead = ceilings.launch_overhead(Timer(dataclasses.replace(settings, mode="cold"), device, clocks))["median_ms"]
        env = results.environment(device, settings, results.python_argv())
        for per_case in ("mode", "flush_l2"):  # each record carries its own mode
            env["timer"].pop(per_case)
        env["ceilings"] = {**ceilings.summary(measured), "source": source, "measured_utc": measured.get("utc")}
        env["launch_overhead_ms"] = overhead
        env["clocks_available"] = clocks.available
        env["modes"] = sorted({c.mode for c in cases})
        env["seed"] = seed
        env["shard"] = shard
        say(f"{len(cases)} cases on {device.name}: {len({c.impl.name for c in cases})} implementations, "
            f"{len({(c.impl.op, json.dumps(c.shape)) for c in cases})} shapes, "
            f"precisions {', '.join(sorted({c.precision.name for c in cases}))}, {what}, "
            f"modes {', '.join(env['modes'])}; empty-kernel launch {overhead * 1e3:.2f} µs; results to {json_path}")
        session_args = dict(seed=seed, launch_overhead_ms=overhead)
        if not isolate:
            import torch

            gpu = {"index": torch.cuda.current_device(), "uuid": hardware.nvml_facts()["uuid"]}
            measure = Session(settings, device, clocks=clocks, gpu=gpu, **session_args).measure
        else:
            from study.worker import WorkerPool

            pools.append(WorkerPool(settings, **session_args))
            measure = _pool_measure(pools[0])
        return run_compare(cases, env, json_path, measure, progress=Progress(), fresh=fresh, say=say)

    def work_on_gpus() -> dict:
        from study.worker import WorkerPool, start_all

        pools.extend(WorkerPool(settings, seed=seed, gpu_index=g) for g in gpus)
        say(f"starting {len(pools)} worker{'s' if len(pools) > 1 else ''} on GPU {', '.join(map(str, gpus))} "
            f"(each measures its own ceilings and launch overhead)")
        ready = start_all(pools, say)
        if not ready:
            raise UsageError(f"no worker could start on GPU {', '.join(map(str, gpus))}")
        models = sorted({p.facts["name"] for p in ready})
        if len(models) > 1:
            raise UsageError(f"--gpus spans {' and '.join(models)}: peaks and ceilings differ by model; run each "
                             f"model on its own, or shard and `merge --allow-mixed`")
        facts = [p.facts for p in ready]
        env = results.environment(device, settings, results.python_argv())
        for per_case in ("mode", "flush_l2"):
            env["timer"].pop(per_case)
        env.update(gpus=facts, ceilings=facts[0]["ceilings"], launch_overhead_ms=facts[0]["launch_overhead_ms"],
                   modes=sorted({c.mode for c in cases}), seed=seed, shard=shard)
        say(f"{len(cases)} cases on {len(ready)} {models[0]}, {what}; results to {json_path}")
        return run_compare(cases, env, json_path, [_pool_measure(p, len(ready)) for p in ready], progress=Progress(),
                           fresh=fresh, say=say)

    def cleanup() -> None:
        for pool in pools:
            pool.close(kill=True, final=True)

    doc, code = run_interruptibly(work, json_path, len(cases), cleanup, say)
    if doc is None:
        return code, None
    if finish is None:
        report.write_report(doc, md_path)
        print_summary(doc)
        say(f"\nwrote {json_path} and {md_path}")
    else:
        finish(doc, json_path, md_path)
    return (1 if any(m["status"] in ("wrong", "crashed") for m in doc["measurements"]) else 0), doc


def _pool_measure(pool, lanes: int = 1):
    """Measure a case in ``pool``'s worker; every record names the GPU, also a crashed one. In a
    run of several lanes a worker that cannot start hands its work to the others (LaneDead)."""
    from study.compare import LaneDead
    from study.runner import crashed_record

    def measure(case):
        record = pool.measure(case, lambda why: crashed_record(case, why))
        if pool.dead and lanes > 1:
            raise LaneDead(f"GPU {pool.gpu_index}: {record['reason']}")
        if record.get("gpu") is None and pool.facts:
            record["gpu"] = {"index": pool.facts.get("index"), "uuid": pool.facts.get("uuid")}
        return record

    return measure


def _load(path: Path) -> dict:
    from study import results

    try:
        return results.load(path)
    except (OSError, ValueError) as exc:
        raise UsageError(str(exc)) from None


def cmd_diff(args) -> int:
    from study import diff

    a, b = _load(args.a), _load(args.b)
    threshold = args.threshold / 100
    if args.floor < 0:
        raise UsageError(f"--floor must be at least 0; got {args.floor}")
    floor = args.floor / 100
    pairs = diff.pair_runs(a, b, threshold, floor)
    if not any(p.a is not None and p.b is not None for p in pairs):
        ops = lambda d: ", ".join(sorted({m["op"] for m in d["measurements"]})) or "none"  # noqa: E731
        print(f"nothing to pair: {args.a} measured {ops(a)}, {args.b} measured {ops(b)}; every case is only in "
              f"one of them", file=sys.stderr)
        return 2
    print(diff.terminal(a, b, pairs, threshold))
    if args.md:
        args.md.parent.mkdir(parents=True, exist_ok=True)
        args.md.write_text(diff.markdown(args.a, args.b, a, b, pairs, threshold, floor))
        print(f"wrote {args.md}", file=sys.stderr)
    return 1 if diff.regressions(pairs, threshold) else 0


def cmd_merge(args) -> int:
    from study import report, results
    from study.shards import ShardError, merge

    try:
        doc = merge(args.files, allow_mixed=args.allow_mixed)
    except ShardError as exc:
        raise UsageError(str(exc)) from None
    except (OSError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    results.write(args.out, doc)
    md = report.write_page(doc, args.out)
    print(f"merged {len(doc['measurements'])} measurements from {len(args.files)} files into {args.out} and {md}"
          + (" (mixed environments: see the report)" if doc["environment"].get("mixed") else ""), file=sys.stderr)
    return 0


def rerun_plan(doc: dict):
    """The cases and timer settings of a results file, to measure them again exactly."""
    from study.results import case_key
    from study.runner import Case, TimerSettings, TimingConfigError

    cases = []
    # An upgraded (schema 1/2) file's plan keys predate precisions and modes; its records' keys do not.
    keys = ["|".join(case_key(m)) for m in doc["measurements"]] if doc.get("upgraded_from") or not doc.get("plan") \
        else doc["plan"]
    for key in keys:
        name, shape_text, precision, autotune, mode, *rest = key.split("|")
        pad = int(rest[0].removeprefix("pad=")) if rest else 0
        try:
            impl = implementation(name)
        except KeyError:
            raise UsageError(f"{name} is not an implementation of this version of the study") from None
        problem = ladder(impl.op).problem
        cases.append(Case(impl, problem.parse_shape(shape_text), problem.precision(precision), autotune, mode, pad))
    timer = doc["environment"]["timer"]
    fields = {f: timer[f] for f in TimerSettings.__dataclass_fields__ if f in timer}
    try:
        settings = TimerSettings(**fields)
    except TimingConfigError as exc:
        raise UsageError(f"the file's timer settings: {exc}") from None
    return cases, settings, doc["environment"].get("seed", 0)


def cmd_rerun(args) -> int:
    from study import diff

    old = _load(args.results)
    cases, settings, seed = rerun_plan(old)
    if not _gpu_or_exit("rerun"):
        return 2
    out = args.out or Path(args.results.stem + "-rerun.json")  # here, not beside a committed report
    code, new = measure_and_report(cases, settings, out.parent, out.stem, seed=seed,
                                   what=f"rerun of {args.results}")
    if new is None:
        return code
    pairs = diff.pair_runs(old, new)
    print(diff.terminal(old, new, pairs, DEFAULT_THRESHOLD))
    return code


def cmd_sanitize(args) -> int:
    from study import sanitize

    if args.target:
        return sanitize.target(*args.target)
    all_ops = ladders()
    ops = args.op or list(all_ops)
    for op in ops:
        if op not in all_ops:
            raise UsageError(f"unknown op {op!r}; known: {', '.join(all_ops)}")
    shapes = parse_shapes(args.shape, ops, all_ops) if args.shape else None
    precisions = parse_dtypes(args.dtype, ops, all_ops) if args.dtype else None
    backends = set(args.backend or ["cuda"])
    wanted = set(args.rung or [])
    impls = [i for op in ops for i in implementations_of(all_ops[op]) if i.backend in backends and i.rung
             and (not wanted or {i.rung, f"v{i.rung_index}"} & wanted)]
    if not impls:
        raise UsageError("no implementation matches --op/--rung/--backend")
    try:
        tool_path = sanitize.find_tool()
    except sanitize.SanitizerMissing as exc:
        print(f"study sanitize: {exc}", file=sys.stderr)
        return 2
    if not _gpu_or_exit("sanitize"):
        return 2
    from study import hardware, results
    from study.runner import TimerSettings

    device = hardware.current_device()
    out_dir = args.out or report_dir(device.slug)
    rows = sanitize.plan(impls, args.tool or sanitize.TOOLS,
                         sorted({n for names in (precisions or {}).values() for n in names}) or None, shapes)
    version = subprocess_output([tool_path, "--version"]).strip().splitlines()[-1:]
    old_path = out_dir / "sanitize.json"
    old = json.loads(old_path.read_text()) if old_path.is_file() else None
    doc = {"schema": 1, "environment": results.environment(device, TimerSettings(), results.python_argv()),
           "tool_version": version[0] if version else "", "results": sanitize.merged(old, []), "complete": False}
    if args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1; got {args.jobs}")
    fresh: list = []
    print(f"{len(rows)} sanitizer runs ({len(impls)} implementations) with {tool_path}, {args.jobs} at once",
          file=sys.stderr)
    started = time.perf_counter()

    def one(row_plan):
        impl, tool, shape_text, precision, reason = row_plan
        if reason:
            return {"implementation": impl.name, "source": impl.source, "source_hash": sanitize.source_hash(impl),
                    "tool": tool, "shape": shape_text, "precision": precision, "status": "skipped", "reason": reason,
                    "count": None, "first": [], "seconds": 0.0}
        return sanitize.run_one(tool_path, tool, impl, shape_text, precision)

    from concurrent.futures import ThreadPoolExecutor, as_completed

    done: dict = {}
    with ThreadPoolExecutor(args.jobs) as pool:  # each run is a process of its own; threads only wait
        futures = {pool.submit(one, r): i for i, r in enumerate(rows)}
        for n, future in enumerate(as_completed(futures), 1):  # saved as each finishes, kept in plan order
            row = future.result()
            done[futures[future]] = row
            fresh = [done[i] for i in sorted(done)]
            doc["results"] = sanitize.merged(old, fresh)  # earlier rows this run does not redo are kept
            results.write(out_dir / "sanitize.json", doc)  # after every run: an interruption loses nothing
            print(f"[{n}/{len(rows)}] {row['implementation']} {row['tool']} {row['shape']} {row['precision']}: "
                  f"{row['status']}" + (f" ({row['count']})" if row["status"] == "hazards" else ""),
                  file=sys.stderr, flush=True)
    doc["complete"], doc["wall_s"], doc["jobs"] = True, time.perf_counter() - started, args.jobs
    results.write(out_dir / "sanitize.json", doc)
    (out_dir / "sanitize.md").write_text(sanitize.markdown(doc))
    print(f"wrote {out_dir / 'sanitize.json'} and sanitize.md", file=sys.stderr)
    return 1 if any(r["status"] in ("hazards", "failed") for r in fresh) else 0


def cmd_profile(args) -> int:
    from study import profile

    if args.source or args.table:  # rendered from saved files, no GPU
        if args.config:
            raise UsageError("--config chooses what to profile; --table and --source render saved files")
        files = [] if args.source else profile.saved_files(args.targets)
        if args.table and not files:
            raise UsageError("no saved profiles (ncu-*.csv) there; make one with python -m study profile IMPL SHAPE")
        try:
            text = profile.render_source_table(args.source) if args.source else profile.render_table(files)
        except (OSError, ValueError) as exc:
            raise UsageError(str(exc)) from None
        if args.md:
            args.md.parent.mkdir(parents=True, exist_ok=True)
            args.md.write_text(text)
            print(f"wrote {args.md}", file=sys.stderr)
        else:
            print(text)
        return 0
    if len(args.targets) != 2:
        raise UsageError("profile takes IMPL SHAPE (e.g. sgemm/v4_double_buffer/cuda 4096x4096x4096), or --table")
    try:
        impl, _ = profile.resolve(*args.targets, args.precision)  # usage errors before the tool and GPU checks
        config = profile.parse_config(args.config, impl.params)
        profile.find_ncu()
    except profile.ProfileError as exc:
        print(f"study profile: {exc}", file=sys.stderr)
        return exc.code
    if not _gpu_or_exit("profile"):
        return 2
    try:
        path = profile.run_profile(*args.targets, precision=args.precision, launches=args.launches,
                                   out_dir=args.out, say=lambda text: print(text, file=sys.stderr, flush=True),
                                   config=config)
    except profile.ProfileError as exc:
        print(f"study profile: {exc}", file=sys.stderr)
        return exc.code
    print(profile.render_table([path]))
    print(f"wrote {path} and {path.with_suffix('.json').name}", file=sys.stderr)
    return 0


def subprocess_output(cmd: list[str]) -> str:
    import subprocess

    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def cmd_env(args) -> int:
    from study import results

    env = results.machine_environment()
    if args.json:
        print(json.dumps(env, indent=1))
    else:
        from tabulate import tabulate

        rows = [[k, "—" if v is None else v] for k, v in results.flatten(env)]
        print(tabulate(rows, tablefmt="plain"))
    return 0


def cmd_ceilings(args) -> int:
    if not _gpu_or_exit("ceilings"):
        return 2
    from study import ceilings, hardware, results
    from study.runner import TimerSettings

    device = hardware.current_device()
    measured, source = ceilings.load_or_measure(device, TimerSettings(), hardware.Clocks(), remeasure=args.remeasure)
    if args.copy_sizes and source != "measured now":  # a fresh measurement has the curve already
        measured = ceilings.add_copy_by_size(measured, device, TimerSettings(), hardware.Clocks())
        results.write(ceilings.cache_path(device), measured)
        source += " + the copy by size measured now"
    out_dir = args.out or report_dir(device.slug)
    results.write(out_dir / "ceilings.json", measured)
    text = ceilings.markdown(measured)
    (out_dir / "ceilings.md").write_text(text)
    print(text)
    print(f"ceilings: {source}" + ("" if source == "measured now" else " (--remeasure to measure again)")
          + f"; wrote {out_dir / 'ceilings.json'} and ceilings.md", file=sys.stderr)
    return 0


def cmd_validate(args) -> int:
    from study import validate

    if args.ncu_target:
        return validate.ncu_target(*args.ncu_target, precision=args.ncu_precision, config_text=args.ncu_config)
    for name, shape in args.kernel or ():  # usage errors before the GPU check, as in compare
        try:
            ladder(implementation(name).op).problem.parse_shape(shape)
        except KeyError:
            raise UsageError(f"unknown implementation {name}; see python -m study list --json") from None
        except ValueError as exc:
            raise UsageError(f"{name} {shape}: {exc}") from None
    if not _gpu_or_exit("validate"):
        return 2
    return validate.main(args.out, use_ncu=not args.no_ncu, kernels=[tuple(k) for k in args.kernel or validate.KERNELS])


def print_summary(doc: dict) -> None:
    from tabulate import tabulate

    from study import metrics

    rows = [[m["implementation"], "×".join(str(v) for v in m["shape"].values()), m.get("precision"), m.get("mode"),
             m["autotune"], m["status"],
             "" if metrics.headline(m) is None else f"{metrics.headline(m):,.0f} {metrics.unit(m['work']['bound'])}",
             "" if m["pct_peak"] is None else f"{m['pct_peak']:.1f}",
             "" if m["x_ref"] is None else f"{m['x_ref']:.2f}"] for m in doc["measurements"]]
    print(tabulate(rows, ["implementation", "shape", "precision", "mode", "autotune", "status", "median",
                          "% peak", "× ref"], tablefmt="simple"))


def cmd_report(args) -> int:
    from study import report, results

    try:
        doc = results.load(args.results)
    except (OSError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    print(f"wrote {report.write_page(doc, args.results, args.md)}")
    return 0


def cmd_cublas_study(args) -> int:
    from study import cublas_study

    out = args.out
    if args.page_only:
        if out is None:
            raise UsageError("--page-only needs --out: the folder of the study's results, e.g. "
                             "reports/h200/cublas-study")
        try:
            print(f"wrote {cublas_study.write_page(out)}")
        except FileNotFoundError as exc:
            raise UsageError(str(exc)) from None
        return 0
    if not _gpu_or_exit("cublas-study"):
        return 2
    if out is None:
        from study.hardware import current_device

        out = report_dir(current_device().slug) / "cublas-study"
    code = cublas_study.run(out, main, say=lambda s: print(s, file=sys.stderr),
                            extra=("--gpus", args.gpus) if args.gpus else ())
    if code not in (2, 130):
        print(f"wrote {cublas_study.write_page(out)}")
    return code


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return {"list": cmd_list, "compare": cmd_compare, "sweep": cmd_sweep, "align": cmd_align,
                "cublas-study": cmd_cublas_study, "report": cmd_report, "ceilings": cmd_ceilings,
                "validate": cmd_validate, "diff": cmd_diff, "merge": cmd_merge, "rerun": cmd_rerun,
                "env": cmd_env, "sanitize": cmd_sanitize, "profile": cmd_profile}[args.command](args)
    except (UsageError, PluginError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
