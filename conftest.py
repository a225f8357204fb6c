"""Repository-wide test configuration: the doctest namespace, and the docs' code as tests.

Every module's Examples run with ``np``, ``pa`` and ``asp`` in their namespace.

Every ```` ```python ```` block of ``README.md`` and ``docs/**/*.md`` is a test item named
after its file and the line of its opening fence, ``docs/io.md::block_line_15``, so the
documentation cannot silently rot. How a markdown file runs:

* Its blocks run in order in one namespace, so a block uses the names the blocks above
  it defined; the namespace starts with ``np``, ``pa`` and ``asp``, as the doctests'.
  A block run on its own (``pytest docs/io.md::block_line_57``, ``--lf``) first runs the
  blocks above it that have not run.
* A block whose first line starts with ``>>>`` is a doctest, checked with the
  ``doctest_optionflags`` of the docstrings' Examples. Any other block is executed and
  passes unless it raises; its traceback names the markdown file and line.
* The working directory is a fresh temporary directory holding a copy of ``data/``:
  paths read as they would from the root of a clone (``"data/sample_clicks.parquet"``),
  and whatever a block writes (a pipeline's ``../out`` included) goes with the directory.
* Comments on the lines just above a fence mark the block:

  - ``<!-- requires: torch -->`` (several: ``torch, ray``) skips it where one of those
    modules cannot be imported; ``cuda`` means CuPy and a CUDA device;
  - ``<!-- filterwarnings: ignore::DeprecationWarning:ray.* -->`` adds that filter, as
    ``pytest.mark.filterwarnings`` does for a test (any other warning is an error, as
    in the tests).

  Nothing else skips a block: code that is not meant to run has another fence language
  (```` ```bash ````, ```` ```text ````).
* A Ray cluster that a file's blocks started (Ray Data starts one on first use) is shut
  down after the file, since other tests of the process start their own.
* Each file also gets ``python_blocks_collected``, which finds python fences with a
  looser pattern (``py``, ``pycon``, ``~~~``, any indentation) and fails if one of them
  is not a collected block, and ``README.md`` gets ``docs_in_testpaths``, which fails if
  ``docs`` leaves pytest's ``testpaths``.

This collector runs the markdown files' doctests, so they must not also be named by
``--doctest-glob`` (that would run them twice; collection stops with a usage error).
"""

from __future__ import annotations

import doctest
import inspect
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

# pytest has no public API for doctest items; these are what its own DoctestTextfile
# (--doctest-glob) builds its items with, so the markdown doctests behave as those do.
from _pytest.doctest import (
    DoctestItem,
    MultipleDoctestFailures,
    _check_all_skipped,
    _get_checker,
    _get_continue_on_failure,
    _get_runner,
    get_optionflags,
)

import arrow_sparse as asp

REPO = Path(__file__).resolve().parent
#: What every doctest, and every block of the docs, finds already imported.
NAMESPACE: dict[str, Any] = {"np": np, "pa": pa, "asp": asp}


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace: dict[str, Any]) -> None:
    doctest_namespace.update(NAMESPACE)


# --- tests that need an optional peer ----------------------------------------------------

#: The optional peers the tests compare against where installed; none is in the test extra
#: (a torch requirement there would download several GB on a fresh machine).
PEERS = ("torch", "fbgemm")
_USES_PEER = re.compile(r"\b(import torch|torch\.|fbgemm|importorskip\(\s*[\"'](torch|fbgemm))")


