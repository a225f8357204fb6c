"""Shared inputs, oracles and checks of the sparse-format tests.

The worked examples of the Compressed Sparse Fibers post (its 4x6 matrix and 4-d tensor,
1-based coordinates kept, so the shape is ``(3, 3, 3, 4)``); builders that put a tensor on
the ``backend`` fixture's device (``tests/conftest.py``) and bring results back, checking
where they were; the Hypothesis strategy of COO tensors; the inputs of the CUDA kernel
tests; and the device batch of ``tests/test_cuda_dispatch.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st

import arrow_sparse as asp
from arrow_sparse import _backend
from arrow_sparse.sparse import SparseTensor
from tests.conftest import from_backend, on_device, to_backend

# ---------------------------------------------- the post's worked examples, formats, dtypes
# The post's 4x6 matrix and its COO table / CSR arrays.
POST_MATRIX = np.array([[10, 20, 0, 0, 0, 0],
                        [0, 30, 0, 40, 0, 0],
                        [0, 0, 50, 60, 70, 0],
                        [0, 0, 0, 0, 0, 80]])
POST_ROWS = [0, 0, 1, 1, 2, 2, 2, 3]
POST_COLS = [0, 1, 1, 3, 2, 3, 4, 5]
POST_VALUES = [10, 20, 30, 40, 50, 60, 70, 80]
POST_INDPTR = [0, 2, 4, 7, 8]

# The post's 4-d tensor: columns i, j, k, l and the values 1..8 (l is not sorted at i = 2).
POST_COORDS = np.array([[1, 1, 1, 1, 1, 2, 2, 2],
                        [1, 1, 2, 2, 2, 2, 2, 2],
                        [1, 1, 1, 1, 2, 2, 2, 2],
                        [2, 3, 1, 3, 1, 1, 3, 2]])
POST_TENSOR_VALUES = np.arange(1.0, 9.0)
POST_SHAPE = (3, 3, 3, 4)

DTYPES = [np.float32, np.float64, np.int32, np.int64]
FORMATS = ["coo", "csr", "csc", "csf"]


ALL_FORMATS: list[Any] = [asp.SparseCOO, asp.SparseCSR, asp.SparseCSC, asp.SparseCSF]


def address(arr: np.ndarray) -> int:
    return int(arr.__array_interface__["data"][0])


def same_buffer(a: np.ndarray, b: np.ndarray) -> bool:
    return address(a) == address(b) and a.nbytes == b.nbytes


def post_tensor() -> np.ndarray:
    dense = np.zeros(POST_SHAPE)
    dense[tuple(POST_COORDS)] = POST_TENSOR_VALUES
    return dense


def random_dense(shape: tuple[int, ...], dtype: Any, density: float = 0.3,
                 seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.integers(-5, 6, size=shape).astype(dtype)
    return np.where(rng.random(shape) < density, values, 0).astype(dtype)


def make(fmt: str, dense: np.ndarray, axis_order: Any = None, backend: str = "cpu") -> Any:
    """``fmt`` of ``dense``, built from it on the backend's device."""
    arr = to_backend(dense, backend)
    if fmt == "coo":
        return asp.SparseCOO.from_dense(arr)
    if fmt == "csr":
        return asp.SparseCSR.from_dense(arr)
    if fmt == "csc":
        return asp.SparseCSC.from_dense(arr)
    return asp.SparseCSF.from_dense(arr, axis_order)


def on(x: Any, backend: str) -> Any:
    """A tensor (or an array) moved to the backend's device."""
    if isinstance(x, SparseTensor):
        return x.to_device("cuda") if on_device(backend) else x
    return to_backend(x, backend)


def host(x: Any, backend: str) -> Any:
    """A result on the host, after checking it came back on the backend's device."""
    if isinstance(x, SparseTensor):
        assert (x.device != "cpu") == on_device(backend), x.device
        return x.to_device("cpu")
    return from_backend(x, backend)


def convert(x: SparseTensor, fmt: str, axis_order: Any = None) -> Any:
    return x.to_csf(axis_order) if fmt == "csf" else getattr(x, f"to_{fmt}")()


def assert_dense_equal(x: SparseTensor, expected: np.ndarray, backend: str = "cpu") -> None:
    got = host(x.to_dense(), backend)
    assert got.shape == expected.shape
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, expected)


