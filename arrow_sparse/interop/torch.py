"""PyTorch interop through DLPack: tensors that share the Jagged's memory.

- :func:`to_torch` -> ``(values, offsets)`` tensors (FBGEMM's / TorchRec's
  ``JaggedTensor`` layout), :func:`from_torch` back to a :class:`~arrow_sparse.Jagged`;
- :func:`to_torch_nested` -> a ``torch.nested`` jagged-layout nested tensor;
- :func:`keyed_to_torchrec` -> the arguments of TorchRec's ``KeyedJaggedTensor``
  (TorchRec itself is not imported); :func:`to_torchrec` / :func:`from_torchrec`
  (also ``KeyedJagged.to_torchrec`` / ``.from_torchrec``) -> a real
  ``KeyedJaggedTensor`` where TorchRec is installed, and back;
- :class:`SparseDataset` and :func:`make_loader`, the data loader of
  :mod:`arrow_sparse.interop.torch_data` (built on first access);
- :class:`EmbeddingBag` (an ``nn.Module``), :func:`embedding_bag` and the
  ``torch.autograd.Function`` :class:`EmbeddingBagFunction` under them: PyTorch's
  ``EmbeddingBag`` computed by :mod:`arrow_sparse.embedding` on the weight's own memory,
  with a sparse COO gradient; :func:`sparse_grad_from_torch` /
  :func:`sparse_grad_to_torch` move gradients between the two, so the fused optimizers
  of :mod:`arrow_sparse.embedding` can update a module's weight in place.

Tensors are made with ``torch.from_dlpack`` on the numpy views of the buffers, so they
share memory with the Jagged (and with the Arrow array it came from): no copy, and a
write through one is seen by the other. CUDA tensors are read as CuPy arrays
(``cupy.from_dlpack``, no copy either) when CuPy is installed, and the work then runs
on the device (docs/gpu.md); a device Jagged or device results give CUDA tensors.
Arrow treats its buffers as immutable, so do not write into tensors made from Arrow
data. PyTorch has no null rows: see the
``null_rows`` argument. torch is imported on first use (``ModuleNotFoundError`` with an
install hint when it is missing); importing this module does not import it, and its
doctests are collected only where torch is installed (``conftest.py`` beside it).
"""

from __future__ import annotations

import functools
from collections.abc import Hashable
from typing import Any, NamedTuple

import numpy as np

from .. import _backend
from .. import _validate as v
from .. import embedding as emb
from .._offsets import repeat_rows
from .._optional import import_optional
from ..embedding.grad import backward
from ..errors import ArrowSparseIndexError, ArrowSparseTypeError, ArrowSparseValueError
from ..jagged import Jagged
from ..keyed import KeyedJagged
from ..keyed.keyed_jagged import COMPUTED as keyed_computed
from . import torch_data as _torch_data
from ._common import loaded, torch_tensor, type_name

# EmbeddingBag and EmbeddingBagFunction subclass torch classes: module __getattr__ builds
# them on first access, so that importing this module does not import torch.
__all__ = [  # noqa: F822
    "EmbeddingBag", "EmbeddingBagFunction", "SparseDataset", "TorchRecInputs", "embedding_bag",
    "from_torch", "from_torchrec", "keyed_to_torchrec", "make_loader", "sparse_grad_from_torch",
    "sparse_grad_to_torch", "to_torch", "to_torch_nested", "to_torchrec"]

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
    """Convert to ``(values, offsets)`` tensors that share the Jagged's memory.

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
    A Jagged on the device gives CUDA tensors (the same sharing, through CuPy); it reads
    ``offsets[0]`` and ``offsets[-1]`` back (one synchronisation), and with null rows
    one more to see whether any covers values, and one to drop those values.
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
    return torch_tensor(func, torch, values), torch_tensor(func, torch, offsets)


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
    return torch.nested.nested_tensor_from_jagged(torch_tensor(func, torch, values),
                                                  torch_tensor(func, torch, offsets))


def from_torch(values: Any, offsets: Any = None, validity: Any = None) -> Jagged:
    """Wrap tensors ``values`` and ``offsets`` as a Jagged (zero-copy).

    Parameters
    ----------
    values
        A CPU or CUDA ``torch.Tensor`` ``[N, ...]`` of numbers or booleans, or a jagged-layout
        nested tensor (``torch.nested``, ``layout=torch.jagged``), whose values and
        offsets are then used and ``offsets`` must be None.
    offsets
        An integer tensor of ``rows + 1`` offsets into ``values`` (int32 and int64
        are kept; other integer dtypes become int64).
    validity
        Optional bool row mask (a tensor or an array; False = null row).

    Returns
    -------
    Jagged
        Whose values and offsets are numpy views of the tensors' memory, or CuPy views
        for CUDA tensors (a Jagged on their device).

    Raises
    ------
    TypeError
        Not tensors, a tensor on another device than the CPU or CUDA (``.cpu()`` copies
        it there), a CUDA tensor without CuPy installed, a dtype numpy has no equivalent
        for (bfloat16, complex32), or a non-jagged nested tensor.
    ValueError
        Malformed offsets (as :class:`~arrow_sparse.Jagged` checks them), or
        ``offsets`` missing (or given with a nested tensor).

    See Also
    --------
    to_torch, to_torch_nested : The inverses.
    Jagged.from_offsets : The same from numpy arrays.

    Notes
    -----
    Zero-copy through DLPack (``np.from_dlpack``, or ``cupy.from_dlpack`` for CUDA
    tensors): the Jagged shares the tensors' memory. Tensors that require grad are
    detached first (no copy; the Jagged is not part of the autograd graph). Arrow export
    (:meth:`Jagged.to_arrow`) then wraps the same memory again (host tensors only).
    This function never imports torch: a tensor can only exist if torch is imported
    already.

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
    weights = None if kj.weights is None else torch_tensor(func, torch, kj.weights)
    return TorchRecInputs([_key_name(k) for k in kj.keys()], torch_tensor(func, torch, kj.values),
                          torch_tensor(func, torch, kj.lengths), weights)


