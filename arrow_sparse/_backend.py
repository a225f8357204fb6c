"""Backend selection and the kernel registry.

Kernels are registered by ``(family, name)``: the CPU kernels of family ``f`` are the
public callables of ``arrow_sparse.kernels.cpu.f``. Modules are imported on first use,
so ``import arrow_sparse`` compiles nothing and does not import Numba.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from .errors import ArrowSparseTypeError

__all__ = ["array_module", "cpu_kernel_names", "get_kernel", "is_cupy_array",
           "KERNEL_FAMILIES", "set_cuda_module_factory"]

#: Every kernel family; each has a module in ``kernels/cpu``.
KERNEL_FAMILIES = ("convert", "sparse", "segment", "transforms", "elementwise", "embedding",
                   "masked")


def is_cupy_array(x: Any) -> bool:
    """Whether ``x`` is a CuPy array (checked without importing CuPy)."""
    return type(x).__module__.split(".")[0] == "cupy"


def array_module(func: str, *arrays: Any) -> ModuleType:
    """Return the array module (numpy or cupy) of ``arrays``; mixing them raises TypeError."""
    on_device = [is_cupy_array(a) for a in arrays if a is not None]
    if any(on_device):
        if not all(on_device):
            msg = (f"{func}: inputs mix host (numpy/Arrow) and device (cupy) arrays; "
                   "move them to one device first, e.g. with cupy.asarray(...) or .get()")
            raise ArrowSparseTypeError(msg)
        return importlib.import_module("cupy")
    return np


def cpu_kernel_names(family: str) -> list[str]:
    """The registry keys of ``family``: the kernels of ``arrow_sparse.kernels.cpu.<family>``.

    Its ``__all__`` when it has one, else every public function defined there.
    """
    module = _cpu(family)
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, f in vars(module).items() if not n.startswith("_") and callable(f)
                 and not isinstance(f, type) and getattr(f, "__module__", "") == module.__name__]
    return sorted(names)


#: Test hook, see :func:`set_cuda_module_factory`; None in normal use.
_cuda_module_factory: Callable[[str, str, list[str]], Any] | None = None


def set_cuda_module_factory(factory: Callable[[str, str, list[str]], Any] | None) -> None:
    """Test hook: compile CUDA kernel families with ``factory`` instead of CuPy.

    ``factory(family, code, name_expressions)`` returns an object with
    ``get_function(name_expression)`` like ``cupy.RawModule``. While one is set,
    :func:`get_kernel` also sends host (numpy) arrays to the CUDA launchers: every
    kernel that has one runs on the factory's modules (the CPU emulator,
    ``tests/cuda_emu``), and a kernel without one stays on the CPU. ``None`` restores
    normal dispatch.
    """
    global _cuda_module_factory
    _cuda_module_factory = factory
    importlib.import_module("arrow_sparse.kernels.cuda").clear_cache()


def get_kernel(family: str, name: str, xp: ModuleType = np) -> Callable[..., Any]:
    """Return kernel ``name`` of ``family`` for the array module ``xp``.

    ``NotImplementedError`` when ``xp`` is CuPy and the kernel has no CUDA launcher.
    """
    if family not in KERNEL_FAMILIES:
        msg = f"unknown kernel family {family!r}; known: {', '.join(KERNEL_FAMILIES)}"
        raise KeyError(msg)
    if xp is not np or _cuda_module_factory is not None:
        cuda = importlib.import_module("arrow_sparse.kernels.cuda")
        if cuda.has_family(family):
            try:
                return cuda.get_launcher(family, name)  # type: ignore[no-any-return]
            except NotImplementedError:
                # Under the test hook a kernel without a CUDA twin stays on the CPU.
                if xp is not np or name.startswith("_") or not hasattr(_cpu(family), name):
                    raise
        elif xp is not np:
            msg = f"{name}: no {xp.__name__} kernel in family {family!r}"
            raise NotImplementedError(msg)
    try:
        return getattr(_cpu(family), name)  # type: ignore[no-any-return]
    except AttributeError:
        msg = f"{name}: no cpu kernel in family {family!r}"
        raise NotImplementedError(msg) from None


def _cpu(family: str) -> ModuleType:
    return importlib.import_module(f"arrow_sparse.kernels.cpu.{family}")
