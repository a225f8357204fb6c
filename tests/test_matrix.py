"""The pairwise test matrices (tests/_matrix.py): every pair covered, nothing invented."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from ._matrix import pairwise


@given(st.lists(st.integers(1, 6), min_size=1, max_size=5))
def test_every_pair_of_values_is_covered_by_cases_of_the_product(sizes: list[int]) -> None:
    axes = [[f"{a}{k}" for k in range(n)] for a, n in zip("abcde", sizes, strict=False)]
    cases = pairwise(*axes, full=False)
    product = set(itertools.product(*axes))
    assert set(cases) <= product and len(set(cases)) == len(cases)
    for i, j in itertools.combinations(range(len(axes)), 2):
        assert {(c[i], c[j]) for c in cases} == set(itertools.product(axes[i], axes[j]))
    if len(axes) <= 2:
        assert sorted(cases) == sorted(product)


def test_full_is_the_product_and_pairs_are_fewer() -> None:
    axes = [range(10), range(2), range(3), range(4)]
    assert len(pairwise(*axes, full=True)) == 240
    assert len(pairwise(*axes, full=False)) == 40  # 10 x 4: the largest pair of axes
    assert pairwise(*axes, full=False) == pairwise(*axes, full=False)  # deterministic