@keyed_computed.register("to_torchrec")
def to_torchrec(kj: KeyedJagged) -> Any:
    """Convert to TorchRec's ``KeyedJaggedTensor``, or to its arguments without TorchRec.

    Parameters
    ----------
    kj
        A :class:`~arrow_sparse.KeyedJagged` (on the host).

    Returns
    -------
    torchrec.KeyedJaggedTensor or TorchRecInputs
        When ``torchrec`` can be imported, a ``KeyedJaggedTensor(keys, values, weights,
        lengths)``; otherwise the named tuple :func:`keyed_to_torchrec` returns, which
        builds one with ``KeyedJaggedTensor(**inputs._asdict())``. Keys are strings.

    Raises
    ------
    TypeError
        Not a KeyedJagged.
    ModuleNotFoundError
        torch is not installed.

    See Also
    --------
    from_torchrec : The inverse.
    keyed_to_torchrec : Always the tuple.

    Notes
    -----
    Zero-copy: ``values``, ``lengths`` and ``weights`` are the KeyedJagged's buffers
    shared through DLPack (TorchRec keeps the tensors it is given). Null rows are empty
    rows (``lengths`` 0). TorchRec is imported on first use; the deprecation warnings
    its import of FBGEMM raises are silenced for that import only.

    Examples
    --------
    >>> from arrow_sparse.interop.torch import from_torchrec, to_torchrec
    >>> kj = asp.KeyedJagged.from_dict({"a": [[1, 2], None], "b": [[3], [4, 5]]})
    >>> kjt = to_torchrec(kj)  # TorchRecInputs where TorchRec is not installed
    >>> type(kjt).__name__ in ("KeyedJaggedTensor", "TorchRecInputs")
    True
    >>> from_torchrec(kjt)["b"]
    Jagged([[3], [4, 5]], dtype=int64, offsets=int32)
    >>> from_torchrec(kjt).values.ctypes.data == kj.values.ctypes.data  # shared, both ways
    True
    """
    func = "KeyedJagged.to_torchrec"
    if not isinstance(kj, KeyedJagged):
        msg = f"{func}: kj must be a KeyedJagged, got {type_name(kj)}"
        raise ArrowSparseTypeError(msg)
    inputs = keyed_to_torchrec(kj)
    kjt_class = _torchrec_class()
    if kjt_class is None:
        return inputs
    return kjt_class(keys=inputs.keys, values=inputs.values, lengths=inputs.lengths,
                     weights=inputs.weights)


@functools.cache
def _torchrec_class() -> Any:
    """TorchRec's ``KeyedJaggedTensor`` class, or None when TorchRec is not installed."""
    import importlib.util
    import warnings

    if importlib.util.find_spec("torchrec") is None:
        return None
    with warnings.catch_warnings():  # FBGEMM warns on import about kernels it lacks
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        module = importlib.import_module("torchrec.sparse.jagged_tensor")
    return module.KeyedJaggedTensor


@keyed_computed.register("from_torchrec")
def from_torchrec(kjt: Any) -> KeyedJagged:
    """Build a KeyedJagged from TorchRec's ``KeyedJaggedTensor``, sharing its tensors.

    Parameters
    ----------
    kjt
        A ``torchrec.KeyedJaggedTensor``, or any object with its accessors: ``keys()``,
        ``values()``, ``lengths()`` and ``weights_or_none()`` (or ``weights()``),
        ``values`` / ``lengths`` / ``weights`` being CPU tensors; also the
        :class:`TorchRecInputs` tuple (whose fields are those).

    Returns
    -------
    KeyedJagged
        With the same keys (strings, as TorchRec has them), values, lengths and weights.

    Raises
    ------
    TypeError
        An object without those accessors, tensors that are not 1-D CPU tensors of
        numbers, or non-integer lengths.
    ValueError
        Lengths that do not add up to the number of values, or whose count is not a
        multiple of the number of keys (as :class:`~arrow_sparse.KeyedJagged` checks).

    See Also
    --------
    to_torchrec : The inverse.
    from_torch : One jagged tensor pair.

    Notes
    -----
    Zero-copy: values, lengths and weights are numpy views of the tensors' memory
    (DLPack; tensors that require grad are detached first). The KeyedJagged's int64
    offsets are computed (a new array). A ``KeyedJaggedTensor`` holding only offsets
    computes its lengths when asked (TorchRec's work, a new tensor). Its ``stride()``
    gives the batch size when there are no keys.

    Examples
    --------
    >>> import torch
    >>> from arrow_sparse.interop.torch import TorchRecInputs, from_torchrec
    >>> inputs = TorchRecInputs(["a", "b"], torch.tensor([1, 2, 3, 4, 5]),
    ...                         torch.tensor([2, 0, 1, 2]), None)
    >>> from_torchrec(inputs)
    KeyedJagged(num_keys=2, batch_size=2, dtype=int64, lengths=int64, weights=None)
      'a': [[1, 2], []]
      'b': [[3], [4, 5]]
    """
    func = "KeyedJagged.from_torchrec"
    if isinstance(kjt, TorchRecInputs):
        keys, values, lengths, weights = kjt
    else:
        missing = [name for name in ("keys", "values", "lengths") if not callable(
            getattr(kjt, name, None))]
        if missing:
            msg = (f"{func}: kjt must be a torchrec.KeyedJaggedTensor or have keys(), "
                   f"values(), lengths() and weights_or_none(); {type_name(kjt)} lacks "
                   f"{', '.join(f'{m}()' for m in missing)}")
            raise ArrowSparseTypeError(msg)
        keys, values, lengths = kjt.keys(), kjt.values(), kjt.lengths()
        weights_of = getattr(kjt, "weights_or_none", None) or getattr(kjt, "weights", None)
        weights = weights_of() if callable(weights_of) else None
    torch = loaded("torch")
    for arg, x in (("values", values), ("lengths", lengths), ("weights", weights)):
        if x is None and arg == "weights":
            continue
        if torch is None or not isinstance(x, torch.Tensor):
            msg = f"{func}: {arg} must be a torch.Tensor, got {type_name(x)}"
            raise ArrowSparseTypeError(msg)
    stride = getattr(kjt, "stride", None)
    batch_size = None
    if not list(keys) and callable(stride):
        batch_size = int(stride())
    return KeyedJagged(list(keys), _array(func, "values", torch, values),
                       _array(func, "lengths", torch, lengths),
                       None if weights is None else _array(func, "weights", torch, weights),
                       batch_size=batch_size)


