"""Parquet: stream record batches (or KeyedJagged batches) in, write them out by row group.

Reading goes through ``pyarrow.dataset`` one row group at a time, so memory holds a
few batches, never the data set; writing goes through ``pyarrow.parquet.ParquetWriter``
with batches buffered up to one row group.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pyarrow as pa

from .. import _arrow
from .. import _validate as v
from .._files import in_file
from ..errors import (
    ArrowSparseError,
    ArrowSparseKeyError,
    ArrowSparseTypeError,
    ArrowSparseValueError,
)
from ..keyed import KeyedJagged
from ._common import (
    PYARROW_ERRORS,
    ArrowSparseIOError,
    as_batches,
    atomic_directory,
    atomic_path,
    check_path,
    corrupt,
    stamp_schema,
)

if TYPE_CHECKING:
    import pyarrow.dataset as ds

__all__ = ["DEFAULT_BATCH_ROWS", "DEFAULT_ROW_GROUP_ROWS", "ParquetBatches", "RowGroup",
           "read_parquet", "write_parquet", "write_parquet_dataset"]

#: Default number of rows per batch yielded by :func:`read_parquet`.
DEFAULT_BATCH_ROWS = 65_536
#: Default number of rows per row group written by :func:`write_parquet`: the default
#: batch of :func:`read_parquet`, so that one row group is read as one batch.
DEFAULT_ROW_GROUP_ROWS = 65_536


class RowGroup(NamedTuple):
    """One row group of a :class:`ParquetBatches` stream (see ``row_groups``)."""

    path: str
    """The file."""
    row_group: int | None
    """Its index in the file."""
    num_rows: int
    """Its rows, from the footer."""
    piece: Any
    """The ``pyarrow.dataset`` fragment that reads just this row group."""


class ParquetBatches:
    """A re-iterable stream of batches from Parquet files; built by :func:`read_parquet`.

    Iterating reads one row group at a time (see :func:`read_parquet`); iterating again
    starts a new scan. Nothing but the file footers is read before iteration.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "ids.parquet")
    >>> _ = asp.io.write_parquet(pa.table({"ids": [[1, 2, 3], [2, 4, 6, 7], [3, 6]]}), path)
    >>> batches = asp.io.read_parquet(path)
    >>> batches.num_rows, batches.schema.names
    (3, ['ids'])
    """

    def __init__(self, dataset: ds.Dataset, source: str, columns: list[str],
                 batch_rows: int, filter: Any, keyed: list[str] | None,
                 weights: Any) -> None:
        self._dataset = dataset
        self._source = source
        self._columns = columns
        self._batch_rows = batch_rows
        self._filter = filter
        self._keyed = keyed
        self._weights = weights
        self._num_rows: int | None = None

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of the columns read (partition columns included)."""
        schema = self._dataset.schema
        return pa.schema([schema.field(name) for name in self._columns], schema.metadata)

    @property
    def num_rows(self) -> int | None:
        """Total rows from the Parquet footers, or None when a filter is given.

        Only the footers are read (once; the result is cached). With a ``filter`` the
        count is unknown until the data are scanned, so it is None.
        """
        if self._filter is not None:
            return None
        if self._num_rows is None:
            import pyarrow.dataset as ds

            total = 0
            for fragment in self._dataset.get_fragments():
                if not isinstance(fragment, ds.ParquetFileFragment):
                    return None
                try:
                    total += fragment.metadata.num_rows
                except PYARROW_ERRORS as exc:
                    func = "read_parquet"
                    raise corrupt(func, "Parquet", fragment.path, exc) from None
            self._num_rows = total
        return self._num_rows

    def with_columns(self, columns: Sequence[str]) -> ParquetBatches:
        """Return the same files, filter and batch size, reading only ``columns`` (in this order).

        Parameters
        ----------
        columns
            Column names of :attr:`schema`.

        Returns
        -------
        ParquetBatches

        Raises
        ------
        KeyError
            A name that is not a column of the stream.

        Examples
        --------
        >>> asp.io.read_parquet("data/sample_clicks.parquet").with_columns(["label"]).schema
        label: int8 not null
        """
        names = _check_names("with_columns", "columns", list(columns), self.schema,
                             self._source)
        keyed = None if self._keyed is None else [k for k in self._keyed if k in names]
        return ParquetBatches(self._dataset, self._source, names, self._batch_rows,
                              self._filter, keyed, self._weights if keyed else None)

    @property
    def files(self) -> list[str]:
        """The files read, in order."""
        return list(getattr(self._dataset, "files", []))

    def __iter__(self) -> Iterator[Any]:  # RecordBatch, or KeyedJagged with keyed=
        if self._keyed is None:
            return self._batches()
        return self._keyed_batches()

    def _keyed_batches(self) -> Iterator[KeyedJagged]:

        for batch in self._batches():
            yield KeyedJagged.from_arrow(batch, keys=self._keyed, weights=self._weights)

    def _batches(self) -> Iterator[pa.RecordBatch]:
        for batch, _, _ in self.iter_with_location():
            yield batch

    def iter_with_location(self, shard: int = 0, num_shards: int = 1,
                           ) -> Iterator[tuple[pa.RecordBatch, str, int | None]]:
        """Iterate ``(record batch, file path, row group)``: where each batch comes from.

        What a consumer needs to name the file and row group of a batch it cannot
        process (the pipeline runner does). The row group is None for a non-Parquet
        fragment. The batches are those of iterating ``self`` with ``keyed=None``.

        Parameters
        ----------
        shard, num_shards
            Read only the row groups ``shard, shard + num_shards, ...`` (counted over
            the files in order); the others are skipped unread. The default reads all.

        Yields
        ------
        tuple of (pyarrow.RecordBatch, str, int or None)

        Raises
        ------
        KeyError
            A file of a multi-file data set lacks a column that is read.
        TypeError
            A file holds a column read with a type that differs from the data set's
            (the first file's) and cannot be widened to it losslessly: the message
            names the file, the column, both types and the row group.
        ValueError
            A corrupt file (named with its row group and, for a damaged page, its
            column).

        Examples
        --------
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "ids.parquet")
        >>> _ = asp.io.write_parquet(pa.table({"ids": [[1], [2, 3], []]}), path,
        ...                          row_group_rows=2)
        >>> [(b.num_rows, os.path.basename(f), rg)
        ...  for b, f, rg in asp.io.read_parquet(path).iter_with_location()]
        [(2, 'ids.parquet', 0), (1, 'ids.parquet', 1)]
        """
        func = "read_parquet"
        num_shards = v.check_count(func, "num_shards", num_shards)
        shard = v.check_count(func, "shard", shard)
        if not shard < num_shards:
            msg = f"{func}: shard must be in [0, num_shards={num_shards}), got {shard}"
            raise ArrowSparseValueError(msg)
        for position, (piece, path, row_group) in enumerate(self._pieces()):
            if position % num_shards != shard:
                continue
            for batch in self._scan(piece, path, row_group, self._filter, self._batch_rows):
                yield batch, path, row_group

    def row_groups(self) -> list[RowGroup]:
        """List the row groups read, in order (over the files in order), with their row counts.

        The units a sharded reader deals out (:class:`arrow_sparse.interop.torch_data.
        SparseDataset` does): each is read on its own by :meth:`read_row_group`. Only
        the footers are read.

        Returns
        -------
        list of RowGroup

        Raises
        ------
        ValueError
            The stream has a ``filter`` (its row counts are unknown before reading), or
            a corrupt footer.
        KeyError, TypeError
            As :meth:`iter_with_location`, for a file that lacks a column or stores it
            as another type.

        Examples
        --------
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "ids.parquet")
        >>> _ = asp.io.write_parquet(pa.table({"ids": [[1], [2, 3], []]}), path,
        ...                          row_group_rows=2)
        >>> [(os.path.basename(g.path), g.row_group, g.num_rows)
        ...  for g in asp.io.read_parquet(path).row_groups()]
        [('ids.parquet', 0, 2), ('ids.parquet', 1, 1)]
        """
        func = "row_groups"
        if self._filter is not None:
            msg = (f"{func}: the stream has a filter, so its row groups' row counts are "
                   "unknown before reading; read without filter= (a Pipeline filter step "
                   "filters after reading)")
            raise ArrowSparseValueError(msg)
        groups = []
        for piece, path, row_group in self._pieces():
            rgs = getattr(piece, "row_groups", None)
            if not rgs:
                msg = f"{func}: {path!r} is not a Parquet file fragment with row groups"
                raise ArrowSparseValueError(msg)
            groups.append(RowGroup(path, row_group, int(rgs[0].num_rows), piece))
        return groups

    def read_row_group(self, group: RowGroup) -> pa.Table:
        """Read one row group of :meth:`row_groups` (the stream's columns) as a Table.

        Parameters
        ----------
        group
            An entry of :meth:`row_groups`.

        Returns
        -------
        pyarrow.Table
            ``group.num_rows`` rows, the decoded Arrow data (no further copy).

        Raises
        ------
        TypeError
            ``group`` is not a RowGroup.
        ValueError
            A damaged page (the message names the file, row group and column).

        Examples
        --------
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "ids.parquet")
        >>> _ = asp.io.write_parquet(pa.table({"ids": [[1], [2, 3], []]}), path,
        ...                          row_group_rows=2)
        >>> batches = asp.io.read_parquet(path)
        >>> batches.read_row_group(batches.row_groups()[1]).to_pylist()
        [{'ids': []}]
        """
        if not isinstance(group, RowGroup):
            msg = f"read_row_group: group must be a RowGroup, got {type(group).__name__}"
            raise ArrowSparseTypeError(msg)
        batches = list(self._scan(group.piece, group.path, group.row_group, None,
                                  max(group.num_rows, 1)))
        return pa.Table.from_batches(batches, schema=self.schema)

    def _pieces(self) -> Iterator[tuple[Any, str, int | None]]:
        """Yield ``(fragment of one row group, file path, row group)``, files checked first."""
        import pyarrow.dataset as ds

        func = "read_parquet"
        schema = self._dataset.schema
        for fragment in self._dataset.get_fragments(filter=self._filter):
            path = getattr(fragment, "path", self._source)
            if isinstance(fragment, ds.ParquetFileFragment):
                try:
                    self._check_fragment(fragment, path)
                    pieces = fragment.split_by_row_group(self._filter, schema=schema)
                except PYARROW_ERRORS as exc:
                    raise corrupt(func, "Parquet", path, exc) from None
            else:
                pieces = [fragment]
            for piece in pieces:
                row_groups = getattr(piece, "row_groups", None)
                yield piece, path, row_groups[0].id if row_groups else None

    def _scan(self, piece: Any, path: str, row_group: int | None, filter: Any,
              batch_rows: int) -> Iterator[pa.RecordBatch]:
        """Decode one piece's non-empty batches; a damaged page names file, row group, column."""
        import pyarrow.dataset as ds

        func = "read_parquet"
        scanner = ds.Scanner.from_fragment(piece, schema=self._dataset.schema,
                                           columns=self._columns, filter=filter,
                                           batch_size=batch_rows)
        batches = scanner.to_batches()
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                break
            except PYARROW_ERRORS as exc:
                column = _damaged_column(path, row_group, self._columns)
                raise corrupt(func, "Parquet", path, exc, row_group, column=column) from None
            if batch.num_rows:
                yield batch

    def _check_fragment(self, fragment: Any, path: str) -> None:
        """Raise when a file of the data set lacks a column read or stores it as another type."""
        import pyarrow.dataset as ds

        func = "read_parquet"
        try:
            physical = fragment.physical_schema
        except ArrowSparseError as exc:  # an extension type refused its (damaged) metadata
            raise in_file(func, path, exc) from None
        partition = ds.get_partition_keys(fragment.partition_expression)
        schema = self._dataset.schema
        first = self.files[0] if self.files else self._source
        for name in self._columns:
            if name in partition:
                continue
            idx = physical.get_field_index(name)
            if idx < 0:
                msg = (f"read_parquet: file {path!r} has no column {name!r}, which the data "
                       f"set's schema (from {first!r}) has; its columns are "
                       f"{', '.join(physical.names)} (read only the shared columns with "
                       "columns=[...])")
                raise ArrowSparseKeyError(msg)
            got, want = physical.field(idx).type, schema.field(name).type
            if not _widens(got, want):
                rgs = fragment.row_groups
                row_group = rgs[0].id if rgs else 0
                msg = (f"read_parquet: column {name!r} of file {path!r} is {got}, but the "
                       f"data set's schema (from {first!r}) says {want}; it cannot be read "
                       f"as {want} (first at row group {row_group})")
                raise ArrowSparseTypeError(msg)

    def __repr__(self) -> str:
        rows = self.num_rows if self._filter is None else "unknown (filtered)"
        kind = "RecordBatch" if self._keyed is None else f"KeyedJagged{self._keyed}"
        return (f"ParquetBatches(source={self._source!r}, columns={self._columns}, "
                f"num_rows={rows}, batch_rows={self._batch_rows}, yields={kind})")


