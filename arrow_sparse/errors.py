"""Exception classes raised by arrow_sparse.

Every error raised for bad input derives from both a builtin exception and
:class:`ArrowSparseError`, so ``except ValueError`` and ``except ArrowSparseError``
both catch it.

Examples
--------
>>> import arrow_sparse as asp
>>> try:
...     asp.lengths_to_offsets([2, -1])
... except ValueError as exc:
...     print(exc)
lengths_to_offsets: lengths must be non-negative (first at position 1: -1)
>>> issubclass(asp.errors.ArrowSparseValueError, asp.errors.ArrowSparseError)
True
"""

__all__ = [
    "ArrowSparseError",
    "ArrowSparseIOError",
    "ArrowSparseIndexError",
    "ArrowSparseKeyError",
    "ArrowSparseTypeError",
    "ArrowSparseValueError",
]


class ArrowSparseError(Exception):
    """Base class of every exception arrow_sparse raises for bad input."""


class ArrowSparseValueError(ArrowSparseError, ValueError):
    """Malformed structure: offsets, lengths, unsorted ids, shape or length mismatches."""


class ArrowSparseIndexError(ArrowSparseError, IndexError):
    """An index out of range: gather and embedding ids, segment ids >= num_segments."""


class ArrowSparseTypeError(ArrowSparseError, TypeError):
    """A wrong dtype or a wrong kind of object."""


class ArrowSparseKeyError(ArrowSparseIndexError, KeyError):
    """An unknown feature key (also a ``KeyError``, as a dict lookup raises)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class ArrowSparseIOError(ArrowSparseError, OSError):
    """A file that cannot be opened: missing, a directory where a file is needed, no permission.

    Corrupt or truncated content is an :class:`ArrowSparseValueError`
    instead: the file opened, but its bytes are not valid Parquet or Arrow IPC.
    """
