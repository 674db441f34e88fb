"""How large a slice, and how many warps, for the programs of softmax v6's Triton twin that exchange a row's
statistics through L2? (docs/ladders/softmax.md, v6's twin.)

A program holds its slice in registers from its read to its write and waits for the rest of its row between
the two; an SM that holds one program (32 warps, 16384 values) idles its loads while that program waits, one
that holds two or four overlaps a program's wait with another's loads. For each shape, precision and
(warps, slice values), this prints the slices a row, whether the twin exchanged, and the cold time (median of
SAMPLES launches by the study's own timer, L2 flushed before each) as GB/s, after the study's gate has passed.

    python experiments/softmax_twin_exchange.py [--points WARPSxVALUES,...] [--precision fp32|bf16] [MxN ...]
    (from the repository root, on a GPU)
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from softmax_v8_clusters import cases, cold_median_ms, cold_timer  # noqa: E402
from study.catalog import implementation, ladder  # noqa: E402
from study.ops.softmax_twins import split_rows_twin_launch  # noqa: E402
from study.problem import check_output  # noqa: E402

SHAPES = ("1024x50257", "1024x128256", "1024x262144", "64x262144", "64x151936", "8x128256", "1x128256")
# the plan's points (triton_kernels/softmax.py: EXCHANGE_POINTS, EXCHANGE_POINTS_16BIT) and their neighbours
POINTS = ((16, 16384), (8, 16384), (8, 8192), (4, 8192), (4, 4096), (4, 2048))


def main(shapes, points=POINTS, precisions=("fp32", "bf16")) -> None:
    impl = implementation("softmax/v6_cluster_rows/triton")
    problem = ladder("softmax").problem
    timer = cold_timer()
    print(f"{torch.cuda.get_device_name(0)}; {impl.name}, cold, median of launches")
    for shape_text, precision_name, precision, shape, tensors, ref, scale, nbytes in cases(problem, shapes):
        if precision_name not in precisions:
            continue
        for warps, values in points:
            config = dict(impl.params)
            out = problem.make_output(shape, precision, "cuda")
            fn = split_rows_twin_launch(impl.target.kernel, tensors, out, shape, config, precision,
                                        exchange_points=((values, warps),))
            label = f"{shape_text:>12s} {precision_name} warps={warps:2d} values={values:5d}"
            try:
                verdict = check_output(fn, out, problem, ref, scale, precision)
            except Exception as exc:  # a point that does not compile or launch: printed, not timed
                print(f"{label}: failed: {str(exc).splitlines()[0][:90]}", flush=True)
                continue
            if not verdict.ok:
                print(f"{label}: wrong, not timed: {verdict.message}", flush=True)
                continue
            ms = cold_median_ms(fn, timer)
            # no exchange (too many slices): the two launches, at the config's warps, not the point's
            print(f"{label}: slices={fn.facts['slices']:2d} exchange={fn.facts['exchange']} "
                  f"{ms * 1e3:9.1f} us {nbytes / ms / 1e6:7,.0f} GB/s", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shapes", nargs="*", default=SHAPES)
    parser.add_argument("--points", type=lambda text: tuple(tuple(int(v) for v in p.split("x"))
                                                            for p in text.split(",")),
                        default=POINTS, help="warps x slice values, comma-separated (default: %(default)s)")
    parser.add_argument("--precision", action="append", choices=("fp32", "bf16"), help="default: both")
    args = parser.parse_args()
    main(args.shapes, args.points, tuple(args.precision or ("fp32", "bf16")))