def _key_name(key: Hashable) -> str:
    return key if isinstance(key, str) else str(key)


def _plain_rows(func: str, jagged: Any, null_rows: Any) -> tuple[Any, Any]:
    """Check ``jagged``; return values + offsets starting at 0 with no null rows or elements.

    A device Jagged reads ``offsets[0]`` and ``offsets[-1]`` back (one synchronisation),
    and more where null rows or elements are looked at.
    """
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
    xp, offsets = jagged.xp, jagged.offsets
    start, stop = _backend.fetch(func, offsets[0], offsets[-1])
    valid = jagged.validity
    in_null_row = None  # per value of values[start:stop]: does a null row cover it?
    if valid is not None:
        if null_rows == "raise":
            pos = _backend.fetch(func, (~valid).argmax())[0]
            msg = (f"{func}: jagged has null rows (first at position {pos}) and torch has no "
                   "nulls; pass null_rows='empty' to make them empty rows")
            raise ArrowSparseValueError(msg)
        in_null_row = repeat_rows(~valid, xp.diff(offsets), offsets, start, stop)
    if jagged.values_validity is not None:
        null_element = ~jagged.values_validity[start:stop]
        if in_null_row is not None:
            null_element &= ~in_null_row  # dropped with their row: never read
        if bool(null_element.any()):
            pos = start + _backend.fetch(func, null_element.argmax())[0]
            msg = (f"{func}: jagged has null elements (first at value {pos}) and torch has "
                   "no nulls; fill them first (pyarrow.compute.fill_null)")
            raise ArrowSparseValueError(msg)
    if valid is not None and in_null_row is not None and bool(in_null_row.any()):
        new_offsets = xp.zeros(len(offsets), dtype=offsets.dtype)
        xp.cumsum(xp.where(valid, xp.diff(offsets), 0), out=new_offsets[1:])
        return values[start:stop][~in_null_row], new_offsets
    if start != 0:
        offsets = offsets - offsets.dtype.type(start)
    return values[start:stop], offsets



def _array(func: str, arg: str, torch: Any, tensor: Any) -> Any:
    """Share a tensor through DLPack (no copy): a CPU one with numpy, a CUDA one with CuPy.

    Without CuPy a CUDA tensor raises TypeError; so does any other device.
    """
    kind = tensor.device.type
    if kind == "cuda":
        try:
            _backend.cupy_module(func)
        except ModuleNotFoundError:
            msg = (f"{func}: {arg} is on {tensor.device}; arrow_sparse reads CUDA tensors "
                   "through CuPy, which is not installed (pip install 'arrow-sparse[gpu]'), "
                   f"or move it to the CPU first ({arg}.cpu(), a copy)")
            raise ArrowSparseTypeError(msg) from None
    elif kind != "cpu":
        msg = (f"{func}: {arg} is on {tensor.device}; arrow_sparse works on CPU and CUDA "
               f"tensors, move it first ({arg}.cpu(), a copy)")
        raise ArrowSparseTypeError(msg)
    if tensor.layout != torch.strided:
        msg = f"{func}: {arg} has layout {tensor.layout}; only dense (strided) tensors"
        raise ArrowSparseTypeError(msg)
    if kind == "cuda":
        return _backend.from_dlpack(func, arg, tensor.detach())
    try:
        return np.from_dlpack(tensor.detach())
    except (BufferError, RuntimeError, TypeError) as exc:
        msg = f"{func}: {arg} of dtype {tensor.dtype} has no numpy equivalent ({exc})"
        raise ArrowSparseTypeError(msg) from None


# ======================================================================= EmbeddingBag
_BAG_MODES = ("sum", "mean", "max")


class _Bags(NamedTuple):
    """PyTorch ``EmbeddingBag`` inputs as arrow_sparse bags (views of the tensors)."""

    ids: Any
    """Flat ids (with ``offsets``), or a Jagged whose null ids are the ``padding_idx`` ones."""
    offsets: Any
    """int64 bag boundaries into flat ``ids``, ``bags + 1`` long; None for a Jagged."""
    weights: Any
    """Per-sample weights in the form of ``ids`` (flat, or a Jagged), or None."""
    shape: tuple[int, ...]
    """The input's shape (the per-sample weights' gradient has it)."""


def _tensor_arg(func: str, torch: Any, arg: str, x: Any) -> Any:
    if not isinstance(x, torch.Tensor):
        msg = f"{func}: {arg} must be a torch.Tensor, got {type_name(x)}"
        raise ArrowSparseTypeError(msg)
    return _array(func, arg, torch, x)


