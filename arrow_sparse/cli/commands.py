"""The subcommands of ``arrow-sparse``: ``_add_<name>`` declares, ``_run_<name>`` runs.

See :mod:`arrow_sparse.cli` for the subcommands and exit codes.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn

import numpy as np
import pyarrow as pa

from .._optional import import_optional
from .._progress import Progress
from .._version import __version__
from ..errors import ArrowSparseError, ArrowSparseValueError
from ..pipeline import Pipeline, run
from ._args import comma_list
from ._values import DEFAULT_DISTINCT_LIMIT, DEFAULT_TOP
from .inspect import (
    DEFAULT_BATCH_ROWS,
    _open_parquet,
    _select_columns,
    inspect_parquet,
    plot_length_histograms,
)
from .warmup import add_warmup, compile_notice

__all__ = ["main"]

_COLUMN_LIST = comma_list("column names")

PROG = "arrow-sparse"

_TOP_EPILOG = """\
examples:
  arrow-sparse run data/example_pipeline.toml      # run a feature pipeline
  arrow-sparse inspect data/sample_clicks.parquet
  arrow-sparse inspect clicks.parquet --columns item_ids,categories --json
  arrow-sparse inspect data/sample_clicks.parquet --plot lengths.png
  arrow-sparse schema data/sample_clicks.parquet --pipeline data/example_pipeline.toml
  arrow-sparse --debug inspect broken.parquet      # show the traceback of an error
  arrow-sparse warmup                              # compile the CPU kernels ahead of time

exit codes: 0 ok, 1 the work failed, 2 bad command line, 130 interrupted (Ctrl-C),
143 terminated (SIGTERM).
Run 'arrow-sparse COMMAND --help' for a command's options.
"""

_INSPECT_EPILOG = """\
For every list, large_list and map column (a map also reports its value lists as
NAME.values; nested lists report each level as NAME.values, NAME.values.values, ...)
prints: rows, null rows, empty rows, total values, length min/p50/p90/p99/max/mean
(exact, nearest-rank; null rows excluded) and value min/max (numeric leaves; null
and NaN values skipped; map entries report their keys).

examples:
  arrow-sparse inspect data/sample_clicks.parquet
  arrow-sparse inspect data/sample_clicks.parquet --columns item_ids,categories
  arrow-sparse inspect big.parquet --batch-rows 16384 --no-progress
  arrow-sparse inspect data/sample_clicks.parquet --json | jq '.columns[].length.p99'
  arrow-sparse inspect data/sample_clicks.parquet --plot lengths.png   # needs [plot]
"""


# =================================================================== errors
class _CommandError(Exception):
    """An error to report as one line; ``code`` is the exit status (1 or 2)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


