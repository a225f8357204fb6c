"""Sparse tensors: COO, CSR/CSC matrices and compressed sparse fibres (CSF).

:class:`SparseCOO` stores coordinate lists of any number of dimensions,
:class:`SparseCSR` and :class:`SparseCSC` compress the rows or columns of a matrix,
and :class:`SparseCSF` compresses every level of an N-d tensor in any axis order
(the Compressed Sparse Fibers layout Arrow uses). Each converts to every other, to
and from dense numpy arrays, pyarrow's sparse tensors, scipy.sparse, pydata
``sparse`` and torch, and to :class:`~arrow_sparse.Jagged` (CSR rows, CSF levels).

How the modules reach each other (imports only run down this list)::

    tensor      SparseTensor, the base class, and the registry of formats by name
    _common     array helpers: sorting, run sums, nonzero, ravelling, pointers
    _interop    pyarrow / scipy / pydata sparse / torch readers and writers
    _levels     CSF levels from sorted coordinates or nested offsets; their checks
    coo         SparseCOO                 (coordinates: every format converts through them)
    csr         SparseCSR, and _Compressed, the implementation CSR and CSC share
    csc         SparseCSC
    csf         SparseCSF
    extension   the Arrow extension types (one tensor per row)
    _ufunc      numpy's ufunc protocol (``np.sin(x)``, ``a + b``), registered in tensor
    _masked     sparse and jagged inputs as entries, for arrow_sparse.masked

Every format converts to every other, so half the conversions point up this list
(``coo.to_csr``, ``csr.to_csf``, the readers of ``_interop``). A class defined with
``format = "csr"`` joins the registry in :mod:`~arrow_sparse.sparse.tensor` as it is
created (``SparseTensor.__init_subclass__``), and such a conversion finds its target
there, ``self._format("csr")``, instead of importing it: the four formats are all
defined once this package is imported, which importing any of its modules does
first. A conversion down the list imports its class (``csf.to_coo`` builds a
:class:`SparseCOO`). Methods whose result's class sits higher up are annotated with
the base class, :class:`SparseTensor`; their docstrings name the format returned.
"""

from . import _ufunc  # noqa: F401 - registers numpy's ufunc protocol of SparseTensor
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
from .tensor import SparseTensor

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
