"""A tiny dependency-free progress bar for the command line tool.

The bar is drawn on one line of a terminal stream (stderr by default) and shows the
items done out of the total, the percentage, the rate and the time left::

    inspect [##########..........]  49,152/100,000 rows  49%  1.2M rows/s  ETA 0:01

It stays silent when the stream is neither a terminal nor a notebook cell's output
(:func:`in_notebook`), when it is disabled, and for work that finishes within
``delay`` seconds, so short runs and pipes see nothing.
The line is erased on :meth:`Progress.close`.

A :class:`Spinner` says what the program is busy with when it cannot count (compiling
the CPU kernels): its own thread redraws the line while the work runs. While a spinner
is shown, progress bars on the same stream do not draw.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

__all__ = ["DEFAULT_DELAY", "Progress", "Spinner", "in_notebook"]

#: Seconds of work before a bar appears (read when a :class:`Progress` is made).
DEFAULT_DELAY = 0.5
_BAR_WIDTH = 20


class Progress:
    r"""Progress of a job of ``total`` items, drawn on a terminal.

    Parameters
    ----------
    total
        Number of items the job will do (None or 0 when unknown: no bar or ETA,
        only the count and rate).
    label
        Short text in front of the bar.
    unit
        Name of the items, shown after the count.
    stream
        Where to draw; default ``sys.stderr`` (looked up when the object is made).
    enabled
        True or False to force the bar on or off; None (default) draws only when
        ``stream.isatty()`` is true or the stream is a Jupyter notebook cell's output
        (:func:`in_notebook`).
    delay
        Seconds of work before the first draw (default :data:`DEFAULT_DELAY`);
        quicker jobs show nothing.
    interval
        Least seconds between two redraws.
    clock
        Monotonic clock in seconds (tests pass a fake one).

    See Also
    --------
    arrow_sparse.cli.inspect.inspect_parquet : Reports its progress through this class.

    Examples
    --------
    >>> import io
    >>> ticks = iter([0.0, 1.0, 2.0])
    >>> out = io.StringIO()
    >>> with Progress(100, label="demo", stream=out, enabled=True,
    ...               clock=lambda: next(ticks)) as bar:
    ...     bar.update(50)
    >>> print(out.getvalue().strip("\r").split("\r")[0].rstrip())
    demo [##########..........]  50/100 rows  50%  50 rows/s  ETA 0:01
    """

    def __init__(self, total: int | None, *, label: str = "", unit: str = "rows",
                 stream: TextIO | None = None, enabled: bool | None = None,
                 delay: float | None = None, interval: float = 0.1,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.total = int(total) if total else 0
        self.label = label
        self.unit = unit
        self.done = 0
        self._stream = sys.stderr if stream is None else stream
        if enabled is None:
            isatty = getattr(self._stream, "isatty", None)
            enabled = bool(isatty and isatty()) or in_notebook(self._stream)
        self.enabled = enabled
        self._delay = DEFAULT_DELAY if delay is None else delay
        self._interval = interval
        self._clock = clock
        self._start = clock()
        self._last_draw: float | None = None
        self._drawn_width = 0

    @property
    def shown(self) -> bool:
        """Whether the bar has been drawn (and not yet erased)."""
        return self._drawn_width > 0

    def update(self, n: int) -> None:
        """Record ``n`` more items done and redraw when it is time to.

        Parameters
        ----------
        n
            Number of items finished since the last call.
        """
        self.done += int(n)
        if not self.enabled:
            return
        now = self._clock()
        elapsed = now - self._start
        if elapsed < self._delay:
            return
        if self._last_draw is not None and now - self._last_draw < self._interval:
            return
        self._last_draw = now
        width = max(shutil.get_terminal_size(fallback=(80, 24)).columns - 1, 10)
        text = self.render(elapsed)
        if len(text) > width:  # narrow terminal: shorten the bar, then cut
            shorter = max(_BAR_WIDTH - (len(text) - width), 0)
            text = self.render(elapsed, bar_width=shorter)[:width]
        self._draw(text)

    def render(self, elapsed: float, bar_width: int = _BAR_WIDTH) -> str:
        """Return the bar's text after ``elapsed`` seconds (no carriage return).

        Parameters
        ----------
        elapsed
            Seconds since the job started.
        bar_width
            Characters inside the brackets; 0 leaves the bar out.

        Returns
        -------
        str
            One line: label, bar, count, percentage, rate and ETA.

        Examples
        --------
        >>> Progress(400, label="scan", enabled=False).render(0.0)
        'scan [....................]  0/400 rows  0%'
        >>> Progress(400, enabled=False).render(0.0, bar_width=0)
        ' 0/400 rows  0%'
        """
        done, total = self.done, self.total
        parts = [self.label] if self.label else []
        if total:
            fraction = min(done / total, 1.0)
            if bar_width > 0:
                filled = int(round(fraction * bar_width))
                parts.append("[" + "#" * filled + "." * (bar_width - filled) + "]")
            parts.append(f" {done:,}/{total:,} {self.unit}")
            parts.append(f" {int(fraction * 100)}%")
        else:
            parts.append(f" {done:,} {self.unit}")
        if elapsed > 0 and done > 0:
            rate = done / elapsed
            parts.append(f" {_si(rate)} {self.unit}/s")
            if total and done < total:
                parts.append(f" ETA {_clock_text((total - done) / rate)}")
        return " ".join(parts)

    def close(self) -> None:
        """Erase the bar (if drawn) so the terminal line is left clean."""
        if self._drawn_width:
            self._stream.write("\r" + " " * self._drawn_width + "\r")
            self._stream.flush()
            self._drawn_width = 0

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _draw(self, text: str) -> None:
        if Spinner.showing(self._stream):
            return  # the spinner has the line; the next update redraws
        pad = max(self._drawn_width - len(text), 0)
        self._stream.write("\r" + text + " " * pad)
        self._stream.flush()
        self._drawn_width = max(len(text), self._drawn_width)


class Spinner:
    r"""A one-line notice with a turning spinner, redrawn by a thread of its own.

    For work that holds the calling thread and cannot report progress (compiling the
    CPU kernels): :meth:`start` shows it, :meth:`stop` erases it; both may be called
    any number of times. Like :class:`Progress` it draws only on a terminal.

    Parameters
    ----------
    text
        What is going on, shown before the spinner and the seconds elapsed.
    stream
        Where to draw; default ``sys.stderr`` (looked up when the object is made).
    enabled
        True or False to force drawing on or off; None (default) draws only when
        ``stream.isatty()`` is true.
    interval
        Seconds between two frames.
    clock
        Monotonic clock in seconds (tests pass a fake one).

    Examples
    --------
    >>> Spinner("compiling kernels", enabled=False).render(0.25, frame=1)
    'compiling kernels /  0.2 s'
    """

    FRAMES = "|/-\\"
    _shown: set[int] = set()  # ids of the streams a spinner is drawn on
    _lock = threading.Lock()

    def __init__(self, text: str, *, stream: TextIO | None = None, enabled: bool | None = None,
                 interval: float = 0.1, clock: Callable[[], float] = time.monotonic) -> None:
        self.text = text
        self._stream = sys.stderr if stream is None else stream
        if enabled is None:
            isatty = getattr(self._stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.enabled = enabled
        self._interval = interval
        self._clock = clock
        self._start = clock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._width = 0
        self._frame = 0

    @classmethod
    def showing(cls, stream: TextIO) -> bool:
        """Whether a spinner is drawn on ``stream`` now."""
        return id(stream) in cls._shown

    @property
    def shown(self) -> bool:
        """Whether this spinner is drawn now."""
        return self._width > 0

    def render(self, elapsed: float, frame: int = 0) -> str:
        """Return the line after ``elapsed`` seconds, at spinner frame ``frame``."""
        return f"{self.text} {self.FRAMES[frame % len(self.FRAMES)]} {elapsed:4.1f} s"

    def start(self) -> None:
        """Show the spinner (from now on, until :meth:`stop`)."""
        if not self.enabled or self._thread is not None:
            return
        self._wake.clear()
        self._thread = threading.Thread(target=self._spin, name="arrow-sparse-spinner",
                                        daemon=True)
        self.draw()
        self._thread.start()

    def stop(self) -> None:
        """Stop the spinner and erase its line."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._wake.set()
            thread.join()
        with self._lock:
            if self._width:
                self._stream.write("\r" + " " * self._width + "\r")
                self._stream.flush()
                self._width = 0
            self._shown.discard(id(self._stream))

    def draw(self) -> None:
        """Draw the next frame now."""
        text = self.render(self._clock() - self._start, self._frame)
        self._frame += 1
        with self._lock:
            pad = max(self._width - len(text), 0)
            self._stream.write("\r" + text + " " * pad)
            self._stream.flush()
            self._width = max(self._width, len(text))
            self._shown.add(id(self._stream))

    def _spin(self) -> None:
        while not self._wake.wait(self._interval):
            self.draw()

    def __enter__(self) -> Spinner:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def in_notebook(stream: object) -> bool:
    """Whether ``stream`` is the output of a Jupyter kernel (a notebook cell).

    As ``tqdm.auto`` decides, without importing anything: IPython must already be
    loaded, its shell must be the kernel's (``ZMQInteractiveShell``: Jupyter, VS Code,
    Colab) and the stream ipykernel's. A notebook shows a carriage return as a
    rewrite of the line, so the same one-line bar works there (no ipywidgets needed).

    Examples
    --------
    >>> import io
    >>> in_notebook(io.StringIO())
    False
    """
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    if get is None:
        return False
    try:
        shell = get()
    except Exception:  # noqa: BLE001  (a half-initialised IPython: not a notebook)
        return False
    return (type(shell).__name__ == "ZMQInteractiveShell"
            and type(stream).__module__.split(".")[0] == "ipykernel")


def _si(x: float) -> str:
    """Format a rate with an SI suffix: 950, 12.3k, 1.2M, 3.4G.

    Examples
    --------
    >>> [_si(x) for x in (950, 12345, 1.2e6, 3.4e9)]
    ['950', '12.3k', '1.2M', '3.4G']
    """
    for factor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= factor:
            return f"{x / factor:.1f}{suffix}"
    return f"{x:.0f}"


def _clock_text(seconds: float) -> str:
    """Format seconds (rounded up) as ``m:ss`` or ``h:mm:ss``.

    Examples
    --------
    >>> _clock_text(7.2), _clock_text(3725)
    ('0:08', '1:02:05')
    """
    total = int(seconds + 0.999)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"
