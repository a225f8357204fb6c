"""CUDA kernels for CuPy: one ``<family>.cu`` per kernel family, compiled lazily.

The loader reads ``<family>.cu``, puts the text of ``_common.cuh`` in front of it (not
an ``#include``: CuPy's cache key covers only the source text, cupy#6159) with
``#line 1`` directives so compiler errors name the real file and line, and compiles
it with ``cupy.RawModule(code=..., options=OPTIONS, name_expressions=...)``. The name
expressions come from the family's Python launchers (``kernels/cuda/<family>.py``,
variable ``NAME_EXPRESSIONS``), which use the one dtype -> C type table in
:mod:`._launch`.

Launchers: ``<family>.py`` lists in ``__all__`` the twins of the CPU kernels of
:mod:`arrow_sparse.kernels.cpu` (same names) and in ``DEVICE_ONLY`` the launchers
without a CPU twin (device checks, device-side gathers). :func:`get_launcher` returns
either. A launcher takes the array module (numpy under the emulator, else CuPy) as its
first parameter and the CPU kernel's parameters after it; it never looks the module up
itself (:func:`arrow_sparse._backend.get_kernel` binds it once).

Compilation is lazy twice over: nothing is compiled before a family's first launch,
and then only the *compile group* of the launched name expression (the kernel and its
first template argument, :func:`group_of`), so the first ``segment_sum`` on
float32 compiles a handful of ``sorted_sum<float, ...>`` variants, not all of
``segment.cu``. Groups are memoised per device (CuPy's on-disk cache does the rest).

Kernels report inputs that host validation should have rejected through the device
error word (:func:`error_buffer`, ``ASP_RAISE`` in ``_common.cuh``); the dispatch calls
:func:`check_errors` once per operation.

CuPy is imported only when a module is first compiled. Tests replace the compiler with
the CPU emulator through :func:`set_module_factory` (the public
:func:`arrow_sparse._backend.set_cuda_module_factory`). Nothing here imports from the
package above ``kernels/`` but :mod:`arrow_sparse.errors`.
"""

from __future__ import annotations

import importlib
import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from ...errors import ArrowSparseError, ArrowSparseIndexError, ArrowSparseValueError
from .. import KERNEL_FAMILIES

__all__ = ["EMPTY", "EMULATOR_MACRO", "ERROR_NONE", "FACTORY", "FUNCTIONS", "OPTIONS", "STATE",
           "FamilyModule", "ModuleFactory", "check_errors", "clear_cache", "decode_error",
           "device_key", "device_only", "error_buffer", "error_messages", "fetch",
           "get_launcher", "group_of", "has_family", "import_cupy", "load_module",
           "name_expressions", "read_scalars", "set_module_factory", "source"]

_DIR = Path(__file__).resolve().parent
#: NVRTC options of every module (``nvcc --ptx`` in the tests uses exactly these).
OPTIONS: tuple[str, ...] = ("-std=c++17",)
#: Defined by the emulator only: selects the barrier-free variant of a kernel.
EMULATOR_MACRO = "ARROW_SPARSE_EMULATOR"

_MODULES: dict[tuple[str, Any], FamilyModule] = {}
_ERROR_BUFFERS: dict[Any, Any] = {}
#: Kernel functions by ``(family, name expression, device key)``: the launch's memo
#: (``_launch.launch`` reads it without a call; :func:`clear_cache` empties it).
FUNCTIONS: dict[tuple[str, str, Any], Any] = {}
#: Empty arrays by ``(device key, array module, dtype)``: the pointer a kernel gets for
#: an absent input (a size-0 array is never read or written, so one can be shared).
EMPTY: dict[tuple[Any, Any, Any], Any] = {}
#: Deferred checks ``(func, device key, host word, event)``, see :func:`check_errors`.
_PENDING: list[tuple[str, Any, Any, Any]] = []
#: Pinned host words and events of consumed deferred checks, reused (per device key).
_SNAPSHOTS: dict[Any, list[tuple[Any, Any]]] = {}
_LOCK = threading.RLock()