def read_parquet(paths_or_dataset: Any, columns: Sequence[str] | None = None,
                 batch_rows: int = DEFAULT_BATCH_ROWS, filter: Any = None,
                 keyed: bool | Sequence[str] | None = None, *,
                 weights: str | Mapping[Hashable, str] | None = None,
                 partitioning: Any = "hive") -> ParquetBatches:
    """Stream a Parquet file, list of files, directory or dataset as record batches.

    Parameters
    ----------
    paths_or_dataset
        A path to a file or a directory (searched recursively; ``key=value``
        directories are hive partitions and become columns), a list of file paths,
        or a ``pyarrow.dataset.Dataset``.
    columns
        Column names to read, in this order (default: every column). Only these
        columns' pages are read from disk.
    batch_rows
        Most rows per batch. A batch never spans two row groups, so a file written
        with smaller row groups gives smaller batches.
    filter
        A ``pyarrow.compute`` expression (``pc.field("label") == 1``). Row groups and
        partitions it excludes by their statistics are skipped unread; the rest are
        filtered row by row.
    keyed
        None or False: yield ``pyarrow.RecordBatch``. A list of list-column names, or
        True for every list-of-numbers column among ``columns``: yield
        :class:`~arrow_sparse.KeyedJagged` batches of those features (only those
        columns, plus ``weights``, are read). A KeyedJagged has one values dtype, so
        the named columns must all hold integers, or all floats; True takes every
        list-of-integers column (the id features), leaving out ``weights``.
    weights
        With ``keyed``: per-value weight columns, as for
        :meth:`KeyedJagged.from_arrow <arrow_sparse.KeyedJagged.from_arrow>` (one
        column name, or ``{key: column name}``).
    partitioning
        How directory names map to columns, passed to ``pyarrow.dataset.dataset``
        (default ``"hive"``; None for none).

    Returns
    -------
    ParquetBatches
        An iterable with ``schema``, ``num_rows`` (from the footers; None with a
        filter) and ``files``. Each ``iter()`` scans anew.

    Raises
    ------
    ArrowSparseIOError
        A path that does not exist or cannot be read (an ``OSError``).
    KeyError
        A column in ``columns``, ``keyed`` or ``weights`` that is not in the data.
    TypeError
        A ``keyed`` column that is not a list of numbers; a ``filter`` that is not
        an expression.
    ValueError
        A file that is not Parquet, or is corrupt or truncated: the message names the
        file and, for damage found while decoding, the row group. Damage in the footer
        is found when this function is called; damage in data pages while iterating.

    See Also
    --------
    write_parquet : The writer, with row groups sized for this reader.
    KeyedJagged.from_arrow : What each keyed batch is built with.

    Notes
    -----
    Memory: one row group is decoded at a time (pyarrow reads its columns in
    parallel), so peak memory is about one row group of the selected columns. Batches
    are the decoded Arrow data (no further copy); a keyed batch costs one gather of its
    features' values into the key-major buffer. Page checksums written by
    :func:`write_parquet` are verified while reading. Empty batches (every row
    filtered out) are not yielded.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "clicks.parquet")
    >>> table = pa.table({"user": [7, 8, 9],
    ...                   "ids": [[1, 2, 3], [2, 4, 6, 7], [3, 6]],
    ...                   "label": pa.array([1, 0, 1], pa.int8())})
    >>> _ = asp.io.write_parquet(table, path)
    >>> for batch in asp.io.read_parquet(path, columns=["ids", "label"]):
    ...     print(batch.num_rows, batch.schema.names)
    3 ['ids', 'label']

    Only the positive rows:

    >>> import pyarrow.compute as pc
    >>> positive = asp.io.read_parquet(path, filter=pc.field("label") == 1)
    >>> [b.column("user").to_pylist() for b in positive]
    [[7, 9]]

    As KeyedJagged batches of every list column:

    >>> next(iter(asp.io.read_parquet(path, keyed=True)))
    KeyedJagged(num_keys=1, batch_size=3, dtype=int64, lengths=int32, weights=None)
      'ids': [[1, 2, 3], [2, 4, 6, 7], [3, 6]]
    """
    import pyarrow.dataset as ds

    func = "read_parquet"
    dataset, source, disagreements = _open_dataset(func, paths_or_dataset, partitioning)
    batch_rows = v.check_positive_count(func, "batch_rows", batch_rows)
    if filter is not None and not isinstance(filter, ds.Expression):
        msg = (f"{func}: filter must be a pyarrow.compute expression such as "
               f"pc.field('label') == 1, got {type(filter).__name__}")
        raise ArrowSparseTypeError(msg)
    schema = dataset.schema
    names = _check_names(func, "columns", columns, schema, source) if columns is not None \
        else list(schema.names)
    keyed_names = _check_keyed(func, keyed, names, columns is not None, schema, source, weights)
    if keyed_names is not None:
        extra = [weights] if isinstance(weights, str) else \
            list(weights.values()) if isinstance(weights, Mapping) else []
        names = keyed_names + [c for c in extra if c not in keyed_names]
        _check_names(func, "weights", extra, schema, source)
    elif weights is not None:
        msg = f"{func}: weights is only used with keyed=; pass keyed=True or a list of columns"
        raise ArrowSparseValueError(msg)
    for name in names:
        if name in disagreements:
            raise disagreements[name]
    return ParquetBatches(dataset, source, names, batch_rows, filter, keyed_names, weights)


