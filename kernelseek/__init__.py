"""KernelSeek: make an existing CUDA kernel faster with a coding agent that is asked the right questions."""

__version__ = "0.1.0"
