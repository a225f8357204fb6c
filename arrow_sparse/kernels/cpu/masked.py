"""CPU kernels of the masked reductions (``arrow_sparse.masked``).

Every kernel works on *entries*: the stored elements of the input, each with the id
of the output cell it reduces into (``cell``) and, where needed, its position inside
the reduced slice (``pos``). ``inm`` says whether an entry is masked in. The kernels
scatter into one slot per output cell, so entries may come in any order: a CSR
matrix reduced along its columns is one pass over ``indices`` (scatter by column
index), along its rows one pass in ``indptr`` order (each row's entries are
contiguous), and a COO tensor groups by the raveled remaining coordinates.
"""

from __future__ import annotations

import numpy as np

from ._jit import kernel

__all__ = [
    "masked_count",
    "masked_sum",
    "masked_prod",
    "masked_max",
    "masked_min",
    "masked_sum_abs_pow",
    "masked_count_nonzero",
    "masked_sum_sq_dev",
    "masked_sum_exp",
    "masked_first_best",
    "first_unstored",
    "sorted_member",
]


@kernel
def masked_count(cell, inm, out):  # type: ignore[no-untyped-def]
    """``out[c] += 1`` for every masked-in entry of cell ``c``."""
    for i in range(len(cell)):
        if inm[i]:
            out[cell[i]] += 1


@kernel
def masked_sum(cell, vals, inm, out):  # type: ignore[no-untyped-def]
    """``out[c] += v`` over masked-in entries."""
    for i in range(len(cell)):
        if inm[i]:
            out[cell[i]] += vals[i]


@kernel
def masked_prod(cell, vals, inm, out):  # type: ignore[no-untyped-def]
    """``out[c] *= v`` over masked-in entries (``out`` starts at 1)."""
    for i in range(len(cell)):
        if inm[i]:
            out[cell[i]] *= vals[i]


@kernel
def masked_max(cell, vals, inm, out):  # type: ignore[no-untyped-def]
    """Take the running maximum over masked-in entries; a NaN sticks, as in ``numpy.max``."""
    for i in range(len(cell)):
        if inm[i]:
            c = cell[i]
            v = vals[i]
            if v > out[c] or v != v:
                if out[c] == out[c]:
                    out[c] = v


@kernel
def masked_min(cell, vals, inm, out):  # type: ignore[no-untyped-def]
    """Take the running minimum over masked-in entries; a NaN sticks, as in ``numpy.min``."""
    for i in range(len(cell)):
        if inm[i]:
            c = cell[i]
            v = vals[i]
            if v < out[c] or v != v:
                if out[c] == out[c]:
                    out[c] = v


@kernel
def masked_sum_abs_pow(cell, vals, inm, p, out):  # type: ignore[no-untyped-def]
    """``out[c] += |v| ** p`` over masked-in entries (float64 ``out``)."""
    for i in range(len(cell)):
        if inm[i]:
            a = abs(np.float64(vals[i]))
            if p == 2.0:
                out[cell[i]] += a * a
            elif p == 1.0:
                out[cell[i]] += a
            elif a == 0.0 and p < 0.0:
                out[cell[i]] += np.inf  # 0 ** p; a NaN already there stays NaN
            else:
                out[cell[i]] += a ** p


@kernel
def masked_count_nonzero(cell, vals, inm, out):  # type: ignore[no-untyped-def]
    """``out[c] += 1`` for every masked-in non-zero entry."""
    for i in range(len(cell)):
        if inm[i] and vals[i] != 0:
            out[cell[i]] += 1


@kernel
def masked_sum_sq_dev(cell, vals, inm, mean, out):  # type: ignore[no-untyped-def]
    """``out[c] += (v - mean[c]) ** 2`` over masked-in entries."""
    for i in range(len(cell)):
        if inm[i]:
            c = cell[i]
            d = np.float64(vals[i]) - mean[c]
            out[c] += d * d


@kernel
def masked_sum_exp(cell, vals, inm, shift, out):  # type: ignore[no-untyped-def]
    """``out[c] += exp(v - shift[c])`` over masked-in entries."""
    for i in range(len(cell)):
        if inm[i]:
            c = cell[i]
            out[c] += np.exp(np.float64(vals[i]) - shift[c])


@kernel
def masked_first_best(cell, pos, vals, inm, identity, best, out):  # type: ignore[no-untyped-def]
    """``out[c] = min(out[c], pos)`` over entries whose effective value equals ``best[c]``.

    The effective value of a masked-out entry is ``identity``. A NaN ``best[c]`` is
    matched by the NaN entries, so the first NaN wins (as in ``numpy.argmax``).
    """
    for i in range(len(cell)):
        c = cell[i]
        v = vals[i] if inm[i] else identity
        b = best[c]
        if (v == b or (v != v and b != b)) and pos[i] < out[c]:
            out[c] = pos[i]


@kernel
def first_unstored(mkeys, skeys, slice_size, first_zero, first_out):  # type: ignore[no-untyped-def]
    """Per cell, the first masked-in unstored position and the first position in neither.

    ``mkeys`` (masked-in positions) and ``skeys`` (stored positions) are sorted,
    distinct ``cell * slice_size + pos`` keys. One merge pass sets, for every cell
    that has keys, ``first_zero[c]`` to the smallest position in ``mkeys`` but not in
    ``skeys`` (left as the caller set it when there is none) and ``first_out[c]`` to
    the smallest position in neither (``slice_size`` when there is none). Cells
    without keys are left as the caller set them.
    """
    nm = len(mkeys)
    ns = len(skeys)
    big = np.iinfo(np.int64).max
    i = 0
    j = 0
    while i < nm or j < ns:
        km = mkeys[i] if i < nm else big
        ks = skeys[j] if j < ns else big
        c = min(km, ks) // slice_size
        base = c * slice_size
        expected = 0
        zero_found = False
        while True:
            km = mkeys[i] if i < nm else big
            ks = skeys[j] if j < ns else big
            k = min(km, ks)
            if k == big or k // slice_size != c:
                break
            if km < ks:
                if not zero_found:
                    first_zero[c] = km - base
                    zero_found = True
                i += 1
            elif ks < km:
                j += 1
            else:
                i += 1
                j += 1
            if k - base == expected:
                expected += 1
        first_out[c] = expected


@kernel
def sorted_member(keys, queries, out):  # type: ignore[no-untyped-def]
    """``out[i] = queries[i] in keys`` for sorted, distinct ``keys``.

    A merge pass when ``queries`` is sorted (checked on the way), a binary search per
    query otherwise.
    """
    n = len(queries)
    m = len(keys)
    ordered = True
    for i in range(1, n):
        if queries[i] < queries[i - 1]:
            ordered = False
            break
    if ordered:
        j = 0
        for i in range(n):
            q = queries[i]
            while j < m and keys[j] < q:
                j += 1
            out[i] = j < m and keys[j] == q
        return
    for i in range(n):
        q = queries[i]
        lo = 0
        hi = m
        while lo < hi:
            mid = (lo + hi) >> 1
            if keys[mid] < q:
                lo = mid + 1
            else:
                hi = mid
        out[i] = lo < m and keys[lo] == q
