"""Layout-invariant masked reductions, after ``torch.masked``.

``masked.op(x, dim, mask=m)`` equals ``op`` applied to the dense array
``where(M, dense(x), identity)``, where ``dense(x)`` is ``x.to_dense()`` (unspecified
elements are zeros; a :class:`Jagged` is viewed as ``[rows, max_length, *inner]``
with the missing tail of each row unspecified) and ``M`` is the dense view of the
mask (``mask=None``: all True; a sparse or jagged mask: its unspecified elements are
False). This is the definition of the PyTorch masked-reductions post: the default
mask is ``ones(input.shape)`` even for sparse inputs, so unspecified elements count
as zeros. Sparse and jagged inputs are reduced on their stored values; nothing of
the dense shape is allocated (except by ``softmax``/``log_softmax``, whose result has
the dense shape). numpy inputs are reduced by numpy on ``where(M, x, identity)``.
Results are dense numpy arrays. See docs/masked-reductions.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _validate as v
from ._backend import get_kernel
from .errors import ArrowSparseIndexError, ArrowSparseTypeError, ArrowSparseValueError
from .jagged import Jagged
from .sparse import SparseCOO, SparseCSC, SparseCSF, SparseCSR

__all__ = ["amax", "amin", "argmax", "argmin", "log_softmax", "logsumexp", "mean", "norm",
           "prod", "softmax", "std", "sum", "var"]

_SPARSE = (SparseCOO, SparseCSR, SparseCSC, SparseCSF)


def _k(name: str) -> Callable[..., Any]:
    return get_kernel("masked", name)


# --------------------------------------------------------------------------- entries
def _ravel(coords: list[np.ndarray], shape: tuple[int, ...], n: int) -> np.ndarray:
    if not shape or n == 0:
        return np.zeros(n, dtype=np.int64)
    return np.ravel_multi_index(tuple(coords), shape).astype(np.int64, copy=False)


def _jagged_entries(func: str, arg: str, j: Jagged) -> tuple[tuple[int, ...], list[np.ndarray],
                                                              np.ndarray]:
    values = j.values
    if isinstance(values, Jagged):
        msg = (f"{func}: {arg} is a nested Jagged; masked reductions take one jagged level "
               "(reduce the inner level first, or use to_padded())")
        raise ArrowSparseTypeError(msg)
    offsets = j.offsets.astype(np.int64, copy=False)
    rows = j.num_rows
    lengths = np.diff(offsets)
    shape = (rows, int(lengths.max()) if rows else 0, *values.shape[1:])
    start, stop = int(offsets[0]), int(offsets[-1])
    row = np.repeat(np.arange(rows, dtype=np.int64), lengths)
    keep = np.ones(stop - start, dtype=bool)
    if j.validity is not None:
        keep &= np.repeat(j.validity, lengths)
    if j.values_validity is not None:
        keep &= j.values_validity[start:stop]
    idx = np.arange(start, stop, dtype=np.int64)
    pos = idx - offsets[:-1][row]
    row, pos, idx = row[keep], pos[keep], idx[keep]
    inner = values.shape[1:]
    k = math.prod(inner)
    coords = [np.repeat(row, k), np.repeat(pos, k)]
    if inner:
        coords += [np.tile(c.astype(np.int64), len(row))
                   for c in np.unravel_index(np.arange(k), inner)]
    vals = values[idx].reshape(-1)
    return shape, coords, vals


def _entries(func: str, arg: str, x: Any) -> tuple[tuple[int, ...], list[np.ndarray], np.ndarray]:
    """``(shape, coords, values)`` of the specified elements of ``x``, without duplicates."""
    if isinstance(x, Jagged):
        return _jagged_entries(func, arg, x)
    if isinstance(x, (SparseCSR, SparseCSC)):
        c = x.canonical()
        ptr, minor, vals = c._compact()
        major = np.repeat(np.arange(len(ptr) - 1, dtype=np.int64), np.diff(ptr))
        minor = minor.astype(np.int64, copy=False)
        coords = [major, minor] if isinstance(x, SparseCSR) else [minor, major]
        return tuple(x.shape), coords, vals
    if isinstance(x, _SPARSE):
        c = x.to_coo().canonical()
        return tuple(c.shape), [r.astype(np.int64, copy=False) for r in c.indices], c.values
    arr = v.as_values_array(func, arg, x, min_ndim=1)
    coords = [c.astype(np.int64, copy=False)
              for c in np.unravel_index(np.arange(arr.size), arr.shape)]
    return arr.shape, coords, arr.reshape(-1)


def _mask_spec(func: str, mask: Any, shape: tuple[int, ...]) -> tuple[str, Any]:
    """``("none", None)``, ``("dense", bool array of shape)`` or ``("coords", coords)``."""
    if mask is None:
        return "none", None
    if isinstance(mask, (Jagged, *_SPARSE)):
        mshape, coords, vals = _entries(func, "mask", mask)
        if vals.dtype.kind not in "biuf":
            msg = f"{func}: mask must have bool values, got {vals.dtype}"
            raise ArrowSparseTypeError(msg)
        ok = (mshape == shape if not isinstance(mask, Jagged) else
              len(mshape) == len(shape) and mshape[0] == shape[0] and mshape[2:] == shape[2:]
              and mshape[1] <= shape[1])
        if not ok:
            msg = f"{func}: mask has dense shape {mshape} but the input has shape {shape}"
            raise ArrowSparseValueError(msg)
        true = vals.astype(bool)
        return "coords", [c[true] for c in coords]
    arr = v.as_values_array(func, "mask", mask, min_ndim=0).astype(bool, copy=False)
    try:
        return "dense", np.broadcast_to(arr, shape)
    except ValueError:
        msg = f"{func}: mask of shape {arr.shape} does not broadcast to the input shape {shape}"
        raise ArrowSparseValueError(msg) from None


def _check_dims(func: str, dim: Any, ndim: int) -> tuple[int, ...]:
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
class _Problem:
    """A masked reduction brought to entries: one output cell per kept-coordinate tuple."""

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

    @property
    def dtype(self) -> np.dtype:
        return self.vals.dtype

    @property
    def zeros_in(self) -> np.ndarray:
        """Unspecified masked-in elements (zeros) per cell."""
        return np.asarray(self.count_in - self.stored_in)

    @property
    def out_in(self) -> np.ndarray:
        """Unspecified masked-out elements per cell."""
        return np.asarray(self.slice_size - self.stored - self.zeros_in)

    def finish(self, flat: np.ndarray, keepdim: bool) -> np.ndarray:
        kept = [n if i not in self.dims else 1 for i, n in enumerate(self.shape)]
        if not keepdim:
            kept = [n for i, n in enumerate(self.shape) if i not in self.dims]
        return flat.reshape(kept)


@dataclass
class _Strided:
    """A masked reduction of a numpy array: numpy reductions of ``where(mask, x, fill)``.

    Results keep the reduced dimensions (size 1) until :meth:`finish`.
    """

    x: np.ndarray
    mask: np.ndarray | None  # bool, broadcastable to x.shape; None: everything masked in
    dims: tuple[int, ...]

    @property
    def dtype(self) -> np.dtype:
        return self.x.dtype

    @property
    def slice_size(self) -> int:
        return math.prod(self.x.shape[d] for d in self.dims)

    @property
    def count_in(self) -> np.ndarray:
        """Masked-in elements per slice (float64)."""
        if self.mask is None:
            kept = [1 if i in self.dims else n for i, n in enumerate(self.x.shape)]
            return np.full(kept, float(self.slice_size))
        return self.reduce(np.sum, np.broadcast_to(self.mask, self.x.shape), dtype=np.float64)

    def fill(self, value: Any, x: np.ndarray | None = None) -> np.ndarray:
        """``x`` (default: the input) with its masked-out elements replaced by ``value``."""
        x = self.x if x is None else x
        return x if self.mask is None else np.where(self.mask, x, value)

    def reduce(self, fn: Callable[..., Any], x: np.ndarray, **kw: Any) -> np.ndarray:
        with np.errstate(all="ignore"):  # NaN from inf - inf is a result, not a warning
            return np.asarray(fn(x, axis=self.dims, keepdims=True, **kw))

    def finish(self, out: np.ndarray, keepdim: bool) -> np.ndarray:
        return out if keepdim else np.squeeze(out, axis=self.dims)


def _numeric(func: str, vals: np.ndarray) -> np.ndarray:
    if vals.dtype.kind == "b":
        vals = vals.astype(np.int64)
    if vals.dtype.kind not in "iuf":
        msg = f"{func}: input must have a numeric dtype, got {vals.dtype}"
        raise ArrowSparseTypeError(msg)
    return vals


def _prepare(func: str, x: Any, dim: Any, mask: Any) -> _Problem | _Strided:
    """Sparse and jagged inputs become entries; numpy inputs take the strided path."""
    if isinstance(x, (Jagged, *_SPARSE)):
        return _problem(func, x, dim, mask)
    return _strided(func, v.as_values_array(func, "input", x, min_ndim=1), dim, mask)


def _strided(func: str, x: np.ndarray, dim: Any, mask: Any) -> _Strided:
    x = _numeric(func, x)
    dims = _check_dims(func, dim, x.ndim)
    kind, spec = _mask_spec(func, mask, x.shape)
    if kind == "coords":  # a sparse or jagged mask of a dense input: densify it
        spec_dense = np.zeros(x.shape, dtype=bool)
        spec_dense[tuple(spec)] = True
        spec = spec_dense
    return _Strided(x, None if kind == "none" else spec, dims)


def _problem(func: str, x: Any, dim: Any, mask: Any) -> _Problem:
    shape, coords, vals = _entries(func, "input", x)
    vals = _numeric(func, vals)
    if math.prod(shape) >= 1 << 62:
        msg = f"{func}: input shape {shape} has more than 2**62 elements"
        raise ArrowSparseValueError(msg)
    dims = _check_dims(func, dim, len(shape))
    kept = [i for i in range(len(shape)) if i not in dims]
    kshape = tuple(shape[i] for i in kept)
    rshape = tuple(shape[i] for i in dims)
    num_cells, slice_size = math.prod(kshape), math.prod(rshape)
    n = len(vals)
    cell = _ravel([coords[i] for i in kept], kshape, n)
    pos = _ravel([coords[i] for i in dims], rshape, n)
    stored = np.bincount(cell, minlength=num_cells).astype(np.int64)
    kind, spec = _mask_spec(func, mask, shape)

    def cells_of(cs: list[np.ndarray]) -> np.ndarray:
        m = len(cs[0])
        c = _ravel([cs[i] for i in kept], kshape, m)
        return np.asarray(c * slice_size + _ravel([cs[i] for i in dims], rshape, m))

    if kind == "none":
        inm = np.ones(n, dtype=bool)
        count_in = np.full(num_cells, slice_size, dtype=np.int64)

        def mask_keys() -> np.ndarray:
            return np.empty(0, dtype=np.int64)
    elif kind == "dense":
        inm = spec[tuple(coords)]
        count_in = spec.sum(axis=dims, dtype=np.int64).reshape(-1)

        def mask_keys() -> np.ndarray:
            return _sorted_keys(cells_of([i.astype(np.int64) for i in np.nonzero(spec)]))
    else:
        # membership by the full raveled coordinates: both sides are canonical, so
        # usually sorted alike (one merge pass), whichever dimensions are reduced
        count_in = np.bincount(_ravel([spec[i] for i in kept], kshape, len(spec[0])),
                               minlength=num_cells).astype(np.int64)
        inm = np.empty(n, dtype=bool)
        _k("sorted_member")(_sorted_keys(_ravel(spec, shape, len(spec[0]))),
                            _ravel(coords, shape, n), inm)

        def mask_keys() -> np.ndarray:
            return _sorted_keys(cells_of(spec))
    stored_in = np.bincount(cell[inm], minlength=num_cells).astype(np.int64)
    return _Problem(shape, dims, num_cells, slice_size, cell, pos, vals,
                    np.ascontiguousarray(inm), count_in, stored, stored_in, kind, mask_keys)


def _sorted_keys(keys: np.ndarray) -> np.ndarray:
    """Distinct raveled keys (entries never repeat a coordinate), sorted unless they are."""
    if len(keys) > 1 and (keys[1:] < keys[:-1]).any():
        return np.sort(keys)
    return keys


def _float_dtype(dtype: np.dtype) -> np.dtype:
    return dtype if dtype.kind == "f" else np.dtype(np.float64)


def _acc_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float64 if dtype.kind == "f" else np.uint64 if dtype.kind == "u"
                    else np.int64)


def _sum_result(out: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Give sums and products a float input's dtype, else keep the accumulator's."""
    return out.astype(dtype) if dtype.kind == "f" else out


