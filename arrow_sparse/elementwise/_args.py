"""Shared machinery of the jagged arithmetic modules.

Reading inputs, answering in the input's form, walking the jagged levels, masking
hidden values, word-wise copies. The helpers take numpy or CuPy arrays (the kernels come
from the inputs' array module) unless their docstring says "host": those read offsets
(row windows), which the device paths (:mod:`arrow_sparse.elementwise._device`) avoid.

Private: :mod:`arrow_sparse.elementwise` holds the public functions.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa

from .. import _arrow
from .. import _validate as v
from .._backend import array_module, get_kernel, is_cupy_array, module_of
from .._offsets import ids_to_offsets
from ..errors import ArrowSparseTypeError, ArrowSparseValueError
from ..jagged import Jagged

_INT32_MAX = int(np.iinfo(np.int32).max)
_INT64_MAX = int(np.iinfo(np.int64).max)
_VALUES_KINDS = ("values", "arrow_values")

Window = tuple[Jagged, int, int]


# =============================================================================== helpers
def _is_array(x: Any) -> bool:
    return isinstance(x, np.ndarray) or is_cupy_array(x)


def _is_list_array(x: Any) -> bool:
    return isinstance(x, (pa.Array, pa.ChunkedArray)) and _arrow.is_list_type(x.type)


def _as_jagged(func: str, data: Any, offsets: Any, arg: str = "data") -> tuple[Jagged, str]:
    """Read ``data`` as a Jagged; return it and the kind of input to answer with."""
    data = _arrow.as_arrow(data)
    if isinstance(data, Jagged) or _is_list_array(data):
        if offsets is not None:
            what = "a Jagged" if isinstance(data, Jagged) else "an Arrow list array"
            msg = f"{func}: offsets must be None when {arg} is {what} (it carries its own)"
            raise ArrowSparseTypeError(msg)
        if isinstance(data, Jagged):
            return data, "jagged"
        kind = "chunked" if isinstance(data, pa.ChunkedArray) else "arrow"
        return Jagged._from_arrow(func, arg, data), kind
    if offsets is None:
        msg = (f"{func}: {arg} must be a Jagged or an Arrow list array, or a values array "
               f"with offsets, got {type(data).__name__}")
        raise ArrowSparseTypeError(msg)
    array_module(func, **{arg: data, "offsets": offsets})
    vals = v.as_values_array(func, arg, data, device=True)
    offs = v.check_offsets(func, "offsets", offsets, len(vals), device=True)
    kind = "arrow_values" if isinstance(data, (pa.Array, pa.ChunkedArray)) else "values"
    return Jagged._trusted(vals, offs), kind


def _finish(j: Jagged, kind: str) -> Any:
    """Answer in the kind of the input (values kinds: the values, same length as given)."""
    if kind == "jagged":
        return j
    if kind == "arrow":
        return j.to_arrow()
    if kind == "chunked":
        return pa.chunked_array([j.to_arrow()])
    return pa.array(j.values) if kind == "arrow_values" else j.values


def _finish_rows(j: Jagged, kind: str) -> Any:
    """Like :func:`_finish`, but values kinds get ``(values, offsets)``: the rows changed."""
    if kind not in _VALUES_KINDS:
        return _finish(j, kind)
    if kind == "arrow_values":
        return pa.array(j.values), pa.array(j.offsets)
    return j.values, j.offsets


def _chunkwise(data: pa.ChunkedArray, fn: Callable[[pa.Array], pa.Array]) -> pa.ChunkedArray:
    """Apply a row-local function chunk by chunk."""
    chunks = data.chunks or [pa.array([], type=data.type)]
    out = [fn(chunk) for chunk in chunks]
    if data.num_chunks == 0:
        return pa.chunked_array([], type=out[0].type)
    return pa.chunked_array(out)


def _is_chunked_list(data: Any) -> bool:
    return isinstance(data, pa.ChunkedArray) and _is_list_array(data)


def _i64(offsets: np.ndarray) -> np.ndarray:
    return offsets if offsets.dtype == np.int64 else offsets.astype(np.int64)


def _u8(mask: np.ndarray | None) -> np.ndarray | None:
    return None if mask is None else module_of(mask).ascontiguousarray(mask).view(np.uint8)


def _zeros(func: str, shape: tuple[int, ...], dtype: Any, xp: ModuleType = np) -> np.ndarray:
    v.check_nbytes(func, "the result", shape, np.dtype(dtype).itemsize)
    try:
        return xp.zeros(shape, dtype=dtype)  # type: ignore[no-any-return]
    except ValueError:
        msg = f"{func}: the result of shape {shape} is too large to allocate"
        raise ArrowSparseValueError(msg) from None


def _max_length(func: str, max_length: Any) -> int:
    if max_length is None:
        return _INT64_MAX
    return min(v.check_count(func, "max_length", max_length), _INT64_MAX)


def _levels(j: Jagged) -> list[Jagged]:
    """List the jagged levels of ``j``, outermost first (one Jagged per level)."""
    levels = [j]
    while isinstance(levels[-1].values, Jagged):
        levels.append(levels[-1].values)
    return levels


def _windows(j: Jagged) -> tuple[list[Window], tuple[int, int]]:
    """Each level with the rows the top level addresses, and the leaf values window (host)."""
    wins: list[Window] = []
    lo, hi = 0, j.num_rows
    node = j
    while True:
        wins.append((node, lo, hi))
        lo, hi = int(node.offsets[lo]), int(node.offsets[hi])
        if not isinstance(node.values, Jagged):
            return wins, (lo, hi)
        node = node.values


def _leaf_offsets(levels: list[Jagged]) -> np.ndarray:
    """Offsets of the top rows straight into the leaf values (levels composed)."""
    comp = levels[0].offsets
    for node in levels[1:]:
        comp = node.offsets[comp]
    return _i64(comp)


def _check_levels(func: str, arg: str, levels: list[Jagged], olevels: list[Jagged]) -> None:
    """Compare two Jaggeds' shapes, the O(1) part of comparing rows: levels and rows."""
    if len(olevels) != len(levels):
        msg = f"{func}: {arg} has {len(olevels)} jagged levels but the Jagged has {len(levels)}"
        raise ArrowSparseValueError(msg)
    if olevels[0].num_rows != levels[0].num_rows:
        msg = (f"{func}: {arg} has {olevels[0].num_rows} rows but the Jagged has "
               f"{levels[0].num_rows}")
        raise ArrowSparseValueError(msg)


