"""A torch data loader: sharded, shuffled, prefetched batches of jagged features from Arrow.

:class:`SparseDataset` is a ``torch.utils.data.IterableDataset`` over Parquet files,
directories or data sets, Arrow IPC files, an in-memory Table, or an Arrow Flight
endpoint. It applies a fitted :class:`~arrow_sparse.Pipeline` (or none) and yields one
:class:`Batch` per ``batch_size`` rows: the list columns as a
:class:`~arrow_sparse.KeyedJagged`, as TorchRec's ``KeyedJaggedTensor`` (keys, values,
lengths, weights), or as padded tensors with lengths; the dense columns as a dict of
tensors. :func:`make_loader` wraps it in a ``torch.utils.data.DataLoader`` with workers
and, for a CUDA device, copies each batch to the device on its own stream while the
next one is prepared. ``docs/loader.md`` shows how to use it and what is copied.

torch is imported on first use: importing this module does not import it (the class
that subclasses ``IterableDataset`` is built on first access, as
:class:`~arrow_sparse.interop.torch.EmbeddingBag` is).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from .. import _arrow
from .. import _validate as v
from .._optional import import_optional
from ..errors import ArrowSparseKeyError, ArrowSparseTypeError, ArrowSparseValueError
from ..io import ParquetBatches, flight_batches, read_ipc, read_parquet, shard_ticket
from ..keyed import KeyedJagged
from ..pipeline import Pipeline
from ..pipeline._parallel import background
from ..pipeline.steps import Filter
from ._common import torch_tensor, type_name

# SparseDataset subclasses torch's IterableDataset: module __getattr__ builds it on
# first access, so that importing this module does not import torch.
__all__ = ["Batch", "PaddedFeature", "SparseDataset", "make_loader", "plan_rows",  # noqa: F822
           "ray_collate"]

OUTPUTS = ("keyed", "torchrec", "padded")
_IPC_SUFFIXES = (".arrow", ".feather", ".ipc", ".arrows")


class PaddedFeature(NamedTuple):
    """One feature of a batch with ``output="padded"``."""

    values: Any
    """``[rows, L]`` tensor, the rows padded with ``pad_value`` (or truncated) to ``L``."""
    lengths: Any
    """``[rows]`` int64 tensor: each row's length before padding (capped at ``L``)."""


class Batch(NamedTuple):
    """What :class:`SparseDataset` yields: one batch of rows."""

    features: Any
    """The list columns: a KeyedJagged (``output="keyed"``), ``KeyedJagged.to_torchrec()``
    (``"torchrec"``: a ``torchrec.KeyedJaggedTensor``, or TorchRecInputs without
    TorchRec), or ``{key: PaddedFeature}`` (``"padded"``); None with no list columns."""
    dense: dict[str, Any]
    """``{column: tensor}`` of the dense columns (``[rows]``, or ``[rows, D]`` for a
    fixed-size list column)."""
    num_rows: int
    """Rows in the batch: ``batch_size``, except the last of a shard's rows."""

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle the batch's host tensors as one buffer (see :func:`_pack`)."""
        return _pack(self)


# ----------------------------------------------------------------------------- sources
class _Source:
    """Where the rows come from. Sized sources are cut into units of known row counts."""

    sized = True
    schema: pa.Schema

    def unit_rows(self) -> list[int]:
        raise NotImplementedError

    def read(self, unit: int) -> pa.Table:
        raise NotImplementedError

    def stream(self, shard: int, num_shards: int) -> Iterator[pa.RecordBatch]:
        raise NotImplementedError


class _ParquetSource(_Source):
    """Row groups of Parquet files: each is read on its own (only the columns needed)."""

    def __init__(self, batches: ParquetBatches) -> None:
        self.batches = batches
        self.schema = batches.schema
        self._groups: list[Any] | None = None

    def select(self, names: list[str]) -> None:
        self.batches = self.batches.with_columns(names)
        self.schema = self.batches.schema

    def _all(self) -> list[Any]:
        if self._groups is None:
            self._groups = self.batches.row_groups()
        return self._groups

    def unit_rows(self) -> list[int]:
        return [g.num_rows for g in self._all()]

    def read(self, unit: int) -> pa.Table:
        return self.batches.read_row_group(self._all()[unit])

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_groups": None}  # fragments are listed again in a worker


class _TableSource(_Source):
    """Record batches of Tables: in memory, or memory-mapped Arrow IPC files."""

    def __init__(self, tables: list[pa.Table] | None, paths: list[str] | None) -> None:
        self.paths = paths
        self._tables = tables
        self._batches: list[pa.RecordBatch] | None = None
        self.schema = self._all_tables()[0].schema if tables or paths else pa.schema([])
        self._names: list[str] | None = None

    def _all_tables(self) -> list[pa.Table]:
        if self._tables is None:
            self._tables = [read_ipc(p) for p in self.paths or []]
            first = self._tables[0].schema
            for path, table in zip(self.paths or [], self._tables, strict=True):
                if not table.schema.equals(first):
                    msg = (f"SparseDataset: IPC file {path!r} has schema {table.schema}, "
                           f"which differs from the first file's {first}")
                    raise ArrowSparseTypeError(msg)
        return self._tables

    def select(self, names: list[str]) -> None:
        self._names = names
        self.schema = pa.schema([self.schema.field(n) for n in names], self.schema.metadata)

    def _all(self) -> list[pa.RecordBatch]:
        if self._batches is None:
            self._batches = [b for t in self._all_tables() for b in t.to_batches() if b.num_rows]
        return self._batches

    def unit_rows(self) -> list[int]:
        return [b.num_rows for b in self._all()]

    def read(self, unit: int) -> pa.Table:
        batch = self._all()[unit]
        if self._names is not None:
            batch = batch.select(self._names)
        return pa.Table.from_batches([batch])

    def __getstate__(self) -> dict[str, Any]:
        state = {**self.__dict__, "_batches": None}
        if self.paths is not None:  # a worker maps the files itself
            state["_tables"] = None
        return state


