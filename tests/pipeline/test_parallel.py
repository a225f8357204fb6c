"""Tests of ``arrow_sparse.pipeline._parallel``: ordered_map and background threads."""

from __future__ import annotations

from typing import Any

import pytest

from arrow_sparse.pipeline._parallel import background, ordered_map


def test_ordered_map_order_and_errors() -> None:
    assert list(ordered_map(lambda x: x + 1, range(50), threads=3, window=4)) == \
        list(range(1, 51))

    def boom(x: int) -> int:
        if x == 7:
            raise ValueError("seven")
        return x

    got = []
    with pytest.raises(ValueError, match="seven"):
        for x in ordered_map(boom, range(20), threads=2):
            got.append(x)
    assert got == list(range(7))


def test_background_order_errors_and_early_close() -> None:
    assert list(background(iter(range(100)), depth=3)) == list(range(100))

    def failing() -> Any:
        yield 1
        raise KeyError("producer failed")

    got = []
    with pytest.raises(KeyError, match="producer failed"):
        for x in background(failing()):
            got.append(x)
    assert got == [1]
    closed = []

    def endless() -> Any:
        try:
            i = 0
            while True:
                yield i
                i += 1
        finally:
            closed.append(True)

    stream = background(endless(), depth=2)
    assert [next(stream) for _ in range(5)] == [0, 1, 2, 3, 4]
    stream.close()  # stops the thread, which closes its source
    assert closed == [True]
