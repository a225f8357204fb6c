"""Sparse tensors: COO, CSR/CSC matrices and compressed sparse fibres (CSF).

:class:`SparseCOO` stores coordinate lists of any number of dimensions,
:class:`SparseCSR` and :class:`SparseCSC` compress the rows or columns of a matrix,
and :class:`SparseCSF` compresses every level of an N-d tensor in any axis order
(the Compressed Sparse Fibers layout Arrow uses). Each converts to every other, to
and from dense numpy arrays, pyarrow's sparse tensors, scipy.sparse, pydata
``sparse`` and torch, and to :class:`~arrow_sparse.Jagged` (CSR rows, CSF levels).
"""

from __future__ import annotations

from ._base import SparseTensor
from .coo import SparseCOO
from .csc import SparseCSC
from .csf import SparseCSF
from .csr import SparseCSR
from .extension import (
    SparseCOOType,
    SparseCSCType,
    SparseCSFType,
    SparseCSRType,
    SparseTensorArray,
    SparseTensorType,
    register_extension_types,
    sparse_tensor_array,
    sparse_tensor_type,
    unregister_extension_types,
)

__all__ = [
    "SparseCOO",
    "SparseCOOType",
    "SparseCSC",
    "SparseCSCType",
    "SparseCSF",
    "SparseCSFType",
    "SparseCSR",
    "SparseCSRType",
    "SparseTensor",
    "SparseTensorArray",
    "SparseTensorType",
    "register_extension_types",
    "sparse_tensor_array",
    "sparse_tensor_type",
    "unregister_extension_types",
]