def _weight_array(func: str, torch: Any, weight: Any) -> Any:
    table = _tensor_arg(func, torch, "weight", weight)
    if table.dtype not in (np.float32, np.float64):
        msg = f"{func}: weight must be float32 or float64, got {weight.dtype}"
        raise ArrowSparseTypeError(msg)
    if table.ndim != 2:
        msg = (f"{func}: weight must be 2-D [num_embeddings, embedding_dim], "
               f"got {tuple(table.shape)}")
        raise ArrowSparseValueError(msg)
    return table


def _torch_bags(func: str, torch: Any, input: Any, offsets: Any, per_sample_weights: Any,
                include_last_offset: bool, padding_idx: int | None,
                num_embeddings: int) -> _Bags:
    """Check PyTorch's ``embedding_bag`` arguments; return them as flat ids + full offsets.

    On the device nothing is read back: the ids are checked by the lookup's kernels.
    """
    ids = _tensor_arg(func, torch, "input", input)
    xp = _backend.module_of(ids)
    if ids.dtype.kind not in "iu":
        msg = f"{func}: input must be an integer tensor, got {input.dtype}"
        raise ArrowSparseTypeError(msg)
    if ids.ndim == 2:
        if offsets is not None:
            msg = f"{func}: offsets must be None when input is 2-D (bags of equal size)"
            raise ArrowSparseValueError(msg)
        flat = ids.reshape(-1)
        offs = xp.arange(ids.shape[0] + 1, dtype=np.int64) * ids.shape[1]
    elif ids.ndim == 1:
        if offsets is None:
            msg = f"{func}: offsets is required when input is 1-D"
            raise ArrowSparseValueError(msg)
        starts = _tensor_arg(func, torch, "offsets", offsets)
        _backend.array_module(func, input=ids, offsets=starts)
        starts = v.as_index_array(func, "offsets", starts, device=xp is not np)
        if not include_last_offset:
            starts = xp.concatenate((starts, xp.full(1, len(ids), dtype=starts.dtype)))
        offs = v.check_offsets(func, "offsets", starts, len(ids), device=True)
        offs = offs.astype(np.int64, copy=False)
        flat = ids
    else:
        msg = f"{func}: input must be 1-D (with offsets) or 2-D, got shape {tuple(ids.shape)}"
        raise ArrowSparseValueError(msg)
    if xp is np:
        flat = v.check_indices(func, "input", flat, num_embeddings)
    w = None
    if per_sample_weights is not None:
        w = _tensor_arg(func, torch, "per_sample_weights", per_sample_weights)
        _backend.array_module(func, input=ids, per_sample_weights=w)
        if w.dtype.kind != "f":
            msg = (f"{func}: per_sample_weights must be a float tensor, "
                   f"got {per_sample_weights.dtype}")
            raise ArrowSparseTypeError(msg)
        if w.shape != ids.shape:
            msg = (f"{func}: per_sample_weights must have the input's shape {tuple(ids.shape)}, "
                   f"got {tuple(w.shape)}")
            raise ArrowSparseValueError(msg)
        w = w.reshape(-1)
    if padding_idx is None:
        return _Bags(flat, offs, w, tuple(ids.shape))
    # Padding ids are null ids: left out of their bag, not counted by "mean", no gradient.
    bags = Jagged._trusted(flat, offs, values_validity=flat != padding_idx)
    return _Bags(bags, None, None if w is None else Jagged._trusted(w, offs),
                 tuple(ids.shape))


def _padding(func: str, padding_idx: Any, num_embeddings: int) -> int | None:
    """PyTorch's ``padding_idx`` rule: None, or in ``[-num, num)`` (negative counts back)."""
    if padding_idx is None:
        return None
    if isinstance(padding_idx, (bool, np.bool_)) or not isinstance(padding_idx,
                                                                    (int, np.integer)):
        msg = f"{func}: padding_idx must be an integer or None, got {type_name(padding_idx)}"
        raise ArrowSparseTypeError(msg)
    if not -num_embeddings <= padding_idx < num_embeddings:
        msg = (f"{func}: padding_idx must be within [-{num_embeddings}, {num_embeddings}), "
               f"got {padding_idx}")
        raise ArrowSparseValueError(msg)
    return int(padding_idx) % num_embeddings if num_embeddings else 0


def _check_options(func: str, mode: Any, max_norm: Any, scale_grad_by_freq: Any,
                   sparse: Any, include_last_offset: Any) -> None:
    if not isinstance(mode, str) or mode not in _BAG_MODES:
        msg = f"{func}: mode must be 'sum', 'mean' or 'max', got {mode!r}"
        raise ArrowSparseValueError(msg)
    if max_norm is not None:
        msg = (f"{func}: max_norm is not supported (it renormalises the looked-up rows of the "
               "weight in place); renormalise the table yourself, or use torch.nn.EmbeddingBag")
        raise ArrowSparseValueError(msg)
    v.check_bool(func, "scale_grad_by_freq", scale_grad_by_freq)
    v.check_bool(func, "sparse", sparse)
    v.check_bool(func, "include_last_offset", include_last_offset)
    if scale_grad_by_freq and mode == "max":
        msg = f"{func}: scale_grad_by_freq is not supported with mode='max' (as in PyTorch)"
        raise ArrowSparseValueError(msg)