def _identity(op: str, dtype: np.dtype) -> Any:
    if dtype.kind == "f":
        return -np.inf if op == "max" else np.inf
    info = np.iinfo(dtype)
    return info.min if op == "max" else info.max


def _extreme(p: _Problem | _Strided, op: str) -> np.ndarray:
    """amax/amin in the input dtype: identity where fully masked out."""
    ident = _identity(op, p.dtype)
    if isinstance(p, _Strided):
        return p.reduce(np.max if op == "max" else np.min, p.fill(ident), initial=ident)
    out = np.full(p.num_cells, ident, dtype=p.dtype)
    _k("masked_max" if op == "max" else "masked_min")(p.cell, p.vals, p.inm, out)
    zero = p.zeros_in > 0
    combine = np.maximum if op == "max" else np.minimum
    out[zero] = combine(out[zero], 0)
    return out


def _total(p: _Problem | _Strided, dtype: np.dtype) -> np.ndarray:
    if isinstance(p, _Strided):
        return p.reduce(np.sum, p.fill(0), dtype=dtype)
    out = np.zeros(p.num_cells, dtype=dtype)
    _k("masked_sum")(p.cell, p.vals, p.inm, out)
    return out


def _mean(p: _Problem | _Strided) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(_total(p, np.dtype(np.float64)) / p.count_in)


