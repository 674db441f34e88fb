"""Which cluster size balances softmax v8's rounds over a few dozen long rows? (docs/ladders/softmax.md, v8.)

A persistent grid of P clusters of c blocks walks M rows in ⌈M / P⌉ rounds; the last round runs M mod P
clusters while the others idle, so a few dozen rows spend a round partly empty (64 rows on 15 clusters of 8:
five rounds where 4.27 would do). P depends on c through the GPCs (the driver's count), not as 132 / c. For each
shape, precision and c from 1 to 8 whose share fits v8's ring, this prints P, the rounds, the balance M / (⌈M / P⌉
· P), and the kernel's cold time (median of SAMPLES launches by the study's own timer, study/timer.py, after its
warm-up, L2 flushed before each as its cold mode does) as GB/s, after the study's gate (check_output) has passed its
output.

    python experiments/softmax_v8_clusters.py [--impl softmax/v9_overlap_ring/cuda] [MxN ...]
                                                    (from the repository root, on a GPU; v8 by default)
"""

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from study.backends import backend  # noqa: E402
from study.backends.launch import Unsupported  # noqa: E402
from study.catalog import implementation, ladder  # noqa: E402
from study.hardware import current_device  # noqa: E402
from study.ops.softmax_rings import rounds_and_balance  # noqa: E402
from study.problem import check_output  # noqa: E402
from study.timer import for_gpu  # noqa: E402
from study.timing import TimerSettings  # noqa: E402

SHAPES = ("64x262144", "64x151936", "32x262144", "128x262144", "1024x262144", "300x50257", "8x131072", "1x32000")
SAMPLES = 100
IMPL = "softmax/v8_piece_ring/cuda"


def cases(problem, shapes):
    """(shape text, precision name, precision, shape, inputs, reference, its scale, bytes moved) of each shape
    in FP32 and BF16."""
    for shape_text in shapes:
        for precision_name in ("fp32", "bf16"):
            precision, shape = problem.precision(precision_name), problem.parse_shape(shape_text)
            tensors = problem.make_inputs(shape, precision, 0, "cuda")
            ref, scale = problem.reference(tensors, precision)
            yield shape_text, precision_name, precision, shape, tensors, ref, scale, problem.work(shape, precision)["bytes"]


def cold_timer():
    """The study's timer of this GPU in cold mode (an untimed read of 2 × L2 before each launch)."""
    return for_gpu(TimerSettings(), current_device())


def cold_median_ms(fn, timer, samples: int = SAMPLES) -> float:
    """The median of ``samples`` cold launches of ``fn`` (ms), each between CUDA events, after the study's warm-up
    (Timer.warm_up: launches back to back for its 25 ms, as the study's measurements begin). Without it the version
    timed second by softmax_v7_versions.py ran up to 7 % low in its first round at few rows, whichever version stood
    there (reports/h100-80gb-hbm3/experiments/softmax-v7-merge-e4b1860/); the warm-up's cure not yet measured."""
    timer.warm_up(fn, flush=True)
    return statistics.median(timer.samples(fn, samples, flush=True)[0])


def main(shapes, name: str = IMPL) -> None:
    impl = implementation(name)
    problem = ladder(impl.op).problem
    timer = cold_timer()
    print(f"{torch.cuda.get_device_name(0)}; {name}, THREADS=512 PIECE=1024 FIT=0, cold, median of {SAMPLES}")
    for shape_text, precision_name, precision, shape, tensors, ref, scale, nbytes in cases(problem, shapes):
        for cluster in range(1, 9):
            config = {**impl.params, "CLUSTER": cluster, "FIT": 0}
            try:
                launch = backend(impl.backend).prepare(impl, problem, tensors, shape, precision, config=config)
            except Unsupported as exc:
                print(f"{shape_text:>12s} {precision_name} c={cluster}: {str(exc)[:90]}")
                continue
            verdict = check_output(launch.fn, launch.out, problem, ref, scale, precision, launch.poison)
            if not verdict.ok:
                print(f"{shape_text:>12s} {precision_name} c={cluster}: wrong, not timed: {verdict.message}")
                continue
            c = launch.config
            rounds, balance = rounds_and_balance(shape["M"], c["clusters"])
            ms = cold_median_ms(launch.fn, timer)
            print(f"{shape_text:>12s} {precision_name} c={cluster}: P={c['clusters']:3d} ({c['clusters_from']}) "
                  f"rounds={rounds:3d} balance={balance:.3f} per_row={c['per_row']:2d}/{c['PIECES']} "
                  f"{'overlap=%d ' % c['overlap'] if 'overlap' in c else ''}"
                  f"err={verdict.err:.1e} {ms * 1e3:9.1f} us {nbytes / ms / 1e6:7,.0f} GB/s", flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    chosen = IMPL
    if args[:1] == ["--impl"]:
        chosen, args = args[1], args[2:]
    main(args or SHAPES, chosen)