def _source_of(item: pytest.Item) -> str:
    """Return the code of a test function, a doctest's examples or a docs block."""
    if isinstance(item, DoctestItem) and item.dtest is not None:
        return "".join(example.source for example in item.dtest.examples)
    if isinstance(item, ExecBlock):
        return item.block.source
    function = getattr(item, "function", None)
    try:
        return inspect.getsource(function) if function is not None else ""
    except (OSError, TypeError):
        return ""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``peers`` every test whose code uses torch or FBGEMM.

    A docs block is marked too when it says ``<!-- requires: torch -->``.

    CI runs the README's test command first, in a fresh environment without the peers
    (their tests skip there), then installs them and runs ``pytest -m peers``.
    """
    for item in items:
        block = getattr(item, "block", None)  # a docs block that requires a peer uses it
        requires = block.requires if isinstance(block, Block) else ()
        if _USES_PEER.search(_source_of(item)) or set(requires) & set(PEERS):
            item.add_marker(pytest.mark.peers)


# --- reading the blocks of a markdown file -------------------------------------------------

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_MARKER = re.compile(r"^<!--\s*(?P<key>[\w-]+)\s*:(?P<value>.*?)-->$")
#: Deliberately looser than the parser: what a reader would take for a python block.
_LOOSE_PYTHON_FENCE = re.compile(
    r"^\s*(`{3,}|~{3,})\s*\{?\s*\.?(python3?|py3?|pycon|ipython3?)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Block:
    """One ```` ```python ```` block: its fence's line (1-based), its code, its markers."""

    line: int
    source: str
    requires: tuple[str, ...] = ()
    filterwarnings: tuple[str, ...] = ()

    @property
    def is_doctest(self) -> bool:
        """Whether the block is a doctest session (its first line starts with ``>>>``)."""
        return self.source.lstrip().startswith(">>>")


def parse_blocks(path: Path) -> list[Block]:
    """Read the python blocks of the markdown file ``path``, in order.

    A fence is three or more backticks or tildes, indented by any number of spaces (a
    block inside a list item); the block ends at a line of at least as many of the same
    character, and its lines lose the opening fence's indentation.
    """
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence, info = opening["indent"], opening["fence"], opening["info"].split()
        end = i + 1
        while end < len(lines) and not _closes(lines[end], fence):
            end += 1
        if end == len(lines):
            msg = f"{path}:{i + 1}: the code fence {fence} is never closed"
            raise ValueError(msg)
        if info and info[0] == "python":
            body = [line.removeprefix(indent) for line in lines[i + 1:end]]
            blocks.append(Block(i + 1, "\n".join(body) + "\n", **_markers(path, lines, i)))
        i = end + 1
    return blocks


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return stripped.startswith(fence) and set(stripped) == {fence[0]}


def _markers(path: Path, lines: list[str], fence_index: int) -> dict[str, tuple[str, ...]]:
    """Read the ``<!-- key: value -->`` lines just above a fence (blank lines may part them)."""
    markers: dict[str, tuple[str, ...]] = {"requires": (), "filterwarnings": ()}
    i = fence_index - 1
    while i >= 0 and (not lines[i].strip() or _MARKER.match(lines[i].strip())):
        marker = _MARKER.match(lines[i].strip())
        i -= 1
        if marker is None:
            continue
        key, value = marker["key"], marker["value"].strip()
        names = tuple(name.strip() for name in value.split(","))
        if key not in markers or not value or (key == "requires" and not all(names)):
            msg = (f"{path}:{i + 2}: unknown or malformed marker {marker[0]!r} above the python "
                   f"block at line {fence_index + 1}; write <!-- requires: module[, module] --> "
                   f"or <!-- filterwarnings: action:message:category:module -->")
            raise ValueError(msg)
        markers[key] += names if key == "requires" else (value,)
    return markers


def check_requirements(names: tuple[str, ...]) -> None:
    """Skip the running test unless every module in ``names`` imports (``cuda``: a GPU)."""
    for name in names:
        if name != "cuda":
            pytest.importorskip(name, exc_type=ImportError)
            continue
        cupy = pytest.importorskip("cupy", exc_type=ImportError)
        try:
            devices = cupy.cuda.runtime.getDeviceCount()
        except cupy.cuda.runtime.CUDARuntimeError:
            devices = 0
        if devices < 1:
            pytest.skip("no CUDA device")


# --- collecting and running them ---------------------------------------------------------

def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> MarkdownFile | None:
    """Collect ``README.md`` and the markdown files under ``docs/``."""
    path = file_path.resolve()
    if path.suffix != ".md" or (path != REPO / "README.md" and REPO / "docs" not in path.parents):
        return None
    return MarkdownFile.from_parent(parent, path=file_path)


class MarkdownFile(pytest.File):
    """A markdown file whose python blocks run in order, in one namespace, in a temp dir."""

    def collect(self) -> Iterator[pytest.Item]:
        """Yield one item per python block, then the checks of the file."""
        globs = self.config.getoption("doctestglob") or []
        if any(self.path.match(glob) for glob in globs):
            msg = (f"{self.path.name}: its python blocks, doctests included, run as the docs' "
                   f"tests (conftest.py); remove it from --doctest-glob ({globs})")
            raise pytest.UsageError(msg)
        self.namespace: dict[str, Any] = {}
        self.blocks: list[ExecBlock | DoctestBlock] = []
        self._started: set[int] = set()
        runner = _get_runner(verbose=False, optionflags=get_optionflags(self.config),
                             checker=_get_checker(),
                             continue_on_failure=_get_continue_on_failure(self.config))
        parser = doctest.DocTestParser()
        for block in parse_blocks(self.path):
            name = f"block_line_{block.line}"
            item: ExecBlock | DoctestBlock
            if block.is_doctest:
                test = parser.get_doctest(block.source, self.namespace, f"{self.name}::{name}",
                                          str(self.path), block.line)
                test.globs = self.namespace  # the parser gave it a copy
                item = DoctestBlock.from_parent(  # any collector may parent it at run time
                    self, name=name, runner=runner, dtest=test)  # type: ignore[arg-type]
            else:
                item = ExecBlock.from_parent(self, name=name)
            item.block, item.index = block, len(self.blocks)
            for spec in block.filterwarnings:
                item.add_marker(pytest.mark.filterwarnings(spec))
            self.blocks.append(item)
            yield item
        yield FencesCollected.from_parent(self, name="python_blocks_collected")
        if self.path.resolve() == REPO / "README.md":
            yield DocsInTestpaths.from_parent(self, name="docs_in_testpaths")

    def setup(self) -> None:
        """Start the namespace, and work in a new temporary directory with ``data/``."""
        self.namespace.clear()
        self.namespace.update(__name__="__main__", **NAMESPACE)
        self._started.clear()
        self._ray_was_running = _ray_running()
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # as tests' ray_cluster does
        self._cwd = os.getcwd()
        self._tmp = Path(tempfile.mkdtemp(prefix=f"{self.path.stem}-"))
        shutil.copytree(REPO / "data", self._tmp / "data")
        os.chdir(self._tmp)

    def teardown(self) -> None:
        """Drop the namespace (servers, memory maps), a Ray cluster it started, the temp dir."""
        self.namespace.clear()
        if _ray_running() and not self._ray_was_running:
            sys.modules["ray"].shutdown()  # later tests of the process start their own
        os.chdir(self._cwd)
        shutil.rmtree(self._tmp)

    def prepare(self, item: ExecBlock | DoctestBlock) -> None:
        """Skip ``item`` if it needs a missing module; else first run the blocks above it."""
        try:
            check_requirements(item.block.requires)
        except pytest.skip.Exception as skip:  # reported at the block, not in this file
            reason = f"{skip.msg} (<!-- requires: {', '.join(item.block.requires)} -->)"
            raise pytest.skip.Exception(reason, _use_item_location=True) from None
        for earlier in self.blocks[:item.index]:
            if earlier.index in self._started:
                continue
            self._started.add(earlier.index)
            try:
                check_requirements(earlier.block.requires)
            except pytest.skip.Exception:
                continue
            try:
                exec(earlier.code(), self.namespace)
            except Exception as exc:
                msg = (f"{earlier.nodeid}, run first since {item.name} may use its names, "
                       f"raised {exc!r}")
                raise RuntimeError(msg) from exc
        self._started.add(item.index)


def _ray_running() -> bool:
    """Whether this process is connected to a Ray cluster (without importing Ray)."""
    ray = sys.modules.get("ray")
    return ray is not None and bool(ray.is_initialized())


class ExecBlock(pytest.Item):
    """A python block that is code: it passes unless it raises."""

    block: Block
    index: int
    parent: MarkdownFile

    def code(self) -> Any:
        """Compile the block so that tracebacks give the markdown file's own lines."""
        return compile("\n" * self.block.line + self.block.source, str(self.path), "exec")

    def setup(self) -> None:
        """Check the requirements; run the blocks above if they have not run."""
        self.parent.prepare(self)

    def runtest(self) -> None:
        """Execute the block in the file's namespace."""
        exec(self.code(), self.parent.namespace)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> Any:
        """Show the traceback from the block's line on (all of it with ``--fulltrace``).

        The markdown file's own frames show only their line: pytest would print a
        module's source from its first line, the top of the markdown file.
        """
        if not self.config.getoption("fulltrace", False):
            traceback = excinfo.traceback.cut(path=self.path).filter(excinfo)
            excinfo.traceback = type(traceback)(
                entry.with_repr_style("short") if entry.path == self.path else entry
                for entry in traceback)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        """Where the block is: its opening fence."""
        return self.path, self.block.line - 1, f"{self.path.name}, block at line {self.block.line}"


class DoctestBlock(DoctestItem):
    """A python block that is a doctest session, run as pytest runs doctests."""

    block: Block
    index: int
    parent: MarkdownFile

    def code(self) -> Any:
        """Compile the session's statements, to run them without checking their output."""
        source = "".join(example.source for example in self.dtest.examples)
        return compile(source, str(self.path), "exec")

    def setup(self) -> None:
        """Check the requirements, run the blocks above if they have not run."""
        self.parent.prepare(self)
        super().setup()

    def runtest(self) -> None:
        """Run the session as DoctestItem does, but keep the namespace for the next blocks.

        (doctest's runner clears a test's globals after running it by default.)
        """
        _check_all_skipped(self.dtest)
        failures: list[doctest.DocTestFailure] = []
        optionflags = self.runner.optionflags
        try:
            self.runner.run(self.dtest, out=failures, clear_globs=False)  # type: ignore[arg-type]
        finally:
            self.runner.optionflags = optionflags  # the runner can raise before restoring them
        if failures:
            raise MultipleDoctestFailures(failures)


class FencesCollected(pytest.Item):
    """Fails if a fence a reader would take for python is not a collected block."""

    parent: MarkdownFile

    def runtest(self) -> None:
        """Compare a looser search for python fences with the collected blocks."""
        lines = self.path.read_text(encoding="utf-8").splitlines()
        found = {i + 1 for i, line in enumerate(lines) if _LOOSE_PYTHON_FENCE.match(line)}
        missed = sorted(found - {item.block.line for item in self.parent.blocks})
        if missed:
            where = ", ".join(f"line {i}: {lines[i - 1].strip()!r}" for i in missed)
            pytest.fail(f"{self.path.name}: python code not collected as a test ({where}); "
                        f"open the block with ```python, or give code not meant to run "
                        f"another language (```text)", pytrace=False)

    def reportinfo(self) -> tuple[Path, None, str]:
        """Name the file checked."""
        return self.path, None, f"{self.path.name}: every python block is collected"


class DocsInTestpaths(pytest.Item):
    """Fails if a plain ``pytest`` would no longer run the docs' blocks."""

    def runtest(self) -> None:
        """Check pytest's ``testpaths``."""
        testpaths = self.config.getini("testpaths")
        if "docs" not in testpaths or "README.md" not in testpaths:
            pytest.fail(f"testpaths {testpaths} must name docs and README.md, so that pytest "
                        f"runs them", pytrace=False)

    def reportinfo(self) -> tuple[Path, None, str]:
        """Name the check."""
        return self.path, None, "the docs are in pytest's testpaths"