# -------------------------------------------------------------------- hypothesis strategies
PROPERTY_DTYPES = ["float32", "float64", "int32", "int64"]


@st.composite
def coo_tensors(draw: st.DrawFn, min_ndim: int = 1, max_ndim: int = 4,
                max_dim: int = 5) -> tuple[asp.SparseCOO, np.ndarray]:
    """A COO tensor (unsorted, often with repeated coordinates) and its dense oracle."""
    ndim = draw(st.integers(min_ndim, max_ndim))
    shape = tuple(draw(st.lists(st.integers(0, max_dim), min_size=ndim, max_size=ndim)))
    dtype = np.dtype(draw(st.sampled_from(PROPERTY_DTYPES)))
    size = int(np.prod(shape))
    nnz = draw(st.integers(0, min(3 * size, 40)))
    index_dtype = draw(st.sampled_from([np.int32, np.int64]))
    coords = np.array([draw(st.lists(st.integers(0, max(s - 1, 0)), min_size=nnz, max_size=nnz))
                       for s in shape], dtype=index_dtype).reshape(ndim, nnz)
    values = np.array(draw(st.lists(st.integers(-20, 20), min_size=nnz, max_size=nnz)),
                      dtype=dtype)
    dense = np.zeros(shape, dtype=dtype)
    np.add.at(dense, tuple(coords), values)
    return asp.SparseCOO(coords, values, shape), dense


def orders(ndim: int) -> st.SearchStrategy[tuple[int, ...]]:
    return st.permutations(list(range(ndim))).map(tuple)


# ------------------------ inputs and checks of the CUDA kernels and of tensors on the device
def values_of(rng: np.random.Generator, dtype: Any, n: int) -> np.ndarray:
    """``n`` values: normal floats with zeros, full-range integers (sums wrap), bools."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        values = (rng.standard_normal(n) * 3).astype(dtype)
        values[::7] = 0
        return values
    if dtype.kind == "b":
        return rng.random(n) < 0.5
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=n, endpoint=True, dtype=dtype)


def compressed(rng: np.random.Generator, lines: int, minor: int, *, ptr: Any = np.int64,
               idx: Any = np.int32, dtype: Any = np.float64, base: int = 3, max_len: int = 9,
               sort: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(indptr, indices, values)``: ``indptr`` starts at ``base`` (a slice), two entries
    follow the addressed ones, every fourth line is empty, indices repeat; with ``sort``
    every line's indices are sorted (duplicates kept)."""
    lengths = rng.integers(0, max_len, size=lines) if minor else np.zeros(lines, np.int64)
    lengths[::4] = 0
    indptr = (base + np.concatenate([[0], np.cumsum(lengths)])).astype(ptr)
    n = base + int(lengths.sum()) + 2
    indices = rng.integers(0, max(minor, 1), size=n).astype(idx)
    if sort:
        for start, stop in zip(indptr[:-1], indptr[1:], strict=True):
            indices[start:stop] = np.sort(indices[start:stop])
    return indptr, indices, values_of(rng, dtype, n)


def assert_same(got: Any, expected: Any) -> None:
    """The same arrays (dtype, shape and bits), bools, or tuples of them."""
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            assert_same(g, e)
        return
    if not isinstance(expected, np.ndarray):
        assert type(got) is type(expected) and got == expected
        return
    assert isinstance(got, np.ndarray)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    word = f"u{got.dtype.itemsize}"
    np.testing.assert_array_equal(got.view(word), expected.view(word))


def flatten(result: Any) -> list[Any]:
    """The arrays (and flags) a result consists of, sparse tensors taken apart."""
    if isinstance(result, list):
        return [a for r in result for a in flatten(r)]
    if isinstance(result, (asp.SparseCSR, asp.SparseCSC)):
        return [result.indptr, result.indices, result.values, result.shape]
    if isinstance(result, asp.SparseCOO):
        return [result.indices, result.values, result.shape]
    if isinstance(result, asp.SparseCSF):
        return [*result.indptr, *result.indices, result.values, result.shape]
    return [np.asarray(result) if isinstance(result, np.generic) else result]


def every_format(dense: np.ndarray) -> list[SparseTensor]:
    return [asp.SparseCOO.from_dense(dense), asp.SparseCSR.from_dense(dense),
            asp.SparseCSC.from_dense(dense), asp.SparseCSF.from_dense(dense, (1, 0))]


