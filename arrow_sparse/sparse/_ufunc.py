"""numpy ufuncs on sparse tensors (``np.sin(coo)``, ``a + b``, ``2 * csr``): NEP 13's protocol.

A ufunc gives a sparse result only where the unspecified elements stay zeros:

- one sparse input: the ufunc must map 0 to 0 (``sin``, ``tanh``, ``sqrt``, ``abs``,
  ``negative``, ``expm1``, ``isnan``, ...); it is applied to the stored values of the
  canonical form, which keeps the format. ``cos`` or ``exp`` (``f(0) != 0``) raise and
  say to densify first;
- a sparse tensor and a scalar ``s``: ``f(0, s)`` must be 0 (``x * 2``, ``x / 4``,
  ``x ** 2``); ``x + 1`` raises;
- two sparse tensors of one shape: ``f(0, 0)`` must be 0. ``multiply``,
  ``logical_and`` and ``bitwise_and`` keep the intersection of the two patterns, every
  other such ufunc (``add``, ``subtract``, ``maximum``, ...) the union, the missing side
  taken as 0. The result has the first sparse operand's format;
- a sparse tensor and a dense array: ``multiply`` keeps the sparse pattern (the array
  broadcast to the tensor's shape, as :meth:`SparseCOO.multiply`); any other ufunc gives
  the dense array ``f(x.to_dense(), array)``, as scipy does for ``+``; ``matmul`` is
  the sparse matrix product.

The check of ``f(0) == 0`` runs the ufunc on a zero of the values' dtype (on the host,
whatever the device). Only ``method="__call__"`` without ``out=`` or ``where=`` is
supported. Device tensors stay on the device (CuPy applies the ufunc to CuPy values).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._backend import array_module, is_cupy_array, module_of
from ..errors import ArrowSparseTypeError, ArrowSparseValueError
from . import _common as cm
from .coo import SparseCOO
from .tensor import UFUNC_PROTOCOL, SparseTensor

__all__ = ["apply_ufunc"]

#: Binary ufuncs whose result is zero wherever either operand is: the intersection.
_INTERSECTING = frozenset({np.multiply, np.logical_and, np.bitwise_and})


def _require_zero(func: str, compute: Callable[[], Any], refused: str, dense: str) -> None:
    """Raise unless ``compute()``, the ufunc on zeros, is zero everywhere (NaN is not).

    A TypeError of the ufunc becomes the library's, ``refused`` saying what it refused;
    a non-zero result the ValueError ``dense``.
    """
    try:
        with np.errstate(all="ignore"):
            zero = bool(np.all(np.asarray(compute()) == 0))
    except TypeError as exc:
        msg = f"{func}: {refused} ({exc})"
        raise ArrowSparseTypeError(msg) from None
    if not zero:
        msg = f"{func}: {dense}"
        raise ArrowSparseValueError(msg)


def _name(ufunc: np.ufunc) -> str:
    return f"numpy.{ufunc.__name__}"


def _on(values: Any, ufunc: np.ufunc) -> Callable[..., Any]:
    """``ufunc`` of the values' array module (CuPy's twin on the device)."""
    if not is_cupy_array(values):
        return ufunc
    twin = getattr(module_of(values), ufunc.__name__, None)
    if twin is None:
        msg = f"{_name(ufunc)}: the array module of the device has no {ufunc.__name__}"
        raise ArrowSparseTypeError(msg)
    return twin  # type: ignore[no-any-return]


def apply_ufunc(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Any:
    """Apply ``ufunc`` to ``inputs``, one of which at least is a sparse tensor."""
    # CuPy hands over its own ufuncs (``cupy_add``); numpy's twin says what to do
    ufunc = getattr(np, ufunc.__name__.removeprefix("cupy_"), ufunc)
    func = _name(ufunc)
    if method != "__call__":
        msg = (f"{func}.{method}: not supported on sparse tensors (only direct calls "
               f"such as {func}(x, y)); densify first with to_dense()")
        raise ArrowSparseTypeError(msg)
    for key in ("out", "where"):
        if key in kwargs:
            msg = f"{func}: {key}= is not supported on sparse tensors"
            raise ArrowSparseTypeError(msg)
    if ufunc is np.matmul:
        left, right = inputs
        return left.matmul(right) if isinstance(left, SparseTensor) else \
            right.__rmatmul__(left)
    if ufunc.nin == 1:
        return _unary(func, ufunc, inputs[0], kwargs)
    left, right = inputs
    if isinstance(left, SparseTensor) and isinstance(right, SparseTensor):
        return _sparse_sparse(func, ufunc, left, right, kwargs)
    sparse_first = isinstance(left, SparseTensor)
    x, other = (left, right) if sparse_first else (right, left)

    def call(values: Any, operand: Any) -> Any:
        f = _on(values, ufunc)
        return f(values, operand, **kwargs) if sparse_first else f(operand, values, **kwargs)

    if isinstance(other, (int, float, complex, bool, np.generic)) or \
            (isinstance(other, np.ndarray) and other.ndim == 0):
        if ufunc is np.multiply:  # linear: duplicates and the layout stay as they are
            return x.multiply(other)
        return _sparse_scalar(func, x, other, call)
    if isinstance(other, np.ndarray) or is_cupy_array(other):
        if ufunc is np.multiply:
            return x.multiply(other)
        array_module(func, values=x.values, other=other)
        return call(x.to_dense(), other)
    msg = (f"{func}: cannot combine a {type(x).__name__} with {type(other).__name__}; "
           "pass a number, an array or a sparse tensor")
    raise ArrowSparseTypeError(msg)


def _with_values(x: SparseTensor, values: np.ndarray) -> SparseTensor:
    """``x``'s structure (shared) holding ``values``."""
    old = x.values
    return x._map(lambda a: values if a is old else a)  # type: ignore[no-any-return]


