"""Interop of the sparse formats with pyarrow, scipy.sparse, pydata ``sparse`` and torch.

Each ``from_*`` reads a foreign object into the arrow_sparse format closest to it
(zero-copy where the layouts agree) and the class methods convert from there; the
formats sit above this module, so it finds their classes by name
(:meth:`SparseTensor._format <arrow_sparse.sparse.SparseTensor._format>`). The
exporters to pyarrow take the buffers, the others a tensor. scipy,
pydata ``sparse`` and torch are imported lazily: a foreign object is recognised by
its module name first, so a wrong argument raises ``TypeError`` without importing
anything, and a missing library raises ``ModuleNotFoundError`` with a pip hint
(:func:`arrow_sparse._optional.import_optional`).
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from .. import _validate as v
from .._optional import import_optional
from ..errors import ArrowSparseError, ArrowSparseTypeError, ArrowSparseValueError
from .tensor import SparseTensor

__all__ = [
    "FROM_PYDATA",
    "FROM_SCIPY",
    "FROM_TORCH",
    "TO_ARROW",
    "TO_PYDATA",
    "TO_SCIPY",
    "TO_TORCH",
    "coo_to_arrow",
    "compressed_to_arrow",
    "csf_to_arrow",
    "from_arrow",
    "from_pydata",
    "from_scipy",
    "from_torch",
    "to_pydata",
    "to_scipy",
    "to_torch",
]


# The docstrings of the readers and writers of every format, after each one's own summary
# line, filled from that format's fields (``_COO_DOC`` in coo.py, and its twins in csr.py,
# csc.py and csf.py): ``name`` is the class, ``build`` makes an example tensor, ``dense``
# is its dense form as a list, the other fields say what is shared and what is read.
FROM_SCIPY = """
    Parameters
    ----------
    matrix
        {scipy_accepts}{more_params}

    Returns
    -------
    {returns_type}
        {scipy_shares}

    Raises
    ------
    TypeError
        Not a scipy sparse object.

    See Also
    --------
    {name}.to_scipy : The other way.

    Examples
    --------
    >>> import scipy.sparse
    >>> asp.{name}.from_scipy({scipy_input}).to_dense().tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
FROM_PYDATA = """
    Parameters
    ----------
    array
        {pydata_accepts}{more_params}

    Returns
    -------
    {returns_type}
        {pydata_shares}

    Raises
    ------
    TypeError
        Not a pydata sparse array.
    ValueError
        A fill value other than zero.

    See Also
    --------
    {name}.to_pydata_sparse : The other way.

    Examples
    --------
    >>> import sparse
    >>> asp.{name}.from_pydata_sparse({pydata_input}).to_dense().tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
FROM_TORCH = """
    Parameters
    ----------
    tensor
        {torch_accepts}{more_params}

    Returns
    -------
    {returns_type}
        {torch_shares}

    Raises
    ------
    TypeError
        Not a CPU torch tensor, or a dtype numpy cannot hold (bfloat16).
    ValueError
        Hybrid or batched sparse tensors.

    See Also
    --------
    {name}.to_torch : The other way.

    Examples
    --------
    >>> import torch
    >>> asp.{name}.from_torch({torch_input}).to_dense().tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
TO_ARROW = """
    Returns
    -------
    pyarrow.{arrow}
        {arrow_shares}
    {arrow_raises}
    Examples
    --------
    >>> m = {build}
    >>> m.to_arrow().to_tensor().to_numpy().tolist()
    {dense}
    """
TO_SCIPY = """
    Parameters
    ----------
    matrix
        Return a ``{kind}_matrix``{matrix_2d} instead of a ``{kind}_array``.

    Returns
    -------
    scipy.sparse.{kind}_array or scipy.sparse.{kind}_matrix
        {scipy_out}

    Raises
    ------
    {scipy_raises}ModuleNotFoundError
        scipy is not installed.

    Examples
    --------
    >>> m = {build}
    >>> m.to_scipy().toarray().tolist()
    {dense}
    """
