"""The transforms family as a whole (``arrow_sparse/transforms/__init__.py``).

Every transform rejects an ``object()`` with the library's TypeError naming it, and is
in the synchronisation table of ``tests/test_cuda_dispatch.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

import arrow_sparse as asp


def test_every_transform_rejects_object_with_its_name() -> None:
    vocab = asp.fit_vocabulary(np.array([1]))
    calls = {
        "hash_bucket": (10,), "bucketize": ([1],), "categorify": (vocab,),
        "value_counts": (), "length_stats": (), "pad_or_truncate": (2,),
        "drop_nulls": (), "fill_null": (0,), "fit_vocabulary": (),
    }
    for name, rest in calls.items():
        with pytest.raises(asp.errors.ArrowSparseTypeError, match=f"^{name}: "):
            getattr(asp, name)(object(), *rest)


def test_every_transform_is_in_the_synchronisation_table() -> None:
    from ..test_cuda_dispatch import SYNCS

    ops = {name for name in asp.transforms.__all__ if name.islower()}
    assert ops <= {key.split(" ")[0] for key in SYNCS}
