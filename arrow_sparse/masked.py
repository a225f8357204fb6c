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
A reduction of a sparse input keeps its layout, as in torch.masked (a sparse result
storing the cells that stored, masked-in elements reach; ``dense=True`` gives an
array), and a Jagged reduced over inner dimensions stays a Jagged of the same rows.
``argmax``/``argmin`` give index arrays and ``softmax``/``log_softmax`` dense arrays,
whatever the input.

Every op also runs on the device: a CuPy array, a sparse tensor on the device or a
device :class:`Jagged` (the mask, when an array, on the same device) gives a CuPy
result, computed by CuPy's reductions or the CUDA twins of the scatter kernels. See
docs/masked-reductions.md for what each op reads back.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _validate as v
from ._backend import fetch
from ._docs import fill_doc
from .errors import ArrowSparseTypeError, ArrowSparseValueError
from .sparse._masked import Problem, Strided, compressed_totals, dense_view, prepare

__all__ = ["amax", "amin", "argmax", "argmin", "log_softmax", "logsumexp", "mean", "norm",
           "prod", "softmax", "std", "sum", "var"]


def __dir__() -> list[str]:
    """List the public names (``__all__``), not the names the module imports."""
    return sorted(__all__)


# The docstrings of the ops that differ only by their reduction, after each one's own
# summary line: ``name`` is the op (torch.masked has it too), ``empty`` what a fully
# masked-out slice reduces to, ``build`` makes the examples' input and the other
# fields are the examples' results.
_REDUCTION = """
    Parameters
    ----------
    input, dim, keepdim, mask, dense
        As for :func:`sum`.

    Returns
    -------
    numpy.ndarray, sparse tensor or Jagged
        {returns} The layout follows the input's, as for :func:`sum`.

    See Also
    --------
    {see_also}, torch.masked.{name}

    Examples
    --------
    >>> j = asp.Jagged.from_list([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0, 7.0], [3.0, 6.0]])
    >>> stored = asp.Jagged(np.ones(9, dtype=bool), j.offsets)
    >>> asp.masked.{name}(j, 1, mask=stored)  # only the stored values are masked in
    {stored}
    >>> asp.masked.{name}(j, 1)  # the default mask covers the zero tails
    {dense}
    >>> asp.masked.{name}(j, 1, mask=asp.Jagged(np.zeros(9, dtype=bool), j.offsets))
    {none}
    """
_EXTREME = """
    Parameters
    ----------
    input, dim, keepdim, mask, dense
        As for :func:`sum`.

    Returns
    -------
    numpy.ndarray, sparse tensor or Jagged
        The input's dtype (int64 for bools). A fully masked-out slice gives ``{empty}``
        (the dtype's {bound} for integers). The layout follows the input's, as for
        :func:`sum`.

    See Also
    --------
    numpy.{name}, torch.masked.{name}

    Examples
    --------
    >>> x = {build}
    >>> asp.masked.{name}(x, 1)  # a sparse result, as the input
    SparseCOO(shape=(2,), nnz=2, dtype=float64)
    >>> asp.masked.{name}(x, 1, dense=True)  # the unspecified zeros count
    {unmasked}
    >>> asp.masked.{name}(x, 1, mask=x.to_dense() != 0, dense=True)
    {masked}
    >>> asp.masked.{name}(x, 1, mask=np.zeros((2, 2), dtype=bool), dense=True)
    {none}
    """
_ARG_EXTREME = """
    Parameters
    ----------
    input, keepdim, mask
        As for :func:`sum`.
    dim
        None (index into the flattened input, as ``numpy.{name}``) or an int.

    Returns
    -------
    numpy.ndarray
        int64 indices. A fully masked-out slice gives 0 (the first ``{empty}``).

    Raises
    ------
    TypeError
        A tuple ``dim``.
    ValueError
        An empty slice.

    See Also
    --------
    numpy.{name}, torch.masked.{name}

    Examples
    --------
    >>> x = {build}
    >>> asp.masked.{name}(x, 1)  # row 0: the unspecified zero at column 1
    {unmasked}
    >>> asp.masked.{name}(x, 1, mask=x.to_dense() != 0)
    {masked}
    """
_NORMALIZE = """
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
    {see_also}

    Notes
    -----
    The result has the dense shape, so this allocates it even for sparse inputs.

    Examples
    --------
    >>> {call}
    {result}
    """


