"""study: handwritten CUDA, Triton and cuBLAS, rung by rung, measured the same way."""

__version__ = "0.1.0"
