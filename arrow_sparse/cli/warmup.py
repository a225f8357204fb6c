"""``arrow-sparse warmup``, and the notice a first run shows while it compiles kernels.

:func:`compile_notice` wraps a subcommand that runs kernels: on a terminal, a spinner
says the CPU kernels are being compiled, from the start of a first run (no kernel in
Numba's cache yet: :func:`~arrow_sparse.kernel_cache.looks_cold`, which imports
nothing) and whenever Numba compiles one; runs whose kernels are cached show nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from .._backend import watch_kernel_compiles
from .._progress import Progress, Spinner
from ..kernel_cache import looks_cold, warmup
from ._args import comma_list

__all__ = ["NOTICE", "compile_notice"]

NOTICE = "compiling CPU kernels (first run only; 'arrow-sparse warmup' does it ahead)"

#: Seconds the notice stays after a compile ends (the next one often follows).
_LINGER = 0.5
#: Seconds a first run's notice waits for a first compile once Numba is watched.
_FIRST_COMPILE = 3.0

_WARMUP_EPILOG = """\
Compiles the CPU kernels into Numba's on-disk cache ahead of time, for container
images and CI caches: later processes load them in milliseconds instead of
compiling them on their first call. The cache is valid for this version of
arrow_sparse on machines of the same CPU type (docs/cli.md, "Kernel cache and cold
start").

examples:
  arrow-sparse warmup                  # the common kernels (segment reductions, embedding
                                       # bags, hashing, vocabularies, padding, ...)
  arrow-sparse warmup --all            # every public function on every value type
  arrow-sparse warmup --only segment_sum,hash_bucket
  NUMBA_CACHE_DIR=/opt/cache arrow-sparse warmup --all --json
"""


def add_warmup(commands: Any, common: argparse.ArgumentParser) -> None:
    """Declare the ``warmup`` subcommand."""
    p = commands.add_parser(
        "warmup", parents=[common], help="compile the CPU kernels ahead of time",
        description="Compile the CPU kernels ahead of time into Numba's on-disk cache.",
        epilog=_WARMUP_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--all", action="store_true",
                   help="every public function on every value type (several minutes), "
                        "not only the common ones")
    p.add_argument("--only", metavar="F,G", type=comma_list("function names"),
                   help="only the warm-up calls of these functions (e.g. segment_sum)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--no-progress", action="store_true", help="never draw the progress bar")
    p.set_defaults(handler=_run_warmup)


def _run_warmup(args: argparse.Namespace) -> int:
    progress = Progress(None, label="warmup", unit="calls",
                        enabled=False if args.no_progress else None)
    with progress:
        report = warmup("all" if args.all else "common", functions=args.only,
                        progress=progress)
    if args.json:
        print(json.dumps(vars(report), indent=2))
    else:
        print(report)
    return 0


class _Notice:
    """The spinner of :func:`compile_notice` and the state that shows or hides it."""

    def __init__(self, spinner: Spinner, cold: bool,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.spinner = spinner
        self.cold = cold  # a first run: shown before Numba says anything
        self.clock = clock
        self.compiling = 0
        self.seen = False
        self.last_end = float("-inf")
        self.watching_since: float | None = None
        self.watching = threading.Event()  # set once Numba's compiles are watched
        self.lock = threading.Lock()

    def visible(self) -> bool:
        now = self.clock()
        if self.compiling or now - self.last_end < _LINGER:
            return True
        if self.cold and not self.seen:  # until the first compile, or a while without one
            return self.watching_since is None or now - self.watching_since < _FIRST_COMPILE
        return False

    def compile_event(self, started: bool, name: str) -> None:
        with self.lock:
            if started:
                self.compiling += 1
                self.seen = True
            else:
                self.compiling = max(self.compiling - 1, 0)
                self.last_end = self.clock()
        if started:
            self.spinner.start()

    def tick(self) -> None:
        if not self.visible():
            self.spinner.stop()


@contextlib.contextmanager
def compile_notice(enabled: bool | None = None, stream: Any = None) -> Iterator[_Notice]:
    """Show a spinner on ``stream`` (stderr) while the CPU kernels compile.

    Shown at once when no kernel is cached yet (a first run), and whenever a kernel
    compiles; hidden a moment after the last compile ends. Numba is imported and
    watched on a background thread, so the command starts without waiting for it.
    ``enabled``: as :class:`~arrow_sparse._progress.Spinner` (None: on a terminal).
    """
    spinner = Spinner(NOTICE, stream=stream, enabled=enabled)
    if not spinner.enabled:
        yield _Notice(spinner, cold=False)
        return
    notice = _Notice(spinner, cold=looks_cold())
    if notice.cold:
        spinner.start()
    done = threading.Event()
    unwatch: list[Callable[[], None]] = []

    def watch() -> None:
        # imports Numba: off the main thread
        unwatch.append(watch_kernel_compiles(notice.compile_event))
        notice.watching_since = notice.clock()
        notice.watching.set()
        while not done.wait(0.1):
            notice.tick()

    thread = threading.Thread(target=watch, name="arrow-sparse-compile-notice", daemon=True)
    thread.start()
    try:
        yield notice
    finally:
        done.set()
        thread.join()
        for stop in unwatch:
            stop()
        spinner.stop()
