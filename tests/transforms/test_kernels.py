"""The transforms kernels, called directly: the CPU (Numba) hashing helpers and the CUDA
launchers (``kernels/cuda/transforms.cu``).

The CPU XXH3 kernels are compared with the plain-Python XXH3 of ``tests/_reference.py``.
Every CUDA launcher runs on the CPU emulator (``tests/cuda_emu``) through the real
dispatch and launch code, on inputs of every dtype variant (empty ranges, empty and long
strings, null elements and rows, offsets starting above zero, int32 and int64 offsets
included), and must give its CPU (Numba) twin's results exactly: hashes and buckets,
bucket ids, kept lengths and positions, padded blocks, vocabulary tables (the same
layout, slot for slot), ids, orders and block buckets; counting returns the same
(value, count) pairs, in another order. Hashes are also compared with the plain-Python
XXH3 and, where it is installed, the ``xxhash`` package.

Every launch also runs in reversed and shuffled thread order and must give the same
bits (so the parallel table construction is order-independent). The launchers also run
on the stand-in CuPy's device arrays (counting their synchronisations), and every
device check and host check raises its error. The public transforms run through the
emulator in the tests of their modules (KeyedJagged.block_bucketize, which runs on this
family's kernels, here). ``nvcc --ptx`` is in ``tests/test_cuda_infra.py``;
``gpu``-marked tests run on CuPy where a device exists.
"""

from __future__ import annotations

import collections
import inspect
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse import _backend
from arrow_sparse.errors import ArrowSparseIndexError, ArrowSparseValueError
from arrow_sparse.kernels import cuda
from arrow_sparse.kernels.cpu import transforms as cpu
from arrow_sparse.kernels.cuda import _launch
from arrow_sparse.kernels.cuda import transforms as gpu

from .. import _reference as ref
from ..conftest import INT_DTYPES, NUMERIC_DTYPES, OFFSETS_DTYPES, cupy_or_skip
from ..cuda_emu import fake_cupy
from ..cuda_emu.emu import Emulator, emulated
from ._helpers import STRING_POOL, kernel_xxh3, launched, run_through_the_emulator, same


# -------------------------------------------------- XXH3 and bucket reduction on the CPU
@pytest.mark.hypothesis
@given(st.binary(max_size=300), st.integers(0, 2**64 - 1))
def test_xxh3_kernel_matches_reference(data: bytes, seed: int) -> None:
    assert kernel_xxh3(data, seed) == ref.xxh3_64(data, seed)


@pytest.mark.hypothesis
@given(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1))
def test_xxh3_int_kernel_matches_reference(x: int, seed: int) -> None:
    got = int(cpu.xxh3_int(np.uint64(x), cpu.int_bitflip(seed)))
    assert got == ref.xxh3_64(x.to_bytes(8, "little"), seed)


@pytest.mark.hypothesis
@given(st.integers(0, 2**64 - 1), st.integers(1, 2**63 - 1))
def test_bucket_reduction_is_exact_modulo(h: int, n: int) -> None:
    assert cpu.bucket_of(h, n) == h % n


# ---------------------------------------------------------------- CUDA launchers: inputs
INTS = [np.dtype(t) for t in INT_DTYPES]
UNSIGNED = [np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64)]
INT64_MIN = np.iinfo(np.int64).min


#: String lengths of every XXH3 path: empty, 1-3, 4-8, 9-16, 17-128, 129-240, and
#: above 240 bytes with 1, 2 and 3 blocks of 1024 bytes (block boundaries included).
LENGTHS = [0, 1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 100, 128, 129, 200, 239,
           240, 241, 255, 256, 1000, 1023, 1024, 1025, 1087, 2048, 2049, 3000]


#: Bucket counts of each division mode of ``divider`` (0: power of two, 1 and 2).
NUM_BUCKETS = [1, 1024, 1000, 7, 100_003, 2**63 - 1]
SEEDS = [0, 1, 2**32 + 5, 2**64 - 1]


def kernel(name: str) -> Callable[..., None]:
    """A kernel of the family for a direct launch (device checks out of the launchers' reach)."""
    return cuda.load_module("transforms").get_function(name)  # type: ignore[no-any-return]


def random_strings(rng: np.random.Generator, lengths: list[int]) -> list[bytes]:
    return [rng.integers(0, 256, n, dtype=np.uint8).tobytes() for n in lengths]


def string_buffers(strings: list[bytes | None], odtype: np.dtype, skip: int = 0
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, pa.Array]:
    """``(offsets, data, validity, array)`` of an Arrow binary array, sliced by ``skip``.

    With ``skip`` the offsets start above zero (a slice of a longer array).
    """
    kind = pa.binary() if odtype == np.int32 else pa.large_binary()
    arr = pa.array([b"pre" * 3] * skip + list(strings), type=kind).slice(skip)
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=odtype)[arr.offset:arr.offset + len(arr) + 1]
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None \
        else np.zeros(0, np.uint8)
    valid = None if arr.null_count == 0 else \
        np.array([x is not None for x in strings], dtype=bool)
    return offsets, data, valid, arr


def row_offsets(rng: np.random.Generator, n: int, rows: int, odtype: np.dtype,
                first: int = 0) -> np.ndarray:
    """Offsets of ``rows`` rows over elements [first, n), empty rows included."""
    cuts = np.sort(rng.integers(first, n + 1, size=rows - 1)) if rows > 1 else []
    return np.r_[first, cuts, n].astype(odtype)


def random_ints(rng: np.random.Generator, dtype: np.dtype, n: int) -> np.ndarray:
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    x[: min(n, 2)] = [info.min, info.max][: min(n, 2)]
    return x


def cpu_and_gpu(name: str, *args: Any) -> tuple[Any, Any]:
    """Kernel ``name`` on the CPU and through the dispatch to its CUDA launcher."""
    launcher = _backend.get_kernel("transforms", name)
    assert launcher.func is getattr(gpu, name)
    expected = getattr(cpu, name)(*args)
    got = launcher(*args)
    cuda.check_errors(name)
    return expected, got


def both_into(name: str, out_index: int, *args: Any) -> tuple[np.ndarray, np.ndarray]:
    """Run a kernel that writes argument ``out_index`` on copies: (CPU out, GPU out)."""
    outs = []
    for impl in (getattr(cpu, name), _backend.get_kernel("transforms", name)):
        call = list(args)
        call[out_index] = args[out_index].copy()
        impl(*call)
        outs.append(call[out_index])
    cuda.check_errors(name)
    return outs[0], outs[1]


