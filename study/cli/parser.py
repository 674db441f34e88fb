"""The command line's parser: every subcommand, its options and its examples. Parsing only: what
a subcommand does is study/cli/commands.py's."""

from __future__ import annotations

import argparse
from pathlib import Path

from study.diff import DEFAULT_THRESHOLD
from study.plan import AUTOTUNE_MODES
from study.registry import BACKENDS
from study.sanitize import TOOLS
from study.suites import SUITES
from study.timing import MODES

EXIT_CODES = """exit codes:
  0    success
  1    a measurement was wrong, crashed or impossible; a diff found a regression; a sanitizer run was not clean
  2    bad usage, a file that cannot be read, no GPU or a missing tool (one line on stderr says which)
  130  interrupted (Ctrl-C): what was measured is kept, and the same command resumes
"""
EXAMPLES_INDEX = """examples:
  python -m study index                        reports/<gpu>/README.md for every reports folder
  python -m study index reports/h200
  python -m study index reports/h200 --commands > regenerate.sh   every report measured again in place
"""
EXAMPLES_REPEATS = """examples:
  python -m study repeats reports/h200/paired/repeats     every paired record under it, by pair
  python -m study repeats reports/h200/paired/repeats --md reports/h200/paired/repeats/README.md
"""
EXAMPLES_COMPARE = """examples:
  python -m study compare                                   the headline: each op's best rungs at its defining shapes
  python -m study compare --all --autotune both             the whole study: every rung, shape, precision and mode
  python -m study compare --op sgemm --rung v3 --rung v4 --backend cuda
  python -m study compare --op sgemm --shape 4096x4096x4096 --shape 1000x1500x1700 --autotune both
  python -m study compare --op sgemv --dtype fp16 --shape 16384x16384 --mode cold --mode hot
  python -m study compare --shape sgemm:2048x2048x2048 --shape sgemv:8192x1024
  python -m study compare --op hgemm --suite llama2-7b --suite odd --autotune on
  python -m study compare --out /tmp/reports --name trial
  python -m study compare --mode graph --op sgemm --shape 256x256x256 --noise 1
  python -m study compare --reps 50 --fresh
"""
EXAMPLES_SWEEP = """examples:
  python -m study sweep --op sgemm --m 256:8192:x2 --n 256:8192:x2 --k 4096 --backend cuda --rung v4
  python -m study sweep --op sgemv --m 1024:16384:x2 --n 1024,4096,65536 --dtype fp16 --mode cold
  python -m study sweep --op sgemm --m 64 --n 64 --k 4096:65536:x2 --autotune on --yes
  python -m study sweep --op hgemm --suite llama2-7b --dtype fp16 --autotune on
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
  python -m study report reports/h200/sanitize.json      a sanitize run's page (also of a run that was stopped)
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
  python -m study validate --pair hgemm/v8_warp_specialized/cuda hgemm/torch_matmul/cublas 8192x8192x8192 bf16
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
  python -m study sanitize --jobs 12 --resume        the rows a stopped run at this commit left, only
"""
EXAMPLES_PROFILE = """examples:
  python -m study profile sgemm/v4_double_buffer/cuda 4096x4096x4096       ncu's raw CSV to reports/<gpu>/profiles/
  python -m study profile sgemm/v4_double_buffer/triton 4096x4096x4096 --launches 3
  python -m study profile hgemm/v6_mma_sync/cuda 4096x4096x4096 --precision fp16 --config HOIST=1
  python -m study profile sgemv/v2_vector_loads/cuda 16384x16384 --precision fp16 --out /tmp/profiles
  python -m study profile --table reports/h200/profiles --md /tmp/profiles.md   the Markdown table (no GPU)
  python -m study profile --source reports/h200/profiles/source-hgemm-v6_mma_sync-cuda-4096x4096x4096-fp16.csv.gz
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



def add_run_options(p: argparse.ArgumentParser, name: str) -> None:
    """What compare and sweep share: precisions, autotune, modes, the timer, where results go, GPUs."""
    p.add_argument("--dtype", action="append", metavar="{fp32,tf32,fp16,bf16}",
                   help="precision (repeatable; default: each op's own; an op lists those it accepts)")
    p.add_argument("--autotune", choices=AUTOTUNE_MODES, default="off",
                   help="off: declared configs; on: search each rung's space; both: measure each way")
    p.add_argument("--mode", action="append", choices=MODES,
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
    p.add_argument("--paired", nargs="?", const="all", default=None, choices=("all", "best", "off"),
                   help="time rungs in rounds alternating with the op's reference, both in the same power state, "
                        "× ref the median ratio of ABBA units (an A-first round with the B-first one after "
                        "it) with its 95 %% interval: all (--paired alone) "
                        "every rung; best (compare's default) the best rung of each series again, for the "
                        "report's best-rung table; off (sweep's and align's default) none")
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


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m study", description=description, epilog=EXIT_CODES,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    ls = sub.add_parser("list", help="print each ladder and where its kernels live", epilog=EXAMPLES_LIST,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    ls.add_argument("--json", action="store_true", help="one JSON object per implementation")
    ls.add_argument("--suites", action="store_true", help="the suites of shapes (compare --suite) instead")

    cmp = sub.add_parser("compare", help="measure CUDA, Triton and library baselines side by side (GPU)",
                         epilog=EXAMPLES_COMPARE, formatter_class=argparse.RawDescriptionHelpFormatter)
    cmp.add_argument("--op", action="append", help="op to run (repeatable; default: all)")
    cmp.add_argument("--backend", action="append", choices=BACKENDS,
                     help="backend to run (repeatable; the reference baseline always runs)")
    cmp.add_argument("--rung", action="append", help="rung key or vN (repeatable; default: all)")
    cmp.add_argument("--shape", action="append",
                     help="a shape in the op's form (MxNxK for sgemm, MxN for sgemv), or op:shape when several "
                          "ops run (repeatable; default: each op's shapes)")
    cmp.add_argument("--all", action="store_true",
                     help="the whole study: every rung of every op at each op's shapes, precisions and modes "
                          "(without it and without --op, --shape, --suite or --rung: the headline, each op's "
                          "headline rungs at its defining shapes)")
    cmp.add_argument("--suite", action="append", choices=tuple(SUITES),
                     help="the shapes of a suite for each op it covers (repeatable, with --shape too; "
                          "list --suites shows them; the report adds each op's verdict over the suite)")
    add_run_options(cmp, "compare")

    aln = sub.add_parser("align", help="one square GEMM with its rows padded by 0…15 elements: throughput over the "
                                       "leading dimension (GPU)", epilog=EXAMPLES_ALIGN,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    aln.add_argument("--op", default="sgemm", help="an op of axes M, N, K (default sgemm)")
    aln.add_argument("--base", type=int, default=4096, help="M = N = K = BASE; leading dimensions BASE … BASE+15")
    aln.add_argument("--rung", default=None, help="the CUDA rung and Triton twin to measure (default: the last rung)")
    aln.add_argument("--backend", action="append", choices=BACKENDS,
                     help="backends (repeatable; default all; the reference baseline always runs)")
    add_run_options(aln, "align-<op>-<base>")

    swp = sub.add_parser("sweep", help="one op over a grid of shapes: tidy CSV, heatmaps per backend (GPU)",
                         epilog=EXAMPLES_SWEEP, formatter_class=argparse.RawDescriptionHelpFormatter)
    swp.add_argument("--op", required=True, help="the op to sweep")
    for axis in ("m", "n", "k", "batch"):
        label = axis if axis == "batch" else axis.upper()
        swp.add_argument(f"--{axis}", default=None, metavar="SPEC",
                         help=f"values of axis {label}: e.g. 4096, 64,100,4096, 64:8192:x2 or 256:2048:256")
    swp.add_argument("--axis", action="append", metavar="NAME=SPEC", help="values of any other axis of the op")
    swp.add_argument("--suite", action="append", choices=tuple(SUITES),
                     help="the op's shapes in a suite (repeatable; with axes too: the grid's shapes and the "
                          "suite's); the page then gives the suite's verdict instead of heatmaps")
    swp.add_argument("--backend", action="append", choices=BACKENDS,
                     help="backend to run (repeatable; the reference baseline always runs)")
    swp.add_argument("--rung", action="append", help="rung key or vN (repeatable; default: all)")
    swp.add_argument("--yes", action="store_true", help="run even above the case limit")
    swp.add_argument("--limit", type=int, default=None,
                     help="refuse above this many cases without --yes (default 300)")
    add_run_options(swp, "sweep-<op>")

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
    val.add_argument("--pair", nargs=4, action="append", metavar=("IMPL", "REFERENCE", "SHAPE", "PRECISION"),
                     help="compare the study's paired ratio of IMPL to REFERENCE with do_bench's and ncu's "
                          "(repeatable) instead of the fixed pairs; with --kernel or --pair only those run")

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

    rep = sub.add_parser("repeats", help="one paired ratio over separate runs and GPUs: each run's ratio and interval, "
                                         "the spread, and whether they reproduce (no GPU)",
                         epilog=EXAMPLES_REPEATS, formatter_class=argparse.RawDescriptionHelpFormatter)
    rep.add_argument("targets", nargs="+", type=Path, metavar="FILE|FOLDER",
                     help="results files of `compare --paired`, or folders of them")
    rep.add_argument("--md", type=Path, default=None, help="write the Markdown here instead of printing it")

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
    san.add_argument("--tool", action="append", choices=TOOLS,
                     help="tool (repeatable; default: all four)")
    san.add_argument("--shape", action="append", help="shapes instead of each op's small awkward ones (op form or op:shape)")
    san.add_argument("--dtype", action="append", metavar="{fp32,tf32,fp16,bf16}",
                     help="precisions (repeatable; default: the first of its op's that each implementation implements)")
    san.add_argument("--backend", action="append", choices=("cuda", "triton"),
                     help="backends (default: cuda; triton adds the twins)")
    san.add_argument("--out", type=Path, default=None, help="folder of sanitize.{json,md} (default: reports/<gpu>/)")
    san.add_argument("--jobs", type=int, default=4,
                     help="sanitizer processes at once (default 4; each run checks correctness, times nothing)")
    san.add_argument("--resume", action="store_true",
                     help="keep the runs of the run that last wrote the folder's sanitize.json (one a time limit "
                          "stopped) where it shares this commit, a clean tree, GPU, driver, software and tool; run "
                          "only the others")

    idx = sub.add_parser("index", help="write a reports folder's README: every results file, its page, command, "
                                       "commit, date and headline (no GPU)",
                         epilog=EXAMPLES_INDEX, formatter_class=argparse.RawDescriptionHelpFormatter)
    idx.add_argument("folders", nargs="*", type=Path, help="reports folders (default: every reports/<gpu>/)")
    idx.add_argument("--commands", action="store_true",
                     help="print instead a shell script that measures every results file again where it lives "
                          "(each recorded command with --out and --name set to the file; GPU minutes, oldest first)")
    idx.add_argument("--minutes", type=float, default=None, metavar="N",
                     help="with --commands: only the oldest files whose GPU minutes add up to at most N (a session's "
                          "worth; measured again, they become the newest, and the next call names the next ones)")

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
                          "profile a point of the autotune space; where the declared config fits itself to "
                          "the shape (FIT=1, FIT_BN=1) the point runs unfitted unless FIT=1 is given too")
    prf.add_argument("--out", type=Path, default=None, help="folder of the CSV and its JSON (default: "
                                                            "reports/<gpu>/profiles/)")
    prf.add_argument("--table", action="store_true", help="render the Markdown table of saved profiles")
    prf.add_argument("--source", type=Path, default=None, metavar="CSV",
                     help="render stall samples by SASS opcode from a saved ncu source page (ncu --import R.ncu-rep "
                          "--page source --csv --print-source sass, or that CSV gzipped; no GPU)")
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
    cbs.add_argument("--page-only", action="store_true",
                     help="rewrite the page from the results in --out, which it needs (no GPU)")
    cbs.add_argument("--gpus", default=None, metavar="0,1,…|all", help="passed to every step")

    rep = sub.add_parser("report", help="regenerate Markdown and figures from a results file (no GPU)",
                         epilog=EXAMPLES_REPORT, formatter_class=argparse.RawDescriptionHelpFormatter)
    rep.add_argument("results", type=Path)
    rep.add_argument("--md", type=Path, default=None, help="Markdown path (default: beside the JSON)")
    return p