def _open_dataset(func: str, data: Any, partitioning: Any,
                  ) -> tuple[ds.Dataset, str, dict[str, ArrowSparseTypeError]]:
    """Open ``data`` as a dataset; also return the columns its files disagree on."""
    import pyarrow.dataset as ds

    if isinstance(data, ds.Dataset):
        files = getattr(data, "files", None) or []
        return data, (files[0] if len(files) == 1 else f"dataset of {len(files)} files"), {}
    if isinstance(data, (str, os.PathLike)):
        source = check_path(func, "paths_or_dataset", data, directory_ok=True)
        target: Any = source
    elif isinstance(data, (list, tuple)) and data:
        target = [check_path(func, f"paths_or_dataset[{i}]", p) for i, p in enumerate(data)]
        source = target[0] if len(target) == 1 else f"{len(target)} files from {target[0]!r}"
    else:
        msg = (f"{func}: paths_or_dataset must be a path, a non-empty list of paths or a "
               f"pyarrow.dataset.Dataset, got {type(data).__name__}")
        raise ArrowSparseTypeError(msg)
    file_format = ds.ParquetFileFormat(
        default_fragment_scan_options=ds.ParquetFragmentScanOptions(
            page_checksum_verification=True))
    several = isinstance(target, list) and len(target) > 1
    if several or isinstance(target, str) and os.path.isdir(target):
        return _unified_dataset(func, target, source, file_format, partitioning)
    try:
        dataset = ds.dataset(target, format=file_format, partitioning=partitioning)
    except ArrowSparseError as exc:  # an extension type refused its (damaged) metadata
        raise in_file(func, _first_unreadable(target) or source, exc) from None
    except PYARROW_ERRORS as exc:
        bad = _first_unreadable(target)
        if bad is None and isinstance(exc, OSError) and not isinstance(exc, pa.ArrowException):
            msg = f"{func}: cannot read {source!r} ({exc})"
            raise ArrowSparseIOError(msg) from None
        raise corrupt(func, "Parquet", bad or source, exc) from None
    return dataset, source, {}


