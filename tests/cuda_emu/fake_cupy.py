"""A stand-in for CuPy, for tests: device arrays in host memory, kernels on the emulator.

:func:`emulated_cupy` installs a module named ``cupy`` in ``sys.modules`` for the
duration of a test and routes the CUDA kernel families through the CPU emulator
(:mod:`tests.cuda_emu.emu`), so the library's real device dispatch runs in CI: public
functions see CuPy arrays (:func:`arrow_sparse._backend.is_cupy_array` is true for
:class:`ndarray`, whose class lives in the module ``cupy``), pick the CUDA launchers,
run the device checks and read back what they document.

It is stricter than CuPy where that catches bugs CuPy would hide or turn into slow code:

* implicit conversions fail: ``numpy.asarray(x)`` raises TypeError (as in CuPy), and
  so do numpy functions called on a device array (CuPy would dispatch them), numpy
  arrays given to a device function or operator, and a numpy array (other than the
  kernels' error word) given to a device kernel launch;
* only ``asarray``/``array`` (host to device) and ``.get()``/``asnumpy`` (device to
  host) move data;
* every read of device data by the host (``.get()``, ``int(x)``, ``bool(x)``,
  ``.item()``, ``.tolist()``, boolean-mask indexing, ``nonzero``) counts as a
  synchronisation in :attr:`Stats.syncs`, and every device computation (a function,
  operator, reduction, copy or kernel launch) in :attr:`Stats.launches`, so tests can
  assert an operation's synchronisations and that its launches do not grow with the
  batch;
* two devices exist (``cupy.cuda.Device(0)`` and ``(1)``); arrays remember theirs.

Only what the library uses is implemented; anything else raises AttributeError.
"""

from __future__ import annotations

import contextlib
import importlib
import operator
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["DeviceBuffer", "Stats", "emulated_cupy", "make_module", "ndarray"]

NUM_DEVICES = 2
_HOST_ERROR = ("Implicit conversion to a NumPy array is not allowed. Please use `.get()` "
               "to construct a NumPy array explicitly.")


@dataclass
class Stats:
    """What the device did since the module was made (see the module docstring)."""

    syncs: int = 0
    launches: int = 0
    #: Names of the device computations, in order (kernel launches by name expression).
    log: list[str] = field(default_factory=list)

    def reset(self) -> None:
        self.syncs = self.launches = 0
        self.log.clear()


class _State:
    """The current device and the counters of the installed module."""

    def __init__(self) -> None:
        self.device = 0
        self.stats = Stats()


_STATE = _State()


def _launch(name: str) -> None:
    _STATE.stats.launches += 1
    _STATE.stats.log.append(name)


def _sync() -> None:
    _STATE.stats.syncs += 1


class Device:
    """``cupy.cuda.Device``: a context manager making device ``id`` current."""

    def __init__(self, device: int | None = None) -> None:
        self.id = _STATE.device if device is None else int(device)
        if not 0 <= self.id < NUM_DEVICES:
            msg = f"cudaErrorInvalidDevice: invalid device ordinal {self.id}"
            raise RuntimeError(msg)
        self._previous: list[int] = []

    def __enter__(self) -> Device:
        self._previous.append(_STATE.device)
        _STATE.device = self.id
        return self

    def __exit__(self, *exc: Any) -> None:
        _STATE.device = self._previous.pop()

    def __repr__(self) -> str:
        return f"<CUDA Device {self.id}>"


Device.__module__ = "cupy.cuda"