TO_PYDATA = """
    Returns
    -------
    sparse.{pydata}
        {pydata_out}

    Raises
    ------
    ModuleNotFoundError
        pydata sparse is not installed.

    Examples
    --------
    >>> import sparse
    >>> m = {build}
    >>> s = m.to_pydata_sparse()
    >>> isinstance(s, sparse.{pydata})
    True
    >>> s.todense().tolist()
    {dense}
    """
TO_TORCH = """
    Returns
    -------
    torch.Tensor
        {torch_out}

    Raises
    ------
    ModuleNotFoundError
        torch is not installed.

    Examples
    --------
    >>> import torch
    >>> m = {build}
    >>> t = m.to_torch()
    >>> t.layout == torch.sparse_{layout}
    True
    >>> t.to_dense().tolist()
    {dense}
    """

def _top_module(x: Any) -> str:
    return type(x).__module__.split(".")[0]


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(int(s) for s in x.shape)


def _make(fmt: str, *args: Any, dense: bool = False) -> SparseTensor:
    """Construct format ``fmt`` from ``args`` (``dense``: its ``from_dense(*args)``)."""
    cls = SparseTensor._format(fmt)
    made: SparseTensor = cls.from_dense(*args) if dense else cls(*args)
    return made


# ------------------------------------------------------------------------ pyarrow
def from_arrow(func: str, tensor: Any, axis_order: Sequence[int] | None = None) -> SparseTensor:
    """Read any pyarrow sparse tensor (or dense ``pa.Tensor``) into its own format."""
    if isinstance(tensor, pa.SparseCOOTensor):
        data, coords = tensor.to_numpy()
        return _make("coo", coords.T, data.reshape(-1), _shape(tensor))
    if isinstance(tensor, pa.SparseCSRMatrix):
        data, indptr, indices = tensor.to_numpy()
        return _make("csr", indptr, indices, data.reshape(-1), _shape(tensor))
    if isinstance(tensor, pa.SparseCSCMatrix):
        data, indptr, indices = tensor.to_numpy()
        return _make("csc", indptr, indices, data.reshape(-1), _shape(tensor))
    if isinstance(tensor, pa.SparseCSFTensor):
        shape = _shape(tensor)
        data, indptr, indices = tensor.to_numpy()
        if axis_order is None:
            axis_order = _csf_axis_order(func, tensor, list(indptr), list(indices),
                                         data.reshape(-1), shape)
        return _make("csf", list(indptr), list(indices), data.reshape(-1), shape, axis_order)
    if isinstance(tensor, pa.Tensor):
        return _make("coo", tensor.to_numpy(), dense=True)
    msg = (f"{func}: expected a pyarrow SparseCOOTensor, SparseCSRMatrix, SparseCSCMatrix, "
           f"SparseCSFTensor or Tensor, got {type(tensor).__name__}")
    raise ArrowSparseTypeError(msg)


#: Dense size up to which a ``SparseCSFTensor`` of ambiguous axis order is settled by
#: comparing with pyarrow's own decoding (``to_tensor``, which knows the order).
CSF_SETTLE_LIMIT = 1 << 22