# --------------------------------------------------------------------------- reductions
def sum(input: Any, dim: Any = None, *, keepdim: bool = False,  # noqa: A001 - torch's name
        mask: Any = None) -> np.ndarray:
    """Sum of the masked-in elements.

    Parameters
    ----------
    input
        A numpy array, :class:`SparseCOO`, :class:`SparseCSR` (CSC, CSF) or :class:`Jagged`
        (dense view ``[rows, max_length, *inner]``).
    dim
        None (all dimensions, as does ``()``), an int or a tuple of ints.
    keepdim
        Keep the reduced dimensions with size 1.
    mask
        None (everything masked in), a bool array broadcastable to the input's shape, a
        sparse tensor of bools or a Jagged of bools (unspecified mask elements are False).

    Returns
    -------
    numpy.ndarray
        int64 for integer and bool inputs, the input's dtype for floats. A fully
        masked-out slice gives 0 (the identity).

    Raises
    ------
    TypeError
        A non-numeric input or mask, or a ``dim`` that is not an int or tuple of ints.
    ValueError
        A mask whose shape does not match, or a repeated ``dim``.
    IndexError
        A ``dim`` out of range.

    See Also
    --------
    numpy.sum, torch.masked.sum

    Notes
    -----
    Unspecified elements of a sparse or jagged input are zeros; the reduction runs on
    the stored values only (scatter by output cell), never on the dense shape.

    Examples
    --------
    >>> csr = asp.SparseCSR([0, 2, 3], [0, 2, 1], np.array([1.0, 2.0, 3.0]), (2, 3))
    >>> asp.masked.sum(csr, 1)
    array([3., 3.])
    >>> asp.masked.sum(csr, 0, mask=np.array([True, False, True]))
    array([1., 0., 2.])
    """
    p = _prepare("masked.sum", input, dim, mask)
    return p.finish(_sum_result(_total(p, _acc_dtype(p.dtype)), p.dtype), keepdim)