def _partitioning_factory(func: str, partitioning: Any) -> Any:
    """Return what ``FileSystemFactoryOptions(partitioning=...)`` takes for ``partitioning``."""
    import pyarrow.dataset as ds

    if partitioning is None or isinstance(partitioning, (ds.Partitioning,
                                                         ds.PartitioningFactory)):
        return partitioning
    if partitioning == "hive":
        return ds.HivePartitioning.discover(infer_dictionary=False)
    if isinstance(partitioning, (list, tuple)) and all(isinstance(n, str)
                                                       for n in partitioning):
        return ds.DirectoryPartitioning.discover(list(partitioning))
    msg = (f"{func}: partitioning must be 'hive', None, a list of directory field names or "
           f"a pyarrow.dataset.Partitioning, got {partitioning!r}")
    raise ArrowSparseTypeError(msg)


def _unified_dataset(func: str, target: str | list[str], source: str, file_format: Any,
                     partitioning: Any,
                     ) -> tuple[ds.Dataset, str, dict[str, ArrowSparseTypeError]]:
    """Open a directory or several files as one data set whose schema every file reads as.

    Every file's footer is read and the column types are unified
    (:func:`_unify_types`: ``string`` with ``large_string``, ``list`` with
    ``large_list``, integers and floats to the widest); a partition key that the
    files also store (Polars writes them) takes the files' type, and an integer key
    found only in directory names is ``int64`` (what Polars and DuckDB infer; pyarrow
    alone would say ``int32``). Columns appear in the order the files first give
    them, then the keys found only in directory names. Files that disagree on a
    column beyond that give a ``TypeError`` naming the files, the column and the
    types, returned by column (raised when the column is read; the schema holds the
    first file's type); an unreadable footer is reported as that file's corruption.
    """
    import pyarrow.dataset as ds
    import pyarrow.fs as pafs

    fs = pafs.LocalFileSystem()
    factory_partitioning = _partitioning_factory(func, partitioning)
    if isinstance(target, list):
        where: Any = [os.path.abspath(p) for p in target]
        options = ds.FileSystemFactoryOptions(partitioning=factory_partitioning)
    else:
        base = os.path.abspath(target)
        where = pafs.FileSelector(base, recursive=True)
        options = ds.FileSystemFactoryOptions(base, partitioning=factory_partitioning)
    try:
        factory = ds.FileSystemDatasetFactory(fs, where, file_format, options)
        keys = factory.inspect(fragments=0)  # the partition keys found in directory names
        listing = factory.finish(keys)
        files = list(listing.files)
    except PYARROW_ERRORS as exc:
        if isinstance(exc, OSError) and not isinstance(exc, pa.ArrowException):
            msg = f"{func}: cannot read {source!r} ({exc})"
            raise ArrowSparseIOError(msg) from None
        msg = f"{func}: cannot read the partition directories of {source!r} ({exc})"
        raise ArrowSparseValueError(msg) from None
    declared: dict[str, list[tuple[str, pa.Field]]] = {}
    first_metadata = None
    for i, fragment in enumerate(listing.get_fragments()):
        path = fragment.path
        try:
            physical = fragment.physical_schema
        except ArrowSparseError as exc:  # an extension type refused its (damaged) metadata
            raise in_file(func, path, exc) from None
        except PYARROW_ERRORS as exc:
            raise corrupt(func, "Parquet", path, exc) from None
        if i == 0:
            first_metadata = physical.metadata
        for field in physical:
            declared.setdefault(field.name, []).append((path, field))
    fields = []
    disagreements: dict[str, ArrowSparseTypeError] = {}
    for name, found in declared.items():
        unified = _unify_types([f.type for _, f in found])
        if unified is None:
            disagreements[name] = _disagreement(func, source, name, found)
            unified = found[0][1].type
        nullable = len(found) < len(files) or any(f.nullable for _, f in found)
        fields.append(pa.field(name, unified, nullable, found[0][1].metadata))
    explicit = isinstance(partitioning, ds.Partitioning)
    for key in keys:
        if key.name in declared:
            if explicit and not key.type.equals(declared[key.name][0][1].type):
                msg = (f"{func}: the partitioning gives {key.name!r} the type {key.type}, "
                       f"but the files of {source!r} store it as "
                       f"{declared[key.name][0][1].type}; give the files' type or no "
                       "partitioning for it")
                raise ArrowSparseTypeError(msg)
            continue
        kind = key.type
        if not explicit and pa.types.is_integer(kind):
            kind = pa.int64()
        fields.append(pa.field(key.name, kind))
    schema = pa.schema(fields, first_metadata)
    try:
        return factory.finish(schema), source, disagreements
    except PYARROW_ERRORS as exc:  # a directory value that is not of the files' type
        msg = (f"{func}: the partition directories of {source!r} cannot be read with the "
               f"types the files declare ({_schema_text(keys, schema)}): {exc}")
        raise ArrowSparseTypeError(msg) from None


