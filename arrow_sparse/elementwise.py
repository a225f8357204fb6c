"""Jagged arithmetic: elementwise ops, per-row softmax and cumsum, slicing and gathers.

Most functions take their jagged input in one of three forms and answer in the same form:

* a :class:`Jagged` -> a :class:`Jagged`;
* an Arrow ``list``/``large_list`` array -> an Arrow list array (a ChunkedArray chunk by
  chunk for row-local functions);
* a values array plus ``offsets=`` (numpy or Arrow) -> values of the same kind (and new
  offsets when the rows change length).

The ``jagged_*`` functions named after FBGEMM operators keep FBGEMM's argument order
``(values, offsets, ...)``; pass a Jagged or an Arrow list array as ``values`` with
``offsets=None`` to use the other forms. The examples use Caffe2's batch
``[1, 2, 3] [2, 4, 6, 7] [3, 6]``; ``docs/jagged-arithmetic.md`` has the concepts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from . import _arrow
from . import _validate as v
from ._backend import get_kernel
from .convert import _offsets_list
from .errors import ArrowSparseIndexError, ArrowSparseTypeError, ArrowSparseValueError
from .jagged import Jagged

__all__ = [
    "array_ufunc",
    "expand_into_jagged",
    "index_select",
    "jagged_dense_bmm",
    "jagged_dense_elementwise_add",
    "jagged_dense_elementwise_add_jagged_output",
    "jagged_dense_elementwise_mul",
    "jagged_index_select",
    "jagged_jagged_bmm",
    "jagged_softmax",
    "jagged_ufunc",
    "jagged_unique",
    "list_slice",
    "map_values",
    "repeat",
    "segment_cumsum",
    "segment_softmax",
    "truncate",
]

_INT32_MAX = int(np.iinfo(np.int32).max)
_INT64_MAX = int(np.iinfo(np.int64).max)
_VALUES_KINDS = ("values", "arrow_values")

Window = tuple[Jagged, int, int]


# =============================================================================== helpers
def _kernel(name: str) -> Callable[..., Any]:
    return get_kernel("elementwise", name)


def _is_list_array(x: Any) -> bool:
    return isinstance(x, (pa.Array, pa.ChunkedArray)) and _arrow.is_list_type(x.type)


def _as_jagged(func: str, data: Any, offsets: Any, arg: str = "data") -> tuple[Jagged, str]:
    """Read ``data`` as a Jagged; return it and the kind of input to answer with."""
    if isinstance(data, Jagged) or _is_list_array(data):
        if offsets is not None:
            what = "a Jagged" if isinstance(data, Jagged) else "an Arrow list array"
            msg = f"{func}: offsets must be None when {arg} is {what} (it carries its own)"
            raise ArrowSparseTypeError(msg)
        if isinstance(data, Jagged):
            return data, "jagged"
        kind = "chunked" if isinstance(data, pa.ChunkedArray) else "arrow"
        return Jagged.from_arrow(data), kind
    if offsets is None:
        msg = (f"{func}: {arg} must be a Jagged or an Arrow list array, or a values array "
               f"with offsets, got {type(data).__name__}")
        raise ArrowSparseTypeError(msg)
    vals = v.as_values_array(func, arg, data)
    offs = v.check_offsets(func, "offsets", offsets, len(vals))
    kind = "arrow_values" if isinstance(data, (pa.Array, pa.ChunkedArray)) else "values"
    return Jagged(vals, offs, validate=False), kind


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
    return offsets.astype(np.int64, copy=False)


def _u8(mask: np.ndarray | None) -> np.ndarray | None:
    return None if mask is None else np.ascontiguousarray(mask).view(np.uint8)


def _zeros(func: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    try:
        return np.zeros(shape, dtype=dtype)
    except ValueError:
        msg = f"{func}: the result of shape {shape} is too large to allocate"
        raise ArrowSparseValueError(msg) from None


def _max_length(func: str, max_length: Any) -> int:
    if max_length is None:
        return _INT64_MAX
    return min(v.check_count(func, "max_length", max_length), _INT64_MAX)


def _windows(j: Jagged) -> tuple[list[Window], tuple[int, int]]:
    """Each level with the rows the top level addresses, and the leaf values window."""
    wins: list[Window] = []
    lo, hi = 0, j.num_rows
    node = j
    while True:
        wins.append((node, lo, hi))
        lo, hi = int(node.offsets[lo]), int(node.offsets[hi])
        if not isinstance(node.values, Jagged):
            return wins, (lo, hi)
        node = node.values


def _leaf_offsets(wins: list[Window]) -> np.ndarray:
    """Offsets of the top rows straight into the leaf values (levels composed)."""
    comp = wins[0][0].offsets
    for node, _, _ in wins[1:]:
        comp = node.offsets[comp]
    return _i64(comp)


def _same_structure(func: str, arg: str, wins: list[Window], other: Jagged
                    ) -> tuple[list[Window], tuple[int, int]]:
    """Check that ``other`` has the rows of ``wins`` at every level; return its windows.

    The offsets may start elsewhere: lengths are compared, level by level.
    """
    base = wins[0][0]
    owins, leaf = _windows(other)
    if len(owins) != len(wins):
        msg = f"{func}: {arg} has {len(owins)} jagged levels but the Jagged has {len(wins)}"
        raise ArrowSparseValueError(msg)
    if other.num_rows != base.num_rows:
        msg = f"{func}: {arg} has {other.num_rows} rows but the Jagged has {base.num_rows}"
        raise ArrowSparseValueError(msg)
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
    """``mine`` with ``[lo, hi)`` ANDed with ``theirs[tlo:...]`` (None = all True)."""
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
    """
    last = wins[-1][0]
    total = max(int(last.offsets[-1]), min_len)
    if start == 0 and len(window) == total:
        leaf = window
    else:
        leaf = np.zeros((total,) + window.shape[1:], dtype=window.dtype)
        leaf[start:start + len(window)] = window
    vv = None if values_validity is None else values_validity[:total]
    node = Jagged(leaf, last.offsets, validities[-1], values_validity=vv, validate=False)
    for (level, _, _), validity in zip(wins[-2::-1], validities[-2::-1], strict=True):
        node = Jagged(node, level.offsets, validity, validate=False)
    return node


def _hidden_mask(wins: list[Window], validities: list[np.ndarray | None],
                 values_validity: np.ndarray | None, start: int, stop: int
                 ) -> np.ndarray | None:
    """Mask the visible values of the leaf window ``[start, stop)``; None when all are.

    Hidden: values under a null row at any level, and null values.
    """
    keep = None
    for level, ((node, lo, hi), valid) in enumerate(zip(wins, validities, strict=True)):
        if valid is None:
            continue
        part = valid[lo:hi]
        if part.all():
            continue
        comp = _i64(node.offsets[lo:hi + 1])
        for deeper, _, _ in wins[level + 1:]:
            comp = _i64(deeper.offsets[comp])
        counts = np.diff(comp)
        if not counts[~part].any():  # the null rows are empty: nothing under them
            continue
        mask = np.repeat(part, counts)
        keep = mask if keep is None else keep & mask
    if values_validity is not None:
        part = values_validity[start:stop]
        if not part.all():
            keep = part.copy() if keep is None else keep & part
    return keep