class _State:
    """What the call path reads without a function call (one object, shared by reference).

    ``factory_key``: the memo key of the device while a module factory is set (None:
    ask CuPy for the current device); ``cupy`` and ``runtime``: the CuPy module the
    runtime was taken from and its ``cuda.runtime`` (used while ``sys.modules`` still
    holds that module: a CuPy replaced or removed since is asked again); ``word``:
    ``(device key, error word)`` read by the last :func:`read_scalars`, valid until the
    next launch (which may write the word) or reset.
    """

    __slots__ = ("cupy", "factory_key", "runtime", "word")

    def __init__(self) -> None:
        self.factory_key: Any = None
        self.cupy: Any = None
        self.runtime: Any = None
        self.word: tuple[Any, int] | None = None


STATE = _State()


def has_family(family: str) -> bool:
    """Whether ``family`` has CUDA kernels (a ``<family>.cu`` file)."""
    return (_DIR / f"{family}.cu").is_file()


def source(family: str) -> str:
    """Return the exact text compiled for ``family``: ``_common.cuh`` then ``<family>.cu``.

    Between the two, ``#define ASP_FAMILY_ID <index>`` names the family in the error
    words its kernels record.
    """
    parts = []
    for path in (_DIR / "_common.cuh", _DIR / f"{family}.cu"):
        if path.suffix == ".cu":
            parts.append(f"#define ASP_FAMILY_ID {KERNEL_FAMILIES.index(family)}\n")
        text = path.read_text(encoding="utf-8")
        parts.append(f'#line 1 "{path.as_posix()}"\n{text}')
        if not text.endswith("\n"):
            parts.append("\n")
    return "".join(parts)


def _launchers(family: str) -> ModuleType:
    """Import the launcher module ``<family>.py`` (on first use; CuPy is not imported)."""
    return importlib.import_module(f"{__name__}.{family}")


def name_expressions(family: str) -> list[str]:
    """Every template instantiation of ``family`` (from its launcher module)."""
    return list(_launchers(family).NAME_EXPRESSIONS)


def group_of(name: str) -> str:
    """Return the compile group of a name expression: the kernel and its first template argument.

    The loader compiles one group at a time (``pad_rows<float, int>`` and
    ``pad_rows<float, long long>`` together, ``pad_rows<double, ...>`` on its first use),
    so the first call of an op pays for its own variants only.
    """
    head, _, args = name.partition("<")
    return f"{head}<{args.split(',')[0].rstrip('>').strip()}>" if args else head


def import_cupy(what: str) -> ModuleType:
    """Return CuPy, importing it on first use; if it is missing, say how to install it.

    ``what`` (the operation that needs it) starts the ModuleNotFoundError's message.
    Once imported, CuPy is found in ``sys.modules`` (every launch asks for the current
    device: no import machinery runs for it).
    """
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        return cupy
    try:
        cupy = importlib.import_module("cupy")
    except ModuleNotFoundError:
        msg = (f"{what}: the GPU backend needs the optional dependency 'cupy'; "
               "pip install 'arrow-sparse[gpu]'")
        raise ModuleNotFoundError(msg) from None
    return cupy


def _cupy_module(family: str, code: str, names: list[str]) -> Any:
    cupy = import_cupy(f"{family} kernels")
    return cupy.RawModule(code=code, options=OPTIONS, name_expressions=names)


class FamilyModule:
    """The kernels of one family on one device, compiled group by group on first use.

    ``get_function(name_expression)`` returns a callable ``(grid, block, args)``, like
    ``cupy.RawModule``; ``build(family, code, names)`` compiles one group.
    """

    def __init__(self, family: str, build: Callable[[str, str, list[str]], Any]) -> None:
        self.family = family
        self._build = build
        self._groups: dict[str, list[str]] = {}
        for name in name_expressions(family):
            self._groups.setdefault(group_of(name), []).append(name)
        self._modules: dict[str, Any] = {}
        self._functions: dict[str, Any] = {}

    @property
    def compiled_groups(self) -> list[str]:
        """The groups compiled so far, in order."""
        return list(self._modules)

    def get_function(self, name: str) -> Any:
        """Return the kernel instantiated by name expression ``name`` (memoised)."""
        function = self._functions.get(name)
        if function is not None:
            return function
        group = group_of(name)
        names = self._groups.get(group, ())
        if name not in names:
            msg = f"{name!r} is not a name expression of the {self.family} kernels"
            raise KeyError(msg)
        with _LOCK:
            module = self._modules.get(group)
            if module is None:
                module = self._build(self.family, source(self.family), list(names))
                self._modules[group] = module
            function = self._functions[name] = module.get_function(name)
        return function