def _schema_text(keys: pa.Schema, schema: pa.Schema) -> str:
    return ", ".join(f"{k.name}: {schema.field(k.name).type}" for k in keys)


def _disagreement(func: str, source: str, name: str,
                  found: list[tuple[str, pa.Field]]) -> ArrowSparseTypeError:
    """Build the error for files whose types of column ``name`` cannot be unified."""
    groups: dict[str, list[str]] = {}
    for path, field in found:
        groups.setdefault(str(field.type), []).append(path)
    parts = []
    for kind, paths in groups.items():
        more = f" and {len(paths) - 1} more file(s)" if len(paths) > 1 else ""
        parts.append(f"{kind} in {paths[0]!r}{more}")
    msg = (f"{func}: the files of {source!r} disagree on the type of column {name!r}: "
           f"{'; '.join(parts)}; no type holds every file's values losslessly (read the "
           "files separately, or leave the column out with columns=[...])")
    return ArrowSparseTypeError(msg)


def _unify_types(types: list[pa.DataType]) -> pa.DataType | None:
    """Return the one type all of ``types`` read as losslessly, or None when there is none.

    Equal types (list child names aside) give the first; ``string`` and
    ``large_string`` give ``large_string`` (binary alike); ``list`` and ``large_list``
    give ``large_list`` of the unified values; integers give the narrowest integer
    covering every range (None for ``uint64`` with a signed type); floats the widest;
    a dictionary reads as its values; an all-null column takes the other type.

    Examples
    --------
    >>> _unify_types([pa.list_(pa.int32()), pa.large_list(pa.int64())])
    LargeListType(large_list<item: int64>)
    >>> _unify_types([pa.uint32(), pa.int8()])
    DataType(int64)
    >>> _unify_types([pa.int64(), pa.string()]) is None
    True
    """
    kinds = [t for t in types if not pa.types.is_null(t)]
    if not kinds:
        return types[0]
    kinds = [t.value_type if pa.types.is_dictionary(t) and not all(
        pa.types.is_dictionary(k) for k in kinds) else t for t in kinds]
    first = kinds[0]
    if all(_same_type(t, first) for t in kinds):
        return first
    if all(pa.types.is_integer(t) for t in kinds):
        signed = [t.bit_width for t in kinds if pa.types.is_signed_integer(t)]
        unsigned = [t.bit_width for t in kinds if pa.types.is_unsigned_integer(t)]
        if not signed:
            return pa.type_for_alias(f"uint{max(unsigned)}")
        width = max(signed + [2 * w for w in unsigned])
        return pa.type_for_alias(f"int{width}") if width <= 64 else None
    if all(pa.types.is_floating(t) for t in kinds):
        return max(kinds, key=lambda t: t.bit_width)
    for small, large in ((pa.string(), pa.large_string()), (pa.binary(), pa.large_binary())):
        if all(t.equals(small) or t.equals(large) for t in kinds):
            return large
    if all(pa.types.is_list(t) or pa.types.is_large_list(t) for t in kinds):
        value = _unify_types([t.value_type for t in kinds])
        if value is None:
            return None
        child = first.value_field.with_type(value).with_nullable(
            any(t.value_field.nullable for t in kinds))
        return pa.list_(child) if all(pa.types.is_list(t) for t in kinds) \
            else pa.large_list(child)
    if all(pa.types.is_fixed_size_list(t) and t.list_size == first.list_size for t in kinds):
        value = _unify_types([t.value_type for t in kinds])
        if value is None:
            return None
        return pa.list_(first.value_field.with_type(value), first.list_size)
    return None


def _same_type(a: pa.DataType, b: pa.DataType) -> bool:
    """Equal types, the names of list children aside (``item`` and ``element``)."""
    if a.equals(b):
        return True
    lists = (pa.types.is_list, pa.types.is_large_list, pa.types.is_fixed_size_list)
    for is_kind in lists:
        if is_kind(a) and is_kind(b):
            if pa.types.is_fixed_size_list(a) and a.list_size != b.list_size:
                return False
            return _same_type(a.value_type, b.value_type) and (
                a.value_field.nullable or not b.value_field.nullable)
    return False


def _first_unreadable(target: str | list[str]) -> str | None:
    """Find the first file of ``target`` whose footer or schema cannot be read (for messages)."""
    import pyarrow.parquet as pq

    if isinstance(target, str):
        if os.path.isdir(target):
            return None
        target = [target]
    for path in target:
        try:
            pq.read_schema(path)
        except (*PYARROW_ERRORS, ArrowSparseError):
            return path
    return None


