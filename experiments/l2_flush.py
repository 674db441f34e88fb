"""Does the way cold mode flushes L2 change what a memory-bound kernel is timed at? (H200: yes.)

Times each kernel below after four kinds of flush — a write of 2 × L2 (a memset, what
triton.testing.do_bench and nvbench do), a read of 2 × L2 (what `study`'s cold mode does since
commit 2bc43cb), a write then a read of another buffer, and none (hot) — median of 300 samples
between CUDA events. A write leaves L2 full of dirty lines that the timed kernel must write back
as it evicts them; a read leaves clean lines. docs/method.md §3 quotes one run of this measurement.

    python experiments/l2_flush.py        (from the repository root, on a GPU)
"""

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from study.backends import backend  # noqa: E402
from study.catalog import implementation, ladder  # noqa: E402

CASES = [("sgemv/v2_vector_loads/cuda", "16384x16384", "fp16", {"THREADS": 256, "WARP_ROWS": 1, "LANES": 32}),
         ("sgemv/torch_mv/cublas", "16384x16384", "fp16", None),
         ("sgemv/v2_vector_loads/cuda", "16384x16384", "fp32", None),
         ("sgemv/torch_mv/cublas", "16384x16384", "fp32", None),
         ("sgemv/v2_vector_loads/cuda", "4096x4096", "fp32", None),
         ("sgemm/torch_matmul/cublas", "4096x4096x4096", "fp32", None)]
SAMPLES = 300


def prepare(name, shape_text, precision_name, config):
    impl = implementation(name)
    problem = ladder(impl.op).problem
    precision, shape = problem.precision(precision_name), problem.parse_shape(shape_text)
    tensors = problem.make_inputs(shape, precision, 0, "cuda")
    return backend(impl.backend).prepare(impl, problem, tensors, shape, precision, config=config), \
        problem.work(shape, precision)["bytes"]


def main() -> None:
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    buf = torch.zeros(2 * l2, dtype=torch.uint8, device="cuda")
    other = torch.zeros(2 * l2, dtype=torch.uint8, device="cuda")
    flushes = {"write 2xL2": lambda: buf.zero_(),
               "read 2xL2": lambda: buf.sum(dtype=torch.int64),
               "write, read other": lambda: (buf.zero_(), other.sum(dtype=torch.int64)),
               "none (hot)": lambda: None}
    for name, shape, precision, config in CASES:
        launch, nbytes = prepare(name, shape, precision, config)
        with launch.context():
            for label, flush in flushes.items():
                for _ in range(5):
                    flush()
                    launch.fn()
                starts = [torch.cuda.Event(enable_timing=True) for _ in range(SAMPLES)]
                ends = [torch.cuda.Event(enable_timing=True) for _ in range(SAMPLES)]
                for start, end in zip(starts, ends):
                    flush()
                    start.record()
                    launch.fn()
                    end.record()
                torch.cuda.synchronize()
                ms = statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))
                print(f"{name:28s} {shape:15s} {precision} {label:18s} {ms * 1e3:9.2f} us "
                      f"{nbytes / ms / 1e6:8,.0f} GB/s", flush=True)


if __name__ == "__main__":
    main()
