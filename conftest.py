"""Doctest namespace shared by every module's Examples: ``np``, ``pa`` and ``asp``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrow_sparse as asp


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace: dict[str, Any]) -> None:
    doctest_namespace.update(np=np, pa=pa, asp=asp)
