"""Without a GPU, Triton kernels run in its interpreter; the variable must be set before
``@triton.jit`` decorates them (docs/toolchain.md 4.3), i.e. before triton_kernels is imported."""

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU: torch.cuda.is_available() is False on this machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


class _Kernel:
    """A stand-in for a compiled CUDA kernel: records each launch."""

    def __init__(self, log, symbol):
        self.log, self.symbol = log, symbol

    def __call__(self, grid, block, args, shared_mem=0, stream=None):
        self.log.append((self.symbol, grid, block, args, shared_mem))


class _Launches(list):
    """The launches a faked CUDA path made, in order: (symbol, grid, block, args, shared memory)."""

    def run(self, impl, problem, shape, precision, **prepare):
        """Prepare ``impl`` on seed-0 CPU inputs of ``shape`` (``prepare``: e.g. a config) and run it once,
        this list holding that run's launches alone. Returns (tensors, launch)."""
        from study.backends import backend

        tensors = problem.make_inputs(shape, precision, 0, "cpu")
        launch = backend("cuda").prepare(impl, problem, tensors, shape, precision, **prepare)
        self.clear()
        launch.fn()
        return tensors, launch


@pytest.fixture
def fake_cuda(monkeypatch):
    """The CUDA launch path on the CPU: compilation, DLPack views, tensor maps and streams faked,
    everything an op and the backend decide left real. Yields the list of launches (:class:`_Launches`:
    its ``run`` prepares and runs an implementation)."""
    import study.backends.cuda as cuda
    import study.backends.cuda_launch as cuda_launch
    import study.backends.tma as tma

    log = _Launches()
    monkeypatch.setattr(cuda, "as_cupy", lambda t, padded_rows=False: t)
    monkeypatch.setattr(cuda_launch, "load_function", lambda path, symbol, defines, smem=0: _Kernel(log, symbol))

    def resident_blocks(path, symbol, defines, threads, smem):  # the driver's count, asked of the rung's own build
        # (softmax v8's blocks carry a loader warp besides their THREADS)
        assert path.is_file() and symbol in path.read_text() and threads in (defines["THREADS"], defines["THREADS"] + 32)
        assert smem > 0
        return 2

    monkeypatch.setattr(cuda, "resident_blocks", resident_blocks)
    monkeypatch.setattr(tma, "tensor_map", lambda name, tensor, cols, rows: ("map", name, tensor.data_ptr()))
    monkeypatch.setattr(tma, "encode", lambda name, dtype, address, sizes, strides, box, swizzle=True:
                        ("encode", address, tuple(sizes), tuple(strides), tuple(box), swizzle))
    monkeypatch.setattr(tma, "pack_residue_maps", lambda maps, offsets: ("residue maps", tuple(maps), tuple(offsets)))
    monkeypatch.setattr(cuda_launch.StreamCache, "current", lambda self: None)
    return log
