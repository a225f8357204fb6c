"""Under an FBGEMM name, FBGEMM's behaviour (docs/jagged-arithmetic.md, "FBGEMM names").

Every public function named after an FBGEMM operator is listed in :data:`SIGNATURES`,
with FBGEMM's arguments and the parameters of ours that take them, position by
position. The tests check

* that each signature puts FBGEMM's arguments at FBGEMM's positions, and, where
  fbgemm-gpu is installed, that the list matches the operators' schemas and names every
  public function that shares an operator's name;
* each function on FBGEMM's documented example and the Caffe2 batch, on every backend,
  against the plain-Python oracles of ``tests/_reference.py``: the values, FBGEMM's
  return form (``(values, offsets)`` where FBGEMM returns it) and its defaults;
* each function against ``torch.ops.fbgemm`` on the same inputs (float32, float16, and
  int64 where FBGEMM takes integers), on every backend, where fbgemm-gpu is installed.
"""

from __future__ import annotations

import inspect
import operator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrow_sparse as asp

from . import _reference as ref
from .conftest import from_backend, on_device, to_backend

#: FBGEMM operator -> [(FBGEMM's argument, our parameter), ...] in FBGEMM's order.
SIGNATURES: dict[str, list[tuple[str, str]]] = {
    "jagged_dense_elementwise_add": [("x_values", "values"), ("x_offsets", "offsets"),
                                     ("y", "dense")],
    "jagged_dense_elementwise_add_jagged_output": [("x_values", "values"),
                                                   ("x_offsets", "offsets"), ("y", "dense")],
    "jagged_dense_elementwise_mul": [("x_values", "values"), ("x_offsets", "offsets"),
                                     ("y", "dense")],
    "jagged_to_padded_dense": [("values", "values"), ("offsets", "offsets"),
                               ("max_lengths", "max_lengths"),
                               ("padding_value", "padding_value")],
    "dense_to_jagged": [("dense", "dense"), ("x_offsets", "offsets"),
                        ("total_L", "total_length")],
    "jagged_dense_bmm": [("x_values", "values"), ("x_offsets", "offsets"), ("y", "dense"),
                         ("max_L", "max_length")],
    "jagged_jagged_bmm": [("x_values", "x"), ("y_values", "y"), ("x_offsets", "offsets"),
                          ("max_L", "max_length")],
    "jagged_softmax": [("values", "values"), ("x_offsets", "offsets"), ("max_L", "max_length")],
    "jagged_index_select": [("values", "values"), ("lengths", "lengths"),
                            ("indices", "indices"),
                            ("num_dense_output_rows", "num_dense_output_rows")],
}

# FBGEMM's two-level example (its jagged tensor operators doc): 3 rows of rows of
# 4-wide values; the same batch as tests/test_convert.py.
DOC_OFFSETS = [np.array([0, 4, 6, 7]), np.array([0, 2, 3, 3, 5, 6, 7, 9])]
DOC_VALUES = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 4], [1, 2, 3, 4], [5, 6, 7, 8],
                       [1, 2, 3, 4], [1, 2, 7, 9], [1, 2, 3, 4], [8, 8, 9, 6]],
                      dtype=np.float32)
CAFFE2_VALUES = np.array([1.0, 2.0, 3.0, 2.0, 4.0, 6.0, 7.0, 3.0, 6.0])
CAFFE2_OFFSETS = np.array([0, 3, 7, 9])


def doc_dense(shape: tuple[int, ...] = (3, 3, 1, 4)) -> np.ndarray:
    """A dense operand smaller than the example's padded shape (4, 2): rows are cut."""
    return (np.arange(int(np.prod(shape)), dtype=np.float32) - 10).reshape(shape)


def rows(values: np.ndarray, offsets: list[np.ndarray]) -> list[Any]:
    return ref.rows_of(values.tolist(), [o.tolist() for o in offsets])


