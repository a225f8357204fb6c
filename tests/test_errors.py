"""Tests of ``arrow_sparse.errors``: every error class mixes in its builtin, and the
KeyError text is not quoted.

The input checks that raise these errors are tested with the functions that reach them:
through the conversions and the ``Jagged`` constructors in ``test_validate.py``, those of
``_arrow`` in ``test_arrow.py``, through a family's functions with that family
(``tests/segment/``, ``tests/transforms/``, ...).
"""

from __future__ import annotations

import pytest

from arrow_sparse.errors import (
    ArrowSparseError,
    ArrowSparseIndexError,
    ArrowSparseIOError,
    ArrowSparseKeyError,
    ArrowSparseTypeError,
    ArrowSparseValueError,
)


@pytest.mark.parametrize("cls,builtin", [
    (ArrowSparseValueError, ValueError), (ArrowSparseIndexError, IndexError),
    (ArrowSparseTypeError, TypeError), (ArrowSparseKeyError, KeyError),
    (ArrowSparseKeyError, IndexError), (ArrowSparseIOError, OSError),
])
def test_error_classes_mix_in_the_builtin(cls: type[Exception], builtin: type[Exception]) -> None:
    assert issubclass(cls, ArrowSparseError) and issubclass(cls, builtin)
    with pytest.raises(builtin, match="^f: x is bad$"):
        raise cls("f: x is bad")


def test_key_error_text_is_not_quoted() -> None:
    assert str(ArrowSparseKeyError("f: key 'a' is not a key")) == "f: key 'a' is not a key"
    assert str(ArrowSparseKeyError()) == ""