def _same_structure(func: str, arg: str, wins: list[Window], other: Jagged
                    ) -> tuple[list[Window], tuple[int, int]]:
    """Check that ``other`` has the rows of ``wins`` at every level; return its windows (host).

    The offsets may start elsewhere: lengths are compared, level by level.
    """
    _check_levels(func, arg, [node for node, _, _ in wins], _levels(other))
    owins, leaf = _windows(other)
    for level, ((node, lo, hi), (onode, olo, ohi)) in enumerate(zip(wins, owins, strict=True)):
        mine = _i64(node.offsets[lo:hi + 1])
        theirs = _i64(onode.offsets[olo:ohi + 1])
        mine, theirs = mine - mine[0], theirs - theirs[0]
        differ = mine != theirs
        if differ.any():
            pos = v.first_true(differ)
            name = f"{arg} offsets" if level == 0 else f"{arg} offsets (level {level})"
            v.fail_value(func, name, "differ from the Jagged's, counted from each one's first "
                         "offset", pos, f"{theirs[pos]} != {mine[pos]}")
    return owins, leaf


def _and_mask(mine: np.ndarray | None, size: int, lo: int, hi: int,
              theirs: np.ndarray | None, tlo: int) -> np.ndarray | None:
    """``mine`` with ``[lo, hi)`` ANDed with ``theirs[tlo:...]`` (None = all True; host)."""
    if theirs is None:
        return mine
    part = theirs[tlo:tlo + hi - lo]
    if part.all():
        return mine
    out = np.ones(size, dtype=bool) if mine is None else mine.copy()
    out[lo:hi] &= part
    return out


