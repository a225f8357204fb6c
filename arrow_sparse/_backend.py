"""Backend selection, device transfers and the kernel registry.

A public operation finds the array module of its inputs with :func:`array_module`
(numpy, or CuPy when they are device arrays or a container of device arrays; mixing
raises), checks them (``arrow_sparse._validate``, host-side O(1) checks
plus device checks that record into the kernels' error word), runs the kernels of that
module from :func:`get_kernel`, and ends with :func:`device_checks` (deferred: no
synchronisation). Where it must read a device value anyway (a data-dependent output
size) it reads it with :func:`fetch`, which also raises the device checks at once.
docs/gpu.md ("Dispatch") describes the whole pattern.

Containers: an object with a ``leaf_values`` attribute (a :class:`~arrow_sparse.Jagged`,
whose data lives in its innermost values array) is placed where that array is, so
:func:`array_module` needs to know no container class.

Kernels: :func:`get_kernel` is the one door. Kernels are registered by ``(family,
name)``: the CPU kernels of family ``f`` are the public callables of
``arrow_sparse.kernels.cpu.f``; its CUDA launchers (``arrow_sparse.kernels.cuda.f``)
are their twins, plus the device-only launchers (device checks, device gathers) that
have no CPU twin. A CPU kernel is returned as it is; a CUDA launcher takes the array
module first, and is returned with it bound (``functools.partial``), so every kernel is
called with the CPU kernel's arguments. Lookups are memoised by ``(family, name, xp,
module factory)``: after the first, a call costs a dict lookup. Kernel modules are
imported on first use, so ``import arrow_sparse`` compiles nothing and imports neither
Numba nor CuPy.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType
from typing import Any, NoReturn

import numpy as np

from .errors import ArrowSparseTypeError, ArrowSparseValueError
from .kernels import KERNEL_FAMILIES, cuda

__all__ = ["KERNEL_FAMILIES", "array_module", "cpu_kernel_names", "cupy_module", "device_checks",
           "device_of", "fetch", "from_dlpack", "get_kernel", "host_only", "is_cupy_array",
           "module_of", "normalize_device", "read_back", "run_in_threads", "set_kernel_threads",
           "kernels_may_share_threads", "set_cuda_module_factory", "to_host",
           "transfer"]

#: How to move data, quoted by the mixed-device error.
MOVE_HINT = ("move them to one device first: to the GPU with Jagged.to_device('cuda') or "
             "cupy.asarray(x), to the host with Jagged.to_device('cpu') or x.get()")

#: DLPack device types (``__dlpack_device__()[0]``) read as host and as CUDA memory.
_DLPACK_CPU = 1
_DLPACK_CUDA = (2, 13)  # kDLCUDA, kDLCUDAManaged


def is_cupy_array(x: Any) -> bool:
    """Whether ``x`` is a CuPy array (checked without importing CuPy)."""
    return type(x).__module__.split(".")[0] == "cupy"


#: ``cupy_module(func)``: CuPy, or ModuleNotFoundError naming ``func`` and the install
#: command (the loader's import, one for the package).
cupy_module = cuda.import_cupy


def _device_id(x: Any) -> int:
    return int(x.device.id)


def _placement(x: Any) -> int | None:
    """``None`` for host data, the CUDA device id for device data (arrays or a container)."""
    if isinstance(x, np.ndarray):
        return None
    if is_cupy_array(x):
        return _device_id(x)
    if isinstance(x, (list, tuple)) and x and not isinstance(x[0], (int, float, np.generic)):
        places = {_placement(item) for item in x}  # a list of arrays: offsets levels
        return places.pop() if len(places) == 1 else -1
    leaf = getattr(x, "leaf_values", None)  # a container: where its values live
    return None if leaf is None else _placement(leaf)


def array_module(func: str, *arrays: Any, **named: Any) -> ModuleType:
    """Return the array module (numpy or cupy) of the inputs of ``func``.

    Inputs are arrays (numpy, CuPy, Arrow), Python sequences, containers with
    ``leaf_values`` (a Jagged), lists of arrays, or None (ignored); pass them by name
    (``values=values``) so that an error names them. Host and device inputs together,
    or device inputs on two devices, raise ArrowSparseTypeError with the fix. The check
    reads no data; numpy and CuPy arrays are placed without a function call (the call
    path of every operation goes through here once).
    """
    items = named.items() if not arrays else \
        [(f"argument {i}", a) for i, a in enumerate(arrays)] + list(named.items())
    host = None  # the first host input's name
    device = None  # the first device input's name
    places: set[int] = set()  # device ids (-1: a container mixing host and device)
    for name, x in items:
        if x is None:
            continue
        cls = type(x)
        if cls is np.ndarray:
            place: int | None = None
        elif cls.__module__ == "cupy":
            place = int(x.device.id)
        else:
            place = _placement(x)
        if place is None:
            if host is None:
                host = name
        else:
            places.add(place)
            if device is None:
                device = name
    if device is None:
        return np
    if host is not None or -1 in places:
        where = (f"{host} is a host (numpy/Arrow) array but {device} is a device "
                 "(cupy) array" if host is not None else "inputs mix host (numpy/Arrow) "
                 "and device (cupy) arrays")
        msg = f"{func}: {where}; {MOVE_HINT}"
        raise ArrowSparseTypeError(msg)
    if len(places) > 1:
        msg = (f"{func}: inputs are on different CUDA devices {sorted(places)}; move them to "
               "one with Jagged.to_device('cuda:N') or cupy.asarray under cupy.cuda.Device(N)")
        raise ArrowSparseTypeError(msg)
    cupy = sys.modules.get("cupy")
    return cupy if cupy is not None else cupy_module(func)


def module_of(x: Any) -> ModuleType:
    """numpy, or CuPy for a CuPy array (no checks)."""
    if type(x) is np.ndarray:
        return np
    if type(x).__module__ == "cupy" or is_cupy_array(x):
        cupy = sys.modules.get("cupy")
        return cupy if cupy is not None else cupy_module("arrow_sparse")
    return np


def device_of(x: Any) -> str:
    """``"cpu"`` for host arrays, ``"cuda:N"`` for a CuPy array on device N."""
    return f"cuda:{_device_id(x)}" if is_cupy_array(x) else "cpu"


def host_only(func: str, what: str) -> NoReturn:
    """Raise the NotImplementedError of an operation that has no device path yet.

    ``what`` says which input is on the device (``"values is a device (cupy) array"``).
    """
    msg = (f"{func}: {what}, but {func} runs on the host only so far; move it to the host "
           "first with Jagged.to_device('cpu') or x.get()")
    raise NotImplementedError(msg)


def device_checks(func: str, xp: ModuleType, *, wait: bool = False) -> None:
    """End an operation that ran on ``xp``: raise what its device checks recorded.

    A no-op on the host. On the device, ``wait=False`` (the default) synchronises
    nothing: the error word is copied asynchronously and an error is raised by the next
    check (naming ``func``); ``wait=True`` reads the word now (a synchronisation).
    """
    if xp is not np:
        cuda.check_errors(func, wait=wait)


def fetch(func: str, *scalars: Any) -> list[int]:
    """Read integer scalars (Python, numpy, or 0-d device arrays) on the host.

    Device scalars are copied in one transfer, a synchronisation, after which the
    device checks recorded so far are raised at once (the values may depend on inputs
    those checks reject). Host scalars cost nothing.
    """
    device = next((s for s in scalars if is_cupy_array(s)), None)
    return cuda.fetch(np if device is None else module_of(device), func, *scalars)


def to_host(x: Any) -> Any:
    """``x`` as host data: a CuPy array's ``.get()``, anything else unchanged."""
    return x.get() if is_cupy_array(x) else x


