"""CUDA kernels for CuPy: one ``<family>.cu`` per kernel family, compiled lazily.

The loader reads ``<family>.cu``, puts the text of ``_common.cuh`` in front of it (not
an ``#include``: CuPy's cache key covers only the source text, cupy#6159) with
``#line 1`` directives so compiler errors name the real file and line, and compiles
it once per family and device with ``cupy.RawModule(name_expressions=...)``. The name
expressions come from the family's Python launchers (``kernels/cuda/<family>.py``,
variable ``NAME_EXPRESSIONS``), which use the one dtype -> C type table in
:mod:`._launch`.

CuPy is imported only when a module is first compiled. Tests replace the compiler with
the CPU emulator through :func:`arrow_sparse._backend.set_cuda_module_factory`.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["clear_cache", "get_launcher", "has_family", "load_module", "name_expressions",
           "source"]

_DIR = Path(__file__).resolve().parent
_OPTIONS = ("-std=c++17",)
_MODULES: dict[tuple[str, Any], Any] = {}
_LOCK = threading.Lock()


def has_family(family: str) -> bool:
    """Whether ``family`` has CUDA kernels (a ``<family>.cu`` file)."""
    return (_DIR / f"{family}.cu").is_file()


def source(family: str) -> str:
    """Return the exact text compiled for ``family``: ``_common.cuh`` then ``<family>.cu``."""
    parts = []
    for path in (_DIR / "_common.cuh", _DIR / f"{family}.cu"):
        text = path.read_text(encoding="utf-8")
        parts.append(f'#line 1 "{path.as_posix()}"\n{text}')
        if not text.endswith("\n"):
            parts.append("\n")
    return "".join(parts)


def name_expressions(family: str) -> list[str]:
    """Every template instantiation of ``family`` (from its launcher module)."""
    module = importlib.import_module(f"{__name__}.{family}")
    return list(module.NAME_EXPRESSIONS)


def _cupy_module(family: str, code: str, names: list[str]) -> Any:
    try:
        cupy = importlib.import_module("cupy")
    except ModuleNotFoundError:
        msg = (f"{family} kernels on the GPU need the optional dependency 'cupy'; "
               "pip install 'arrow-sparse[gpu]'")
        raise ModuleNotFoundError(msg) from None
    return cupy.RawModule(code=code, options=_OPTIONS, name_expressions=names)


def _device_key() -> Any:
    cupy = importlib.import_module("cupy")
    return cupy.cuda.runtime.getDevice()


def load_module(family: str) -> Any:
    """Return the compiled module of ``family`` on the current device (memoised).

    The result has ``get_function(name_expression)`` returning a callable
    ``(grid, block, args)``, like ``cupy.RawModule``.
    """
    from ... import _backend  # import cycle: _backend imports this module lazily

    factory: Callable[[str, str, list[str]], Any] | None = _backend._cuda_module_factory
    key = (family, ("factory", id(factory)) if factory is not None else _device_key())
    module = _MODULES.get(key)
    if module is None:
        with _LOCK:
            module = _MODULES.get(key)
            if module is None:
                build = factory if factory is not None else _cupy_module
                module = build(family, source(family), name_expressions(family))
                _MODULES[key] = module
    return module


def clear_cache() -> None:
    """Forget every compiled module (used when the module factory changes)."""
    with _LOCK:
        _MODULES.clear()


def get_launcher(family: str, name: str) -> Callable[..., Any]:
    """Return the launcher of kernel ``name`` in ``family``; same signature as the CPU kernel."""
    module = importlib.import_module(f"{__name__}.{family}")
    launcher = getattr(module, name, None) if name in getattr(module, "__all__", ()) else None
    if launcher is None:
        msg = f"{name}: no cuda kernel in family {family!r}"
        raise NotImplementedError(msg)
    return launcher  # type: ignore[no-any-return]
