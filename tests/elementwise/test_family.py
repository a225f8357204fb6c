"""The elementwise family as a whole (``arrow_sparse/elementwise/__init__.py``).

Every public function is exported at the root, has a sample call (``_samples.py``, used
by ``tests/test_api.py`` too) that rejects an ``object()`` with the library's TypeError,
and is in the synchronisation table of ``tests/test_cuda_dispatch.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import arrow_sparse as asp
from arrow_sparse.errors import ArrowSparseTypeError

from ._samples import SAMPLE_CALLS


@pytest.mark.parametrize("name", sorted(SAMPLE_CALLS))
def test_object_argument_raises_type_error(name: str) -> None:
    func: Callable[..., Any] = getattr(asp, name)
    args, kwargs = SAMPLE_CALLS[name]
    func(*args, **kwargs)
    with pytest.raises(ArrowSparseTypeError, match=f"^{name}: "):
        func(object(), *args[1:], **kwargs)


def test_every_elementwise_function_is_exported_and_sampled() -> None:
    public = set(asp.elementwise.__all__) - {"array_ufunc", "jagged_ufunc"}
    assert public == set(SAMPLE_CALLS)
    assert public <= set(asp.__all__)


def test_every_function_is_in_the_synchronisation_table() -> None:
    from ..test_cuda_dispatch import SYNCS

    assert set(asp.elementwise.__all__) <= {key.split(" ")[0] for key in SYNCS}
