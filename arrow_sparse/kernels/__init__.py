"""Compiled kernels: ``cpu/`` (Numba) and ``cuda/`` (CUDA C++ for CuPy). Private.

Nothing here imports from the rest of the package but :mod:`arrow_sparse.errors`; the
registry that hands kernels out (:func:`arrow_sparse._backend.get_kernel`) sits above.
"""

__all__ = ["KERNEL_FAMILIES"]

#: Every kernel family; each has a module in ``kernels/cpu``. A family's index here is
#: the family number in the device error word (``ASP_FAMILY_ID``).
KERNEL_FAMILIES = ("convert", "sparse", "segment", "transforms", "elementwise", "embedding",
                   "masked", "sparse_unsorted")