def _csf_axis_order(func: str, tensor: Any, indptr: list[np.ndarray], indices: list[np.ndarray],
                    data: np.ndarray, shape: tuple[int, ...]) -> list[int]:
    """Find the axis order a pyarrow ``SparseCSFTensor`` was built with (pyarrow hides it).

    The orders whose dimension sizes hold every level's stored indices are the
    candidates. One candidate is the answer; several are settled, for a tensor of at most
    :data:`CSF_SETTLE_LIMIT` dense elements, by decoding each and comparing with
    pyarrow's dense decoding (candidates that decode alike are equivalent, and pyarrow's
    default, sizes sorted stably, is preferred among them); otherwise the caller must
    name the order.
    """
    ndim = len(shape)
    need = [int(level.max()) + 1 if len(level) else 0 for level in indices]
    candidates = [list(order) for order in itertools.permutations(range(ndim))
                  if all(shape[axis] >= n for axis, n in zip(order, need, strict=True))]
    default = [int(a) for a in np.argsort(shape, kind="stable")]
    if default in candidates:  # try pyarrow's default first
        candidates.remove(default)
        candidates.insert(0, default)
    if not candidates:
        msg = (f"{func}: no axis order of shape {shape} holds the tensor's stored indices "
               f"(each level needs a dimension of at least {need}); the tensor is malformed")
        raise ArrowSparseValueError(msg)
    if len(candidates) == 1:
        return candidates[0]
    size = math.prod(shape)
    if size > CSF_SETTLE_LIMIT:
        orders = ", ".join(str(tuple(c)) for c in candidates[:6])
        more = ", ..." if len(candidates) > 6 else ""
        msg = (f"{func}: pyarrow does not expose the axis order of a SparseCSFTensor, and "
               f"{len(candidates)} orders fit its indices ({orders}{more}); pass axis_order= "
               "(the order it was built with)")
        raise ArrowSparseValueError(msg)
    expected = tensor.to_tensor().to_numpy()
    for order in candidates:
        try:
            dense = _make("csf", indptr, indices, data, shape, order).to_dense()
        except ArrowSparseError:  # the indices break this order's structure
            continue
        if np.array_equal(dense, expected, equal_nan=data.dtype.kind == "f"):
            return order
    msg = f"{func}: no axis order decodes the tensor as pyarrow does; it is malformed"
    raise ArrowSparseValueError(msg)


def _arrow_values(values: np.ndarray) -> np.ndarray:
    values = np.ascontiguousarray(values)
    return values.view(np.uint8) if values.dtype.kind == "b" else values


def _int64(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.int64)


def coo_to_arrow(indices: np.ndarray, values: np.ndarray, shape: tuple[int, ...]
                 ) -> pa.SparseCOOTensor:
    """``pa.SparseCOOTensor``: values shared; coordinates shared when int64 ``[nnz, ndim]``."""
    coords = _int64(indices.T)
    if coords.size == 0:
        # pyarrow rejects an empty [0, ndim] array unless its strides are (8, 8).
        coords = np.lib.stride_tricks.as_strided(np.zeros(1, dtype=np.int64),
                                                 shape=(0, len(shape)), strides=(8, 8))
    return pa.SparseCOOTensor.from_numpy(_arrow_values(values), coords, shape)


def compressed_to_arrow(fmt: str, indptr: np.ndarray, indices: np.ndarray, values: np.ndarray,
                        shape: tuple[int, ...]) -> Any:
    """``pa.SparseCSRMatrix`` / ``SparseCSCMatrix`` (``fmt``) of pointers starting at zero."""
    cls = pa.SparseCSRMatrix if fmt == "csr" else pa.SparseCSCMatrix
    return cls.from_numpy(_arrow_values(values), _int64(indptr), _int64(indices), shape)


def csf_to_arrow(indptr: Sequence[np.ndarray], indices: Sequence[np.ndarray], values: np.ndarray,
                 shape: tuple[int, ...], axis_order: tuple[int, ...]) -> pa.SparseCSFTensor:
    """``pa.SparseCSFTensor`` of the levels of a compact CSF, with its axis order."""
    if len(shape) < 2:
        msg = ("SparseCSF.to_arrow: pyarrow's SparseCSFTensor needs at least 2 dimensions; "
               "use to_coo().to_arrow() for a 1-d tensor")
        raise ArrowSparseValueError(msg)
    return pa.SparseCSFTensor.from_numpy(
        _arrow_values(values), [_int64(p) for p in indptr],
        [_int64(i) for i in indices], shape, axis_order=list(axis_order))


