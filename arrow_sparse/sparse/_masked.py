"""Masked reductions brought to entries: the set-up shared by :mod:`arrow_sparse.masked`.

A sparse or jagged input becomes *entries* (its stored elements, each with the output
cell it reduces into and its position inside the reduced slice) reduced by the scatter
kernels of ``kernels/*/masked.py`` (:class:`Problem`); a dense array is reduced by the
array module's own reductions of ``where(mask, x, identity)`` (:class:`Strided`). Both
work on numpy or CuPy arrays: the array module of the input and the mask, which must
be on one device. Where a size depends on the data it is read back on the device
(the longest jagged row, the number of stored mask elements).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, cast

import numpy as np

from .. import _validate as v
from .._backend import (
    array_module,
    device_checks,
    fetch,
    get_kernel,
    host_arrays_on_device,
    module_of,
)
from ..errors import ArrowSparseIndexError, ArrowSparseTypeError, ArrowSparseValueError
from ..jagged import Jagged
from . import _common as cm
from .coo import SparseCOO
from .csc import SparseCSC
from .csf import SparseCSF
from .csr import SparseCSR
from .tensor import SparseTensor

__all__ = ["Problem", "Strided", "check_dims", "compressed_totals", "dense_view", "entries",
           "numeric", "prepare", "strided"]



def _ravel(coords: list[np.ndarray], shape: tuple[int, ...], n: int,
           xp: ModuleType) -> np.ndarray:
    if not shape or n == 0:
        return xp.zeros(n, dtype=np.int64)
    return cm.ravel_coords(coords, shape)


def _jagged_entries(func: str, arg: str, j: Jagged) -> tuple[tuple[int, ...], list[np.ndarray],
                                                              np.ndarray]:
    values = j.values
    if isinstance(values, Jagged):
        msg = (f"{func}: {arg} is a nested Jagged; masked reductions take one jagged level "
               "(reduce the inner level first, or use to_padded())")
        raise ArrowSparseTypeError(msg)
    xp = j.xp
    offsets = j.offsets.astype(np.int64, copy=False)
    rows = j.num_rows
    longest, start, stop = fetch(func, xp.diff(offsets).max() if rows else 0, offsets[0],
                                 offsets[-1])
    shape = (rows, longest, *values.shape[1:])
    row = cm.expand_lines(offsets, stop - start)
    idx = xp.arange(start, stop, dtype=np.int64)
    pos = idx - offsets[row]
    if j.validity is not None or j.values_validity is not None:  # null rows, null values
        keep = xp.ones(stop - start, dtype=bool)
        if j.validity is not None:
            keep &= j.validity[row]
        if j.values_validity is not None:
            keep &= j.values_validity[start:stop]
        kept = cm.flatnonzero(func, keep)
        row, pos, idx = row[kept], pos[kept], idx[kept]
    inner = values.shape[1:]
    k = math.prod(inner)
    if not inner:
        return shape, [row, pos], values[idx]
    entry = xp.arange(len(row) * k, dtype=np.int64)
    coords = [row[entry // k], pos[entry // k], *cm.unravel(entry % k, inner)] if k else \
        [entry] * (2 + len(inner))
    return shape, coords, values[idx].reshape(-1)


def entries(func: str, arg: str, x: Any) -> tuple[tuple[int, ...], list[np.ndarray], np.ndarray]:
    """``(shape, coords, values)`` of the specified elements of ``x``, without duplicates."""
    if isinstance(x, Jagged):
        return _jagged_entries(func, arg, x)
    if isinstance(x, (SparseCSR, SparseCSC)) and x.ndim == 2:  # an N-d CSR: through COO
        ptr, minor, vals = x.canonical()._compact()
        major = cm.expand_lines(ptr, len(minor))
        minor = minor.astype(np.int64, copy=False)
        coords = [major, minor] if isinstance(x, SparseCSR) else [minor, major]
        return tuple(x.shape), coords, vals
    if isinstance(x, SparseTensor):
        c = cast(SparseCOO, x.to_coo()).canonical()
        return tuple(c.shape), [c.indices[k].astype(np.int64, copy=False)
                                for k in range(c.ndim)], c.values
    arr = v.as_values_array(func, arg, x, min_ndim=1, device=True)
    xp = module_of(arr)
    flat = xp.arange(arr.size, dtype=np.int64)
    coords = cm.unravel(flat, arr.shape) if arr.size else [flat] * arr.ndim
    return arr.shape, coords, arr.reshape(-1)


def _mask_spec(func: str, mask: Any, shape: tuple[int, ...], xp: ModuleType) -> tuple[str, Any]:
    """``("none", None)``, ``("dense", bool array of shape)`` or ``("coords", coords)``."""
    if mask is None:
        return "none", None
    if isinstance(mask, (Jagged, SparseTensor)):
        mshape, coords, vals = entries(func, "mask", mask)
        if vals.dtype.kind not in "biuf":
            msg = f"{func}: mask must have bool values, got {vals.dtype}"
            raise ArrowSparseTypeError(msg)
        ok = (mshape == shape if not isinstance(mask, Jagged) else
              len(mshape) == len(shape) and mshape[0] == shape[0] and mshape[2:] == shape[2:]
              and mshape[1] <= shape[1])
        if not ok:
            msg = f"{func}: mask has dense shape {mshape} but the input has shape {shape}"
            raise ArrowSparseValueError(msg)
        true = cm.flatnonzero(func, vals.astype(bool))
        return "coords", [c[true] for c in coords]
    arr = v.as_values_array(func, "mask", mask, min_ndim=0, device=True).astype(bool, copy=False)
    if module_of(arr) is not xp:  # a scalar mask of a device input (arrays were refused)
        arr = xp.asarray(arr)
    try:
        full = np.broadcast_shapes(tuple(arr.shape), shape)
    except ValueError:
        full = None
    if full != shape:
        msg = f"{func}: mask of shape {arr.shape} does not broadcast to the input shape {shape}"
        raise ArrowSparseValueError(msg)
    return "dense", xp.broadcast_to(arr, shape)


def check_dims(func: str, dim: Any, ndim: int) -> tuple[int, ...]:
    """Return the reduced dimensions, sorted and non-negative (None and ``()``: all)."""
    if dim is None or (isinstance(dim, tuple) and len(dim) == 0):
        return tuple(range(ndim))
    items = dim if isinstance(dim, (tuple, list)) else (dim,)
    dims: list[int] = []
    for d in items:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            msg = f"{func}: dim must be None, an int or a tuple of ints, got {dim!r}"
            raise ArrowSparseTypeError(msg)
        if not -max(ndim, 1) <= d < max(ndim, 1):
            msg = f"{func}: dim {d} is out of range for {ndim} dimensions"
            raise ArrowSparseIndexError(msg)
        d = int(d) % max(ndim, 1)
        if d in dims:
            msg = f"{func}: dim {d} appears more than once"
            raise ArrowSparseValueError(msg)
        dims.append(d)
    return tuple(sorted(d for d in dims if d < ndim))


@dataclass
class Problem:
    """A masked reduction brought to entries: one output cell per kept-coordinate tuple."""

    func: str
    xp: ModuleType
    shape: tuple[int, ...]
    dims: tuple[int, ...]
    num_cells: int
    slice_size: int
    cell: np.ndarray
    pos: np.ndarray
    vals: np.ndarray
    inm: np.ndarray
    count_in: np.ndarray   # masked-in elements per cell, specified or not
    stored: np.ndarray     # specified elements per cell
    stored_in: np.ndarray  # specified masked-in elements per cell
    mask_kind: str
    mask_keys: Callable[[], np.ndarray] = field(repr=False)
    input: Any = field(default=None, repr=False)  # the sparse tensor or Jagged reduced

    @property
    def dtype(self) -> np.dtype:
        return self.vals.dtype

    @property
    def zeros_in(self) -> np.ndarray:
        """Unspecified masked-in elements (zeros) per cell."""
        return self.count_in - self.stored_in

    @property
    def out_in(self) -> np.ndarray:
        """Unspecified masked-out elements per cell."""
        return self.slice_size - self.stored - self.zeros_in

    def finish(self, flat: np.ndarray, keepdim: bool, *, dense: bool = True) -> Any:
        """Shape the result; on the device, end with the kernels' checks (deferred).

        ``flat`` holds one value per output cell. ``dense=False`` gives the input's
        layout (:meth:`_sparse_result`, :meth:`_jagged_result`) where it has one.
        """
        kept = [n if i not in self.dims else 1 for i, n in enumerate(self.shape)]
        if not keepdim:
            kept = [n for i, n in enumerate(self.shape) if i not in self.dims]
        device_checks(self.func, self.xp)
        out = flat.reshape(kept)
        if dense or out.ndim == 0:
            return out
        if isinstance(self.input, Jagged):
            return self._jagged_result(out) if self.dims[0] >= 2 else out
        return self._sparse_result(flat, keepdim)

    def _sparse_result(self, flat: np.ndarray, keepdim: bool) -> SparseTensor:
        """Return the result as a sparse tensor in the input's format (else COO).

        A cell is stored when a stored, masked-in element reduces into it, as in
        torch.masked, and also when only unspecified masked-in zeros do but its value
        is not zero (``logsumexp``, an unbiased ``var`` of one element), so the
        result's dense view equals the dense result wherever a cell has a masked-in
        element. Fully masked-out cells are unspecified.
        """
        xp = self.xp
        kept_dims = [i for i in range(len(self.shape)) if i not in self.dims]
        with np.errstate(invalid="ignore"):
            stored = (self.stored_in > 0) | ((self.count_in > 0) & (flat != 0))
        cells = cm.flatnonzero(self.func, stored)
        coords = cm.unravel(cells, [self.shape[i] for i in kept_dims])
        shape = tuple(self.shape[i] for i in kept_dims)
        if keepdim:
            zeros = xp.zeros(len(cells), dtype=np.int64)
            kept = dict(zip(kept_dims, coords, strict=True))
            coords = [kept.get(i, zeros) for i in range(len(self.shape))]
            shape = tuple(1 if i in self.dims else n for i, n in enumerate(self.shape))
        coo = SparseCOO._new(xp.stack(coords), flat[cells], shape, canonical=True)
        if isinstance(self.input, SparseCSF):
            return coo.to_csf()
        if isinstance(self.input, SparseCSR) and len(shape) >= 2:  # an N-d CSR stays one
            return coo.to_csr()
        if isinstance(self.input, SparseCSC) and len(shape) == 2:
            return coo.to_csc()
        return coo

    def _jagged_result(self, out: np.ndarray) -> Jagged:
        """Return a Jagged reduced over inner dimensions: the same rows, a value per element.

        ``out`` is the dense result ``[rows, longest, *kept inner]``; an element whose
        inner elements are all masked out holds the identity, as in the dense result.
        """
        j = cast(Jagged, self.input)
        xp = self.xp
        offsets = j.offsets.astype(np.int64, copy=False)
        start, stop = fetch(self.func, offsets[0], offsets[-1]) if len(offsets) > 1 else (0, 0)
        row = cm.expand_lines(offsets, stop - start)
        pos = xp.arange(start, stop, dtype=np.int64) - offsets[row]
        values_validity = None if j.values_validity is None else j.values_validity[start:stop]
        return Jagged._trusted(xp.ascontiguousarray(out[row, pos]),
                               (j.offsets - j.offsets[0]) if start else j.offsets,
                               j.validity, values_validity)

    def k(self, name: str) -> Callable[..., Any]:
        return get_kernel("masked", name, self.xp)


@dataclass
class Strided:
    """A masked reduction of a dense array: reductions of ``where(mask, x, fill)``.

    Results keep the reduced dimensions (size 1) until :meth:`finish`.
    """

    x: np.ndarray
    mask: np.ndarray | None  # bool, broadcastable to x.shape; None: everything masked in
    dims: tuple[int, ...]

    @property
    def xp(self) -> ModuleType:
        return module_of(self.x)

    @property
    def dtype(self) -> np.dtype:
        return self.x.dtype

    @property
    def slice_size(self) -> int:
        return math.prod(self.x.shape[d] for d in self.dims)

    @property
    def kept_shape(self) -> list[int]:
        return [1 if i in self.dims else n for i, n in enumerate(self.x.shape)]

    @property
    def count_in(self) -> np.ndarray:
        """Masked-in elements per slice (float64)."""
        if self.mask is None:
            return self.xp.full(self.kept_shape, float(self.slice_size))
        return self.reduce("sum", self.xp.broadcast_to(self.mask, self.x.shape),
                           dtype=np.float64)

    def fill(self, value: Any, x: np.ndarray | None = None) -> np.ndarray:
        """``x`` (default: the input) with its masked-out elements replaced by ``value``."""
        x = self.x if x is None else x
        return x if self.mask is None else self.xp.where(self.mask, x, value)

    def reduce(self, name: str, x: np.ndarray, **kw: Any) -> np.ndarray:
        """Apply the array method ``name`` (sum, prod) over the reduced dimensions, kept."""
        with np.errstate(all="ignore"):  # NaN from inf - inf is a result, not a warning
            return getattr(x, name)(axis=self.dims, keepdims=True, **kw)  # type: ignore[no-any-return]

    def extreme(self, op: str, x: np.ndarray, identity: Any) -> np.ndarray:
        """max/min over the reduced dimensions, ``identity`` for an empty slice."""
        if self.slice_size == 0:
            return self.xp.full(self.kept_shape, identity, dtype=x.dtype)
        return self.reduce(op, x)

    def finish(self, out: np.ndarray, keepdim: bool, *, dense: bool = True) -> np.ndarray:
        """Drop the reduced dimensions unless ``keepdim`` (a dense input's result is dense)."""
        return out if keepdim else out.reshape(
            [n for i, n in enumerate(self.x.shape) if i not in self.dims])


def numeric(func: str, vals: np.ndarray) -> np.ndarray:
    """Numeric values (bools as int64); other dtypes raise TypeError."""
    if vals.dtype.kind == "b":
        vals = vals.astype(np.int64)
    if vals.dtype.kind not in "iuf":
        msg = f"{func}: input must have a numeric dtype, got {vals.dtype}"
        raise ArrowSparseTypeError(msg)
    return vals


def _data(x: Any) -> Any:
    """Return what tells the device of an input or a mask (a sparse tensor: its values)."""
    if isinstance(x, SparseTensor):
        return x.values
    return None if np.isscalar(x) else x


def prepare(func: str, x: Any, dim: Any, mask: Any) -> Problem | Strided:
    """Sparse and jagged inputs become entries; arrays take the strided path.

    The input and the mask must be on one device (numpy, or CuPy on one device).
    """
    xp = array_module(func, input=_data(x), mask=_data(mask))
    if isinstance(x, (Jagged, SparseTensor)):
        return _problem(func, x, dim, mask, xp)
    arr = v.as_values_array(func, "input", x, min_ndim=1, device=True)
    return strided(func, arr, dim, mask, xp)


def dense_view(func: str, x: Any, dim: Any, mask: Any) -> Strided:
    """Return the strided problem of the dense view of ``x`` (sparse or jagged: densified)."""
    xp = array_module(func, input=_data(x), mask=_data(mask))
    if isinstance(x, (Jagged, SparseTensor)):
        shape, coords, vals = entries(func, "input", x)
        v.check_nbytes(func, f"the dense view of shape {shape}", shape,
                       numeric(func, vals).dtype.itemsize)
        arr = xp.zeros(shape, dtype=numeric(func, vals).dtype)
        arr[tuple(coords)] = vals
    else:
        arr = v.as_values_array(func, "input", x, min_ndim=1, device=True)
    return strided(func, arr, dim, mask, xp)


def strided(func: str, x: np.ndarray, dim: Any, mask: Any, xp: ModuleType) -> Strided:
    """Return the strided form of a dense array ``x``; a sparse or jagged mask is densified."""
    x = numeric(func, x)
    dims = check_dims(func, dim, x.ndim)
    kind, spec = _mask_spec(func, mask, x.shape, xp)
    if kind == "coords":
        spec_dense = xp.zeros(x.shape, dtype=bool)
        spec_dense[tuple(spec)] = True
        spec = spec_dense
    return Strided(x, None if kind == "none" else spec, dims)


def _problem(func: str, x: Any, dim: Any, mask: Any, xp: ModuleType) -> Problem:
    shape, coords, vals = entries(func, "input", x)
    vals = numeric(func, vals)
    if math.prod(shape) >= 1 << 62:
        msg = f"{func}: input shape {shape} has more than 2**62 elements"
        raise ArrowSparseValueError(msg)
    dims = check_dims(func, dim, len(shape))
    kept = [i for i in range(len(shape)) if i not in dims]
    kshape = tuple(shape[i] for i in kept)
    rshape = tuple(shape[i] for i in dims)
    num_cells, slice_size = math.prod(kshape), math.prod(rshape)
    v.check_nbytes(func, f"the result of shape {kshape}", num_cells, 8)
    n = len(vals)
    cell = _ravel([coords[i] for i in kept], kshape, n, xp)
    pos = _ravel([coords[i] for i in dims], rshape, n, xp)
    count = get_kernel("masked", "masked_count", xp)

    def counts(cells: np.ndarray, where: np.ndarray | None = None) -> np.ndarray:
        out = xp.zeros(num_cells, dtype=np.int64)
        count(cells, xp.ones(len(cells), dtype=bool) if where is None else where, out)
        return out

    stored = counts(cell)
    kind, spec = _mask_spec(func, mask, shape, xp)

    def cells_of(cs: list[np.ndarray]) -> np.ndarray:
        m = len(cs[0])
        c = _ravel([cs[i] for i in kept], kshape, m, xp)
        return c * slice_size + _ravel([cs[i] for i in dims], rshape, m, xp)

    if kind == "none":
        inm = xp.ones(n, dtype=bool)
        count_in = xp.full(num_cells, slice_size, dtype=np.int64)

        def mask_keys() -> np.ndarray:
            return xp.empty(0, dtype=np.int64)
    elif kind == "dense":
        inm = xp.ascontiguousarray(spec[tuple(coords)])
        count_in = spec.sum(axis=dims, dtype=np.int64).reshape(-1)

        def mask_keys() -> np.ndarray:
            return _sorted_keys(cells_of([i.astype(np.int64) for i in cm.nonzero(func, spec)]))
    else:
        # membership by the full raveled coordinates: both sides are canonical, so
        # usually sorted alike (one merge pass), whichever dimensions are reduced
        count_in = counts(_ravel([spec[i] for i in kept], kshape, len(spec[0]), xp))
        inm = xp.empty(n, dtype=bool)
        get_kernel("masked", "sorted_member", xp)(
            _sorted_keys(_ravel(spec, shape, len(spec[0]), xp)), _ravel(coords, shape, n, xp), inm)

        def mask_keys() -> np.ndarray:
            return _sorted_keys(cells_of(spec))
    return Problem(func, xp, shape, dims, num_cells, slice_size, cell, pos, vals, inm, count_in,
                   stored, counts(cell, inm), kind, mask_keys, x)


def compressed_totals(func: str, x: Any, dim: Any, mask: Any,
                      acc_dtype: Callable[[np.dtype], np.dtype]
                      ) -> tuple[Problem, np.ndarray] | None:
    """Per-cell sums of a 2-D CSR or CSC matrix on the host, without canonicalising it.

    ``(problem, totals)`` for a reduction along one dimension with no mask or a sparse
    mask of the same layout and shape (canonicalised if it is not, never the input);
    None otherwise (the caller takes :func:`prepare`'s path). ``totals`` has the dtype
    ``acc_dtype(input dtype)``. The entries are added in stored order, repeated
    coordinates one by one (kernels ``line_sums``, ``index_sums``, ``csr_masked_sum``),
    where canonicalising would sort every line. ``problem`` has no entries: it serves
    :meth:`Problem.finish` and ``count_in``; its ``stored`` and ``stored_in`` only say
    whether a cell has a stored, masked-in entry (1 or 0; the sums use nothing more).
    """
    if not (isinstance(x, (SparseCSR, SparseCSC)) and x.ndim == 2 and x.xp is np
            and not host_arrays_on_device()):
        return None
    if mask is not None and not (type(mask) is type(x) and mask.xp is np
                                 and tuple(mask.shape) == tuple(x.shape)):
        return None
    dims = check_dims(func, dim, 2)
    vals = x.values
    if len(dims) != 1 or vals.dtype.kind not in "iuf":
        return None
    if mask is not None and mask.values.dtype.kind not in "biuf":
        return None
    shape = tuple(x.shape)
    major = 0 if isinstance(x, SparseCSR) else 1
    kept = 1 - dims[0]
    num_cells, slice_size = shape[kept], shape[dims[0]]
    by_line = kept == major
    ptr, minor, vals = x._compact()
    acc = np.zeros(num_cells, dtype=acc_dtype(vals.dtype))
    if mask is None:
        count_in = np.full(num_cells, slice_size, dtype=np.int64)
        if by_line:
            get_kernel("masked", "line_sums", np)(ptr, vals, acc.dtype.type(0), acc)
            stored = ptr[1:] > ptr[:-1]
        else:
            stored = np.zeros(num_cells, dtype=np.uint8)
            get_kernel("masked", "index_sums", np)(minor, vals, acc, stored)
    else:
        # sorted, repeats added (bools: or); usually already so, and then not copied
        mptr, mind, mvals = mask.canonical()._compact()
        count_in = np.zeros(num_cells, dtype=np.int64)
        get_kernel("masked", "mask_true_counts", np)(mptr, mind, mvals, by_line, count_in)
        longest = int((mptr[1:] - mptr[:-1]).max()) if len(mptr) > 1 else 0
        stored = np.zeros(num_cells, dtype=np.uint8)
        get_kernel("masked", "csr_masked_sum", np)(
            ptr, minor, vals, mptr, mind, mvals, max(longest - 1, 0).bit_length(), by_line,
            acc.dtype.type(0), acc, stored)

    def no_keys() -> np.ndarray:
        msg = f"{func}: the entries of a summed compressed matrix are not kept"
        raise NotImplementedError(msg)

    p = Problem(func, np, shape, dims, num_cells, slice_size, np.empty(0, np.int64),
                np.empty(0, np.int64), vals[:0], np.empty(0, bool), count_in, stored, stored,
                "none" if mask is None else "coords", no_keys, x)
    return p, acc


def _sorted_keys(keys: np.ndarray) -> np.ndarray:
    """Distinct raveled keys (entries never repeat a coordinate), sorted.

    On the host sorted only when they are not; on the device always (checking the order
    would synchronise).
    """
    xp = module_of(keys)
    if xp is not np or (len(keys) > 1 and (keys[1:] < keys[:-1]).any()):
        return xp.sort(keys)
    return keys
