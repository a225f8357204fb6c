"""What the embedding tests share: sample bags, gradients, device checks, the emulator switch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from arrow_sparse import _backend
from arrow_sparse import embedding as emb
from arrow_sparse.kernels import cuda
from tests.cuda_emu.emu import Emulator

from ..conftest import from_backend

#: The Caffe2 batch ``[1, 2, 3] [2, 4, 6, 7] [3, 6]`` as bags of ids.
CAFFE2 = [[1, 2, 3], [2, 4, 6, 7], [3, 6]]

#: The tail of a device check's message raised by a later call, and by the call itself.
DEFERRED = r" \(first at position {}; found by a device check, reported by a later call\)$"
AT_ONCE = r" \(first at position {}; found by a device check\)$"


#: Skewed bags (issue 13), ``name -> rng -> (ids, offsets)``: a long run of one id, bags
#: of 2,000 ids among bags of 1 (the offsets end at the last id), every id equal.
SKEWS: dict[str, Callable[[np.random.Generator], tuple[np.ndarray, np.ndarray]]] = {
    "a 10,000-long run of one id": lambda rng: (
        rng.permutation(np.r_[np.full(10_000, 3), rng.integers(0, 50, 500)]),
        np.arange(0, 10_501, 21)),
    "bags of 2,000 among bags of 1": lambda rng: (
        rng.integers(0, 50, 6_296), np.r_[0, np.cumsum(np.r_[2000, np.ones(150, int), 2000,
                                                               np.ones(146, int), 2000])]),
    "every id equal": lambda rng: (np.full(4_000, 9), np.r_[0, 1, 2, 1000, 4000]),
}


def random_bags(rng: np.random.Generator, num_bags: int, num_embeddings: int,
                max_len: int = 6) -> list[list[int]]:
    """Bags of 0 to ``max_len`` random ids (empty bags included)."""
    return [list(rng.integers(0, num_embeddings, rng.integers(0, max_len + 1)))
            for _ in range(num_bags)]


def grads(rng: np.random.Generator, steps: int, num: int, dim: int,
          dtype: Any = np.float32) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``steps`` backward inputs ``(flat ids, offsets, grad_out)`` of 8 random bags each."""
    out = []
    for _ in range(steps):
        bags = random_bags(rng, 8, num)
        flat = np.array([i for bag in bags for i in bag], np.int64)
        offsets = np.cumsum([0] + [len(b) for b in bags])
        dy = rng.standard_normal((8, dim)).astype(dtype)
        out.append((flat, offsets, dy))
    return out


def grad_on_host(g: Any, backend: str) -> tuple[np.ndarray, np.ndarray]:
    """A SparseGrad's arrays on the host (checking they were on the backend's device)."""
    assert isinstance(g, emb.SparseGrad)
    return from_backend(g.rows, backend), from_backend(g.values, backend)


def later() -> None:
    """The next check: what an earlier operation left in the error word is raised now."""
    cuda.check_errors("next")


def same_bits(expected: np.ndarray, got: np.ndarray) -> None:
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}"),
                                  expected.view(f"u{expected.itemsize}"))


def launched(emu: Emulator, before: int) -> list[str]:
    return emu.launches[before:]


def use(factory: Emulator | None) -> None:
    """Switch the CUDA module factory (the embedding module memoises no kernel)."""
    _backend.set_cuda_module_factory(factory)


def cpu_and_emu(emu: Emulator, fn: Callable[..., Any], *args: Any, **kwargs: Any
                ) -> tuple[Any, Any, list[str]]:
    """``fn`` on the CPU kernels, then through the emulator; and the launches it made."""
    try:
        use(None)
        expected = fn(*args, **kwargs)
        use(emu)
        before = len(emu.launches)
        got = fn(*args, **kwargs)
        cuda.check_errors(fn.__name__)
    finally:
        use(None)
    return expected, got, launched(emu, before)
