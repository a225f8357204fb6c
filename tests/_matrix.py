"""Test matrices over dtypes and options: every pair of values, not every combination.

A kernel test that runs every values dtype with both offsets widths, both id widths and
every reduction compiles one CPU kernel per combination: with the full products the
suite compiled 1,714 kernel signatures on a cold cache, two thirds of its CPU time.
The kernels are generic over their dtypes; what goes wrong in practice is one dtype
(an accumulator type, an output-dtype rule) or one pair meeting (uint64 values with int32
offsets, int8 values with float weights). So the default run covers every *pair* of
values of any two axes at least once (a pairwise covering array, built greedily and
deterministically), and ``ARROW_SPARSE_TEST_MATRIX=full pytest ...`` runs the full
products (before a release; see docs/development.md).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

#: ``ARROW_SPARSE_TEST_MATRIX=full`` runs every combination instead of every pair.
FULL = os.environ.get("ARROW_SPARSE_TEST_MATRIX", "pairs") == "full"


def pairwise(*axes: Sequence[Any], full: bool = FULL) -> list[tuple[Any, ...]]:
    """Cases that hold every pair of values of any two axes at least once.

    Greedy: each next case is the first of the full product (in its order) that covers
    the most pairs not yet covered, so the list is the same on every run. With one or two
    axes, or ``full``, this is the full product.

    Examples
    --------
    >>> cases = pairwise("ab", "xy", "01")
    >>> len(cases), len(list(itertools.product("ab", "xy", "01")))
    (4, 8)
    >>> sorted({(a, x) for a, x, _ in cases})
    [('a', 'x'), ('a', 'y'), ('b', 'x'), ('b', 'y')]
    """
    product = list(itertools.product(*(range(len(axis)) for axis in axes)))
    if full or len(axes) <= 2:
        chosen = product
    else:
        def pairs(case: tuple[int, ...]) -> set[tuple[int, int, int, int]]:
            return {(i, case[i], j, case[j])
                    for i, j in itertools.combinations(range(len(case)), 2)}

        covers = [pairs(case) for case in product]
        uncovered = set().union(*covers)
        chosen = []
        while uncovered:
            best = max(range(len(product)), key=lambda k: len(covers[k] & uncovered))
            chosen.append(product[best])
            uncovered -= covers[best]
    return [tuple(axis[k] for axis, k in zip(axes, case, strict=True)) for case in chosen]


def _as_dtype(value: Any) -> Any:
    """numpy scalar types (``np.int8``) as dtypes, as the dtype fixtures give them."""
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value)
    return value


def _case_id(value: Any) -> str:
    if value is None:
        return "1d"
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, tuple):  # a shape
        return "shape" + "x".join(map(str, value))
    return f"D{value}" if isinstance(value, int) else str(value)


def pairwise_parametrize(argnames: str, *axes: Sequence[Any]) -> pytest.MarkDecorator:
    """``pytest.mark.parametrize`` over :func:`pairwise` cases of ``axes``.

    numpy scalar types become dtypes (as the ``values_dtype`` / ``offsets_dtype`` fixtures
    give them); a case's id joins its values' names (``None`` is ``1d``: the
    segment tests' width of 1-D values, an int ``D<int>``: a width, a tuple
    ``shape<n>x<m>``).
    """
    cases = [tuple(map(_as_dtype, case)) for case in pairwise(*axes)]
    return pytest.mark.parametrize(argnames, cases,
                                   ids=["-".join(map(_case_id, case)) for case in cases])
