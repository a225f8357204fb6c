"""Per-row scans: ``jagged_softmax``, ``segment_softmax`` and ``segment_cumsum``."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate as v
from .._backend import device_checks, get_kernel
from ..jagged import Jagged
from ._args import (
    _INT64_MAX,
    _VALUES_KINDS,
    _as_jagged,
    _chunkwise,
    _finish,
    _finish_rows,
    _float_dtype,
    _i64,
    _is_chunked_list,
    _map_innermost,
    _max_length,
    _segments_input,
    _u8,
    _window_as,
    _zeros,
)

__all__ = ["jagged_softmax", "segment_cumsum", "segment_softmax"]


def _row_scan_buffers(func: str, j: Jagged, min_len: int, dtype: np.dtype, zeroed: bool
                      ) -> tuple[Any, Any]:
    """``(values as 2-D dtype, out)`` for a kernel that writes the positions the rows address.

    Host: ``out`` spans ``max(offsets[-1], min_len)`` values, zeroed outside the rows (all
    of it when ``zeroed``), and only the rows' window is converted. Device: the whole
    values buffer, all zeroed (the window's bounds are not read back).
    """
    vals = j.values
    xp = j.xp
    width = int(np.prod(vals.shape[1:], dtype=np.int64))
    if xp is np:
        start, stop = int(j.offsets[0]), int(j.offsets[-1])
        total = max(stop, min_len)
    else:
        start, stop = 0, len(vals)
        total, zeroed = stop, True
    if zeroed:
        out = _zeros(func, (total, width), dtype, xp)
    else:
        out = v.empty(func, (total, width), dtype)
        out[:start] = 0  # the kernel writes every position the rows address, and only those
        out[stop:] = 0
    return _window_as(vals, start, stop, dtype), out


def _scanned(j: Jagged, out: Any) -> Jagged:
    """``j`` with new values ``out`` (2-D, reshaped to the values' inner shape)."""
    total = len(out)
    vv = None if j.values_validity is None else j.values_validity[:total]
    return Jagged._trusted(out.reshape((total,) + j.values.shape[1:]), j.offsets, j.validity,
                           vv)


def _softmax(func: str, j: Jagged, max_length: int, min_len: int,
             keep_half: bool = False) -> Jagged:
    """Softmax of ``j``'s rows; ``keep_half``: float16 values answer in float16 (FBGEMM)."""
    x, out = _row_scan_buffers(func, j, min_len, _float_dtype(j.values.dtype), zeroed=False)
    get_kernel("elementwise", "softmax", j.xp)(
        x, _i64(j.offsets), _u8(j.validity), _u8(j.values_validity), max_length, out)
    if keep_half and j.values.dtype == np.float16:
        out = out.astype(np.float16)
    return _scanned(j, out)


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
    tuple, pyarrow.Array or Jagged
        Floats (float16 and float32 keep their dtype, as in FBGEMM; other dtypes give
        float64; float16 is computed in float32). A values array in gives FBGEMM's
        ``(values, offsets)`` (Arrow arrays for Arrow values), values shaped like the
        input's with 0 where no row addresses a value; a :class:`Jagged` or an Arrow
        list array gives the same kind.

    Raises
    ------
    ValueError
        Malformed offsets, or a negative ``max_length``.
    TypeError
        Non-numeric values, or ``offsets`` given with a Jagged.

    See Also
    --------
    segment_softmax : The same with lengths or segment ids, null rows and null elements.

    Notes
    -----
    FBGEMM requires ``max_L`` and leaves the positions past it unset; here it may be
    left out and those positions are 0. In arrow_sparse 0.1.0 a values array gave the
    values alone, and float16 gave float32 (see CHANGELOG.md).

    On the device: no synchronisation (one kernel); a Jagged's result spans its whole
    values buffer (0 where no row addresses a value). Bad offsets are raised by the next
    check (docs/gpu.md, "Dispatch").

    Examples
    --------
    >>> values = np.array([0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 5.0, 5.0])
    >>> out, offsets = asp.jagged_softmax(values, np.array([0, 2, 6, 8]))
    >>> out.round(3)
    array([0.5 , 0.5 , 0.25, 0.25, 0.25, 0.25, 0.5 , 0.5 ])
    >>> asp.jagged_softmax(values, np.array([0, 2, 6, 8]), max_length=1)[0]
    array([1., 0., 1., 0., 0., 0., 1., 0.])
    >>> asp.jagged_softmax(asp.Jagged.from_list([[0.0, 0.0], [3.0]]))
    Jagged([[0.5, 0.5], [1.0]], dtype=float64, offsets=int32)
    """
    func = "jagged_softmax"
    if _is_chunked_list(values) and offsets is None:
        return _chunkwise(values, lambda c: jagged_softmax(c, None, max_length))
    j, kind = _as_jagged(func, values, offsets, "values")
    limit = _max_length(func, max_length)
    min_len = len(j.values) if kind in _VALUES_KINDS else 0
    result = _finish_rows(
        _map_innermost(j, lambda lvl: _softmax(func, lvl, limit, min_len, keep_half=True)),
        kind)
    device_checks(func, j.xp)
    return result


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
        Floats (float16 and float32 give float32, other dtypes float64) in the form of
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

    On the device: no synchronisation (one kernel), except with ``segment_ids`` and no
    way to know the number of rows: the last id is read back (one synchronisation). A
    Jagged's result spans its whole values buffer (0 where no row addresses a value).

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
    result = _finish(_map_innermost(j, lambda lvl: _softmax(func, lvl, _INT64_MAX, min_len)),
                     kind)
    device_checks(func, j.xp)
    return result


def _cumsum_dtype(dtype: np.dtype) -> np.dtype:
    if dtype.kind in "bi":
        return np.dtype(np.int64)
    if dtype.kind == "u":
        return np.dtype(np.uint64)
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def _cumsum(j: Jagged, exclusive: bool, min_len: int) -> Jagged:
    x, out = _row_scan_buffers("segment_cumsum", j, min_len, _cumsum_dtype(j.values.dtype),
                               zeroed=True)
    get_kernel("elementwise", "cumsum", j.xp)(
        x, _i64(j.offsets), _u8(j.validity), _u8(j.values_validity), exclusive, out)
    return _scanned(j, out)


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

    Notes
    -----
    On the device: as :func:`segment_softmax` (no synchronisation but the last segment
    id read back with ``segment_ids``).

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
    result = _finish(_map_innermost(j, lambda lvl: _cumsum(lvl, excl, min_len)), kind)
    device_checks(func, j.xp)
    return result