def prod(input: Any, dim: Any = None, *, keepdim: bool = False, mask: Any = None) -> np.ndarray:
    """Product of the masked-in elements.

    Parameters
    ----------
    input, dim, keepdim, mask
        As for :func:`sum`.

    Returns
    -------
    numpy.ndarray
        int64 for integer and bool inputs, the input's dtype for floats. A fully
        masked-out slice gives 1; a masked-in unspecified element makes it 0.

    See Also
    --------
    numpy.prod, torch.masked.prod

    Examples
    --------
    >>> j = asp.Jagged.from_list([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0, 7.0], [3.0, 6.0]])
    >>> stored = asp.Jagged(np.ones(9, dtype=bool), j.offsets)
    >>> asp.masked.prod(j, 1, mask=stored)  # only the stored values are masked in
    array([  6., 336.,  18.])
    >>> asp.masked.prod(j, 1)  # the default mask covers the zero tails
    array([  0., 336.,   0.])
    """
    p = _prepare("masked.prod", input, dim, mask)
    if isinstance(p, _Strided):
        out = p.reduce(np.prod, p.fill(1), dtype=_acc_dtype(p.dtype))
    else:
        out = np.ones(p.num_cells, dtype=_acc_dtype(p.dtype))
        _k("masked_prod")(p.cell, p.vals, p.inm, out)
        with np.errstate(invalid="ignore"):  # inf * 0 is NaN, as in the dense product
            out[p.zeros_in > 0] *= 0
    return p.finish(_sum_result(out, p.dtype), keepdim)


def amax(input: Any, dim: Any = None, *, keepdim: bool = False, mask: Any = None) -> np.ndarray:
    """Maximum of the masked-in elements.

    Parameters
    ----------
    input, dim, keepdim, mask
        As for :func:`sum`.

    Returns
    -------
    numpy.ndarray
        The input's dtype (int64 for bools). A fully masked-out slice gives ``-inf``
        (the dtype's minimum for integers).

    See Also
    --------
    numpy.amax, torch.masked.amax

    Examples
    --------
    >>> coo = asp.SparseCOO([[0, 1], [1, 0]], np.array([-1.0, -2.0]), (2, 2))
    >>> asp.masked.amax(coo, 1)  # the unspecified zeros count
    array([0., 0.])
    >>> asp.masked.amax(coo, 1, mask=coo.to_dense() != 0)
    array([-1., -2.])
    """
    p = _prepare("masked.amax", input, dim, mask)
    return p.finish(_extreme(p, "max"), keepdim)


