"""Distinct counts and most frequent values of a stream of Arrow arrays (``inspect``).

Exact while the distinct values fit under a limit (counts merged with Arrow's hash
``group_by``); past it, a HyperLogLog sketch for the distinct count and a Misra-Gries
summary for the most frequent values. Both sketches are mergeable, so the state of two
streams combines into the state of their concatenation.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._arrow import array_from_numpy, primitive_values

__all__ = ["DEFAULT_DISTINCT_LIMIT", "DEFAULT_TOP", "HyperLogLog", "ValueCounter"]

_FUNC = "inspect"

#: Distinct values per column counted exactly before switching to the sketches.
DEFAULT_DISTINCT_LIMIT = 1_000_000
#: Most frequent values reported per column.
DEFAULT_TOP = 10


class HyperLogLog:
    """HyperLogLog distinct-count sketch over 64-bit hashes (Flajolet et al. 2007).

    ``2**precision`` one-byte registers; the relative standard error of the estimate is
    ``1.04 / sqrt(2**precision)`` (0.81 % at the default precision 14, 16 KiB). Small
    cardinalities use linear counting (the empty-register estimate), as in the paper.

    Parameters
    ----------
    precision
        Bits of the hash that pick the register, 4 to 18.

    Examples
    --------
    >>> from arrow_sparse.transforms.hashing import hash_bucket
    >>> h = HyperLogLog()
    >>> h.add_hashes(hash_bucket(np.arange(100_000), 2**63 - 1).astype(np.uint64) * 2)
    >>> abs(h.estimate() - 100_000) < 3 * h.relative_error * 100_000
    True
    """

    def __init__(self, precision: int = 14) -> None:
        self.precision = precision
        self.registers = np.zeros(1 << precision, dtype=np.uint8)

    @property
    def relative_error(self) -> float:
        """Relative standard error of :meth:`estimate`: ``1.04 / sqrt(2**precision)``."""
        return 1.04 / math.sqrt(len(self.registers))

    def add_hashes(self, hashes: np.ndarray) -> None:
        """Add values by their uniformly distributed 64-bit hashes (uint64)."""
        if len(hashes) == 0:
            return
        h = hashes.astype(np.uint64, copy=False)
        p = self.precision
        index = (h >> np.uint64(64 - p)).astype(np.intp)
        rest = h & np.uint64((1 << (64 - p)) - 1)  # below 2**50: exact in a float64
        # rank = position of the first 1 bit in the remaining 64 - p bits (1-based);
        # frexp gives floor(log2(rest)) + 1 exactly for these integers.
        _, exponent = np.frexp(rest.astype(np.float64))
        rank = np.where(rest == 0, 64 - p + 1, 64 - p - exponent + 1).astype(np.uint8)
        np.maximum.at(self.registers, index, rank)

    def merge(self, other: HyperLogLog) -> None:
        """Fold ``other`` (same precision) into this sketch: the union of the streams."""
        np.maximum(self.registers, other.registers, out=self.registers)

    def estimate(self) -> int:
        """Return the estimated number of distinct values added."""
        m = len(self.registers)
        alpha = 0.7213 / (1 + 1.079 / m)
        raw = alpha * m * m / float(np.sum(np.ldexp(1.0, -self.registers.astype(np.int64))))
        zeros = int(np.count_nonzero(self.registers == 0))
        if raw <= 2.5 * m and zeros:
            return round(m * math.log(m / zeros))
        return round(raw)


class ValueCounter:
    """Distinct count and top values of the (non-null) values fed to :meth:`add`.

    Parameters
    ----------
    limit
        Distinct values counted exactly; past it the counts become sketches.
    top
        How many of the most frequent values :meth:`to_dict` reports.

    Notes
    -----
    Exact mode keeps one ``(value, count)`` row per distinct value. Past ``limit`` the
    distinct count is a :class:`HyperLogLog` estimate (every value seen so far is
    hashed into it, so nothing is lost at the switch) and the counts a Misra-Gries
    summary of ``limit`` counters: every kept count is at most ``count_error`` below
    the true one, and ``count_error <= values / (limit + 1)``; a value whose true
    count exceeds ``count_error`` is never dropped.

    Examples
    --------
    >>> c = ValueCounter(top=2)
    >>> c.add(pa.array([3, 1, 3, None, 2, 3, 1]))
    >>> d = c.to_dict(); d["distinct"], d["top"]["values"], d["top"]["counts"]
    ({'count': 3, 'exact': True, 'relative_standard_error': 0.0}, [3, 1], [3, 2])
    """

    def __init__(self, limit: int = 1_000_000, top: int = 10) -> None:
        self.limit = limit
        self.top = top
        self.values = 0
        self.usable = True  # False once a batch's values could not be counted
        self.count_error = 0
        self._keys: pa.Array | None = None  # merged distinct values ...
        self._counts = np.zeros(0, dtype=np.int64)  # ... and their counts
        self._pending: list[tuple[pa.Array, np.ndarray]] = []
        self._pending_rows = 0
        self._hll: HyperLogLog | None = None

    @property
    def exact(self) -> bool:
        """Whether the counts are still exact (the distinct values fit under the limit)."""
        return self._hll is None

    def add(self, values: pa.Array) -> None:
        """Count the non-null entries of a flat Arrow array."""
        if not self.usable:
            return
        try:
            counts = pc.value_counts(values.drop_null())
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
            self.forget()
            return
        if len(counts) == 0:
            return
        self.values += len(values) - values.null_count
        keys = counts.field(0)
        if self._hll is not None and not self._hash_into(keys):
            return
        self._pending.append((keys, primitive_values(_FUNC, counts.field(1))))
        self._pending_rows += len(keys)
        if self._pending_rows >= max(self.limit, 1 << 16):
            self._merge()

    def forget(self) -> None:
        """Stop counting (these values cannot be hashed or grouped)."""
        self.usable = False
        self._keys, self._pending, self._hll = None, [], None

    def _merge(self) -> None:
        parts = ([(self._keys, self._counts)] if self._keys is not None else []) + self._pending
        self._pending, self._pending_rows = [], 0
        if not parts:
            return
        # Sum the counts per value: dictionary_encode finds the distinct values (Arrow's
        # hash table). Table.group_by would do the same but imports pandas.
        encoded = pa.concat_arrays([k for k, _ in parts]).dictionary_encode()
        counts = np.bincount(primitive_values(_FUNC, encoded.indices),
                             weights=np.concatenate([c for _, c in parts]),
                             minlength=len(encoded.dictionary)).astype(np.int64)
        keys = encoded.dictionary
        if len(keys) > self.limit:
            if self._hll is None:
                self._hll = HyperLogLog()
                if not self._hash_into(keys):
                    return
            # Misra-Gries merge: subtract the (limit + 1)-th largest count from every
            # counter and keep the positive ones (at most ``limit``).
            cut = int(np.partition(counts, len(counts) - self.limit - 1)[
                len(counts) - self.limit - 1])
            self.count_error += cut
            keep = np.flatnonzero(counts > cut)
            keys, counts = keys.take(_int64(keep)), counts[keep] - cut
        self._keys, self._counts = keys, counts

    def _hash_into(self, values: pa.Array) -> bool:
        hashes = _hashes(values)
        if hashes is None:
            self.forget()
            return False
        assert self._hll is not None
        self._hll.add_hashes(hashes)
        return True

    def distinct(self) -> int | None:
        """Return the number of distinct values (estimated past the limit), or None."""
        if not self.usable:
            return None
        self._merge()
        if self._hll is not None:
            return self._hll.estimate()
        return 0 if self._keys is None else len(self._keys)

    def counts(self) -> tuple[list[Any], np.ndarray]:
        """Return every counted value and its count, most frequent first (ties by value).

        Past the limit these are the Misra-Gries counters: lower bounds, each at most
        ``count_error`` below the true count.
        """
        self._merge()
        if self._keys is None:
            return [], np.zeros(0, dtype=np.int64)
        order = pc.sort_indices(pa.record_batch([_int64(-self._counts), self._keys],
                                                ["count", "value"]),
                                sort_keys=[("count", "ascending"), ("value", "ascending")])
        order_np = primitive_values(_FUNC, order)
        return self._keys.take(order).to_pylist(), self._counts[order_np]

    def to_dict(self) -> dict[str, Any]:
        """Return ``distinct: {count, exact, relative_standard_error}`` and ``top``.

        ``top`` is ``{values, counts, exact, count_error}``: the ``top`` most frequent
        values (most frequent first), their counts, and the most any count may be
        below the true one (0 when exact). Without countable values both are None.
        """
        if not self.usable:
            return {"distinct": None, "top": None}
        n = self.distinct()
        values, counts = self.counts()
        short = self._keys is not None and (pa.types.is_float32(self._keys.type)
                                            or pa.types.is_float16(self._keys.type))
        err = 0.0 if self._hll is None else round(self._hll.relative_error, 5)
        return {
            "distinct": {"count": n, "exact": self.exact, "relative_standard_error": err},
            "top": {"values": [_plain(v, short) for v in values[:self.top]],
                    "counts": counts[:self.top].tolist(),
                    "exact": self.exact, "count_error": self.count_error},
        }


def _hashes(values: pa.Array) -> np.ndarray | None:
    """64-bit hashes of a flat array's (non-null) values, or None for other types."""
    from ..transforms.hashing import hash_bucket

    t = values.type
    if pa.types.is_floating(t):  # by the bits of the float64 value (-0.0 folded into 0.0)
        f = primitive_values(_FUNC, values.cast(pa.float64())) + 0.0
        bits = f.view(np.int64)
        return hash_bucket(bits, 2**63 - 1).astype(np.uint64) * np.uint64(2)
    if pa.types.is_boolean(t) or pa.types.is_temporal(t):
        values = values.cast(pa.int64()) if pa.types.is_boolean(t) else \
            values.view(pa.int64() if t.bit_width == 64 else pa.int32())
        t = values.type
    if pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t) \
            or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        hashed = hash_bucket(values, 2**63 - 1)
        # h % (2**63 - 1), doubled: the top 63 bits of a uniform 64-bit word
        return primitive_values(_FUNC, hashed).astype(np.uint64) * np.uint64(2)
    return None


def _int64(a: np.ndarray) -> pa.Array:
    return array_from_numpy(np.asarray(a, dtype=np.int64), None)


def _plain(x: Any, short: bool = False) -> Any:
    """Return a JSON-ready form of a value: numbers and strings as they are, others as text.

    ``short``: a float32 value, written by its shortest decimal (0.44, not 0.4399999...).
    """
    if short and isinstance(x, float) and math.isfinite(x):
        return float(str(np.float32(x)))
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if isinstance(x, bytes):
        try:
            return x.decode("utf-8")
        except UnicodeDecodeError:
            return x.hex()
    return str(x)
