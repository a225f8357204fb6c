"""The ``arrow-sparse`` command line tool.

:mod:`.commands` parses the command line and runs the subcommands; :mod:`.inspect`
computes the statistics of ``inspect``.

One function per subcommand: ``_add_<name>`` declares its arguments and
``_run_<name>`` does the work and returns the exit code. :func:`main` parses the
arguments, dispatches, and turns every error into one line on stderr.

Subcommands
-----------
inspect
    Per-column statistics of the jagged (list, large_list and map) columns of a
    Parquet file: rows, null and empty rows, total values, exact length
    percentiles and value range; ``--plot`` draws the length histograms. Streams
    the file batch by batch, so memory stays bounded on files larger than memory.
run
    Run a feature pipeline spec (TOML) over Parquet input, locally or on Ray, into
    Parquet, Arrow IPC or an Arrow Flight server.
schema
    The Arrow schema of a Parquet file, or the schema a pipeline would output.
warmup
    Compile the CPU kernels ahead of time into Numba's on-disk cache (``--all``: for
    every public function and value type), for container images and CI caches.

Exit codes: 0 success, 1 the work failed (unreadable or non-Parquet file, no list
columns, bad data, a bad spec), 2 the command line is wrong (unknown option or
column, bad value), 130 interrupted (Ctrl-C), 143 terminated (SIGTERM).
"""

from .commands import build_parser, main

__all__ = ["build_parser", "main"]