def same_offsets(got: list[Any], given: list[Any], backend: str) -> None:
    """FBGEMM gives back the offsets it was given: here, the same arrays."""
    assert isinstance(got, list) and len(got) == len(given)
    for g, o in zip(got, given, strict=True):
        assert g is o
    from_backend(got, backend)  # on the inputs' device


# ------------------------------------------------------------------------ signatures
@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_each_signature_puts_the_operator_arguments_at_their_positions(name: str) -> None:
    params = list(inspect.signature(getattr(asp, name)).parameters.values())
    ours = [theirs_ours[1] for theirs_ours in SIGNATURES[name]]
    assert [p.name for p in params[:len(ours)]] == ours
    assert all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params[:len(ours)])
    # everything else arrow_sparse adds is keyword-only: no positional misread
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[len(ours):])


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_signatures_match_the_fbgemm_schemas(name: str) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("fbgemm_gpu")
    schema = getattr(torch.ops.fbgemm, name).default._schema
    assert [a.name for a in schema.arguments] == [theirs for theirs, _ in SIGNATURES[name]]


def test_every_function_sharing_an_fbgemm_name_is_listed() -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("fbgemm_gpu")
    ops = {s.name.split("::")[1] for s in torch._C._jit_get_all_schemas()
           if s.name.startswith("fbgemm::")}
    assert {n for n in asp.__all__ if n in ops} == set(SIGNATURES)


# ------------------------------------------- the documented examples, against the oracles
def test_jagged_dense_elementwise_add_is_the_dense_sum(backend: str) -> None:
    values, offsets, dense = to_backend(DOC_VALUES, backend), to_backend(DOC_OFFSETS,
                                                                         backend), doc_dense()
    got = from_backend(asp.jagged_dense_elementwise_add(values, offsets,
                                                        to_backend(dense, backend)), backend)
    padded = ref.pad(rows(DOC_VALUES, DOC_OFFSETS), [3, 1], 0.0, [0.0] * 4)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.array(padded, np.float32) + dense)
    out, out_offsets = asp.jagged_dense_elementwise_add(values, offsets,
                                                        to_backend(dense, backend),
                                                        output="jagged")
    same_offsets(out_offsets, offsets, backend)
    assert from_backend(out, backend).tolist() == ref.jagged_dense_elementwise(
        DOC_VALUES.tolist(), [o.tolist() for o in DOC_OFFSETS], dense.tolist(), operator.add,
        [0.0] * 4)


@pytest.mark.parametrize("name, op", [("jagged_dense_elementwise_add_jagged_output",
                                       operator.add),
                                      ("jagged_dense_elementwise_mul", operator.mul)])
def test_jagged_output_operators_give_values_and_offsets(backend: str, name: str,
                                                         op: Any) -> None:
    fn = getattr(asp, name)
    values, offsets = to_backend(DOC_VALUES, backend), to_backend(DOC_OFFSETS, backend)
    dense = doc_dense()
    result = fn(values, offsets, to_backend(dense, backend))
    assert isinstance(result, tuple) and len(result) == 2
    out, out_offsets = result
    same_offsets(out_offsets, offsets, backend)
    got = from_backend(out, backend)
    assert got.dtype == np.float32 and got.shape == DOC_VALUES.shape
    assert got.tolist() == ref.jagged_dense_elementwise(
        DOC_VALUES.tolist(), [o.tolist() for o in DOC_OFFSETS], dense.tolist(), op, [0.0] * 4)
    # A Jagged (or an Arrow list array) in: the same kind out, offsets and validity kept.
    j = to_backend(asp.Jagged.from_list([[1.0, 2.0, 3.0], None, [4.0]]), backend)
    small = to_backend(np.array([[1.0, 10.0], [5.0, 5.0], [2.0, 2.0]]), backend)
    as_jagged = from_backend(fn(j, None, small), backend)
    assert isinstance(as_jagged, asp.Jagged)
    assert as_jagged.to_list() == [[op(1.0, 1.0), op(2.0, 10.0), op(3.0, 0.0)], None,
                                   [op(4.0, 2.0)]]
    if not on_device(backend):
        arr = pa.array([[1.0, 2.0, 3.0], None, [4.0]])
        as_arrow = fn(arr, None, small)
        assert as_arrow.type == arr.type and as_arrow.to_pylist() == as_jagged.to_list()


