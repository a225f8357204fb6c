"""Batches, comparisons and backend helpers shared by the tests of ``arrow_sparse.elementwise``.

The Caffe2 batch ``[1, 2, 3] [2, 4, 6, 7] [3, 6]`` of the docstrings; ``sample()``, a
sliced batch (``offsets[0] > 0``) with a null row, a null element and an empty row, as
the ``backend`` tests take it; the large batch of the parallel paths; and what the
comparisons of public functions on the CPU and through the CUDA emulator need.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pytest

import arrow_sparse as asp
from arrow_sparse import _backend
from arrow_sparse.kernels.cuda import _launch

from ..conftest import from_backend, to_backend
from ..cuda_emu.emu import Emulator

# ---------------------------------------------------------------------- the Caffe2 batch
CAFFE2_VALUES = np.array([1, 2, 3, 2, 4, 6, 7, 3, 6])
CAFFE2_OFFSETS = np.array([0, 3, 7, 9])
CAFFE2_ROWS = [[1, 2, 3], [2, 4, 6, 7], [3, 6]]


def caffe2() -> asp.Jagged:
    return asp.Jagged(CAFFE2_VALUES, CAFFE2_OFFSETS)


def close_rows(actual: Any, expected: Any, rel: float = 1e-9) -> None:
    """Nested lists equal, floats within ``rel`` (None and NaN matched exactly)."""
    if isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), (actual, expected)
        for a, e in zip(actual, expected, strict=True):
            close_rows(a, e, rel)
    elif expected is None or actual is None:
        assert actual is None and expected is None, (actual, expected)
    elif isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(actual)
    else:
        assert actual == pytest.approx(expected, rel=rel, abs=1e-12), (actual, expected)


def shares_offsets(result: asp.Jagged, source: asp.Jagged) -> None:
    assert result.offsets is source.offsets
    if not on_device_jagged(result):
        assert np.shares_memory(result.offsets, source.offsets)


def on_device_jagged(j: asp.Jagged) -> bool:
    return j.device != "cpu"


def spans_the_device_buffer(results: list[asp.Jagged], j: asp.Jagged, host: asp.Jagged) -> None:
    """Each result of an op on device ``j`` (``host`` on the CPU) keeps ``j``'s offsets and
    its whole values buffer: no offset was read back to trim it, 0 before the rows."""
    for result in results:
        assert result.offsets is j.offsets and result.device == "cuda:0"
        assert len(result.values) == len(j.values)
        assert result.values[:int(host.offsets[0])].get().tolist() == [0.0]


# ------------------------------------------------------------------------- every backend
#: Rows of ``sample()``: a null row, a null element, an empty row; sliced (offsets[0] > 0).
ROWS = [[1.0, None, 3.0], None, [], [4.0, 5.0, -2.0], [0.5]]
OTHER_ROWS = [[2.0, 2.0, None], [], None, [1.0, -1.0, 0.5], [4.0]]  # the same lengths


def sample(rows: list = ROWS, dtype: Any = np.float64, skip: int = 1) -> asp.Jagged:
    """A Jagged from an Arrow array of ``rows`` sliced after ``skip`` leading rows."""
    arrow_type = pa.list_(pa.from_numpy_dtype(dtype))
    return asp.Jagged.from_arrow(pa.array([[9] * skip] * skip + rows, arrow_type).slice(skip))


def on(backend: str, *xs: Any) -> Any:
    moved = [to_backend(x, backend) for x in xs]
    return moved[0] if len(moved) == 1 else moved


def check_jagged(got: Any, backend: str, expected: list, rel: float = 1e-9) -> asp.Jagged:
    """``got`` is on ``backend``'s device and holds ``expected`` (close for floats)."""
    host = from_backend(got, backend)
    assert isinstance(host, asp.Jagged)
    close_rows(host.to_list(), expected, rel)
    host.validate()
    return host


def raised_later(cp: ModuleType) -> None:
    asp.offsets_to_lengths(cp.asarray(np.array([0, 1])))


LATER = r" \(first at position {}; found by a device check, reported by a later call\)$"


# -------------------------------------------------------------------- the parallel paths
class LargeBatch(NamedTuple):
    """A batch large enough for the kernels' parallel twins, and the operands drawn for it."""

    lengths: np.ndarray
    offs: np.ndarray
    n: int
    values: np.ndarray
    rows: np.ndarray  # the row of each value
    pos: np.ndarray  # its position in the row
    pick: np.ndarray  # row ids for index_select
    ints: np.ndarray  # small integers for jagged_unique
    y: np.ndarray  # dense [rows, 8]
    x2: np.ndarray  # values [total, 4]
    w: np.ndarray  # dense [rows, 4, 3]
    y2: np.ndarray  # values [total, 2]