def sparse_grad_to_torch(grad: emb.SparseGrad, num_embeddings: int) -> Any:
    """Convert a :class:`~arrow_sparse.embedding.SparseGrad` to a sparse COO tensor.

    Parameters
    ----------
    grad
        The gradient (coalesced first when it is not).
    num_embeddings
        Rows of the table: the tensor's size is ``(num_embeddings, grad.dim)``.

    Returns
    -------
    torch.Tensor
        A coalesced ``torch.sparse_coo`` tensor whose indices and values share the
        gradient's memory (DLPack), as ``torch.nn.EmbeddingBag(sparse=True)`` produces.

    Raises
    ------
    TypeError
        Not a SparseGrad.
    IndexError
        A row outside ``[0, num_embeddings)``.
    ModuleNotFoundError
        torch is not installed.

    See Also
    --------
    sparse_grad_from_torch : The inverse.

    Notes
    -----
    A gradient on the device gives CUDA tensors; checking its rows reads the first and
    the last back (one synchronisation), after the coalescing of one not known to be
    coalesced (another).

    Examples
    --------
    >>> from arrow_sparse.interop.torch import sparse_grad_to_torch
    >>> g = asp.embedding.SparseGrad(np.array([1, 3]), np.ones((2, 2), np.float32))
    >>> sparse_grad_to_torch(g, 4).to_dense()
    tensor([[0., 0.],
            [1., 1.],
            [0., 0.],
            [1., 1.]])
    """
    func = "sparse_grad_to_torch"
    if not isinstance(grad, emb.SparseGrad):
        msg = f"{func}: grad must be a SparseGrad, got {type_name(grad)}"
        raise ArrowSparseTypeError(msg)
    num = v.check_count(func, "num_embeddings", num_embeddings)
    grad = grad.coalesce()
    if len(grad.rows):
        first, last = _backend.fetch(func, grad.rows[0], grad.rows[-1])
        if first < 0 or last >= num:
            bad = (grad.rows < 0) | (grad.rows >= num)
            pos = _backend.fetch(func, bad.argmax())[0]
            msg = v.message(func, "grad.rows", f"out of range [0, {num})", pos,
                            first if first < 0 else _backend.fetch(func, grad.rows[pos])[0])
            raise ArrowSparseIndexError(msg)
    return _sparse_tensor(func, import_optional("torch", "torch"), grad, num)


def _sparse_tensor(func: str, torch: Any, grad: emb.SparseGrad, num: int) -> Any:
    """Make a coalesced COO tensor sharing a coalesced gradient's memory (no checks)."""
    xp = _backend.module_of(grad.values)
    return torch.sparse_coo_tensor(torch_tensor(func, torch, grad.rows.reshape(1, -1)),
                                   torch_tensor(func, torch, xp.ascontiguousarray(grad.values)),
                                   (num, grad.dim), check_invariants=False, is_coalesced=True)


def sparse_grad_from_torch(grad: Any) -> emb.SparseGrad:
    """Convert a sparse COO gradient (``weight.grad`` of a sparse embedding) to a SparseGrad.

    Parameters
    ----------
    grad
        A 2-D CPU or CUDA ``torch.sparse_coo`` tensor ``(num_embeddings, dim)`` with one sparse
        dimension, as ``torch.nn.EmbeddingBag(sparse=True)`` and :class:`EmbeddingBag`
        leave in ``weight.grad``.

    Returns
    -------
    SparseGrad
        Coalesced; its rows and values share the tensor's memory (unless it had to be
        coalesced): numpy arrays, or CuPy arrays for a CUDA tensor.

    Raises
    ------
    TypeError
        Not a sparse COO tensor with one sparse and one dense dimension, or not on the
        CPU or CUDA (CUDA needs CuPy).

    See Also
    --------
    sparse_grad_to_torch : The inverse.
    arrow_sparse.embedding.sgd : Apply it to the weight's memory in place.

    Notes
    -----
    Autograd's accumulation into ``weight.grad`` drops the tensor's coalesced flag (for
    PyTorch's own ``EmbeddingBag`` too), so the rows are checked instead: unique, sorted
    rows are used as they are, others are coalesced first (by PyTorch: a copy). With it
    the fused
    optimizers of :mod:`arrow_sparse.embedding` update a module's weight in place,
    instead of ``torch.optim``: ``emb.sgd(weight.detach().numpy(), g, lr)``.

    Examples
    --------
    >>> import torch
    >>> from arrow_sparse.interop.torch import sparse_grad_from_torch
    >>> t = torch.sparse_coo_tensor([[3, 1, 3]], torch.ones(3, 2), (4, 2), check_invariants=True)
    >>> g = sparse_grad_from_torch(t)
    >>> g.rows, g.values
    (array([1, 3]), array([[1., 1.],
           [2., 2.]], dtype=float32))
    """
    func = "sparse_grad_from_torch"
    torch = loaded("torch")
    if torch is None or not isinstance(grad, torch.Tensor) or grad.layout != torch.sparse_coo:
        msg = f"{func}: grad must be a sparse COO torch.Tensor, got {_describe(torch, grad)}"
        raise ArrowSparseTypeError(msg)
    if grad.sparse_dim() != 1 or grad.dense_dim() != 1:
        msg = (f"{func}: grad must have one sparse and one dense dimension (rows of a table), "
               f"got {grad.sparse_dim()} sparse and {grad.dense_dim()} dense")
        raise ArrowSparseTypeError(msg)
    rows = _array(func, "grad", torch, grad._indices()[0])
    if not grad.is_coalesced() and not bool((rows[1:] > rows[:-1]).all()):
        grad = grad.coalesce()
        rows = _array(func, "grad", torch, grad._indices()[0])
    return emb.SparseGrad._coalesced(rows, _array(func, "grad", torch, grad._values()))


def _describe(torch: Any, x: Any) -> str:
    if torch is not None and isinstance(x, torch.Tensor):
        return f"a tensor with layout {x.layout}"
    return type_name(x)