def _float_dtype(dtype: np.dtype) -> np.dtype:
    return dtype if dtype.kind == "f" else np.dtype(np.float64)


def _acc_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float64 if dtype.kind == "f" else np.uint64 if dtype.kind == "u"
                    else np.int64)


def _sum_result(out: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Give sums and products a float input's dtype, else keep the accumulator's."""
    return out.astype(dtype, copy=False) if dtype.kind == "f" else out


def _identity(op: str, dtype: np.dtype) -> Any:
    if dtype.kind == "f":
        return -np.inf if op == "max" else np.inf
    info = np.iinfo(dtype)
    return info.min if op == "max" else info.max


def _extreme(p: Problem | Strided, op: str) -> np.ndarray:
    """amax/amin in the input dtype: identity where fully masked out."""
    ident = _identity(op, p.dtype)
    if isinstance(p, Strided):
        return p.extreme(op, p.fill(ident), ident)
    xp = p.xp
    out = xp.full(p.num_cells, ident, dtype=p.dtype)
    p.k("masked_max" if op == "max" else "masked_min")(p.cell, p.vals, p.inm, out)
    combine = xp.maximum if op == "max" else xp.minimum
    return xp.where(p.zeros_in > 0, combine(out, 0), out)  # type: ignore[no-any-return]


def _total(p: Problem | Strided, dtype: np.dtype) -> np.ndarray:
    if isinstance(p, Strided):
        return p.reduce("sum", p.fill(0), dtype=dtype)
    out = p.xp.zeros(p.num_cells, dtype=dtype)
    p.k("masked_sum")(p.cell, p.vals, p.inm, out)
    return out


def _prepared_total(func: str, input: Any, dim: Any,  # noqa: A002 - torch's name
                    mask: Any) -> tuple[Problem | Strided, np.ndarray]:
    """Return the problem and its per-cell sums in the accumulator dtype.

    A CSR/CSC matrix reduced along one dimension is summed as it is stored (no
    canonicalising sort; :func:`~.sparse._masked.compressed_totals`).
    """
    fast = compressed_totals(func, input, dim, mask, _acc_dtype)
    if fast is not None:
        return fast
    p = prepare(func, input, dim, mask)
    return p, _total(p, _acc_dtype(p.dtype))


def _mean(total: np.ndarray, p: Problem | Strided) -> np.ndarray:
    """Sum over count in float64; integers are summed exactly first (int64 / uint64)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return total.astype(np.float64, copy=False) / p.count_in


# --------------------------------------------------------------------------- reductions
def sum(input: Any, dim: Any = None, *, keepdim: bool = False,  # noqa: A001 - torch's name
        mask: Any = None, dense: bool = False) -> Any:
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
    dense
        Give a dense array whatever the input's layout (below).

    Returns
    -------
    numpy.ndarray, sparse tensor or Jagged
        int64 for integer and bool inputs, the input's dtype for floats. A fully
        masked-out slice gives 0 (the identity).

        A dense input gives an array. A sparse input keeps its layout, as in
        torch.masked: a :class:`SparseCOO` of the result's shape (a CSR or CSC input
        gives a CSR or CSC when the result keeps two dimensions, ``keepdim=True``; a
        CSF input a CSF). It stores every cell a stored, masked-in element reduces into,
        and any other cell with a masked-in element whose value is not zero; fully
        masked-out cells are unspecified, so its ``to_dense()`` reads 0 there where
        ``dense=True`` gives the identity. A Jagged reduced over inner dimensions only
        gives a Jagged of the same rows; reduced over its rows or their lengths, an
        array. A reduction over every dimension gives a 0-d array.

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

    On the device (a CuPy array, a sparse tensor or Jagged there) the result is a
    CuPy array. A dense input synchronises nothing; a sparse or jagged input reads
    back what its layout needs (a CSR's ``indptr`` ends, a Jagged's longest row,
    whether it is canonical), and a sparse or jagged mask the number of its True
    elements. Every op of this module does the same (see docs/masked-reductions.md).

    Examples
    --------
    >>> csr = asp.SparseCSR([0, 2, 2, 3], [0, 2, 1], np.array([1.0, 2.0, 3.0]), (3, 3))
    >>> asp.masked.sum(csr, 1, dense=True)
    array([3., 0., 3.])
    >>> per_row = asp.masked.sum(csr, 1)  # row 1 stores nothing
    >>> per_row
    SparseCOO(shape=(3,), nnz=2, dtype=float64)
    >>> per_row.indices, per_row.values
    (array([[0, 2]]), array([3., 3.]))
    >>> asp.masked.sum(csr, 1, keepdim=True)
    SparseCSR(shape=(3, 1), nnz=2, dtype=float64)
    >>> asp.masked.sum(csr, 0, mask=np.array([True, False, True]), dense=True)
    array([1., 0., 2.])
    """
    p, total = _prepared_total("masked.sum", input, dim, mask)
    return p.finish(_sum_result(total, p.dtype), keepdim, dense=dense)


@fill_doc(_REDUCTION, name="prod", see_also="numpy.prod",
          returns="int64 for integer and bool inputs, the input's dtype for floats. A fully "
                  "masked-out slice gives 1; a masked-in unspecified element makes it 0.",
          stored="array([  6., 336.,  18.])", dense="array([  0., 336.,   0.])",
          none="array([1., 1., 1.])")
def prod(input: Any, dim: Any = None, *, keepdim: bool = False, mask: Any = None,
        dense: bool = False) -> Any:
    """Product of the masked-in elements."""
    p = prepare("masked.prod", input, dim, mask)
    if isinstance(p, Strided):
        out = p.reduce("prod", p.fill(1), dtype=_acc_dtype(p.dtype))
    else:
        out = p.xp.ones(p.num_cells, dtype=_acc_dtype(p.dtype))
        p.k("masked_prod")(p.cell, p.vals, p.inm, out)
        with np.errstate(invalid="ignore"):  # inf * 0 is NaN, as in the dense product
            out = p.xp.where(p.zeros_in > 0, out * 0, out)
    return p.finish(_sum_result(out, p.dtype), keepdim, dense=dense)


@fill_doc(_EXTREME, name="amax", empty="-inf", bound="minimum",
          build="asp.SparseCOO([[0, 1], [1, 0]], np.array([-1.0, -2.0]), (2, 2))",
          unmasked="array([0., 0.])", masked="array([-1., -2.])", none="array([-inf, -inf])")
def amax(input: Any, dim: Any = None, *, keepdim: bool = False, mask: Any = None,
        dense: bool = False) -> Any:
    """Maximum of the masked-in elements."""
    p = prepare("masked.amax", input, dim, mask)
    return p.finish(_extreme(p, "max"), keepdim, dense=dense)


@fill_doc(_EXTREME, name="amin", empty="inf", bound="maximum",
          build="asp.SparseCOO([[0, 1], [1, 0]], np.array([1.0, 2.0]), (2, 2))",
          unmasked="array([0., 0.])", masked="array([1., 2.])", none="array([inf, inf])")
def amin(input: Any, dim: Any = None, *, keepdim: bool = False, mask: Any = None,
        dense: bool = False) -> Any:
    """Minimum of the masked-in elements."""
    p = prepare("masked.amin", input, dim, mask)
    return p.finish(_extreme(p, "min"), keepdim, dense=dense)


def _arg(func: str, op: str, input: Any, dim: Any, keepdim: bool, mask: Any) -> np.ndarray:
    if isinstance(dim, (tuple, list)):
        msg = f"{func}: dim must be None or an int, got {dim!r}"
        raise ArrowSparseTypeError(msg)
    p = prepare(func, input, dim, mask)
    if p.slice_size == 0:
        msg = f"{func}: cannot take the {op} index of an empty slice (dim={dim})"
        raise ArrowSparseValueError(msg)
    ident = _identity(op, p.dtype)
    if isinstance(p, Strided):  # numpy picks the first NaN, as the entries path does
        filled = p.fill(ident)
        pick = filled.argmax if op == "max" else filled.argmin
        axis = None if dim is None else p.dims[0]
        return p.finish(pick(axis=axis, keepdims=True).astype(np.int64), keepdim)
    xp = p.xp
    zeros, outs = p.zeros_in > 0, p.out_in > 0
    combine = xp.maximum if op == "max" else xp.minimum
    best = xp.where(outs, combine(_extreme(p, op), ident), _extreme(p, op))
    out = xp.full(p.num_cells, p.slice_size, dtype=np.int64)
    p.k("masked_first_best")(p.cell, p.pos, p.vals, p.inm, p.dtype.type(ident), best, out)
    if fetch(func, (zeros | outs).any())[0]:
        # the first unstored position per cell that is masked in (a zero), or out
        skeys = xp.sort(p.cell * p.slice_size + p.pos)
        first_zero = xp.zeros(p.num_cells, dtype=np.int64)
        first_out = xp.zeros(p.num_cells, dtype=np.int64)
        if p.mask_kind == "none":  # every unstored position is masked in
            p.k("first_unstored")(skeys[:0], skeys, p.slice_size, first_out, first_zero)
        else:
            first_zero[:] = p.slice_size
            p.k("first_unstored")(p.mask_keys(), skeys, p.slice_size, first_zero, first_out)
        out = xp.where(zeros & (best == 0), xp.minimum(out, first_zero), out)
        out = xp.where(outs & (best == ident), xp.minimum(out, first_out), out)
    return p.finish(out, keepdim)


@fill_doc(_ARG_EXTREME, name="argmax", empty="-inf",
          build="asp.SparseCSR([0, 2, 3], [0, 2, 1], np.array([-1.0, -2.0, 3.0]), (2, 3))",
          unmasked="array([1, 1])", masked="array([0, 1])")
def argmax(input: Any, dim: Any = None, *, keepdim: bool = False,
           mask: Any = None) -> np.ndarray:
    """Index of the first maximum, masked-out elements counting as ``-inf``."""
    return _arg("masked.argmax", "max", input, dim, keepdim, mask)


@fill_doc(_ARG_EXTREME, name="argmin", empty="inf",
          build="asp.SparseCSR([0, 2, 3], [0, 2, 1], np.array([1.0, 2.0, -3.0]), (2, 3))",
          unmasked="array([1, 1])", masked="array([0, 1])")
def argmin(input: Any, dim: Any = None, *, keepdim: bool = False,
           mask: Any = None) -> np.ndarray:
    """Index of the first minimum, masked-out elements counting as ``inf``."""
    return _arg("masked.argmin", "min", input, dim, keepdim, mask)


@fill_doc(_REDUCTION, name="mean", see_also="numpy.mean",
          returns="The input's float dtype (float64 for integers and bools). A fully "
                  "masked-out slice gives NaN.",
          stored="array([2.  , 4.75, 4.5 ])", dense="array([1.5 , 4.75, 2.25])",
          none="array([nan, nan, nan])")
def mean(input: Any, dim: Any = None, *, keepdim: bool = False, mask: Any = None,
        dense: bool = False) -> Any:
    """Mean of the masked-in elements: their sum over their count."""
    p, total = _prepared_total("masked.mean", input, dim, mask)
    return p.finish(_mean(total, p).astype(_float_dtype(p.dtype)), keepdim, dense=dense)


def _var(func: str, input: Any, dim: Any, unbiased: bool | None, correction: Any,
         mask: Any) -> tuple[Problem | Strided, np.ndarray]:
    if unbiased is not None and correction is not None:
        msg = f"{func}: give only one of unbiased and correction"
        raise ArrowSparseValueError(msg)
    corr = 1.0 if unbiased is None else float(v.check_bool(func, "unbiased", unbiased))
    if correction is not None:
        if isinstance(correction, bool) or not isinstance(correction, (int, float, np.number)):
            msg = f"{func}: correction must be a number, got {correction!r}"
            raise ArrowSparseTypeError(msg)
        corr = float(correction)
    p = prepare(func, input, dim, mask)
    m = _mean(_total(p, _acc_dtype(p.dtype)), p)
    xp = p.xp
    with np.errstate(invalid="ignore", divide="ignore"):
        if isinstance(p, Strided):
            dev = p.fill(0.0, p.x - m)
            ssd = p.reduce("sum", dev * dev)
        else:
            ssd = xp.zeros(p.num_cells, dtype=np.float64)
            p.k("masked_sum_sq_dev")(p.cell, p.vals, p.inm, m, ssd)
            ssd += xp.where(p.zeros_in > 0, p.zeros_in * m * m, 0.0)
        return p, ssd / xp.maximum(p.count_in - corr, 0.0)


def var(input: Any, dim: Any = None, *, unbiased: bool | None = None, keepdim: bool = False,
        correction: float | None = None, mask: Any = None,
        dense: bool = False) -> Any:
    """Variance of the masked-in elements (torch's default: Bessel-corrected).

    Parameters
    ----------
    input, dim, keepdim, mask, dense
        As for :func:`sum`.
    unbiased
        True (divide by ``count - 1``, the default) or False (by ``count``).
    correction
        Divide by ``max(count - correction, 0)`` instead; not with ``unbiased``.

    Returns
    -------
    numpy.ndarray, sparse tensor or Jagged
        The input's float dtype (float64 for integers). A fully masked-out slice, or
        one with ``count <= correction``, gives NaN (``inf`` when the deviations are
        non-zero and the denominator is 0, as in torch). The layout follows the
        input's, as for :func:`sum`.

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
    return p.finish(out.astype(_float_dtype(p.dtype)), keepdim, dense=dense)


def std(input: Any, dim: Any = None, *, unbiased: bool | None = None, keepdim: bool = False,
        correction: float | None = None, mask: Any = None,
        dense: bool = False) -> Any:
    """Return the standard deviation of the masked-in elements, the root of :func:`var`.

    Parameters
    ----------
    input, dim, keepdim, mask, dense
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
    return p.finish(p.xp.sqrt(out).astype(_float_dtype(p.dtype)), keepdim, dense=dense)


def norm(input: Any, ord: float = 2.0, dim: Any = None, *,  # noqa: A002 - torch's name
         keepdim: bool = False, mask: Any = None,
        dense: bool = False) -> Any:
    """Vector norm of the masked-in elements (``torch.linalg.vector_norm``).

    Parameters
    ----------
    input, dim, keepdim, mask, dense
        As for :func:`sum`.
    ord
        ``inf`` (max of absolute values), ``-inf`` (min), 0 (count of non-zeros) or
        any other real ``p``: ``sum(|x| ** p) ** (1 / p)``.

    Returns
    -------
    numpy.ndarray, sparse tensor or Jagged
        The input's float dtype (float64 for integers). Masked-out elements count as
        the identity 0 (``inf`` for ``ord=-inf``), as in torch: a fully masked-out
        slice gives 0 (``inf`` for ``ord=-inf``), and for ``ord < 0`` any masked-out
        element makes the norm 0. The layout follows the input's, as for :func:`sum`.

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
    >>> asp.masked.norm(csr, 2, 1, dense=True)
    array([5., 1.])
    >>> asp.masked.norm(csr, float("inf"), 0).to_dense()
    array([3., 1., 4.])
    """
    func = "masked.norm"
    if isinstance(ord, bool) or not isinstance(ord, (int, float, np.number)):
        msg = f"{func}: ord must be a number, got {ord!r}"
        raise ArrowSparseTypeError(msg)
    ordf = float(ord)
    p = prepare(func, input, dim, mask)
    out = _norm_strided(p, ordf) if isinstance(p, Strided) else _norm_entries(p, ordf)
    return p.finish(out.astype(_float_dtype(p.dtype)), keepdim, dense=dense)


def _norm_strided(p: Strided, ordf: float) -> np.ndarray:
    a = abs(p.x.astype(np.float64))
    if math.isinf(ordf):
        ident = 0.0 if ordf > 0 else np.inf
        return p.extreme("max" if ordf > 0 else "min", p.fill(ident, a), ident)
    if ordf == 0:
        return p.reduce("sum", p.fill(0.0, a) != 0, dtype=np.float64)
    with np.errstate(divide="ignore", over="ignore"):
        return p.reduce("sum", p.fill(0.0, a) ** ordf) ** (1.0 / ordf)


def _norm_entries(p: Problem, ordf: float) -> np.ndarray:
    xp = p.xp
    if math.isinf(ordf):
        absvals = abs(p.vals.astype(np.float64))
        out = xp.full(p.num_cells, 0.0 if ordf > 0 else np.inf)
        p.k("masked_max" if ordf > 0 else "masked_min")(p.cell, absvals, p.inm, out)
        if ordf < 0:  # a NaN stays
            out = xp.where(p.zeros_in > 0, xp.minimum(out, 0.0), out)
        return out
    if ordf == 0:
        count = xp.zeros(p.num_cells, dtype=np.int64)
        p.k("masked_count_nonzero")(p.cell, p.vals, p.inm, count)
        return count
    total = xp.zeros(p.num_cells, dtype=np.float64)
    p.k("masked_sum_abs_pow")(p.cell, p.vals, p.inm, ordf, total)
    with np.errstate(divide="ignore", over="ignore"):
        if ordf < 0:  # 0 ** p
            total = xp.where((p.zeros_in > 0) | (p.count_in < p.slice_size), total + np.inf,
                             total)
        return total ** (1.0 / ordf)


@fill_doc(_REDUCTION, name="logsumexp", see_also="scipy.special.logsumexp",
          returns="The input's float dtype (float64 for integers). A fully masked-out slice "
                  "gives ``-inf``.",
          stored="array([3.40760596, 7.3537538 , 6.04858735])",
          dense="array([3.4401897 , 7.3537538 , 6.05329863])", none="array([-inf, -inf, -inf])")
def logsumexp(input: Any, dim: Any = None, *, keepdim: bool = False,
              mask: Any = None,
        dense: bool = False) -> Any:
    """``log(sum(exp(x)))`` of the masked-in elements, computed stably."""
    p = prepare("masked.logsumexp", input, dim, mask)
    xp = p.xp
    if isinstance(p, Strided):
        a = p.fill(-np.inf, p.x.astype(np.float64))
        shift = p.extreme("max", a, -np.inf)
        shift = xp.where(xp.isfinite(shift), shift, 0.0)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            out = xp.log(p.reduce("sum", xp.exp(a - shift))) + shift
        return p.finish(out.astype(_float_dtype(p.dtype)), keepdim, dense=dense)
    vals = p.vals.astype(np.float64, copy=False)
    shift = xp.full(p.num_cells, -np.inf)
    p.k("masked_max")(p.cell, vals, p.inm, shift)
    zeros = p.zeros_in
    shift = xp.where(zeros > 0, xp.maximum(shift, 0.0), shift)
    shift = xp.where(xp.isfinite(shift), shift, 0.0)
    total = xp.zeros(p.num_cells, dtype=np.float64)
    p.k("masked_sum_exp")(p.cell, vals, p.inm, shift, total)
    with np.errstate(divide="ignore", over="ignore"):
        total += zeros * xp.exp(-xp.maximum(shift, 0.0))  # shift >= 0 where zeros > 0
        out = xp.log(total) + shift
    return p.finish(out.astype(_float_dtype(p.dtype)), keepdim, dense=dense)


# --------------------------------------------------------------------------- normalizations
def _dense_masked(func: str, input: Any, dim: Any, mask: Any
                  ) -> tuple[Strided, np.ndarray, np.dtype]:
    """Return the dense view's problem, its masked-out elements ``-inf`` (float64)."""
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        msg = f"{func}: dim must be an int, got {dim!r}"
        raise ArrowSparseTypeError(msg)
    p = dense_view(func, input, dim, mask)
    return p, p.fill(-np.inf, p.x.astype(np.float64)), _float_dtype(p.dtype)


def _shifted(p: Strided, x: np.ndarray) -> np.ndarray:
    """``x`` minus its maximum along the normalised dimension (``-inf`` where empty)."""
    return x - p.extreme("max", x, -np.inf)


@fill_doc(_NORMALIZE, see_also="torch.masked.softmax, segment_softmax",
          call="asp.masked.softmax(np.array([[0.0, 0.0, 5.0]]), 1, "
               "mask=np.array([True, True, False]))",
          result="array([[0.5, 0.5, 0. ]])")
def softmax(input: Any, dim: int, *, mask: Any = None) -> np.ndarray:
    """Softmax along ``dim`` with masked-out elements as ``-inf`` (they come out 0)."""
    p, x, dt = _dense_masked("masked.softmax", input, dim, mask)
    with np.errstate(invalid="ignore"):
        e = p.xp.exp(_shifted(p, x))
        return (e / p.reduce("sum", e)).astype(dt)


@fill_doc(_NORMALIZE, see_also="torch.masked.log_softmax",
          call="asp.masked.log_softmax(asp.Jagged.from_list([[0.0, 0.0]]), 1)",
          result="array([[-0.69314718, -0.69314718]])")
def log_softmax(input: Any, dim: int, *, mask: Any = None) -> np.ndarray:
    """Log of :func:`softmax`; masked-out elements come out ``-inf``."""
    p, x, dt = _dense_masked("masked.log_softmax", input, dim, mask)
    with np.errstate(invalid="ignore", divide="ignore"):
        shifted = _shifted(p, x)
        return (shifted - p.xp.log(p.reduce("sum", p.xp.exp(shifted)))).astype(dt)