class _FlightSource(_Source):
    """A ``serve_flight`` endpoint: the server splits the rows into shards (by rows)."""

    sized = False

    def __init__(self, location: str, options: dict[str, Any]) -> None:
        self.location = location
        self.options = options
        self._names: list[str] | None = None
        with flight_batches(location, shard_ticket(0, 1), **options) as probe:
            self.schema = probe.schema

    def select(self, names: list[str]) -> None:
        self._names = names
        self.schema = pa.schema([self.schema.field(n) for n in names], self.schema.metadata)

    def stream(self, shard: int, num_shards: int) -> Iterator[pa.RecordBatch]:
        with flight_batches(self.location, shard_ticket(shard, num_shards),
                            **self.options) as batches:
            for batch in batches:
                yield batch if self._names is None else batch.select(self._names)


def _open_source(func: str, source: Any, source_format: str | None,
                 flight_options: Mapping[str, Any] | None) -> _Source:
    import pyarrow.dataset as ds

    if source_format not in (None, "parquet", "ipc", "flight"):
        msg = f"{func}: source_format must be 'parquet', 'ipc', 'flight' or None, got " \
              f"{source_format!r}"
        raise ArrowSparseValueError(msg)
    if isinstance(source, ParquetBatches):
        return _ParquetSource(source)
    if isinstance(source, ds.Dataset):
        return _ParquetSource(read_parquet(source))
    if isinstance(source, (pa.Table, pa.RecordBatch)):
        table = pa.Table.from_batches([source]) if isinstance(source, pa.RecordBatch) else source
        return _TableSource([table], None)
    text = [os.fspath(p) for p in source] if isinstance(source, (list, tuple)) else \
        os.fspath(source) if isinstance(source, (str, os.PathLike)) else None
    if text is None:
        msg = (f"{func}: source must be a path, a list of paths, a Flight location, a "
               f"ParquetBatches, a pyarrow Dataset or a Table, got {type_name(source)}")
        raise ArrowSparseTypeError(msg)
    kind = source_format
    if kind is None:
        first = text[0] if isinstance(text, list) and text else text
        kind = "flight" if isinstance(first, str) and first.startswith("grpc") else \
            "ipc" if isinstance(first, str) and first.lower().endswith(_IPC_SUFFIXES) \
            else "parquet"
    if kind == "flight":
        if not isinstance(text, str):
            msg = f"{func}: a Flight source is one location string, got {type_name(source)}"
            raise ArrowSparseTypeError(msg)
        return _FlightSource(text, dict(flight_options or {}))
    if flight_options is not None:
        msg = f"{func}: flight_options apply to a Flight source only"
        raise ArrowSparseValueError(msg)
    if kind == "ipc":
        paths = text if isinstance(text, list) else [text]
        if not paths:
            msg = f"{func}: source is an empty list of IPC files"
            raise ArrowSparseValueError(msg)
        return _TableSource(None, paths)
    return _ParquetSource(read_parquet(text))