def test_jagged_to_padded_dense_takes_fbgemms_positions(backend: str) -> None:
    values, offsets = to_backend(DOC_VALUES, backend), to_backend(DOC_OFFSETS, backend)
    got = from_backend(asp.jagged_to_padded_dense(values, offsets, [4, 2], 7.0), backend)
    assert got.dtype == np.float32 and got.shape == (3, 4, 2, 4)
    np.testing.assert_array_equal(got, ref.pad(rows(DOC_VALUES, DOC_OFFSETS), [4, 2], 7.0,
                                               [7.0] * 4))


def test_dense_to_jagged_gives_values_and_offsets_and_takes_total_l(backend: str) -> None:
    dense = np.array(ref.pad(rows(DOC_VALUES, DOC_OFFSETS), [3, 1], 0.0, [0.0] * 4),
                     np.float32)
    offsets = to_backend(DOC_OFFSETS, backend)
    want = ref.dense_to_jagged(dense.tolist(), [o.tolist() for o in DOC_OFFSETS], 0.0,
                               [0.0] * 4)
    result = asp.dense_to_jagged(to_backend(dense, backend), offsets)
    assert isinstance(result, tuple) and len(result) == 2
    for got_offsets, given in zip(from_backend(result[1], backend), DOC_OFFSETS, strict=True):
        np.testing.assert_array_equal(got_offsets, given)
    assert from_backend(result[0], backend).tolist() == want
    # The third positional argument is the number of values (FBGEMM's total_L).
    longer = from_backend(asp.dense_to_jagged(to_backend(dense, backend), offsets, 11)[0],
                          backend)
    assert longer.tolist() == want + [[0.0] * 4] * 2
    with pytest.raises(ValueError, match="total_length is 4 but the offsets address 9 values"):
        asp.dense_to_jagged(to_backend(dense, backend), offsets, 4)


def test_jagged_dense_bmm_gives_values_and_offsets(backend: str) -> None:
    x = np.arange(18, dtype=np.float64).reshape(9, 2) % 5 - 2
    w = np.arange(12, dtype=np.float64).reshape(3, 2, 2) % 3 - 1
    offsets = to_backend(CAFFE2_OFFSETS, backend)
    out, out_offsets = asp.jagged_dense_bmm(to_backend(x, backend), offsets,
                                            to_backend(w, backend), 3)
    assert out_offsets is offsets
    x_rows = [x[a:b].tolist() for a, b in zip(CAFFE2_OFFSETS[:-1], CAFFE2_OFFSETS[1:],
                                             strict=True)]
    want = [vec for row in ref.jagged_dense_bmm(x_rows, w.tolist(), 3) for vec in row]
    assert from_backend(out, backend).tolist() == want
    j = to_backend(asp.Jagged(x, CAFFE2_OFFSETS), backend)
    assert from_backend(asp.jagged_dense_bmm(j, None, to_backend(w, backend), 3),
                        backend).to_list() == ref.jagged_dense_bmm(x_rows, w.tolist(), 3)


def test_jagged_jagged_bmm_gives_a_dense_tensor(backend: str) -> None:
    x = np.arange(18, dtype=np.float64).reshape(9, 2) % 5 - 2
    y = np.arange(27, dtype=np.float64).reshape(9, 3) % 4 - 1
    got = from_backend(asp.jagged_jagged_bmm(to_backend(x, backend), to_backend(y, backend),
                                             to_backend(CAFFE2_OFFSETS, backend), 3), backend)
    cuts = list(zip(CAFFE2_OFFSETS[:-1], CAFFE2_OFFSETS[1:], strict=True))
    assert got.tolist() == ref.jagged_jagged_bmm([x[a:b].tolist() for a, b in cuts],
                                                 [y[a:b].tolist() for a, b in cuts], 2, 3, 3)