def _unary(func: str, ufunc: np.ufunc, x: SparseTensor, kwargs: dict[str, Any]) -> Any:
    _require_zero(func, lambda: ufunc(np.zeros(1, dtype=x.dtype), **kwargs),
                  f"does not take {x.dtype} values",
                  f"f(0) is not 0, so the result of a {type(x).__name__} would be dense; "
                  f"densify explicitly: {func}(x.to_dense())")
    x = x.canonical()  # duplicates summed first: f(a) + f(b) is not f(a + b)
    return _with_values(x, _on(x.values, ufunc)(x.values, **kwargs))


def _sparse_scalar(func: str, x: SparseTensor, scalar: Any,
                   call: Callable[[Any, Any], Any]) -> SparseTensor:
    _require_zero(func, lambda: call(np.zeros(1, dtype=x.dtype), scalar),
                  f"cannot combine {x.dtype} values with {scalar!r}",
                  f"with {scalar!r} the unspecified zeros would not stay zero, so the "
                  f"result would be dense; densify explicitly (x.to_dense())")
    x = x.canonical()
    return _with_values(x, call(x.values, scalar))


def _sparse_sparse(func: str, ufunc: np.ufunc, left: SparseTensor, right: SparseTensor,
                   kwargs: dict[str, Any]) -> SparseTensor:
    if tuple(left.shape) != tuple(right.shape):
        msg = (f"{func}: sparse tensors of shapes {tuple(left.shape)} and "
               f"{tuple(right.shape)}; sparse operands must have one shape")
        raise ArrowSparseValueError(msg)
    xp = array_module(func, left=left.values, right=right.values)
    zeros = (np.zeros(1, dtype=left.dtype), np.zeros(1, dtype=right.dtype))
    _require_zero(func, lambda: ufunc(*zeros, **kwargs),
                  f"cannot combine {left.dtype} and {right.dtype} values",
                  f"f(0, 0) is not 0, so the result would be dense; densify explicitly: "
                  f"{func}(a.to_dense(), b.to_dense())")
    a, b = left.to_coo().canonical(), right.to_coo().canonical()
    shape = tuple(left.shape)
    ka, kb = (cm.ravel_coords([t.indices[k] for k in range(t.ndim)], shape) if shape
              else xp.zeros(t.nnz, np.int64) for t in (a, b))
    if ufunc in _INTERSECTING:
        where = xp.minimum(xp.searchsorted(kb, ka), max(len(kb) - 1, 0))
        hit = kb[where] == ka if len(kb) else xp.zeros(len(ka), dtype=bool)
        keys, va, vb = ka[hit], a.values[hit], b.values[where[hit]]
    else:
        keys = xp.unique(xp.concatenate([ka, kb]))
        va = xp.zeros(len(keys), dtype=a.dtype)
        vb = xp.zeros(len(keys), dtype=b.dtype)
        va[xp.searchsorted(keys, ka)] = a.values
        vb[xp.searchsorted(keys, kb)] = b.values
    with np.errstate(all="ignore"):  # as numpy's dense ufunc: inf - inf is a result
        values = _on(va, ufunc)(va, vb, **kwargs)
    indices = xp.stack(cm.unravel(keys, shape)) if shape else xp.zeros((0, len(keys)), np.int64)
    out = SparseCOO._new(indices.astype(np.int64, copy=False), values, shape, canonical=True)
    return out if left.format == "coo" else out._convert(left.format)


UFUNC_PROTOCOL["apply"] = apply_ufunc
