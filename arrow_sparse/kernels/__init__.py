"""Compiled kernels: ``cpu/`` (Numba) and ``cuda/`` (CUDA C++ for CuPy). Private."""