def test_jagged_softmax_gives_values_and_offsets(backend: str) -> None:
    values = np.log(np.array([[1.0], [1.0], [2.0], [1.0], [1.0], [1.0], [1.0], [3.0], [1.0]]))
    offsets = to_backend(CAFFE2_OFFSETS, backend)
    out, out_offsets = asp.jagged_softmax(to_backend(values, backend), offsets, 3)
    assert out_offsets is offsets
    got = from_backend(out, backend)
    cuts = list(zip(CAFFE2_OFFSETS[:-1], CAFFE2_OFFSETS[1:], strict=True))
    want = [vec for row in ref.softmax_rows([values[a:b].tolist() for a, b in cuts], 3)
            for vec in row]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert got[6, 0] == 0.0  # past max_L (FBGEMM leaves it unset)


def test_jagged_index_select_takes_the_output_size(backend: str) -> None:
    values = to_backend(CAFFE2_VALUES, backend)
    lengths, indices = to_backend(np.array([3, 4, 2]), backend), to_backend(np.array([2, 0]),
                                                                            backend)
    out, out_lengths = asp.jagged_index_select(values, lengths, indices, 5)
    flat = [x for row in ref.index_select_rows(rows(CAFFE2_VALUES, [CAFFE2_OFFSETS]), [2, 0])
            for x in row]
    assert from_backend(out, backend).tolist() == flat
    assert from_backend(out_lengths, backend).tolist() == [2, 3]
    with pytest.raises(ValueError, match="^jagged_index_select: num_dense_output_rows is 6 "
                                         "but the gathered rows hold 5 values$"):
        asp.jagged_index_select(values, lengths, indices, 6)
    with pytest.raises(TypeError, match="^jagged_index_select: num_dense_output_rows must be "
                                        "an integer, got float$"):
        asp.jagged_index_select(values, lengths, indices, 5.0)


# --------------------------------------------------------- against torch.ops.fbgemm
def _fbgemm() -> tuple[Any, Any]:
    torch = pytest.importorskip("torch")
    pytest.importorskip("fbgemm_gpu")
    return torch, torch.ops.fbgemm


#: Tolerance against FBGEMM by dtype: float16 results of several additions (bmm,
#: softmax) are rounded once here and at every step there.
RTOL = {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 1e-5, np.dtype(np.int64): 0}


def assert_like(ours: Any, theirs: Any, backend: str, rtol: float | None = None) -> None:
    """``ours`` (on ``backend``) has FBGEMM's structure, dtypes and values."""
    if isinstance(theirs, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(theirs), (ours, theirs)
        for o, t in zip(ours, theirs, strict=True):
            assert_like(o, t, backend, rtol)
        return
    got = from_backend(ours, backend)
    want = theirs.numpy()
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    tol = RTOL[want.dtype] if rtol is None else rtol
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol,
                               atol=tol)


def _case(dtype: Any, width: int = 3, seed: int = 0) -> tuple[np.ndarray, list[np.ndarray],
                                                               np.ndarray]:
    """Two jagged levels, an empty inner row; a dense cutting the longest rows."""
    rng = np.random.default_rng(seed)
    outer, inner = np.array([0, 2, 2, 5]), np.array([0, 1, 4, 4, 6, 9])
    values = (rng.standard_normal((9, width)) * 4).astype(dtype)
    dense = (rng.standard_normal((3, 2, 2, width)) * 4).astype(dtype)
    return values, [outer, inner], dense


ELEMENTWISE_DTYPES = [np.float32, np.float16, np.int64]


@pytest.mark.parametrize("dtype", ELEMENTWISE_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", ["jagged_dense_elementwise_add",
                                  "jagged_dense_elementwise_add_jagged_output",
                                  "jagged_dense_elementwise_mul"])