class ndarray:  # noqa: N801 (CuPy's name)
    """A device array: a numpy array that only the device functions may touch."""

    __slots__ = ("_a", "_device")
    __array_priority__ = 100  # CuPy's: operands of a higher priority take the operator

    def __init__(self, a: np.ndarray, device: int | None = None) -> None:
        self._a = a
        self._device = _STATE.device if device is None else device

    # ---- metadata (no device access)
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    strides = property(lambda self: self._a.strides)
    flags = property(lambda self: self._a.flags)
    device = property(lambda self: Device(self._device))

    def __len__(self) -> int:
        return len(self._a)

    def __repr__(self) -> str:
        return f"fake_cupy.ndarray(shape={self.shape}, dtype={self.dtype})"

    # ---- implicit host conversions: refused, or counted as synchronisations
    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise TypeError(_HOST_ERROR)

    def __iter__(self) -> Iterator[Any]:
        raise TypeError("fake cupy: iterating a device array reads it element by element; "
                        "use .get() (or a device function) instead")

    def get(self, stream: Any = None) -> np.ndarray:
        _sync()
        return self._a.copy()

    def item(self) -> Any:
        _sync()
        return self._a.item()

    def tolist(self) -> Any:
        _sync()
        return self._a.tolist()

    def __int__(self) -> int:
        _sync()
        return int(self._a)

    def __index__(self) -> int:
        _sync()
        return operator.index(self._a.item())

    def __float__(self) -> float:
        _sync()
        return float(self._a)

    def __bool__(self) -> bool:
        _sync()
        return bool(self._a)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, self._device)  # kDLCUDA

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        raise BufferError("fake cupy: device memory can only be imported by cupy.from_dlpack")

    # ---- views and copies
    def __getitem__(self, key: Any) -> ndarray:
        key = _unwrap(key)
        if _is_bool_mask(key):
            _sync()  # the result size depends on the data
        _launch("getitem")
        result = self._a[key]
        if not isinstance(result, np.ndarray):
            result = np.array(result)
        return ndarray(result, self._device)

    def __setitem__(self, key: Any, value: Any) -> None:
        _launch("setitem")
        self._a[_unwrap(key)] = _unwrap(value)

    def astype(self, dtype: Any, copy: bool = True) -> ndarray:
        _launch("astype")
        result = self._a.astype(dtype, copy=copy)
        return self if result is self._a else ndarray(result, self._device)

    def view(self, dtype: Any) -> ndarray:
        return ndarray(self._a.view(dtype), self._device)

    def reshape(self, *shape: Any) -> ndarray:
        return ndarray(self._a.reshape(*shape), self._device)

    def ravel(self) -> ndarray:
        return ndarray(self._a.ravel(), self._device)

    def copy(self) -> ndarray:
        _launch("copy")
        return ndarray(self._a.copy(), self._device)

    def fill(self, value: Any) -> None:
        _launch("fill")
        self._a.fill(_unwrap(value))

    @property
    def T(self) -> ndarray:  # noqa: N802 (numpy's name)
        return ndarray(self._a.T, self._device)


def _is_bool_mask(key: Any) -> bool:
    return isinstance(key, np.ndarray) and key.dtype == bool


def _unwrap(x: Any) -> Any:
    """Device arrays to their memory; numpy arrays are refused (no implicit transfer)."""
    if isinstance(x, ndarray):
        return x._a
    if isinstance(x, np.ndarray):
        msg = f"Unsupported type {type(x)} (fake cupy: move host arrays with cupy.asarray)"
        raise TypeError(msg)
    if isinstance(x, (list, tuple)):
        return type(x)(_unwrap(item) for item in x)
    if isinstance(x, dict):
        return {k: _unwrap(v) for k, v in x.items()}
    return x


def _wrap(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return ndarray(x)
    if isinstance(x, np.generic):
        return ndarray(np.array(x))
    if isinstance(x, tuple):
        return tuple(_wrap(item) for item in x)
    return x


def _reduction(name: str) -> Callable[..., ndarray]:
    def method(self: ndarray, *args: Any, **kwargs: Any) -> ndarray:
        _launch(name)
        return ndarray(np.asarray(getattr(self._a, name)(*_unwrap(args), **_unwrap(kwargs))),
                       self._device)
    method.__name__ = name
    return method


for _name in ("max", "min", "sum", "any", "all", "argmax", "argmin", "cumsum", "prod"):
    setattr(ndarray, _name, _reduction(_name))


def _operator(name: str) -> Callable[..., Any]:
    def method(self: ndarray, *other: Any) -> Any:
        if other and not isinstance(other[0], ndarray) and \
                getattr(other[0], "__array_priority__", 0) > ndarray.__array_priority__:
            return NotImplemented  # as CuPy: the other operand's reflected operator runs
        _launch(name)
        return _wrap(getattr(self._a, name)(*(_unwrap(o) for o in other)))
    method.__name__ = name
    return method


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor",
              "lshift", "rshift", "lt", "le", "gt", "ge", "eq", "ne"):
    setattr(ndarray, f"__{_name}__", _operator(f"__{_name}__"))
    if _name not in ("lt", "le", "gt", "ge", "eq", "ne"):
        setattr(ndarray, f"__r{_name}__", _operator(f"__r{_name}__"))
