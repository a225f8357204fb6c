"""Import optional dependencies on first use, with an install hint when they are missing.

``import arrow_sparse`` imports numpy and pyarrow only. pandas, Polars, PyTorch, Ray and
matplotlib are imported by the function that needs them, through :func:`import_optional`,
which turns a missing package into a ``ModuleNotFoundError`` that says which extra to
install.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["import_optional"]


def import_optional(name: str, extra: str | None, *, func: str | None = None) -> ModuleType:
    """Import module ``name``; if it is not installed, say how to install it.

    Parameters
    ----------
    name
        Module to import, e.g. ``"pandas"`` or ``"torch"``.
    extra
        The arrow-sparse extra that installs it (``pip install 'arrow-sparse[extra]'``),
        or None for a package that no extra installs (``pip install <package>``).
    func
        The public function that needs it; the message then starts ``"{func}: "``.

    Returns
    -------
    types.ModuleType
        The imported module.

    Raises
    ------
    ModuleNotFoundError
        ``name`` (its top-level package) is not installed. A package that is
        installed but fails to import one of its own dependencies re-raises that
        original error unchanged.

    Examples
    --------
    >>> from arrow_sparse._optional import import_optional
    >>> import_optional("json", extra="none").__name__
    'json'
    >>> import_optional("no_such_module_xyz", extra="demo")
    Traceback (most recent call last):
    ...
    ModuleNotFoundError: no_such_module_xyz is required ... pip install 'arrow-sparse[demo]'
    >>> import_optional("no_such_module_xyz.sub", extra=None, func="SparseCOO.to_xyz")
    Traceback (most recent call last):
    ...
    ModuleNotFoundError: SparseCOO.to_xyz: no_such_module_xyz.sub is ... no_such_module_xyz
    """
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        top = name.partition(".")[0]
        if exc.name is not None and exc.name.partition(".")[0] != top:
            raise  # installed, but broken: its own missing dependency is the real news
        package = top if extra is None else f"'arrow-sparse[{extra}]'"
        msg = (f"{name} is required for this but is not installed; "
               f"install it with: pip install {package}")
        if func is not None:
            msg = f"{func}: {msg}"
        raise ModuleNotFoundError(msg, name=name) from exc
