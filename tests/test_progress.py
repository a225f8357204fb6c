"""Tests of ``arrow_sparse._progress``: the progress bar drawn on a terminal (a fake one
and a fake clock here), silent elsewhere, fitted to the terminal's width.
"""

from __future__ import annotations

import io
import os
import shutil

import pytest

from arrow_sparse._progress import Progress


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_progress_waits_then_draws_then_erases() -> None:
    stream, clock = FakeTTY(), FakeClock()
    bar = Progress(1000, label="inspect", stream=stream, clock=clock)
    assert bar.enabled
    clock.now = 0.2
    bar.update(100)
    assert stream.getvalue() == "" and not bar.shown  # quicker than the delay
    clock.now = 1.0
    bar.update(400)
    text = stream.getvalue()
    assert text == "\rinspect [##########..........]  500/1,000 rows  50%  500 rows/s  ETA 0:01"
    clock.now = 1.05
    bar.update(100)
    assert stream.getvalue() == text  # throttled: within the redraw interval
    clock.now = 2.0
    bar.update(400)
    assert stream.getvalue().rstrip(" ").endswith(
        "\rinspect [####################]  1,000/1,000 rows  100%  500 rows/s")
    bar.close()
    assert stream.getvalue().endswith("\r" + " " * len(text.strip("\r")) + "\r")
    assert not bar.shown


def test_progress_silent_off_terminal_or_disabled() -> None:
    for stream, enabled in ((io.StringIO(), None), (FakeTTY(), False)):
        clock = FakeClock()
        with Progress(10, stream=stream, enabled=enabled, clock=clock) as bar:
            clock.now = 5.0
            bar.update(5)
        assert stream.getvalue() == ""


def test_progress_unknown_total() -> None:
    bar = Progress(None, enabled=False, unit="batches")
    bar.update(3_000_000)
    assert bar.render(2.0) == " 3,000,000 batches  1.5M batches/s"


def test_progress_fits_a_narrow_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "get_terminal_size",
                        lambda fallback: os.terminal_size((50, 24)))
    stream, clock = FakeTTY(), FakeClock()
    bar = Progress(6_000_000, label="inspect", stream=stream, clock=clock)
    clock.now = 2.0
    bar.update(1_500_000)
    line = stream.getvalue().lstrip("\r")
    assert line == "inspect  1,500,000/6,000,000 rows  25%  750.0k ro"  # no bar, then cut
    monkeypatch.setattr(shutil, "get_terminal_size",
                        lambda fallback: os.terminal_size((78, 24)))
    clock.now = 3.0
    bar.update(0)
    line = stream.getvalue().split("\r")[-1]
    assert line.startswith("inspect [#") and line.endswith("ETA 0:09") and len(line) == 77


def _fake_ipython(monkeypatch: pytest.MonkeyPatch, shell_name: str) -> None:
    import sys
    import types

    shell = type(shell_name, (), {})()
    module = types.ModuleType("IPython")
    module.get_ipython = lambda: shell  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", module)


class _KernelStream(io.StringIO):
    """Stands in for ipykernel.iostream.OutStream (a notebook cell's stderr)."""


_KernelStream.__module__ = "ipykernel.iostream"


def test_progress_draws_in_a_notebook(monkeypatch: pytest.MonkeyPatch) -> None:
    from arrow_sparse._progress import in_notebook

    stream = _KernelStream()
    assert not in_notebook(stream)  # no IPython loaded
    _fake_ipython(monkeypatch, "TerminalInteractiveShell")
    assert not in_notebook(stream)  # IPython in a terminal: the tty rule decides
    _fake_ipython(monkeypatch, "ZMQInteractiveShell")
    assert in_notebook(stream)
    assert not in_notebook(io.StringIO())  # a kernel, but not its output stream
    ticks = iter([0.0, 1.0, 2.0])
    with Progress(10, label="run", stream=stream, clock=lambda: next(ticks)) as bar:
        assert bar.enabled
        bar.update(5)
    assert "run [##########..........]  5/10 rows  50%" in stream.getvalue()
