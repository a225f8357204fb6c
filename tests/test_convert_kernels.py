"""The CUDA conversion launchers and kernels (``kernels/cuda/convert.{py,cu}``), called
directly.

Every CPU conversion kernel has a CUDA twin with its signature, routed by
``_backend.get_kernel`` only under a CUDA module factory; the loader's source and name
expressions cover every dtype once; a launcher writes a non-contiguous ``out``; the
device checks report the host checks' positions; ``gpu``-marked tests run the launchers
on CuPy arrays where a device exists. ``nvcc --ptx`` compiles every instantiation in
``test_cuda_infra.py``. The public conversions run through the emulator and are compared
with the CPU in ``test_convert.py`` (and ``Jagged.to_padded`` in ``test_jagged.py``).
"""

from __future__ import annotations

import inspect
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from arrow_sparse import _backend
from arrow_sparse import _validate as v
from arrow_sparse.kernels import cuda
from arrow_sparse.kernels.cpu import convert as cpu_convert
from arrow_sparse.kernels.cuda import _launch
from arrow_sparse.kernels.cuda import convert as cuda_convert

from ._convert_helpers import assert_same, sample
from .conftest import NUMERIC_DTYPES, cupy_or_skip
from .cuda_emu.emu import Emulator, emulated


@pytest.fixture
def cuda_emu() -> Iterator[Emulator]:
    """Route the CUDA kernel families through the CPU emulator (tests/cuda_emu)."""
    with emulated() as emulator:
        yield emulator


KERNELS = ("pad_rows", "expand_level", "unpad_rows")


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


# ------------------------------------------------------------------ launchers
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