def amin(input: Any, dim: Any = None, *, keepdim: bool = False, mask: Any = None) -> np.ndarray:
    """Minimum of the masked-in elements.

    Parameters
    ----------
    input, dim, keepdim, mask
        As for :func:`sum`.

    Returns
    -------
    numpy.ndarray
        The input's dtype (int64 for bools). A fully masked-out slice gives ``inf``
        (the dtype's maximum for integers).

    See Also
    --------
    numpy.amin, torch.masked.amin

    Examples
    --------
    >>> asp.masked.amin(np.array([[3.0, 1.0], [2.0, 5.0]]), 0,
    ...                 mask=np.array([[True, False], [False, False]]))
    array([ 3., inf])
    """
    p = _prepare("masked.amin", input, dim, mask)
    return p.finish(_extreme(p, "min"), keepdim)


def _arg(func: str, op: str, input: Any, dim: Any, keepdim: bool, mask: Any) -> np.ndarray:
    if isinstance(dim, (tuple, list)):
        msg = f"{func}: dim must be None or an int, got {dim!r}"
        raise ArrowSparseTypeError(msg)
    p = _prepare(func, input, dim, mask)
    if p.slice_size == 0:
        msg = f"{func}: cannot take the {op} index of an empty slice (dim={dim})"
        raise ArrowSparseValueError(msg)
    ident = _identity(op, p.dtype)
    if isinstance(p, _Strided):  # numpy picks the first NaN, as the entries path does
        pick = np.argmax if op == "max" else np.argmin
        axis = None if dim is None else p.dims[0]
        return p.finish(pick(p.fill(ident), axis=axis, keepdims=True).astype(np.int64),
                        keepdim)
    best = _extreme(p, op)
    outside = p.out_in > 0
    combine = np.maximum if op == "max" else np.minimum
    best[outside] = combine(best[outside], ident)
    out = np.full(p.num_cells, p.slice_size, dtype=np.int64)
    _k("masked_first_best")(p.cell, p.pos, p.vals, p.inm, p.dtype.type(ident), best, out)
    zeros, outs = p.zeros_in > 0, p.out_in > 0
    if zeros.any() or outs.any():
        # the first unstored position per cell that is masked in (a zero), or out
        skeys = _sorted_keys(p.cell * p.slice_size + p.pos)
        first_zero = np.zeros(p.num_cells, dtype=np.int64)
        first_out = np.zeros(p.num_cells, dtype=np.int64)
        if p.mask_kind == "none":  # every unstored position is masked in
            _k("first_unstored")(skeys[:0], skeys, p.slice_size, first_out, first_zero)
        else:
            first_zero[:] = p.slice_size
            _k("first_unstored")(p.mask_keys(), skeys, p.slice_size, first_zero, first_out)
        hit = zeros & (best == 0)
        out[hit] = np.minimum(out[hit], first_zero[hit])
        hit = outs & (best == ident)
        out[hit] = np.minimum(out[hit], first_out[hit])
    return p.finish(out, keepdim)


def argmax(input: Any, dim: Any = None, *, keepdim: bool = False,
           mask: Any = None) -> np.ndarray:
    """Index of the first maximum, masked-out elements counting as ``-inf``.

    Parameters
    ----------
    input, keepdim, mask
        As for :func:`sum`.
    dim
        None (index into the flattened input, as ``numpy.argmax``) or an int.

    Returns
    -------
    numpy.ndarray
        int64 indices. A fully masked-out slice gives 0 (the first ``-inf``).

    Raises
    ------
    TypeError
        A tuple ``dim``.
    ValueError
        An empty slice.

    See Also
    --------
    numpy.argmax, torch.masked.argmax

    Examples
    --------
    >>> csr = asp.SparseCSR([0, 2, 3], [0, 2, 1], np.array([-1.0, -2.0, 3.0]), (2, 3))
    >>> asp.masked.argmax(csr, 1)  # row 0: the unspecified zero at column 1
    array([1, 1])
    >>> asp.masked.argmax(csr, 1, mask=csr.to_dense() != 0)
    array([0, 1])
    """
    return _arg("masked.argmax", "max", input, dim, keepdim, mask)