# -------------------------------------------------------------------------- scipy
def from_scipy(func: str, matrix: Any) -> SparseTensor:
    """Read a scipy sparse array or matrix as COO/CSR/CSC (other scipy formats via ``tocsr``)."""
    if _top_module(matrix) != "scipy":
        msg = f"{func}: expected a scipy.sparse array or matrix, got {type(matrix).__name__}"
        raise ArrowSparseTypeError(msg)
    sp = import_optional("scipy.sparse", None, func=func)
    if not sp.issparse(matrix):
        msg = f"{func}: expected a scipy.sparse array or matrix, got {type(matrix).__name__}"
        raise ArrowSparseTypeError(msg)
    fmt = matrix.format
    if fmt == "coo":
        coords = getattr(matrix, "coords", None) or (matrix.row, matrix.col)
        return _make("coo", np.stack(coords), matrix.data, _shape(matrix))
    if fmt not in ("csr", "csc"):
        matrix, fmt = matrix.tocsr(), "csr"
    return _make(fmt, matrix.indptr, matrix.indices, matrix.data, _shape(matrix))


def to_scipy(x: SparseTensor, matrix: bool) -> Any:
    """Scipy ``coo``/``csr``/``csc`` array (or matrix) over the same buffers where possible."""
    func = f"{type(x).__name__}.to_scipy"
    matrix = v.check_bool(func, "matrix", matrix)
    sp = import_optional("scipy.sparse", None, func=func)
    if matrix and x.ndim != 2:
        msg = f"{func}: matrix=True needs a 2-d tensor, got shape {x.shape}"
        raise ArrowSparseValueError(msg)
    if x.format == "coo":
        cls = sp.coo_matrix if matrix else sp.coo_array
        coo: Any = x
        out = cls((coo.values, tuple(coo.indices)), shape=x.shape)
        if coo._canonical:
            out.has_canonical_format = True
        return out
    comp: Any = x
    indptr, indices, values = comp._compact()
    if x.format == "csr":
        cls = sp.csr_matrix if matrix else sp.csr_array
    else:
        cls = sp.csc_matrix if matrix else sp.csc_array
    return cls((values, indices, indptr), shape=x.shape)


# ------------------------------------------------------------------ pydata sparse
def from_pydata(func: str, array: Any) -> SparseTensor:
    """Pydata ``sparse.COO`` -> COO (views); 2-d ``GCXS`` -> CSR/CSC (views); else converted."""
    if _top_module(array) != "sparse":
        msg = f"{func}: expected a pydata sparse array, got {type(array).__name__}"
        raise ArrowSparseTypeError(msg)
    sparse = import_optional("sparse", None, func=func)
    if not isinstance(array, sparse.SparseArray):
        msg = f"{func}: expected a pydata sparse array, got {type(array).__name__}"
        raise ArrowSparseTypeError(msg)
    if array.fill_value != 0:
        msg = f"{func}: the fill value must be 0, got {array.fill_value!r}"
        raise ArrowSparseValueError(msg)
    shape = _shape(array)
    if isinstance(array, sparse.GCXS) and array.ndim == 2:
        fmt = "csr" if tuple(array.compressed_axes) == (0,) else "csc"
        return _make(fmt, array.indptr, array.indices, array.data, shape)
    if not isinstance(array, sparse.COO):
        array = array.asformat("coo")
    return _make("coo", array.coords, array.data, shape)


def to_pydata(x: SparseTensor) -> Any:
    """Pydata ``sparse.COO`` (COO) or ``sparse.GCXS`` (CSR/CSC)."""
    func = f"{type(x).__name__}.to_pydata_sparse"
    sparse = import_optional("sparse", None, func=func)
    if x.format == "coo":
        coo: Any = x
        canonical = coo.is_canonical
        return sparse.COO(coo.indices, coo.values, shape=x.shape,
                          has_duplicates=not canonical, sorted=canonical)
    comp: Any = x
    indptr, indices, values = comp._compact()
    axis = (0,) if x.format == "csr" else (1,)
    return sparse.GCXS((values, indices, indptr), shape=x.shape, compressed_axes=axis)