def test_elementwise_operators_match_fbgemm(backend: str, name: str, dtype: Any) -> None:
    torch, fbgemm = _fbgemm()
    values, offsets, dense = _case(dtype)
    theirs = getattr(fbgemm, name)(torch.from_numpy(values), [torch.from_numpy(o)
                                                              for o in offsets],
                                   torch.from_numpy(dense))
    ours = getattr(asp, name)(*to_backend((values, offsets, dense), backend))
    assert_like(ours, theirs, backend, rtol=0)  # one rounding: the same bits


@pytest.mark.parametrize("dtype", ELEMENTWISE_DTYPES, ids=lambda d: np.dtype(d).name)
def test_conversions_match_fbgemm(backend: str, dtype: Any) -> None:
    torch, fbgemm = _fbgemm()
    values, offsets, dense = _case(dtype)
    t_offsets = [torch.from_numpy(o) for o in offsets]
    for max_lengths, pad in (([2, 3], 0), ([3, 1], 5)):
        theirs = fbgemm.jagged_to_padded_dense(torch.from_numpy(values), t_offsets, max_lengths,
                                               float(pad))
        ours = asp.jagged_to_padded_dense(*to_backend((values, offsets), backend), max_lengths,
                                          pad)
        assert_like(ours, theirs, backend, rtol=0)
    for total_l in (None, 9, 12):  # (a smaller total_L writes past FBGEMM's buffer)
        theirs = fbgemm.dense_to_jagged(torch.from_numpy(dense), t_offsets, total_l)
        ours = asp.dense_to_jagged(*to_backend((dense, offsets), backend), total_l)
        assert_like(ours, theirs, backend, rtol=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("max_length", [2, 5])
def test_bmm_and_softmax_match_fbgemm(backend: str, dtype: Any, max_length: int) -> None:
    torch, fbgemm = _fbgemm()
    rng = np.random.default_rng(1)
    offsets = np.array([0, 1, 4, 4, 6, 9])
    x = rng.standard_normal((9, 3)).astype(dtype)
    y = rng.standard_normal((9, 4)).astype(dtype)
    w = rng.standard_normal((5, 3, 2)).astype(dtype)
    t = torch.from_numpy
    dx, dy, dw, do = to_backend((x, y, w, offsets), backend)
    assert_like(asp.jagged_dense_bmm(dx, do, dw, max_length),
                fbgemm.jagged_dense_bmm(t(x), t(offsets), t(w), max_length), backend)
    assert_like(asp.jagged_jagged_bmm(dx, dy, do, max_length),
                fbgemm.jagged_jagged_bmm(t(x), t(y), t(offsets), max_length), backend)
    ours_values, ours_offsets = asp.jagged_softmax(dx, do, max_length)
    theirs_values, theirs_offsets = fbgemm.jagged_softmax(t(x), t(offsets), max_length)
    assert_like(ours_offsets, theirs_offsets, backend)
    # FBGEMM leaves the positions past max_L unset (torch.empty); here they are 0.
    kept = (np.arange(9) - np.repeat(offsets[:-1], np.diff(offsets))) < max_length
    got = from_backend(ours_values, backend)
    assert got.dtype == theirs_values.numpy().dtype
    np.testing.assert_allclose(got[kept].astype(np.float64),
                               theirs_values.numpy()[kept].astype(np.float64),
                               rtol=RTOL[np.dtype(dtype)], atol=RTOL[np.dtype(dtype)])
    assert not got[~kept].any()


@pytest.mark.parametrize("dtype", ELEMENTWISE_DTYPES, ids=lambda d: np.dtype(d).name)
def test_jagged_index_select_matches_fbgemm(backend: str, dtype: Any) -> None:
    torch, fbgemm = _fbgemm()
    values = np.arange(18).reshape(9, 2).astype(dtype)
    lengths, indices = np.array([3, 0, 4, 2]), np.array([3, 0, 3, 1, 2])
    t = torch.from_numpy
    for hint in (None, 11):
        theirs = fbgemm.jagged_index_select(t(values), t(lengths), t(indices), hint)
        ours = asp.jagged_index_select(*to_backend((values, lengths, indices), backend), hint)
        assert_like(ours, theirs, backend, rtol=0)  # FBGEMM's list, our tuple