def _widens(got: pa.DataType, want: pa.DataType) -> bool:
    """Whether a column stored as ``got`` reads losslessly as ``want`` (the data set's type).

    Equal types (list child names aside); a narrower integer of a range ``want``
    covers; a narrower float; ``list`` and ``large_list`` (string, binary) of widening
    values; a dictionary of values that widen; an all-null column.
    """
    if got.equals(want) or pa.types.is_null(got):
        return True
    if pa.types.is_dictionary(got):
        return _widens(got.value_type, want)
    if pa.types.is_integer(got) and pa.types.is_integer(want):
        gi, wi = np.iinfo(_arrow.numpy_dtype(got)), np.iinfo(_arrow.numpy_dtype(want))
        return bool(wi.min <= gi.min and gi.max <= wi.max)
    if pa.types.is_floating(got) and pa.types.is_floating(want):
        return bool(got.bit_width <= want.bit_width)
    strings = (pa.types.is_string, pa.types.is_large_string)
    binaries = (pa.types.is_binary, pa.types.is_large_binary)
    for kind in (strings, binaries):
        if any(k(got) for k in kind) and any(k(want) for k in kind):
            return True
    lists = (pa.types.is_list, pa.types.is_large_list)
    if any(k(got) for k in lists) and any(k(want) for k in lists):
        return _widens(got.value_type, want.value_type)
    if pa.types.is_fixed_size_list(got) and pa.types.is_fixed_size_list(want):
        return bool(got.list_size == want.list_size) and _widens(got.value_type,
                                                                 want.value_type)
    return False


def _damaged_column(path: str, row_group: int | None, columns: list[str]) -> str | None:
    """Return the first of ``columns`` whose pages in ``row_group`` fail to decode."""
    import pyarrow.parquet as pq

    if row_group is None:
        return None
    try:
        reader = pq.ParquetFile(path, page_checksum_verification=True)
        names = set(reader.schema_arrow.names)
    except PYARROW_ERRORS:
        return None
    for name in columns:
        if name not in names:  # a partition column
            continue
        try:
            reader.read_row_group(row_group, columns=[name])
        except PYARROW_ERRORS:
            return name
    return None


def _check_names(func: str, arg: str, names: Any, schema: pa.Schema, source: str) -> list[str]:
    if isinstance(names, str) or not isinstance(names, (list, tuple)):
        msg = f"{func}: {arg} must be a list of column names, got {type(names).__name__}"
        raise ArrowSparseTypeError(msg)
    for i, name in enumerate(names):
        if not isinstance(name, str):
            msg = v.message(func, arg, "must hold column names (str)", i, repr(name))
            raise ArrowSparseTypeError(msg)
        if schema.get_field_index(name) < 0:
            msg = (v.message(func, arg, "names a column not in the data", i, repr(name))
                   + f"; {source!r} has columns {', '.join(schema.names)}")
            raise ArrowSparseKeyError(msg)
    return list(names)


def _value_kind(t: pa.DataType) -> str | None:
    """Return "integer", "float" or "boolean" for a list of those, else None."""
    if not _arrow.is_list_type(t):
        return None
    value = t.value_type
    return "integer" if pa.types.is_integer(value) else "float" \
        if pa.types.is_floating(value) else "boolean" if pa.types.is_boolean(value) else None


def _check_keyed(func: str, keyed: Any, names: list[str], columns_given: bool,
                 schema: pa.Schema, source: str, weights: Any) -> list[str] | None:
    if keyed is None or keyed is False:
        return None
    if keyed is True:
        skip = {weights} if isinstance(weights, str) else \
            set(weights.values()) if isinstance(weights, Mapping) else set()
        found = [n for n in names
                 if n not in skip and _value_kind(schema.field(n).type) == "integer"]
        if not found:
            msg = (f"{func}: keyed=True but no column is a list of integers (columns: "
                   f"{', '.join(f'{n}: {schema.field(n).type}' for n in names)}); "
                   "name the feature columns with keyed=[...]")
            raise ArrowSparseTypeError(msg)
        return found
    keyed_names = _check_names(func, "keyed", keyed, schema, source)
    for i, name in enumerate(keyed_names):
        if columns_given and name not in names:
            msg = v.message(func, "keyed", "names a column left out of columns", i, repr(name))
            raise ArrowSparseValueError(msg)
        t = schema.field(name).type
        kind = _value_kind(t)
        if kind is None:
            msg = v.message(func, "keyed", "names a column that is not a list of numbers", i,
                            f"{name!r} of type {t}")
            raise ArrowSparseTypeError(msg)
        first = _value_kind(schema.field(keyed_names[0]).type)
        if kind != first:
            msg = v.message(func, "keyed", f"mixes list value kinds: {keyed_names[0]!r} holds "
                            f"{first}s but a later column does not", i, f"{name!r} of type {t}")
            raise ArrowSparseTypeError(msg + "; a KeyedJagged has one values dtype (give "
                                       "float columns as weights=)")
    return keyed_names


