"""Tests of the ``arrow_sparse.io`` package's namespace."""

from __future__ import annotations

import arrow_sparse as asp
from arrow_sparse.errors import ArrowSparseError
from arrow_sparse.io import ArrowSparseIOError


def test_io_is_in_the_namespace() -> None:
    assert "io" in asp.__all__
    assert issubclass(ArrowSparseIOError, OSError)
    assert issubclass(ArrowSparseIOError, ArrowSparseError)