class _UsageError(_CommandError):
    def __init__(self, message: str) -> None:
        super().__init__(message, code=2)


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread while a command runs (see :func:`_sigterm`).

    A KeyboardInterrupt, so that it takes every path Ctrl-C takes: ``finally`` blocks
    remove a half-written output's temporary file, and a Flight server stops serving.
    """


def _raise_terminated(signum: int, frame: Any) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: let the clean-up finish
    raise _Terminated


@contextmanager
def _sigterm() -> Iterator[None]:
    """Handle SIGTERM as SIGINT while the body runs (only on the main thread).

    By default SIGTERM (what ``timeout``, ``kill`` and a container's eviction send)
    ends the process at once, without running ``finally`` blocks, so an interrupted
    ``run`` left its hidden temporary output behind.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


class _ArgumentParser(argparse.ArgumentParser):
    """An ArgumentParser that raises instead of printing usage and exiting."""

    def error(self, message: str) -> NoReturn:
        msg = f"{message} (see '{self.prog} --help')"
        raise _UsageError(msg)


# ===================================================================== main
def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``arrow-sparse`` command line tool.

    Parameters
    ----------
    argv
        Arguments without the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        Exit code: 0 success, 1 the work failed, 2 bad command line, 130 interrupted
        (Ctrl-C), 143 terminated (SIGTERM, handled as Ctrl-C is).
        Errors are printed to stderr as one line ``arrow-sparse: error: ...``
        (after the traceback when ``--debug`` is given).

    Examples
    --------
    >>> main(["--version"])  # doctest: +ELLIPSIS
    arrow-sparse ... (pyarrow ..., numpy ...)
    0
    """
    parser = build_parser()
    debug = False
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help and --version print, then exit
            return exc.code if isinstance(exc.code, int) else 0
        debug = args.debug
        handler: Callable[[argparse.Namespace], int] = args.handler
        with _sigterm():
            return handler(args)
    except _CommandError as exc:
        if debug:
            traceback.print_exc()
        _print_error(str(exc))
        return exc.code
    except _Terminated:
        _print_error("terminated")
        return 143
    except KeyboardInterrupt:
        _print_error("interrupted")
        return 130
    except BrokenPipeError:
        # stdout closed early (e.g. piped to head): stay quiet, as other tools do.
        _silence_stdout()
        return 1
    except Exception as exc:
        if debug:
            traceback.print_exc()
        if isinstance(exc, (ArrowSparseError, OSError, pa.ArrowException,
                            ModuleNotFoundError)):
            notes = getattr(exc, "__notes__", None) or []
            _print_error("; ".join([str(exc), *map(str, notes)]))
        else:
            hint = "" if debug else " (run with --debug for the traceback)"
            _print_error(f"internal error: {exc!r}{hint}")
        return 1


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser of ``arrow-sparse`` with all its subcommands.

    Returns
    -------
    argparse.ArgumentParser
        The parser; each subcommand sets ``handler`` (a function of the parsed
        namespace returning the exit code).

    Examples
    --------
    >>> args = build_parser().parse_args(["inspect", "a.parquet", "--json"])
    >>> args.command, args.file, args.json, args.debug
    ('inspect', 'a.parquet', True, False)
    """
    versions = f"{__version__} (pyarrow {pa.__version__}, numpy {np.__version__})"
    parser = _ArgumentParser(
        prog=PROG,
        description="Inspect and transform jagged, nested and sparse ML features\n"
                    "stored in Apache Arrow / Parquet.",
        epilog=_TOP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {versions}")
    parser.add_argument("--debug", action="store_true",
                        help="show the full traceback of an error")
    # The same flag after the subcommand; SUPPRESS keeps it from resetting the global one.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show the full traceback of an error")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in _COMMANDS:
        add(commands, common)
    return parser


def _print_error(message: str) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


# ================================================================= inspect
def _add_inspect(commands: Any, common: argparse.ArgumentParser) -> None:
    p = commands.add_parser(
        "inspect", parents=[common],
        help="statistics of the list, large_list and map columns of a Parquet file",
        description="Statistics of the jagged columns of a Parquet file, computed by\n"
                    "streaming its record batches row group by row group (bounded memory).",
        epilog=_INSPECT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", metavar="FILE", help="Parquet file to inspect")
    p.add_argument("--columns", metavar="A,B", type=_COLUMN_LIST,
                   help="comma-separated top-level columns to inspect "
                        "(default: every list, large_list and map column)")
    p.add_argument("--batch-rows", metavar="N", type=_positive_int,
                   default=DEFAULT_BATCH_ROWS,
                   help=f"most rows per record batch read (default {DEFAULT_BATCH_ROWS:,}; "
                        "a batch never spans two row groups)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--no-progress", action="store_true",
                   help="never draw the progress bar (it is drawn only on a terminal, "
                        "for runs longer than half a second)")
    p.add_argument("--plot", metavar="IMAGE",
                   help="also draw each column's row-length histogram into IMAGE (.png, "
                        ".svg or .pdf); needs matplotlib: pip install 'arrow-sparse[plot]'")
    p.add_argument("--log", action="store_true",
                   help="with --plot: log-scale the row counts of the length histograms "
                        "(default linear, from zero)")
    p.add_argument("--top", metavar="K", type=_positive_int, default=DEFAULT_TOP,
                   help=f"report the K most frequent values per column (default {DEFAULT_TOP})")
    p.add_argument("--distinct-limit", metavar="N", type=_positive_int,
                   default=DEFAULT_DISTINCT_LIMIT,
                   help="count up to N distinct values per column exactly; past it the "
                        "distinct count is a HyperLogLog estimate (0.81%% standard error) and "
                        "the top values approximate, with their error bound printed "
                        f"(default {DEFAULT_DISTINCT_LIMIT:,})")
    p.set_defaults(handler=_run_inspect)


def _run_inspect(args: argparse.Namespace) -> int:
    if args.columns is not None:  # a bad --columns is a usage error (exit code 2)
        schema = _open_parquet(args.file).schema_arrow
        try:
            _select_columns(args.file, schema, args.columns, arg="--columns")
        except ArrowSparseError as exc:
            raise _UsageError(str(exc)) from exc
    if args.plot is not None:  # fail before the scan when matplotlib is missing
        import_optional("matplotlib", extra="plot")
    progress = Progress(None, label="inspect", enabled=False if args.no_progress else None)
    result = inspect_parquet(args.file, columns=args.columns, batch_rows=args.batch_rows,
                             progress=progress, histograms=args.plot is not None,
                             distinct_limit=args.distinct_limit, top=args.top)
    if args.plot is not None:
        plot_length_histograms(result, args.plot, log=args.log)
        for column in result["columns"]:
            del column["histogram"]
        print(f"wrote {args.plot}", file=sys.stderr)
    if args.json:
        print(json.dumps(result, indent=2, allow_nan=False))
    else:
        print(_format_table(result))
    return 0


# =================================================================== run
_RUN_EPILOG = """\
Streams the input Parquet batch by batch through the pipeline's steps (fitting
stateful steps such as categorify first, in extra passes) and writes the output.
Output format by name: .parquet, .arrow/.ipc/.feather (IPC file), .arrows (IPC
stream), or flight://HOST:PORT to serve the output over Arrow Flight until Ctrl-C
(the real address is printed; port 0 picks a free one). Relative paths inside the
spec are resolved against the spec file's directory; --input/--output against the
current directory. --engine ray runs the fit and the transform on Ray Data (the
cluster of RAY_ADDRESS, else a local one; rows may come out in another order).
--partition-by and --max-rows-per-file make the output a directory of Parquet files
(hive directories col=value/part-N.parquet), written under a temporary name and
renamed when complete; pyarrow, Polars and DuckDB read it as one data set.

examples:
  arrow-sparse run data/example_pipeline.toml
  arrow-sparse run spec.toml --input clicks/ --output features.parquet
  arrow-sparse run spec.toml --output features.arrow --threads 4
  arrow-sparse run spec.toml --output features/ --partition-by day --max-rows-per-file 1000000
  arrow-sparse run spec.toml --output flight://127.0.0.1:8815
  arrow-sparse run spec.toml --output flight://0.0.0.0:8815 --token-file token.txt \
      --tls-cert-file server.crt --tls-key-file server.key   # served to the network
  arrow-sparse run spec.toml --engine ray --output features.parquet   # needs [ray]
  arrow-sparse run spec.toml --save-pipeline fitted/spec.toml --json
"""


def _add_run(commands: Any, common: argparse.ArgumentParser) -> None:
    p = commands.add_parser(
        "run", parents=[common], help="run a feature pipeline spec (TOML) over Parquet",
        description="Run a feature pipeline (a TOML spec) over a Parquet input.",
        epilog=_RUN_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("spec", metavar="SPEC.toml", help="pipeline spec (see docs/pipeline.md)")
    p.add_argument("--input", metavar="PATH", help="Parquet file or directory "
                   "(default: the spec's input)")
    p.add_argument("--output", metavar="PATH|flight://HOST:PORT",
                   help="output file or Flight location (default: the spec's output)")
    p.add_argument("--engine", choices=["local", "ray"], default="local",
                   help="local: this process (default); ray: Ray Data (pip install "
                        "'arrow-sparse[ray]')")
    p.add_argument("--threads", metavar="N", type=_positive_int,
                   help="local engine: batches transformed at once (default: the cores "
                        "available, at most 8)")
    p.add_argument("--batch-rows", metavar="N", type=_positive_int,
                   help="rows per batch (default: the spec's batch_rows, else 65,536)")
    p.add_argument("--save-pipeline", metavar="PATH",
                   help="write the fitted pipeline (spec + vocabularies) to PATH")
    p.add_argument("--partition-by", metavar="A,B", type=_COLUMN_LIST,
                   help="write a directory of Parquet files, in hive directories by "
                        "these output columns")
    p.add_argument("--max-rows-per-file", metavar="N", type=_positive_int,
                   help="write a directory of Parquet files of at most N rows each")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--no-progress", action="store_true", help="never draw the progress bar")
    p.add_argument("--verbose", action="store_true",
                   help="--engine ray: keep Ray's own log lines and its workers' output "
                        "(by default only errors are shown)")
    p.add_argument("--allow-python-steps", action="store_true",
                   help="accept the spec's type = \"python\" steps, which import and run "
                        "the Python code they name (refused by default)")
    flight = p.add_argument_group("Flight output (docs/io.md, 'Securing a server')")
    flight.add_argument("--token-file", metavar="PATH",
                        help="require the bearer token on the first line of PATH (else "
                             "ARROW_SPARSE_FLIGHT_TOKEN, when set)")
    flight.add_argument("--tls-cert-file", metavar="PATH", help="TLS certificate (PEM)")
    flight.add_argument("--tls-key-file", metavar="PATH", help="TLS private key (PEM)")
    p.set_defaults(handler=_run_run)


def _run_run(args: argparse.Namespace) -> int:
    security = {key: getattr(args, key) for key in ("token_file", "tls_cert_file",
                                                    "tls_key_file")
                if getattr(args, key) is not None}
    if security and args.output is not None and \
            not str(args.output).startswith(("flight://", "grpc")):
        msg = "run: --token-file, --tls-cert-file and --tls-key-file need a Flight --output"
        raise ArrowSparseValueError(msg)
    with compile_notice(enabled=False if args.no_progress else None):
        summary = run(args.spec, args.input, args.output, engine=args.engine,
                      batch_rows=args.batch_rows, threads=args.threads,
                      progress=False if args.no_progress else True,
                      save_pipeline=args.save_pipeline, partition_by=args.partition_by,
                      max_rows_per_file=args.max_rows_per_file, verbose=args.verbose,
                      allow_python_steps=args.allow_python_steps,
                      flight_security=security or None)
    print(json.dumps(summary.to_dict(), indent=2) if args.json else str(summary))
    return 0


# ================================================================ schema
_SCHEMA_EPILOG = """\
examples:
  arrow-sparse schema data/sample_clicks.parquet
  arrow-sparse schema data/sample_clicks.parquet --pipeline data/example_pipeline.toml
"""


def _add_schema(commands: Any, common: argparse.ArgumentParser) -> None:
    p = commands.add_parser(
        "schema", parents=[common], help="print the Arrow schema of a Parquet file",
        description="Print the Arrow schema of a Parquet file, or with --pipeline the\n"
                    "schema a pipeline would output for it (no data is read).",
        epilog=_SCHEMA_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", metavar="FILE", help="Parquet file")
    p.add_argument("--pipeline", metavar="SPEC.toml", help="print this pipeline's output schema")
    p.add_argument("--allow-python-steps", action="store_true",
                   help="accept the spec's type = \"python\" steps (their code is run on "
                        "an empty table to find their output schema)")
    p.set_defaults(handler=_run_schema)


def _run_schema(args: argparse.Namespace) -> int:

    schema = _open_parquet(args.file).schema_arrow
    if args.pipeline is not None:
        schema = Pipeline.load(args.pipeline, allow_python_steps=args.allow_python_steps
                               ).output_schema(schema)
    print(schema.remove_metadata().to_string(show_field_metadata=False))
    return 0


# Each entry adds one subcommand.
_COMMANDS: tuple[Callable[[Any, argparse.ArgumentParser], None], ...] = (
    _add_inspect, _add_run, _add_schema, add_warmup)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        msg = f"expected a positive integer, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _format_table(result: dict[str, Any]) -> str:
    size = _human_bytes(result["size_bytes"])
    lines = [f"{result['file']}: {result['rows']:,} rows, {result['row_groups']:,} row "
             f"group{'s' if result['row_groups'] != 1 else ''}, {size}"]
    for col in result["columns"]:
        lines.append("")
        lines.extend(_format_block(col))
    return "\n".join(lines)


def _format_block(col: dict[str, Any]) -> list[str]:
    rows = col["rows"]
    items = "entries" if col["kind"] == "map" else "values"
    length, values = col["length"], col["values"]

    def share(n: int) -> str:
        return f"  ({100 * n / rows:.2f}%)" if rows else ""

    def num(x: Any) -> str:
        return "-" if x is None else str(x)

    counts = [("rows", rows, ""),
              ("null rows", col["null_rows"], share(col["null_rows"])),
              ("empty rows", col["empty_rows"], share(col["empty_rows"])),
              (f"total {items}", col["total_values"], "")]
    heads = ["min", "p50", "p90", "p99", "max", "mean"]
    cells = [num(length[k]) for k in heads[:-1]]
    cells.append("-" if length["mean"] is None else f"{length['mean']:.2f}")
    widths = [max(len(h), len(c)) for h, c in zip(heads, cells, strict=True)]
    which = "key" if values["of"] == "keys" else "value"
    width = max(len(f"{n:,}") for _, n, _ in counts)
    label = 17
    out = [f"{col['name']}  {col['type']}"]
    out += [f"  {name:<{label}}{n:>{width},}{note}" for name, n, note in counts]
    out.append(f"  {'length':<{label}}" + "  ".join(
        h.rjust(w) for h, w in zip(heads, widths, strict=True)))
    out.append(f"  {'':<{label}}" + "  ".join(
        c.rjust(w) for c, w in zip(cells, widths, strict=True)))
    out.append(f"  {which + ' min / max':<{label}}{num(values['min'])} / {num(values['max'])}")
    out.extend(_format_counts(values, which, label))
    return out


def _format_counts(values: dict[str, Any], which: str, label: int) -> list[str]:
    """Return the distinct-count and top-values lines of one level."""
    distinct, top = values.get("distinct"), values.get("top")
    if distinct is None or top is None:
        return [f"  {'distinct ' + which + 's':<{label}}-"]
    if distinct["exact"]:
        out = [f"  {'distinct ' + which + 's':<{label}}{distinct['count']:,}  (exact)"]
    else:
        error = 100 * distinct["relative_standard_error"]
        out = [f"  {'distinct ' + which + 's':<{label}}~{distinct['count']:,}  "
               f"(HyperLogLog estimate, {error:.2f}% standard error)"]
    if not top["values"]:
        return out
    head = f"top {len(top['values'])} {which}s"
    note = "" if top["exact"] else f"  (counts may be low by up to {top['count_error']:,})"
    out.append(f"  {head:<{label}}{which} (count){note}")
    out.extend(f"  {f'  {i}.':<{label}}{v} ({c:,})"
               for i, (v, c) in enumerate(zip(top["values"], top["counts"], strict=True), 1))
    return out


def _human_bytes(n: int) -> str:
    for factor, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if n >= factor:
            return f"{n / factor:.1f} {unit}"
    return f"{n} bytes"


if __name__ == "__main__":
    sys.exit(main())
