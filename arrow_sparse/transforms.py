"""Feature-pipeline transforms on list columns: NVTabular's vocabulary without cuDF or Dask.

Hash bucketing, vocabulary encoding (categorify), bucketizing, value counts, row
length statistics, padding/truncation to fixed length and null handling, on Arrow
``list``/``large_list`` arrays (and ChunkedArrays, chunk by chunk), on
:class:`~arrow_sparse.Jagged` batches and, for the element-wise ones, on flat numpy or
Arrow arrays. docs/feature-transforms.md explains the rules; the examples use Caffe2's
batch ``[1, 2, 3] [2, 4, 6, 7] [3, 6]``.

Element-wise transforms (:func:`hash_bucket`, :func:`categorify`, :func:`bucketize`)
only replace the leaf values: the result shares the input's offsets and row validity
buffers (no copy), whatever the nesting depth.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import _arrow
from . import _validate as v
from ._backend import get_kernel
from .errors import ArrowSparseIOError, ArrowSparseTypeError, ArrowSparseValueError
from .jagged import Jagged

__all__ = [
    "LengthStats",
    "Vocabulary",
    "bucketize",
    "categorify",
    "drop_nulls",
    "fill_null",
    "fit_vocabulary",
    "hash_bucket",
    "length_stats",
    "pad_or_truncate",
    "value_counts",
]

#: Id of padding (never produced by :func:`categorify`; the default ``pad_value``).
PADDING_ID = 0
#: Id of null elements and of values not in the vocabulary.
MISSING_ID = 1
#: Id of the most frequent vocabulary entry; the others follow in order.
FIRST_ID = 2

_VOCABULARY_KEY = b"arrow_sparse.vocabulary"
_COLUMN_TYPES = (pa.Array, pa.ChunkedArray, Jagged, np.ndarray)


def _kernel(name: str) -> Any:
    return get_kernel("transforms", name)


# ----------------------------------------------------------------------- leaves
class _Leaf:
    """The scalar elements of a column, at logical positions: numbers or Arrow strings."""

    __slots__ = ("kind", "desc", "values", "offsets", "data", "_mask", "_source")

    def __init__(self, kind: str, desc: str, *, values: Any = None, offsets: Any = None,
                 data: Any = None, mask: np.ndarray | None = None,
                 source: pa.Array | None = None) -> None:
        self.kind = kind          # "int", "float", "bool" or "bytes"
        self.desc = desc          # type name for messages
        self.values = values      # numbers: 1-D numpy
        self.offsets = offsets    # bytes: offsets (len + 1) and the data buffer
        self.data = data
        self._mask = mask
        self._source = source     # Arrow array whose validity is read on demand

    def validity(self) -> np.ndarray | None:
        if self._source is not None:
            return _arrow.validity_of(self._source)
        return self._mask


def _numpy_leaf(values: np.ndarray, mask: np.ndarray | None) -> _Leaf:
    """Wrap numpy values as a leaf; N-D values are flattened (a mask repeats per row)."""
    width = int(np.prod(values.shape[1:])) if values.ndim > 1 else 1
    flat = np.ascontiguousarray(values).reshape(-1)
    if mask is not None and width != 1:
        mask = np.repeat(mask, width)
    kind = {"i": "int", "u": "int", "f": "float", "b": "bool"}[values.dtype.kind]
    return _Leaf(kind, f"dtype {values.dtype}", values=flat, mask=mask)


def _bytes_type(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t)
                or pa.types.is_binary(t) or pa.types.is_large_binary(t))


def _arrow_leaf(func: str, a: pa.Array) -> tuple[_Leaf, pa.Array]:
    """Wrap a primitive or string Arrow array as a leaf (views are cast: one copy)."""
    t = a.type
    if pa.types.is_string_view(t):
        a = a.cast(pa.large_string())
    elif pa.types.is_binary_view(t):
        a = a.cast(pa.large_binary())
    t = a.type
    desc = f"Arrow type {t}"
    if _bytes_type(t):
        large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
        n = len(a)
        bufs = a.buffers()
        dtype = np.int64 if large else np.int32
        offsets = np.zeros(n + 1, dtype=dtype) if bufs[1] is None else \
            np.frombuffer(bufs[1], dtype=dtype)[a.offset:a.offset + n + 1]
        data = np.zeros(0, dtype=np.uint8) if bufs[2] is None else \
            np.frombuffer(bufs[2], dtype=np.uint8)
        return _Leaf("bytes", desc, offsets=offsets, data=data, source=a), a
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t):
        kind = "int" if pa.types.is_integer(t) else "float" if pa.types.is_floating(t) else "bool"
        if pa.types.is_float16(t):
            msg = f"{func}: values of Arrow type halffloat are not supported; cast to float32"
            raise ArrowSparseTypeError(msg)
        return _Leaf(kind, desc, values=_arrow.primitive_values(func, a), source=a), a
    hint = "; decode it first (pyarrow.compute.dictionary_decode)" \
        if pa.types.is_dictionary(t) else ""
    msg = f"{func}: values of Arrow type {t} are not supported{hint}"
    raise ArrowSparseTypeError(msg)


def _not_a_column(func: str, arg: str, x: Any, what: str) -> ArrowSparseTypeError:
    got = f"Arrow type {x.type}" if isinstance(x, (pa.Array, pa.ChunkedArray)) \
        else type(x).__name__
    return ArrowSparseTypeError(f"{func}: {arg} must be {what}, got {got}")


def _per_chunk(func: str, x: pa.ChunkedArray, one: Any) -> pa.ChunkedArray:
    """Apply ``one`` chunk by chunk; the result type comes from an empty chunk."""
    chunks = [one(c) for c in x.chunks]
    out_type = chunks[0].type if chunks else one(pa.array([], type=x.type)).type
    return pa.chunked_array(chunks, type=out_type)


# ------------------------------------------------------------ element-wise maps
class _ElementOp:
    """Computes int64 results for leaf positions ``[start, stop)``."""

    keep_nulls = True

    def check(self, func: str, leaf: _Leaf) -> None:
        raise NotImplementedError

    def compute(self, leaf: _Leaf, start: int, stop: int, out: np.ndarray) -> None:
        raise NotImplementedError


def _map_elements(func: str, x: Any, op: _ElementOp) -> Any:
    if isinstance(x, Jagged):
        return _map_jagged(func, x, op, 0, x.num_rows)
    if isinstance(x, pa.ChunkedArray):
        return _per_chunk(func, x, lambda c: _map_arrow(func, c, op, 0, len(c)))
    if isinstance(x, pa.Array):
        return _map_arrow(func, x, op, 0, len(x))
    if isinstance(x, np.ndarray) and x.dtype.kind in "OSU" or isinstance(x, str):
        msg = (f"{func}: values must be numeric numpy arrays; pass strings as an Arrow "
               "array (pa.array(...)), got " + (f"dtype {x.dtype}" if isinstance(x, np.ndarray)
                                              else "str"))
        raise ArrowSparseTypeError(msg)
    if not isinstance(x, (np.ndarray, list, tuple, range)):
        raise _not_a_column(func, "values", x, "an Arrow array, a Jagged or a numpy array")
    values = v.as_values_array(func, "values", x, min_ndim=0)
    leaf = _numpy_leaf(values.reshape(-1), None)
    op.check(func, leaf)
    out = _int64_buffer(values.size, 0)[1]
    op.compute(leaf, 0, values.size, out)
    return out.reshape(values.shape)


def _map_jagged(func: str, j: Jagged, op: _ElementOp, start: int, stop: int) -> Jagged:
    """Rows ``[start, stop)`` of ``j`` mapped (earlier rows' values are zeros)."""
    whole = start == 0 and stop == j.num_rows
    offsets = j.offsets if whole else j.offsets[:stop + 1]
    validity = j.validity if whole or j.validity is None else j.validity[:stop]
    lo, hi = int(j.offsets[start]), int(j.offsets[stop])
    if isinstance(j.values, Jagged):
        child = _map_jagged(func, j.values, op, lo, hi)
        return Jagged(child, offsets, validity, validate=False)
    values = j.values[:hi]
    leaf = _numpy_leaf(values, None if j.values_validity is None else j.values_validity[:hi])
    op.check(func, leaf)
    width = leaf.values.size // hi if hi else 1
    out = _int64_buffer(values.size, lo * width)[1].reshape(values.shape)
    op.compute(leaf, lo * width, hi * width, out.reshape(-1))
    keep = j.values_validity[:hi] if op.keep_nulls and j.values_validity is not None else None
    return Jagged(out, offsets, validity, values_validity=keep, validate=False)


def _map_arrow(func: str, a: pa.Array, op: _ElementOp, start: int, stop: int) -> pa.Array:
    """Map logical rows ``[start, stop)`` of ``a``.

    The result has length ``stop`` and shares ``a``'s offsets and validity buffers
    (same ``offset``).
    """
    t = a.type
    null_count = a.null_count if stop == len(a) else -1
    if isinstance(t, _arrow.LIST_VIEW_TYPES):
        a = _arrow.list_view_to_list(a)
        t = a.type
    if isinstance(t, _arrow.LIST_TYPES):
        offs = _arrow.offsets_view(a)
        child = _map_arrow(func, a.values, op, int(offs[start]), int(offs[stop]))
        field = t.value_field.with_type(child.type)
        new_type = pa.large_list(field) if isinstance(t, pa.LargeListType) else pa.list_(field)
        buffers = a.buffers()[:2]
        if buffers[1] is None:
            buffers[1] = pa.py_buffer(np.zeros(a.offset + stop + 1, dtype=offs.dtype))
        return pa.Array.from_buffers(new_type, stop, buffers, null_count=null_count,
                                     offset=a.offset, children=[child])
    if isinstance(t, pa.FixedSizeListType):
        size = t.list_size
        child = _map_arrow(func, a.values, op, (a.offset + start) * size,
                           (a.offset + stop) * size)
        new_type = pa.list_(t.value_field.with_type(child.type), size)
        return pa.Array.from_buffers(new_type, stop, a.buffers()[:1], null_count=null_count,
                                     offset=a.offset, children=[child])
    if pa.types.is_nested(t):
        msg = f"{func}: values of Arrow type {t} are not supported; pass list columns"
        raise ArrowSparseTypeError(msg)
    leaf, a = _arrow_leaf(func, a)
    op.check(func, leaf)
    buffer, full = _int64_buffer(a.offset + stop, a.offset + start)
    op.compute(leaf, start, stop, full[a.offset:])
    validity = a.buffers()[0] if op.keep_nulls and a.null_count else None
    return pa.Array.from_buffers(pa.int64(), stop, [validity, buffer],
                                 null_count=-1 if validity is not None else 0, offset=a.offset)


def _int64_buffer(size: int, zeros: int) -> tuple[pa.Buffer, np.ndarray]:
    """Allocate ``size`` int64 (the first ``zeros`` zeroed): an Arrow buffer and its view.

    Allocated from Arrow's memory pool, which reuses freed memory: a pipeline that
    transforms batch after batch does not page-fault a fresh buffer each time.
    """
    buffer = pa.allocate_buffer(8 * size)
    view = np.frombuffer(buffer, dtype=np.int64)
    view[:zeros] = 0
    return buffer, view


class _HashOp(_ElementOp):
    def __init__(self, seed: int, num_buckets: int) -> None:
        self.seed = seed
        self.num_buckets = num_buckets

    def check(self, func: str, leaf: _Leaf) -> None:
        if leaf.kind not in ("int", "bytes"):
            msg = (f"{func}: values of {leaf.desc} cannot be hashed; hash_bucket takes "
                   "integers or strings (use bucketize for floats)")
            raise ArrowSparseTypeError(msg)

    def compute(self, leaf: _Leaf, start: int, stop: int, out: np.ndarray) -> None:
        if leaf.kind == "int":
            _kernel("hash_ints")(leaf.values, start, stop, self.seed, self.num_buckets, out)
        else:
            _kernel("hash_strings")(leaf.offsets, leaf.data, start, stop, self.seed,
                                    self.num_buckets, out)


class _BucketizeOp(_ElementOp):
    def __init__(self, boundaries: np.ndarray, right: bool) -> None:
        self.boundaries = boundaries
        self.right = right

    def check(self, func: str, leaf: _Leaf) -> None:
        if leaf.kind not in ("int", "float"):
            msg = f"{func}: values of {leaf.desc} cannot be bucketized; pass numbers"
            raise ArrowSparseTypeError(msg)

    def compute(self, leaf: _Leaf, start: int, stop: int, out: np.ndarray) -> None:
        common = np.result_type(leaf.values.dtype, self.boundaries.dtype)
        _kernel("bucketize")(leaf.values, start, stop, self.boundaries.astype(common),
                             self.right, out)


class _CategorifyOp(_ElementOp):
    keep_nulls = False

    def __init__(self, vocabulary: Vocabulary) -> None:
        self.vocabulary = vocabulary

    def check(self, func: str, leaf: _Leaf) -> None:
        kind = self.vocabulary.kind
        if (kind == "int64") != (leaf.kind == "int") or leaf.kind in ("float", "bool"):
            msg = (f"{func}: values of {leaf.desc} do not match a vocabulary of {kind} "
                   "values; vocabularies hold integers or strings")
            raise ArrowSparseTypeError(msg)

    def compute(self, leaf: _Leaf, start: int, stop: int, out: np.ndarray) -> None:
        table, strings = self.vocabulary._lookup_table()
        if leaf.kind == "int":
            _kernel("lookup_ints")(leaf.values, leaf.validity(), start, stop, table,
                                   MISSING_ID, out)
        else:
            _kernel("lookup_strings")(leaf.offsets, leaf.data, leaf.validity(), start, stop,
                                      strings, table, MISSING_ID, out)


def _data_buffer(arr: pa.Array) -> np.ndarray:
    buf = arr.buffers()[2]
    return np.zeros(0, dtype=np.uint8) if buf is None else np.frombuffer(buf, dtype=np.uint8)


def hash_bucket(values: Any, num_buckets: int, seed: int = 0) -> Any:
    """Hash integers or strings into buckets: ``XXH3_64(bytes, seed) % num_buckets``.

    Parameters
    ----------
    values
        Arrow list array (any nesting; ``list``, ``large_list``, ``list_view``,
        ``fixed_size_list``) or ChunkedArray of integers or strings (``string``,
        ``large_string``, ``binary``, ``large_binary``; views are cast), a flat Arrow
        array, a :class:`Jagged` or a numpy array of integers.
    num_buckets
        Number of buckets, in ``[1, 2**63 - 1]``.
    seed
        XXH3 seed, an integer in ``[0, 2**64)``.

    Returns
    -------
    pyarrow.Array, pyarrow.ChunkedArray, Jagged or numpy.ndarray
        The input's kind with int64 bucket ids in ``[0, num_buckets)``. Offsets and
        validity buffers are the input's (zero-copy); null rows and null elements stay
        null.

    Raises
    ------
    TypeError
        Float, boolean or other values; a non-integer ``num_buckets`` or ``seed``.
    ValueError
        ``num_buckets`` or ``seed`` out of range.

    See Also
    --------
    categorify : Exact ids from a fitted vocabulary.

    Notes
    -----
    The hash is XXH3-64 (``XXH3_64bits_withSeed`` of xxHash 0.8, Yann Collet) of the
    value's bytes, an unsigned 64-bit integer, reduced modulo ``num_buckets``:

    * an integer is hashed as the 8 little-endian bytes of its value as a two's
      complement int64 (every integer dtype gives the same bucket for the same value;
      uint64 values above ``2**63 - 1`` use their own 8 bytes);
    * a string is hashed as its UTF-8 bytes (binary: its bytes), without terminator.

    So ``xxhash.xxh3_64_intdigest(b"apple", seed=7) % n`` (the ``xxhash`` package) gives
    the same bucket. The ids are stable across runs, machines and releases;
    docs/feature-transforms.md lists test vectors.

    Examples
    --------
    >>> arr = pa.array([[1, 2, 3], [2, 4, 6, 7], None, [3, 6]])
    >>> asp.hash_bucket(arr, 10).to_pylist()
    [[8, 7, 9], [7, 6, 5, 5], None, [9, 5]]
    >>> asp.hash_bucket(pa.array([["apple", None], ["kiwi"]]), 1000, seed=7).to_pylist()
    [[341, None], [304]]
    >>> asp.hash_bucket(np.array([1, 2, 3]), 10)
    array([8, 7, 9])
    """
    func = "hash_bucket"
    num_buckets = _check_int(func, "num_buckets", num_buckets, 1, 2**63 - 1)
    seed = _check_int(func, "seed", seed, 0, 2**64 - 1)
    return _map_elements(func, values, _HashOp(seed, num_buckets))


def bucketize(values: Any, boundaries: Any, *, right: bool = False) -> Any:
    """Bucket numbers by sorted boundaries: the number of boundaries at or below each value.

    Parameters
    ----------
    values
        Arrow list array (any nesting) or ChunkedArray of numbers, a flat Arrow array,
        a :class:`Jagged` or a numpy array.
    boundaries
        1-D, non-decreasing, NaN-free numbers ``b[0] <= b[1] <= ... <= b[n-1]``.
    right
        Which side of an interval is closed. False (default): bucket ``i`` is
        ``b[i-1] <= x < b[i]``; True: ``b[i-1] < x <= b[i]``.

    Returns
    -------
    pyarrow.Array, pyarrow.ChunkedArray, Jagged or numpy.ndarray
        The input's kind with int64 bucket ids in ``[0, len(boundaries)]``. Offsets and
        validity are the input's (zero-copy); nulls stay null.

    Raises
    ------
    TypeError
        Non-numeric values or boundaries.
    ValueError
        Boundaries that are not 1-D, contain NaN or decrease.

    See Also
    --------
    numpy.digitize : The same rule (``right`` has the same meaning).

    Notes
    -----
    The id is ``numpy.digitize(x, boundaries, right=right)``, which equals
    ``numpy.searchsorted(boundaries, x, side="left" if right else "right")`` and
    ``torch.bucketize(x, boundaries, right=not right)`` (torch's ``right`` has the
    opposite meaning). NaN values go to the last bucket, ``len(boundaries)``, as in
    numpy. Values and boundaries are compared in ``numpy.result_type`` of their dtypes.

    Examples
    --------
    >>> arr = pa.array([[1, 2, 3], [2, 4, 6, 7], None, [3, 6]])
    >>> asp.bucketize(arr, [2, 5]).to_pylist()
    [[0, 1, 1], [1, 1, 2, 2], None, [1, 2]]
    >>> asp.bucketize(arr, [2, 5], right=True).to_pylist()
    [[0, 0, 1], [0, 1, 2, 2], None, [1, 2]]
    >>> asp.bucketize(np.array([0.5, 2.0, np.nan]), [1.0, 2.0])
    array([0, 2, 2])
    """
    func = "bucketize"
    right = v.check_bool(func, "right", right)
    bounds = v.as_values_array(func, "boundaries", boundaries, min_ndim=0)
    if bounds.ndim != 1:
        msg = f"{func}: boundaries must be 1-dimensional, got shape {bounds.shape}"
        raise ArrowSparseValueError(msg)
    if bounds.dtype.kind == "b":
        msg = f"{func}: boundaries must be numbers, got dtype bool"
        raise ArrowSparseTypeError(msg)
    if bounds.dtype.kind == "f" and np.isnan(bounds).any():
        pos = v.first_true(np.isnan(bounds))
        v.fail_value(func, "boundaries", "must not contain NaN", pos, bounds[pos])
    decreasing = bounds[1:] < bounds[:-1]
    if decreasing.any():
        pos = v.first_true(decreasing) + 1
        v.fail_value(func, "boundaries", "must be non-decreasing", pos, bounds[pos])
    return _map_elements(func, values, _BucketizeOp(np.ascontiguousarray(bounds), right))


def categorify(values: Any, vocabulary: Vocabulary) -> Any:
    """Encode integers or strings as vocabulary ids (0 padding, 1 null or unknown, >= 2 known).

    Parameters
    ----------
    values
        Arrow list array (any nesting) or ChunkedArray of integers or strings, a flat
        Arrow array, a :class:`Jagged` or a numpy array of integers.
    vocabulary
        A :class:`Vocabulary` of the same kind (integers or strings), e.g. from
        :func:`fit_vocabulary`.

    Returns
    -------
    pyarrow.Array, pyarrow.ChunkedArray, Jagged or numpy.ndarray
        The input's kind with int64 ids. Offsets and row validity are the input's
        (zero-copy); null rows stay null. Elements are never null: a null element gets
        id 1.

    Raises
    ------
    TypeError
        ``vocabulary`` is not a :class:`Vocabulary`, or its kind does not match the
        values (integers against strings, or floats).

    See Also
    --------
    fit_vocabulary : Build the vocabulary.
    hash_bucket : Ids without a vocabulary.

    Notes
    -----
    As in NVTabular's ``Categorify``: id 0 is reserved for padding (the default
    ``pad_value`` of :func:`pad_or_truncate`) and never produced; id 1 is given to null
    elements and to values not in the vocabulary (out-of-vocabulary); vocabulary entry
    ``k`` (in :attr:`Vocabulary.values` order: descending count, ties by ascending
    value) gets id ``k + 2``. An embedding table for the ids needs
    :attr:`Vocabulary.num_ids` rows.

    Examples
    --------
    >>> arr = pa.array([[1, 2, 3], [2, 4, 6, 7], None, [3, 6]])
    >>> vocab = asp.fit_vocabulary(arr, freq_threshold=2)
    >>> vocab.values, vocab.counts
    (array([2, 3, 6]), array([2, 2, 2]))
    >>> asp.categorify(arr, vocab).to_pylist()
    [[1, 2, 3], [2, 1, 4, 1], None, [3, 4]]
    >>> words = pa.array([["b", "a", None], ["b", "z"]])
    >>> asp.categorify(words, asp.fit_vocabulary(pa.array(["a", "b", "b"]))).to_pylist()
    [[2, 3, 1], [2, 1]]
    """
    func = "categorify"
    if not isinstance(vocabulary, Vocabulary):
        msg = f"{func}: vocabulary must be a Vocabulary, got {type(vocabulary).__name__}"
        raise ArrowSparseTypeError(msg)
    return _map_elements(func, values, _CategorifyOp(vocabulary))


def _check_int(func: str, arg: str, x: Any, lo: int, hi: int) -> int:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        msg = f"{func}: {arg} must be an integer, got {type(x).__name__}"
        raise ArrowSparseTypeError(msg)
    if not lo <= int(x) <= hi:
        msg = f"{func}: {arg} must be in [{lo}, {hi}], got {x}"
        raise ArrowSparseValueError(msg)
    return int(x)


# -------------------------------------------------------------- one-level columns
class _Col:
    """One list level: offsets, row validity and its elements (numbers or an Arrow leaf)."""

    __slots__ = ("offsets", "validity", "values", "values_validity", "leaf", "field",
                 "source")

    def __init__(self, offsets: np.ndarray, validity: np.ndarray | None, values: Any,
                 values_validity: np.ndarray | None, leaf: pa.Array | None,
                 field: pa.Field | None, source: Any) -> None:
        self.offsets = offsets
        self.validity = validity
        self.values = values                   # numpy (N-D allowed) unless ``leaf``
        self.values_validity = values_validity
        self.leaf = leaf                       # Arrow string/binary leaf
        self.field = field                     # Arrow value field (Arrow input)
        self.source = source                   # the input (Arrow array or Jagged)

    @property
    def num_rows(self) -> int:
        return len(self.offsets) - 1


def _read_col(func: str, x: Any, *, strings: bool = True) -> _Col:
    """One-level list column of a Jagged or an Arrow list array (not chunked)."""
    if isinstance(x, Jagged):
        if isinstance(x.values, Jagged):
            msg = f"{func}: nested lists are not supported; pass one level of lists"
            raise ArrowSparseTypeError(msg)
        return _Col(x.offsets, x.validity, x.values, x.values_validity, None, None, x)
    if not isinstance(x, pa.Array) or not _arrow.is_list_type(x.type):
        raise _not_a_column(func, "values", x, "an Arrow list array or a Jagged")
    if isinstance(x.type, _arrow.LIST_VIEW_TYPES):
        x = _arrow.list_view_to_list(x)
    child = x.values
    t = child.type
    values: Any = None
    leaf = None
    if _arrow.is_list_type(t):
        msg = f"{func}: nested lists are not supported; pass one level of lists"
        raise ArrowSparseTypeError(msg)
    if isinstance(t, pa.FixedSizeListType):
        values = _arrow.fixed_size_values(func, child)
    elif strings and (_bytes_type(t) or pa.types.is_string_view(t)
                      or pa.types.is_binary_view(t)):
        leaf = _arrow_leaf(func, child)[1]
    else:
        lf = _arrow_leaf(func, child)[0]
        if lf.kind == "bytes":
            msg = (f"{func}: values of Arrow type {t} are not supported; encode strings "
                   "first with categorify or hash_bucket")
            raise ArrowSparseTypeError(msg)
        values = lf.values
    return _Col(_arrow.offsets_view(x), _arrow.validity_of(x), values,
                _arrow.validity_of(child), leaf, x.type.value_field, x)


def _list_like(col: _Col, offsets: np.ndarray, validity: np.ndarray | None,
               values: Any) -> Any:
    """Build a result of the input's kind: Jagged, or an Arrow list with its field."""
    if isinstance(col.source, Jagged):
        return Jagged(values, offsets, validity, validate=False)
    child = values if isinstance(values, pa.Array) else _arrow.array_from_numpy(values, None)
    assert col.field is not None
    field = col.field.with_type(child.type)
    t = pa.large_list(field) if offsets.dtype == np.int64 else pa.list_(field)
    null_count = 0 if validity is None else int(len(validity) - np.count_nonzero(validity))
    return pa.Array.from_buffers(t, len(offsets) - 1, [_arrow.validity_buffer(validity),
                                                       pa.py_buffer(offsets)],
                                 null_count=null_count, children=[child])


def _structural(func: str, x: Any, one: Any) -> Any:
    if isinstance(x, pa.ChunkedArray):
        return _per_chunk(func, x, one)
    if isinstance(x, (pa.Array, Jagged)):
        return one(x)
    raise _not_a_column(func, "values", x, "an Arrow list array, a ChunkedArray or a Jagged")


def _scalar_of(func: str, arg: str, value: Any, dtype: np.dtype) -> np.generic:
    """``value`` as a scalar of ``dtype``; raise if it does not fit exactly."""
    try:
        with np.errstate(invalid="ignore", over="ignore"):
            scalar = np.array(value).astype(dtype)[()]
        exact = isinstance(value, (int, float, bool, np.number, np.bool_)) and (
            bool(scalar == value) or bool(np.isnan(scalar) and np.isnan(value)))
    except (TypeError, ValueError, OverflowError):
        exact = False
    if not exact:
        msg = f"{func}: {arg} {value!r} does not fit the values dtype {dtype}"
        raise ArrowSparseValueError(msg)
    return cast(np.generic, scalar)


def pad_or_truncate(values: Any, length: int, pad_value: Any = 0, side: str = "right") -> Any:
    """Make every row exactly ``length`` long: pad short rows, truncate long ones.

    Parameters
    ----------
    values
        One-level Arrow list array or ChunkedArray of numbers (elements may be
        ``fixed_size_list`` vectors), or a :class:`Jagged`.
    length
        The fixed row length (0 allowed).
    pad_value
        Value of padding positions; must fit the values dtype exactly. Default 0,
        the padding id of :func:`categorify`.
    side
        ``"right"``: values start at position 0 and padding goes at the end;
        truncation keeps a row's first ``length`` elements. ``"left"``: padding goes
        in front and values end at the last position; truncation keeps the row's
        last ``length`` elements (the most recent items of a history).

    Returns
    -------
    pyarrow.FixedSizeListArray, pyarrow.ChunkedArray or numpy.ndarray
        Arrow input: ``fixed_size_list<T>[length]``; null rows stay null (their slots
        hold ``pad_value``) and null elements stay null. Jagged input: a numpy array
        ``[rows, length, *inner]``; null rows are all padding and null elements hold
        ``pad_value``.

    Raises
    ------
    TypeError
        Strings or nested lists, or a non-integer ``length``.
    ValueError
        A negative ``length``, an unknown ``side``, or a ``pad_value`` that does not
        fit the dtype.

    See Also
    --------
    Jagged.to_padded : Pad to the longest row (right side).

    Examples
    --------
    >>> arr = pa.array([[1, 2, 3], [2, 4, 6, 7], None, [3, 6]])
    >>> asp.pad_or_truncate(arr, 3).to_pylist()
    [[1, 2, 3], [2, 4, 6], None, [3, 6, 0]]
    >>> asp.pad_or_truncate(asp.Jagged.from_arrow(arr), 3, pad_value=-1, side="left")
    array([[ 1,  2,  3],
           [ 4,  6,  7],
           [-1, -1, -1],
           [-1,  3,  6]])
    """
    func = "pad_or_truncate"
    length = v.check_count(func, "length", length)
    left = _check_side(func, side)

    def one(x: Any) -> Any:
        col = _read_col(func, x, strings=False)
        values2 = col.values
        inner = values2.shape[1:]
        width = int(np.prod(inner)) if inner else 1
        pad = _scalar_of(func, "pad_value", pad_value, values2.dtype)
        rows = col.num_rows
        out = v.empty(func, (rows, length) + inner, values2.dtype)
        arrow = isinstance(x, pa.Array)
        out_valid = np.ones((rows, length), dtype=np.uint8) \
            if arrow and col.values_validity is not None else None
        _kernel("pad_or_truncate")(np.ascontiguousarray(values2).reshape(len(values2), width),
                                   col.offsets, col.validity, col.values_validity, length,
                                   left, pad, out.reshape(rows, length, width), out_valid)
        if not arrow:
            return out
        child_valid = None if out_valid is None else out_valid.reshape(-1).view(bool)
        child = _arrow.array_from_numpy(out.reshape((rows * length,) + inner), child_valid)
        assert col.field is not None
        t = pa.list_(col.field.with_type(child.type), length)
        validity = col.validity
        null_count = 0 if validity is None else int(rows - np.count_nonzero(validity))
        return pa.Array.from_buffers(t, rows, [_arrow.validity_buffer(validity)],
                                     null_count=null_count, children=[child])

    return _structural(func, values, one)


def _check_side(func: str, side: Any) -> bool:
    if not isinstance(side, str) or side not in ("right", "left"):
        msg = f"{func}: side must be 'right' or 'left', got {side!r}"
        raise ArrowSparseValueError(msg)
    return bool(side == "left")


def drop_nulls(values: Any) -> Any:
    """Remove the null elements inside rows; null rows stay null.

    Parameters
    ----------
    values
        One-level Arrow list array or ChunkedArray (numbers or strings), or a
        :class:`Jagged`.

    Returns
    -------
    pyarrow.Array, pyarrow.ChunkedArray or Jagged
        The input's kind and list type. Without null elements the input itself is
        returned; otherwise new values and offsets (starting at 0, same offsets dtype).
        Null rows stay null (and hold no elements).

    Raises
    ------
    TypeError
        Nested lists or unsupported value types.

    See Also
    --------
    fill_null : Replace null elements instead.

    Examples
    --------
    >>> arr = pa.array([[1, None, 3], [None], None, [3, 6]])
    >>> asp.drop_nulls(arr).to_pylist()
    [[1, 3], [], None, [3, 6]]
    >>> asp.drop_nulls(pa.array([["a", None, "b"]])).to_pylist()
    [['a', 'b']]
    """
    func = "drop_nulls"

    def one(x: Any) -> Any:
        col = _read_col(func, x)
        if col.values_validity is None:
            return x
        offsets, positions = _kernel("compact")(col.offsets, col.validity, col.values_validity)
        kept = col.leaf.take(pa.array(positions)) if col.leaf is not None \
            else col.values[positions]
        return _list_like(col, offsets, col.validity, kept)

    return _structural(func, values, one)


def fill_null(values: Any, value: Any, *, empty_null_rows: bool = False) -> Any:
    """Replace null elements inside rows by ``value``; optionally make null rows empty.

    Parameters
    ----------
    values
        One-level Arrow list array or ChunkedArray (numbers or strings), or a
        :class:`Jagged`.
    value
        The fill value: a number that fits the values dtype exactly, or a ``str``
        (``bytes`` for binary) for strings.
    empty_null_rows
        Also turn null rows into empty rows (the result has no null rows).

    Returns
    -------
    pyarrow.Array, pyarrow.ChunkedArray or Jagged
        The input's kind with new values and the input's offsets (zero-copy). With
        ``empty_null_rows`` the row validity is dropped; the offsets are rebuilt only
        where a null row covers elements (Arrow allows that).

    Raises
    ------
    TypeError
        Nested lists or unsupported value types; a non-string ``value`` for strings.
    ValueError
        A numeric ``value`` that does not fit the dtype.

    See Also
    --------
    drop_nulls : Remove null elements instead.

    Examples
    --------
    >>> arr = pa.array([[1, None, 3], None, [None, 6]])
    >>> asp.fill_null(arr, 0).to_pylist()
    [[1, 0, 3], None, [0, 6]]
    >>> asp.fill_null(arr, -1, empty_null_rows=True).to_pylist()
    [[1, -1, 3], [], [-1, 6]]
    """
    func = "fill_null"
    empty_rows = v.check_bool(func, "empty_null_rows", empty_null_rows)

    def one(x: Any) -> Any:
        col = _read_col(func, x)
        stop = int(col.offsets[-1])
        start = int(col.offsets[0])
        filled: Any
        if col.leaf is not None:
            want = bytes if pa.types.is_binary(col.leaf.type) or \
                pa.types.is_large_binary(col.leaf.type) else str
            if not isinstance(value, want):
                msg = (f"{func}: value must be a {want.__name__} for values of Arrow type "
                       f"{col.leaf.type}, got {type(value).__name__}")
                raise ArrowSparseTypeError(msg)
            filled = col.leaf.slice(0, stop)
            if col.values_validity is not None:
                filled = pc.fill_null(filled, pa.scalar(value, type=filled.type))
        else:
            fill = _scalar_of(func, "value", value, col.values.dtype)
            filled = col.values[:stop]
            if col.values_validity is not None:
                filled = np.zeros(col.values[:stop].shape, dtype=col.values.dtype)
                mask = col.values_validity[start:stop].reshape((-1,) + (1,) * (filled.ndim - 1))
                filled[start:stop] = np.where(mask, col.values[start:stop], fill)
        offsets, validity = col.offsets, col.validity
        if empty_rows and validity is not None:
            if np.diff(offsets)[~validity].any():
                offsets, positions = _kernel("compact")(offsets, validity, None)
                filled = filled.take(pa.array(positions)) if isinstance(filled, pa.Array) \
                    else filled[positions]
            validity = None
        if isinstance(x, pa.Array) and offsets is col.offsets and not isinstance(
                x.type, _arrow.LIST_VIEW_TYPES):
            child = filled if isinstance(filled, pa.Array) else \
                _arrow.array_from_numpy(filled, None)
            assert col.field is not None
            field = col.field.with_type(child.type)
            t = pa.large_list(field) if isinstance(x.type, pa.LargeListType) else pa.list_(field)
            bufs = x.buffers()[:2]
            if validity is None:
                bufs[0] = None
            if bufs[1] is None:
                bufs[1] = pa.py_buffer(np.zeros(x.offset + len(x) + 1, dtype=offsets.dtype))
            return pa.Array.from_buffers(t, len(x), bufs, offset=x.offset,
                                         null_count=0 if validity is None else x.null_count,
                                         children=[child])
        return _list_like(col, offsets, validity, filled)

    return _structural(func, values, one)


# ------------------------------------------------------------------ length stats
@dataclass(frozen=True)
class LengthStats:
    """Row-length statistics of a list column, from :func:`length_stats`.

    ``rows`` counts every row; ``null_rows`` the null ones; ``empty_rows`` the non-null
    rows without elements; ``total_values`` the elements of non-null rows and
    ``null_values`` the null ones among them. ``min``, ``p50``, ``p90``, ``p99`` and
    ``max`` are exact row lengths over the non-null rows (None when there are none);
    the percentiles use the nearest-rank rule: ``pq`` is the smallest length with at
    least ``q`` percent of the rows at or below it.

    Examples
    --------
    >>> stats = asp.length_stats(pa.array([[1, 2, 3], [2, 4, 6, 7], None, [3, 6], []]))
    >>> stats.p50, stats.max
    (2, 4)
    >>> stats.to_dict()["empty_rows"]
    1
    """

    rows: int
    null_rows: int
    empty_rows: int
    total_values: int
    null_values: int
    min: int | None
    p50: int | None
    p90: int | None
    p99: int | None
    max: int | None

    def to_dict(self) -> dict[str, int | None]:
        """Return the statistics as a dict, in field order."""
        return asdict(self)


def length_stats(values: Any) -> LengthStats:
    """Exact statistics of the row lengths of a list column.

    Parameters
    ----------
    values
        Arrow list array (any nesting: the outer rows are measured) or ChunkedArray
        (all chunks together), or a :class:`Jagged`.

    Returns
    -------
    LengthStats
        Rows, null rows, empty rows, total and null values, and min/p50/p90/p99/max
        length of the non-null rows (nearest-rank percentiles, exact).

    Raises
    ------
    TypeError
        Not a list column.

    See Also
    --------
    pad_or_truncate : Choose a fixed length from ``p90`` or ``p99``.

    Examples
    --------
    >>> asp.length_stats(pa.array([[1, 2, 3], [2, 4, 6, 7], None, [3, 6], []]))
    LengthStats(rows=5, null_rows=1, empty_rows=1, total_values=9, null_values=0,
                min=0, p50=2, p90=4, p99=4, max=4)
    """
    func = "length_stats"
    if isinstance(values, pa.ChunkedArray):
        parts = list(values.chunks)
    elif isinstance(values, (pa.Array, Jagged)):
        parts = [values]
    else:
        raise _not_a_column(func, "values", values,
                            "an Arrow list array, a ChunkedArray or a Jagged")
    rows = null_values = 0
    kept = []
    for part in parts:
        if isinstance(part, Jagged):
            offsets, validity = part.offsets, part.validity
            child_valid = part.values.validity if isinstance(part.values, Jagged) \
                else part.values_validity
        else:
            if not _arrow.is_list_type(part.type):
                raise _not_a_column(func, "values", part, "an Arrow list array or a Jagged")
            if isinstance(part.type, _arrow.LIST_VIEW_TYPES):
                part = _arrow.list_view_to_list(part)
            offsets, validity = _arrow.offsets_view(part), _arrow.validity_of(part)
            child_valid = _arrow.validity_of(part.values)
        lengths = np.diff(offsets).astype(np.int64)
        if validity is not None:
            lengths = lengths[validity]
        if child_valid is not None:
            present = _kernel("kept_lengths")(offsets, validity, child_valid)
            null_values += int(lengths.sum()) - int(present.sum())
        rows += len(offsets) - 1
        kept.append(lengths)
    lengths = np.concatenate(kept) if kept else np.zeros(0, dtype=np.int64)
    n = len(lengths)
    quantiles: list[int | None] = [None] * 5
    if n:
        ranks = [0] + [max(-(-q * n // 100), 1) - 1 for q in (50, 90, 99)] + [n - 1]
        part_sorted = np.partition(lengths, sorted(set(ranks)))
        quantiles = [int(part_sorted[r]) for r in ranks]
    return LengthStats(rows=rows, null_rows=rows - n,
                       empty_rows=int(np.count_nonzero(lengths == 0)),
                       total_values=int(lengths.sum()), null_values=null_values,
                       min=quantiles[0], p50=quantiles[1], p90=quantiles[2], p99=quantiles[3],
                       max=quantiles[4])


# ----------------------------------------------------------------------- counting
class _Counts:
    """Distinct values and their counts of one batch (unordered)."""

    __slots__ = ("kind", "keys", "counts", "arrow_type", "dtype")

    def __init__(self, kind: str, keys: Any, counts: np.ndarray, arrow_type: Any,
                 dtype: Any) -> None:
        self.kind = kind              # "int", "float", "bool" or "bytes"
        self.keys = keys              # numpy (numbers) or pa.Array (bytes)
        self.counts = counts
        self.arrow_type = arrow_type  # leaf Arrow type (Arrow input) or None
        self.dtype = dtype            # leaf numpy dtype (numbers) or None


def _one_level(func: str, x: Any) -> tuple[np.ndarray, np.ndarray | None, _Leaf, Any]:
    """Offsets, row validity and leaf of any column (nested lists are flattened)."""
    if isinstance(x, Jagged):
        if isinstance(x.values, Jagged):
            return _one_level(func, x.to_arrow())
        if x.values.ndim != 1:
            msg = f"{func}: rows must hold scalars, got values of shape {x.values.shape}"
            raise ArrowSparseTypeError(msg)
        return x.offsets, x.validity, _numpy_leaf(x.values, x.values_validity), None
    if isinstance(x, pa.Array):
        if isinstance(x.type, _arrow.LIST_VIEW_TYPES):
            x = _arrow.list_view_to_list(x)
        while isinstance(x.type, _arrow.LIST_TYPES) and _arrow.is_list_type(x.type.value_type):
            x = x.flatten()
            if isinstance(x.type, _arrow.LIST_VIEW_TYPES):
                x = _arrow.list_view_to_list(x)
        if isinstance(x.type, _arrow.LIST_TYPES):
            leaf, child = _arrow_leaf(func, x.values)
            return _arrow.offsets_view(x), _arrow.validity_of(x), leaf, child.type
        if pa.types.is_nested(x.type):
            msg = f"{func}: values of Arrow type {x.type} are not supported"
            raise ArrowSparseTypeError(msg)
        leaf, x = _arrow_leaf(func, x)
        return np.array([0, len(x)], dtype=np.int64), None, leaf, x.type
    if isinstance(x, np.ndarray) and x.dtype.kind in "OSU":
        msg = (f"{func}: values must be numeric numpy arrays; pass strings as an Arrow "
               f"array (pa.array(...)), got dtype {x.dtype}")
        raise ArrowSparseTypeError(msg)
    if not isinstance(x, (np.ndarray, list, tuple, range)):
        raise _not_a_column(func, "values", x, "an Arrow array, a Jagged or a numpy array")
    arr = v.as_values_array(func, "values", x, min_ndim=0).reshape(-1)
    return np.array([0, len(arr)], dtype=np.int64), None, _numpy_leaf(arr, None), None


def _count_batch(func: str, x: Any) -> _Counts:
    if isinstance(x, pa.ChunkedArray):
        if x.num_chunks == 0:
            return _count_batch(func, pa.array([], type=x.type))
        return _merge_counts(func, [_count_batch(func, c) for c in x.chunks])
    offsets, validity, leaf, arrow_type = _one_level(func, x)
    if leaf.kind == "bytes":
        positions, counts = _kernel("count_strings")(leaf.offsets, leaf.data, leaf.validity(),
                                                     offsets, validity)
        assert leaf._source is not None
        return _Counts("bytes", leaf._source.take(pa.array(positions)), counts, arrow_type, None)
    values = leaf.values
    if leaf.kind == "int":
        keys, counts = _kernel("count_ints")(values, leaf.validity(), offsets, validity)
        return _Counts("int", keys, counts, arrow_type, values.dtype)
    # floats and booleans: gather the counted elements, then count by sorting.
    _, positions = _kernel("compact")(offsets, validity, leaf.validity())
    keys, counts = np.unique(values[positions], return_counts=True, equal_nan=True)
    return _Counts(leaf.kind, keys, counts.astype(np.int64), arrow_type, values.dtype)


def _merge_counts(func: str, parts: list[_Counts]) -> _Counts:
    """Sum the counts of equal values over batches."""
    if len(parts) == 1:
        return parts[0]
    kinds = {p.kind for p in parts}
    if len(kinds) > 1:
        msg = f"{func}: batches mix value kinds ({', '.join(sorted(kinds))})"
        raise ArrowSparseTypeError(msg)
    first = parts[0]
    parts = [p for p in parts if len(p.counts)] or parts[:1]
    if len(parts) == 1:
        return parts[0]
    counts = np.concatenate([p.counts for p in parts])
    if first.kind == "bytes":
        strings = {pa.types.is_string(p.keys.type) or pa.types.is_large_string(p.keys.type)
                   for p in parts}
        if len(strings) > 1:
            msg = f"{func}: batches mix string and binary values"
            raise ArrowSparseTypeError(msg)
        large = pa.large_string() if strings.pop() else pa.large_binary()
        keys = pa.concat_arrays([p.keys.cast(large) for p in parts])
        table = pa.table({"value": keys, "count": counts}).group_by(
            "value", use_threads=False).aggregate([("count", "sum")])
        return _Counts("bytes", table.column("value").combine_chunks(),
                       table.column("count_sum").to_numpy().astype(np.int64),
                       first.arrow_type, None)
    dtypes = [p.dtype for p in parts]
    dtype = np.result_type(*dtypes)
    keys = np.concatenate([p.keys.astype(dtype) for p in parts])
    if first.kind == "float":  # one NaN group: NaNs sort last
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        new = np.ones(len(keys), dtype=bool)
        same = (sorted_keys[1:] == sorted_keys[:-1]) | (
            np.isnan(sorted_keys[1:]) & np.isnan(sorted_keys[:-1]))
        new[1:] = ~same
    else:
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        new = np.ones(len(keys), dtype=bool)
        new[1:] = sorted_keys[1:] != sorted_keys[:-1]
    starts = np.flatnonzero(new)
    summed = np.add.reduceat(counts[order], starts) if len(keys) else counts
    return _Counts(first.kind, sorted_keys[starts], summed.astype(np.int64), first.arrow_type,
                   dtype)


def _ordered(keys: Any, counts: np.ndarray) -> tuple[Any, np.ndarray]:
    """Sort by descending count, ties by ascending value (bytes: lexicographic)."""
    if isinstance(keys, pa.Array):
        order = pc.sort_indices(pa.table({"value": keys, "count": counts}),
                                sort_keys=[("count", "descending"), ("value", "ascending")])
        return keys.take(order), counts[order.to_numpy()]
    if len(keys) > 1 and not (keys[1:] > keys[:-1]).all():  # counting sorted most already
        by_value = np.argsort(keys)  # the keys are distinct: any sort is stable enough
        keys, counts = keys[by_value], counts[by_value]
    order = _kernel("order_by_count")(counts)
    return keys[order], counts[order]


def value_counts(values: Any) -> Any:
    """Count each distinct value over all rows, most frequent first.

    Parameters
    ----------
    values
        Arrow list array (any nesting) or ChunkedArray (all chunks together) of
        numbers or strings, a flat Arrow array, a :class:`Jagged` or a numpy array.

    Returns
    -------
    pyarrow.StructArray or tuple of numpy.ndarray
        Arrow input: a StructArray with fields ``values`` (the input's value type) and
        ``counts`` (int64), as ``pyarrow.compute.value_counts`` gives. Jagged or numpy
        input: ``(values, counts)`` arrays, as ``numpy.unique(..., return_counts=True)``.
        Ordered by descending count, ties by ascending value (strings: by bytes).

    Raises
    ------
    TypeError
        Unsupported value types.

    See Also
    --------
    fit_vocabulary : Keep the counts as a vocabulary.

    Notes
    -----
    Null rows and null elements are not counted. Floats count NaN as one value.

    Examples
    --------
    >>> arr = pa.array([[1, 2, 3], [2, 4, 6, 7], None, [3, 6]])
    >>> asp.value_counts(arr).to_pylist()[:3]
    [{'values': 2, 'counts': 2}, {'values': 3, 'counts': 2}, {'values': 6, 'counts': 2}]
    >>> asp.value_counts(asp.Jagged.from_arrow(arr))
    (array([2, 3, 6, 1, 4, 7]), array([2, 2, 2, 1, 1, 1]))
    """
    func = "value_counts"
    counted = _count_batch(func, values)
    keys = counted.keys
    if not isinstance(keys, pa.Array):
        keys = keys.astype(counted.dtype, copy=False)  # uint64: order by the unsigned value
    keys, counts = _ordered(keys, counted.counts)
    if not isinstance(values, (pa.Array, pa.ChunkedArray)):
        return keys, counts
    if isinstance(keys, pa.Array):
        target = counted.arrow_type
        if _bytes_type(target) and keys.type != target:
            keys = keys.cast(target)
    else:
        keys = pa.array(keys, type=counted.arrow_type)
    return pa.StructArray.from_arrays([keys, pa.array(counts, type=pa.int64())],
                                      names=["values", "counts"])


# --------------------------------------------------------------------- vocabulary
class Vocabulary:
    """Distinct integers or strings with their counts; entry ``k`` encodes as id ``k + 2``.

    Entries are kept in id order: descending count, ties by ascending value (strings
    by their bytes). Id 0 is padding and id 1 null or out-of-vocabulary (see
    :func:`categorify`). Built by :func:`fit_vocabulary`; combined with
    :meth:`merge`; stored with :meth:`save` / :meth:`load`.

    Parameters
    ----------
    values
        Distinct integers (numpy, Arrow or a sequence; stored as int64) or strings
        (an Arrow ``string``/``large_string`` or ``binary``/``large_binary`` array;
        stored large). No nulls.
    counts
        Non-negative counts, one per value. The entries are sorted into id order.

    Raises
    ------
    TypeError
        Values that are neither integers nor strings; non-integer counts.
    ValueError
        Repeated values, nulls, negative counts or a length mismatch.

    Examples
    --------
    >>> vocab = asp.Vocabulary(pa.array(["b", "a", "c"]), [1, 5, 1])
    >>> vocab
    Vocabulary(kind=string, size=3, values=['a', 'b', 'c'], counts=[5, 1, 1])
    >>> vocab.ids
    array([2, 3, 4])
    """

    __slots__ = ("_values", "_counts", "_kind", "_table")

    def __init__(self, values: Any, counts: Any) -> None:
        func = "Vocabulary"
        keys: Any
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        if isinstance(values, pa.Array) and not pa.types.is_integer(values.type):
            t = values.type
            if not (_bytes_type(t) or pa.types.is_string_view(t) or pa.types.is_binary_view(t)):
                msg = f"{func}: values must be integers or strings, got Arrow type {t}"
                raise ArrowSparseTypeError(msg)
            if values.null_count:
                pos = v.first_true(values.is_null().to_numpy(zero_copy_only=False))
                v.fail_value(func, "values", "must not contain nulls", pos, None)
            is_str = pa.types.is_string(t) or pa.types.is_large_string(t) or \
                pa.types.is_string_view(t)
            keys = values.cast(pa.large_string() if is_str else pa.large_binary())
            kind = "string" if is_str else "binary"
        else:
            keys = v.as_index_array(func, "values", values).astype(np.int64, copy=False)
            kind = "int64"
        cnt = v.check_lengths(func, "counts", counts).astype(np.int64, copy=False)
        if len(cnt) != len(keys):
            msg = f"{func}: counts has {len(cnt)} entries but there are {len(keys)} values"
            raise ArrowSparseValueError(msg)
        _check_unique(func, keys)
        self._values, self._counts = _ordered(keys, cnt)
        self._kind = kind
        self._table: Any = None

    @property
    def values(self) -> Any:
        """Entries in id order: int64 numpy array, or Arrow large_string/large_binary."""
        return self._values

    @property
    def counts(self) -> np.ndarray:
        """Count of each entry (int64), non-increasing."""
        return self._counts

    @property
    def ids(self) -> np.ndarray:
        """Id of each entry: ``2, 3, ...`` (int64)."""
        return np.arange(FIRST_ID, FIRST_ID + len(self), dtype=np.int64)

    @property
    def kind(self) -> str:
        """``"int64"``, ``"string"`` or ``"binary"``."""
        return self._kind

    @property
    def num_ids(self) -> int:
        """Number of ids :func:`categorify` can produce, reserved ones included (``len + 2``)."""
        return len(self) + FIRST_ID

    def __len__(self) -> int:
        return len(self._counts)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocabulary):
            return NotImplemented
        if self._kind != other._kind or not np.array_equal(self._counts, other._counts):
            return False
        if isinstance(self._values, pa.Array):
            return bool(self._values.equals(other._values))
        return bool(np.array_equal(self._values, other._values))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = 6
        vals = self._values[:shown]
        vals = vals.to_pylist() if isinstance(vals, pa.Array) else vals.tolist()
        cnts = self._counts[:shown].tolist()
        more = ", ..." if len(self) > shown else ""
        vtext = repr(vals)[:-1] + more + "]"
        ctext = repr(cnts)[:-1] + more + "]"
        return f"Vocabulary(kind={self._kind}, size={len(self)}, values={vtext}, counts={ctext})"

    def merge(self, *others: Vocabulary, freq_threshold: int = 1,
              max_size: int | None = None) -> Vocabulary:
        """Combine vocabularies by adding the counts of equal values, then prune.

        Parameters
        ----------
        *others
            Vocabularies of the same kind.
        freq_threshold
            Keep entries whose summed count is at least this.
        max_size
            Keep at most this many entries (the most frequent; ties by value).

        Returns
        -------
        Vocabulary
            A new vocabulary; ``Vocabulary.merge(a, b)`` and ``a.merge(b)`` are the same.

        Raises
        ------
        TypeError
            A non-Vocabulary or one of another kind.

        Notes
        -----
        Merging is exact when the inputs were not pruned (fitted with the defaults
        ``freq_threshold=1, max_size=None``): prune once, at the merge.

        Examples
        --------
        >>> a = asp.fit_vocabulary(np.array([1, 1, 2]))
        >>> b = asp.fit_vocabulary(np.array([2, 2, 3]))
        >>> a.merge(b)
        Vocabulary(kind=int64, size=3, values=[2, 1, 3], counts=[3, 2, 1])
        >>> a.merge(b, freq_threshold=2).values
        array([2, 1])
        """
        func = "Vocabulary.merge"
        for i, other in enumerate(others):
            if not isinstance(other, Vocabulary):
                msg = f"{func}: others[{i}] must be a Vocabulary, got {type(other).__name__}"
                raise ArrowSparseTypeError(msg)
            if other.kind != self.kind:
                msg = f"{func}: cannot merge a {other.kind} vocabulary into a {self.kind} one"
                raise ArrowSparseTypeError(msg)
        threshold, size = _check_prune(func, freq_threshold, max_size)
        kind = "int" if self.kind == "int64" else "bytes"
        parts = [_Counts(kind, voc._values, voc._counts, None, np.dtype(np.int64))
                 for voc in (self, *others)]
        merged = _merge_counts(func, parts)
        return _pruned(merged.keys, merged.counts, threshold, size)

    def to_arrow(self) -> pa.Table:
        """Return the vocabulary as an Arrow table: columns ``value``, ``count``, ``id``.

        Examples
        --------
        >>> asp.fit_vocabulary(np.array([5, 5, 7])).to_arrow().to_pydict()
        {'value': [5, 7], 'count': [2, 1], 'id': [2, 3]}
        """
        values = self._values if isinstance(self._values, pa.Array) else pa.array(self._values)
        meta = {"format_version": 1, "kind": self._kind, "padding_id": PADDING_ID,
                "missing_id": MISSING_ID, "first_id": FIRST_ID}
        return pa.table({"value": values, "count": pa.array(self._counts, type=pa.int64()),
                         "id": pa.array(self.ids)},
                        metadata={_VOCABULARY_KEY: json.dumps(meta).encode()})

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the vocabulary to a Parquet file (columns ``value``, ``count``, ``id``).

        Parameters
        ----------
        path
            File path.

        Raises
        ------
        TypeError
            ``path`` is not a str or path.

        See Also
        --------
        Vocabulary.load : Read it back (equal to the saved one).

        Examples
        --------
        >>> import tempfile, pathlib
        >>> vocab = asp.fit_vocabulary(pa.array([["a", "b"], ["b"]]))
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "vocab.parquet"
        >>> vocab.save(path)
        >>> asp.Vocabulary.load(path) == vocab
        True
        """
        import pyarrow.parquet as pq

        pq.write_table(self.to_arrow(), _check_path("Vocabulary.save", path))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Vocabulary:
        """Read a vocabulary written by :meth:`save`.

        Parameters
        ----------
        path
            File path.

        Returns
        -------
        Vocabulary
            Equal to the saved one (same values, counts and ids).

        Raises
        ------
        TypeError
            ``path`` is not a str or path.
        FileNotFoundError
            No such file.
        ValueError
            The file is not a vocabulary (missing columns, repeated values, ids not
            in order).

        Examples
        --------
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "vocab.parquet"
        >>> asp.fit_vocabulary(np.array([3, 3, 1])).save(path)
        >>> asp.Vocabulary.load(path)
        Vocabulary(kind=int64, size=2, values=[3, 1], counts=[2, 1])
        """
        import pyarrow.parquet as pq

        func = "Vocabulary.load"
        try:
            table = pq.read_table(_check_path(func, path))
        except pa.ArrowInvalid as exc:
            msg = f"{func}: {os.fspath(path)!r} could not be read as a Parquet file ({exc})"
            raise ArrowSparseValueError(msg) from None
        except OSError as exc:
            msg = f"{func}: {os.fspath(path)!r} could not be opened ({type(exc).__name__})"
            raise ArrowSparseIOError(msg) from None
        missing = [c for c in ("value", "count") if c not in table.column_names]
        if missing:
            msg = f"{func}: {os.fspath(path)!r} is not a vocabulary: no column {missing[0]!r}"
            raise ArrowSparseValueError(msg)
        voc = cls(table.column("value").combine_chunks(),
                  table.column("count").combine_chunks())
        if "id" in table.column_names:
            ids = table.column("id").to_numpy()
            saved = table.column("value").combine_chunks()
            same = saved.cast(voc._values.type).equals(voc._values) \
                if isinstance(voc._values, pa.Array) else np.array_equal(saved, voc._values)
            if not same or not np.array_equal(ids, voc.ids):
                msg = f"{func}: {os.fspath(path)!r} has ids out of the vocabulary order"
                raise ArrowSparseValueError(msg)
        return voc

    def _lookup_table(self) -> tuple[Any, Any]:
        """Return the hash table :func:`categorify` probes (built once, then cached).

        For strings, also the vocabulary's offsets and data buffer.
        """
        if self._table is None:
            if isinstance(self._values, pa.Array):
                leaf = _arrow_leaf("categorify", self._values)[0]
                strings = (leaf.offsets, leaf.data)
                self._table = (_kernel("build_string_table")(*strings), strings)
            else:
                self._table = (_kernel("build_int_table")(self._values), None)
        return self._table  # type: ignore[no-any-return]


def _check_unique(func: str, keys: Any) -> None:
    """Raise at the first value equal to an earlier one."""
    if len(keys) < 2:
        return
    if isinstance(keys, pa.Array):
        order = pc.sort_indices(keys).to_numpy()
        sorted_keys = keys.take(pa.array(order))
        same = pc.equal(sorted_keys[1:], sorted_keys[:-1]).to_numpy(zero_copy_only=False)
    else:
        order = np.argsort(keys, kind="stable")
        same = keys[order][1:] == keys[order][:-1]
    if same.any():
        pos = int(order[1:][same].min())
        value = keys[pos].as_py() if isinstance(keys, pa.Array) else keys[pos]
        v.fail_value(func, "values", "must be unique", pos, value)


def _check_path(func: str, path: Any) -> str:
    if not isinstance(path, (str, os.PathLike)):
        msg = f"{func}: path must be a str or os.PathLike, got {type(path).__name__}"
        raise ArrowSparseTypeError(msg)
    return str(os.fspath(path))


def _check_prune(func: str, freq_threshold: Any, max_size: Any) -> tuple[int, int | None]:
    threshold = v.check_count(func, "freq_threshold", freq_threshold)
    size = None if max_size is None else v.check_count(func, "max_size", max_size)
    return threshold, size


def _pruned(keys: Any, counts: np.ndarray, threshold: int, size: int | None) -> Vocabulary:
    keep = counts >= threshold
    if not keep.all():
        keys = keys.filter(pa.array(keep)) if isinstance(keys, pa.Array) else keys[keep]
        counts = counts[keep]
    voc = Vocabulary.__new__(Vocabulary)
    keys, counts = _ordered(keys, counts)
    if size is not None:
        keys, counts = keys[:size], counts[:size]
    voc._values = keys
    voc._counts = counts
    voc._kind = "int64" if not isinstance(keys, pa.Array) else \
        "string" if pa.types.is_large_string(keys.type) else "binary"
    voc._table = None
    return voc


def fit_vocabulary(column_or_batches: Any, freq_threshold: int = 1,
                   max_size: int | None = None) -> Vocabulary:
    """Count the distinct integers or strings of a column (or of batches) into a Vocabulary.

    Parameters
    ----------
    column_or_batches
        A column (Arrow list array of any nesting, ChunkedArray or flat array of
        integers or strings; a :class:`Jagged`; a numpy array of integers), or a list
        or iterator of such columns (e.g. one per Parquet batch), counted one at a time.
    freq_threshold
        Keep values seen at least this many times (NVTabular's ``freq_threshold``);
        the others encode as id 1.
    max_size
        Keep at most this many entries, the most frequent (ties by ascending value),
        so ids stay below ``max_size + 2``. Default: no limit.

    Returns
    -------
    Vocabulary
        Entries ordered by descending count, ties by ascending value; entry ``k`` has
        id ``k + 2``.

    Raises
    ------
    TypeError
        Float or boolean values, batches of different kinds, or not a column.
    ValueError
        Negative ``freq_threshold`` or ``max_size``, or no batches.

    See Also
    --------
    categorify : Encode with the vocabulary.
    Vocabulary.merge : Combine vocabularies fitted separately.

    Notes
    -----
    Null rows and null elements are not counted. Integers of any dtype are counted as
    int64 (a dense array when they span a small range, a hash table, or a sort when
    most values are distinct); uint64 values above ``2**63 - 1`` wrap to negative int64.

    Examples
    --------
    >>> arr = pa.array([[1, 2, 3], [2, 4, 6, 7], None, [3, 6]])
    >>> asp.fit_vocabulary(arr)
    Vocabulary(kind=int64, size=6, values=[2, 3, 6, 1, 4, 7], counts=[2, 2, 2, 1, 1, 1])
    >>> asp.fit_vocabulary([arr.slice(0, 2), arr.slice(2)], max_size=2).values
    array([2, 3])
    """
    func = "fit_vocabulary"
    threshold, size = _check_prune(func, freq_threshold, max_size)
    x = column_or_batches
    batches: Any
    if isinstance(x, _COLUMN_TYPES):
        batches = [x]
    elif isinstance(x, (list, tuple)) and x and all(isinstance(b, _COLUMN_TYPES) for b in x):
        batches = x
    elif isinstance(x, (list, tuple, range)):
        batches = [x]
    elif isinstance(x, Iterator):
        batches = x
    else:
        raise _not_a_column(func, "column_or_batches", x,
                            "a column (Arrow array, Jagged, numpy array) or a list of them")
    parts: list[_Counts] = []
    for batch in batches:
        counted = _count_batch(func, batch)
        if counted.kind not in ("int", "bytes"):
            desc = counted.arrow_type if counted.arrow_type is not None else counted.dtype
            msg = (f"{func}: values of type {desc} cannot form a vocabulary; vocabularies "
                   "hold integers or strings (bucketize floats first)")
            raise ArrowSparseTypeError(msg)
        if counted.kind == "bytes":
            is_str = pa.types.is_string(counted.keys.type) or \
                pa.types.is_large_string(counted.keys.type)
            counted.keys = counted.keys.cast(pa.large_string() if is_str else pa.large_binary())
        else:
            counted.keys = counted.keys.astype(np.int64, copy=False)
            counted.dtype = np.dtype(np.int64)
        parts.append(counted)  # each batch's distinct values; merged once, at the end
    if not parts:
        msg = f"{func}: column_or_batches holds no batches"
        raise ArrowSparseValueError(msg)
    total = _merge_counts(func, parts)
    return _pruned(total.keys, total.counts, threshold, size)