@dataclass(frozen=True, eq=False)
class ModuleFactory:
    """Who compiles the kernel families: CuPy, or a test hook (see :func:`set_module_factory`)."""

    #: ``build(family, code, name_expressions)`` returns an object with
    #: ``get_function(name_expression)`` like ``cupy.RawModule``; None: CuPy compiles.
    build: Callable[[str, str, list[str]], Any] | None = None
    #: Whether host (numpy) arrays run on the built kernels too (the CPU emulator).
    host_arrays: bool = True


#: The factory in force. :func:`set_module_factory` replaces it (never mutates it), so
#: its identity names the current routing: the kernel registry keys its memo by it.
#: Read it as ``cuda.FACTORY``: a name imported from here would keep an old one.
FACTORY = ModuleFactory()


def set_module_factory(build: Callable[[str, str, list[str]], Any] | None, *,
                       host_arrays: bool = True) -> None:
    """Compile the kernel families with ``build`` instead of CuPy (None: CuPy again).

    Forgets every compiled module, error word and deferred check. See
    :func:`arrow_sparse._backend.set_cuda_module_factory`, the public test hook.
    """
    global FACTORY
    with _LOCK:
        FACTORY = ModuleFactory(build, host_arrays)
        STATE.factory_key = None if build is None else ("factory", id(build))
        clear_cache()


def device_key() -> Any:
    """Memo key of the current device: the factory's while one is set, else the device id.

    The hot paths (``_launch.launch``, :func:`error_buffer`) read ``STATE`` inline
    instead of calling this.
    """
    key = STATE.factory_key
    if key is not None:
        return key
    cupy = sys.modules.get("cupy")
    if cupy is None or cupy is not STATE.cupy:
        cupy = import_cupy("CUDA kernels")
        STATE.cupy, STATE.runtime = cupy, cupy.cuda.runtime
    return STATE.runtime.getDevice()


#: The old private name (tests and tools may still call it).
_device_key = device_key


def load_module(family: str) -> FamilyModule:
    """Return the kernels of ``family`` on the current device (memoised; compiles lazily)."""
    factory = FACTORY.build
    key = (family, device_key())
    module = _MODULES.get(key)
    if module is None:
        with _LOCK:
            module = _MODULES.get(key)
            if module is None:
                module = FamilyModule(family, factory if factory is not None else _cupy_module)
                _MODULES[key] = module
    return module


def clear_cache() -> None:
    """Forget every compiled module, error word and deferred check (factory change)."""
    with _LOCK:
        _MODULES.clear()
        _ERROR_BUFFERS.clear()
        _PENDING.clear()
        _SNAPSHOTS.clear()
        FUNCTIONS.clear()
        EMPTY.clear()
        STATE.word = None


def device_only(family: str) -> tuple[str, ...]:
    """Return the launchers of ``family`` that have no CPU twin (its ``DEVICE_ONLY``)."""
    return tuple(_launchers(family).DEVICE_ONLY) if has_family(family) else ()


def get_launcher(family: str, name: str) -> Callable[..., Any]:
    """Return launcher ``name`` of ``family``: a CPU kernel's twin or a device-only launcher.

    Its parameters are the array module, then the CPU kernel's. ``NotImplementedError``
    when ``family`` has no such launcher.
    """
    module = _launchers(family)
    if name not in module.__all__ and name not in module.DEVICE_ONLY:
        msg = f"{name}: no cuda kernel in family {family!r}"
        raise NotImplementedError(msg)
    return getattr(module, name)  # type: ignore[no-any-return]


