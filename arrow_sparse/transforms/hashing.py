"""Element-wise transforms of list values: ``hash_bucket`` (XXH3-64) and ``bucketize``.

Both replace only the leaf values: the result shares the input's offsets and row
validity buffers (no copy), whatever the nesting depth.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate as v
from .._backend import array_module, get_kernel, module_of
from ..errors import ArrowSparseTypeError, ArrowSparseValueError
from ._leaf import (
    _ElementOp,
    _Leaf,
    _map_elements,
)

__all__ = ["bucketize", "hash_bucket"]


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
            get_kernel("transforms", "hash_ints", module_of(out))(
                leaf.values, start, stop, self.seed, self.num_buckets, out)
        else:
            get_kernel("transforms", "hash_strings")(
                leaf.offsets, leaf.data, start, stop, self.seed, self.num_buckets, out)


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
        get_kernel("transforms", "bucketize", module_of(out))(
            leaf.values, start, stop, self.boundaries.astype(common), self.right, out)


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

    On the device (a CuPy array, or a Jagged on the device): integers only (strings
    live in Arrow's host buffers); CuPy results, the same buckets; no synchronisation.
    A Jagged's whole values buffer is hashed (its offsets are not read back) and the
    result shares its offsets and masks.

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
    num_buckets = v.check_int_in(func, "num_buckets", num_buckets, 1, 2**63 - 1)
    seed = v.check_int_in(func, "seed", seed, 0, 2**64 - 1)
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

    On the device (a CuPy array, or a Jagged on the device): ``boundaries`` is a CuPy
    array on the same device; no synchronisation. Their NaNs and decreasing pairs are
    found by a device check, raised by the next check ("boundaries must be
    non-decreasing and not NaN (first at position i; found by a device check, ...)").

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
    xp = array_module(func, values=values, boundaries=boundaries)
    bounds = v.as_values_array(func, "boundaries", boundaries, min_ndim=0, device=True)
    if bounds.ndim != 1:
        msg = f"{func}: boundaries must be 1-dimensional, got shape {bounds.shape}"
        raise ArrowSparseValueError(msg)
    if bounds.dtype.kind == "b":
        msg = f"{func}: boundaries must be numbers, got dtype bool"
        raise ArrowSparseTypeError(msg)
    if xp is np:  # on the device the kernel checks them (deferred)
        if bounds.dtype.kind == "f" and np.isnan(bounds).any():
            pos = v.first_true(np.isnan(bounds))
            v.fail_value(func, "boundaries", "must not contain NaN", pos, bounds[pos])
        decreasing = bounds[1:] < bounds[:-1]
        if decreasing.any():
            pos = v.first_true(decreasing) + 1
            v.fail_value(func, "boundaries", "must be non-decreasing", pos, bounds[pos])
    return _map_elements(func, values, _BucketizeOp(xp.ascontiguousarray(bounds), right))
