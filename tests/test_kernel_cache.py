"""Tests of ``arrow_sparse.kernel_cache``: warming up fills Numba's on-disk cache, so that
a later process compiles nothing; ``looks_cold`` tells a first run without Numba.

Processes that must start with an empty cache run in fresh interpreters with their own
``NUMBA_CACHE_DIR``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import arrow_sparse as asp
from arrow_sparse import kernel_cache
from arrow_sparse.errors import ArrowSparseTypeError, ArrowSparseValueError

REPO = Path(__file__).resolve().parents[1]

# The first calls of a new process on the types the warm-up covers: every compile of
# an arrow_sparse kernel is recorded, and none may happen.
LATER_PROCESS = """
import json
import numpy as np, pyarrow as pa
import arrow_sparse as asp
from arrow_sparse.kernels.cpu import _jit

compiled = []
_jit.watch_compiles(lambda started, name: started and compiled.append(name))
floats = pa.array([[1.5, 2.0], None, [], [3.0]], pa.large_list(pa.float32()))
assert asp.segment_sum(floats).to_pylist() == [3.5, None, 0.0, 3.0]
ids = pa.array([[1, 2, 3], [7], None], pa.list_(pa.int64()))
assert asp.hash_bucket(ids, 10).to_pylist()[2] is None
print(json.dumps(compiled))
"""


def run_python(args: list[str], cache: Path, **kwargs: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_JIT"}
    env.update(NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(REPO), **kwargs)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          timeout=900, cwd=str(REPO))


def test_warmup_then_a_later_process_compiles_nothing(tmp_path: Path) -> None:
    cache = tmp_path / "numba-cache"
    before = run_python(["-c", textwrap.dedent(LATER_PROCESS)], tmp_path / "cold")
    assert before.returncode == 0, before.stderr[-3000:]
    assert json.loads(before.stdout.splitlines()[-1])  # an empty cache compiles

    first = run_python(["-m", "arrow_sparse", "warmup", "--only", "segment_sum,hash_bucket",
                        "--json"], cache)
    assert first.returncode == 0, first.stderr[-3000:]
    report = json.loads(first.stdout)
    assert report["scope"] == "common" and report["calls"] > 10 and report["compiled"] > 0
    assert report["cache_dir"].startswith(str(cache))
    assert first.stderr == ""  # stderr is not a terminal: no progress bar

    later = run_python(["-c", textwrap.dedent(LATER_PROCESS)], cache)
    assert later.returncode == 0, later.stderr[-3000:]
    assert json.loads(later.stdout.splitlines()[-1]) == []

    again = run_python(["-m", "arrow_sparse", "warmup", "--only", "segment_sum,hash_bucket"],
                       cache)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "nothing to compile" in again.stdout, again.stdout


def test_looks_cold_follows_the_cache_directory(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert kernel_cache.looks_cold()
    (folder,) = kernel_cache._cache_candidates()
    folder.mkdir(parents=True)
    (folder / "segment._balanced_blocks-55.py311.nbi").write_bytes(b"")
    assert not kernel_cache.looks_cold()


def test_looks_cold_finds_the_cache_numba_uses(tmp_path: Path) -> None:
    # Where Numba actually writes is one of the places looks_cold searches.
    cache = tmp_path / "numba-cache"
    code = ("import arrow_sparse as asp, pyarrow as pa; "
            "from arrow_sparse import kernel_cache as k; "
            "from arrow_sparse.kernels.cpu import _jit; "
            "cold = k.looks_cold(); asp.segment_sum(pa.array([[1, 2]])); "
            "print(cold, k.looks_cold(), _jit.cache_path() in map(str, k._cache_candidates()))")
    result = run_python(["-c", code], cache)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["True", "False", "True"]


def test_warmup_arguments() -> None:
    with pytest.raises(ArrowSparseValueError, match="^warmup: scope must be 'common' or 'all'"):
        asp.warmup("most")
    with pytest.raises(ArrowSparseTypeError, match="^warmup: scope must be a string"):
        asp.warmup(1)  # type: ignore[arg-type]
    with pytest.raises(ArrowSparseValueError, match=r"no common warm-up calls for \['nope'\]"):
        asp.warmup(functions=["nope"])
    with pytest.raises(ArrowSparseTypeError, match="functions must be a sequence of function"):
        asp.warmup(functions="segment_sum")


def test_warmup_counts_calls_and_reports(monkeypatch: pytest.MonkeyPatch) -> None:
    class Counter:
        total = None
        done = 0

        def update(self, n: int) -> None:
            self.done += n

    counter = Counter()
    report = asp.warmup(functions=["length_stats"], progress=counter)
    assert report.calls == counter.total == counter.done == 4
    assert report.scope == "common" and report.seconds >= 0
    assert str(report).startswith("warmup (common): 4 calls, ")


def test_every_warmup_call_names_a_public_function() -> None:
    names = {name for name, _ in kernel_cache._calls("all")}
    for name in names:
        owner, _, attr = name.partition(".")
        obj = getattr(asp, owner)
        assert attr == "" or hasattr(obj, attr), name


def test_watch_kernel_compiles_reports_each_kernel_compile_once() -> None:
    import numba

    from arrow_sparse._backend import watch_kernel_compiles

    def helper(x):  # type: ignore[no-untyped-def]
        return x + 1

    def outer(x):  # type: ignore[no-untyped-def]
        return jitted_helper(x) * 2

    def elsewhere(x):  # type: ignore[no-untyped-def]
        return x - 1

    for func in (helper, outer):
        func.__module__ = "arrow_sparse.kernels.cpu.fake"
    jitted_helper = numba.njit(helper)
    events: list[tuple[bool, str]] = []
    stop = watch_kernel_compiles(lambda started, name: events.append((started, name)))
    try:
        kernel = numba.njit(outer)
        assert kernel(3) == 8 and kernel(4) == 10  # the second call compiles nothing
        assert numba.njit(elsewhere)(3) == 2  # not an arrow_sparse kernel: not reported
        name = "fake." + outer.__qualname__
        assert events == [(True, name), (False, name)]  # the helper compiled inside it
        kernel(5.0)  # a new signature is a new compile
        assert events[2:] == [(True, name), (False, name)]
    finally:
        stop()
    numba.njit(outer)(6)
    assert len(events) == 4  # no longer watched
