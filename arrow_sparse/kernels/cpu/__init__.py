"""Numba CPU kernels, one module per kernel family. Private: use the public functions."""
