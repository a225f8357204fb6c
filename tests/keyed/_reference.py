"""Plain-Python oracles of the keyed operations: the executable specification of each.

A KeyedJagged is described by ``(keys, table)`` where ``table = {key: [row, ...]}`` and a
row is a list of values or None (a null row, which the layout stores as empty).
"""

from __future__ import annotations

from typing import Any

import numpy as np

Table = dict[Any, list[Any]]  # {key: rows}; a row is a list of values or None


def ref_from_maps(rows: list[Any], keys: list[Any] | None = None) -> tuple[list[Any], Table]:
    """Plain-Python reading of a list of maps (each a list of (key, list|None) or None)."""
    if keys is None:
        keys = sorted({k for row in rows if row is not None for k, _ in row})
    table: Table = {k: [] for k in keys}
    for row in rows:
        for key in keys:
            if row is None:
                table[key].append(None)
                continue
            lists = [items for k, items in row if k == key]
            if lists and all(items is None for items in lists):
                table[key].append(None)
            else:
                table[key].append([x for items in lists if items is not None for x in items])
    return keys, table


def ref_key_major(keys: list[Any], table: Table) -> tuple[list[Any], list[int], list[bool]]:
    """The key-major layout: values, lengths and validity, key after key."""
    values: list[Any] = []
    lengths: list[int] = []
    valid: list[bool] = []
    for key in keys:
        for row in table[key]:
            values.extend(row or [])
            lengths.append(len(row or []))
            valid.append(row is not None)
    return values, lengths, valid


def ref_block_bucketize(kj_keys: list[Any], table: Table, wtable: Table | None,
                        sizes: list[int], my_size: int, dtype: np.dtype,
                        keep: bool) -> tuple[list[Table], list[Table] | None, list[Table],
                                             list[int]]:
    """FBGEMM's two loops in plain Python: bucket tables, weights, positions, permute."""
    bits = 8 * dtype.itemsize
    signed = dtype.kind == "i"
    rows = len(next(iter(table.values()))) if table else 0
    out: list[dict[int, list[Any]]] = [{} for _ in range(my_size)]
    wout: list[dict[int, list[Any]]] = [{} for _ in range(my_size)]
    pout: list[dict[int, list[Any]]] = [{} for _ in range(my_size)]
    tags: list[dict[int, list[Any]]] = [{} for _ in range(my_size)]
    index = 0
    for t, key in enumerate(kj_keys):
        for p in range(my_size):
            for tab in (out, wout, pout, tags):
                tab[p][t] = [None if row is None else [] for row in table[key]]
        for r, row in enumerate(table[key]):
            for j, x in enumerate(row or []):
                u = int(x) % (1 << bits)
                blk = sizes[t]
                if u < blk * my_size:
                    p, new = u // blk, u % blk
                else:
                    p, new = u % my_size, u // my_size
                new = u if keep else new
                if signed and new >= 1 << (bits - 1):
                    new -= 1 << bits
                out[p][t][r].append(new)
                pout[p][t][r].append(j)
                tags[p][t][r].append(index)
                if wtable is not None:
                    wout[p][t][r].append(wtable[key][r][j])
                index += 1
    order = [i for p in range(my_size) for t in range(len(kj_keys)) for r in range(rows)
             for i in (tags[p][t][r] or [])]
    permute = [0] * len(order)
    for position, i in enumerate(order):
        permute[i] = position

    def by_name(tabs: list[dict[int, list[Any]]]) -> list[Table]:
        return [{key: tab[t] for t, key in enumerate(kj_keys)} for tab in tabs]

    return by_name(out), None if wtable is None else by_name(wout), by_name(pout), permute


def ref_pad(rows: list[Any], length: int, pad: Any) -> list[list[Any]]:
    """Rows cut or padded to ``length`` (a null row is all padding)."""
    return [((row or [])[:length] + [pad] * length)[:length] for row in rows]
