"""The :class:`Pipeline`: an ordered list of named steps, fitted by streaming."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import (
    ArrowSparseError,
    ArrowSparseIOError,
    ArrowSparseKeyError,
    ArrowSparseTypeError,
    ArrowSparseValueError,
)
from ..io.parquet import DEFAULT_BATCH_ROWS
from ..transforms import Vocabulary
from . import _toml
from ._filter import did_you_mean
from ._layout import canonical_schema, canonical_table, output_metadata
from ._parallel import ordered_map
from .join import JoinExternal
from .steps import Categorify, EmbeddingBag, Filter, Rename, Select, Step, step_from_dict

__all__ = ["Pipeline"]

_PIPELINE_KEYS = ("input", "output", "batch_rows")


def with_context(exc: BaseException, where: str) -> BaseException:
    """Return ``exc`` with ``where`` in front of its message (the runner and steps use it).

    An :class:`~arrow_sparse.errors.ArrowSparseError` becomes a new exception of the
    same class whose message starts with ``"{where}: "`` (the original is its cause);
    any other exception gets ``where`` as a PEP 678 note (Python 3.11+) and is
    returned as it is. Nothing is added when the message already holds ``where``.

    Examples
    --------
    >>> str(with_context(asp.errors.ArrowSparseValueError("bad ids"), "step 'h' (hash)"))
    "step 'h' (hash): bad ids"
    """
    if where in str(exc):
        return exc
    if isinstance(exc, ArrowSparseError):
        new = type(exc)(f"{where}: {exc}")
        new.__cause__ = exc
        return new
    if hasattr(exc, "add_note"):
        exc.add_note(where)
    return exc


def call_in_context(fn: Any, arg: Any, where: str | None) -> Any:
    """Return ``fn(arg)``; an exception it raises gets ``where`` (see :func:`with_context`).

    Examples
    --------
    >>> call_in_context(len, [1, 2], "the list")
    2
    """
    if where is None:
        return fn(arg)
    try:
        return fn(arg)
    except Exception as exc:
        new = with_context(exc, where)
        if new is exc:
            raise
        raise new from exc


class StateMerger:
    """Merge a stream of partial states of a step pairwise, as a balanced tree.

    Merging each batch's state into one running state costs the size of the running
    state per batch (quadratic for a vocabulary that keeps growing); merging equal
    levels like a binary counter costs ``log(batches)`` merges per entry. For an
    exact merge (vocabulary counts) the result is the same; for moments
    (``normalize``) it is the same to rounding.

    Examples
    --------
    >>> step = asp.pipeline.Categorify("ids")
    >>> merger = StateMerger(step)
    >>> for ids in ([1, 1], [2], [1, 3]):
    ...     merger.add(step.fit_batch(pa.table({"ids": [ids]})))
    >>> merger.result()
    Vocabulary(kind=int64, size=3, values=[1, 2, 3], counts=[3, 1, 1])
    """

    def __init__(self, step: Step) -> None:
        self._merge = step.merge_states
        self._stack: list[tuple[int, Any]] = []

    def __bool__(self) -> bool:
        return bool(self._stack)

    def add(self, state: Any) -> None:
        """Add one partial state."""
        level = 0
        while self._stack and self._stack[-1][0] == level:
            state = self._merge(self._stack.pop()[1], state)
            level += 1
        self._stack.append((level, state))

    def result(self) -> Any:
        """Return the merge of every state added (None when none was)."""
        if not self._stack:
            return None
        state = self._stack[-1][1]
        for _, earlier in reversed(self._stack[:-1]):
            state = self._merge(earlier, state)
        return state


def _tables(items: Iterable[tuple[Any, str | None]],
            progress: Any) -> Iterator[tuple[pa.Table, str | None]]:
    """``(Table, where)`` of each ``(item, where)``, counted on ``progress`` (this thread)."""
    for item, where in items:
        table = _as_table(item)
        if progress is not None:
            progress.update(table.num_rows)
        yield table, where


def located_batches(data: Any, shard: int = 0,
                    num_shards: int = 1) -> Iterator[tuple[pa.RecordBatch, str]]:
    """Batches of a :class:`~arrow_sparse.io.ParquetBatches` with where each comes from.

    Parameters
    ----------
    data
        The Parquet stream.
    shard, num_shards
        Only the row groups of this shard (see ``ParquetBatches.iter_with_location``).

    Yields
    ------
    tuple of (pyarrow.RecordBatch, str)
        The batch and ``"input 'PATH', row group G, rows A-B of the group"``, the
        prefix of an error raised while processing it.

    Examples
    --------
    >>> for batch, where in located_batches(asp.io.read_parquet(
    ...         "data/sample_clicks.parquet", batch_rows=10_000)):
    ...     break
    >>> where
    "input 'data/sample_clicks.parquet', row group 0, rows 0-9,999 of the group"
    """
    group: tuple[str, int | None] | None = None
    row = 0
    for batch, path, row_group in data.iter_with_location(shard, num_shards):
        if (path, row_group) != group:
            group, row = (path, row_group), 0
        where = f"input {path!r}"
        if row_group is not None:
            where += f", row group {row_group}"
        where += f", rows {row:,}-{row + batch.num_rows - 1:,} of the group"
        row += batch.num_rows
        yield batch, where


def _as_table(item: Any) -> pa.Table:
    if isinstance(item, pa.Table):
        return item
    if isinstance(item, pa.RecordBatch):
        return pa.Table.from_batches([item])
    msg = f"Pipeline: expected a pyarrow Table or RecordBatch, got {type(item).__name__}"
    raise ArrowSparseTypeError(msg)


class Pipeline:
    """An ordered list of named feature steps over the columns of Arrow tables.

    Parameters
    ----------
    steps
        :class:`~arrow_sparse.pipeline.steps.Step` objects or their spec dicts
        (``{"type": "hash_bucket", "column": ..., ...}``). Unnamed steps are named
        ``<type>_<position>``; names must be unique.
    input, output
        Default input Parquet path and output path of :func:`~arrow_sparse.pipeline.run`.
    batch_rows
        Default rows per batch of the runner.
    base_dir
        Directory that relative paths (input, output, embedding tables) are resolved
        against: the spec file's directory for :meth:`load`, else the current one.
    allow_python_steps
        Accept spec dicts of ``type = "python"``, which run Python code
        (:func:`~arrow_sparse.pipeline.register_step`); refused by default.

    Examples
    --------
    >>> pipe = asp.Pipeline([
    ...     {"type": "categorify", "column": "ids"},
    ...     {"type": "reduce", "column": "ids", "op": "length", "output": "n"},
    ...     {"type": "pad", "column": "ids", "length": 2},
    ... ])
    >>> t = pa.table({"ids": pa.array([[5, 6, 5], [], None])})
    >>> pipe.fit([t]).transform_table(t).to_pylist()
    [{'ids': [2, 3], 'n': 3}, {'ids': [0, 0], 'n': 0}, {'ids': None, 'n': None}]
    >>> pipe.output_schema(t.schema)
    ids: fixed_size_list<item: int64>[2]
      child 0, item: int64
    n: int64
    """

    def __init__(self, steps: Sequence[Step | dict[str, Any]], *, input: str | None = None,
                 output: str | None = None, batch_rows: int | None = None,
                 base_dir: str | None = None, allow_python_steps: bool = False) -> None:
        if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence):
            msg = f"Pipeline: steps must be a list, got {type(steps).__name__}"
            raise ArrowSparseTypeError(msg)
        built: list[Step] = []
        for i, s in enumerate(steps):
            step = s if isinstance(s, Step) else step_from_dict(
                s, where=f"steps[{i}]", allow_python_steps=allow_python_steps)
            if step.name is None:
                step.name = f"{step.type}_{i}"
            built.append(step)
        names = [s.name for s in built]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            msg = f"Pipeline: step names must be unique; repeated: {', '.join(dup)}"
            raise ArrowSparseValueError(msg)
        self.steps = built
        self.input = input
        self.output = output
        self.batch_rows = batch_rows
        self.base_dir = base_dir
        for step in built:
            if step.base_dir is None:
                step.base_dir = base_dir

    def __repr__(self) -> str:
        inner = ", ".join(repr(s) for s in self.steps)
        return f"Pipeline([{inner}])"

    def __getitem__(self, name: str) -> Step:
        """Return the step called ``name``."""
        for s in self.steps:
            if s.name == name:
                return s
        names = [str(s.name) for s in self.steps]
        msg = (f"Pipeline: no step {name!r}{did_you_mean(name, names) or ';'} the steps are: "
               f"{', '.join(names)}")
        raise ArrowSparseKeyError(msg)

    @property
    def fitted(self) -> bool:
        """Whether every stateful step is fitted."""
        return all(s.fitted for s in self.steps)

    def resolve(self, path: str | None) -> str | None:
        """Resolve a spec path against :attr:`base_dir` (absolute paths unchanged)."""
        if path is None:
            return None
        path = os.path.expanduser(path)
        if os.path.isabs(path) or self.base_dir is None or "://" in path:
            return path
        return os.path.normpath(os.path.join(self.base_dir, path))

    # ------------------------------------------------------------------ fit
    def fit(self, data: Any, *, refit: bool = False, progress: Any = None,
            threads: int = 1) -> Pipeline:
        """Fit the stateful steps by streaming batches and merging their states.

        Each stateful step is fitted on the output of the steps before it, one pass
        over ``data`` per stateful step (so ``data`` must be re-iterable when there
        are several: a list, a path, a :class:`~arrow_sparse.io.ParquetBatches`).

        Parameters
        ----------
        data
            A Table or RecordBatch; an iterable of them; or Parquet input: a path, a
            list of paths or a ``pyarrow.dataset.Dataset``, streamed with
            :func:`~arrow_sparse.io.read_parquet` (:attr:`batch_rows` rows per batch).
        refit
            Refit steps that are already fitted (default: keep their state).
        progress
            Optional object with ``update(rows)``, called per batch read (in every
            pass: a pass per stateful step).
        threads
            Batches whose partial states are computed at once (on threads; the
            merge is in batch order, so the result does not depend on it).

        Returns
        -------
        Pipeline
            ``self``.

        Raises
        ------
        TypeError
            ``data`` of another kind, or a one-shot iterator when several passes are
            needed.
        ValueError
            No batches to fit on.

        Examples
        --------
        >>> pipe = asp.Pipeline([{"type": "categorify", "column": "ids"}])
        >>> t = pa.table({"ids": pa.array([[4, 4], [9]])})
        >>> pipe.fit([t.slice(0, 1), t.slice(1)])["categorify_0"].vocabulary.num_ids
        4
        """
        from ..io import ParquetBatches

        data = self._fit_source(data)
        # The spec is checked against the input schema before any pass over the data.
        if isinstance(data, ParquetBatches):
            self.output_schema(data.schema)
        elif isinstance(data, (list, tuple)) and data \
                and isinstance(data[0], (pa.Table, pa.RecordBatch)):
            self.output_schema(data[0].schema)
        if isinstance(data, ParquetBatches):
            self._fit(lambda columns: located_batches(data.with_columns(
                [c for c in data.schema.names if c in columns])), refit=refit,
                progress=progress, threads=threads, one_shot=False)
        else:
            self._fit(lambda columns: ((item, None) for item in data), refit=refit,
                      progress=progress, threads=threads, one_shot=iter(data) is data)
        return self

    def passes(self, refit: bool = False) -> int:
        """Count the passes over the data :meth:`fit` will make: one per stateful step to fit.

        Examples
        --------
        >>> asp.Pipeline([{"type": "categorify", "column": "ids"}]).passes()
        1
        """
        return sum(1 for s in self.steps if s.stateful and (refit or not s.fitted))

    def _fit(self, items: Any, *, refit: bool, progress: Any, threads: int,
             one_shot: bool) -> None:
        """Fit from ``items(columns)``: a fresh iterator of ``(table or batch, where)`` per pass.

        ``columns`` is the set of input columns the pass needs (a reader may read
        only those); ``where`` (or None) names the batch's origin in error messages.
        """
        todo = [i for i, s in enumerate(self.steps) if s.stateful and (refit or not s.fitted)]
        if len(todo) > 1 and one_shot:
            msg = ("Pipeline.fit: several stateful steps need several passes over the "
                   "data; pass a re-iterable (a list or read_parquet(...)), not an "
                   "iterator")
            raise ArrowSparseTypeError(msg)
        for i in todo:
            step = self.steps[i]

            before, columns = self._fit_plan(i)

            def partial_state(table: pa.Table, step: Step = step,
                              before: list[Step] = before) -> Any:
                table = self._apply(before, table)
                return call_in_context(step.fit_batch, table, step.label)

            def partial(item: tuple[pa.Table, str | None]) -> Any:
                return call_in_context(partial_state, item[0], item[1])

            merger = StateMerger(step)
            for part in ordered_map(partial, _tables(items(columns), progress), threads):
                merger.add(part)
            if not merger:
                msg = f"Pipeline.fit: no batches to fit {step.label} on"
                raise ArrowSparseValueError(msg)
            step.set_state(merger.result())

    def _fit_source(self, data: Any) -> Any:
        import pyarrow.dataset as ds

        from ..io import read_parquet

        if isinstance(data, (pa.Table, pa.RecordBatch)):
            return [data]
        if isinstance(data, (str, os.PathLike, ds.Dataset)) or (
                isinstance(data, (list, tuple)) and data
                and all(isinstance(p, (str, os.PathLike)) for p in data)):
            return read_parquet(data, batch_rows=self.batch_rows or DEFAULT_BATCH_ROWS)
        if isinstance(data, (bytes, dict)) or not hasattr(data, "__iter__"):
            msg = ("Pipeline.fit: data must be a Table, a RecordBatch, an iterable of them, "
                   "or a Parquet path, list of paths or pyarrow dataset, got "
                   f"{type(data).__name__}")
            raise ArrowSparseTypeError(msg)
        return data

    # ------------------------------------------------------------ transform
    def transform_table(self, table: pa.Table | pa.RecordBatch) -> pa.Table:
        """Apply every step to one table.

        Parameters
        ----------
        table
            A ``pyarrow.Table`` or ``RecordBatch``.

        Returns
        -------
        pyarrow.Table

        Raises
        ------
        ArrowSparseError
            What a step raises, its message prefixed with the step's label
            (``step 'NAME' (TYPE): ...``) when it does not name the step already.

        Examples
        --------
        >>> pipe = asp.Pipeline([{"type": "select", "columns": ["b"]}])
        >>> pipe.transform_table(pa.table({"a": [1], "b": [2]})).to_pylist()
        [{'b': 2}]
        """
        out = self._apply(self.steps, _as_table(table))
        metadata = out.schema.metadata
        if metadata and metadata != output_metadata(metadata):
            out = out.replace_schema_metadata(output_metadata(metadata))
        return out

    @staticmethod
    def _apply(steps: Sequence[Step], table: pa.Table) -> pa.Table:
        table = canonical_table(table)  # one layout whatever wrote the input
        for step in steps:
            table = call_in_context(step.transform, table, step.label)
        return table

    def transform_batches(self, batches: Iterable[Any], *,
                          threads: int = 1) -> Iterator[pa.RecordBatch]:
        """Transform a stream of batches lazily, in order.

        Parameters
        ----------
        batches
            Iterable of Tables or RecordBatches.
        threads
            Batches transformed at once, on threads (the kernels release the GIL);
            at most ``2 * threads`` batches are read ahead. Output order is input order.

        Yields
        ------
        pyarrow.RecordBatch
            One batch per input batch (a filter may leave some empty; they are kept).

        Examples
        --------
        >>> pipe = asp.Pipeline([{"type": "filter", "expr": "a > 1"}])
        >>> t = pa.table({"a": [1, 2, 3]})
        >>> [b.num_rows for b in pipe.transform_batches([t.slice(0, 1), t.slice(1)])]
        [0, 2]
        """
        yield from ordered_map(self.transform_batch, batches, threads)

    def transform_batch(self, batch: pa.Table | pa.RecordBatch) -> pa.RecordBatch:
        """Transform one batch into one contiguous ``RecordBatch`` (rows may be filtered out).

        Examples
        --------
        >>> pipe = asp.Pipeline([{"type": "reduce", "column": "ids", "op": "sum"}])
        >>> pipe.transform_batch(pa.table({"ids": [[1, 2], [3]]})).to_pylist()
        [{'ids': 3}, {'ids': 3}]
        """
        out = self.transform_table(batch).combine_chunks()
        parts = out.to_batches()
        return parts[0] if parts else pa.RecordBatch.from_pylist([], schema=out.schema)

    def input_columns(self, input_schema: pa.Schema) -> list[str]:
        """Return the columns of ``input_schema`` the pipeline reads or passes to its output.

        What a runner needs to read: columns no step reads and a ``select`` drops
        are left out (their pages are never decoded).

        Parameters
        ----------
        input_schema
            The schema of the input.

        Returns
        -------
        list of str
            Column names, in the input's order.

        Examples
        --------
        >>> pipe = asp.Pipeline([{"type": "reduce", "column": "ids", "op": "length",
        ...                       "output": "n"}, {"type": "select", "columns": ["n", "y"]}])
        >>> pipe.input_columns(pa.schema({"ids": pa.list_(pa.int64()), "x": pa.int8(),
        ...                               "y": pa.int8()}))
        ['ids', 'y']
        """
        origin: dict[str, str | None] = {name: name for name in input_schema.names}
        need: set[str] = set()
        for step in self.steps:
            if step.opaque:  # may read any column alive at this point
                need.update(o for o in origin.values() if o is not None)
            need.update(o for c in step.input_columns() if (o := origin.get(c)) is not None)
            if isinstance(step, Select):
                origin = {c: origin.get(c) for c in step.columns}
            elif isinstance(step, Rename):
                origin = {step.columns.get(n, n): o for n, o in origin.items()}
            for c in step.output_columns():
                origin[c] = None
        need.update(o for o in origin.values() if o is not None)
        return [name for name in input_schema.names if name in need]

    def _fit_plan(self, index: int) -> tuple[list[Step], set[str]]:
        """Return the steps before step ``index`` its fit needs, and the input columns they read.

        Walks back from the step's input columns: a step is kept when it writes a
        needed column, filters rows, or renames; ``select`` and steps writing
        nothing needed are skipped (they cannot change the needed columns' rows).
        """
        if any(step.opaque for step in self.steps[:index]):  # unknown columns: run them all
            return list(self.steps[:index]), _AllColumns()
        need = set(self.steps[index].input_columns())
        kept: list[Step] = []
        for step in reversed(self.steps[:index]):
            writes = set(step.output_columns())
            if writes & need:
                need = (need - writes) | set(step.input_columns())
            elif isinstance(step, Filter):
                need |= set(step.input_columns())
            elif isinstance(step, Rename):
                back = {new: old for old, new in step.columns.items()}
                need = {back.get(n, n) for n in need} | set(step.columns)
            else:
                continue
            kept.append(step)
        return kept[::-1], need

    def output_schema(self, input_schema: pa.Schema) -> pa.Schema:
        """Return the output schema for input of ``input_schema`` (no data is read).

        The input's lists, strings and binaries are taken with 64-bit offsets first
        (``large_list``, ``large_string``), as every batch is before the steps run,
        so the result depends on the spec and the input's logical types only, not on
        the program that wrote the input (see ``arrow_sparse.pipeline._layout``);
        the input's pandas metadata is left out.

        Every step's input types are checked here: :func:`~arrow_sparse.pipeline.run`,
        :meth:`fit` and ``arrow-sparse schema --pipeline`` call it before reading any
        data, so a spec that cannot run fails at once.

        Raises
        ------
        KeyError
            A step names a column that does not exist at that point (the message
            suggests the closest name).
        TypeError
            A column of the wrong type for its step (``hash_bucket`` on floats,
            ``embedding_bag`` on strings, a filter comparing a string with a number).

        Examples
        --------
        >>> pipe = asp.Pipeline([{"type": "hash_bucket", "column": "scores",
        ...                       "num_buckets": 8, "name": "h"}])
        >>> try:
        ...     pipe.output_schema(pa.schema({"scores": pa.list_(pa.float32())}))
        ... except TypeError as exc:
        ...     print(str(exc)[:80])
        step 'h' (hash_bucket): column 'scores' must hold integers or strings (or lists
        """
        schema = canonical_schema(input_schema)
        for step in self.steps:
            schema = call_in_context(step.output_schema, schema, step.label)
        return schema.with_metadata(output_metadata(schema.metadata))

    def pushdown_filter(self, input_schema: pa.Schema) -> pc.Expression | None:
        """Return the condition a reader can apply for the pipeline's filters, or None.

        The filters that come before every stateful step and read only input columns
        no earlier step wrote or renamed keep the same rows when applied while
        reading. Given to :func:`~arrow_sparse.io.read_parquet` as ``filter``, their
        conjunction skips the row groups whose statistics rule it out and the rows it
        drops; the filter steps still run (on rows they all keep).

        Examples
        --------
        >>> pipe = asp.Pipeline([{"type": "filter", "expr": "label == 1"},
        ...                      {"type": "reduce", "column": "ids", "op": "length",
        ...                       "output": "n"},
        ...                      {"type": "filter", "expr": "n > 2"}])
        >>> pipe.pushdown_filter(pa.schema({"label": pa.int8(), "ids": pa.list_(pa.int64())}))
        <pyarrow.compute.Expression (label == 1)>
        """
        found: list[pc.Expression] = []
        touched: set[str] = set()
        for step in self.steps:
            if step.stateful or step.opaque:
                break
            if isinstance(step, Filter):
                if not touched & set(step.input_columns()):
                    found.append(step.expression(input_schema))
                continue
            if isinstance(step, Rename):
                touched |= set(step.columns) | set(step.columns.values())
            touched |= set(step.output_columns())
        if not found:
            return None
        out = found[0]
        for more in found[1:]:
            out = pc.and_kleene(out, more)
        return out

    # ------------------------------------------------------------- spec I/O
    def to_dict(self) -> dict[str, Any]:
        """Return the spec as a dict: ``{"pipeline": {...}, "steps": [...]}`` (no fitted state)."""
        head = {"input": self.input, "output": self.output, "batch_rows": self.batch_rows}
        return {"pipeline": {k: v for k, v in head.items() if v is not None},
                "steps": [s.to_dict() for s in self.steps]}

    @classmethod
    def from_dict(cls, spec: dict[str, Any], *, base_dir: str | None = None,
                  source: str = "spec", allow_python_steps: bool = False) -> Pipeline:
        """Build a pipeline from a spec dict (the parsed TOML).

        Categorify entries with ``vocabulary = "FILE"`` load that fitted vocabulary.
        ``type = "python"`` entries are refused unless ``allow_python_steps``.
        """
        if not isinstance(spec, dict):
            msg = f"{source}: expected a table, got {type(spec).__name__}"
            raise ArrowSparseTypeError(msg)
        unknown = sorted(set(spec) - {"pipeline", "steps"}, key=str)
        if unknown:
            hint = "".join(did_you_mean(k, ("pipeline", "steps")) for k in unknown)
            msg = (f"{source}: unknown top-level key(s) {', '.join(map(repr, unknown))}"
                   f"{hint or ';'} expected [pipeline] and [[steps]]")
            raise ArrowSparseValueError(msg)
        head = spec.get("pipeline", {})
        bad = sorted(set(head) - set(_PIPELINE_KEYS), key=str)
        if bad:
            hint = "".join(did_you_mean(k, _PIPELINE_KEYS) for k in bad)
            msg = (f"{source}: unknown [pipeline] key(s) {', '.join(map(repr, bad))}"
                   f"{hint or ';'} allowed: {', '.join(_PIPELINE_KEYS)}")
            raise ArrowSparseValueError(msg)
        entries = spec.get("steps")
        if not isinstance(entries, list) or not entries:
            msg = f"{source}: no [[steps]]; a pipeline needs at least one step"
            raise ArrowSparseValueError(msg)
        steps: list[Step] = []
        for i, entry in enumerate(entries):
            entry = dict(entry) if isinstance(entry, dict) else entry
            vocab_file = entry.pop("vocabulary", None) if isinstance(entry, dict) else None
            step = step_from_dict(entry, where=f"{source}: steps[{i}]",
                                  allow_python_steps=allow_python_steps)
            step.base_dir = base_dir
            if vocab_file is not None:
                if not isinstance(step, Categorify):
                    msg = f"{source}: steps[{i}] ({step.type}): unknown key 'vocabulary'"
                    raise ArrowSparseValueError(msg)
                step.vocabulary = Vocabulary.load(step._resolve(str(vocab_file)))
            steps.append(step)
        return cls(steps, input=head.get("input"), output=head.get("output"),
                   batch_rows=head.get("batch_rows"), base_dir=base_dir)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *,
             allow_python_steps: bool = False) -> Pipeline:
        """Read a TOML spec (and the fitted state files it names).

        Relative paths in the spec are resolved against the spec file's directory.
        Steps of ``type = "python"`` are refused unless ``allow_python_steps``: a
        spec must not run or import code by surprise.

        Examples
        --------
        >>> pipe = asp.Pipeline.load("data/example_pipeline.toml")
        >>> [s.type for s in pipe.steps][:2]
        ['filter', 'reduce']
        """
        if not isinstance(path, (str, os.PathLike)):
            msg = f"Pipeline.load: path must be a str or path, got {type(path).__name__}"
            raise ArrowSparseTypeError(msg)
        path = os.fspath(path)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError as exc:
            msg = f"pipeline spec not found: {path}"
            raise ArrowSparseValueError(msg) from exc
        except UnicodeDecodeError as exc:
            msg = f"Pipeline.load: {path!r} is not a TOML spec (not UTF-8 text: {exc.reason})"
            raise ArrowSparseValueError(msg) from exc
        except OSError as exc:  # a directory, no permission
            msg = f"Pipeline.load: cannot read the spec {path!r} ({exc.strerror or exc})"
            raise ArrowSparseIOError(msg) from exc
        spec = _toml.loads(text, source=path)
        return cls.from_dict(spec, base_dir=os.path.dirname(os.path.abspath(path)),
                             source=path, allow_python_steps=allow_python_steps)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the spec as TOML, and each fitted vocabulary as Parquet next to it.

        A fitted Categorify step ``NAME`` is saved as ``<spec stem>.NAME.vocab.parquet``
        and named by its ``vocabulary`` key, so :meth:`load` gives back a fitted
        pipeline with identical output. Relative paths are rewritten to stay valid
        from the new file's directory.
        """
        path = os.fspath(path)
        out_dir = os.path.dirname(os.path.abspath(path))
        stem = os.path.splitext(os.path.basename(path))[0]
        doc = self.to_dict()
        for key in ("input", "output"):
            if key in doc["pipeline"]:
                doc["pipeline"][key] = _rebase(self.resolve(doc["pipeline"][key]), out_dir)
        for step, entry in zip(self.steps, doc["steps"], strict=True):
            if isinstance(step, EmbeddingBag):
                entry["table"] = _rebase(step._resolve(step.table), out_dir)
            if isinstance(step, JoinExternal):
                entry["path"] = _rebase(step._resolve(step.path), out_dir)
            if isinstance(step, Categorify) and step.vocabulary is not None:
                name = f"{stem}.{step.name}.vocab.parquet"
                step.vocabulary.save(os.path.join(out_dir, name))
                entry["vocabulary"] = name
        with open(path, "w", encoding="utf-8") as f:
            f.write(_toml.dumps(doc))


class _AllColumns(frozenset):
    """The columns of a fitting pass that runs a step of unknown columns: every column."""

    def __contains__(self, name: object) -> bool:
        return True


def _rebase(path: str | None, out_dir: str) -> str | None:
    if path is None or "://" in path:
        return path
    if not os.path.isabs(path):
        path = os.path.abspath(path)
    try:
        return os.path.relpath(path, out_dir)
    except ValueError:  # another drive on Windows
        return path