def _visible(fn: Callable[..., Any], args: list[Any], keep: np.ndarray | None) -> np.ndarray:
    """``fn(*args)`` on the visible positions only; hidden positions of the result are 0.

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
    arr = np.ascontiguousarray(arr)
    width = int(np.prod(arr.shape[1:], dtype=np.int64))
    row_bytes = arr.dtype.itemsize * width
    if row_bytes == 0:
        return np.empty((len(arr), 0), dtype=np.uint8)
    word = next(w for w in (8, 4, 2, 1) if row_bytes % w == 0)
    raw = arr.reshape(len(arr), width).view(np.uint8)
    return raw.view(np.dtype(f"u{word}"))


def _from_words(words: np.ndarray, dtype: np.dtype, inner: tuple[int, ...]) -> np.ndarray:
    if words.shape[1] == 0:
        return np.zeros((len(words),) + inner, dtype=dtype)
    return words.view(np.uint8).view(dtype).reshape((len(words),) + inner)


def _repeat(arr: np.ndarray, comp: np.ndarray, start: int, stop: int) -> np.ndarray:
    """``out[k - start] = arr[r]`` for every leaf position ``k`` of row ``r``."""
    words = _as_words(arr)
    out = np.empty((stop - start, words.shape[1]), dtype=words.dtype)
    _kernel("repeat_rows")(words, comp, start, out)
    return _from_words(out, arr.dtype, arr.shape[1:])


def _segment_offsets(func: str, num_values: int, offsets: Any, lengths: Any,
                     segment_ids: Any) -> np.ndarray:
    which = v.check_exactly_one(func, offsets=offsets, lengths=lengths, segment_ids=segment_ids)
    if which == "offsets":
        return v.check_offsets(func, "offsets", offsets, num_values)
    if which == "lengths":
        lens = v.check_lengths(func, "lengths", lengths, num_values)
        out = np.zeros(len(lens) + 1, dtype=np.int64)
        np.cumsum(lens, out=out[1:])
        return out
    ids, n = v.check_sorted_segment_ids(func, "segment_ids", segment_ids, num_values)
    return np.searchsorted(ids, np.arange(n + 1), side="left").astype(np.int64)


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
    vals = v.as_values_array(func, "data", data)
    offs = _segment_offsets(func, len(vals), offsets, lengths, segment_ids)
    kind = "arrow_values" if isinstance(data, (pa.Array, pa.ChunkedArray)) else "values"
    return Jagged(vals, offs, validate=False), kind, len(vals)


def _map_innermost(j: Jagged, fn: Callable[[Jagged], Jagged]) -> Jagged:
    if isinstance(j.values, Jagged):
        return Jagged(_map_innermost(j.values, fn), j.offsets, j.validity, validate=False)
    return fn(j)


def _window_as(values: np.ndarray, start: int, stop: int, dtype: np.dtype) -> np.ndarray:
    """``values[:stop]`` as 2-D ``dtype``; converting only ``[start, stop)`` when needed."""
    width = int(np.prod(values.shape[1:], dtype=np.int64))
    if values.dtype == dtype:
        return values[:stop].reshape(stop, width)
    out = np.zeros((stop, width), dtype=dtype)
    out[start:stop] = values[start:stop].reshape(stop - start, width)
    return out


def _float_dtype(dtype: np.dtype) -> np.dtype:
    return dtype if dtype in (np.float32, np.float64) else np.dtype(np.float64)


def _arith_dtype(func: str, *dtypes: np.dtype) -> np.dtype:
    dtype = np.result_type(*dtypes)
    if dtype.kind not in "iuf":
        names = " and ".join(str(d) for d in dtypes)
        msg = f"{func}: values must be integers or floats, got {names}"
        raise ArrowSparseTypeError(msg)
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def _scalar_operand(x: Any) -> bool:
    if isinstance(x, (bool, int, float)):
        return True
    return isinstance(x, np.generic) and np.dtype(type(x)).kind in "biuf"


# ==================================================================== ufuncs and operators
def jagged_ufunc(ufunc: np.ufunc, *operands: Any, **kwargs: Any) -> Jagged:
    """Apply an elementwise numpy ufunc to Jagged operands; the engine of the operators.

    Parameters
    ----------
    ufunc
        An elementwise ``numpy.ufunc`` with one output (``np.add``, ``np.exp``, ...).
    *operands
        ``ufunc.nin`` operands, at least one a :class:`Jagged` (an Arrow list array is read
        as one). The others: a Jagged with the same rows (same lengths at every level;
        its offsets may start elsewhere), a scalar, a per-row array ``[rows]`` or
        ``[rows, *inner]`` (broadcast over each row's elements), or a padded array
        ``[rows, L_0, ..., *inner]`` (read at each element's padded position; every
        row must fit in it).
    **kwargs
        Passed to the ufunc (``dtype=``, ``casting=``); ``out=`` and ``where=`` are refused.

    Returns
    -------
    Jagged
        The offsets of the first Jagged operand (the same arrays: zero-copy), the AND of
        the operands' validity, and new values. Values under null rows and null
        elements are not computed (they are 0; Arrow leaves them unspecified). A
        Jagged whose offsets start above zero gets a values buffer with zeros before
        its first row.

    Raises
    ------
    ValueError
        Jagged operands of different rows, an operand that does not broadcast, a
        padded array shorter than a row, or a value the dtype cannot hold.
    TypeError
        A ufunc that is not elementwise, an unsupported operand or dtype.

    See Also
    --------
    map_values : Any elementwise function of the values.

    Examples
    --------
    >>> j = asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7], [3, 6]])
    >>> asp.elementwise.jagged_ufunc(np.multiply, j, np.array([10, 100, 1000]))
    Jagged([[10, 20, 30], [200, 400, 600, 700], [3000, 6000]], dtype=int64, offsets=int32)
    """
    name = getattr(ufunc, "__name__", type(ufunc).__name__)
    func = f"Jagged.{name}"
    if not isinstance(ufunc, np.ufunc) or ufunc.signature is not None or ufunc.nout != 1:
        msg = f"{func}: only elementwise numpy ufuncs with one output apply to a Jagged"
        raise ArrowSparseTypeError(msg)
    if len(operands) != ufunc.nin:
        msg = f"{func}: takes {ufunc.nin} operands, got {len(operands)}"
        raise ArrowSparseTypeError(msg)
    refused = sorted({"out", "where"} & set(kwargs))
    if refused:
        msg = (f"{func}: the {refused[0]}= argument is not supported on a Jagged; "
               "use map_values for other computations")
        raise ArrowSparseTypeError(msg)
    ops = [Jagged.from_arrow(op) if _is_list_array(op) else op for op in operands]
    base = next((op for op in ops if isinstance(op, Jagged)), None)
    if base is None:
        msg = f"{func}: no operand is a Jagged"
        raise ArrowSparseTypeError(msg)
    wins, (start, stop) = _windows(base)
    leaf = wins[-1][0].values
    assert isinstance(leaf, np.ndarray)
    validities = [node.validity for node, _, _ in wins]
    values_validity = wins[-1][0].values_validity
    args: list[Any] = []
    for op in ops:
        if op is base:
            args.append(leaf[start:stop])
        elif isinstance(op, Jagged):
            owins, (ostart, ostop) = _same_structure(func, "other", wins, op)
            pairs = zip(wins, owins, strict=True)
            for level, ((node, lo, hi), (onode, olo, _)) in enumerate(pairs):
                validities[level] = _and_mask(validities[level], node.num_rows, lo, hi,
                                              onode.validity, olo)
            values_validity = _and_mask(values_validity, len(leaf), start, stop,
                                        owins[-1][0].values_validity, ostart)
            args.append(owins[-1][0].values[ostart:ostop])
        elif _scalar_operand(op):
            args.append(op)
        else:
            args.append(_broadcast(func, "other", op, wins, start, stop))
    keep = _hidden_mask(wins, validities, values_validity, start, stop)
    try:
        result = _visible(lambda *a: ufunc(*a, **kwargs), args, keep)
    except TypeError as exc:
        msg = f"{func}: {exc}"
        raise ArrowSparseTypeError(msg) from None
    except (ValueError, OverflowError) as exc:
        msg = f"{func}: {exc}"
        raise ArrowSparseValueError(msg) from None
    if result.dtype.kind not in "biuf":
        msg = f"{func}: the result has dtype {result.dtype}; Jagged values must be numbers"
        raise ArrowSparseTypeError(msg)
    return _rebuild(wins, result, start, validities, values_validity)


def _broadcast(func: str, arg: str, op: Any, wins: list[Window], start: int,
               stop: int) -> np.ndarray:
    """Read a per-row or padded operand at every leaf position of ``[start, stop)``."""
    arr = v.as_values_array(func, arg, op, min_ndim=0)
    if arr.ndim == 0:
        return arr
    base = wins[0][0]
    leaf = wins[-1][0].values
    assert isinstance(leaf, np.ndarray)
    inner = leaf.shape[1:]
    rows = base.num_rows
    if arr.shape[0] != rows:
        msg = f"{func}: {arg} has {arr.shape[0]} rows but the Jagged has {rows}"
        raise ArrowSparseValueError(msg)
    if arr.ndim in (1, 1 + len(inner)):
        out = _repeat(arr, _leaf_offsets(wins), start, stop)
        return out.reshape(out.shape + (1,) * len(inner)) if arr.ndim == 1 else out
    if arr.ndim == 1 + len(wins) + len(inner):
        for level, (node, lo, hi) in enumerate(wins):
            lens = np.diff(node.offsets[lo:hi + 1])
            if level == 0 and node.validity is not None:
                lens = np.where(node.validity, lens, 0)
            extent = arr.shape[1 + level]
            too_long = lens > extent
            if too_long.any():
                pos = v.first_true(too_long)
                v.fail_value(func, arg, f"axis {1 + level} (length {extent}) is shorter than "
                             "a row of the Jagged", pos, lens[pos])
        return _read_dense(arr, [node.offsets for node, _, _ in wins])[start:stop]
    msg = (f"{func}: {arg} of shape {arr.shape} does not broadcast against a Jagged of "
           f"{rows} rows with values of shape {leaf.shape}: use a scalar, a per-row array "
           f"[rows] or [rows, *inner], or a padded array [rows, L, ..., *inner]")
    raise ArrowSparseValueError(msg)


def array_ufunc(j: Jagged, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
    """``Jagged.__array_ufunc__``: elementwise ufunc calls go to :func:`jagged_ufunc`.

    Parameters
    ----------
    j
        The Jagged numpy asked.
    ufunc
        The ufunc.
    method
        ``"__call__"`` (the only one supported; reductions are segment functions).
    *inputs
        The ufunc's operands.
    **kwargs
        The ufunc's keyword arguments.

    Returns
    -------
    Jagged
        See :func:`jagged_ufunc`.

    Raises
    ------
    TypeError
        A method other than ``__call__`` (``np.add.reduce`` and friends).

    Examples
    --------
    >>> np.sqrt(asp.Jagged.from_list([[1.0, 4.0], [9.0]]))
    Jagged([[1.0, 2.0], [3.0]], dtype=float64, offsets=int32)
    """
    if method != "__call__":
        msg = (f"Jagged.{ufunc.__name__}: numpy's {ufunc.__name__}.{method} is not supported "
               "on a Jagged; use the segment reductions (segment_sum, ...) for per-row results")
        raise ArrowSparseTypeError(msg)
    return jagged_ufunc(ufunc, *inputs, **kwargs)


def map_values(data: Any, func: Callable[[np.ndarray], Any]) -> Any:
    """Apply an elementwise function to the values, keeping offsets and validity.

    Parameters
    ----------
    data
        A :class:`Jagged` (nested: the leaf values are mapped) or an Arrow list array.
    func
        Called once with the visible values the rows address (``[n, *inner]``: a view, or
        a copy without the values under null rows and null elements when there are
        any); must return ``n`` values (any numeric dtype; the inner shape may change).
        It must work value by value.

    Returns
    -------
    Jagged or pyarrow.Array
        Same kind as ``data``: the same offsets arrays (zero-copy) and validity, the new
        values. Offsets that start above zero give a values buffer with zeros before the
        first row (one extra copy of the result).

    Raises
    ------
    TypeError
        ``func`` not callable, or returning something that is not numeric.
    ValueError
        ``func`` returning a different number of values.

    See Also
    --------
    jagged_ufunc : What the operators and numpy ufuncs (``np.exp(j)``) use.

    Examples
    --------
    >>> j = asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7], None, [3, 6]])
    >>> j.map_values(np.square)
    Jagged([[1, 4, 9], [4, 16, 36, 49], None, [9, 36]], dtype=int64, offsets=int32)
    >>> asp.map_values(pa.array([[1.0, 2.0], [4.0]]), np.log2).to_pylist()
    [[0.0, 1.0], [2.0]]
    """
    name = "map_values"
    if not callable(func):
        msg = f"{name}: func must be callable, got {type(func).__name__}"
        raise ArrowSparseTypeError(msg)
    j, kind = _as_jagged(name, data, None)
    wins, (start, stop) = _windows(j)
    leaf = wins[-1][0].values
    assert isinstance(leaf, np.ndarray)
    validities = [node.validity for node, _, _ in wins]
    values_validity = wins[-1][0].values_validity
    keep = _hidden_mask(wins, validities, values_validity, start, stop)
    expected = stop - start if keep is None else int(np.count_nonzero(keep))

    def call(window: np.ndarray) -> np.ndarray:
        result = v.as_values_array(name, "func(values)", func(window))
        if len(result) != expected:
            msg = (f"{name}: func returned {len(result)} values for {expected}; it must map "
                   "the values one to one")
            raise ArrowSparseValueError(msg)
        return result

    result = _visible(call, [leaf[start:stop]], keep)
    return _finish(_rebuild(wins, result, start, validities, values_validity), kind)


# ============================================================ FBGEMM jagged x dense
def _jagged_dense_inputs(func: str, values: Any, offsets: Any, dense: Any
                         ) -> tuple[np.ndarray, list[np.ndarray], list[Any], np.ndarray, str,
                                    Jagged | None, np.dtype]:
    j = None
    if isinstance(values, Jagged) or _is_list_array(values):
        j, kind = _as_jagged(func, values, offsets, "values")
        wins, _ = _windows(j)
        vals = wins[-1][0].values
        assert isinstance(vals, np.ndarray)
        offs = [node.offsets for node, _, _ in wins]
        valids = [node.validity for node, _, _ in wins]
    else:
        vals = v.as_values_array(func, "values", values)
        if offsets is None:
            msg = f"{func}: offsets are needed with a values array (a list, outermost first)"
            raise ArrowSparseTypeError(msg)
        offs = _offsets_list(func, offsets, len(vals))
        valids = [None] * len(offs)
        kind = "arrow_values" if isinstance(values, (pa.Array, pa.ChunkedArray)) else "values"
    arr = v.as_values_array(func, "dense", dense)
    levels, inner = len(offs), vals.shape[1:]
    rows = len(offs[0]) - 1
    if arr.ndim != 1 + levels + len(inner) or arr.shape[1 + levels:] != inner \
            or arr.shape[0] != rows:
        axes = ", ".join([str(rows)] + [f"L{i}" for i in range(levels)] + [str(d) for d in inner])
        msg = (f"{func}: dense must have shape [{axes}] for {levels} jagged level(s) and "
               f"values of shape {vals.shape}, got {arr.shape}")
        raise ArrowSparseValueError(msg)
    return vals, offs, valids, arr, kind, j, _arith_dtype(func, vals.dtype, arr.dtype)


def _dense_row_of(offs: list[np.ndarray], dense_shape: tuple[int, ...]) -> tuple[Any, int]:
    """(dense row of every last-level jagged row or -1 / None for one level, dense rows)."""
    num_out = dense_shape[0]
    if len(offs) == 1:
        return None, num_out
    expand = get_kernel("convert", "expand_level")
    row_index = None
    for level in range(len(offs) - 1):
        extent = dense_shape[1 + level]
        row_index = expand(row_index, offs[level], None, extent, num_out)
        num_out *= extent
    assert row_index is not None
    dense_row_of = np.full(len(offs[-1]) - 1, -1, dtype=np.int64)
    present = row_index >= 0
    dense_row_of[row_index[present]] = np.flatnonzero(present)
    return dense_row_of, num_out


def _read_dense(arr: np.ndarray, offs: list[np.ndarray]) -> np.ndarray:
    """Each leaf value's padded position read from ``arr`` (FBGEMM's dense_to_jagged).

    Positions before ``offs[-1][0]`` are left unset: the callers never read them.
    """
    levels = len(offs)
    inner = arr.shape[1 + levels:]
    width = int(np.prod(inner, dtype=np.int64))
    dense_row_of, num_out = _dense_row_of(offs, arr.shape)
    dense3 = np.ascontiguousarray(arr).reshape(num_out, arr.shape[levels], width)
    out = np.empty((int(offs[-1][-1]), width), dtype=arr.dtype)
    _kernel("jagged_dense_jagged_out")(out, dense3, dense_row_of, _i64(offs[-1]), 2, out)
    return out.reshape((len(out),) + inner)


def _jagged_dense_jagged(func: str, values: Any, offsets: Any, dense: Any, op: int) -> Any:
    vals, offs, _, arr, kind, j, dtype = _jagged_dense_inputs(func, values, offsets, dense)
    width = int(np.prod(vals.shape[1:], dtype=np.int64))
    x = vals.astype(dtype, copy=False).reshape(len(vals), width)
    dense_row_of, num_out = _dense_row_of(offs, arr.shape)
    dense3 = np.ascontiguousarray(arr, dtype=dtype).reshape(num_out, arr.shape[len(offs)], width)
    first, last = int(offs[-1][0]), int(offs[-1][-1])
    if kind in _VALUES_KINDS:
        out = v.empty(func, x.shape, dtype)
        ufunc = np.add if op == 0 else np.multiply
        with np.errstate(all="ignore"):  # x * 0 where x is inf: nan, as FBGEMM gives
            ufunc(x[:first], dtype.type(0), out=out[:first])
            ufunc(x[last:], dtype.type(0), out=out[last:])
    else:
        out = _zeros(func, x.shape, dtype)
    _kernel("jagged_dense_jagged_out")(x, dense3, dense_row_of, _i64(offs[-1]), op, out)
    result = out.reshape(vals.shape)
    if j is None:
        return pa.array(result) if kind == "arrow_values" else result
    wins, _ = _windows(j)
    validities = [node.validity for node, _, _ in wins]
    return _finish(_rebuild(wins, result, 0, validities, wins[-1][0].values_validity,
                            len(result)), kind)


def jagged_dense_elementwise_add(values: Any, offsets: Any, dense: Any, *,
                                 output: str = "jagged") -> Any:
    """Add a padded dense tensor to a jagged one: jagged values, or FBGEMM's dense sum.

    With ``output="jagged"`` (the default) each element adds the dense value at its
    padded position, exactly as :func:`jagged_dense_elementwise_add_jagged_output`.
    With ``output="dense"`` the result is FBGEMM's ``jagged_dense_elementwise_add``:
    ``dense + jagged_to_padded_dense(values, offsets, dense's jagged axes)``, where
    positions with no element keep the dense value and elements outside the dense are
    dropped.

    Parameters
    ----------
    values
        Jagged values ``[N, *inner]``, or a :class:`Jagged` / Arrow list array (then
        ``offsets=None``; null rows count as padding).
    offsets
        List of offsets arrays, outermost first (one array means one level).
    dense
        ``[rows, L_0, ..., L_{k-1}, *inner]``, one axis per jagged level.
    output
        ``"jagged"`` (values shaped like ``values``) or ``"dense"`` (``dense``'s shape).

    Returns
    -------
    numpy.ndarray, pyarrow.Array or Jagged
        Jagged output: as :func:`jagged_dense_elementwise_add_jagged_output`. Dense
        output: a numpy array of ``dense``'s shape, of the dtype both promote to.

    Raises
    ------
    ValueError
        Malformed offsets, ``dense`` of the wrong shape, or an unknown ``output``.
    TypeError
        Non-numeric or boolean inputs.

    See Also
    --------
    jagged_dense_elementwise_add_jagged_output : The jagged-output sum.
    jagged_to_padded_dense : The padding the dense output applies.

    Notes
    -----
    FBGEMM's operator of this name returns the dense sum and has a separate
    jagged-output variant; arrow_sparse's public contract is jagged values in and
    out, so the dense form is asked for with ``output="dense"``.

    Examples
    --------
    >>> values = np.array([1, 2, 3, 2, 4, 6, 7, 3, 6])
    >>> dense = np.full((3, 3), 100)
    >>> asp.jagged_dense_elementwise_add(values, [np.array([0, 3, 7, 9])], dense)
    array([101, 102, 103, 102, 104, 106,   7, 103, 106])
    >>> asp.jagged_dense_elementwise_add(values, [np.array([0, 3, 7, 9])], dense,
    ...                                  output="dense")
    array([[101, 102, 103],
           [102, 104, 106],
           [103, 106, 100]])
    """
    func = "jagged_dense_elementwise_add"
    if isinstance(output, str) and output == "jagged":
        return _jagged_dense_jagged(func, values, offsets, dense, 0)
    if not (isinstance(output, str) and output == "dense"):
        msg = f"{func}: output must be 'jagged' or 'dense', got {output!r}"
        raise ArrowSparseValueError(msg)
    vals, offs, valids, arr, _, _, dtype = _jagged_dense_inputs(func, values, offsets, dense)
    width = int(np.prod(vals.shape[1:], dtype=np.int64))
    x = vals.astype(dtype, copy=False).reshape(len(vals), width)
    expand = get_kernel("convert", "expand_level")
    row_index = None
    num_out = arr.shape[0]
    for level in range(len(offs) - 1):
        extent = arr.shape[1 + level]
        row_index = expand(row_index, offs[level], _u8(valids[level]), extent, num_out)
        num_out *= extent
    dense3 = np.ascontiguousarray(arr, dtype=dtype).reshape(num_out, arr.shape[len(offs)], width)
    out = v.empty(func, dense3.shape, dtype)
    _kernel("jagged_dense_dense_out")(x, row_index, _i64(offs[-1]), _u8(valids[-1]), dense3, out)
    return out.reshape(arr.shape)


def jagged_dense_elementwise_add_jagged_output(values: Any, offsets: Any, dense: Any) -> Any:
    """Add a padded dense tensor to a jagged one, giving jagged values (FBGEMM).

    Each element adds the dense value at its padded position; an element outside the
    dense (a row longer than the dense axis) adds 0 and keeps its value.

    Parameters
    ----------
    values
        Jagged values ``[N, *inner]``, or a :class:`Jagged` / Arrow list array (then
        ``offsets=None``).
    offsets
        List of offsets arrays, outermost first (one array means one level).
    dense
        ``[rows, L_0, ..., L_{k-1}, *inner]``, one axis per jagged level.

    Returns
    -------
    numpy.ndarray, pyarrow.Array or Jagged
        Values shaped like ``values`` (positions no row addresses: ``values + 0``), or
        the same kind of jagged input with its offsets and validity.

    Raises
    ------
    ValueError
        Malformed offsets, or ``dense`` of the wrong shape.
    TypeError
        Non-numeric or boolean inputs.

    See Also
    --------
    jagged_dense_elementwise_mul : The product.
    dense_to_jagged : How the dense is read.

    Examples
    --------
    >>> values = np.array([1, 2, 3, 2, 4, 6, 7, 3, 6])
    >>> dense = np.full((3, 3), 100)
    >>> asp.jagged_dense_elementwise_add_jagged_output(values, [np.array([0, 3, 7, 9])], dense)
    array([101, 102, 103, 102, 104, 106,   7, 103, 106])
    """
    return _jagged_dense_jagged("jagged_dense_elementwise_add_jagged_output", values, offsets,
                                dense, 0)


def jagged_dense_elementwise_mul(values: Any, offsets: Any, dense: Any) -> Any:
    """Multiply a jagged tensor by a padded dense one, giving jagged values (FBGEMM).

    Each element is multiplied by the dense value at its padded position; an element
    outside the dense (a row longer than the dense axis) is multiplied by 0, as FBGEMM
    does (it reads the dense with ``dense_to_jagged``, which pads with 0).

    Parameters
    ----------
    values
        Jagged values ``[N, *inner]``, or a :class:`Jagged` / Arrow list array (then
        ``offsets=None``).
    offsets
        List of offsets arrays, outermost first (one array means one level).
    dense
        ``[rows, L_0, ..., L_{k-1}, *inner]``, one axis per jagged level.

    Returns
    -------
    numpy.ndarray, pyarrow.Array or Jagged
        Values shaped like ``values`` (positions no row addresses: ``values * 0``), or
        the same kind of jagged input with its offsets and validity.

    Raises
    ------
    ValueError
        Malformed offsets, or ``dense`` of the wrong shape.
    TypeError
        Non-numeric or boolean inputs.

    See Also
    --------
    jagged_dense_elementwise_add_jagged_output : The sum.
    Jagged.__mul__ : ``j * dense`` refuses a dense shorter than a row instead.

    Examples
    --------
    >>> values = np.array([1, 2, 3, 2, 4, 6, 7, 3, 6])
    >>> dense = np.array([[1, 1, 1], [10, 10, 10], [2, 2, 2]])
    >>> asp.jagged_dense_elementwise_mul(values, [np.array([0, 3, 7, 9])], dense)
    array([ 1,  2,  3, 20, 40, 60,  0,  6, 12])
    >>> j = asp.Jagged.from_list([[1.0, 2.0], [], None])
    >>> asp.jagged_dense_elementwise_mul(j, None, np.full((3, 2), 0.5))
    Jagged([[0.5, 1.0], [], None], dtype=float64, offsets=int32)
    """
    return _jagged_dense_jagged("jagged_dense_elementwise_mul", values, offsets, dense, 1)


# ================================================================= softmax and cumsum
def _softmax(j: Jagged, max_length: int, min_len: int) -> Jagged:
    vals = j.values
    assert isinstance(vals, np.ndarray)
    dtype = _float_dtype(vals.dtype)
    start, stop = int(j.offsets[0]), int(j.offsets[-1])
    total = max(stop, min_len)
    width = int(np.prod(vals.shape[1:], dtype=np.int64))
    out = np.zeros((total, width), dtype=dtype)
    _kernel("softmax")(_window_as(vals, start, stop, dtype), _i64(j.offsets), _u8(j.validity),
                       _u8(j.values_validity), max_length, out)
    vv = None if j.values_validity is None else j.values_validity[:total]
    return Jagged(out.reshape((total,) + vals.shape[1:]), j.offsets, j.validity,
                  values_validity=vv, validate=False)


def jagged_softmax(values: Any, offsets: Any = None, max_length: int | None = None) -> Any:
    """Softmax over each row of a jagged tensor (FBGEMM's ``jagged_softmax``).

    Parameters
    ----------
    values
        Values ``[N]`` or ``[N, D]`` (each column separately), or a :class:`Jagged` /
        Arrow list array (then ``offsets=None``).
    offsets
        Row offsets, ``rows + 1`` long; may start above zero.
    max_length
        Only each row's first ``max_length`` elements take part; the rest give 0.
        Default: the whole row.

    Returns
    -------
    numpy.ndarray, pyarrow.Array or Jagged
        Floats (float32 stays float32, other dtypes give float64) in the form of the
        input; positions no row addresses are 0.

    Raises
    ------
    ValueError
        Malformed offsets, or a negative ``max_length``.
    TypeError
        Non-numeric values, or ``offsets`` given with a Jagged.

    See Also
    --------
    segment_softmax : The same with lengths or segment ids, null rows and null elements.

    Examples
    --------
    >>> values = np.array([0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 5.0, 5.0])
    >>> asp.jagged_softmax(values, np.array([0, 2, 6, 8])).round(3)
    array([0.5 , 0.5 , 0.25, 0.25, 0.25, 0.25, 0.5 , 0.5 ])
    >>> asp.jagged_softmax(values, np.array([0, 2, 6, 8]), max_length=1)
    array([1., 0., 1., 0., 0., 0., 1., 0.])
    """
    func = "jagged_softmax"
    if _is_chunked_list(values) and offsets is None:
        return _chunkwise(values, lambda c: jagged_softmax(c, None, max_length))
    j, kind = _as_jagged(func, values, offsets, "values")
    limit = _max_length(func, max_length)
    min_len = len(j.values) if kind in _VALUES_KINDS else 0
    return _finish(_map_innermost(j, lambda lvl: _softmax(lvl, limit, min_len)), kind)


def segment_softmax(data: Any, *, offsets: Any = None, lengths: Any = None,
                    segment_ids: Any = None) -> Any:
    """Numerically stable softmax over each row (segment).

    ``exp(x - max(row)) / sum(exp(x - max(row)))``, per column for 2-D values.

    Parameters
    ----------
    data
        A :class:`Jagged` (nested: over the innermost lists), an Arrow list array, or
        values ``[N]`` / ``[N, D]`` with exactly one of the keywords below.
    offsets
        Row offsets (may start above zero and end before the last value).
    lengths
        Row lengths summing to exactly ``N``.
    segment_ids
        Sorted row id of every value.

    Returns
    -------
    Jagged, pyarrow.Array or numpy.ndarray
        Floats (float32 stays float32, other dtypes give float64) in the form of
        ``data``. Empty rows stay empty, null rows stay null, null elements stay null
        and take no part; values no row addresses are 0.

    Raises
    ------
    ValueError
        Malformed offsets, lengths or segment ids, or none or several of them.
    TypeError
        Non-numeric data.

    See Also
    --------
    jagged_softmax : FBGEMM's signature, with ``max_length``.

    Notes
    -----
    A row holding ``inf`` or only ``-inf`` gives NaN, as ``torch.softmax`` does.

    Examples
    --------
    >>> j = asp.Jagged.from_list([[1.0, 1.0], [], None, [0.0, 0.0, 0.0, 0.0]])
    >>> asp.segment_softmax(j)
    Jagged([[0.5, 0.5], [], None, [0.25, 0.25, 0.25, 0.25]], dtype=float64, offsets=int32)
    >>> asp.segment_softmax(np.log(np.array([1.0, 3.0, 2.0])), lengths=[2, 1])
    array([0.25, 0.75, 1.  ])
    """
    func = "segment_softmax"
    if _is_chunked_list(data):
        return _chunkwise(data, lambda c: segment_softmax(c, offsets=offsets, lengths=lengths,
                                                          segment_ids=segment_ids))
    j, kind, min_len = _segments_input(func, data, offsets, lengths, segment_ids)
    return _finish(_map_innermost(j, lambda lvl: _softmax(lvl, _INT64_MAX, min_len)), kind)


def _cumsum_dtype(dtype: np.dtype) -> np.dtype:
    if dtype.kind in "bi":
        return np.dtype(np.int64)
    if dtype.kind == "u":
        return np.dtype(np.uint64)
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def _cumsum(j: Jagged, exclusive: bool, min_len: int) -> Jagged:
    vals = j.values
    assert isinstance(vals, np.ndarray)
    dtype = _cumsum_dtype(vals.dtype)
    start, stop = int(j.offsets[0]), int(j.offsets[-1])
    total = max(stop, min_len)
    width = int(np.prod(vals.shape[1:], dtype=np.int64))
    out = np.zeros((total, width), dtype=dtype)
    _kernel("cumsum")(_window_as(vals, start, stop, dtype), _i64(j.offsets), _u8(j.validity),
                      _u8(j.values_validity), exclusive, out)
    vv = None if j.values_validity is None else j.values_validity[:total]
    return Jagged(out.reshape((total,) + vals.shape[1:]), j.offsets, j.validity,
                  values_validity=vv, validate=False)


def segment_cumsum(data: Any, *, offsets: Any = None, lengths: Any = None,
                   segment_ids: Any = None, exclusive: bool = False) -> Any:
    """Compute the running sum along each row (segment), restarting at every row.

    Parameters
    ----------
    data
        A :class:`Jagged` (nested: along the innermost lists), an Arrow list array, or
        values ``[N]`` / ``[N, D]`` with exactly one of the keywords below.
    offsets
        Row offsets (may start above zero and end before the last value).
    lengths
        Row lengths summing to exactly ``N``.
    segment_ids
        Sorted row id of every value.
    exclusive
        False: element ``i`` is the sum of elements ``0..i``; True: of ``0..i-1`` (so
        each row starts at 0).

    Returns
    -------
    Jagged, pyarrow.Array or numpy.ndarray
        In the form of ``data``, with numpy's ``cumsum`` dtype (bool and signed
        integers: int64, unsigned: uint64, floats kept; float16 gives float32). Null
        rows stay null; null elements add nothing and stay null; values no row
        addresses are 0.

    Raises
    ------
    ValueError
        Malformed offsets, lengths or segment ids, or none or several of them.
    TypeError
        Non-numeric data, or ``exclusive`` not a bool.

    See Also
    --------
    lengths_to_offsets : The exclusive cumsum of lengths.

    Examples
    --------
    >>> j = asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7], [3, 6]])
    >>> asp.segment_cumsum(j)
    Jagged([[1, 3, 6], [2, 6, 12, 19], [3, 9]], dtype=int64, offsets=int32)
    >>> asp.segment_cumsum(np.array([1, 2, 3, 2, 4]), lengths=[3, 2], exclusive=True)
    array([0, 1, 3, 0, 2])
    """
    func = "segment_cumsum"
    excl = v.check_bool(func, "exclusive", exclusive)
    if _is_chunked_list(data):
        return _chunkwise(data, lambda c: segment_cumsum(c, offsets=offsets, lengths=lengths,
                                                         segment_ids=segment_ids,
                                                         exclusive=excl))
    j, kind, min_len = _segments_input(func, data, offsets, lengths, segment_ids)
    return _finish(_map_innermost(j, lambda lvl: _cumsum(lvl, excl, min_len)), kind)


# ======================================================================== bmm
def jagged_dense_bmm(values: Any, offsets: Any, dense: Any, max_length: int | None = None) -> Any:
    """Multiply each row's ``[L_b, K]`` matrix by ``dense[b]`` (``[K, N]``) (FBGEMM).

    Parameters
    ----------
    values
        Jagged values ``[total, K]``, or a :class:`Jagged` / Arrow list array of
        ``fixed_size_list`` vectors (then ``offsets=None``).
    offsets
        Row offsets, ``B + 1`` long.
    dense
        ``[B, K, N]``, one matrix per row.
    max_length
        Only each row's first ``max_length`` elements are multiplied; the rest give
        zeros. Default: every element.

    Returns
    -------
    numpy.ndarray, pyarrow.Array or Jagged
        Jagged ``[total, N]`` with the rows of the input (same offsets, validity; null
        rows and positions no row addresses are zeros), dtype both promote to.

    Raises
    ------
    ValueError
        Values that are not 2-D, ``dense`` not ``[B, K, N]``, or malformed offsets.
    TypeError
        Non-numeric or boolean inputs, or nested rows.

    See Also
    --------
    jagged_jagged_bmm : ``x_b^T @ y_b`` per row, giving a dense tensor.

    Examples
    --------
    >>> x = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> dense = np.array([[[1.0, 2.0], [3.0, 4.0]], [[10.0, 0.0], [0.0, 10.0]]])
    >>> asp.jagged_dense_bmm(x, np.array([0, 2, 3]), dense)
    array([[ 1.,  2.],
           [ 3.,  4.],
           [10., 10.]])
    """
    func = "jagged_dense_bmm"
    j, kind = _as_jagged(func, values, offsets, "values")
    x = j.values
    if isinstance(x, Jagged):
        msg = f"{func}: values must be one jagged level of [total, K] rows, not nested lists"
        raise ArrowSparseTypeError(msg)
    arr = v.as_values_array(func, "dense", dense)
    if x.ndim != 2:
        msg = f"{func}: values must be 2-D [total, K], got shape {x.shape}"
        raise ArrowSparseValueError(msg)
    if arr.ndim != 3 or arr.shape[:2] != (j.num_rows, x.shape[1]):
        msg = f"{func}: dense must have shape [{j.num_rows}, {x.shape[1]}, N], got {arr.shape}"
        raise ArrowSparseValueError(msg)
    dtype = _arith_dtype(func, x.dtype, arr.dtype)
    limit = _max_length(func, max_length)
    total = len(x) if kind in _VALUES_KINDS else int(j.offsets[-1])
    out = _zeros(func, (total, arr.shape[2]), dtype)
    _kernel("jagged_dense_bmm")(x[:total].astype(dtype, copy=False), _i64(j.offsets),
                                _u8(j.validity), np.ascontiguousarray(arr, dtype=dtype),
                                limit, out)
    return _finish(Jagged(out, j.offsets, j.validity, validate=False), kind)


def jagged_jagged_bmm(x: Any, y: Any, offsets: Any = None,
                      max_length: int | None = None) -> np.ndarray:
    """Per row ``x_b^T @ y_b``: ``[L_b, M]^T x [L_b, N] -> [M, N]`` (FBGEMM).

    Parameters
    ----------
    x
        Jagged values ``[total, M]``, or a :class:`Jagged` / Arrow list array of vectors
        (then ``offsets=None``).
    y
        Jagged values ``[total, N]`` with the same rows as ``x``: a values array sharing
        ``offsets``, or a Jagged with the same row lengths.
    offsets
        Row offsets shared by ``x`` and ``y`` (``B + 1`` long), or None for Jaggeds.
    max_length
        Only each row's first ``max_length`` elements take part. Default: all.

    Returns
    -------
    numpy.ndarray
        ``[B, M, N]``; empty and null rows give zeros.

    Raises
    ------
    ValueError
        Values that are not 2-D, rows that differ (naming the first differing offset),
        or malformed offsets.
    TypeError
        Non-numeric or boolean inputs, or nested rows.

    See Also
    --------
    jagged_dense_bmm : A jagged matrix per row times a dense one.

    Examples
    --------
    >>> x = np.array([[1.0], [2.0], [3.0]])
    >>> y = np.array([[1.0, 1.0], [1.0, 0.0], [2.0, 2.0]])
    >>> asp.jagged_jagged_bmm(x, y, np.array([0, 2, 3]))
    array([[[3., 1.]],
    <BLANKLINE>
           [[6., 6.]]])
    """
    func = "jagged_jagged_bmm"
    if offsets is None:
        jx, _ = _as_jagged(func, x, None, "x")
        jy, _ = _as_jagged(func, y, None, "y")
        if isinstance(jx.values, Jagged) or isinstance(jy.values, Jagged):
            msg = f"{func}: x and y must be one jagged level of vectors, not nested lists"
            raise ArrowSparseTypeError(msg)
        wins, _ = _windows(jx)
        _same_structure(func, "y", wins, jy)
        xv, yv, xo, yo = jx.values, jy.values, jx.offsets, jy.offsets
        valid = _and_mask(jx.validity, jx.num_rows, 0, jx.num_rows, jy.validity, 0)
    else:
        xv = v.as_values_array(func, "x", x)
        yv = v.as_values_array(func, "y", y)
        if len(xv) != len(yv):
            msg = f"{func}: y has {len(yv)} values but x has {len(xv)}; they share the offsets"
            raise ArrowSparseValueError(msg)
        xo = yo = v.check_offsets(func, "offsets", offsets, len(xv))
        valid = None
    if xv.ndim != 2 or yv.ndim != 2:
        msg = f"{func}: x and y values must be 2-D, got shapes {xv.shape} and {yv.shape}"
        raise ArrowSparseValueError(msg)
    dtype = _arith_dtype(func, xv.dtype, yv.dtype)
    limit = _max_length(func, max_length)
    out = _zeros(func, (len(xo) - 1, xv.shape[1], yv.shape[1]), dtype)
    _kernel("jagged_jagged_bmm")(xv.astype(dtype, copy=False), _i64(xo),
                                 yv.astype(dtype, copy=False), _i64(yo), _u8(valid), limit, out)
    return out


# ================================================================ gathers and slices
def _gather(values: np.ndarray, starts: np.ndarray, out_offsets: np.ndarray) -> np.ndarray:
    words = _as_words(values)
    out = np.empty((int(out_offsets[-1]), words.shape[1]), dtype=words.dtype)
    _kernel("gather_ranges")(words, starts, out_offsets, out)
    return _from_words(out, values.dtype, values.shape[1:])


def _take_ranges(func: str, j: Jagged, starts: np.ndarray, lengths: np.ndarray,
                 validity: np.ndarray | None) -> Jagged:
    """Row ``i`` of the result: elements ``[starts[i], starts[i] + lengths[i])`` of ``j``."""
    out_offsets = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out_offsets[1:])
    total = int(out_offsets[-1])
    if j.offsets.dtype == np.int32 and total > _INT32_MAX:
        msg = (f"{func}: the result holds {total} elements, too many for int32 offsets "
               "(Arrow list); use large_list (int64 offsets)")
        raise ArrowSparseValueError(msg)
    starts = _i64(starts)
    values = j.values
    vv = None
    if isinstance(values, Jagged):
        elements = _kernel("ranges_to_indices")(starts, out_offsets)
        new_values: Any = _take_rows(func, values, elements)
    else:
        new_values = _gather(values, starts, out_offsets)
        if j.values_validity is not None:
            vv = _gather(j.values_validity, starts, out_offsets)
    return Jagged(new_values, out_offsets.astype(j.offsets.dtype, copy=False), validity,
                  values_validity=vv, validate=False)


def _take_rows(func: str, j: Jagged, rows: np.ndarray) -> Jagged:
    """Rows ``rows`` (checked, non-negative) of ``j``; null rows become empty nulls."""
    starts = j.offsets[rows]
    lengths = j.offsets[rows + 1] - starts
    validity = None if j.validity is None else j.validity[rows]
    if validity is not None:
        lengths = np.where(validity, lengths, 0)
    return _take_ranges(func, j, starts, lengths, validity)


def _check_rows(func: str, arg: str, rows: Any, num_rows: int) -> np.ndarray:
    idx = v.as_index_array(func, arg, rows)
    bad = (idx < -num_rows) | (idx >= num_rows)
    if bad.any():
        pos = v.first_true(bad)
        msg = v.message(func, arg, f"out of range [-{num_rows}, {num_rows})", pos, idx[pos])
        raise ArrowSparseIndexError(msg)
    return np.where(idx < 0, idx + num_rows, idx).astype(np.int64, copy=False)


def index_select(data: Any, rows: Any, *, offsets: Any = None) -> Any:
    """Gather rows by index: row ``i`` of the result is row ``rows[i]`` of ``data``.

    Parameters
    ----------
    data
        A :class:`Jagged` (nested too), an Arrow list array, or values with ``offsets=``.
    rows
        Integer row ids, in any order, repeats allowed. Negative ids count from the end,
        as in Python (``-1`` is the last row): the range is ``[-num_rows, num_rows)``.
    offsets
        Row offsets of ``data`` when it is a values array.

    Returns
    -------
    Jagged, pyarrow.Array or tuple
        The form of ``data``: a Jagged, an Arrow list array of the same type, or
        ``(values, offsets)``. New values (a copy), offsets from 0 of the input's
        dtype; null rows stay null (and empty).

    Raises
    ------
    IndexError
        A row id out of range.
    ValueError
        A result too big for int32 offsets (use large_list input).
    TypeError
        Non-integer row ids.

    See Also
    --------
    jagged_index_select : FBGEMM's signature (values, lengths, indices).

    Examples
    --------
    >>> j = asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7], [3, 6]])
    >>> asp.index_select(j, [2, 0, -1])
    Jagged([[3, 6], [1, 2, 3], [3, 6]], dtype=int64, offsets=int32)
    >>> asp.index_select(np.array([1, 2, 3, 2, 4, 6, 7, 3, 6]), [1], offsets=[0, 3, 7, 9])
    (array([2, 4, 6, 7]), array([0, 4]))
    """
    func = "index_select"
    j, kind = _as_jagged(func, data, offsets)
    return _finish_rows(_take_rows(func, j, _check_rows(func, "rows", rows, j.num_rows)), kind)


def jagged_index_select(values: Any, lengths: Any, indices: Any) -> Any:
    """Gather rows of a values + lengths jagged tensor (FBGEMM's ``jagged_index_select``).

    Parameters
    ----------
    values
        Jagged values ``[total, *inner]`` (numpy or Arrow).
    lengths
        Row lengths summing to exactly ``total``.
    indices
        Row ids to gather; negative ids count from the end, as in :func:`index_select`.

    Returns
    -------
    tuple
        ``(values, lengths)`` of the gathered rows (Arrow arrays when ``values`` is one).

    Raises
    ------
    IndexError
        A row id out of range.
    ValueError
        Lengths that do not sum to the number of values.
    TypeError
        Non-numeric values or non-integer lengths or indices.

    See Also
    --------
    index_select : The same on a Jagged or an Arrow list array.

    Examples
    --------
    >>> asp.jagged_index_select(np.array([1, 2, 3, 2, 4, 6, 7, 3, 6]), [3, 4, 2], [2, 2, 0])
    (array([3, 6, 3, 6, 1, 2, 3]), array([2, 2, 3]))
    """
    func = "jagged_index_select"
    vals = v.as_values_array(func, "values", values)
    lens = v.check_lengths(func, "lengths", lengths, len(vals))
    offs = np.zeros(len(lens) + 1, dtype=np.int64)
    np.cumsum(lens, out=offs[1:])
    j = Jagged(vals, offs, validate=False)
    res = _take_rows(func, j, _check_rows(func, "indices", indices, j.num_rows))
    out_lengths = np.diff(res.offsets).astype(lens.dtype, copy=False)
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return pa.array(res.values), pa.array(out_lengths)
    return res.values, out_lengths


def _slice_bound(func: str, arg: str, x: Any) -> int | None:
    if x is None:
        return None
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        msg = f"{func}: {arg} must be an integer or None, got {type(x).__name__}"
        raise ArrowSparseTypeError(msg)
    return max(min(int(x), _INT64_MAX // 2), -(_INT64_MAX // 2))


def _list_slice(func: str, j: Jagged, start: int | None, stop: int | None) -> Jagged:
    lens = np.diff(_i64(j.offsets))

    def bound(i: int | None, default: Any) -> Any:
        if i is None:
            return default
        return np.maximum(lens + i, 0) if i < 0 else np.minimum(lens, i)

    first = bound(start, 0)
    new_lengths = np.maximum(bound(stop, lens) - first, 0)
    if j.validity is not None:
        new_lengths = np.where(j.validity, new_lengths, 0)
    return _take_ranges(func, j, _i64(j.offsets[:-1]) + first, new_lengths, j.validity)


def list_slice(data: Any, start: int | None = None, stop: int | None = None, *,
               offsets: Any = None) -> Any:
    """Slice every row like a Python list: row ``r`` becomes ``row[start:stop]``.

    Parameters
    ----------
    data
        A :class:`Jagged` (nested: slices the outer lists), an Arrow list array, or
        values with ``offsets=``.
    start
        First element kept; negative counts from each row's end; None = 0.
    stop
        Element after the last kept; negative counts from each row's end; None = the end.
    offsets
        Row offsets of ``data`` when it is a values array.

    Returns
    -------
    Jagged, pyarrow.Array or tuple
        The form of ``data`` (``(values, offsets)`` for a values array), a copy; null
        rows stay null.

    Raises
    ------
    TypeError
        ``start`` or ``stop`` not an integer or None.

    See Also
    --------
    truncate : ``list_slice(data, 0, length)``.

    Examples
    --------
    >>> j = asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7], [3, 6]])
    >>> asp.list_slice(j, 1)
    Jagged([[2, 3], [4, 6, 7], [6]], dtype=int64, offsets=int32)
    >>> asp.list_slice(j, -2, -1)
    Jagged([[2], [6], [3]], dtype=int64, offsets=int32)
    >>> asp.list_slice(pa.array([[1, 2, 3], None]), 0, 2).to_pylist()
    [[1, 2], None]
    """
    func = "list_slice"
    first = _slice_bound(func, "start", start)
    last = _slice_bound(func, "stop", stop)
    if _is_chunked_list(data) and offsets is None:
        return _chunkwise(data, lambda c: list_slice(c, first, last))
    j, kind = _as_jagged(func, data, offsets)
    return _finish_rows(_list_slice(func, j, first, last), kind)


def truncate(data: Any, length: int, *, offsets: Any = None) -> Any:
    """Keep the first ``length`` elements of every row (``row[:length]``).

    Parameters
    ----------
    data
        A :class:`Jagged`, an Arrow list array, or values with ``offsets=``.
    length
        Elements to keep; negative drops that many from each row's end, as in Python.
    offsets
        Row offsets of ``data`` when it is a values array.

    Returns
    -------
    Jagged, pyarrow.Array or tuple
        As :func:`list_slice`.

    Raises
    ------
    TypeError
        ``length`` not an integer.

    See Also
    --------
    list_slice : Any ``[start:stop]``.

    Examples
    --------
    >>> asp.truncate(asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7], [3, 6]]), 2)
    Jagged([[1, 2], [2, 4], [3, 6]], dtype=int64, offsets=int32)
    """
    func = "truncate"
    if length is None:
        msg = f"{func}: length must be an integer, got NoneType"
        raise ArrowSparseTypeError(msg)
    stop = _slice_bound(func, "length", length)
    if _is_chunked_list(data) and offsets is None:
        return _chunkwise(data, lambda c: truncate(c, length))
    j, kind = _as_jagged(func, data, offsets)
    return _finish_rows(_list_slice(func, j, 0, stop), kind)


# ======================================================================== unique
def _unique(func: str, j: Jagged) -> Jagged:
    vals = j.values
    assert isinstance(vals, np.ndarray)
    if vals.ndim != 1:
        msg = f"{func}: rows must hold scalars, got values of shape {vals.shape}"
        raise ArrowSparseTypeError(msg)
    work = vals.view(np.uint8) if vals.dtype == bool else \
        vals.astype(np.float32) if vals.dtype == np.float16 else vals
    out, counts = get_kernel("elementwise", "unique_rows")(
        work, _i64(j.offsets), _u8(j.validity), _u8(j.values_validity), work.dtype)
    out = out.view(bool) if vals.dtype == bool else out.astype(vals.dtype, copy=False)
    offsets = np.zeros(len(counts) + 1, dtype=j.offsets.dtype)
    np.cumsum(counts, out=offsets[1:])
    return Jagged(out, offsets, j.validity, validate=False)


def jagged_unique(data: Any, *, offsets: Any = None) -> Any:
    """Sort and deduplicate every row: its distinct values, ascending.

    Parameters
    ----------
    data
        A :class:`Jagged` (nested: per innermost list), an Arrow list array, or 1-D
        values with ``offsets=``.
    offsets
        Row offsets of ``data`` when it is a values array.

    Returns
    -------
    Jagged, pyarrow.Array or tuple
        The form of ``data`` (``(values, offsets)`` for a values array): each row sorted
        ascending without repeats. NaNs count as one value (sorted last, like
        ``numpy.unique``); null elements are dropped; null rows stay null.

    Raises
    ------
    TypeError
        Rows of vectors (2-D values), or non-numeric values.

    See Also
    --------
    numpy.unique : The same on one array.

    Examples
    --------
    >>> asp.jagged_unique(asp.Jagged.from_list([[3, 1, 3, 2], [], None, [7, 7]]))
    Jagged([[1, 2, 3], [], None, [7]], dtype=int64, offsets=int32)
    """
    func = "jagged_unique"
    if _is_chunked_list(data) and offsets is None:
        return _chunkwise(data, lambda c: jagged_unique(c))
    j, kind = _as_jagged(func, data, offsets)
    return _finish_rows(_map_innermost(j, lambda lvl: _unique(func, lvl)), kind)


# ======================================================================== repeat
def repeat(x: Any, like: Any) -> Any:
    """Fill every row of ``like`` with that row's value of ``x`` (broadcast per row).

    Parameters
    ----------
    x
        One value or vector per row: ``[rows]`` or ``[rows, *inner]`` (numpy or Arrow).
    like
        A :class:`Jagged` (nested: down to the leaves) or Arrow list array giving the rows.

    Returns
    -------
    Jagged or pyarrow.Array
        The kind of ``like`` with its offsets (zero-copy) and validity; element ``k`` of
        row ``r`` is ``x[r]``.

    Raises
    ------
    ValueError
        ``x`` with a number of rows other than ``like``'s.
    TypeError
        Non-numeric ``x``, or ``like`` not jagged.

    See Also
    --------
    expand_into_jagged : The same with offsets, giving values.

    Examples
    --------
    >>> like = asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7], [3, 6]])
    >>> asp.repeat(np.array([0.5, 1.0, 2.0]), like)
    Jagged([[0.5, 0.5, 0.5], [1.0, 1.0, 1.0, 1.0], [2.0, 2.0]], dtype=float64, offsets=int32)
    """
    func = "repeat"
    arr = v.as_values_array(func, "x", x)
    j, kind = _as_jagged(func, like, None, "like")
    if len(arr) != j.num_rows:
        msg = f"{func}: x has {len(arr)} rows but like has {j.num_rows}"
        raise ArrowSparseValueError(msg)
    wins, (start, stop) = _windows(j)
    window = _repeat(arr, _leaf_offsets(wins), start, stop)
    return _finish(_rebuild(wins, window, start, [n.validity for n, _, _ in wins], None), kind)


def expand_into_jagged(x: Any, offsets: Any) -> Any:
    """Repeat each row's value or vector over its elements, giving jagged values.

    Parameters
    ----------
    x
        One value or vector per row: ``[rows]`` or ``[rows, *inner]`` (numpy or Arrow).
    offsets
        Row offsets (``rows + 1`` long), or a list of offsets, outermost first, to
        repeat down several jagged levels.

    Returns
    -------
    numpy.ndarray or pyarrow.Array
        Values ``[offsets[-1][-1], *inner]``: position ``k`` of row ``r`` holds ``x[r]``;
        positions before the first row hold 0.

    Raises
    ------
    ValueError
        Malformed offsets, or ``x`` with the wrong number of rows.
    TypeError
        Non-numeric ``x`` or non-integer offsets.

    See Also
    --------
    repeat : The same shaped like a Jagged.

    Examples
    --------
    >>> asp.expand_into_jagged(np.array([10, 20, 30]), np.array([0, 3, 7, 9]))
    array([10, 10, 10, 20, 20, 20, 20, 30, 30])
    """
    func = "expand_into_jagged"
    arr = v.as_values_array(func, "x", x)
    if isinstance(offsets, (np.ndarray, pa.Array, pa.ChunkedArray)):
        offsets = [offsets]
    last = offsets[-1] if isinstance(offsets, (list, tuple)) and offsets else offsets
    first = v.as_index_array(func, "offsets[-1]", last)
    offs = _offsets_list(func, offsets, int(first[-1]) if len(first) else 0)
    rows = len(offs[0]) - 1
    if len(arr) != rows:
        msg = f"{func}: x has {len(arr)} rows but offsets[0] describes {rows}"
        raise ArrowSparseValueError(msg)
    comp = _i64(offs[0])
    for o in offs[1:]:
        comp = _i64(o[comp])
    start, stop = int(comp[0]), int(comp[-1])
    total = int(offs[-1][-1])
    out = _zeros(func, (total,) + arr.shape[1:], arr.dtype)
    out[start:stop] = _repeat(arr, comp, start, stop)
    return pa.array(out) if isinstance(x, (pa.Array, pa.ChunkedArray)) else out