def embedding_bag(input: Any, weight: Any, offsets: Any = None, max_norm: float | None = None,
                  norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                  sparse: bool = True, per_sample_weights: Any = None,
                  include_last_offset: bool = False, padding_idx: int | None = None) -> Any:
    """``torch.nn.functional.embedding_bag`` computed by :mod:`arrow_sparse.embedding`.

    The same signature, arguments and result as PyTorch's; the forward runs
    :func:`arrow_sparse.embedding.lookup` on the weight's memory and the backward
    :func:`arrow_sparse.embedding.lookup_backward` (through :class:`EmbeddingBagFunction`).

    Parameters
    ----------
    input
        Integer tensor of ids: 1-D with ``offsets``, or 2-D ``[bags, k]`` (bags of
        ``k`` ids each, ``offsets`` None).
    weight
        The table, a float32 or float64 tensor ``[num_embeddings, embedding_dim]``: on
        the CPU, or on a CUDA device with every other tensor (read through CuPy).
    offsets
        1-D integer tensor. ``include_last_offset=False`` (PyTorch's default): the start
        of each bag, the last bag running to the end of ``input``. ``True``: ``bags + 1``
        boundaries.
    max_norm
        Must be None (renormalising rows in place at lookup time is not supported).
    norm_type
        Unused (it only matters with ``max_norm``).
    scale_grad_by_freq
        Divide each row's gradient by the number of times its id occurs in ``input``
        (padding ids not counted). Unlike PyTorch, also with ``sparse=True``; and PyTorch
        2.13's CPU ``embedding_bag`` divides some rows by another row's count
        (pytorch/pytorch#190063), which this does not copy.
    mode
        ``"sum"``, ``"mean"`` (PyTorch's default) or ``"max"`` (each element's gradient
        goes to the row its max came from).
    sparse
        True (default, unlike PyTorch): the weight's gradient is a sparse COO tensor with
        unique, sorted rows (coalesced; autograd's accumulation into ``weight.grad``
        drops the flag, as for PyTorch's own). False: a dense tensor.
    per_sample_weights
        Float tensor of the input's shape; each row is scaled by its weight before
        pooling. PyTorch allows it with ``"sum"`` only; here ``"mean"`` too (not
        ``"max"``). It gets a gradient when it requires one.
    include_last_offset
        See ``offsets``.
    padding_idx
        Ids equal to it are left out of every bag (not counted by ``"mean"``) and get no
        gradient; negative values count from the end.

    Returns
    -------
    torch.Tensor
        ``[bags, embedding_dim]`` of the weight's dtype.

    Raises
    ------
    TypeError
        Arguments that are not tensors, tensors on another device than the CPU or CUDA
        (move them with ``.cpu()``), CUDA tensors without CuPy installed, tensors on
        different devices, a weight that is not float32/float64, non-integer ids.
    ValueError
        An unknown ``mode``, ``max_norm`` given, malformed offsets, ``offsets`` with a
        2-D input (or missing with a 1-D one), ``per_sample_weights`` or
        ``scale_grad_by_freq`` with ``mode="max"``.
    IndexError
        An id outside ``[0, num_embeddings)``.
    ModuleNotFoundError
        torch is not installed.

    See Also
    --------
    EmbeddingBag : The module.
    arrow_sparse.embedding.lookup : The forward.

    Notes
    -----
    Zero-copy: the weight, ids, offsets and weights are read through DLPack; the result
    and the gradient are numpy arrays handed to torch without a copy. Empty bags give
    zeros, as in PyTorch.

    ``mode="max"``: the forward keeps, per bag and column, the id its max came from
    (:func:`arrow_sparse.embedding.lookup` with ``return_argmax=True``), and the
    backward sends each element of ``grad_output`` to that row only
    (:func:`arrow_sparse.embedding.lookup_backward` with ``argmax=``): PyTorch's
    gradient, ties to the first occurrence in the bag, and none from an empty bag. Unlike
    PyTorch, also with ``sparse=True`` (the rows are those that won an element). The
    max is IEEE ``maximum``: where PyTorch keeps the first of ``-0.0`` and ``0.0``, or a
    number before a NaN, this takes ``0.0`` and the NaN (and their rows).

    CUDA tensors run on their device through CuPy (:mod:`arrow_sparse.embedding` on
    device arrays, results handed back as CUDA tensors): the ids are checked by the
    kernels there (an id out of range is raised by a later check, as a ``lookup``
    error), and the backward synchronises once (the sort of the ids).

    Examples
    --------
    >>> import torch
    >>> from arrow_sparse.interop.torch import embedding_bag
    >>> weight = torch.arange(16.0).reshape(8, 2).requires_grad_()
    >>> ids = torch.tensor([1, 2, 3, 2, 4, 6, 7, 3, 6])
    >>> out = embedding_bag(ids, weight, torch.tensor([0, 3, 7]), mode="sum")
    >>> out.detach()
    tensor([[12., 15.],
            [38., 42.],
            [18., 20.]])
    >>> out.sum().backward()
    >>> weight.grad
    tensor(indices=tensor([[1, 2, 3, 4, 6, 7]]),
           values=tensor([[1., 1.],
                          [2., 2.],
                          [2., 2.],
                          [1., 1.],
                          [2., 2.],
                          [1., 1.]]),
           size=(8, 2), nnz=6, layout=torch.sparse_coo)
    """
    func = "embedding_bag"
    torch = import_optional("torch", "torch")
    table = _weight_array(func, torch, weight)
    _check_options(func, mode, max_norm, scale_grad_by_freq, sparse, include_last_offset)
    padding = _padding(func, padding_idx, table.shape[0])
    if mode == "max" and per_sample_weights is not None:
        msg = (f"{func}: per_sample_weights are not supported with mode='max' (as in "
               "PyTorch); use 'sum' or 'mean'")
        raise ArrowSparseValueError(msg)
    return _classes()["EmbeddingBagFunction"].apply(
        weight, input, offsets, per_sample_weights, mode, bool(include_last_offset), padding,
        bool(sparse), bool(scale_grad_by_freq))