def argmin(input: Any, dim: Any = None, *, keepdim: bool = False,
           mask: Any = None) -> np.ndarray:
    """Index of the first minimum, masked-out elements counting as ``inf``.

    Parameters
    ----------
    input, keepdim, mask
        As for :func:`sum`.
    dim
        None (index into the flattened input) or an int.

    Returns
    -------
    numpy.ndarray
        int64 indices. A fully masked-out slice gives 0.

    Raises
    ------
    TypeError
        A tuple ``dim``.
    ValueError
        An empty slice.

    See Also
    --------
    numpy.argmin, torch.masked.argmin

    Examples
    --------
    >>> asp.masked.argmin(asp.Jagged.from_list([[3.0, 1.0], [2.0]]), 1)
    array([1, 1])
    """
    return _arg("masked.argmin", "min", input, dim, keepdim, mask)


def mean(input: Any, dim: Any = None, *, keepdim: bool = False, mask: Any = None) -> np.ndarray:
    """Mean of the masked-in elements: their sum over their count.

    Parameters
    ----------
    input, dim, keepdim, mask
        As for :func:`sum`.

    Returns
    -------
    numpy.ndarray
        The input's float dtype (float64 for integers and bools). A fully masked-out
        slice gives NaN.

    See Also
    --------
    numpy.mean, torch.masked.mean

    Examples
    --------
    >>> j = asp.Jagged.from_list([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0, 7.0], [3.0, 6.0]])
    >>> asp.masked.mean(j, 1, mask=asp.Jagged.from_list([[True] * 3, [True] * 4, [True] * 2]))
    array([2. , 4.75, 4.5 ])
    >>> asp.masked.mean(j, 1)  # over the dense view [3, 4]: tails are zeros
    array([1.5 , 4.75, 2.25])
    """
    p = _prepare("masked.mean", input, dim, mask)
    return p.finish(_mean(p).astype(_float_dtype(p.dtype)), keepdim)


def _var(func: str, input: Any, dim: Any, unbiased: bool | None, correction: Any,
         mask: Any) -> tuple[_Problem | _Strided, np.ndarray]:
    if unbiased is not None and correction is not None:
        msg = f"{func}: give only one of unbiased and correction"
        raise ArrowSparseValueError(msg)
    corr = 1.0 if unbiased is None else float(v.check_bool(func, "unbiased", unbiased))
    if correction is not None:
        if isinstance(correction, bool) or not isinstance(correction, (int, float, np.number)):
            msg = f"{func}: correction must be a number, got {correction!r}"
            raise ArrowSparseTypeError(msg)
        corr = float(correction)
    p = _prepare(func, input, dim, mask)
    m = _mean(p)
    with np.errstate(invalid="ignore", divide="ignore"):
        if isinstance(p, _Strided):
            dev = p.fill(0.0, p.x - m)
            ssd = p.reduce(np.sum, dev * dev)
        else:
            ssd = np.zeros(p.num_cells, dtype=np.float64)
            _k("masked_sum_sq_dev")(p.cell, p.vals, p.inm, m, ssd)
            ssd += np.where(p.zeros_in > 0, p.zeros_in * m * m, 0.0)
        return p, ssd / np.maximum(p.count_in - corr, 0.0)


def var(input: Any, dim: Any = None, *, unbiased: bool | None = None, keepdim: bool = False,
        correction: float | None = None, mask: Any = None) -> np.ndarray:
    """Variance of the masked-in elements (torch's default: Bessel-corrected).

    Parameters
    ----------
    input, dim, keepdim, mask
        As for :func:`sum`.
    unbiased
        True (divide by ``count - 1``, the default) or False (by ``count``).
    correction
        Divide by ``max(count - correction, 0)`` instead; not with ``unbiased``.

    Returns
    -------
    numpy.ndarray
        The input's float dtype (float64 for integers). A fully masked-out slice, or
        one with ``count <= correction``, gives NaN (``inf`` when the deviations are
        non-zero and the denominator is 0, as in torch).

    Raises
    ------
    ValueError
        Both ``unbiased`` and ``correction``.

    See Also
    --------
    numpy.var, torch.masked.var

    Examples
    --------
    >>> x = np.array([[1.0, 2.0, 3.0], [4.0, 8.0, 0.0]])
    >>> asp.masked.var(x, 1, mask=np.array([[True, True, True], [True, True, False]]))
    array([1., 8.])
    >>> asp.masked.var(x, 1, correction=0)
    array([ 0.66666667, 10.66666667])
    """
    p, out = _var("masked.var", input, dim, unbiased, correction, mask)
    return p.finish(out.astype(_float_dtype(p.dtype)), keepdim)


