"""Reading and writing: Parquet (streamed by row group) and Arrow IPC (memory-mapped).

``read_parquet`` streams record batches (or :class:`~arrow_sparse.KeyedJagged`
batches) from files, directories and hive-partitioned data sets; ``write_parquet``
writes tables or streams of batches in reader-sized row groups, keeping ``list`` vs
``large_list`` offsets and schema metadata. ``read_ipc`` memory-maps Arrow IPC files
and returns Tables whose buffers point into the mapping (zero-copy); ``write_ipc``
writes IPC files or streams to paths, standard output or sockets. ``docs/io.md``
explains the choices.

Examples
--------
>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "ids.parquet")
>>> asp.io.write_parquet(pa.table({"ids": [[1, 2, 3], [2, 4, 6, 7], [3, 6]]}), path)
3
>>> [b.num_rows for b in asp.io.read_parquet(path)]
[3]
"""

from ._common import METADATA_KEY, ArrowSparseIOError
from .flight import (
    TOKEN_ENV,
    ArrowSparseFlightError,
    FlightServer,
    InsecureFlightWarning,
    serve_flight,
    shard_ticket,
)
from .flight_client import FlightBatches, flight_batches
from .ipc import read_ipc, write_ipc
from .parquet import (
    DEFAULT_BATCH_ROWS,
    DEFAULT_ROW_GROUP_ROWS,
    ParquetBatches,
    RowGroup,
    read_parquet,
    write_parquet,
    write_parquet_dataset,
)

__all__ = [
    "DEFAULT_BATCH_ROWS",
    "DEFAULT_ROW_GROUP_ROWS",
    "METADATA_KEY",
    "TOKEN_ENV",
    "ArrowSparseFlightError",
    "ArrowSparseIOError",
    "FlightBatches",
    "FlightServer",
    "InsecureFlightWarning",
    "ParquetBatches",
    "RowGroup",
    "flight_batches",
    "read_ipc",
    "read_parquet",
    "serve_flight",
    "shard_ticket",
    "write_ipc",
    "write_parquet",
    "write_parquet_dataset",
]