for _name in ("neg", "pos", "abs", "invert"):
    setattr(ndarray, f"__{_name}__", _operator(f"__{_name}__"))
ndarray.__hash__ = None  # type: ignore[assignment]
ndarray.__module__ = "cupy"


# ---------------------------------------------------------------------- module functions
def _on_device(a: Any, dtype: Any = None) -> ndarray:
    """Host data (numpy, sequences, scalars) copied to the current device."""
    if isinstance(a, ndarray):
        if a._device != _STATE.device:  # a peer copy
            _launch("copy")
            return ndarray(np.array(a._a, dtype=dtype), _STATE.device)
        return a if dtype is None or a.dtype == dtype else a.astype(dtype)
    if not isinstance(a, (np.ndarray, np.generic, list, tuple, int, float, bool)):
        msg = f"fake cupy: cannot move {type(a).__name__} to the device"
        raise TypeError(msg)
    _launch("host_to_device")
    return ndarray(np.array(a, dtype=dtype, copy=True))


def asarray(a: Any, dtype: Any = None) -> ndarray:
    return _on_device(a, dtype)


def array(a: Any, dtype: Any = None, copy: bool = True) -> ndarray:
    result = _on_device(a, dtype)
    if copy and isinstance(a, ndarray) and result is a:
        return a.copy()
    return result


def asnumpy(a: Any) -> np.ndarray:
    return a.get() if isinstance(a, ndarray) else np.asarray(a)


def ascontiguousarray(a: Any, dtype: Any = None) -> ndarray:
    if not isinstance(a, ndarray):
        raise TypeError(f"Unsupported type {type(a)} (fake cupy: device arrays only)")
    result = np.ascontiguousarray(a._a, dtype=dtype)
    if result is a._a:
        return a
    _launch("ascontiguousarray")
    return ndarray(result, a._device)


def from_dlpack(x: Any) -> ndarray:
    """Zero-copy import of a device producer: a fake array or a :class:`DeviceBuffer`."""
    kind, index = x.__dlpack_device__()
    if int(kind) not in (2, 13):
        msg = "fake cupy: from_dlpack reads CUDA memory only"
        raise RuntimeError(msg)
    if isinstance(x, ndarray):
        return ndarray(x._a, x._device)
    if isinstance(x, DeviceBuffer):
        return ndarray(x.memory, int(index))
    msg = f"fake cupy: cannot import {type(x).__name__}"
    raise TypeError(msg)


class DeviceBuffer:
    """A foreign DLPack producer in device memory (standing in for a torch CUDA tensor)."""

    def __init__(self, memory: np.ndarray, device: int = 0) -> None:
        self.memory = memory
        self.device_id = device

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, self.device_id)

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        raise BufferError("fake cupy: device memory can only be imported by cupy.from_dlpack")


def _creator(np_func: Callable[..., np.ndarray]) -> Callable[..., ndarray]:
    def create(*args: Any, **kwargs: Any) -> ndarray:
        _launch(np_func.__name__)
        return ndarray(np_func(*_unwrap(args), **_unwrap(kwargs)))
    create.__name__ = np_func.__name__
    return create


def _function(name: str, *, syncs: bool = False) -> Callable[..., Any]:
    np_func = getattr(np, name)

    def function(*args: Any, **kwargs: Any) -> Any:
        _launch(name)
        if syncs:
            _sync()
        result = np_func(*_unwrap(args), **_unwrap(kwargs))
        if isinstance(result, (bool, int, float)):  # CuPy answers a 0-d device array
            result = np.asarray(result)
        return _wrap(result)
    function.__name__ = name
    return function