def write_parquet(data: Any, path: str | os.PathLike[str],
                  row_group_rows: int = DEFAULT_ROW_GROUP_ROWS,
                  compression: str | None = "zstd", *,
                  compression_level: int | None = None) -> int:
    """Write a Table, RecordBatch, KeyedJagged or stream of batches to one Parquet file.

    Parameters
    ----------
    data
        A ``pyarrow.Table``, ``RecordBatch`` or ``RecordBatchReader``, a
        :class:`~arrow_sparse.KeyedJagged` (written as its ``to_arrow()`` batch), an
        object with ``__arrow_c_stream__`` (Polars, DuckDB), or any iterable of these
        (a generator, a :class:`ParquetBatches`). Batches must share one schema.
    path
        The file to write. It is written under a temporary name and renamed when
        complete, so a failure leaves no partial file (and an old file untouched).
    row_group_rows
        Rows per row group (the last one may be shorter). Batches are buffered until
        a row group is full, whatever their sizes, so small batches do not make small
        row groups.
    compression
        ``"zstd"`` (default), ``"snappy"``, ``"lz4"``, ``"gzip"``, ``"brotli"`` or
        None.
    compression_level
        Codec level (None: the codec's default).

    Returns
    -------
    int
        Number of rows written.

    Raises
    ------
    TypeError
        ``data`` of another kind, or batches whose schemas differ.
    ValueError
        An empty iterable (no schema to write), ``row_group_rows`` of 0, an unknown
        codec.
    ArrowSparseIOError
        The directory does not exist or cannot be written.

    See Also
    --------
    read_parquet : Streams the file back.
    write_ipc : Arrow IPC, for memory-mapped zero-copy reads.

    Notes
    -----
    Types are kept exactly: ``list`` (int32 offsets) stays ``list`` and
    ``large_list`` (int64 offsets) stays ``large_list`` on read-back, because the
    Arrow schema is stored in the file. List children are named ``element``, as the
    Parquet format specifies, whatever their Arrow name was (``item``). The schema
    metadata is kept, extension types (and their metadata) survive, and the key
    ``b"arrow_sparse"`` is added with ``{"version": ...}`` as JSON. Page checksums are written, and
    :func:`read_parquet` verifies them.

    The default row group, 65,536 rows, is one :func:`read_parquet` batch: large
    enough for efficient column chunks (at 20 ids per row, 1.3M values, about 10 MB
    per int64 column before compression) yet small enough that a streaming reader
    holds little and that a shuffle over row groups has many units to shuffle.

    Examples
    --------
    >>> import os, tempfile
    >>> import pyarrow.parquet as pq
    >>> path = os.path.join(tempfile.mkdtemp(), "ids.parquet")
    >>> ids = pa.array([[1, 2, 3], [2, 4, 6, 7], [3, 6]], pa.large_list(pa.int64()))
    >>> asp.io.write_parquet(pa.table({"ids": ids}), path)
    3
    >>> schema = pq.read_schema(path)
    >>> schema.field("ids").type
    LargeListType(large_list<element: int64>)
    >>> b"arrow_sparse" in schema.metadata
    True

    A stream of small batches still makes full row groups:

    >>> batches = (pa.record_batch({"x": np.arange(i, i + 10)}) for i in range(0, 100, 10))
    >>> asp.io.write_parquet(batches, path, row_group_rows=40)
    100
    >>> meta = pq.read_metadata(path)
    >>> [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    [40, 40, 20]
    """
    import pyarrow.parquet as pq

    func = "write_parquet"
    row_group_rows = _check_writer_options(func, row_group_rows, compression)
    schema, batches = as_batches(func, data)
    schema = stamp_schema(schema)
    rows = 0
    with atomic_path(func, path) as tmp:
        try:
            writer = pq.ParquetWriter(tmp, schema, compression=compression or "none",
                                      compression_level=compression_level,
                                      write_page_checksum=True)
        except OSError as exc:
            msg = f"{func}: cannot write to {os.fspath(path)!r} ({exc})"
            raise ArrowSparseIOError(msg) from None
        try:
            pending: list[pa.RecordBatch] = []
            held = 0
            for batch in batches:
                pending.append(_writable(batch).replace_schema_metadata(schema.metadata))
                held += batch.num_rows
                if held >= row_group_rows:
                    table = pa.Table.from_batches(pending, schema)
                    full = held - held % row_group_rows
                    writer.write_table(table.slice(0, full), row_group_size=row_group_rows)
                    rows += full
                    rest = table.slice(full)
                    pending, held = rest.to_batches(), rest.num_rows
            if held or rows == 0:
                writer.write_table(pa.Table.from_batches(pending, schema),
                                   row_group_size=row_group_rows)
                rows += held
        finally:
            writer.close()
    return rows


def write_parquet_dataset(data: Any, path: str | os.PathLike[str], *,
                          partition_by: Sequence[str] | None = None,
                          max_rows_per_file: int | None = None,
                          row_group_rows: int = DEFAULT_ROW_GROUP_ROWS,
                          compression: str | None = "zstd",
                          compression_level: int | None = None) -> int:
    """Write a Table or stream of batches as a directory of Parquet files (one data set).

    Written with ``pyarrow.dataset.write_dataset``: hive directories
    (``day=mon/part-0.parquet``) for ``partition_by``, and a new file every
    ``max_rows_per_file`` rows. pyarrow, Polars (``pl.scan_parquet(path)``), DuckDB
    (``read_parquet('path/**/*.parquet', hive_partitioning = true)``) and
    :func:`read_parquet` read the directory back as one data set.

    Parameters
    ----------
    data
        What :func:`write_parquet` takes: a Table, RecordBatch, RecordBatchReader,
        KeyedJagged, an object with ``__arrow_c_stream__``, or an iterable of these.
    path
        The directory to write. It is written under a temporary name beside it and
        renamed when complete. An existing directory is replaced only when it holds
        Parquet files alone (an earlier output); anything else is refused.
    partition_by
        Columns whose values name the directories (integers, strings, booleans or
        dates). As in every hive data set, they are stored in the directory names,
        not in the files; a null value is the directory ``__HIVE_DEFAULT_PARTITION__``.
    max_rows_per_file
        Most rows per file (default: no limit, one file per partition).
    row_group_rows
        Rows per row group (at most ``max_rows_per_file``). Rows are buffered per
        partition until a row group is full, so memory holds up to one row group per
        partition written at once.
    compression, compression_level
        As for :func:`write_parquet`.

    Returns
    -------
    int
        Number of rows written.

    Raises
    ------
    KeyError
        A ``partition_by`` column that is not in the data.
    TypeError
        A ``partition_by`` column of a nested or floating type; ``data`` of another
        kind.
    ValueError
        ``max_rows_per_file`` or ``row_group_rows`` of 0; an unknown codec.
    ArrowSparseIOError
        A ``path`` that is a file, or a directory holding other files than Parquet;
        a parent directory that does not exist or cannot be written.

    See Also
    --------
    write_parquet : One file.

    Notes
    -----
    Files are named ``part-{i}.parquet``; rows keep their input order within each
    partition. Page checksums and the ``arrow_sparse`` metadata key are written as
    by :func:`write_parquet`. With no rows, the directory holds one empty file
    carrying the schema.

    Examples
    --------
    >>> import os, tempfile
    >>> out = os.path.join(tempfile.mkdtemp(), "clicks")
    >>> table = pa.table({"day": ["mon", "tue", "mon"], "ids": [[1, 2], [3], []]})
    >>> asp.io.write_parquet_dataset(table, out, partition_by=["day"], max_rows_per_file=1)
    3
    >>> sorted(os.path.relpath(os.path.join(d, f), out)
    ...        for d, _, names in os.walk(out) for f in names)
    ['day=mon/part-0.parquet', 'day=mon/part-1.parquet', 'day=tue/part-0.parquet']
    >>> back = pa.Table.from_batches(list(asp.io.read_parquet(out)))
    >>> back.sort_by("day").select(["day", "ids"]).to_pylist()[0]
    {'day': 'mon', 'ids': [1, 2]}
    """
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    func = "write_parquet_dataset"
    row_group_rows = _check_writer_options(func, row_group_rows, compression)
    if max_rows_per_file is not None:
        max_rows_per_file = v.check_positive_count(func, "max_rows_per_file", max_rows_per_file)
        row_group_rows = min(row_group_rows, max_rows_per_file)
    schema, batches = as_batches(func, data)
    schema = stamp_schema(schema)
    keys = check_partition_by(func, partition_by, schema)
    partitioning = None if not keys else ds.partitioning(
        pa.schema([schema.field(k) for k in keys]), flavor="hive")
    options = ds.ParquetFileFormat().make_write_options(
        compression=compression or "none", compression_level=compression_level,
        write_page_checksum=True)
    count = [0]

    def counted() -> Iterator[pa.RecordBatch]:
        for batch in batches:
            count[0] += batch.num_rows
            yield _writable(batch).replace_schema_metadata(schema.metadata)

    with atomic_directory(func, path) as tmp:
        ds.write_dataset(
            pa.RecordBatchReader.from_batches(schema, counted()), tmp, format="parquet",
            file_options=options, partitioning=partitioning,
            basename_template="part-{i}.parquet",
            max_rows_per_file=max_rows_per_file or 0, max_rows_per_group=row_group_rows,
            min_rows_per_group=row_group_rows, existing_data_behavior="overwrite_or_ignore",
            preserve_order=True)
        if count[0] == 0:
            pq.write_table(schema.empty_table(), os.path.join(tmp, "part-0.parquet"),
                           compression=compression or "none", write_page_checksum=True)
    return count[0]