def read_back(func: str, x: Any) -> Any:
    """Return ``x`` on the host, raising the device checks recorded so far first.

    A device array is copied (a synchronisation); the checks are raised at once since
    the values may depend on inputs they reject. Host data costs nothing.
    """
    host = to_host(x)
    device_checks(func, module_of(x), wait=True)
    return host


_DEVICE = re.compile(r"^(cpu|cuda)(?::(\d+))?$")


def normalize_device(func: str, device: Any) -> str:
    """``"cpu"``, ``"cuda"`` (the current CUDA device) or ``"cuda:N"``; else raise."""
    match = _DEVICE.match(device) if isinstance(device, str) else None
    if match is None or (match.group(1) == "cpu" and match.group(2)):
        msg = f"{func}: device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}"
        raise (ArrowSparseValueError if isinstance(device, str) else ArrowSparseTypeError)(msg)
    return device


def transfer_target(func: str, device: Any, here: str) -> str | None:
    """Where a ``to_device(device)`` call copies to; None when the data is there already.

    ``here`` is where the data is (:func:`device_of`). ``"cuda"`` means the current
    CUDA device for host data, and any CUDA device for data on one: it stays there.
    """
    target = normalize_device(func, device)
    if here == target or (target == "cuda" and here != "cpu"):
        return None
    return target