def std(input: Any, dim: Any = None, *, unbiased: bool | None = None, keepdim: bool = False,
        correction: float | None = None, mask: Any = None) -> np.ndarray:
    """Return the standard deviation of the masked-in elements, the root of :func:`var`.

    Parameters
    ----------
    input, dim, keepdim, mask
        As for :func:`sum`.
    unbiased, correction
        As for :func:`var`.

    Returns
    -------
    numpy.ndarray
        The input's float dtype (float64 for integers); NaN where :func:`var` is NaN.

    See Also
    --------
    numpy.std, torch.masked.std

    Examples
    --------
    >>> asp.masked.std(np.array([1.0, 3.0, 100.0]), mask=np.array([True, True, False]))
    array(1.41421356)
    """
    p, out = _var("masked.std", input, dim, unbiased, correction, mask)
    return p.finish(np.sqrt(out).astype(_float_dtype(p.dtype)), keepdim)


def norm(input: Any, ord: float = 2.0, dim: Any = None, *,  # noqa: A002 - torch's name
         keepdim: bool = False, mask: Any = None) -> np.ndarray:
    """Vector norm of the masked-in elements (``torch.linalg.vector_norm``).

    Parameters
    ----------
    input, dim, keepdim, mask
        As for :func:`sum`.
    ord
        ``inf`` (max of absolute values), ``-inf`` (min), 0 (count of non-zeros) or
        any other real ``p``: ``sum(|x| ** p) ** (1 / p)``.

    Returns
    -------
    numpy.ndarray
        The input's float dtype (float64 for integers). Masked-out elements count as
        the identity 0 (``inf`` for ``ord=-inf``), as in torch: a fully masked-out
        slice gives 0 (``inf`` for ``ord=-inf``), and for ``ord < 0`` any masked-out
        element makes the norm 0.

    Raises
    ------
    TypeError
        A non-numeric ``ord``.

    See Also
    --------
    numpy.linalg.norm, torch.masked.norm

    Examples
    --------
    >>> csr = asp.SparseCSR([0, 2, 3], [0, 2, 1], np.array([3.0, 4.0, 1.0]), (2, 3))
    >>> asp.masked.norm(csr, 2, 1)
    array([5., 1.])
    >>> asp.masked.norm(csr, float("inf"), 0)
    array([3., 1., 4.])
    """
    func = "masked.norm"
    if isinstance(ord, bool) or not isinstance(ord, (int, float, np.number)):
        msg = f"{func}: ord must be a number, got {ord!r}"
        raise ArrowSparseTypeError(msg)
    ordf = float(ord)
    p = _prepare(func, input, dim, mask)
    out = _norm_strided(p, ordf) if isinstance(p, _Strided) else _norm_entries(p, ordf)
    return p.finish(out.astype(_float_dtype(p.dtype)), keepdim)


def _norm_strided(p: _Strided, ordf: float) -> np.ndarray:
    a = np.abs(p.x.astype(np.float64))
    if math.isinf(ordf):
        ident = 0.0 if ordf > 0 else np.inf
        return p.reduce(np.max if ordf > 0 else np.min, p.fill(ident, a), initial=ident)
    if ordf == 0:
        return p.reduce(np.count_nonzero, p.fill(0.0, a)).astype(np.float64)
    with np.errstate(divide="ignore", over="ignore"):
        return np.asarray(p.reduce(np.sum, p.fill(0.0, a) ** ordf) ** (1.0 / ordf))


def _norm_entries(p: _Problem, ordf: float) -> np.ndarray:
    if math.isinf(ordf):
        absvals = np.abs(p.vals.astype(np.float64))
        out = np.full(p.num_cells, 0.0 if ordf > 0 else np.inf)
        _k("masked_max" if ordf > 0 else "masked_min")(p.cell, absvals, p.inm, out)
        if ordf < 0:
            zero = p.zeros_in > 0
            out[zero] = np.minimum(out[zero], 0.0)  # a NaN stays
        return out
    if ordf == 0:
        count = np.zeros(p.num_cells, dtype=np.int64)
        _k("masked_count_nonzero")(p.cell, p.vals, p.inm, count)
        return count
    total = np.zeros(p.num_cells, dtype=np.float64)
    _k("masked_sum_abs_pow")(p.cell, p.vals, p.inm, ordf, total)
    with np.errstate(divide="ignore", over="ignore"):
        if ordf < 0:
            total[(p.zeros_in > 0) | (p.count_in < p.slice_size)] += np.inf  # 0 ** p
        return np.asarray(total ** (1.0 / ordf))


