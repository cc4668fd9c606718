"""kgen: a generative CUDA C++ kernel writer with a compile-feedback loop."""

__version__ = "0.1.0"