def _rebuild(wins: list[Window], window: np.ndarray, start: int,
             validities: list[np.ndarray | None], values_validity: np.ndarray | None,
             min_len: int = 0) -> Jagged:
    """Build a Jagged with the offsets of ``wins`` (shared) and leaf ``window`` at ``start``.

    The leaf buffer is ``window`` itself when it starts at 0 and ends at the last
    offset; otherwise a zero-filled buffer holding it (the rows never read the zeros).
    Host: the last offset is read.
    """
    last = wins[-1][0]
    total = max(int(last.offsets[-1]), min_len)
    if start == 0 and len(window) == total:
        leaf = window
    else:
        leaf = np.zeros((total,) + window.shape[1:], dtype=window.dtype)
        leaf[start:start + len(window)] = window
    vv = None if values_validity is None else values_validity[:total]
    return _rebuild_whole([node for node, _, _ in wins], leaf, validities, vv)


def _rebuild_whole(levels: list[Jagged], leaf: Any, validities: list[Any],
                   values_validity: Any) -> Jagged:
    """Build a Jagged with the offsets of ``levels`` (shared), ``validities`` and ``leaf``.

    ``leaf`` (numpy or CuPy) stands where the leaf values of ``levels`` were: the rows
    address the same positions of it. Nothing is read.
    """
    node = Jagged._trusted(leaf, levels[-1].offsets, validities[-1], values_validity)
    for level, validity in zip(levels[-2::-1], validities[-2::-1], strict=True):
        node = Jagged._trusted(node, level.offsets, validity)
    return node


def _visible_rows(wins: list[Window], validities: list[np.ndarray | None]
                  ) -> list[np.ndarray | None]:
    """Per level, which rows of its window are visible (None: all of them; host).

    A row is visible when it is valid and every row above it is: Arrow allows a null
    row to cover a non-empty range, whose rows and values are then never read.
    """
    masks: list[np.ndarray | None] = []
    inherited: np.ndarray | None = None
    for (node, lo, hi), valid in zip(wins, validities, strict=True):
        mask = inherited
        if valid is not None and not valid[lo:hi].all():
            mask = valid[lo:hi] if mask is None else mask & valid[lo:hi]
        masks.append(mask)
        if mask is not None:
            inherited = np.repeat(mask, np.diff(_i64(node.offsets[lo:hi + 1])))
    return masks


def _hidden_mask(wins: list[Window], validities: list[np.ndarray | None],
                 values_validity: np.ndarray | None, start: int, stop: int
                 ) -> np.ndarray | None:
    """Mask the visible values of the leaf window ``[start, stop)``; None when all are (host).

    Hidden: values under a null row at any level, and null values.
    """
    last = _visible_rows(wins, validities)[-1]
    keep = None
    if last is not None:
        node, lo, hi = wins[-1]
        keep = np.repeat(last, np.diff(_i64(node.offsets[lo:hi + 1])))
        if keep.all():
            keep = None
    if values_validity is not None:
        part = values_validity[start:stop]
        if not part.all():
            keep = part.copy() if keep is None else keep & part
    return keep


def _visible(fn: Callable[..., Any], args: list[Any], keep: np.ndarray | None) -> np.ndarray:
    """``fn(*args)`` on the visible positions only; hidden positions of the result are 0 (host).

    Arrow leaves the values under null rows and null elements unspecified: computing
    on them could raise floating-point warnings about values nobody sees.
    """
    if keep is None:
        return np.asarray(fn(*args))
    sub = [a[keep] if isinstance(a, np.ndarray) and a.ndim else a for a in args]
    part = np.asarray(fn(*sub))
    out = np.zeros((len(keep),) + part.shape[1:], dtype=part.dtype)
    out[keep] = part
    return out


