"""The CUDA conversion kernels (``kernels/cuda/convert.cu``).

Three ways, so the ``.cu`` code is tested on every CI run without a GPU:

* ``nvcc --ptx`` compiles the exact source the loader builds, every instantiation,
  for sm_80 and sm_90, in ``test_cuda_infra.py`` (for every family);
* the public conversions run through the real dispatch and launch code against the CPU
  emulator (``tests/cuda_emu``) and must equal the CPU (Numba) results;
* ``gpu``-marked tests run the launchers on CuPy arrays where a device exists.
"""

from __future__ import annotations

import inspect
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrow_sparse as asp
from arrow_sparse import _backend
from arrow_sparse import _validate as v
from arrow_sparse.kernels import cuda
from arrow_sparse.kernels.cpu import convert as cpu_convert
from arrow_sparse.kernels.cuda import _launch
from arrow_sparse.kernels.cuda import convert as cuda_convert
from tests.conftest import NUMERIC_DTYPES
from tests.cuda_emu.emu import Emulator, emulated


@pytest.fixture
def cuda_emu() -> Iterator[Emulator]:
    """Route the CUDA kernel families through the CPU emulator (tests/cuda_emu)."""
    with emulated() as emulator:
        yield emulator


CUDA_FAMILIES = sorted(p.stem for p in Path(cuda.__file__).parent.glob("*.cu"))
KERNELS = ("pad_rows", "expand_level", "unpad_rows")


