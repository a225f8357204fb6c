"""PyTorch interop through DLPack: tensors that share the Jagged's memory.

- :func:`to_torch` -> ``(values, offsets)`` CPU tensors (FBGEMM's / TorchRec's
  ``JaggedTensor`` layout), :func:`from_torch` back to a :class:`~arrow_sparse.Jagged`;
- :func:`to_torch_nested` -> a ``torch.nested`` jagged-layout nested tensor;
- :func:`keyed_to_torchrec` -> the arguments of TorchRec's ``KeyedJaggedTensor``
  (TorchRec itself is not imported).

Tensors are made with ``torch.from_dlpack`` on the numpy views of the buffers, so they
share memory with the Jagged (and with the Arrow array it came from): no copy, and a
write through one is seen by the other. Arrow treats its buffers as immutable, so do
not write into tensors made from Arrow data. PyTorch has no null rows: see the
``null_rows`` argument. torch is imported on first use (``ModuleNotFoundError`` with an
install hint when it is missing); importing this module does not import it, and its
doctests are collected only where torch is installed (``conftest.py`` beside it).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, NamedTuple

import numpy as np

from .. import _validate as v
from ..errors import ArrowSparseTypeError, ArrowSparseValueError
from ..jagged import Jagged
from ..keyed import KeyedJagged
from ._common import loaded, type_name
from ._optional import import_optional

__all__ = ["TorchRecInputs", "from_torch", "keyed_to_torchrec", "to_torch", "to_torch_nested"]

_NULL_ROWS = ("raise", "empty")


class TorchRecInputs(NamedTuple):
    """The arguments of TorchRec's ``KeyedJaggedTensor(keys, values, weights, lengths)``.

    ``KeyedJaggedTensor(**inputs._asdict())`` builds one.
    """

    keys: list[str]
    """Key names as strings (``str(key)`` for integer map keys)."""
    values: Any
    """Every key's values, key-major (a tensor sharing the KeyedJagged's buffer)."""
    lengths: Any
    """Key-major row lengths (int32 or int64 tensor; null rows are 0)."""
    weights: Any
    """Per-value weights tensor, or None."""


def to_torch(jagged: Jagged, *, null_rows: str = "raise") -> tuple[Any, Any]:
    """Convert to ``(values, offsets)`` CPU tensors that share the Jagged's memory.

    Parameters
    ----------
    jagged
        A :class:`~arrow_sparse.Jagged` of 1-D or N-D numeric values (not nested).
    null_rows
        PyTorch has no null rows. ``"raise"`` (default): a Jagged with null rows
        raises ``ValueError``. ``"empty"``: null rows become empty rows.

    Returns
    -------
    tuple of torch.Tensor
        ``values`` (``[N, ...]``, the Jagged's dtype) and ``offsets`` (``rows + 1``,
        int32 or int64 as the Jagged has them) with ``offsets[0] == 0`` and
        ``offsets[-1] == len(values)``: row ``i`` is ``values[offsets[i]:offsets[i+1]]``
        (FBGEMM's and TorchRec's ``JaggedTensor`` layout).

    Raises
    ------
    TypeError
        Not a Jagged, a nested Jagged, or a ``null_rows`` that is not a str.
    ValueError
        Null rows with ``null_rows="raise"``, null elements inside rows (fill them
        first, e.g. ``pyarrow.compute.fill_null``), or an unknown ``null_rows``.
    ModuleNotFoundError
        torch is not installed.

    See Also
    --------
    from_torch : The inverse.
    to_torch_nested : A ``torch.nested`` tensor instead of two tensors.

    Notes
    -----
    Zero-copy through DLPack: ``values`` is a view of the values the rows address
    (``jagged.flat_values()``) and ``offsets`` is the Jagged's offsets array, both
    shared with the Jagged (``tensor.data_ptr()`` is the numpy array's address).
    Two cases copy: a sliced Jagged (``offsets[0] > 0``) gets its offsets rebased to
    start at 0 (a new ``rows + 1`` array; values are still a view), and with
    ``null_rows="empty"`` a null row that covers values (Arrow allows it) has those
    values dropped (values gathered and offsets rebuilt). Null rows that are already
    empty, as pyarrow builds them, copy nothing.

    Examples
    --------
    >>> j = asp.Jagged.from_list([[1, 2, 3], [2, 4, 6, 7], [3, 6]])
    >>> values, offsets = asp.to_torch(j)
    >>> values
    tensor([1, 2, 3, 2, 4, 6, 7, 3, 6])
    >>> offsets
    tensor([0, 3, 7, 9], dtype=torch.int32)
    >>> asp.to_torch(asp.Jagged.from_list([[1], None, [2, 3]]), null_rows="empty")[1]
    tensor([0, 1, 1, 3], dtype=torch.int32)
    """
    func = "to_torch"
    values, offsets = _plain_rows(func, jagged, null_rows)
    torch = import_optional("torch", "torch")
    return _tensor(func, torch, values), _tensor(func, torch, offsets)


def to_torch_nested(jagged: Jagged, *, null_rows: str = "raise") -> Any:
    """Convert to a ``torch.nested`` tensor with the jagged layout (``torch.jagged``).

    Parameters
    ----------
    jagged
        A :class:`~arrow_sparse.Jagged` of 1-D or N-D numeric values (not nested),
        with at least one row.
    null_rows
        ``"raise"`` (default) or ``"empty"``, as in :func:`to_torch`.

    Returns
    -------
    torch.Tensor
        ``torch.nested.nested_tensor_from_jagged(values, offsets)``: shape
        ``(rows, j1, ...)``; ``.values()`` and ``.offsets()`` are the tensors
        :func:`to_torch` gives.

    Raises
    ------
    TypeError
        As :func:`to_torch`.
    ValueError
        As :func:`to_torch`, and a Jagged with no rows (a nested tensor needs one).
    ModuleNotFoundError
        torch is not installed.

    See Also
    --------
    to_torch : The two tensors this wraps.
    from_torch : Reads a jagged nested tensor back.

    Notes
    -----
    Copies exactly what :func:`to_torch` copies: nothing, unless the Jagged is a
    slice (``offsets[0] > 0``: offsets are rebased to start at 0, as the nested
    tensor requires) or null rows cover values with ``null_rows="empty"``.

    Examples
    --------
    >>> j = asp.Jagged.from_list([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0, 7.0], [3.0, 6.0]])
    >>> from arrow_sparse.interop.torch import to_torch_nested
    >>> nt = to_torch_nested(j)
    >>> nt.is_nested, nt.size(0)
    (True, 3)
    >>> [row.tolist() for row in nt.unbind()]
    [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0, 7.0], [3.0, 6.0]]
    """
    func = "to_torch_nested"
    values, offsets = _plain_rows(func, jagged, null_rows)
    if len(offsets) < 2:
        msg = f"{func}: jagged has no rows; a nested tensor needs at least one"
        raise ArrowSparseValueError(msg)
    torch = import_optional("torch", "torch")
    return torch.nested.nested_tensor_from_jagged(_tensor(func, torch, values),
                                                  _tensor(func, torch, offsets))


def from_torch(values: Any, offsets: Any = None, validity: Any = None) -> Jagged:
    """Wrap CPU tensors ``values`` and ``offsets`` as a Jagged (zero-copy).

    Parameters
    ----------
    values
        A CPU ``torch.Tensor`` ``[N, ...]`` of numbers or booleans, or a jagged-layout
        nested tensor (``torch.nested``, ``layout=torch.jagged``), whose values and
        offsets are then used and ``offsets`` must be None.
    offsets
        A CPU integer tensor of ``rows + 1`` offsets into ``values`` (int32 and int64
        are kept; other integer dtypes become int64).
    validity
        Optional bool row mask (a tensor or an array; False = null row).

    Returns
    -------
    Jagged
        Whose values and offsets are numpy views of the tensors' memory.

    Raises
    ------
    TypeError
        Not tensors, a tensor on another device than the CPU (``.cpu()`` copies it
        there), a dtype numpy has no equivalent for (bfloat16, complex32), or a
        non-jagged nested tensor.
    ValueError
        Malformed offsets (as :class:`~arrow_sparse.Jagged` checks them), or
        ``offsets`` missing (or given with a nested tensor).

    See Also
    --------
    to_torch, to_torch_nested : The inverses.
    Jagged.from_offsets : The same from numpy arrays.

    Notes
    -----
    Zero-copy through DLPack (``np.from_dlpack``): the Jagged shares the tensors'
    memory. Tensors that require grad are detached first (no copy; the Jagged is not
    part of the autograd graph). Arrow export (:meth:`Jagged.to_arrow`) then wraps the
    same memory again. This function never imports torch: a tensor can only exist if
    torch is imported already.

    Examples
    --------
    >>> import torch
    >>> j = asp.from_torch(torch.tensor([1, 2, 3, 2, 4, 6, 7, 3, 6]), torch.tensor([0, 3, 7, 9]))
    >>> j
    Jagged([[1, 2, 3], [2, 4, 6, 7], [3, 6]], dtype=int64, offsets=int64)
    >>> from arrow_sparse.interop.torch import to_torch_nested
    >>> asp.from_torch(to_torch_nested(j)).to_list()
    [[1, 2, 3], [2, 4, 6, 7], [3, 6]]
    """
    func = "from_torch"
    torch = loaded("torch")
    if torch is None or not isinstance(values, torch.Tensor):
        msg = f"{func}: values must be a torch.Tensor, got {type_name(values)}"
        raise ArrowSparseTypeError(msg)
    if values.is_nested:
        if values.layout != torch.jagged:
            msg = (f"{func}: values is a nested tensor with layout {values.layout}; "
                   "only the jagged layout (torch.jagged) has values + offsets")
            raise ArrowSparseTypeError(msg)
        if offsets is not None:
            msg = f"{func}: offsets must be None when values is a nested tensor (it has its own)"
            raise ArrowSparseValueError(msg)
        values, offsets = values.values(), values.offsets()
    elif offsets is None:
        msg = f"{func}: offsets is required (rows + 1 offsets into values)"
        raise ArrowSparseValueError(msg)
    if not isinstance(offsets, torch.Tensor):
        msg = f"{func}: offsets must be a torch.Tensor, got {type_name(offsets)}"
        raise ArrowSparseTypeError(msg)
    if validity is not None and isinstance(validity, torch.Tensor):
        validity = _array(func, "validity", torch, validity)
    return Jagged(_array(func, "values", torch, values), _array(func, "offsets", torch, offsets),
                  validity)


def keyed_to_torchrec(kj: KeyedJagged) -> TorchRecInputs:
    """Convert to TorchRec's ``KeyedJaggedTensor`` arguments (keys, values, lengths, weights).

    Parameters
    ----------
    kj
        A :class:`~arrow_sparse.KeyedJagged`.

    Returns
    -------
    TorchRecInputs
        A named tuple ``(keys, values, lengths, weights)``:
        ``torchrec.KeyedJaggedTensor(**inputs._asdict())`` builds the TorchRec object
        (TorchRec is not imported here). ``keys`` are strings (``str(key)``, as
        TorchRec requires); ``weights`` is None when ``kj`` has none.

    Raises
    ------
    TypeError
        Not a KeyedJagged.
    ModuleNotFoundError
        torch is not installed.

    See Also
    --------
    to_torch : One Jagged.
    KeyedJagged.from_arrow : Where a KeyedJagged usually comes from.

    Notes
    -----
    Zero-copy: ``values``, ``lengths`` and ``weights`` share the KeyedJagged's buffers
    (DLPack). Null rows are already empty rows in a KeyedJagged (``lengths`` 0), which
    is what TorchRec, having no null rows, gets; ``kj.validity`` still tells them apart.

    Examples
    --------
    >>> kj = asp.KeyedJagged.from_dict({"a": [[1, 2], None], "b": [[3], [4, 5]]},
    ...                                weights={"b": [[0.5], [1.0, 2.0]]})
    >>> from arrow_sparse.interop.torch import keyed_to_torchrec
    >>> inputs = keyed_to_torchrec(kj)
    >>> inputs.keys
    ['a', 'b']
    >>> inputs.values, inputs.lengths
    (tensor([1, 2, 3, 4, 5]), tensor([2, 0, 1, 2], dtype=torch.int32))
    >>> inputs.weights
    tensor([1.0000, 1.0000, 0.5000, 1.0000, 2.0000], dtype=torch.float64)
    """
    func = "keyed_to_torchrec"
    if not isinstance(kj, KeyedJagged):
        msg = f"{func}: kj must be a KeyedJagged, got {type_name(kj)}"
        raise ArrowSparseTypeError(msg)
    torch = import_optional("torch", "torch")
    weights = None if kj.weights is None else _tensor(func, torch, kj.weights)
    return TorchRecInputs([_key_name(k) for k in kj.keys()], _tensor(func, torch, kj.values),
                          _tensor(func, torch, kj.lengths), weights)


def _key_name(key: Hashable) -> str:
    return key if isinstance(key, str) else str(key)


def _plain_rows(func: str, jagged: Any, null_rows: Any) -> tuple[np.ndarray, np.ndarray]:
    """Check ``jagged``; return values + offsets starting at 0 with no null rows or elements."""
    if not isinstance(jagged, Jagged):
        msg = f"{func}: jagged must be a Jagged, got {type_name(jagged)}"
        raise ArrowSparseTypeError(msg)
    if not isinstance(null_rows, str):
        msg = f"{func}: null_rows must be one of {_NULL_ROWS}, got {type_name(null_rows)}"
        raise ArrowSparseTypeError(msg)
    if null_rows not in _NULL_ROWS:
        msg = f"{func}: null_rows must be one of {_NULL_ROWS}, got {null_rows!r}"
        raise ArrowSparseValueError(msg)
    values = jagged.values
    if isinstance(values, Jagged):
        msg = (f"{func}: jagged has nested rows (lists of lists); a tensor pair holds one "
               "jagged level: convert each level's offsets yourself")
        raise ArrowSparseTypeError(msg)
    offsets = jagged.offsets
    start, stop = int(offsets[0]), int(offsets[-1])
    valid = jagged.validity
    in_null_row = None  # per value of values[start:stop]: does a null row cover it?
    if valid is not None:
        if null_rows == "raise":
            pos = v.first_true(~valid)
            msg = (f"{func}: jagged has null rows (first at position {pos}) and torch has no "
                   "nulls; pass null_rows='empty' to make them empty rows")
            raise ArrowSparseValueError(msg)
        in_null_row = np.repeat(~valid, np.diff(offsets))
    if jagged.values_validity is not None:
        null_element = ~jagged.values_validity[start:stop]
        if in_null_row is not None:
            null_element &= ~in_null_row  # dropped with their row: never read
        if null_element.any():
            pos = start + v.first_true(null_element)
            msg = (f"{func}: jagged has null elements (first at value {pos}) and torch has "
                   "no nulls; fill them first (pyarrow.compute.fill_null)")
            raise ArrowSparseValueError(msg)
    if valid is not None and in_null_row is not None and in_null_row.any():
        new_offsets = np.zeros(len(offsets), dtype=offsets.dtype)
        np.cumsum(np.where(valid, np.diff(offsets), 0), out=new_offsets[1:])
        return values[start:stop][~in_null_row], new_offsets
    if start != 0:
        offsets = offsets - offsets.dtype.type(start)
    return values[start:stop], offsets


def _tensor(func: str, torch: Any, array: np.ndarray) -> Any:
    """Share a numpy array with torch through DLPack (no copy)."""
    try:
        return torch.from_dlpack(array)
    except (BufferError, RuntimeError, TypeError) as exc:
        msg = f"{func}: values of dtype {array.dtype} cannot be shared with torch ({exc})"
        raise ArrowSparseTypeError(msg) from None


def _array(func: str, arg: str, torch: Any, tensor: Any) -> np.ndarray:
    """Share a CPU tensor with numpy through DLPack (no copy)."""
    if tensor.device.type != "cpu":
        msg = (f"{func}: {arg} is on {tensor.device}; arrow_sparse works on CPU tensors, "
               f"move it first ({arg}.cpu(), a copy)")
        raise ArrowSparseTypeError(msg)
    if tensor.layout != torch.strided:
        msg = f"{func}: {arg} has layout {tensor.layout}; only dense (strided) tensors"
        raise ArrowSparseTypeError(msg)
    try:
        return np.from_dlpack(tensor.detach())
    except (BufferError, RuntimeError, TypeError) as exc:
        msg = f"{func}: {arg} of dtype {tensor.dtype} has no numpy equivalent ({exc})"
        raise ArrowSparseTypeError(msg) from None