def transfer(func: str, x: Any, device: str) -> Any:
    """Copy array ``x`` to ``device`` (normalised), or return it when it is there already."""
    if x is None:
        return None
    if device == "cpu":
        return to_host(x)
    cupy = cupy_module(func)
    if device == "cuda":
        return x if is_cupy_array(x) else cupy.asarray(x)
    target = int(device.partition(":")[2])
    if is_cupy_array(x) and _device_id(x) == target:
        return x
    with cupy.cuda.Device(target):
        return cupy.array(x, copy=True)


def from_dlpack(func: str, arg: str, x: Any) -> Any:
    """Import a DLPack producer without copying: host memory as numpy, CUDA as CuPy.

    numpy and CuPy arrays are returned as they are; None stays None.
    """
    if x is None or isinstance(x, np.ndarray) or is_cupy_array(x):
        return x
    if not (hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__")):
        msg = (f"{func}: {arg} must support DLPack (__dlpack__ and __dlpack_device__), "
               f"got {type(x).__name__}")
        raise ArrowSparseTypeError(msg)
    kind, index = x.__dlpack_device__()
    if int(kind) not in (_DLPACK_CPU, *_DLPACK_CUDA):
        msg = (f"{func}: {arg} lives on DLPack device type {int(kind)}; only host (1) and "
               "CUDA (2, 13) memory can be read: copy it to one of them first")
        raise ArrowSparseTypeError(msg)
    try:
        if int(kind) == _DLPACK_CPU:
            return np.from_dlpack(x)
        cupy = cupy_module(func)
        with cupy.cuda.Device(int(index)):
            return cupy.from_dlpack(x)
    except (BufferError, TypeError, ValueError, RuntimeError, NotImplementedError) as exc:
        # The producer refused to export (an unsupported dtype, nulls, a strided view).
        msg = f"{func}: {arg} could not be read through DLPack ({exc})"
        raise ArrowSparseTypeError(msg) from None


def cpu_kernel_names(family: str) -> list[str]:
    """Return the registry keys of ``family``: the kernels of ``arrow_sparse.kernels.cpu.<family>``.

    Its ``__all__`` when it has one, else every public function defined there.
    """
    module = _cpu(family)
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, f in vars(module).items() if not n.startswith("_") and callable(f)
                 and not isinstance(f, type) and getattr(f, "__module__", "") == module.__name__]
    return sorted(names)


def host_arrays_on_device() -> bool:
    """Whether host arrays run the CUDA kernels (the :func:`set_cuda_module_factory` hook).

    A host-only shortcut that no CUDA kernel mirrors is skipped then, so that the
    emulated kernels are the ones tested.
    """
    return cuda.FACTORY.build is not None and cuda.FACTORY.host_arrays


#: Kernels found so far, by ``(family, name, xp, cuda.FACTORY)``, see :func:`get_kernel`.
_KERNELS: dict[tuple[str, str, ModuleType, cuda.ModuleFactory], Callable[..., Any]] = {}


def set_cuda_module_factory(factory: Callable[[str, str, list[str]], Any] | None, *,
                            host_arrays: bool = True) -> None:
    """Test hook: compile CUDA kernel families with ``factory`` instead of CuPy.

    ``factory(family, code, name_expressions)`` returns an object with
    ``get_function(name_expression)`` like ``cupy.RawModule``. While one is set, device
    (CuPy) inputs run on the factory's modules, and with ``host_arrays=True`` so do host
    (numpy) arrays: every kernel that has a CUDA launcher runs on them (the CPU
    emulator, ``tests/cuda_emu``), and a kernel without one stays on the CPU. With
    ``host_arrays=False`` host arrays keep the CPU kernels (a stand-in CuPy supplies the
    device arrays). ``None`` restores normal dispatch.
    """
    cuda.set_module_factory(factory, host_arrays=host_arrays)
    _KERNELS.clear()  # the old factory's entries can no longer be hit