# ------------------------------------------------------------------------------ registry
def test_name_expressions_cover_every_variant_once() -> None:
    names = gpu.NAME_EXPRESSIONS
    assert len(names) == len(set(names)) == 69
    assert {cuda.group_of(n).split("<")[0] for n in names} == {
        "hash_ints", "hash_strings", "bucketize", "kept_lengths", "kept_positions",
        "pad_or_truncate", "int_table_insert", "int_table_fill", "lookup_ints",
        "string_hashes", "string_set_insert", "string_set_count", "string_table_insert",
        "string_table_fill", "lookup_strings", "bucket_counts", "bucket_scatter",
        "check_null_rows"}


def test_launchers_take_the_cpu_kernels_arguments() -> None:
    assert set(gpu.__all__) == set(cpu.__all__)
    for name in gpu.__all__:
        assert (list(inspect.signature(getattr(gpu, name)).parameters)
                == ["xp", *inspect.signature(getattr(cpu, name)).parameters]), name


def test_bucket_counts_cover_every_division_mode() -> None:
    assert {cpu.divider(n)[3] for n in NUM_BUCKETS} == {0, 1, 2}


def test_the_launchers_import_no_numba() -> None:
    code = ("import sys; import arrow_sparse.kernels.cuda.transforms; "
            "print(sorted(m for m in ('numba', 'arrow_sparse.kernels.cpu.transforms') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"


# ------------------------------------------------------------------------------- hashing
@pytest.mark.parametrize("num_buckets", NUM_BUCKETS)
@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_hash_ints_match_cpu(cuda_emu: Emulator, dtype: np.dtype, num_buckets: int) -> None:
    rng = np.random.default_rng(num_buckets % 97)
    values = random_ints(rng, dtype, 300)
    for seed in SEEDS:
        out = np.full(300, -7, dtype=np.int64)
        for start, stop in ((0, 300), (5, 290), (10, 10)):
            expected, got = both_into("hash_ints", 5, values, start, stop, seed, num_buckets,
                                      out)
            np.testing.assert_array_equal(got, expected)
    assert "hash_ints" in launched(cuda_emu, 0)


def test_hash_ints_match_the_reference() -> None:
    values = np.array([0, 1, -1, INT64_MIN, 2**63 - 1, 12345], dtype=np.int64)
    for seed in SEEDS:
        out = np.empty(6, dtype=np.int64)
        with emulated():
            gpu.hash_ints(np, values, 0, 6, seed, 2**63 - 1, out)
        expected = [ref.xxh3_64(int(x).to_bytes(8, "little", signed=True), seed) % (2**63 - 1)
                    for x in values]
        assert out.tolist() == expected


@pytest.mark.parametrize("skip", [0, 3])
@pytest.mark.parametrize("odtype", OFFSETS_DTYPES, ids=str)
def test_hash_strings_match_cpu_and_the_reference(cuda_emu: Emulator, odtype: np.dtype,
                                                  skip: int) -> None:
    rng = np.random.default_rng(skip)
    strings = random_strings(rng, LENGTHS)
    offsets, data, _, _ = string_buffers([*strings, None], odtype, skip)
    n = len(strings) + 1
    for seed in SEEDS:
        for num_buckets in (1 << 62, 1000):
            out = np.full(n, -7, dtype=np.int64)
            expected, got = both_into("hash_strings", 6, offsets, data, 0, n, seed, num_buckets,
                                      out)
            np.testing.assert_array_equal(got, expected)
            assert got[:-1].tolist() == [ref.xxh3_64(s, seed) % num_buckets for s in strings]
            assert got[-1] == ref.xxh3_64(b"", seed) % num_buckets  # a null is empty
    out = np.full(n, -7, dtype=np.int64)
    expected, got = both_into("hash_strings", 6, offsets, data, 4, 9, 3, 77, out)
    np.testing.assert_array_equal(got, expected)
    assert (got[:4] == -7).all() and (got[9:] == -7).all()


def test_hash_strings_match_xxhash() -> None:
    xxhash = pytest.importorskip("xxhash")
    rng = np.random.default_rng(11)
    strings = random_strings(rng, LENGTHS + list(rng.integers(0, 5000, 40)))
    offsets, data, _, _ = string_buffers(strings, np.dtype(np.int64))
    for seed in SEEDS:
        out = np.empty(len(strings), dtype=np.int64)
        with emulated():
            gpu.hash_strings(np, offsets, data, 0, len(strings), seed, 2**63 - 1, out)
        assert out.tolist() == [xxhash.xxh3_64_intdigest(s, seed=seed) % (2**63 - 1)
                                for s in strings]


@pytest.mark.hypothesis
@given(st.lists(st.binary(max_size=300), max_size=12), st.integers(0, 2**64 - 1),
       st.integers(1, 2**63 - 1))
def test_hash_strings_property(strings: list[bytes], seed: int, num_buckets: int) -> None:
    offsets, data, _, _ = string_buffers(strings, np.dtype(np.int32))
    out = np.empty(len(strings), dtype=np.int64)
    with emulated():
        gpu.hash_strings(np, offsets, data, 0, len(strings), seed, num_buckets, out)
    assert out.tolist() == [ref.xxh3_64(s, seed) % num_buckets for s in strings]


# ----------------------------------------------------------------------------- bucketize
@pytest.mark.parametrize("nb", [0, 1, 5, 64, 65, 200])
@pytest.mark.parametrize("dtype", [np.dtype(t) for t in NUMERIC_DTYPES], ids=str)
def test_bucketize_matches_cpu(cuda_emu: Emulator, dtype: np.dtype, nb: int) -> None:
    rng = np.random.default_rng(nb)
    if dtype.kind == "f":
        values = (rng.standard_normal(400) * 3).astype(dtype)
        values[::9] = np.nan
        values[1::9] = np.inf
        boundaries = np.sort(rng.standard_normal(nb) * 3).astype(dtype)
    else:
        values = random_ints(rng, dtype, 400)
        boundaries = np.sort(random_ints(rng, dtype, nb))
    if nb > 2:
        boundaries[1] = boundaries[2]  # a repeated boundary
        values[:3] = boundaries[:3]  # values on boundaries
    for right in (False, True):
        out = np.full(400, -7, dtype=np.int64)
        for start, stop in ((0, 400), (7, 350), (3, 3)):
            expected, got = both_into("bucketize", 5, values, start, stop, boundaries, right,
                                      out)
            np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(("vdtype", "bdtype"), [(np.int32, np.float64), (np.uint64, np.int64),
                                                (np.float64, np.float32), (np.int8, np.uint8)])
def test_bucketize_compares_in_the_common_dtype(cuda_emu: Emulator, vdtype: Any,
                                                bdtype: Any) -> None:
    rng = np.random.default_rng(2)
    values = (rng.standard_normal(100) * 100).astype(vdtype)
    boundaries = np.sort((rng.standard_normal(70) * 100).astype(bdtype))
    out = np.zeros(100, dtype=np.int64)
    expected, got = both_into("bucketize", 5, values, 0, 100, boundaries, False, out)
    np.testing.assert_array_equal(got, expected)


# ---------------------------------------------------------------------------- compaction
def masks(rng: np.random.Generator, rows: int, n: int, kind: str
          ) -> tuple[np.ndarray | None, np.ndarray | None]:
    row_valid = (rng.random(rows) > 0.3) if kind in ("rows", "both") else None
    valid = (rng.random(n) > 0.4) if kind in ("elements", "both") else None
    if valid is not None and kind == "both":
        valid = valid.view(np.uint8)  # either mask type
    return row_valid, valid


@pytest.mark.parametrize("kind", ["none", "rows", "elements", "both"])
@pytest.mark.parametrize("odtype", OFFSETS_DTYPES, ids=str)
def test_kept_lengths_and_compact_match_cpu(cuda_emu: Emulator, odtype: np.dtype,
                                            kind: str) -> None:
    rng = np.random.default_rng(len(kind))
    for rows, n, first in ((0, 0, 0), (1, 0, 0), (9, 60, 0), (40, 300, 17), (3, 200, 5)):
        offsets = row_offsets(rng, n, rows, odtype, first) if rows else np.array([first], odtype)
        row_valid, valid = masks(rng, rows, n, kind)
        expected, got = cpu_and_gpu("kept_lengths", offsets, row_valid, valid)
        np.testing.assert_array_equal(got, expected)
        assert got.dtype == np.int64
        (e_offsets, e_positions), (g_offsets, g_positions) = cpu_and_gpu(
            "compact", offsets, row_valid, valid)
        np.testing.assert_array_equal(g_offsets, e_offsets)
        np.testing.assert_array_equal(g_positions, e_positions)
        assert g_offsets.dtype == odtype and g_positions.dtype == np.int64


# ------------------------------------------------------------------------------- padding
PAD_DTYPES = [*(np.dtype(t) for t in NUMERIC_DTYPES), np.dtype(bool)]


@pytest.mark.parametrize("width", [1, 3, 0])
@pytest.mark.parametrize("dtype", PAD_DTYPES, ids=str)
def test_pad_or_truncate_matches_cpu(cuda_emu: Emulator, dtype: np.dtype, width: int) -> None:
    rng = np.random.default_rng(width)
    n, rows = 70, 12
    values = rng.integers(0, 100, size=(n, width)).astype(dtype)
    pad = np.array(42).astype(dtype)[()]
    for odtype in OFFSETS_DTYPES:
        offsets = row_offsets(rng, n, rows, odtype, first=4)
        for kind in ("none", "rows", "elements", "both"):
            row_valid, valid = masks(rng, rows, n, kind)
            for length in (0, 1, 4, 9):
                for left in (False, True):
                    results = []
                    for impl in (cpu.pad_or_truncate,
                                 _backend.get_kernel("transforms", "pad_or_truncate")):
                        out = np.zeros((rows, length, width), dtype=dtype)
                        out_valid = None if valid is None else np.full((rows, length), 7,
                                                                       np.uint8)
                        impl(values, offsets, row_valid, valid, length, left, pad, out,
                             out_valid)
                        results.append((out, out_valid))
                    cuda.check_errors("pad_or_truncate")
                    (e_out, e_valid), (g_out, g_valid) = results
                    np.testing.assert_array_equal(g_out.view(np.uint8), e_out.view(np.uint8))
                    np.testing.assert_array_equal(g_valid, e_valid)


@pytest.mark.parametrize("dtype", [np.float16, "datetime64[ns]", "timedelta64[s]"])
def test_pad_or_truncate_moves_the_bits_of_other_dtypes(cuda_emu: Emulator, dtype: Any) -> None:
    values = np.arange(24, dtype=np.int64).astype(dtype).reshape(12, 2)
    offsets = np.array([0, 5, 5, 12])
    valid = np.arange(12) % 4 != 1
    bits = np.dtype(f"u{values.itemsize}")
    expected = np.zeros((3, 3, 2), dtype=bits)  # the CPU kernel on the bits (no float16 in Numba)
    cpu.pad_or_truncate(values.view(bits), offsets, None, valid, 3, False,
                        np.array(7).astype(dtype).view(bits)[()], expected, None)
    got = np.zeros((3, 3, 2), dtype=dtype)
    gpu.pad_or_truncate(np, values, offsets, None, valid, 3, False, np.array(7).astype(dtype)[()],
                        got, None)
    np.testing.assert_array_equal(got.view(bits), expected)


def test_pad_or_truncate_into_non_contiguous_outputs(cuda_emu: Emulator) -> None:
    values = np.arange(20, dtype=np.int64).reshape(10, 2)
    offsets = np.array([0, 3, 3, 10])
    valid = np.arange(10) % 3 != 0
    expected = np.zeros((3, 4, 2), dtype=np.int64)
    e_valid = np.zeros((3, 4), dtype=np.uint8)
    cpu.pad_or_truncate(values, offsets, None, valid, 4, True, np.int64(-1), expected, e_valid)
    big, big_valid = np.zeros((3, 8, 2), dtype=np.int64), np.zeros((3, 8), dtype=np.uint8)
    gpu.pad_or_truncate(np, values, offsets, None, valid, 4, True, np.int64(-1), big[:, ::2],
                        big_valid[:, ::2])
    np.testing.assert_array_equal(big[:, ::2], expected)
    np.testing.assert_array_equal(big_valid[:, ::2], e_valid)
    assert not big[:, 1::2].any() and not big_valid[:, 1::2].any()


# ------------------------------------------------------------------------------ counting
def as_pairs(keys: np.ndarray, counts: np.ndarray) -> list[tuple[int, int]]:
    assert keys.dtype == counts.dtype == np.int64
    return sorted(zip(keys.tolist(), counts.tolist(), strict=True))


@pytest.mark.parametrize("odtype", OFFSETS_DTYPES, ids=str)
@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_count_ints_matches_cpu(cuda_emu: Emulator, dtype: np.dtype, odtype: np.dtype) -> None:
    rng = np.random.default_rng(dtype.itemsize)
    small = rng.integers(0, 20, size=200).astype(dtype)  # the CPU counts densely
    wide = random_ints(rng, dtype, 200)  # by hashing (or sorting)
    for values in (small, wide, small[:0]):
        n = len(values)
        for kind in ("none", "rows", "elements", "both"):
            offsets = row_offsets(rng, n, 7, odtype, first=min(n, 3))
            row_valid, valid = masks(rng, 7, n, kind)
            expected, got = cpu_and_gpu("count_ints", values, valid, offsets, row_valid)
            assert as_pairs(*got) == as_pairs(*expected)
            assert (np.diff(got[0]) > 0).all()  # sorted by value


def test_count_ints_counts_int64_min(cuda_emu: Emulator) -> None:
    values = np.array([INT64_MIN, 5, INT64_MIN, -1, 5, 5], dtype=np.int64)
    expected, got = cpu_and_gpu("count_ints", values, None, np.array([0, 6]), None)
    assert as_pairs(*got) == as_pairs(*expected) == [(INT64_MIN, 2), (-1, 1), (5, 3)]


@pytest.mark.parametrize("skip", [0, 2])
@pytest.mark.parametrize("odtype", OFFSETS_DTYPES, ids=str)
def test_count_strings_matches_cpu(cuda_emu: Emulator, odtype: np.dtype, skip: int) -> None:
    rng = np.random.default_rng(skip)
    picks = rng.integers(0, len(STRING_POOL), size=150)
    strings: list[bytes | None] = [STRING_POOL[i] for i in picks]
    strings[::11] = [None] * len(strings[::11])
    str_offsets, data, valid, _ = string_buffers(strings, odtype, skip)
    for kind in ("none", "rows", "both"):
        offsets = row_offsets(rng, 150, 6, odtype, first=4)
        row_valid, extra = masks(rng, 6, 150, kind)
        element_valid = valid if extra is None else (extra != 0) & valid
        expected, got = cpu_and_gpu("count_strings", str_offsets, data, element_valid,
                                    offsets, row_valid)
        assert as_pairs(*got) == as_pairs(*expected)
    expected, got = cpu_and_gpu("count_strings", str_offsets, data, np.zeros(150, bool),
                                np.array([0, 150]), None)
    assert as_pairs(*got) == as_pairs(*expected) == []


@pytest.mark.hypothesis
@given(st.lists(st.one_of(st.none(), st.sampled_from(STRING_POOL), st.binary(max_size=40)),
                max_size=60))
def test_count_strings_property(strings: list[bytes | None]) -> None:
    str_offsets, data, valid, _ = string_buffers(strings, np.dtype(np.int64))
    with emulated():
        first, counts = gpu.count_strings(np, str_offsets, data, valid,
                                          np.array([0, len(strings)]), None)
    kept = [s for s in strings if s is not None]
    assert {strings[i]: c for i, c in zip(first.tolist(), counts.tolist(), strict=True)} \
        == collections.Counter(kept)
    assert all(strings.index(strings[i]) == i for i in first.tolist())  # first occurrences


@pytest.mark.parametrize("case", ["ties", "distinct", "huge", "empty"])
def test_order_by_count_matches_cpu(cuda_emu: Emulator, case: str) -> None:
    rng = np.random.default_rng(0)
    counts = {"ties": rng.integers(1, 4, 200), "distinct": rng.permutation(300) + 1,
              "huge": np.array([10**9, 3, 10**9, 7]), "empty": np.zeros(0, np.int64)}[case]
    expected, got = cpu_and_gpu("order_by_count", counts)
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == np.int64


# -------------------------------------------------------------------------------- tables
@pytest.mark.parametrize("n", [0, 1, 7, 8, 100, 1000])
def test_build_int_table_is_the_cpus(cuda_emu: Emulator, n: int) -> None:
    rng = np.random.default_rng(n)
    keys = rng.integers(-(2**40), 2**40, size=n)
    keys[: n // 10] = rng.integers(0, 5, size=n // 10) * 2**58  # one home slot for many keys
    if n >= 8:
        keys[3] = keys[5] = INT64_MIN  # the CPU's id for INT64_MIN is the last one's
        keys[6] = keys[7]  # a repeated key: both are stored, the first one is found
    (e_table, e_free), (g_table, g_free) = cpu_and_gpu("build_int_table", keys)
    np.testing.assert_array_equal(g_table, e_table)
    assert g_free == e_free and isinstance(g_free, int)
    values = np.r_[keys, rng.integers(-(2**40), 2**40, size=50), INT64_MIN]
    valid = rng.random(len(values)) > 0.2
    out = np.full(len(values), -7, dtype=np.int64)
    for dtype in INTS:  # values of every integer type, as int64 like the CPU reads them
        cast = values.astype(dtype)
        for args in ((cast, None, 0, len(cast)), (cast, valid, 3, len(cast) - 2)):
            expected, got = both_into("lookup_ints", 6, *args, (g_table, g_free), 1, out)
            np.testing.assert_array_equal(got, expected)


def test_lookup_ints_without_int64_min_in_the_table(cuda_emu: Emulator) -> None:
    table = gpu.build_int_table(np, np.array([4, 9, -3]))
    assert table[1] == 0
    out = np.zeros(4, dtype=np.int64)
    gpu.lookup_ints(np, np.array([9, INT64_MIN, -3, 5]), None, 0, 4, table, 1, out)
    assert out.tolist() == [3, 1, 4, 1]


@pytest.mark.parametrize("n", [0, 1, 30, 400])
@pytest.mark.parametrize("odtype", OFFSETS_DTYPES, ids=str)
def test_build_string_table_is_the_cpus(cuda_emu: Emulator, odtype: np.dtype, n: int) -> None:
    rng = np.random.default_rng(n)
    vocab = random_strings(rng, list(rng.choice(LENGTHS[:20], size=n)))
    vocab[: min(n, len(STRING_POOL))] = STRING_POOL[: min(n, len(STRING_POOL))]
    if n > 20:
        vocab[20] = vocab[19]  # a repeated string: both are stored
    voc_offsets, voc_data, _, _ = string_buffers(vocab, odtype, skip=1)
    expected, got = cpu_and_gpu("build_string_table", voc_offsets, voc_data)
    np.testing.assert_array_equal(got, expected)
    queries: list[bytes | None] = [*vocab, *random_strings(rng, [0, 3, 16, 17, 300]),
                                   b"y" * 241, b"y" * 240, None, b"a", b"a\x00"]
    for qdtype in OFFSETS_DTYPES:
        offsets, data, valid, _ = string_buffers(queries, qdtype, skip=2)
        out = np.full(len(queries), -7, dtype=np.int64)
        for start, stop in ((0, len(queries)), (2, len(queries) - 1)):
            e_out, g_out = both_into("lookup_strings", 8, offsets, data, valid, start, stop,
                                     (voc_offsets, voc_data), expected, 1, out)
            np.testing.assert_array_equal(g_out, e_out)


# ----------------------------------------------------------------------- block bucketize
def bucketize_problem(rng: np.random.Generator, dtype: np.dtype, weights: Any
                      ) -> tuple[Any, ...]:
    num_keys, batch, shards = 3, 4, 3
    sizes = [4, 7, 1]
    bits = 8 * dtype.itemsize
    values = rng.integers(0, min(2**bits - 1, 60), size=90).astype(dtype)
    values[:3] = np.iinfo(dtype).max  # past every block: bucketed by modulo
    lengths = rng.integers(0, 12, size=num_keys * batch)
    offsets = np.r_[0, np.cumsum(lengths)].astype(np.int64)
    values = values[: offsets[-1]] if offsets[-1] <= 90 else np.resize(values, offsets[-1])
    block = np.array(sizes, dtype=np.uint64)
    span = [s * shards for s in sizes]
    all_block = np.array([s > 2**bits - 1 for s in span])
    threshold = np.array([min(s, 2**64 - 1) for s in span], dtype=np.uint64)
    w = None if weights is None else rng.standard_normal(len(values)).astype(weights)
    return values, offsets, batch, block, threshold, all_block, shards, w


@pytest.mark.parametrize("weights", [None, np.float32, np.float64])
@pytest.mark.parametrize("dtype", UNSIGNED, ids=str)
def test_block_bucketize_matches_cpu(cuda_emu: Emulator, dtype: np.dtype, weights: Any) -> None:
    rng = np.random.default_rng(dtype.itemsize)
    values, offsets, batch, block, threshold, all_block, shards, w = bucketize_problem(
        rng, dtype, weights)
    for keep in (False, True):
        for positions, permute in ((False, False), (True, True), (True, False)):
            expected, got = cpu_and_gpu("block_bucketize", values, offsets, batch, block,
                                        threshold, all_block, shards, keep, w, positions,
                                        permute)
            for e, g in zip(expected, got, strict=True):
                assert (e is None) == (g is None)
                if e is not None:
                    assert g.dtype == e.dtype
                    np.testing.assert_array_equal(g, e)


def test_block_bucketize_of_no_rows_and_no_values(cuda_emu: Emulator) -> None:
    block, threshold = np.array([2], np.uint64), np.array([6], np.uint64)
    for offsets in (np.array([0]), np.array([0, 0, 0])):
        expected, got = cpu_and_gpu("block_bucketize", np.zeros(0, np.uint32), offsets, 2, block,
                                    threshold, np.array([False]), 3, False, None, True, True)
        for e, g in zip(expected, got, strict=True):
            np.testing.assert_array_equal(g, e)


def _keyed() -> asp.KeyedJagged:
    rng = np.random.default_rng(8)
    lengths = rng.integers(0, 5, size=8)
    values = rng.integers(-5, 40, size=int(lengths.sum()))
    return asp.KeyedJagged(["a", "b"], values, lengths,
                           weights=rng.random(int(lengths.sum())).astype(np.float32))


#: KeyedJagged.block_bucketize runs on this family's kernels: through the emulator too.
PUBLIC: dict[str, tuple[Callable[[], Any], set[str]]] = {
    "block_bucketize": (lambda: _keyed().block_bucketize(8, 3, sequence=True,
                                                         bucketize_pos=True),
                        {"bucket_counts", "bucket_scatter"}),
}


@pytest.mark.parametrize("case", list(PUBLIC))
def test_public_transforms_through_the_emulator(case: str) -> None:
    run_through_the_emulator(case, *PUBLIC[case])


# ---------------------------------------------------------------------- on device arrays
def device_cases() -> dict[str, tuple[Any, ...]]:
    """Arguments of one call of every launcher (host arrays) and its synchronisations."""
    rng = np.random.default_rng(9)
    strings: list[bytes | None] = [STRING_POOL[i] for i in rng.integers(0, 11, size=40)]
    strings[5] = None
    offsets, data, valid, _ = string_buffers(strings, np.dtype(np.int32), skip=1)
    rows = row_offsets(rng, 40, 6, np.dtype(np.int64), first=2)
    row_valid = rng.random(6) > 0.3
    ints = rng.integers(-9, 9, size=40)
    voc = string_buffers(STRING_POOL, np.dtype(np.int64))[:2]
    out = np.zeros(40, dtype=np.int64)
    problem = bucketize_problem(rng, np.dtype(np.uint32), np.float32)
    return {
        "hash_ints": ((ints, 2, 38, 5, 100, out), 0),
        "hash_strings": ((offsets, data, 1, 39, 5, 100, out), 0),
        "bucketize": ((ints.astype(np.float64), 0, 40, np.array([-3.0, 0.0, 4.0]), False, out),
                      0),
        "kept_lengths": ((rows, row_valid, valid), 0),
        "compact": ((rows, row_valid, valid), 1),
        "pad_or_truncate": ((ints.reshape(40, 1), rows, row_valid, valid, 4, True, np.int64(-1),
                             np.zeros((6, 4, 1), np.int64), np.zeros((6, 4), np.uint8)), 0),
        "count_ints": ((ints, valid, rows, row_valid), 2),
        "count_strings": ((offsets, data, valid, rows, row_valid), 2),
        "order_by_count": ((rng.integers(1, 4, size=30),), 0),
        "build_int_table": ((np.unique(ints),), 1),
        "lookup_ints": ((ints, valid, 0, 40, cpu.build_int_table(np.unique(ints[::2])), 1,
                         out), 0),
        "build_string_table": (voc, 0),
        "lookup_strings": ((offsets, data, valid, 0, 40, voc, cpu.build_string_table(*voc), 1,
                            out), 0),
        "block_bucketize": ((*problem[:7], True, problem[7], True, True), 1),
    }


def to_device(module: Any, x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return module.asarray(x)
    if isinstance(x, tuple):
        return tuple(to_device(module, item) for item in x)
    return x


def to_host(x: Any) -> Any:
    if isinstance(x, tuple):
        return tuple(to_host(item) for item in x)
    return x.get() if isinstance(x, fake_cupy.ndarray) else x


@pytest.mark.parametrize("name", gpu.__all__)
def test_launchers_on_device_arrays(cp: Any, name: str) -> None:
    args, syncs = device_cases()[name]
    host = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    expected = getattr(cpu, name)(*host)
    device = to_device(cp, args)
    launcher = _backend.get_kernel("transforms", name, cp)
    cp.stats.reset()
    got = launcher(*device)
    assert cp.stats.syncs == syncs
    cuda.check_errors(name)
    if name.startswith("count_"):
        assert as_pairs(*to_host(got)) == as_pairs(*expected)
    elif expected is None:  # written into the arrays
        for h, d in zip(host, device, strict=True):
            if isinstance(h, np.ndarray):
                np.testing.assert_array_equal(to_host(d), h)
    else:
        assert same(to_host(got), expected)


def test_grid_stride_loops_cover_more_work_than_threads(cuda_emu: Emulator,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """One block of 256 threads (8 lane groups) for every launch, on bigger inputs."""
    monkeypatch.setattr(_launch, "MAX_BLOCKS", 1)
    rng = np.random.default_rng(12)
    n, rows = 1500, 300
    strings: list[bytes | None] = [STRING_POOL[i] for i in rng.integers(0, 11, size=n)]
    strings[::13] = [None] * len(strings[::13])
    offsets, data, valid, _ = string_buffers(strings, np.dtype(np.int64), skip=1)
    row_ends = row_offsets(rng, n, rows, np.dtype(np.int32), first=3)
    row_valid = rng.random(rows) > 0.2
    ints = rng.integers(-400, 400, size=n)
    out = np.zeros(n, dtype=np.int64)
    voc = string_buffers(STRING_POOL, np.dtype(np.int32))[:2]
    int_table = cpu.build_int_table(np.unique(ints[::3]))
    cases: list[tuple[str, tuple[Any, ...], int | None]] = [
        ("hash_ints", (ints, 0, n, 1, 1000, out), 5),
        ("hash_strings", (offsets, data, 0, n, 1, 1000, out), 6),
        ("bucketize", (ints, 0, n, np.sort(rng.integers(-400, 400, size=300)), True, out), 5),
        ("lookup_ints", (ints, valid, 0, n, int_table, 1, out), 6),
        ("lookup_strings", (offsets, data, valid, 0, n, voc, cpu.build_string_table(*voc), 1,
                            out), 8),
        ("kept_lengths", (row_ends, row_valid, valid), None),
        ("compact", (row_ends, row_valid, valid), None),
        ("compact", (row_ends, row_valid, None), None),
        ("build_int_table", (np.unique(ints),), None),
        ("build_string_table", string_buffers(random_strings(rng, [5] * 200),
                                              np.dtype(np.int32))[:2], None),
        ("block_bucketize", (rng.integers(0, 50, size=n).astype(np.uint16),
                             row_offsets(rng, n, rows, np.dtype(np.int64)), 100,
                             np.array([3, 5, 7], np.uint64), np.array([9, 15, 21], np.uint64),
                             np.zeros(3, bool), 3, False, None, True, True), None),
    ]
    for name, args, written in cases:
        if written is None:
            assert same(*cpu_and_gpu(name, *args)), name
        else:
            expected, got = both_into(name, written, *args)
            np.testing.assert_array_equal(got, expected, err_msg=name)
    for name in ("count_ints", "count_strings"):
        head = (ints,) if name == "count_ints" else (offsets, data)
        expected, got = cpu_and_gpu(name, *head, valid, row_ends, row_valid)
        assert as_pairs(*got) == as_pairs(*expected)
    pad = [np.zeros((rows, 5, 1), np.int64), np.zeros((rows, 5), np.uint8)]
    e_pad = [a.copy() for a in pad]
    cpu.pad_or_truncate(ints.reshape(n, 1), row_ends, row_valid, valid, 5, True, np.int64(-1),
                        *e_pad)
    gpu.pad_or_truncate(np, ints.reshape(n, 1), row_ends, row_valid, valid, 5, True, np.int64(-1),
                        *pad)
    for e, g in zip(e_pad, pad, strict=True):
        np.testing.assert_array_equal(g, e)
    cuda.check_errors("grid stride")


# ------------------------------------------------------------------------- device checks
def test_strings_outside_the_data_buffer_are_caught(cuda_emu: Emulator) -> None:
    offsets = np.array([0, 2, 9, 3, 4], dtype=np.int32)  # string 1 ends past the data
    data = np.zeros(5, dtype=np.uint8)
    out = np.zeros(4, dtype=np.int64)
    for run in (lambda: gpu.hash_strings(np, offsets, data, 0, 4, 0, 10, out),
                lambda: gpu.lookup_strings(np, offsets, data, None, 0, 4, (offsets[:2], data),
                                           cpu.build_string_table(offsets[:2], data), 1, out),
                lambda: gpu.count_strings(np, offsets, data, None, np.array([0, 4]), None),
                lambda: gpu.build_string_table(np, offsets, data)):
        run()
        with pytest.raises(ArrowSparseIndexError, match=r"^f: string offsets out of range of "
                           r"the data buffer \(first at position 1; found by a device check\)$"):
            cuda.check_errors("f")


def test_decreasing_offsets_are_caught(cuda_emu: Emulator) -> None:
    offsets = np.array([0, 4, 2, 6])
    for run in (lambda: gpu.kept_lengths(np, offsets, None, None),
                lambda: gpu.pad_or_truncate(np, np.zeros((6, 1)), offsets, None, None, 2, False,
                                            np.float64(0), np.zeros((3, 2, 1)), None),
                lambda: gpu.block_bucketize(np, np.zeros(6, np.uint8), offsets, 3,
                                            np.array([2], np.uint64), np.array([6], np.uint64),
                                            np.array([False]), 3, False, None, False, False)):
        run()
        with pytest.raises(ArrowSparseValueError, match=r"^f: offsets not non-decreasing "
                           r"\(first at position 2; found by a device check\)$"):
            cuda.check_errors("f")


def test_offsets_past_the_values_are_caught(cuda_emu: Emulator) -> None:
    offsets = np.array([0, 2, 9])
    for run in (lambda: gpu.kept_lengths(np, offsets, None, np.ones(5, bool)),
                lambda: gpu.pad_or_truncate(np, np.zeros((5, 1)), offsets, None, None, 9, False,
                                            np.float64(0), np.zeros((2, 9, 1)), None),
                lambda: gpu.block_bucketize(np, np.zeros(5, np.uint8), offsets, 1,
                                            np.array([2, 2], np.uint64),
                                            np.array([6, 6], np.uint64),
                                            np.array([False, False]), 3, False, None, False,
                                            False)):
        run()
        with pytest.raises(ArrowSparseIndexError, match=r"^f: offsets out of range of the "
                           r"values \(first at position 1; found by a device check\)$"):
            cuda.check_errors("f")


@pytest.mark.parametrize("ldtype", OFFSETS_DTYPES, ids=str)
def test_null_rows_with_values_are_caught(cuda_emu: Emulator, ldtype: np.dtype) -> None:
    valid = np.array([True, False, False, True, False])
    gpu.check_null_rows(np, np.array([3, 0, 0, 1, 0], dtype=ldtype), valid)
    cuda.check_errors("f")  # null rows are empty: nothing recorded
    gpu.check_null_rows(np, np.array([3, 0, 2, 1, 5], dtype=ldtype), valid)
    with pytest.raises(ArrowSparseValueError, match=r"^f: validity marks a row with values as "
                       r"null \(null rows are empty\) \(first at position 2; found by a "
                       r"device check\)$"):
        cuda.check_errors("f")
    gpu.check_null_rows(np, np.zeros(0, dtype=ldtype), np.zeros(0, bool))
    assert gpu.DEVICE_ONLY == ("check_null_rows",) and "check_null_rows" not in gpu.__all__
    with pytest.raises(ArrowSparseValueError, match="^check_null_rows: valid has 1 elements, "
                       "fewer than the 2 it must cover$"):
        gpu.check_null_rows(np, np.zeros(2, dtype=ldtype), np.ones(1, bool))


def test_unsorted_boundaries_are_caught(cuda_emu: Emulator) -> None:
    gpu.bucketize(np, np.zeros(3), 0, 3, np.array([0.0, 2.0, 1.0, 3.0]), False,
                  np.zeros(3, np.int64))
    with pytest.raises(ArrowSparseValueError, match=r"^bucketize: boundaries must be "
                       r"non-decreasing and not NaN \(first at position 2; found by a device "
                       r"check\)$"):
        cuda.check_errors("bucketize")
    gpu.bucketize(np, np.zeros(0), 0, 0, np.array([1.0, np.nan]), False, np.zeros(0, np.int64))
    with pytest.raises(ArrowSparseValueError, match=r"not NaN \(first at position 1;"):
        cuda.check_errors("bucketize")  # checked without values, a NaN at its position


def test_full_tables_are_caught(cuda_emu: Emulator) -> None:
    full = np.array([[1, 2], [2, 3], [3, 4], [4, 5]], dtype=np.int64)  # no free row
    full_strings = np.zeros((4, 4), dtype=np.int64)  # every row holds entry 0, hash 0
    offsets, data = np.array([0, 1, 2, 3], np.int32), np.frombuffer(b"abc", np.uint8)
    hashes, items = np.array([0, 1, 2], dtype=np.uint64), np.arange(3, dtype=np.int64)

    def slots() -> np.ndarray:
        return np.full(2, 2**64 - 1, dtype=np.uint64)  # room for 2 of 3 items

    def grid(name: str, *args: Any) -> Callable[[], None]:
        return lambda: kernel(name)((1,), (32,), (*args, cuda.error_buffer()))

    for run, position in (
            (lambda: gpu.lookup_ints(np, np.array([1, 9]), None, 0, 2, (full, 0), 1,
                                     np.zeros(2, np.int64)), 1),
            (lambda: gpu.lookup_strings(np, offsets, data, None, 0, 2, (offsets, data),
                                        full_strings, 1, np.zeros(2, np.int64)), 0),
            (grid("int_table_insert", np.array([1, 2, 3]), np.int64(3), slots(), np.int64(2),
                  np.int32(63), np.zeros(1, np.int64)), 2),
            (grid("string_table_insert", hashes, np.int64(3), slots(), np.int64(2)), 2),
            (grid("string_set_insert<int>", offsets, data, np.int64(3), items, hashes,
                  np.int64(3), slots(), np.int64(2)), 2)):
        run()
        with pytest.raises(ArrowSparseValueError, match=r"^f: hash table has no free slot .*"
                           rf"\(first at position {position}; found by a device check\)$"):
            cuda.check_errors("f")


def test_table_entries_outside_the_vocabulary_are_caught(cuda_emu: Emulator) -> None:
    offsets, data = np.array([0, 1, 2], np.int32), np.frombuffer(b"ab", np.uint8)
    table = cpu.build_string_table(offsets, data)
    table[table[:, 0] >= 0, 0] += 5  # entries 5 and 6 of a 2-string vocabulary
    gpu.lookup_strings(np, offsets, data, None, 0, 2, (offsets, data), table, 1,
                       np.zeros(2, np.int64))
    kernel("int_table_fill")((1,), (32,), (np.array([7]), np.int64(1),
                                           np.array([1, 2**64 - 1], np.uint64), np.int64(2),
                                           np.zeros((2, 2), np.int64), cuda.error_buffer()))
    with pytest.raises(ArrowSparseIndexError, match=r"^f: hash table entry out of range of "
                       r"the vocabulary \(first at position 0; found by a device check\)$"):
        cuda.check_errors("f")


def test_buckets_past_my_size_are_caught(cuda_emu: Emulator) -> None:
    gpu.block_bucketize(np, np.array([1, 30], np.uint8), np.array([0, 2]), 1,
                        np.array([4], np.uint64), np.array([100], np.uint64),
                        np.array([False]), 3, False, None, False, False)
    with pytest.raises(ArrowSparseIndexError, match=r"^f: bucket out of range of my_size .*"
                       r"\(first at position 1; found by a device check\)$"):
        cuda.check_errors("f")


def test_output_positions_past_the_output_are_caught(cuda_emu: Emulator) -> None:
    offsets = np.array([0, 3, 5])
    kernel("kept_positions<long long>")((1,), (64,), (
        offsets, np.int64(2), np.zeros(0, np.uint8), np.int64(0), np.zeros(0, np.uint8),
        np.zeros(0, np.int64), np.int64(0), np.array([0, 3]), np.zeros(4, np.int64),
        np.int64(4), cuda.error_buffer()))
    kernel("bucket_scatter<unsigned char, unsigned int>")((1,), (32,), (
        np.array([1, 2], np.uint8), np.int64(2), np.array([0, 2]), np.int64(1), np.int64(1),
        np.array([4], np.uint64), np.array([12], np.uint64), np.zeros(1, np.uint8),
        np.int64(1), np.uint64(3), np.int32(0), np.array([1, 2, 2]), np.zeros(2, np.uint8),
        np.int64(2), np.zeros(0, np.uint32), np.int64(0), np.zeros(0, np.uint32),
        np.zeros(0, np.int64), np.int64(0), np.zeros(0, np.int64), np.int64(0),
        cuda.error_buffer()))
    with pytest.raises(ArrowSparseIndexError, match=r"^f: output position out of range of "
                       r"the output \(first at position 1; found by a device check\)$"):
        cuda.check_errors("f")


# --------------------------------------------------------------------------- host checks
def test_short_arrays_raise_before_a_launch() -> None:
    out = np.zeros(3, dtype=np.int64)
    with pytest.raises(ArrowSparseValueError, match=r"^hash_ints: out has 3 elements, fewer "
                       r"than the 5 it must cover$"):
        gpu.hash_ints(np, np.zeros(5, np.int64), 0, 5, 0, 10, out)
    with pytest.raises(ArrowSparseValueError, match=r"^hash_strings: str_offsets has 3 "
                       r"elements, fewer than the 4 it must cover$"):
        gpu.hash_strings(np, np.zeros(3, np.int32), np.zeros(0, np.uint8), 0, 3, 0, 10, out)
    with pytest.raises(ArrowSparseValueError, match=r"^lookup_ints: valid has 2 elements"):
        gpu.lookup_ints(np, np.zeros(3, np.int64), np.ones(2, bool), 0, 3, (np.zeros((16, 2)), 0),
                        1, out)
    with pytest.raises(ArrowSparseValueError, match=r"^kept_lengths: row_valid has 1 elements"):
        gpu.kept_lengths(np, np.array([0, 1, 2]), np.ones(1, bool), None)
    with pytest.raises(ArrowSparseValueError, match=r"^pad_or_truncate: out must have shape "
                       r"\(2, 3, 1\), got \(2, 2, 1\)$"):
        gpu.pad_or_truncate(np, np.zeros((2, 1)), np.array([0, 1, 2]), None, None, 3, False, 0,
                            np.zeros((2, 2, 1)), None)
    with pytest.raises(ArrowSparseValueError, match=r"^pad_or_truncate: out_valid must have "
                       r"shape \(2, 3\), got \(3, 2\)$"):
        gpu.pad_or_truncate(np, np.zeros((2, 1)), np.array([0, 1, 2]), None, None, 3, False, 0,
                            np.zeros((2, 3, 1)), np.zeros((3, 2), np.uint8))


def test_unsupported_dtypes_raise_not_implemented() -> None:
    out = np.zeros(2, dtype=np.int64)
    with pytest.raises(NotImplementedError, match="^hash_ints: no cuda kernel for float64$"):
        gpu.hash_ints(np, np.zeros(2), 0, 2, 0, 10, out)
    with pytest.raises(NotImplementedError, match="^hash_strings: no cuda kernel for uint32$"):
        gpu.hash_strings(np, np.zeros(3, np.uint32), np.zeros(0, np.uint8), 0, 2, 0, 10, out)
    with pytest.raises(NotImplementedError, match="^bucketize: no cuda kernel for float16$"):
        gpu.bucketize(np, np.zeros(2, np.float16), 0, 2, np.zeros(1, np.float16), False, out)
    with pytest.raises(NotImplementedError, match="^pad_or_truncate: no cuda kernel for "
                       "complex128$"):
        gpu.pad_or_truncate(np, np.zeros((1, 1), complex), np.array([0, 1]), None, None, 1, False,
                            0, np.zeros((1, 1, 1), complex), None)
    with pytest.raises(NotImplementedError, match="^pad_or_truncate: no cuda kernel for int64 "
                       "values into a int32 out$"):
        gpu.pad_or_truncate(np, np.zeros((1, 1), np.int64), np.array([0, 1]), None, None, 1,
                            False, 0, np.zeros((1, 1, 1), np.int32), None)
    with pytest.raises(NotImplementedError, match="^block_bucketize: no cuda kernel for int32$"):
        gpu.block_bucketize(np, np.zeros(1, np.int32), np.array([0, 1]), 1, np.ones(1, np.uint64),
                            np.ones(1, np.uint64), np.zeros(1, bool), 2, False, None, False,
                            False)
    with pytest.raises(NotImplementedError, match="^block_bucketize: no cuda kernel for float16 "
                       "weights$"):
        gpu.block_bucketize(np, np.zeros(1, np.uint32), np.array([0, 1]), 1, np.ones(1, np.uint64),
                            np.ones(1, np.uint64), np.zeros(1, bool), 2, False,
                            np.zeros(1, np.float16), False, False)


# ------------------------------------------------------------------------- on a real GPU
@pytest.mark.gpu
@pytest.mark.parametrize("name", gpu.__all__)
def test_gpu_launchers_match_cpu(name: str) -> None:
    cupy = cupy_or_skip()
    args, _ = device_cases()[name]
    host = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    expected = getattr(cpu, name)(*host)

    def move(x: Any) -> Any:
        if isinstance(x, np.ndarray):
            return cupy.asarray(x)
        return tuple(move(i) for i in x) if isinstance(x, tuple) else x

    def back(x: Any) -> Any:
        if isinstance(x, tuple):
            return tuple(back(i) for i in x)
        return cupy.asnumpy(x) if isinstance(x, cupy.ndarray) else x

    device = move(args)
    got = _backend.get_kernel("transforms", name, cupy)(*device)
    cuda.check_errors(name)
    if name.startswith("count_"):
        assert as_pairs(*back(got)) == as_pairs(*expected)
    elif expected is None:
        for h, d in zip(host, device, strict=True):
            if isinstance(h, np.ndarray):
                np.testing.assert_array_equal(back(d), h)
    else:
        assert same(back(got), expected)