def _as_words(arr: np.ndarray) -> np.ndarray:
    """``arr[N, ...]`` seen as ``[N, W]`` machine words (uint64 where the row size allows)."""
    xp = module_of(arr)
    arr = xp.ascontiguousarray(arr)
    width = int(np.prod(arr.shape[1:], dtype=np.int64))
    row_bytes = arr.dtype.itemsize * width
    if row_bytes == 0:
        return xp.empty((len(arr), 0), dtype=np.uint8)  # type: ignore[no-any-return]
    word = next(w for w in (8, 4, 2, 1) if row_bytes % w == 0)
    raw = arr.reshape(len(arr), width).view(np.uint8)
    return raw.view(np.dtype(f"u{word}"))  # type: ignore[no-any-return]


def _from_words(words: np.ndarray, dtype: np.dtype, inner: tuple[int, ...]) -> np.ndarray:
    if words.shape[1] == 0:
        return module_of(words).zeros((len(words),) + inner,  # type: ignore[no-any-return]
                                      dtype=dtype)
    return words.view(np.uint8).view(dtype).reshape((len(words),) + inner)


def _repeat(arr: np.ndarray, comp: np.ndarray, start: int, stop: int, *,
            covered: bool = True) -> np.ndarray:
    """``out[k - start] = arr[r]`` for every leaf position ``k`` of row ``r``.

    ``covered``: the rows cover ``[start, stop)`` (else the other positions are 0).
    """
    xp = module_of(arr)
    words = _as_words(arr)
    shape = (stop - start, words.shape[1])
    func = "expand_into_jagged"  # the one caller whose sizes come from the user alone
    out = v.empty(func, shape, words.dtype, xp) if covered else \
        _zeros(func, shape, words.dtype, xp)
    get_kernel("elementwise", "repeat_rows", xp)(words, comp, start, out)
    return _from_words(out, arr.dtype, arr.shape[1:])


def _segment_offsets(func: str, num_values: int, offsets: Any, lengths: Any,
                     segment_ids: Any) -> np.ndarray:
    which = v.check_exactly_one(func, offsets=offsets, lengths=lengths, segment_ids=segment_ids)
    if which == "offsets":
        return v.check_offsets(func, "offsets", offsets, num_values, device=True)
    if which == "lengths":
        return v.lengths_offsets(func, "lengths", lengths, num_values=num_values, device=True)[1]
    ids, n = v.check_sorted_segment_ids(func, "segment_ids", segment_ids, num_values,
                                        device=True)
    return ids_to_offsets(ids, n)  # type: ignore[no-any-return]


def _segments_input(func: str, data: Any, offsets: Any, lengths: Any,
                    segment_ids: Any) -> tuple[Jagged, str, int]:
    """(Jagged, kind, output length) for the ``segment_*`` functions."""
    if isinstance(data, Jagged) or _is_list_array(data):
        given = [n for n, x in (("offsets", offsets), ("lengths", lengths),
                                ("segment_ids", segment_ids)) if x is not None]
        if given:
            msg = f"{func}: {given[0]}= must be None when data carries its own rows"
            raise ArrowSparseTypeError(msg)
        j, kind = _as_jagged(func, data, None)
        return j, kind, 0
    array_module(func, data=data, offsets=offsets, lengths=lengths, segment_ids=segment_ids)
    vals = v.as_values_array(func, "data", data, device=True)
    offs = _segment_offsets(func, len(vals), offsets, lengths, segment_ids)
    kind = "arrow_values" if isinstance(data, (pa.Array, pa.ChunkedArray)) else "values"
    return Jagged._trusted(vals, offs), kind, len(vals)


def _map_innermost(j: Jagged, fn: Callable[[Jagged], Jagged]) -> Jagged:
    if isinstance(j.values, Jagged):
        return Jagged._trusted(_map_innermost(j.values, fn), j.offsets, j.validity)
    return fn(j)


