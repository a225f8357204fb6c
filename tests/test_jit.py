"""Tests of the kernels' on-disk cache placement (``arrow_sparse.kernels.cpu._jit``).

A read-only install with a read-only home directory is simulated in a subprocess by
narrowing the list of places Numba may cache to (its cache locators): running as
root, file permissions alone cannot make a directory read-only.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from arrow_sparse.kernels.cpu import _jit

# Run in a fresh interpreter: restrict Numba's cache locators to ``LOCATORS``, then
# load the kernels and pad a batch (compiling, or loading from the cache).
SCRIPT = """
import sys
from numba.core import caching
impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
impl._locator_classes = [getattr(caching, name, None) or getattr(caching, "_" + name)
                         for name in LOCATORS]
import arrow_sparse as asp
from arrow_sparse.kernels.cpu import _jit
padded = asp.Jagged.from_list([[1, 2, 3], None, [4]]).to_padded(pad_value=-1)
print("CACHE", _jit.CACHE, padded.tolist())
import numba
print("DIR", numba.config.CACHE_DIR)
"""


def run_with_locators(locators: list[str], tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {k: val for k, val in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "NUMBA_CACHE_LOCATOR_CLASSES", "NUMBA_DISABLE_JIT")}
    env["TMPDIR"] = str(tmp)
    code = f"LOCATORS = {locators!r}\n" + textwrap.dedent(SCRIPT)
    return subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True,
                          text=True, env=env, timeout=600)


def test_no_writable_cache_dir_falls_back_to_a_private_temp_dir(tmp_path: Path) -> None:
    # Only NUMBA_CACHE_DIR is left, and it is unset: before the fallback every kernel
    # module failed to load with "cannot cache function ...: no locator available".
    first = run_with_locators(["UserProvidedCacheLocator"], tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "CACHE True [[1, 2, 3], [-1, -1, -1], [4, -1, -1]]" in first.stdout
    cache_dir = tmp_path / f"arrow_sparse-numba-{_jit._user()}"
    assert f"DIR {cache_dir}" in first.stdout
    assert oct(cache_dir.stat().st_mode & 0o777) == oct(0o700)
    index_files = sorted(p.name for p in cache_dir.rglob("*.nbi"))
    assert index_files, "no kernel was cached"
    second = run_with_locators(["UserProvidedCacheLocator"], tmp_path)
    assert second.returncode == 0 and "CACHE True" in second.stdout, second.stderr[-3000:]
    assert sorted(p.name for p in cache_dir.rglob("*.nbi")) == index_files
    assert "RuntimeWarning" not in first.stderr + second.stderr


def test_no_cache_at_all_compiles_with_one_warning(tmp_path: Path) -> None:
    result = run_with_locators([], tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "CACHE False [[1, 2, 3], [-1, -1, -1], [4, -1, -1]]" in result.stdout
    assert result.stderr.count("RuntimeWarning") == 1
    assert "Numba has no writable directory for its kernel cache" in result.stderr
    assert "Set NUMBA_CACHE_DIR to a writable directory" in result.stderr


def test_usual_install_changes_nothing(tmp_path: Path) -> None:
    result = run_with_locators(["UserProvidedCacheLocator", "InTreeCacheLocator",
                                "UserWideCacheLocator"], tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "CACHE True" in result.stdout and "DIR \n" in result.stdout
    assert not list(tmp_path.iterdir())


def test_private_dir_refuses_shared_or_odd_paths(tmp_path: Path) -> None:
    assert _jit._private_dir(str(tmp_path / "new"))
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    assert not _jit._private_dir(str(shared))
    a_file = tmp_path / "file"
    a_file.write_text("")
    assert not _jit._private_dir(str(a_file))
    assert not _jit._private_dir(str(a_file / "below"))
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "new")
    assert not _jit._private_dir(str(link))


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX user ids")
def test_private_dir_refuses_a_directory_of_another_user(tmp_path: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("changing a directory's owner needs root")
    other = tmp_path / "other"
    other.mkdir(mode=0o700)
    os.chown(other, 12345, -1)
    assert not _jit._private_dir(str(other))
