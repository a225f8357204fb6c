"""The elementwise family as a whole (``arrow_sparse/elementwise/__init__.py``).

Every public function is exported at the root, has a sample call (``_samples.py``, used
by ``tests/test_api.py`` too) that rejects an ``object()`` with the library's TypeError,
and is in the synchronisation table of ``tests/test_cuda_dispatch.py``. On random arrays,
the functions give on a device Jagged (the stand-in CuPy, kernels on the emulator)
what they give on the host: one property test over the family (each module's tests run
its functions on every backend with example batches).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse.errors import ArrowSparseTypeError
from arrow_sparse.kernels import cuda

from .._strategies import list_arrays
from ..cuda_emu.fake_cupy import emulated_cupy
from ._helpers import close_rows
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


#: Public functions run on a device Jagged by the property test below (the host values of
#: ``x`` and ``rows`` become device arrays there).
DEVICE_CALLS: dict[str, Callable[[asp.Jagged, Any, Any], Any]] = {
    "operators": lambda j, x, rows: j * 2 + 1,
    "same rows": lambda j, x, rows: j * j - j,
    "ufunc": lambda j, x, rows: np.exp(j / 1000),
    "per row": lambda j, x, rows: j + x,
    "map_values": lambda j, x, rows: j.map_values(lambda v: v - 1),
    "segment_softmax": lambda j, x, rows: asp.segment_softmax(j),
    "segment_cumsum": lambda j, x, rows: asp.segment_cumsum(j, exclusive=True),
    "index_select": lambda j, x, rows: asp.index_select(j, rows),
    "list_slice": lambda j, x, rows: asp.list_slice(j, 1, -1),
    "jagged_unique": lambda j, x, rows: asp.jagged_unique(j),
    "repeat": lambda j, x, rows: asp.repeat(x, j),
}


@pytest.mark.hypothesis
@given(st.integers(1, 2).flatmap(lambda levels: list_arrays(
    np.dtype(np.float64), levels=levels, null_values=True, null_ranges=True)), st.data())
def test_device_functions_match_the_host_on_random_arrays(case: tuple[pa.Array, list[Any]],
                                                          data: st.DataObject) -> None:
    # Sliced arrays, null rows over arbitrary ranges, null elements, one or two levels.
    arr, rows_list = case
    n = len(rows_list)
    rows = np.array(data.draw(st.lists(st.integers(-n, n - 1), max_size=6) if n else
                              st.just([])), dtype=np.int64)
    x = np.arange(n, dtype=np.float64)
    host = asp.Jagged.from_arrow(arr)
    expected = {name: call(host, x, rows).to_list() for name, call in DEVICE_CALLS.items()}
    with emulated_cupy() as cp:
        device = host.to_device("cuda")
        for name, call in DEVICE_CALLS.items():
            got = call(device, cp.asarray(x), cp.asarray(rows))
            assert got.device == "cuda:0", name
            close_rows(got.to_device("cpu").to_list(), expected[name], rel=1e-12)
        cuda.check_errors("test")