# ------------------------------------------------------------------------------ plans
def plan_rows(unit_rows: Sequence[int], *, rank: int = 0, world_size: int = 1,
              worker: int = 0, num_workers: int = 1, batch_size: int = 1,
              drop_last: bool = False, order: Sequence[int] | None = None,
              ) -> list[tuple[int, int, int]]:
    """Return the rows one DataLoader worker of one rank reads: ``[(unit, start, stop)]``.

    The units (row groups, record batches), taken in ``order``, are laid end to end;
    rank ``r`` of ``world_size`` gets the ``r``-th of ``world_size`` consecutive row
    ranges of equal size (they differ by at most one row; with ``drop_last`` each gets
    exactly ``total // world_size`` rows, so every rank makes the same number of full
    batches). A rank's rows are cut into batches of ``batch_size``; worker ``w`` of
    ``num_workers`` gets a consecutive run of whole batches (the runs differ by at most
    one batch), and the last worker also the last, partial batch (dropped with
    ``drop_last``). So every row is read by exactly one worker of one rank, and every
    batch but a rank's last is full.

    Parameters
    ----------
    unit_rows
        Rows in each unit.
    rank, world_size
        This process's place among the data-parallel processes.
    worker, num_workers
        This DataLoader worker's place among the rank's workers.
    batch_size
        Rows per batch.
    drop_last
        Leave out the rows of each rank that do not fill a batch, and the rows past
        ``world_size * (total // world_size)``.
    order
        The units' order (a permutation of their indices); default their own order.

    Returns
    -------
    list of (int, int, int)
        ``(unit, start, stop)``: rows ``start:stop`` of unit ``unit``, in reading order.

    Raises
    ------
    ValueError
        A rank or worker out of its range, a batch size of 0, an order that is not a
        permutation of the units.

    Examples
    --------
    Row groups of 5, 3 and 4 rows, two ranks, batches of 2 rows:

    >>> from arrow_sparse.interop.torch_data import plan_rows
    >>> plan_rows([5, 3, 4], rank=0, world_size=2, batch_size=2)
    [(0, 0, 5), (1, 0, 1)]
    >>> plan_rows([5, 3, 4], rank=1, world_size=2, batch_size=2, num_workers=2, worker=1)
    [(2, 0, 4)]
    """
    func = "plan_rows"
    sizes = [v.check_count(func, "unit_rows", n) for n in unit_rows]
    world_size = v.check_positive_count(func, "world_size", world_size)
    num_workers = v.check_positive_count(func, "num_workers", num_workers)
    batch_size = v.check_positive_count(func, "batch_size", batch_size)
    rank = _below(func, "rank", rank, world_size)
    worker = _below(func, "worker", worker, num_workers)
    order = list(range(len(sizes))) if order is None else [int(i) for i in order]
    if sorted(order) != list(range(len(sizes))):
        msg = f"{func}: order must be a permutation of the {len(sizes)} units"
        raise ArrowSparseValueError(msg)
    total = sum(sizes)
    if drop_last:
        each = total // world_size
        first, last = rank * each, (rank + 1) * each
    else:
        first, last = total * rank // world_size, total * (rank + 1) // world_size
    full = (last - first) // batch_size
    lo = first + batch_size * (full * worker // num_workers)
    hi = first + batch_size * (full * (worker + 1) // num_workers)
    if worker == num_workers - 1 and not drop_last:
        hi = last
    plan = []
    at = 0
    for unit in order:
        start, stop = max(lo - at, 0), min(hi - at, sizes[unit])
        if start < stop:
            plan.append((unit, start, stop))
        at += sizes[unit]
    return plan


def _below(func: str, arg: str, x: Any, n: int) -> int:
    i = v.check_count(func, arg, x)
    if i >= n:
        msg = f"{func}: {arg} must be in [0, {n}), got {i}"
        raise ArrowSparseValueError(msg)
    return i


# ---------------------------------------------------------------------------- dataset
class _SparseDatasetBase:
    """The loader's logic; :class:`SparseDataset` adds torch's IterableDataset to it."""

    def __init__(self, source: Any, *, features: Sequence[str] | None = None,
                 dense: Sequence[str] = (), weights: Mapping[str, str] | None = None,
                 pipeline: Pipeline | None = None, batch_size: int = 1024,
                 output: str = "torchrec", max_lengths: Any = None, pad_value: Any = 0,
                 shuffle: bool = False, seed: int = 0, shuffle_buffer: int | None = None,
                 drop_last: bool = False, rank: int | None = None,
                 world_size: int | None = None, prefetch: int = 2,
                 device: Any = None, source_format: str | None = None,
                 flight_options: Mapping[str, Any] | None = None) -> None:
        func = "SparseDataset"
        torch = import_optional("torch", "torch", func=func)
        if pipeline is not None and not isinstance(pipeline, Pipeline):
            msg = f"{func}: pipeline must be a Pipeline or None, got {type_name(pipeline)}"
            raise ArrowSparseTypeError(msg)
        if pipeline is not None and not pipeline.fitted:
            msg = f"{func}: pipeline is not fitted; call pipeline.fit(data) first"
            raise ArrowSparseValueError(msg)
        if not isinstance(output, str) or output not in OUTPUTS:
            msg = f"{func}: output must be one of {OUTPUTS}, got {output!r}"
            raise ArrowSparseValueError(msg)
        self.batch_size = v.check_positive_count(func, "batch_size", batch_size)
        self.shuffle = v.check_bool(func, "shuffle", shuffle)
        self.drop_last = v.check_bool(func, "drop_last", drop_last)
        self.seed = v.check_count(func, "seed", seed)
        self.shuffle_buffer = self.batch_size * 8 if shuffle_buffer is None else \
            v.check_positive_count(func, "shuffle_buffer", shuffle_buffer)
        self.prefetch = v.check_count(func, "prefetch", prefetch)
        self.output, self.max_lengths, self.pad_value = output, max_lengths, pad_value
        self.pipeline = pipeline
        self.device = None if device is None else torch.device(device)
        if self.device is not None and output == "keyed":
            msg = (f"{func}: output='keyed' stays on the host (a KeyedJagged of numpy "
                   "arrays); use output='torchrec' or 'padded' with a device")
            raise ArrowSparseValueError(msg)
        self.rank, self.world_size = _ddp_place(func, torch, rank, world_size)
        self.epoch = 0
        self._source = _open_source(func, source, source_format, flight_options)
        schema = self._source.schema
        out_schema = schema if pipeline is None else pipeline.output_schema(schema)
        self.weights = dict(weights or {})
        self.dense = [str(c) for c in dense]
        self.features = _feature_names(out_schema, features, self.weights, self.dense)
        for name in (*self.features, *self.dense, *self.weights.values()):
            if out_schema.get_field_index(name) < 0:
                msg = (f"{func}: column {name!r} is not in the "
                       f"{'pipeline output' if pipeline is not None else 'data'}; its "
                       f"columns are {', '.join(out_schema.names)}")
                raise ArrowSparseKeyError(msg)
        for name in self.dense:
            _check_dense_type(func, name, out_schema.field(name).type)
        for key in self.weights:
            if key not in self.features:
                msg = f"{func}: weights names {key!r}, which is not a feature column"
                raise ArrowSparseValueError(msg)
        if pipeline is not None:
            needed = pipeline.input_columns(schema)
        else:
            wanted = {*self.features, *self.dense, *self.weights.values()}
            needed = [n for n in schema.names if n in wanted]
        self._source.select(needed)

    # ------------------------------------------------------------ epochs and places
    def set_epoch(self, epoch: int) -> None:
        """Set the epoch: with ``shuffle``, each epoch has its own order (seeded by ``seed``).

        Call it before each epoch's iteration (in every rank, as with
        ``DistributedSampler.set_epoch``); DataLoader workers get it with the dataset,
        so use ``persistent_workers=False`` (the default).
        """
        self.epoch = v.check_count("set_epoch", "epoch", epoch)

    def __len__(self) -> int:
        """Batches of this rank in one epoch (all its workers), from the sources' row counts."""
        if not self._source.sized or self.pipeline is not None and _filters(self.pipeline):
            msg = ("SparseDataset: the number of batches is unknown before reading (a Flight "
                   "source, or a pipeline that filters rows)")
            raise TypeError(msg)
        rows = sum(self._source.unit_rows())
        if self.drop_last:
            return rows // self.world_size // self.batch_size
        mine = rows * (self.rank + 1) // self.world_size - rows * self.rank // self.world_size
        return -(-mine // self.batch_size)

    def _plan(self, worker: int, num_workers: int) -> list[tuple[int, int, int]]:
        sizes = self._source.unit_rows()
        order = None
        if self.shuffle:
            rng = np.random.default_rng([self.seed, self.epoch])
            order = rng.permutation(len(sizes)).tolist()
        return plan_rows(sizes, rank=self.rank, world_size=self.world_size, worker=worker,
                         num_workers=num_workers, batch_size=self.batch_size,
                         drop_last=self.drop_last, order=order)

    # ------------------------------------------------------------------- iteration
    def __iter__(self) -> Iterator[Batch]:
        torch = import_optional("torch", "torch", func="SparseDataset")
        info = torch.utils.data.get_worker_info()
        worker, num_workers = (0, 1) if info is None else (info.id, info.num_workers)
        if self.device is not None and self.device.type == "cuda" and info is None:
            return _device_batches(torch, self._batches(worker, num_workers), self.device,
                                   self.prefetch)
        return _prefetched(self._batches(worker, num_workers), self.prefetch)

    def _tables(self, worker: int, num_workers: int) -> Iterator[pa.Table]:
        """Yield the worker's rows as Tables, pipeline applied."""
        if self._source.sized:
            for unit, start, stop in self._plan(worker, num_workers):
                table = self._source.read(unit)
                yield self._transform(table.slice(start, stop - start))
        else:
            shard = self.rank * num_workers + worker
            for batch in self._source.stream(shard, self.world_size * num_workers):
                yield self._transform(pa.Table.from_batches([batch]))

    def _transform(self, table: pa.Table) -> pa.Table:
        return table if self.pipeline is None else self.pipeline.transform_table(table)

    def _shuffled(self, tables: Iterator[pa.Table], worker: int) -> Iterator[pa.Table]:
        """Permute rows within windows of ``shuffle_buffer`` rows (seeded per epoch, worker)."""
        rng = np.random.default_rng([self.seed, self.epoch, self.rank, worker, 1])
        pending: list[pa.Table] = []
        rows = 0
        for table in tables:
            pending.append(table)
            rows += table.num_rows
            if rows >= self.shuffle_buffer:
                window = pa.concat_tables(pending)
                yield window.take(rng.permutation(window.num_rows))
                pending, rows = [], 0
        if rows:
            window = pa.concat_tables(pending)
            yield window.take(rng.permutation(window.num_rows))

    def _batches(self, worker: int, num_workers: int) -> Iterator[Batch]:
        """Cut the worker's rows into batches of exactly ``batch_size`` rows, converted."""
        torch = import_optional("torch", "torch", func="SparseDataset")
        tables = self._tables(worker, num_workers)
        if self.shuffle:
            tables = self._shuffled(tables, worker)
        pending: list[pa.Table] = []
        rows = 0
        size = self.batch_size
        for table in tables:
            pending.append(table)
            rows += table.num_rows
            while rows >= size:
                joined = pa.concat_tables(pending) if len(pending) > 1 else pending[0]
                yield self._convert(torch, joined.slice(0, size))
                rest = joined.slice(size)
                pending, rows = ([rest] if rest.num_rows else []), rest.num_rows
        if rows and not self.drop_last:
            yield self._convert(torch, pa.concat_tables(pending))

    def _convert(self, torch: Any, table: pa.Table) -> Batch:
        return _to_batch(torch, table, self.features, self.weights, self.dense, self.output,
                         self.max_lengths, self.pad_value)


def _to_batch(torch: Any, table: pa.Table, features: list[str], weights: dict[str, str],
              dense: list[str], output: str, max_lengths: Any, pad_value: Any) -> Batch:
    """Make one Batch of a table's rows (what SparseDataset yields, and ray_collate)."""
    batch = table.combine_chunks().to_batches()
    record = batch[0] if batch else pa.RecordBatch.from_pylist([], schema=table.schema)
    out = None
    if features:
        kj = KeyedJagged.from_arrow(record, keys=features, weights=weights or None)
        if output == "keyed":
            out = kj
        elif output == "torchrec":
            out = kj.to_torchrec()
        else:
            padded = kj.to_padded_dict(max_lengths, pad_value)
            lengths = kj.lengths.reshape(kj.num_keys, kj.batch_size).astype(np.int64)
            out = {}
            for i, key in enumerate(kj.keys()):
                cap = padded[key].shape[1]
                out[key] = PaddedFeature(torch.from_numpy(padded[key]),
                                         torch.from_numpy(np.minimum(lengths[i], cap)))
    tensors = {name: _dense_tensor(torch, name, record.column(name)) for name in dense}
    return Batch(out, tensors, record.num_rows)


def _feature_names(schema: pa.Schema, features: Sequence[str] | None,
                   weights: Mapping[str, str], dense: Sequence[str]) -> list[str]:
    """Return the features given, else every list-of-integers column not weights or dense."""
    if features is None:
        taken = set(weights.values()) | set(dense)
        features = [f.name for f in schema if f.name not in taken
                    and _arrow.is_list_type(f.type) and pa.types.is_integer(f.type.value_type)]
    return [str(c) for c in features]


def _filters(pipeline: Pipeline) -> bool:
    return any(isinstance(step, Filter) for step in pipeline.steps)


def _ddp_place(func: str, torch: Any, rank: Any, world_size: Any) -> tuple[int, int]:
    """``(rank, world_size)``: given, else torch.distributed's when initialised, else (0, 1)."""
    dist = torch.distributed
    started = dist.is_available() and dist.is_initialized()
    if world_size is None:
        world_size = dist.get_world_size() if started else 1
    if rank is None:
        rank = dist.get_rank() if started else 0
    world_size = v.check_positive_count(func, "world_size", world_size)
    return _below(func, "rank", rank, world_size), world_size


def _dense_tensor(torch: Any, name: str, column: pa.Array) -> Any:
    """Return a dense column as a tensor: shared with Arrow where it can be, else one copy.

    Shared (DLPack on the Arrow buffer): numeric columns without nulls, and
    ``fixed_size_list`` of such numbers (``[rows, D]``). Copied: booleans (Arrow packs
    them in bits) and columns with nulls (which raise: torch has no nulls).
    """
    func = "SparseDataset"
    if column.null_count:
        msg = (f"{func}: dense column {name!r} has nulls (first at row "
               f"{column.is_null().index(True).as_py()}); torch has no nulls: fill them in "
               "the pipeline")
        raise ArrowSparseValueError(msg)
    t = column.type
    if pa.types.is_fixed_size_list(t) and column.values.null_count == 0:
        flat = column.flatten()
        width = t.list_size
        return torch_tensor(func, torch, _numeric(func, name, flat).reshape(-1, width),
                            "an array")
    if pa.types.is_boolean(t):
        return torch.from_numpy(column.to_numpy(zero_copy_only=False))
    return torch_tensor(func, torch, _numeric(func, name, column), "an array")



def _check_dense_type(func: str, name: str, t: pa.DataType) -> None:
    inner = t.value_type if pa.types.is_fixed_size_list(t) else t
    if not (pa.types.is_integer(inner) or pa.types.is_floating(inner)
            or pa.types.is_boolean(t)):
        msg = (f"{func}: dense column {name!r} has type {t}; dense columns must hold numbers, "
               "booleans or fixed-size lists of numbers")
        raise ArrowSparseTypeError(msg)


def _numeric(func: str, name: str, array: pa.Array) -> np.ndarray:
    return array.to_numpy(zero_copy_only=True)


# -------------------------------------------------------------- crossing processes
# A DataLoader worker sends each batch to the main process through torch's
# multiprocessing queue: every tensor is moved into its own shared-memory segment and
# its file descriptor is handed over on a socket connection that the main process opens
# to the worker (a handshake per tensor, while the training loop waits). A Batch is
# therefore pickled as ONE uint8 tensor holding all its host tensors (each aligned to
# _ALIGN bytes) plus the structure; unpickling makes the tensors views of that buffer.
# In a worker the buffer is allocated in shared memory at once (no second copy).
_ALIGN = 64


class _Slot(NamedTuple):
    """Where one tensor of a packed batch lies in the buffer."""

    offset: int
    dtype: Any
    shape: tuple[int, ...]


def _flatten(x: Any, torch: Any, tensors: list[Any]) -> Any:
    """Return ``x``'s structure with each host tensor replaced by its index in ``tensors``."""
    if isinstance(x, torch.Tensor):
        if x.device.type != "cpu" or x.requires_grad:
            return ("leaf", x)
        tensors.append(x)
        return ("tensor", len(tensors) - 1)
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return ("tuple", type(x), [_flatten(y, torch, tensors) for y in x])
    if isinstance(x, dict):
        return ("dict", [(k, _flatten(y, torch, tensors)) for k, y in x.items()])
    if isinstance(x, list):
        return ("list", [_flatten(y, torch, tensors) for y in x])
    if type(x).__name__ == "KeyedJaggedTensor":
        return ("kjt", type(x), x.keys(), _flatten(x.values(), torch, tensors),
                _flatten(x.lengths(), torch, tensors),
                _flatten(x.weights_or_none(), torch, tensors))
    return ("leaf", x)


def _unflatten(spec: Any, tensors: list[Any]) -> Any:
    kind = spec[0]
    if kind == "tensor":
        return tensors[spec[1]]
    if kind == "tuple":
        return spec[1](*(_unflatten(y, tensors) for y in spec[2]))
    if kind == "dict":
        return {k: _unflatten(y, tensors) for k, y in spec[1]}
    if kind == "list":
        return [_unflatten(y, tensors) for y in spec[1]]
    if kind == "kjt":
        return spec[1](keys=spec[2], values=_unflatten(spec[3], tensors),
                       lengths=_unflatten(spec[4], tensors),
                       weights=_unflatten(spec[5], tensors))
    return spec[1]


def _pack(batch: Batch) -> tuple[Any, ...]:
    """``Batch.__reduce__``: the host tensors copied into one buffer, and the structure.

    One copy of the tensors' bytes (the copy torch would make anyway to move each
    tensor into shared memory); between DataLoader processes one shared-memory
    segment and one descriptor hand-over per batch instead of one per tensor.
    """
    torch = import_optional("torch", "torch", func="SparseDataset")
    tensors: list[Any] = []
    spec = [_flatten(field, torch, tensors) for field in batch]
    slots = []
    size = 0
    for t in tensors:
        size = -(-size // _ALIGN) * _ALIGN
        slots.append(_Slot(size, t.dtype, tuple(t.shape)))
        size += t.numel() * t.element_size()
    buffer = torch.empty(size, dtype=torch.uint8)
    if torch.utils.data.get_worker_info() is not None:
        buffer.share_memory_()  # bound for the main process: allocate it shared
    for t, slot in zip(tensors, slots, strict=True):
        _view(buffer, slot).copy_(t)
    return (_unpack, (buffer, slots, spec))


def _view(buffer: Any, slot: _Slot) -> Any:
    nbytes = slot.dtype.itemsize
    for n in slot.shape:
        nbytes *= n
    return buffer[slot.offset:slot.offset + nbytes].view(slot.dtype).view(slot.shape)


def _unpack(buffer: Any, slots: list[_Slot], spec: Any) -> Batch:
    """Rebuild a pickled Batch: its tensors are views of ``buffer``."""
    tensors = [_view(buffer, slot) for slot in slots]
    return Batch(*(_unflatten(field, tensors) for field in spec))


# ----------------------------------------------------------------------- prefetching
def _prefetched(batches: Iterator[Any], depth: int) -> Iterator[Any]:
    """Run ``batches`` on a thread, at most ``depth`` batches ahead (0: no thread)."""
    return batches if depth == 0 else background(batches, depth)


def _map_tensors(batch: Any, fn: Callable[[Any], Any], torch: Any) -> Any:
    """Apply ``fn`` to every tensor of a batch (its named tuples, dicts, TorchRec objects)."""
    if isinstance(batch, torch.Tensor):
        return fn(batch)
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(_map_tensors(x, fn, torch) for x in batch))
    if isinstance(batch, dict):
        return {k: _map_tensors(x, fn, torch) for k, x in batch.items()}
    if isinstance(batch, list):
        return [_map_tensors(x, fn, torch) for x in batch]
    if type(batch).__name__ == "KeyedJaggedTensor":
        weights = batch.weights_or_none()
        return type(batch)(keys=batch.keys(), values=fn(batch.values()),
                           lengths=fn(batch.lengths()),
                           weights=None if weights is None else fn(weights))
    return batch


def _device_batches(torch: Any, batches: Iterator[Any], device: Any,
                    depth: int) -> Iterator[Any]:
    """Copy batches to a CUDA device on a side stream, one batch ahead of the consumer.

    Each batch's tensors are copied into pinned (page-locked) host memory on the
    prefetch thread, then ``to(device, non_blocking=True)`` on a dedicated CUDA stream
    while the consumer still works on the previous batch; before a batch is handed out
    the consumer's stream waits for its copy, and each tensor is recorded on the
    consumer's stream so its memory is not reused early.
    """
    pinned = _prefetched((_map_tensors(b, lambda t: t.pin_memory(), torch) for b in batches),
                         depth)
    stream = torch.cuda.Stream(device=device)

    def issue(batch: Any) -> tuple[Any, Any]:
        with torch.cuda.stream(stream):
            moved = _map_tensors(batch, lambda t: t.to(device, non_blocking=True), torch)
            done = torch.cuda.Event()
            done.record(stream)
        return moved, done

    ahead = None
    for batch in pinned:
        nxt = issue(batch)
        if ahead is not None:
            yield _ready(torch, *ahead)
        ahead = nxt
    if ahead is not None:
        yield _ready(torch, *ahead)


def _ready(torch: Any, batch: Any, done: Any) -> Any:
    current = torch.cuda.current_stream()
    current.wait_event(done)

    def keep(t: Any) -> Any:
        t.record_stream(current)
        return t
    return _map_tensors(batch, keep, torch)


# ------------------------------------------------------------------------- the loader
class _Loader:
    """A DataLoader over a SparseDataset, with the device copy of :func:`make_loader`."""

    def __init__(self, dataset: Any, loader: Any, device: Any) -> None:
        self.dataset = dataset
        self.loader = loader
        self.device = device

    def set_epoch(self, epoch: int) -> None:
        """Set the dataset's epoch (see :meth:`SparseDataset.set_epoch`)."""
        self.dataset.set_epoch(epoch)

    def __len__(self) -> int:
        return len(self.dataset)

    def __iter__(self) -> Iterator[Batch]:
        torch = import_optional("torch", "torch", func="make_loader")
        batches = iter(self.loader)
        if self.device is None or self.device.type != "cuda":
            return batches
        return _device_batches(torch, batches, self.device, 0)


def make_loader(dataset: Any, *, num_workers: int = 0, prefetch_factor: int | None = None,
                device: Any = None, **dataloader_options: Any) -> Any:
    """Wrap a :class:`SparseDataset` in a ``torch.utils.data.DataLoader`` (and a device copy).

    Parameters
    ----------
    dataset
        A SparseDataset (its own ``device`` must be None: the copy is done here, in the
        main process, where CUDA lives).
    num_workers
        DataLoader worker processes; each reads its own share of the rank's rows
        (see :func:`plan_rows`). 0: the main process reads, on the dataset's prefetch
        thread.
    prefetch_factor
        Batches each worker prepares ahead (DataLoader's; default 2 with workers).
    device
        None or ``"cpu"``: batches stay on the host. ``"cuda"`` (or ``"cuda:N"``):
        batches are pinned by the DataLoader and copied to the device on their own
        stream, one batch ahead of the training loop.
    **dataloader_options
        Passed on to the DataLoader (``timeout``, ``multiprocessing_context`` ...);
        ``batch_size``, ``shuffle``, ``sampler`` and ``collate_fn`` are the dataset's
        business and are refused.

    Returns
    -------
    iterable
        Iterating yields :class:`Batch`; ``set_epoch(epoch)`` and ``len()`` are the
        dataset's.

    Raises
    ------
    ValueError
        A dataset with a device, or DataLoader options that batch or shuffle.
    TypeError
        Not a SparseDataset.

    Examples
    --------
    >>> from arrow_sparse.interop.torch_data import SparseDataset, make_loader
    >>> table = pa.table({"ids": [[1, 2, 3], [2, 4, 6, 7], [3, 6]], "label": [1, 0, 1]})
    >>> loader = make_loader(SparseDataset(table, dense=["label"], batch_size=2,
    ...                                    output="keyed"), num_workers=1)
    >>> [(b.features.lengths.tolist(), b.dense["label"].tolist()) for b in loader]
    [([3, 4], [1, 0]), ([2], [1])]
    """
    func = "make_loader"
    torch = import_optional("torch", "torch", func=func)
    if not isinstance(dataset, _SparseDatasetBase):
        msg = f"{func}: dataset must be a SparseDataset, got {type_name(dataset)}"
        raise ArrowSparseTypeError(msg)
    if dataset.device is not None:
        msg = (f"{func}: dataset has device {dataset.device}; give the device to make_loader "
               "instead (the copy runs in the main process)")
        raise ArrowSparseValueError(msg)
    for name in ("batch_size", "shuffle", "sampler", "batch_sampler", "collate_fn",
                 "drop_last"):
        if name in dataloader_options:
            msg = f"{func}: {name} is set on the SparseDataset, not on the DataLoader"
            raise ArrowSparseValueError(msg)
    num_workers = v.check_count(func, "num_workers", num_workers)
    target = None if device is None else torch.device(device)
    cuda = target is not None and target.type == "cuda"
    options: dict[str, Any] = {"batch_size": None, "num_workers": num_workers,
                               "pin_memory": cuda, **dataloader_options}
    if num_workers:
        options["prefetch_factor"] = 2 if prefetch_factor is None else prefetch_factor
    return _Loader(dataset, torch.utils.data.DataLoader(dataset, **options), target)


# ------------------------------------------------------------------------ Ray Data
def ray_collate(*, features: Sequence[str] | None = None, dense: Sequence[str] = (),
                weights: Mapping[str, str] | None = None, output: str = "torchrec",
                max_lengths: Any = None, pad_value: Any = 0) -> Any:
    """Return a Ray Data collate function whose batches are :class:`Batch` es, as SparseDataset's.

    ``ds.iter_torch_batches(batch_size=..., collate_fn=ray_collate(...))`` then yields,
    from Ray Data's own iterator (its blocks, batching, local shuffle and prefetch
    threads), the same :class:`Batch` a :class:`SparseDataset` yields for those rows:
    the list columns as a KeyedJagged, TorchRec's KeyedJaggedTensor or padded tensors,
    the dense columns as tensors. No conversion step follows in the training loop; the
    conversion runs on Ray's prefetch threads.

    Parameters
    ----------
    features, dense, weights, output, max_lengths, pad_value
        As for :class:`SparseDataset` (``features`` default: every list-of-integers
        column of the batch that is not a weights or dense column).

    Returns
    -------
    ray.data.collate_fn.ArrowBatchCollateFn
        A callable taking a ``pyarrow.Table`` (Ray hands Arrow batches to it, with no
        conversion to numpy) and returning a :class:`Batch`.

    Raises
    ------
    ValueError
        An unknown ``output``; ``weights`` naming a column that is not a feature.
    KeyError
        (when called on a batch) a feature, dense or weights column the batch lacks.
    ModuleNotFoundError
        torch or Ray is not installed.

    See Also
    --------
    SparseDataset : The same batches from Parquet, IPC or Flight, sharded by rank and
        worker, without Ray.
    arrow_sparse.pipeline.ray.iter_keyed_jagged : KeyedJagged batches from a Ray
        dataset without torch.

    Notes
    -----
    Ray's ``iter_torch_batches`` moves only tensors, dicts and lists of tensors to
    its ``device``; a Batch stays where the collate function made it (on the host):
    copy it in the loop, or use :func:`make_loader` with ``device=``. Ray's
    ``iter_torch_batches`` imports Ray Train, which needs ``pydantic``.

    Examples
    --------
    The collate function is what Ray calls on each Arrow batch:

    >>> from arrow_sparse.interop.torch_data import ray_collate
    >>> collate = ray_collate(features=["ids"], dense=["label"], output="keyed")
    >>> table = pa.table({"ids": [[1, 2, 3], [2, 4, 6, 7], [3, 6]], "label": [1, 0, 1]})
    >>> batch = collate(table)
    >>> batch.features["ids"].to_list(), batch.dense["label"].tolist()
    ([[1, 2, 3], [2, 4, 6, 7], [3, 6]], [1, 0, 1])

    On a Ray dataset (``docs/loader.md`` runs this):

    >>> ds = ray.data.read_parquet("data/sample_clicks.parquet")  # doctest: +SKIP
    >>> for batch in ds.iter_torch_batches(batch_size=4096,
    ...                                    collate_fn=collate):  # doctest: +SKIP
    ...     ...
    """
    func = "ray_collate"
    import_optional("torch", "torch", func=func)
    if not isinstance(output, str) or output not in OUTPUTS:
        msg = f"{func}: output must be one of {OUTPUTS}, got {output!r}"
        raise ArrowSparseValueError(msg)
    weights = {str(k): str(c) for k, c in (weights or {}).items()}
    if features is not None:
        for key in weights:
            if key not in features:
                msg = f"{func}: weights names {key!r}, which is not a feature column"
                raise ArrowSparseValueError(msg)
    return _ray_collate_class()(None if features is None else [str(c) for c in features],
                                [str(c) for c in dense], weights, output, max_lengths,
                                pad_value)


@functools.cache
def _ray_collate_class() -> type:
    import_optional("ray", extra="ray")
    collate_fn = import_optional("ray.data.collate_fn", extra="ray")

    class RayCollate(collate_fn.ArrowBatchCollateFn):  # type: ignore[misc,name-defined]
        """Ray Data Arrow batch -> :class:`Batch` (made by :func:`ray_collate`)."""

        def __init__(self, features: list[str] | None, dense: list[str],
                     weights: dict[str, str], output: str, max_lengths: Any,
                     pad_value: Any) -> None:
            self.features, self.dense, self.weights = features, dense, weights
            self.output, self.max_lengths, self.pad_value = output, max_lengths, pad_value

        def __call__(self, batch: pa.Table) -> Batch:
            torch = import_optional("torch", "torch", func="ray_collate")
            if isinstance(batch, pa.RecordBatch):
                batch = pa.Table.from_batches([batch])
            if not isinstance(batch, pa.Table):
                msg = (f"ray_collate: batches must be pyarrow Tables, got {type_name(batch)} "
                       "(pass the collate function to iter_torch_batches as collate_fn=)")
                raise ArrowSparseTypeError(msg)
            features = _feature_names(batch.schema, self.features, self.weights, self.dense)
            for name in (*features, *self.dense, *self.weights.values()):
                if batch.schema.get_field_index(name) < 0:
                    msg = (f"ray_collate: column {name!r} is not in the batch; its columns "
                           f"are {', '.join(batch.schema.names)}")
                    raise ArrowSparseKeyError(msg)
            return _to_batch(torch, batch, features, self.weights, self.dense, self.output,
                             self.max_lengths, self.pad_value)

    RayCollate.__module__ = __name__
    RayCollate.__qualname__ = "RayCollate"  # pickled by name (Ray Train's workers)
    return RayCollate


# ------------------------------------------------------------- torch class, built lazily
_DATASET_DOC = """An ``IterableDataset`` of jagged-feature batches from Parquet, IPC or Flight.

    Reads the rows of ``source``, applies ``pipeline``, and yields one :class:`Batch` per
    ``batch_size`` rows. Each DDP rank and each DataLoader worker reads its own rows,
    so every row is read exactly once per epoch (:func:`plan_rows` says which).

    Parameters
    ----------
    source
        A Parquet file, directory or list of files (or a ``pyarrow.dataset.Dataset``,
        or :func:`arrow_sparse.io.read_parquet`'s result, which has no ``filter``);
        Arrow IPC files (``.arrow``, ``.feather``, ``.ipc``: memory-mapped); a Table;
        or the location of a :func:`arrow_sparse.io.serve_flight` server
        (``"grpc://host:port"``).
    features
        List columns (after the pipeline) that form the features, in this order;
        default every list-of-integers column that is not a weights or dense column.
    dense
        Dense columns (numbers, or fixed-size lists of numbers) given as tensors.
    weights
        ``{feature: list<float> column}``: per-value weights of a feature.
    pipeline
        A fitted :class:`~arrow_sparse.Pipeline` applied to each unit read.
    batch_size
        Rows per batch; batches are cut across row groups exactly (only a shard's
        last batch is shorter, or dropped with ``drop_last``).
    output
        ``"torchrec"`` (default): ``KeyedJagged.to_torchrec()`` (a
        ``torchrec.KeyedJaggedTensor`` when TorchRec is installed, else the tuple
        ``(keys, values, lengths, weights)`` of tensors); ``"keyed"``: the
        :class:`~arrow_sparse.KeyedJagged` (numpy); ``"padded"``: ``{feature:
        PaddedFeature(values [rows, L], lengths [rows])}``.
    max_lengths, pad_value
        With ``"padded"``: ``L`` (as :meth:`KeyedJagged.to_padded_dict`) and the fill.
    shuffle, seed
        Shuffle the order of the row groups (all ranks alike) and the rows within
        windows of ``shuffle_buffer`` rows, with a new order each epoch
        (:meth:`set_epoch`) drawn from ``seed``. A Flight source's row order is the
        server's: only the windows are shuffled.
    shuffle_buffer
        Rows per shuffle window (default ``8 * batch_size``): memory holds one window.
    drop_last
        Drop each shard's last, partial batch; ranks then get equal numbers of batches.
    rank, world_size
        This process's DDP place; default ``torch.distributed``'s when it is
        initialised, else ``(0, 1)``.
    prefetch
        Batches prepared ahead on a thread when iterated in the main process (0: none).
    device
        ``"cuda"``: when iterated in the main process, pinned batches are copied to the
        device on their own stream (with workers, give the device to
        :func:`make_loader`). Not with ``output="keyed"``.
    source_format
        ``"parquet"``, ``"ipc"`` or ``"flight"`` when the path does not say.
    flight_options
        Keyword arguments for :func:`arrow_sparse.io.flight_batches` (``token``,
        ``tls_root_cert_file``, ``timeout``).

    Raises
    ------
    KeyError
        A feature, dense or weights column that is not in the (pipeline's) output.
    TypeError
        A source of another kind.
    ValueError
        An unknown ``output``, an unfitted pipeline, a ``rank`` outside
        ``[0, world_size)``, a batch size of 0.
    ModuleNotFoundError
        torch is not installed.

    See Also
    --------
    make_loader : A DataLoader with workers and a device copy.
    plan_rows : Which rows each rank and worker reads.

    Notes
    -----
    Units: a Parquet row group, or a record batch of a Table or IPC file. The units of
    an epoch are laid end to end (shuffled, with ``shuffle``) and cut into one range of
    rows per rank, then into runs of whole batches per worker. A unit that straddles
    two ranges is read by both (each keeps its rows). A Flight server is asked for the
    shard ``rank * num_workers + worker`` of ``world_size * num_workers`` (the server
    splits by rows), so it must accept any number of shards (``serve_flight``'s default
    ``num_shards=None``); ``len()`` needs row counts, so not with Flight or a filtering
    pipeline. Under a filtering pipeline each worker's last batch may be short.

    Copies: Parquet is decoded into Arrow memory. A batch that spans two units is
    joined (one copy of its rows); a batch inside one unit is a slice (none). Features
    are gathered into the key-major KeyedJagged buffer (one copy), which the tensors
    then share (DLPack, no copy); dense numeric columns without nulls are shared with
    Arrow (DLPack), booleans are copied (Arrow packs them in bits); padding is a copy.
    Shuffled windows are one gather. On CUDA each tensor is copied once more to pinned
    memory, then to the device.

    Examples
    --------
    >>> from arrow_sparse.interop.torch_data import SparseDataset
    >>> table = pa.table({"ids": [[1, 2, 3], [2, 4, 6, 7], [3, 6]], "label": [1, 0, 1]})
    >>> data = SparseDataset(table, dense=["label"], batch_size=2, output="keyed")
    >>> [(b.num_rows, b.features["ids"].to_list(), b.dense["label"].tolist()) for b in data]
    [(2, [[1, 2, 3], [2, 4, 6, 7]], [1, 0]), (1, [[3, 6]], [1])]
    >>> batch = next(iter(SparseDataset(table, batch_size=3, output="padded")))
    >>> batch.features["ids"].values
    tensor([[1, 2, 3, 0],
            [2, 4, 6, 7],
            [3, 6, 0, 0]])
    >>> batch.features["ids"].lengths
    tensor([3, 4, 2])
    """


@functools.cache
def _classes() -> dict[str, type]:
    torch = import_optional("torch", "torch", func="SparseDataset")

    class SparseDataset(_SparseDatasetBase, torch.utils.data.IterableDataset):  # type: ignore[misc,name-defined]
        __doc__ = _DATASET_DOC

    SparseDataset.__module__ = __name__
    SparseDataset.__qualname__ = "SparseDataset"  # pickled by name (spawned workers)
    return {"SparseDataset": SparseDataset}


def __dir__() -> list[str]:
    """List the public names (``__all__``, the lazily built class included)."""
    return sorted(__all__)


def __getattr__(name: str) -> Any:
    """Build :class:`SparseDataset` on first access."""
    if name == "SparseDataset":
        return _classes()[name]
    if name == "RayCollate":  # the class of ray_collate's functions (pickled by name)
        return _ray_collate_class()
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)


__test__ = {"SparseDataset": _DATASET_DOC}