#: numpy functions CuPy has with the same behaviour on device arrays.
DEVICE_FUNCTIONS = ("diff", "cumsum", "searchsorted", "where", "maximum", "minimum", "stack",
                    "concatenate", "take", "logical_and", "logical_or", "logical_not",
                    "isnan", "count_nonzero", "argsort", "sort", "repeat")
#: Those whose result size depends on the data: CuPy reads it back (a synchronisation).
SYNCING_FUNCTIONS = ("nonzero", "flatnonzero", "unique")


def make_module() -> types.ModuleType:
    """A fresh ``cupy`` module object (not installed; see :func:`emulated_cupy`)."""
    module = types.ModuleType("cupy")
    module.__dict__.update(
        ndarray=ndarray, asarray=asarray, array=array, asnumpy=asnumpy,
        ascontiguousarray=ascontiguousarray, from_dlpack=from_dlpack,
        empty=_creator(np.empty), zeros=_creator(np.zeros), ones=_creator(np.ones),
        full=_creator(np.full), arange=_creator(np.arange),
        int8=np.int8, int16=np.int16, int32=np.int32, int64=np.int64, uint8=np.uint8,
        uint16=np.uint16, uint32=np.uint32, uint64=np.uint64, float16=np.float16,
        float32=np.float32, float64=np.float64, bool_=np.bool_,
        stats=_STATE.stats, DeviceBuffer=DeviceBuffer,
        cuda=types.SimpleNamespace(
            Device=Device,
            runtime=types.SimpleNamespace(getDevice=lambda: _STATE.device,
                                          getDeviceCount=lambda: NUM_DEVICES)),
    )
    for name in DEVICE_FUNCTIONS:
        setattr(module, name, _function(name))
    for name in SYNCING_FUNCTIONS:
        setattr(module, name, _function(name, syncs=True))
    for name in dir(np):  # CuPy has numpy's elementwise ufuncs by the same names
        if isinstance(getattr(np, name), np.ufunc) and not hasattr(module, name):
            setattr(module, name, _function(name))
    module.may_share_memory = lambda a, b: np.may_share_memory(_unwrap(a), _unwrap(b))
    return module


class _DeviceModule:
    """An emulator module that launches on device arrays: ``get_function`` like RawModule."""

    def __init__(self, module: Any) -> None:
        self._module = module

    def get_function(self, name: str) -> Callable[..., None]:
        function = self._module.get_function(name)
        cuda = importlib.import_module("arrow_sparse.kernels.cuda")

        def launch(grid: Any, block: Any, args: Any) -> None:
            memory = []
            error_word = cuda.error_buffer()
            for i, arg in enumerate(args):
                if isinstance(arg, ndarray):
                    arg = arg._a
                elif isinstance(arg, np.ndarray) and arg is not error_word:
                    msg = (f"fake cupy: {name} argument {i} is a host (numpy) array in a device "
                           "launch (an illegal address on a GPU)")
                    raise TypeError(msg)
                memory.append(arg)
            _launch(name)
            function(grid, block, tuple(memory))
        return launch


@contextlib.contextmanager
def emulated_cupy(**emulator_options: Any) -> Iterator[types.ModuleType]:
    """Install the stand-in ``cupy`` and the emulator for device arrays; yield the module.

    Host (numpy) arrays keep the CPU kernels. ``emulator_options`` go to
    :func:`tests.cuda_emu.emu.emulated` (thread orders). Everything is undone on exit,
    including pending device errors.
    """
    from arrow_sparse import _backend
    from tests.cuda_emu.emu import emulated

    module = make_module()
    previous = sys.modules.get("cupy")
    _STATE.device = 0
    _STATE.stats.reset()
    sys.modules["cupy"] = module
    try:
        with emulated(**emulator_options) as emulator:
            _backend.set_cuda_module_factory(
                lambda family, code, names: _DeviceModule(emulator(family, code, names)),
                host_arrays=False)
            module.emulator = emulator  # type: ignore[attr-defined]
            yield module
    finally:
        if previous is None:
            sys.modules.pop("cupy", None)
        else:
            sys.modules["cupy"] = previous