# -------------------------------------------------------------------------- torch
def _torch_numpy(func: str, t: Any) -> np.ndarray:
    try:
        return t.detach().numpy()  # type: ignore[no-any-return]
    except TypeError as exc:
        msg = f"{func}: torch tensor of dtype {t.dtype} has no numpy equivalent ({exc})"
        raise ArrowSparseTypeError(msg) from None


def from_torch(func: str, tensor: Any) -> SparseTensor:
    """Read a CPU torch tensor: sparse COO/CSR/CSC layouts as views; strided densified."""
    if _top_module(tensor) != "torch":
        msg = f"{func}: expected a torch.Tensor, got {type(tensor).__name__}"
        raise ArrowSparseTypeError(msg)
    torch = import_optional("torch", "torch", func=func)
    if not isinstance(tensor, torch.Tensor):
        msg = f"{func}: expected a torch.Tensor, got {type(tensor).__name__}"
        raise ArrowSparseTypeError(msg)
    if tensor.device.type != "cpu":
        msg = f"{func}: the tensor is on {tensor.device}; move it to the CPU first (t.cpu())"
        raise ArrowSparseTypeError(msg)
    shape = _shape(tensor)
    layout = tensor.layout
    if layout == torch.strided:
        return _make("coo", _torch_numpy(func, tensor), dense=True)
    if tensor.dense_dim() != 0 or (layout != torch.sparse_coo and tensor.ndim != 2):
        msg = (f"{func}: hybrid (dense value dimensions) and batched sparse tensors are not "
               f"supported, got {tensor.sparse_dim()} sparse + {tensor.dense_dim()} dense dims")
        raise ArrowSparseValueError(msg)
    if layout == torch.sparse_coo:
        return _make("coo", _torch_numpy(func, tensor._indices()),
                     _torch_numpy(func, tensor._values()), shape)
    if layout == torch.sparse_csr:
        return _make("csr", _torch_numpy(func, tensor.crow_indices()),
                     _torch_numpy(func, tensor.col_indices()),
                     _torch_numpy(func, tensor.values()), shape)
    if layout == torch.sparse_csc:
        return _make("csc", _torch_numpy(func, tensor.ccol_indices()),
                     _torch_numpy(func, tensor.row_indices()),
                     _torch_numpy(func, tensor.values()), shape)
    msg = f"{func}: torch layout {layout} is not supported; convert it with to_sparse_csr()"
    raise ArrowSparseValueError(msg)


def _writable(x: np.ndarray, dtype: Any = None) -> np.ndarray:
    """C-contiguous and writable (torch.from_numpy warns on read-only arrays): copy if not."""
    out = np.ascontiguousarray(x, dtype=dtype)
    return out if out.flags.writeable else out.copy()


def to_torch(x: SparseTensor) -> Any:
    """Torch sparse COO/CSR/CSC tensor over the same buffers where possible."""
    func = f"{type(x).__name__}.to_torch"
    torch = import_optional("torch", "torch", func=func)
    size = x.shape
    # The arrays were checked on construction: torch's own invariant checks are skipped.
    if x.format == "coo":
        coo: Any = x
        return torch.sparse_coo_tensor(
            torch.from_numpy(_writable(coo.indices, np.int64)),
            torch.from_numpy(_writable(coo.values)), size,
            is_coalesced=bool(coo._canonical), check_invariants=False)
    comp: Any = x
    indptr, indices, values = comp._compact()
    if indptr.dtype != indices.dtype:
        indptr, indices = indptr.astype(np.int64), indices.astype(np.int64)
    ptr_t = torch.from_numpy(_writable(indptr))
    idx_t = torch.from_numpy(_writable(indices))
    val_t = torch.from_numpy(_writable(values))
    make = torch.sparse_csr_tensor if x.format == "csr" else torch.sparse_csc_tensor
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CS[RC] tensor support is in beta",
                                category=UserWarning)
        return make(ptr_t, idx_t, val_t, size, check_invariants=False)