def get_kernel(family: str, name: str, xp: ModuleType = np) -> Callable[..., Any]:
    """Return kernel ``name`` of ``family`` for the array module ``xp``.

    The one way to a kernel. It takes the arguments of the CPU kernel whatever ``xp``
    is: a CUDA launcher comes with ``xp`` bound. Device-only kernels (no CPU twin) are
    found by name too. ``NotImplementedError`` when ``xp`` is CuPy and the kernel has no
    CUDA launcher, or when ``xp`` is numpy and it has no CPU kernel (a device-only
    kernel outside the emulator).
    """
    factory = cuda.FACTORY
    key = (family, name, xp, factory)
    kernel = _KERNELS.get(key)
    if kernel is None:
        kernel = _KERNELS.setdefault(key, _find_kernel(family, name, xp, factory))
    return kernel


def _find_kernel(family: str, name: str, xp: ModuleType, factory: cuda.ModuleFactory
                 ) -> Callable[..., Any]:
    if family not in KERNEL_FAMILIES:
        msg = f"unknown kernel family {family!r}; known: {', '.join(KERNEL_FAMILIES)}"
        raise KeyError(msg)
    if xp is not np or (factory.build is not None and factory.host_arrays):
        if cuda.has_family(family):
            try:
                return functools.partial(cuda.get_launcher(family, name), xp)
            except NotImplementedError:
                # Under the test hook a kernel without a CUDA twin stays on the CPU.
                if xp is not np or name.startswith("_") or not hasattr(_cpu(family), name):
                    raise
        elif xp is not np:
            msg = f"{name}: no {xp.__name__} kernel in family {family!r}"
            raise NotImplementedError(msg)
    kernel: Callable[..., Any] | None = getattr(_cpu(family), name, None)
    if kernel is not None:
        return kernel
    if name in cuda.device_only(family):
        msg = (f"{name}: a device-only kernel of family {family!r} has no cpu kernel: it "
               "runs on device (cupy) arrays, and on host arrays under the CUDA emulator")
    else:
        msg = f"{name}: no cpu kernel in family {family!r}"
    raise NotImplementedError(msg)


def _cpu(family: str) -> ModuleType:
    return importlib.import_module(f"arrow_sparse.kernels.cpu.{family}")


# ------------------------------------------------------------------- CPU kernel threads
def _jit() -> ModuleType:
    # Numba is imported on first use: ``import arrow_sparse`` compiles and loads nothing.
    return importlib.import_module("arrow_sparse.kernels.cpu._jit")


def kernels_may_share_threads() -> bool:
    """Whether several threads may run the parallel CPU kernels at once.

    Always: they run on arrow_sparse's kernel threads, not on a Numba threading layer
    (whose ``workqueue`` layer aborts the process on concurrent use).
    """
    return bool(_jit().concurrent_parallel_kernels())


def watch_kernel_compiles(callback: Callable[[bool, str], None]) -> Callable[[], None]:
    """Report each compile of a CPU kernel; return a function that stops watching.

    ``callback(started, name)`` is called around every compile (not on loads from
    Numba's on-disk cache). Imports Numba.
    """
    return _jit().watch_compiles(callback)  # type: ignore[no-any-return]


def kernel_cache_dir() -> str | None:
    """Return the directory of the CPU kernels' on-disk cache; None where there is none."""
    return _jit().cache_path()  # type: ignore[no-any-return]


def set_kernel_threads(n: int) -> int:
    """Run this thread's parallel CPU kernels on ``n`` threads; return the previous count."""
    return int(_jit().set_num_threads(n))


def run_in_threads(tasks: Sequence[Callable[[], None]], workers: int | None) -> None:
    """Run every task, in a thread pool when there are several.

    Each pool thread runs the parallel CPU kernels on one thread (the count is per
    thread), so tasks do not oversubscribe the cores.
    """
    if len(tasks) <= 1 or not kernels_may_share_threads():
        for task in tasks:
            task()
        return

    def one(task: Callable[[], None]) -> None:
        before = set_kernel_threads(1)
        try:
            task()
        finally:
            set_kernel_threads(before)

    with ThreadPoolExecutor(workers or min(len(tasks), os.cpu_count() or 1)) as pool:
        for future in [pool.submit(one, task) for task in tasks]:
            future.result()