def check_partition_by(func: str, partition_by: Any, schema: pa.Schema) -> list[str]:
    """Return the ``partition_by`` columns after checking them against ``schema``.

    Examples
    --------
    >>> check_partition_by("f", "day", pa.schema({"day": pa.string(), "n": pa.int8()}))
    ['day']
    """
    if partition_by is None:
        return []
    if isinstance(partition_by, str):
        partition_by = [partition_by]
    keys = _check_names(func, "partition_by", partition_by, schema, "the output")
    for i, name in enumerate(keys):
        t = schema.field(name).type
        if pa.types.is_dictionary(t):
            t = t.value_type
        if not (pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
                or pa.types.is_boolean(t) or pa.types.is_date(t)):
            msg = v.message(func, "partition_by", "names a column that cannot name "
                            "directories (integers, strings, booleans and dates can)", i,
                            f"{name!r} of type {t}")
            raise ArrowSparseTypeError(msg)
    if len(set(keys)) != len(keys):
        msg = f"{func}: partition_by names a column twice: {keys}"
        raise ArrowSparseValueError(msg)
    if len(keys) == len(schema):
        msg = (f"{func}: partition_by names every column; the files would hold none "
               "(leave at least one column out)")
        raise ArrowSparseValueError(msg)
    return keys


#: Parquet writers before pyarrow 26 refuse a null list row whose offsets span values
#: ("Lists with non-zero length null components are not supported"); arrow_sparse's
#: zero-copy results keep such ranges (a null row's range is unspecified in Arrow).
_WRITER_NEEDS_EMPTY_NULL_LISTS = int(pa.__version__.split(".")[0]) < 26


def _writable(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Return ``batch`` with its top-level list columns' null rows emptied if needed."""
    if not _WRITER_NEEDS_EMPTY_NULL_LISTS:
        return batch
    columns = [_empty_null_lists(c) for c in batch.columns]
    if all(new is old for new, old in zip(columns, batch.columns, strict=True)):
        return batch
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def _empty_null_lists(column: pa.Array) -> pa.Array:
    """Return a list column whose null rows cover no values (``column`` when they do not).

    The same logical content: only the unspecified ranges under null rows change.
    """
    t = column.type
    if column.null_count == 0 or not (pa.types.is_list(t) or pa.types.is_large_list(t)):
        return column
    offsets = np.asarray(column.offsets)
    valid = np.asarray(column.is_valid())
    lengths = np.diff(offsets)
    if not lengths[~valid].any():
        return column
    new_offsets = np.zeros(len(column) + 1, dtype=offsets.dtype)
    np.cumsum(np.where(valid, lengths, 0), out=new_offsets[1:])
    return type(column).from_arrays(new_offsets, column.flatten(), type=t,
                                    mask=pa.array(~valid))


def _check_writer_options(func: str, row_group_rows: Any, compression: Any) -> int:
    """Check the options every Parquet writer takes; return ``row_group_rows``."""
    rows = v.check_positive_count(func, "row_group_rows", row_group_rows)
    if compression is not None and not isinstance(compression, str):
        msg = f"{func}: compression must be a codec name or None, got {type(compression).__name__}"
        raise ArrowSparseTypeError(msg)
    if compression is not None and not _codec_available(compression):
        msg = (f"{func}: compression {compression!r} is not an available codec (use zstd, "
               "snappy, lz4, gzip, brotli or None)")
        raise ArrowSparseValueError(msg)
    return rows


def _codec_available(name: str) -> bool:
    try:
        return bool(pa.Codec.is_available(name))
    except ValueError:  # a name pyarrow does not know at all
        return False
