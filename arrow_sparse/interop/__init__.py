"""Conversions to and from pandas, Polars and PyTorch (each an optional dependency).

One module per library; none is imported by ``import arrow_sparse``:

- :mod:`arrow_sparse.interop.pandas_convert`: :func:`to_pandas` / :func:`from_pandas`
  (``pd.ArrowDtype`` list columns), also importable from :mod:`arrow_sparse.interop.pandas`,
  which adds the ``sparse_lists`` accessor on ``pandas.Series`` and ``pandas.DataFrame``
  when it is imported.
- :mod:`arrow_sparse.interop.polars`: :func:`to_polars` / :func:`from_polars`;
  :mod:`arrow_sparse.interop.polars_namespace` imports Polars and registers the
  ``sparse`` namespace on ``polars.Expr`` and ``polars.Series`` (docs/polars-namespace.md).
- :mod:`arrow_sparse.interop.torch`: :func:`to_torch` / :func:`from_torch` (DLPack),
  :func:`to_torch_nested`, :func:`keyed_to_torchrec` and :func:`to_torchrec` /
  :func:`from_torchrec` (TorchRec's ``KeyedJaggedTensor`` both ways).
- :mod:`arrow_sparse.interop.torch_data`: :class:`SparseDataset`, a torch
  ``IterableDataset`` over Parquet, IPC or Flight (sharded by DDP rank and worker,
  shuffled, prefetched), and :func:`make_loader` (``docs/loader.md``).

The conversion functions are also ``arrow_sparse.to_pandas`` and so on; they import
their library on first call and raise ``ModuleNotFoundError`` naming the extra to
install (``pip install 'arrow-sparse[pandas]'``) when it is missing. See
``docs/interop.md`` for what each conversion copies and how it treats null rows.
"""

__all__: list[str] = []