DEFERRED = r" \(first at position {}; found by a device check, reported by a later call\)$"
AT_ONCE = r" \(first at position {}; found by a device check\)$"


# --------------------- synchronisations of operations on the device (test_cuda_dispatch.py)
def batch_csr(b: dict[str, Any]) -> asp.SparseCSR:
    """The rows of a device batch of ``tests/test_cuda_dispatch.py`` as a ``rows x 3`` CSR.

    Canonical (column = position in the row), though not known to be, and ``indptr``
    starting above zero as the batch's offsets do.
    """
    if "csr" not in b:
        xp = _backend.module_of(b["values"])
        starts = b["offsets"][:-1] - 2
        position = xp.arange(len(b["flat"])) - starts[b["ids"]]
        cols = xp.concatenate([xp.zeros(2, dtype=np.int64), position])
        b["csr"] = asp.SparseCSR(b["offsets"], cols, b["values"], (b["rows"], 3))
    return b["csr"]  # type: ignore[no-any-return]


#: Sparse operations on a device batch and the synchronisations they document.
SPARSE_SYNCS: dict[str, tuple[Callable[[dict[str, Any]], Any], int]] = {
    "SparseCSR": (batch_csr, 0),  # its checks are kernels
    "SparseCSR.to_dense": (lambda b: batch_csr(b).to_dense(), 0),
    "SparseCSR.to_coo": (lambda b: batch_csr(b).to_coo(), 1),
    "SparseCSR.to_csc": (lambda b: batch_csr(b).to_csc(), 1),
    "SparseCSR.to_csf": (lambda b: batch_csr(b).to_csf(), 1),
    "SparseCSR.is_canonical": (lambda b: batch_csr(b).is_canonical, 1),
    "SparseCSR.canonical": (lambda b: batch_csr(b).canonical(), 1),
    "SparseCSR.sum": (lambda b: batch_csr(b).sum(), 1),
    "SparseCSR.sum axis=1": (lambda b: batch_csr(b).sum(axis=1), 0),
    "SparseCSR.multiply": (lambda b: batch_csr(b).multiply(b["dense"][:1]), 1),
    "SparseCSR.matmul": (lambda b: batch_csr(b) @ b["dense"][:3], 0),
    "SparseCSR.matmul vector": (lambda b: batch_csr(b) @ b["dense"][:3, 0], 0),
    "SparseCSR.__rmatmul__": (lambda b: b["dense"].T @ batch_csr(b), 1),
    "SparseCSR[a:b]": (lambda b: batch_csr(b)[1:4], 0),
    "SparseCSC.to_csr": (lambda b: batch_csr(b).T.to_csr(), 1),
    "SparseCOO": (lambda b: asp.SparseCOO(b["dense"][:, :2].T.astype(np.int64),
                                          b["dense"][:, 2], (2, 2)), 0),
    "SparseCOO.from_dense": (lambda b: asp.SparseCOO.from_dense(b["dense"]), 1),
    "SparseCOO.to_csr": (lambda b: batch_csr(b).to_coo().to_csr(), 1),
    "SparseCOO.to_dense": (lambda b: asp.SparseCOO(b["dense"][:, :2].T.astype(np.int64),
                                                   b["dense"][:, 2], (2, 2)).to_dense(), 0),
    "SparseCOO.sum axis=0": (lambda b: asp.SparseCOO(b["dense"][:, :2].T.astype(np.int64),
                                                     b["dense"][:, 2], (2, 2)).sum(0), 0),
    "SparseCSF.from_dense": (lambda b: asp.SparseCSF.from_dense(b["dense"] + 1.0), 2),
    "SparseTensor.to_device": (lambda b: batch_csr(b).to_device("cuda:1"), 0),
}


#: Their launches where more than 25, the batch's CSR built in the call (none grows with
#: the batch).
SPARSE_LAUNCHES = {"SparseCSR.to_coo": 26, "SparseCSR.to_csc": 31, "SparseCSR.to_csf": 30,
                   "SparseCSR.multiply": 28, "SparseCSR.__rmatmul__": 38,
                   "SparseCSC.to_csr": 31, "SparseCOO.to_csr": 40, "SparseCSF.from_dense": 52}