def large_batch() -> LargeBatch:
    """12,000 rows of 0-11 random normals and the operands of every function.

    Drawn from one generator in one order, so every test of the parallel paths sees the
    same numbers.
    """
    rng = np.random.default_rng(5)
    lengths = rng.integers(0, 12, size=12_000)
    offs = np.concatenate([[0], np.cumsum(lengths)])
    n = int(offs[-1])
    values = rng.standard_normal(n)
    rows = np.repeat(np.arange(len(lengths)), lengths)
    pos = np.arange(n) - offs[rows]
    pick = rng.integers(-len(lengths), len(lengths), size=15_000)
    ints = rng.integers(0, 5, size=n)
    y = rng.standard_normal((len(lengths), 8))
    x2 = rng.standard_normal((n, 4))
    w = rng.standard_normal((len(lengths), 4, 3))
    y2 = rng.standard_normal((n, 2))
    return LargeBatch(lengths, offs, n, values, rows, pos, pick, ints, y, x2, w, y2)


# ---------------------------------------------------------- the CPU against the emulator
def name(kernel: str, dtype: Any) -> str:
    return f"{kernel}<{_launch.DTYPE_TO_CTYPE[np.dtype(dtype)]}>"


def random_values(dtype: Any, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Integers over their whole range (sums and products wrap), floats around 0."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    return (rng.standard_normal(shape) * 4).astype(dtype)


def unique_values(dtype: Any, size: int, rng: np.random.Generator) -> np.ndarray:
    """Values with many repeats; floats with NaN, infinities and both zeros."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        pool = np.array([-1.5, 0.0, -0.0, 2.0, np.nan, np.inf, -np.inf, 2.0, 7.25], dtype=dtype)
        return rng.choice(pool, size=size)
    info = np.iinfo(dtype)
    pool = np.array([info.min, info.max, 0, 1, 2, info.max - 1], dtype=dtype)
    return rng.choice(pool, size=size)


#: Tolerance of softmax against the CPU in the emulator, by dtype (see the docstring).
SOFTMAX_RTOL = {np.dtype(np.float32): 5e-7, np.dtype(np.float64): 5e-15}


#: Below this a float32 softmax result is subnormal, where 4 ulp are no longer relative.
SOFTMAX_ATOL = {np.dtype(np.float32): 1.2e-38, np.dtype(np.float64): 0.0}


def assert_softmax_close(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=SOFTMAX_RTOL[got.dtype],
                               atol=SOFTMAX_ATOL[got.dtype])


def assert_bits(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))


def cpu_and_emu(emu: Emulator, fn: Callable[..., Any], *args: Any, **kwargs: Any
                ) -> tuple[Any, Any, list[str]]:
    """``fn`` on the CPU kernels, then through the emulator: (expected, got, launches)."""
    _backend.set_cuda_module_factory(None)
    expected = fn(*args, **kwargs)
    _backend.set_cuda_module_factory(emu)
    before = len(emu.launches)
    got = fn(*args, **kwargs)
    return expected, got, emu.launches[before:]


def as_arrow(x: Any) -> pa.Array | pa.ChunkedArray:
    return x.to_arrow() if isinstance(x, asp.Jagged) else x


def sample_array(dtype: Any, large: bool, seed: int = 0) -> pa.Array:
    """A sliced list array (offsets[0] > 0) with null rows, null elements and a long row."""
    rng = np.random.default_rng(seed)
    lengths = [2, 0, 3, 40, 1, 0, 4, 2]
    rows: list[Any] = []
    for i, n in enumerate(lengths):
        row = [None if rng.random() < 0.15 else v
               for v in random_values(dtype, (n,), rng).tolist()]
        rows.append(None if i == 5 else row)
    arrow_type = (pa.large_list if large else pa.list_)(pa.from_numpy_dtype(dtype))
    return pa.array(rows, type=arrow_type).slice(1)


def assert_same_unique(got: pa.Array, expected: pa.Array) -> None:
    """Equal rows, NaN equal to NaN and ``-0.0`` to ``0.0`` (which zero a row keeps may differ)."""
    assert got.type == expected.type
    assert got.offsets.equals(expected.offsets) and got.is_null().equals(expected.is_null())
    np.testing.assert_array_equal(got.flatten().to_numpy(zero_copy_only=False),
                                  expected.flatten().to_numpy(zero_copy_only=False))


LARGE = pytest.mark.parametrize("large", [False, True], ids=["list", "large_list"])
