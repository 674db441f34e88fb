"""``python -m study``: list the ladders, compare them on the GPU, render reports.

Exit status: 0 success, 1 a measurement was wrong or crashed, 2 bad usage or no GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from study.registry import BACKENDS, ROOT, check_integrity, implementations_of, ladders

EXAMPLES_COMPARE = """examples:
  python -m study compare                                   every op at its default shapes
  python -m study compare --op sgemm --rung v3 --rung v4 --backend cuda
  python -m study compare --shape 4096x4096x4096 --shape 1000x1500x1700 --autotune both
  python -m study compare --out /tmp/reports --name trial
"""
EXAMPLES_REPORT = """examples:
  python -m study report reports/h200/compare.json
  python -m study report reports/h200/compare.json --md /tmp/compare.md
"""
EXAMPLES_LIST = """examples:
  python -m study list
  python -m study list --json
"""


class UsageError(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m study", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    ls = sub.add_parser("list", help="print each ladder", epilog=EXAMPLES_LIST,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    ls.add_argument("--json", action="store_true", help="one JSON object per implementation")

    cmp = sub.add_parser("compare", help="measure CUDA, Triton and cuBLAS side by side (GPU)",
                         epilog=EXAMPLES_COMPARE, formatter_class=argparse.RawDescriptionHelpFormatter)
    cmp.add_argument("--op", action="append", help="op to run (repeatable; default: all)")
    cmp.add_argument("--backend", action="append", choices=BACKENDS,
                     help="backend to run (repeatable; the cuBLAS baseline always runs)")
    cmp.add_argument("--rung", action="append", help="rung key or vN (repeatable; default: all)")
    cmp.add_argument("--shape", action="append", help="MxNxK (repeatable; default: the op's shapes)")
    cmp.add_argument("--dtype", action="append", help="dtype (repeatable; default: the op's first)")
    cmp.add_argument("--autotune", choices=("off", "on", "both"), default="off",
                     help="off: declared configs; on: search each rung's space; both: measure each way")
    cmp.add_argument("--reps", type=int, default=30, help="timed repetitions (≥ 20; default 30)")
    cmp.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    cmp.add_argument("--out", type=Path, default=None,
                     help="folder of the results and report (default: reports/<gpu>/)")
    cmp.add_argument("--name", default="compare", help="file stem of results and report (default: compare)")

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
        for op, lad in ladders().items():
            impls = implementations_of(lad)
            have = {(i.rung, i.backend) for i in impls}
            rows = [[f"v{n}", r.key, r.idea, r.removes, "✓" if (r.key, "cuda") in have else "—",
                     "✓" if (r.key, "triton") in have else "—", ""] for n, r in enumerate(lad.rungs)]
            rows.append(["", "baseline", lad.baseline.title, "", "", "", "✓"])
            print(f"{op}  ({', '.join(lad.problem.dtypes)}; default shapes "
                  f"{', '.join(lad.problem.shape_label(s) for s in lad.problem.default_shapes)})")
            print(tabulate(rows, ["#", "rung", "idea", "bottleneck removed", "CUDA", "Triton", "cuBLAS"],
                           tablefmt="simple"))
            print()
    for p in problems:
        print(f"registry problem: {p}", file=sys.stderr)
    return 2 if problems else 0


def _cases(args):
    from study.runner import plan

    all_ops = ladders()
    ops = args.op or list(all_ops)
    for op in ops:
        if op not in all_ops:
            raise UsageError(f"unknown op {op!r}; known: {', '.join(all_ops)}")
    shapes = dtypes = None
    if args.shape:
        try:
            shapes = {op: [all_ops[op].problem.parse_shape(s) for s in args.shape] for op in ops}
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if args.dtype:
        from study.problem import DTYPES

        unknown = [d for d in args.dtype if d not in DTYPES]
        if unknown:
            raise UsageError(f"unknown dtype {', '.join(unknown)}; known: {', '.join(DTYPES)}")
        dtypes = {op: list(args.dtype) for op in ops}
    try:
        return plan(ops, shapes=shapes, dtypes=dtypes, backends=args.backend, rungs=args.rung,
                    autotune=args.autotune)
    except (KeyError, ValueError) as exc:
        raise UsageError(exc.args[0] if exc.args else str(exc)) from None


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


def _progress(n, total, case, record):
    from study.report import reason_line

    status = record["status"]
    what = (f"{record['gflops']:,.0f} GFLOPS  ({record['median_ms']:.4f} ms)" if status == "ok"
            else f"{status}: {reason_line(record['reason'])[:160]}")
    print(f"[{n:>{len(str(total))}}/{total}] {case.label:<60} {what}", file=sys.stderr, flush=True)


def cmd_compare(args) -> int:
    from study.runner import TimerSettings

    cases = _cases(args)  # usage errors before the GPU check: they need no GPU to be told
    try:
        settings = TimerSettings(reps=args.reps)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    reason = _no_gpu_reason()
    if reason:
        print(f"study compare needs a CUDA GPU: {reason}.\n"
              f"To render a report from an existing results file, run: "
              f"python -m study report reports/<gpu>/compare.json", file=sys.stderr)
        return 2
    from study import hardware, report, results
    from study.runner import Session, run

    device = hardware.current_device()
    out_dir = args.out or ROOT / "reports" / device.slug
    json_path, md_path = results.default_paths(out_dir, args.name)
    env = results.environment(device, settings, results.python_argv())
    print(f"{len(cases)} cases on {device.name}: {len({c.impl.name for c in cases})} implementations, "
          f"{len({json.dumps(c.shape) for c in cases})} shapes, autotune {args.autotune}; "
          f"results to {json_path}", file=sys.stderr, flush=True)
    session = Session(settings, device, seed=args.seed)
    done: list[dict] = []

    def save(record):
        done.append(record)
        results.write(json_path, results.document(env, done))

    run(cases, session, progress=_progress, on_result=save)
    doc = results.document(env, done)
    results.write(json_path, doc)
    report.write_report(doc, md_path)
    print_summary(doc)
    print(f"\nwrote {json_path} and {md_path}", file=sys.stderr)
    return 1 if any(m["status"] in ("wrong", "crashed") for m in doc["measurements"]) else 0


def print_summary(doc: dict) -> None:
    from tabulate import tabulate

    rows = [[m["implementation"], "×".join(str(v) for v in m["shape"].values()), m["autotune"], m["status"],
             "" if m["gflops"] is None else f"{m['gflops']:,.0f}",
             "" if m["pct_peak"] is None else f"{m['pct_peak']:.1f}",
             "" if m["vs_cublas"] is None else f"{m['vs_cublas']:.2f}"] for m in doc["measurements"]]
    print(tabulate(rows, ["implementation", "shape", "autotune", "status", "GFLOPS", "% peak", "× cuBLAS"],
                   tablefmt="simple"))


def cmd_report(args) -> int:
    from study import report, results

    try:
        doc = results.load(args.results)
    except (OSError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    md = args.md or args.results.with_suffix(".md")
    report.write_report(doc, md)
    print(f"wrote {md}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return {"list": cmd_list, "compare": cmd_compare, "report": cmd_report}[args.command](args)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
