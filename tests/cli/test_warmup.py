"""Tests of ``arrow-sparse warmup`` and of the notice a first run shows while the CPU
kernels compile (``arrow_sparse.cli.warmup``).

The notice is checked on a fake terminal: shown at once when the cache is empty, on a
compile of a kernel (a fresh function compiled under an arrow_sparse module name stands
in for a slow kernel), and never off a terminal. The end-to-end warm-up is tested in
``tests/test_kernel_cache.py``.
"""

from __future__ import annotations

import io
import json
import sys
import time
from pathlib import Path

import numba
import pytest

from arrow_sparse import cli
from arrow_sparse.cli import warmup as cli_warmup


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def fake_kernel_compile() -> None:
    """Compile a new function that the notice counts as an arrow_sparse kernel."""
    def kernel(x):  # type: ignore[no-untyped-def]
        return x * 2 + 1
    kernel.__module__ = "arrow_sparse.kernels.cpu.fake"
    assert numba.njit(kernel)(3) == 7


def test_notice_is_shown_at_once_on_a_first_run(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))  # nothing cached there
    tty = FakeTTY()
    t0 = time.monotonic()
    with cli_warmup.compile_notice(stream=tty):
        shown = tty.getvalue()  # before any kernel compiles, before Numba is watched
        assert time.monotonic() - t0 < 1.0
    assert shown.startswith("\r" + cli_warmup.NOTICE + " |")
    assert tty.getvalue().endswith("\r")  # erased at the end
    assert tty.getvalue().rstrip("\r").endswith(" ")


def test_notice_shows_while_a_kernel_compiles(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_warmup, "looks_cold", lambda: False)  # a warm cache
    tty = FakeTTY()
    with cli_warmup.compile_notice(stream=tty) as notice:
        assert notice.watching.wait(120)
        assert tty.getvalue() == ""  # warm: nothing yet
        fake_kernel_compile()
        assert cli_warmup.NOTICE in tty.getvalue()
    assert tty.getvalue().endswith("\r")


def test_notice_stays_silent_off_a_terminal(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    for stream, enabled in ((io.StringIO(), None), (FakeTTY(), False)):
        with cli_warmup.compile_notice(enabled=enabled, stream=stream):
            fake_kernel_compile()
        assert stream.getvalue() == ""


def test_notice_state_lingers_then_hides() -> None:
    clock = FakeClock()
    spinner = cli_warmup.Spinner("x", enabled=False)
    cold = cli_warmup._Notice(spinner, cold=True, clock=clock)
    assert cold.visible()  # a first run, Numba not watched yet
    cold.watching_since = clock.now
    clock.now += cli_warmup._FIRST_COMPILE - 0.1
    assert cold.visible()
    clock.now += 0.2
    assert not cold.visible()  # no compile came: the cache was warm after all
    cold.compile_event(True, "segment.sum_1d")
    assert cold.visible()
    cold.compile_event(False, "segment.sum_1d")
    clock.now += cli_warmup._LINGER / 2
    assert cold.visible()  # the next compile often follows
    clock.now += cli_warmup._LINGER
    assert not cold.visible()
    warm = cli_warmup._Notice(spinner, cold=False, clock=clock)
    assert not warm.visible()


def test_progress_bar_waits_while_the_notice_is_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    from arrow_sparse._progress import Progress, Spinner

    tty, clock = FakeTTY(), FakeClock()
    bar = Progress(10, stream=tty, enabled=True, delay=0.0, clock=clock)
    spinner = Spinner("compiling", stream=tty, enabled=True, interval=60)
    spinner.start()
    clock.now += 1
    bar.update(5)
    assert "5/10" not in tty.getvalue()
    spinner.stop()
    clock.now += 1
    bar.update(1)
    assert tty.getvalue().endswith("\r" + bar.render(2.0))


def test_warmup_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["warmup", "--only", "length_stats", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["calls"] == 4 and report["scope"] == "common"
    assert cli.main(["warmup", "--only", "length_stats"]) == 0
    assert capsys.readouterr().out.startswith("warmup (common): 4 calls, ")


@pytest.mark.parametrize(("argv", "code", "text"), [
    (["warmup", "--only", ","], 2, "argument --only: expected comma-separated function names"),
    (["warmup", "--only", "nope"], 1, "warmup: no common warm-up calls for ['nope']"),
    (["warmup", "--help"], 0, "arrow-sparse warmup --all"),
])
def test_warmup_command_errors_and_help(capsys: pytest.CaptureFixture[str], argv: list[str],
                                        code: int, text: str) -> None:
    assert cli.main(argv) == code
    captured = capsys.readouterr()
    assert text in captured.out + captured.err


def test_run_shows_the_notice_on_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    seen = []
    real = cli_warmup.compile_notice

    def spy(enabled: bool | None = None, stream: object = None) -> object:
        seen.append(enabled)
        return real(enabled=enabled, stream=stream)

    monkeypatch.setattr(cli.commands, "compile_notice", spy)
    spec = Path(__file__).resolve().parents[2] / "data" / "example_pipeline.toml"
    out = tmp_path / "o.parquet"
    assert cli.main(["run", str(spec), "--output", str(out), "--no-progress"]) == 0
    assert seen == [False]
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(sys, "stderr", FakeTTY())
    assert cli.main(["run", str(spec), "--output", str(out)]) == 0
    assert seen == [False, None]
