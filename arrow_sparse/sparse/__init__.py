"""Sparse tensors: compressed sparse row (CSR) matrices.

Only :class:`SparseCSR` exists so far; COO, CSC and CSF tensors follow.
"""

from __future__ import annotations

from .csr import SparseCSR

__all__ = ["SparseCSR"]
