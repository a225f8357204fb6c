"""Fixtures of the ``arrow_sparse.io`` tests: an extension type registered for one test."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest


class _TagType(pa.ExtensionType):  # type: ignore[misc]
    """A stand-in for arrow_sparse's extension types: list<int64> storage plus metadata."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        super().__init__(pa.list_(pa.int64()), "arrow_sparse.test_tag")

    def __arrow_ext_serialize__(self) -> bytes:
        return self.tag.encode()

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: Any, serialized: bytes) -> _TagType:
        return cls(serialized.decode())


@pytest.fixture
def tag_type() -> Any:
    pa.register_extension_type(_TagType("x"))
    yield _TagType
    pa.unregister_extension_type("arrow_sparse.test_tag")


@pytest.fixture(autouse=True)
def _no_flight_token_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Flight servers and clients read ARROW_SPARSE_FLIGHT_TOKEN: tests set it themselves."""
    monkeypatch.delenv("ARROW_SPARSE_FLIGHT_TOKEN", raising=False)
