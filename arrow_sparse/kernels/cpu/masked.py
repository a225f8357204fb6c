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
    "csr_masked_sum",
    "mask_true_counts",
    "line_sums",
    "index_sums",
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
def _masked_extreme(cell, vals, inm, is_max, out):  # type: ignore[no-untyped-def]
    """Take the running maximum (``is_max``) or minimum over masked-in entries; a NaN sticks."""
    for i in range(len(cell)):
        if inm[i]:
            c = cell[i]
            v = vals[i]
            if (v > out[c] if is_max else v < out[c]) or v != v:
                if out[c] == out[c]:
                    out[c] = v


def masked_max(cell, vals, inm, out):  # type: ignore[no-untyped-def]
    """Take the running maximum over masked-in entries; a NaN sticks, as in ``numpy.max``."""
    _masked_extreme(cell, vals, inm, True, out)


def masked_min(cell, vals, inm, out):  # type: ignore[no-untyped-def]
    """Take the running minimum over masked-in entries; a NaN sticks, as in ``numpy.min``."""
    _masked_extreme(cell, vals, inm, False, out)


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



@kernel
def line_sums(indptr, vals, zero, acc):  # type: ignore[no-untyped-def]
    """``acc[r] = zero + sum(vals[indptr[r]:indptr[r+1]])``, each line's values in order.

    No loop per line: a loop whose trip count follows random short line lengths
    mispredicts its exit about once a line, which costs more than the adds. One pass
    over ``indptr`` counts the lines starting at each value, one pass over the values
    keeps the running line sum (restarted by a select where a line starts) and stores
    it at the line's place. ``vals`` holds the lines' values from ``indptr[0]``;
    ``zero`` (of ``acc``'s dtype) fixes the accumulator; empty lines keep ``acc``.
    """
    base = indptr[0]
    n = indptr[len(indptr) - 1] - base
    starts = _line_starts(indptr, n)
    total = zero
    r = -1
    for j in range(n):
        k = starts[j]
        r += k
        total = (zero if k != 0 else total) + vals[j]
        acc[r] = total


@kernel
def index_sums(indices, vals, acc, stored):  # type: ignore[no-untyped-def]
    """``acc[c] += v`` and ``stored[c] = 1`` for every entry ``(c, v)``, in order."""
    for j in range(len(indices)):
        c = indices[j]
        acc[c] += vals[j]
        stored[c] = 1


@kernel
def _line_starts(indptr, n):  # type: ignore[no-untyped-def]
    """How many of the lines of ``indptr`` start at each of the ``n + 1`` values."""
    starts = np.zeros(n + 1, np.int32)
    base = indptr[0]
    for r in range(len(indptr) - 1):
        starts[indptr[r] - base] += 1
    return starts


@kernel
def mask_true_counts(mptr, mind, mvals, by_line, count_in):  # type: ignore[no-untyped-def]
    """``count_in[cell] += 1`` for each true value of a compressed mask.

    ``by_line``: the cell is the line (``mptr``), else the index (``mind``).
    """
    n = mptr[len(mptr) - 1] - mptr[0]
    starts = _line_starts(mptr, n)
    r = -1
    for k in range(n):
        r += starts[k]
        count_in[r if by_line else mind[k]] += 1 if mvals[k] != 0 else 0


@kernel
def csr_masked_sum(indptr, indices, vals, mptr, mind, mvals, steps, by_line, zero, acc,
                   stored):  # type: ignore[no-untyped-def]
    """Sum the entries of a compressed matrix where a canonical mask of its layout is true.

    Line ``r`` (a row of a CSR matrix, a column of a CSC one) stores
    ``indices[indptr[r]:indptr[r+1]]``, in any order and possibly repeated: it is not
    sorted. The mask's line ``r`` holds the strictly increasing indices
    ``mind[mptr[r]:mptr[r+1]]`` with values ``mvals``; an entry is masked in when its
    index is there with a non-zero value. Each entry's index is found by a binary
    search of ``steps`` halvings in its line of the mask (``steps``: the bit length of
    the longest mask line less one), every search as long as the others and its
    steps selects, so nothing mispredicts on random line lengths; the entry's line
    comes from a running count of line starts (see :func:`line_sums`).

    ``by_line``: line ``r`` is the output cell, else the index ``c``. ``acc[cell]``
    adds the masked-in values in stored order (repeated coordinates one by one; a
    masked-out entry adds ``zero``, which changes no sum); ``stored[cell]`` becomes 1
    where a masked-in entry is. ``indptr`` and ``mptr`` start at zero; ``acc`` and
    ``stored`` start at zero.
    """
    n = indptr[len(indptr) - 1]
    m = mptr[len(mptr) - 1]
    if n == 0 or m == 0:
        return
    last = m - 1
    starts = _line_starts(indptr, n)
    r = -1
    total = zero
    found_any = 0
    for j in range(n):
        k = starts[j]
        r += k
        c = indices[j]
        lo = mptr[r]
        count = mptr[r + 1] - lo
        for _ in range(steps):
            half = count >> 1
            lo = lo + half if mind[min(lo + half, last)] <= c else lo
            count -= half
        at = min(lo, last)
        inm = (count > 0) & (mind[at] == c) & (mvals[at] != 0)
        v = vals[j] if inm else zero
        if by_line:
            total = (zero if k != 0 else total) + v
            found_any = (0 if k != 0 else found_any) | (1 if inm else 0)
            acc[r] = total
            stored[r] = found_any
        else:
            acc[c] += v
            stored[c] |= 1 if inm else 0