# ------------------------------------------------------------------ device error word
#: Value of the error word while no kernel has recorded an error (all ones).
ERROR_NONE = (1 << 64) - 1
_NONE_WORD = np.uint64(ERROR_NONE)
_CLASSES: dict[str, type[ArrowSparseError]] = {
    "IndexError": ArrowSparseIndexError, "ValueError": ArrowSparseValueError}
_MESSAGE = re.compile(r"^\s*(\w+)\s*=\s*(\d+)\s*,?\s*//\s*message:\s*"
                      r"(?:(IndexError|ValueError):\s*)?(.*\S)\s*$", re.MULTILINE)


def error_messages(source: str) -> dict[int, tuple[str, type[ArrowSparseError], str]]:
    """``code -> (enum name, exception class, message)`` from a family's ``.cu`` text.

    Each error code is one enum line ending in ``// message: [IndexError: ]text``;
    ValueError is the default class.
    """
    table: dict[int, tuple[str, type[ArrowSparseError], str]] = {}
    for m in _MESSAGE.finditer(source):
        code = int(m.group(2))
        if not 0 < code < 256 or code in table:
            msg = f"error code {m.group(1)} = {code} must be unique and in 1..255"
            raise ValueError(msg)
        table[code] = (m.group(1), _CLASSES[m.group(3) or "ValueError"], m.group(4))
    return table


def decode_error(word: int) -> tuple[int, int, int]:
    """``(family index, code, position)`` of an error word written by ``ASP_RAISE``."""
    return (word >> 8) & 0xFF, word & 0xFF, word >> 16


def error_buffer() -> Any:
    """Return the current device's error word: a ``uint64[1]`` array kernels ``atomicMin`` into.

    A device (CuPy) array, or a numpy array while a module factory (the emulator) is
    set. Launchers pass it as the kernels' ``unsigned long long* error`` argument.
    """
    key = STATE.factory_key
    if key is None:
        key = device_key()
    buffer = _ERROR_BUFFERS.get(key)
    if buffer is None:
        with _LOCK:
            buffer = _ERROR_BUFFERS.get(key)
            if buffer is None:
                xp = np if FACTORY.build is not None else import_cupy("CUDA kernels")
                buffer = xp.empty(1, dtype=np.uint64)
                buffer.fill(_NONE_WORD)
                _ERROR_BUFFERS[key] = buffer
    return buffer


def _raise_word(func: str, word: int, deferred: bool) -> None:
    family_id, code, position = decode_error(word)
    family = KERNEL_FAMILIES[family_id] if family_id < len(KERNEL_FAMILIES) else None
    known = error_messages(source(family)) if family is not None else {}
    if code not in known:
        msg = f"{func}: unknown device error code {code} of kernel family {family_id}"
        raise RuntimeError(msg)
    _, cls, text = known[code]
    late = ", reported by a later call" if deferred else ""
    msg = f"{func}: {text} (first at position {position}; found by a device check{late})"
    raise cls(msg)


def _snapshot(buffer: Any, key: Any) -> tuple[Any, Any]:
    """Start copying the error word to the host: ``(host array, event or None)``.

    On a GPU the host word is pinned memory and the copy is asynchronous, followed by an
    event; both come from the device's pool of consumed snapshots when it has one, so a
    deferred check allocates nothing after the first calls.
    """
    if isinstance(buffer, np.ndarray):
        return buffer.copy(), None
    cupy = import_cupy("CUDA kernels")
    runtime = cupy.cuda.runtime
    free = _SNAPSHOTS.get(key)
    if free:
        host, event = free.pop()
    else:
        host = np.frombuffer(cupy.cuda.alloc_pinned_memory(8), dtype=np.uint64, count=1)
        event = cupy.cuda.Event(block=False, disable_timing=True)
    stream = cupy.cuda.get_current_stream()
    runtime.memcpyAsync(host.ctypes.data, buffer.data.ptr, 8, runtime.memcpyDeviceToHost,
                        stream.ptr)
    event.record(stream)
    return host, event