def logsumexp(input: Any, dim: Any = None, *, keepdim: bool = False,
              mask: Any = None) -> np.ndarray:
    """``log(sum(exp(x)))`` of the masked-in elements, computed stably.

    Parameters
    ----------
    input, dim, keepdim, mask
        As for :func:`sum`.

    Returns
    -------
    numpy.ndarray
        The input's float dtype (float64 for integers). A fully masked-out slice
        gives ``-inf``.

    See Also
    --------
    scipy.special.logsumexp, torch.masked.logsumexp

    Examples
    --------
    >>> j = asp.Jagged.from_list([[0.0, 0.0], [1.0]])
    >>> asp.masked.logsumexp(j, 1, mask=asp.Jagged.from_list([[True, True], [False]]))
    array([0.69314718,       -inf])
    """
    p = _prepare("masked.logsumexp", input, dim, mask)
    if isinstance(p, _Strided):
        a = p.fill(-np.inf, p.x.astype(np.float64))
        shift = p.reduce(np.max, a, initial=-np.inf)
        shift = np.where(np.isfinite(shift), shift, 0.0)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            out = np.log(p.reduce(np.sum, np.exp(a - shift))) + shift
        return p.finish(out.astype(_float_dtype(p.dtype)), keepdim)
    vals = p.vals.astype(np.float64, copy=False)
    shift = np.full(p.num_cells, -np.inf)
    _k("masked_max")(p.cell, vals, p.inm, shift)
    zeros = p.zeros_in
    shift[zeros > 0] = np.maximum(shift[zeros > 0], 0.0)
    shift = np.where(np.isfinite(shift), shift, 0.0)
    total = np.zeros(p.num_cells, dtype=np.float64)
    _k("masked_sum_exp")(p.cell, vals, p.inm, shift, total)
    with np.errstate(divide="ignore", over="ignore"):
        total += zeros * np.exp(-np.maximum(shift, 0.0))  # shift >= 0 where zeros > 0
        out = np.log(total) + shift
    return p.finish(out.astype(_float_dtype(p.dtype)), keepdim)


# --------------------------------------------------------------------------- normalizations
def _dense_masked(func: str, input: Any, dim: Any, mask: Any) -> tuple[np.ndarray, int, np.dtype]:
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        msg = f"{func}: dim must be an int, got {dim!r}"
        raise ArrowSparseTypeError(msg)
    if isinstance(input, (Jagged, *_SPARSE)):
        shape, coords, vals = _entries(func, "input", input)
        x = np.zeros(shape, dtype=_numeric(func, vals).dtype)
        x[tuple(coords)] = vals
    else:
        x = v.as_values_array(func, "input", input, min_ndim=1)
    p = _strided(func, x, dim, mask)
    return p.fill(-np.inf, p.x.astype(np.float64)), p.dims[0], _float_dtype(p.dtype)


def softmax(input: Any, dim: int, *, mask: Any = None) -> np.ndarray:
    """Softmax along ``dim`` with masked-out elements as ``-inf`` (they come out 0).

    Parameters
    ----------
    input, mask
        As for :func:`sum`.
    dim
        The dimension to normalise along (an int).

    Returns
    -------
    numpy.ndarray
        Dense, of the input's dense shape and float dtype (float64 for integers). A
        fully masked-out slice gives NaN, as in torch.

    Raises
    ------
    TypeError
        A ``dim`` that is not an int.

    See Also
    --------
    torch.masked.softmax, segment_softmax

    Notes
    -----
    The result has the dense shape, so this allocates it even for sparse inputs.

    Examples
    --------
    >>> asp.masked.softmax(np.array([[0.0, 0.0, 5.0]]), 1, mask=np.array([True, True, False]))
    array([[0.5, 0.5, 0. ]])
    """
    x, d, dt = _dense_masked("masked.softmax", input, dim, mask)
    with np.errstate(invalid="ignore"):
        e = np.exp(x - np.max(x, axis=d, keepdims=True, initial=-np.inf))
        return np.asarray(e / e.sum(axis=d, keepdims=True)).astype(dt)


def log_softmax(input: Any, dim: int, *, mask: Any = None) -> np.ndarray:
    """Log of :func:`softmax`; masked-out elements come out ``-inf``.

    Parameters
    ----------
    input, mask
        As for :func:`sum`.
    dim
        The dimension to normalise along (an int).

    Returns
    -------
    numpy.ndarray
        Dense, of the input's dense shape and float dtype. A fully masked-out slice
        gives NaN.

    See Also
    --------
    torch.masked.log_softmax

    Examples
    --------
    >>> asp.masked.log_softmax(asp.Jagged.from_list([[0.0, 0.0]]), 1)
    array([[-0.69314718, -0.69314718]])
    """
    x, d, dt = _dense_masked("masked.log_softmax", input, dim, mask)
    with np.errstate(invalid="ignore", divide="ignore"):
        shifted = x - np.max(x, axis=d, keepdims=True, initial=-np.inf)
        return np.asarray(shifted - np.log(np.exp(shifted).sum(axis=d, keepdims=True))).astype(dt)