def _backward(ctx: Any, torch: Any, grad_output: Any) -> tuple[Any, Any]:
    """Gradients of the weight and of the per-sample weights (None where not needed)."""
    func = "embedding_bag"
    bags: _Bags = ctx.bags
    (weight,) = ctx.saved_tensors
    table = _array(func, "weight", torch, weight)
    dy = _array(func, "grad_output", torch, grad_output.contiguous())
    d_weight = d_samples = None
    if ctx.needs_input_grad[0]:
        g, starts = backward(dy, bags.ids, bags.offsets, ctx.mode, bags.weights, len(table),
                             ctx.argmax)
        if ctx.scale_grad_by_freq and len(g.rows):
            counts = _backend.module_of(starts).diff(starts)  # reads of each row's id
            g = emb.SparseGrad._coalesced(
                g.rows, g.values / counts[:, None].astype(g.values.dtype))
        d_weight = _sparse_tensor(func, torch, g, len(table))
        if not ctx.sparse:
            d_weight = d_weight.to_dense()
    if ctx.needs_input_grad[3]:
        flat = emb.lookup_backward_weights(dy, table, bags.ids, offsets=bags.offsets,
                                           mode=ctx.mode)
        if isinstance(flat, Jagged):  # padding ids (null ids) got 0
            flat = flat.values
        d_samples = torch_tensor(func, torch,
                                 flat.reshape(bags.shape).astype(table.dtype, copy=False))
    return d_weight, d_samples


@functools.cache
def _classes() -> dict[str, type]:
    """Build the torch classes on first use (torch is imported then, not before)."""
    torch = import_optional("torch", "torch")
    from torch.autograd.function import once_differentiable

    class EmbeddingBagFunction(torch.autograd.Function):  # type: ignore[misc,name-defined]
        __doc__ = _FUNCTION_DOC

        @staticmethod
        def forward(ctx: Any, weight: Any, input: Any, offsets: Any, per_sample_weights: Any,
                    mode: str, include_last_offset: bool, padding_idx: int | None,
                    sparse: bool, scale_grad_by_freq: bool) -> Any:
            func = "embedding_bag"
            table = _weight_array(func, torch, weight)
            bags = _torch_bags(func, torch, input, offsets, per_sample_weights,
                               include_last_offset, padding_idx, len(table))
            ctx.argmax = None
            if mode == "max":
                out, ctx.argmax = emb.lookup(table, bags.ids, offsets=bags.offsets, mode=mode,
                                             return_argmax=True)
            else:
                out = emb.lookup(table, bags.ids, offsets=bags.offsets, mode=mode,
                                 per_sample_weights=bags.weights)
            ctx.bags, ctx.mode, ctx.sparse = bags, mode, sparse
            ctx.scale_grad_by_freq = scale_grad_by_freq
            ctx.save_for_backward(weight)
            return torch_tensor(func, torch, out.astype(table.dtype, copy=False))

        @staticmethod
        @once_differentiable  # type: ignore[misc]
        def backward(ctx: Any, grad_output: Any) -> tuple[Any, ...]:
            d_weight, d_samples = _backward(ctx, torch, grad_output)
            return d_weight, None, None, d_samples, None, None, None, None, None

    class EmbeddingBag(torch.nn.Module):  # type: ignore[misc,name-defined]
        __doc__ = _MODULE_DOC

        def __init__(self, num_embeddings: int, embedding_dim: int,
                     max_norm: float | None = None, norm_type: float = 2.0,
                     scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = True,
                     _weight: Any = None, include_last_offset: bool = False,
                     padding_idx: int | None = None, device: Any = None,
                     dtype: Any = None) -> None:
            super().__init__()
            func = "EmbeddingBag"
            num = v.check_count(func, "num_embeddings", num_embeddings)
            dim = v.check_count(func, "embedding_dim", embedding_dim)
            _check_options(func, mode, max_norm, scale_grad_by_freq, sparse,
                           include_last_offset)
            self.num_embeddings, self.embedding_dim = num, dim
            self.max_norm, self.norm_type = max_norm, norm_type
            self.scale_grad_by_freq, self.mode, self.sparse = scale_grad_by_freq, mode, sparse
            self.include_last_offset = include_last_offset
            self.padding_idx = _padding(func, padding_idx, num)
            if _weight is None:
                weight = torch.empty((num, dim), device=device, dtype=dtype)
            else:
                weight = _weight
                if not isinstance(weight, torch.Tensor):
                    msg = f"{func}: _weight must be a torch.Tensor, got {type_name(weight)}"
                    raise ArrowSparseTypeError(msg)
                if tuple(weight.shape) != (num, dim):
                    msg = (f"{func}: _weight must have shape ({num}, {dim}), "
                           f"got {tuple(weight.shape)}")
                    raise ArrowSparseValueError(msg)
            _weight_array(func, torch, weight.detach())  # CPU, float32/float64
            self.weight = torch.nn.Parameter(weight)
            if _weight is None:
                self.reset_parameters()

        def reset_parameters(self) -> None:
            """Draw the weight from N(0, 1) (PyTorch's init); zero the padding row."""
            torch.nn.init.normal_(self.weight)
            if self.padding_idx is not None:
                with torch.no_grad():
                    self.weight[self.padding_idx].fill_(0)

        def forward(self, input: Any, offsets: Any = None,
                    per_sample_weights: Any = None) -> Any:
            """Pool the bags (see :func:`embedding_bag`)."""
            return embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                                 self.scale_grad_by_freq, self.mode, self.sparse,
                                 per_sample_weights, self.include_last_offset, self.padding_idx)

        def extra_repr(self) -> str:
            text = f"{self.num_embeddings}, {self.embedding_dim}, mode={self.mode!r}"
            if self.padding_idx is not None:
                text += f", padding_idx={self.padding_idx}"
            return text + f", sparse={self.sparse}"

        @classmethod
        def from_pretrained(cls, embeddings: Any, freeze: bool = True,
                            max_norm: float | None = None, norm_type: float = 2.0,
                            scale_grad_by_freq: bool = False, mode: str = "mean",
                            sparse: bool = True, include_last_offset: bool = False,
                            padding_idx: int | None = None) -> Any:
            """Make a module whose weight is ``embeddings`` (PyTorch's ``from_pretrained``)."""
            if not isinstance(embeddings, torch.Tensor) or embeddings.dim() != 2:
                msg = "EmbeddingBag.from_pretrained: embeddings must be a 2-D tensor"
                raise ArrowSparseValueError(msg)
            module = cls(embeddings.shape[0], embeddings.shape[1], max_norm, norm_type,
                         scale_grad_by_freq, mode, sparse, embeddings, include_last_offset,
                         padding_idx)
            module.weight.requires_grad = not freeze
            return module

    EmbeddingBagFunction.__module__ = EmbeddingBag.__module__ = __name__
    return {"EmbeddingBagFunction": EmbeddingBagFunction, "EmbeddingBag": EmbeddingBag}