def cpu_and_emu(emu: Emulator, fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """``fn`` on the CPU kernels, then through the emulator (which must have run)."""
    _backend.set_cuda_module_factory(None)
    expected = fn(*args, **kwargs)
    _backend.set_cuda_module_factory(emu)
    before = len(emu.launches)
    got = fn(*args, **kwargs)
    return expected, (got, emu.launches[before:])


def assert_same(expected: np.ndarray, got: np.ndarray) -> None:
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def sample(values_dtype: np.dtype, width: int = 1, start: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Rows of lengths 3, 0, 5, 1, 0, 2 starting at ``offsets[0] = start``."""
    lengths = np.array([3, 0, 5, 1, 0, 2])
    offsets = start + np.concatenate([[0], np.cumsum(lengths)])
    rng = np.random.default_rng(7)
    total = int(offsets[-1])
    shape = (total,) if width == 1 else (total, width)
    values = rng.integers(1, 100, size=shape).astype(values_dtype)
    return values, offsets


# ------------------------------------------------------------------ registry and source
def test_every_cpu_convert_kernel_has_a_cuda_twin_with_its_signature() -> None:
    cpu_names = sorted(n for n, f in vars(cpu_convert).items() if not n.startswith("_")
                       and inspect.isfunction(f) and f.__module__ == cpu_convert.__name__)
    assert cpu_names == sorted(KERNELS)
    assert sorted(cuda_convert.__all__) == cpu_names
    for name in cpu_names:
        cpu_params = list(inspect.signature(getattr(cpu_convert, name)).parameters)
        cuda_params = list(inspect.signature(getattr(cuda_convert, name)).parameters)
        assert cuda_params == ["xp", *cpu_params], name


def test_get_kernel_routes_to_the_cuda_launcher_only_under_a_factory() -> None:
    assert _backend.get_kernel("convert", "pad_rows") is cpu_convert.pad_rows
    _backend.set_cuda_module_factory(Emulator())
    try:
        assert _backend.get_kernel("convert", "pad_rows").func is cuda_convert.pad_rows
        with pytest.raises(NotImplementedError, match="nope: no cuda kernel in family 'convert'"):
            _backend.get_kernel("convert", "nope")
    finally:
        _backend.set_cuda_module_factory(None)
    assert _backend.get_kernel("convert", "pad_rows") is cpu_convert.pad_rows


def test_name_expressions_cover_every_dtype_once() -> None:
    names = cuda.name_expressions("convert")
    # pad_rows and unpad_rows over 10 value x 2 offsets types, expand_level and
    # check_offsets over the offsets types, check_lengths and check_segment_ids over the
    # 4 signed integer types.
    assert len(names) == len(set(names)) == 2 * 10 * 2 + 2 + 2 + 4 + 4
    for dtype in NUMERIC_DTYPES:
        c = _launch.DTYPE_TO_CTYPE[np.dtype(dtype)]
        assert f"pad_rows<{c}, int>" in names and f"unpad_rows<{c}, long long>" in names
    assert not set(cuda_convert.DEVICE_ONLY) & set(cuda_convert.__all__)  # device-only


def test_unsupported_dtype_raises_not_implemented() -> None:
    with pytest.raises(NotImplementedError, match="pad_rows: no cuda kernel for float16"):
        _launch.ctype("pad_rows", np.dtype(np.float16))
    with pytest.raises(NotImplementedError, match="expand_level: no cuda kernel for int8"):
        _launch.ctype("expand_level", np.dtype(np.int8), _launch.INDEX_CTYPES)


def test_source_prepends_the_common_header_with_line_directives() -> None:
    text = cuda.source("convert")
    directory = Path(cuda.__file__).parent.as_posix()
    assert text.startswith(f'#line 1 "{directory}/_common.cuh"\n')
    assert f'\n#line 1 "{directory}/convert.cu"\n' in text
    assert not re.search(r"^\s*#\s*include", text, re.MULTILINE)


def test_importing_the_cuda_loader_does_not_import_cupy() -> None:
    code = ("import sys, arrow_sparse, arrow_sparse.kernels.cuda.convert; "
            "assert 'cupy' not in sys.modules")
    subprocess.run([__import__("sys").executable, "-c", code], check=True)


# ------------------------------------------------------------------ through the emulator
def test_jagged_to_padded_dense_matches_cpu(cuda_emu: Emulator, values_dtype: np.dtype,
                                            offsets_dtype: np.dtype) -> None:
    values, offsets = sample(values_dtype)
    offsets = offsets.astype(offsets_dtype)
    for max_lengths in (None, [2], [0]):
        expected, (got, launches) = cpu_and_emu(cuda_emu, asp.jagged_to_padded_dense, values,
                                                [offsets], max_lengths, padding_value=9)
        assert_same(expected, got)
        if max_lengths != [0]:
            c, o = _launch.DTYPE_TO_CTYPE[values_dtype], _launch.DTYPE_TO_CTYPE[offsets_dtype]
            assert launches == [f"pad_rows<{c}, {o}>"]


def test_jagged_to_padded_dense_inner_axes(cuda_emu: Emulator, offsets_dtype: np.dtype) -> None:
    values, offsets = sample(np.dtype(np.float32), width=3)
    values = values.reshape(-1, 3, 1)
    expected, (got, _) = cpu_and_emu(cuda_emu, asp.jagged_to_padded_dense, values,
                                     [offsets.astype(offsets_dtype)], [4], padding_value=-0.5)
    assert_same(expected, got)


def test_dense_to_jagged_matches_cpu(cuda_emu: Emulator, values_dtype: np.dtype,
                                     offsets_dtype: np.dtype) -> None:
    values, offsets = sample(values_dtype, width=2)
    offsets = offsets.astype(offsets_dtype)
    dense = asp.jagged_to_padded_dense(values, [offsets], [3], padding_value=0)  # truncates
    expected, (got, launches) = cpu_and_emu(cuda_emu, asp.dense_to_jagged, dense, [offsets],
                                            padding_value=5)
    assert_same(expected, got)
    c, o = _launch.DTYPE_TO_CTYPE[values_dtype], _launch.DTYPE_TO_CTYPE[offsets_dtype]
    assert launches == [f"unpad_rows<{c}, {o}>"]


def test_multi_level_round_trip_matches_cpu(cuda_emu: Emulator, offsets_dtype: np.dtype) -> None:
    outer = np.array([1, 3, 3, 6, 7], dtype=offsets_dtype)       # offsets[0] > 0, empty row
    middle = np.array([0, 2, 2, 5, 6, 8, 9, 12], dtype=offsets_dtype)
    inner = np.array([0, 1, 4, 4, 6, 7, 7, 9, 12, 13, 13, 15, 17], dtype=offsets_dtype)
    values = np.arange(1, 18, dtype=np.float64)
    offs = [outer, middle, inner]
    for lengths in (None, [2, 2, 2], [3, 1, 4]):
        expected, (dense, launches) = cpu_and_emu(cuda_emu, asp.jagged_to_padded_dense, values,
                                                  offs, lengths, padding_value=-1)
        assert_same(expected, dense)
        assert [n.split("<")[0] for n in launches] == ["expand_level"] * 2 + ["pad_rows"]
        expected, (back, _) = cpu_and_emu(cuda_emu, asp.dense_to_jagged, dense, offs,
                                          padding_value=-2)
        assert_same(expected, back)


def arrow_rows(large: bool) -> pa.Array:
    rows = [[1, 2, 3], None, [], [4, 5, 6, 7, 8], None, [9], [10, 11]]
    array = pa.array(rows, pa.large_list(pa.int16()) if large else pa.list_(pa.int16()))
    return array.slice(1)  # offsets[0] > 0 and a leading null


@pytest.mark.parametrize("large", [False, True], ids=["list", "large_list"])
def test_to_padded_with_null_rows_matches_cpu(cuda_emu: Emulator, large: bool) -> None:
    jagged = asp.Jagged.from_arrow(arrow_rows(large))
    assert jagged.null_count == 2
    for max_length in (None, 2):
        expected, (got, launches) = cpu_and_emu(cuda_emu, jagged.to_padded, max_length, -1)
        assert_same(expected, got)
        assert launches == [f"pad_rows<short, {'long long' if large else 'int'}>"]


def test_nested_to_padded_with_null_rows_matches_cpu(cuda_emu: Emulator) -> None:
    rows = [[[1, 2], None, [3]], None, [[], [4, 5, 6]], [[7]]]
    jagged = asp.Jagged.from_arrow(pa.array(rows, pa.list_(pa.list_(pa.float32()))))
    expected, (got, _) = cpu_and_emu(cuda_emu, jagged.to_padded, [2, 2], 0)
    assert_same(expected, got)


def test_grid_stride_loops_cover_more_work_than_threads(cuda_emu: Emulator,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_launch, "MAX_BLOCKS", 1)  # 256 threads for thousands of elements
    rng = np.random.default_rng(3)
    lengths = rng.integers(0, 40, size=200)
    offsets = np.concatenate([[5], 5 + np.cumsum(lengths)])
    values = rng.standard_normal((int(offsets[-1]), 3))
    expected, (dense, _) = cpu_and_emu(cuda_emu, asp.jagged_to_padded_dense, values, [offsets])
    assert_same(expected, dense)
    expected, (back, _) = cpu_and_emu(cuda_emu, asp.dense_to_jagged, dense, [offsets])
    assert_same(expected, back)
    two = [np.array([0, 50, 120, 200]), offsets - 5]
    expected, (nested, _) = cpu_and_emu(cuda_emu, asp.jagged_to_padded_dense, values[5:], two)
    assert_same(expected, nested)


def test_no_rows_and_no_values_launch_nothing(cuda_emu: Emulator) -> None:
    for offsets in (np.array([0]), np.array([3, 3, 3])):
        expected, (got, launches) = cpu_and_emu(
            cuda_emu, asp.jagged_to_padded_dense, np.zeros(3, np.int32), [offsets])
        assert_same(expected, got)
        assert launches == []


def test_pad_rows_launcher_writes_a_non_contiguous_out(cuda_emu: Emulator) -> None:
    values, offsets = sample(np.dtype(np.int64), width=2)
    row_index = np.array([2, -1, 0, 5], dtype=np.int64)
    valid = np.array([1, 1, 0, 1, 1, 1], dtype=np.uint8)
    expected = np.zeros((4, 3, 4), dtype=np.int64)
    cpu_convert.pad_rows(values, row_index, offsets, valid, 3, np.int64(-7), expected[:, :, ::2])
    got = np.zeros((4, 3, 4), dtype=np.int64)
    cuda_convert.pad_rows(np, values, row_index, offsets, valid, 3, np.int64(-7), got[:, :, ::2])
    assert_same(expected, got)


# ------------------------------------------------------------------ device checks
def first_position(check: Any) -> int | None:
    """The position a check reports (host or device), or None when it passes."""
    try:
        check()
    except (ValueError, IndexError) as exc:
        found = re.search(r"first at position (\d+)", str(exc))
        assert found is not None, exc
        return int(found.group(1))
    return None


def device_position(cuda_emu: Emulator, launch: Any) -> int | None:
    launch()
    return first_position(lambda: cuda.check_errors("check"))


@pytest.mark.parametrize("seed", range(8))
def test_device_checks_report_the_hosts_position(cuda_emu: Emulator, seed: int,
                                                 offsets_dtype: np.dtype) -> None:
    # One defect per input: the device check names the same position as the host.
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 5, size=40)
    offsets = (3 + np.concatenate([[0], np.cumsum(lengths)])).astype(offsets_dtype)
    num_values = int(offsets[-1]) + 2
    bad = offsets.copy()
    at = int(rng.integers(1, len(bad)))
    kind = seed % 3
    if kind == 0:
        bad[at] = bad[at - 1] - 1
    elif kind == 1:
        bad[at:] += num_values
    else:
        bad[0] = -1
        at = 0
    host = first_position(lambda: v.check_offsets("f", "offsets", bad, num_values))
    assert host == at
    assert device_position(cuda_emu,
                           lambda: cuda_convert.check_offsets(np, bad, num_values)) == host
    assert device_position(cuda_emu,
                           lambda: cuda_convert.check_offsets(np, offsets, num_values)) is None

    signed = lengths.astype(np.int16)
    signed[at - 1 if at else 0] = -2
    ends = np.concatenate([[0], np.cumsum(signed, dtype=np.int64)])
    host = first_position(lambda: v.check_lengths("f", "lengths", signed))
    assert device_position(cuda_emu, lambda: cuda_convert.check_lengths(np, signed, ends)) == host
    too_long = first_position(lambda: v.lengths_offsets("f", "lengths", lengths, padded_length=3))
    ends = np.concatenate([[0], np.cumsum(lengths)])
    assert device_position(cuda_emu, lambda: cuda_convert.check_lengths(np, lengths, ends, 3)) == \
        too_long

    ids = np.repeat(np.arange(40), lengths).astype(np.int32)
    if len(ids) > 1:
        unsorted = ids.copy()
        k = int(rng.integers(1, len(ids)))
        unsorted[k] = unsorted[k - 1] - 1
        host = first_position(lambda: v.check_sorted_segment_ids("f", "ids", unsorted))
        assert device_position(cuda_emu,
                               lambda: cuda_convert.check_segment_ids(np, unsorted)) == host
        host = first_position(lambda: v.check_segment_ids("f", "ids", ids, num_segments=20))
        assert device_position(
            cuda_emu, lambda: cuda_convert.check_segment_ids(np, ids, 20, sorted_ids=False)) == host


# ------------------------------------------------------------------ on a real GPU
def cupy_or_skip() -> Any:
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no CUDA device")
    except cupy.cuda.runtime.CUDARuntimeError:
        pytest.skip("no CUDA device")
    return cupy


@pytest.mark.gpu
def test_gpu_launchers_match_cpu(values_dtype: np.dtype, offsets_dtype: np.dtype) -> None:
    cupy = cupy_or_skip()
    values, offsets = sample(values_dtype, width=3)
    offsets = offsets.astype(offsets_dtype)
    pad = values_dtype.type(4)
    row_index = cpu_convert.expand_level(None, np.array([0, 2, 6], offsets_dtype), None, 3, 2)
    got_index = _backend.get_kernel("convert", "expand_level", cupy)(
        None, cupy.asarray(np.array([0, 2, 6], offsets_dtype)), None, 3, 2)
    np.testing.assert_array_equal(cupy.asnumpy(got_index), row_index)
    valid = np.array([1, 0, 1, 1, 1, 1], np.uint8)
    expected = np.empty((6, 4, 3), values_dtype)
    cpu_convert.pad_rows(values, row_index, offsets, valid, 4, pad, expected)
    out = cupy.empty((6, 4, 3), values_dtype)
    _backend.get_kernel("convert", "pad_rows", cupy)(
        cupy.asarray(values), cupy.asarray(row_index), cupy.asarray(offsets),
        cupy.asarray(valid), 4, pad, out)
    np.testing.assert_array_equal(cupy.asnumpy(out), expected)
    back = np.full(values.shape, pad)
    cpu_convert.unpad_rows(expected[:6], None, offsets, pad, back)
    out_back = cupy.full(values.shape, pad)
    _backend.get_kernel("convert", "unpad_rows", cupy)(
        cupy.asarray(expected[:6]), None, cupy.asarray(offsets), pad, out_back)
    np.testing.assert_array_equal(cupy.asnumpy(out_back), back)


def test_null_elements_and_float16_match_cpu(cuda_emu: Emulator, offsets_dtype: np.dtype) -> None:
    arr = pa.array([[1.5, None, 2.0], None, [None], [3.0, 4.0]], pa.list_(pa.float16()))
    if offsets_dtype == np.int64:
        arr = arr.cast(pa.large_list(pa.float16()))
    expected, (got, launches) = cpu_and_emu(cuda_emu, asp.jagged_to_padded_dense, arr.slice(1),
                                            None, None, -1)
    assert_same(expected, got)
    assert got.tolist() == [[-1, -1], [-1, -1], [3.0, 4.0]]
    o = _launch.DTYPE_TO_CTYPE[offsets_dtype]
    assert launches == [f"pad_rows<unsigned short, {o}>"]
    dense = np.array([[1.5, 2.5], [np.nan, -0.0]], np.float16)
    expected, (back, launches) = cpu_and_emu(cuda_emu, asp.dense_to_jagged, dense,
                                             [np.array([0, 1, 4], offsets_dtype)], 9)
    np.testing.assert_array_equal(back.view(np.uint16), expected.view(np.uint16))
    assert launches == [f"unpad_rows<unsigned short, {o}>"]