def _window_as(values: np.ndarray, start: int, stop: int, dtype: np.dtype) -> np.ndarray:
    """``values[:stop]`` as 2-D ``dtype``; converting only ``[start, stop)`` when needed."""
    width = int(np.prod(values.shape[1:], dtype=np.int64))
    if values.dtype == dtype:
        return values[:stop].reshape(stop, width)
    out = module_of(values).zeros((stop, width), dtype=dtype)
    out[start:stop] = values[start:stop].reshape(stop - start, width)
    return out


def _float_dtype(dtype: np.dtype) -> np.dtype:
    """Return the float dtype a kernel computes in (float16 widens to float32)."""
    if dtype == np.float16:
        return np.dtype(np.float32)
    return dtype if dtype in (np.float32, np.float64) else np.dtype(np.float64)


def _arith_dtype(func: str, *dtypes: np.dtype) -> np.dtype:
    dtype = np.result_type(*dtypes)
    if dtype.kind not in "iuf":
        names = " and ".join(str(d) for d in dtypes)
        msg = f"{func}: values must be integers or floats, got {names}"
        raise ArrowSparseTypeError(msg)
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def _half_back(out: Any, *dtypes: np.dtype) -> Any:
    """``out`` back in float16 when the operands promote to float16 (FBGEMM's dtype).

    The kernels compute float16 operands in float32; the FBGEMM-named functions answer
    in the operands' dtype as FBGEMM does, rounding once at the end.
    """
    if np.result_type(*dtypes) == np.float16:
        return out.astype(np.float16)
    return out


def _with_offsets(values: Any, offsets: list[Any], kind: str) -> tuple[Any, list[Any]]:
    """FBGEMM's ``(values, offsets)`` answer of a values input (Arrow values: Arrow arrays)."""
    if kind == "arrow_values":
        return pa.array(values), [pa.array(o) for o in offsets]
    return values, list(offsets)


def _scalar_operand(x: Any) -> bool:
    if isinstance(x, (bool, int, float)):
        return True
    return isinstance(x, np.generic) and np.dtype(type(x)).kind in "biuf"



def _dense_row_of(offs: list[np.ndarray], dense_shape: tuple[int, ...]) -> tuple[Any, int]:
    """(dense row of every last-level jagged row or -1 / None for one level, dense rows).

    The upper levels are expanded over the dense extents, then inverted: the entries
    that are no row write a spare last slot, so nothing is read back on the device.
    """
    num_out = dense_shape[0]
    if len(offs) == 1:
        return None, num_out
    xp = module_of(offs[0])
    expand = get_kernel("convert", "expand_level", xp)
    row_index = None
    for level in range(len(offs) - 1):
        extent = dense_shape[1 + level]
        row_index = expand(row_index, offs[level], None, extent, num_out)
        num_out *= extent
    assert row_index is not None
    rows = len(offs[-1]) - 1
    slots = xp.full(rows + 1, -1, dtype=np.int64)
    slots[xp.where(row_index >= 0, row_index, rows)] = xp.arange(len(row_index))
    return slots[:rows], num_out


def _read_dense(arr: np.ndarray, offs: list[np.ndarray], total: int) -> np.ndarray:
    """Each leaf value's padded position read from ``arr`` (FBGEMM's dense_to_jagged).

    ``total`` leaf positions; those no row addresses are 0.
    """
    xp = module_of(arr)
    levels = len(offs)
    inner = arr.shape[1 + levels:]
    width = int(np.prod(inner, dtype=np.int64))
    dense_row_of, num_out = _dense_row_of(offs, arr.shape)
    dense3 = xp.ascontiguousarray(arr).reshape(num_out, arr.shape[levels], width)
    out = xp.zeros((total, width), dtype=arr.dtype)
    get_kernel("elementwise", "jagged_dense_jagged_out", xp)(
        None, dense3, dense_row_of, _i64(offs[-1]), 2, out)
    return out.reshape((total,) + inner)  # type: ignore[no-any-return]