def __dir__() -> list[str]:
    """List the public names (``__all__``, the lazily built classes included)."""
    return sorted(__all__)


def __getattr__(name: str) -> Any:
    """Build :class:`EmbeddingBag` and :class:`EmbeddingBagFunction` on first access.

    :class:`SparseDataset` and :func:`make_loader` are those of
    :mod:`arrow_sparse.interop.torch_data`.
    """
    if name in ("EmbeddingBag", "EmbeddingBagFunction"):
        return _classes()[name]
    if name in ("SparseDataset", "make_loader"):
        return getattr(_torch_data, name)
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)


_FUNCTION_DOC = """``torch.autograd.Function`` of :func:`embedding_bag`.

    ``EmbeddingBagFunction.apply(weight, input, offsets, per_sample_weights, mode,
    include_last_offset, padding_idx, sparse, scale_grad_by_freq)``, with the arguments
    already checked by :func:`embedding_bag` (call that instead). The forward is
    :func:`arrow_sparse.embedding.lookup` on numpy views (DLPack) of the tensors; the
    backward returns the weight's gradient from
    :func:`arrow_sparse.embedding.lookup_backward` as a coalesced sparse COO tensor (or
    dense with ``sparse=False``) and, when ``per_sample_weights`` requires a gradient,
    :func:`arrow_sparse.embedding.lookup_backward_weights`. With ``mode="max"`` the
    forward keeps the argmax ids of every bag and column (``return_argmax=True``) for
    the backward (``argmax=``): nothing is recomputed. It is not twice differentiable.

    Examples
    --------
    >>> import torch
    >>> from arrow_sparse.interop.torch import EmbeddingBagFunction
    >>> weight = torch.ones(4, 2, requires_grad=True)
    >>> out = EmbeddingBagFunction.apply(weight, torch.tensor([[0, 2], [2, 3]]), None, None,
    ...                                  "sum", False, None, True, False)
    >>> out.sum().backward()
    >>> weight.grad.to_dense()
    tensor([[1., 1.],
            [0., 0.],
            [2., 2.],
            [1., 1.]])
    """

_MODULE_DOC = """A drop-in ``torch.nn.EmbeddingBag`` computed by :mod:`arrow_sparse.embedding`.

    Same constructor and ``forward(input, offsets=None, per_sample_weights=None)`` as
    PyTorch's, and the same results (see :func:`embedding_bag` for every argument). The
    one difference in the defaults: ``sparse=True``, so ``weight.grad`` is a sparse COO
    tensor (unique, sorted rows) that ``torch.optim.SGD``, ``torch.optim.Adagrad`` and
    ``torch.optim.SparseAdam`` accept, or that :func:`sparse_grad_from_torch` hands to
    the fused optimizers of :mod:`arrow_sparse.embedding`. ``max_norm`` is not
    supported; ``mode="max"`` has a sparse gradient too. CPU tensors, or CUDA tensors
    with CuPy installed.

    Parameters
    ----------
    num_embeddings, embedding_dim
        The weight's shape.
    max_norm, norm_type, scale_grad_by_freq, mode, sparse, include_last_offset, padding_idx
        As :func:`embedding_bag`.
    _weight
        Initial weight (used as the parameter, not copied); default N(0, 1) draws with
        the padding row zeroed.
    device, dtype
        Of a new weight: the CPU; float32 (the default dtype) or float64.

    Examples
    --------
    >>> import torch
    >>> from arrow_sparse.interop.torch import EmbeddingBag
    >>> bag = EmbeddingBag(8, 2, mode="sum", _weight=torch.arange(16.0).reshape(8, 2))
    >>> bag
    EmbeddingBag(8, 2, mode='sum', sparse=True)
    >>> ids = torch.tensor([1, 2, 3, 2, 4, 6, 7, 3, 6])
    >>> out = bag(ids, torch.tensor([0, 3, 7]))
    >>> out.detach()
    tensor([[12., 15.],
            [38., 42.],
            [18., 20.]])
    >>> optimizer = torch.optim.SGD(bag.parameters(), lr=0.5)
    >>> out.sum().backward()
    >>> optimizer.step()
    >>> bag.weight[:4].detach()
    tensor([[0.0000, 1.0000],
            [1.5000, 2.5000],
            [3.0000, 4.0000],
            [5.0000, 6.0000]])
    """

__test__ = {"EmbeddingBag": _MODULE_DOC, "EmbeddingBagFunction": _FUNCTION_DOC}