def _recycle(key: Any, host: Any, event: Any) -> None:
    """Return a consumed snapshot's pinned word and event to its device's pool."""
    if event is not None:
        _SNAPSHOTS.setdefault(key, []).append((host, event))


def _word(buffer: Any, key: Any) -> int:
    """Return the current error word.

    From the last :func:`read_scalars` while still valid, else read now (a device
    synchronisation on a GPU).
    """
    if isinstance(buffer, np.ndarray):
        return int(buffer[0])
    seen = STATE.word
    if seen is not None and seen[0] == key:
        return seen[1]
    return int(buffer.get()[0])


def check_errors(func: str, *, wait: bool = True) -> None:
    """Raise the error a kernel recorded in the current device's error word, if any.

    The public operation ``func`` calls it once, after its last launch. ``wait=True``
    reads the word now (a device synchronisation: use it where the operation
    synchronises anyway, e.g. to read a data-dependent output size; right after
    :func:`read_scalars` or :func:`fetch` the word read with the scalars is used, with no
    second transfer). ``wait=False`` only enqueues an asynchronous copy of the word and
    returns; the copy is looked at (without waiting) by the next ``check_errors`` call,
    which raises the error naming the operation that recorded it. Either way the word is
    reset after an error is raised, and pending deferred checks are dropped.
    """
    buffer = error_buffer()
    key = STATE.factory_key
    if key is None:
        key = device_key()
    if not _PENDING and not wait:  # the common case: nothing to look at yet
        _PENDING.append((func, key, *_snapshot(buffer, key)))
        return
    with _LOCK:
        pending = list(_PENDING)
        _PENDING.clear()
        if not wait:
            _PENDING.append((func, key, *_snapshot(buffer, key)))
    for i, (earlier, where, host, event) in enumerate(pending):
        if event is not None and not (wait or event.done):
            with _LOCK:
                _PENDING[:0] = pending[i:]
            break
        if event is not None:
            event.synchronize()
        found = int(host[0])
        _recycle(where, host, event)
        if found != ERROR_NONE:
            _reset(buffer)
            _raise_word(earlier, found, deferred=True)
    if wait:
        word = _word(buffer, key)
        if word != ERROR_NONE:
            _reset(buffer)
            _raise_word(func, word, deferred=False)


def _reset(buffer: Any) -> None:
    with _LOCK:
        buffer.fill(_NONE_WORD)
        _PENDING.clear()
        STATE.word = None


def read_scalars(xp: ModuleType, *scalars: Any) -> list[int]:
    """Read 0-d device integer arrays of ``xp`` (CuPy) in one transfer; raise nothing.

    The device's error word is read in the same transfer (the synchronisation is paid
    once), and kept for the next ``check_errors(func)``, which then needs no transfer of
    its own. Under the emulator the word is host memory and is not transferred.
    """
    if xp is np:  # host arrays under the emulator: nothing to transfer
        return [int(s) for s in scalars]
    buffer = error_buffer()
    values = [s.astype(np.int64, copy=False).reshape(1) for s in scalars]
    if isinstance(buffer, np.ndarray):
        return [int(v) for v in xp.concatenate(values).get().tolist()]
    key = STATE.factory_key
    if key is None:
        key = device_key()
    read = xp.concatenate([*values, buffer.view(np.int64)]).get()
    STATE.word = (key, int(read[-1].view(np.uint64)))
    return [int(v) for v in read[:-1].tolist()]


def fetch(xp: ModuleType, func: str, *scalars: Any) -> list[int]:
    """Read integer scalars (Python, numpy, or 0-d arrays of ``xp``) on the host.

    Device scalars are copied in one transfer, a synchronisation, after which the
    device checks recorded so far are raised at once (the values may depend on inputs
    those checks reject). Host scalars cost nothing.
    """
    device = [] if xp is np else [s for s in scalars if isinstance(s, xp.ndarray)]
    if not device:
        return [int(s) for s in scalars]
    read = iter(read_scalars(xp, *device))
    check_errors(func)
    return [next(read) if isinstance(s, xp.ndarray) else int(s) for s in scalars]
