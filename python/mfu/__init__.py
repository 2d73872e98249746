"""mfu: honest model FLOPs utilization from the logs of training runs.

The same library as the ``mfu`` command line, for notebooks and for engines that scale it out (Spark, Ray,
DuckDB, Polars). Tables go in and come out as Arrow: a pyarrow Table, RecordBatch or RecordBatchReader,
anything with ``__arrow_c_stream__`` (a polars DataFrame, a DuckDB relation), or a pandas DataFrame. The
enriched table has every input column unchanged, then ``resolved_device``, ``peak_flops_per_device``,
``tokens_per_second``, ``achieved_flops_per_device``, ``mfu_wall_clock`` and ``mfu_fwd_bwd``. MFU is null,
never guessed, where the device or precision is unknown.

Options are the command line's, with ``_`` for ``-``: ``device``, ``dtype``, ``model_dtype``,
``num_devices``, ``flops_per_token``, ``tokens_per_step``, ``samples_per_step``, ``flops_per_sample``,
``seq_len``, ``time_unit``,
``map={field: column}``, ``override``, ``peaks=[files]``, ``peak_flops``, ``model_config``, ``attention``,
``convention``, ``recompute``, ``cumulative``, ``logged_peak_flops``, ``logged_convention``, ``window``,
``metadata``, ``storage_options``, and for files ``shape``, ``input_format``, ``rows``, ``skip_bad_rows``,
``max_memory``, ``jobs``. See ``docs/python.md``.

While a run trains, ``mfu.Meter`` computes the same figures step by step (``mfu.online``), and
``mfu.integrations.transformers`` and ``mfu.integrations.lightning`` hold framework callbacks; see
``docs/online.md``. ``import mfu`` imports no framework.

Errors are Python exceptions with the command line's messages (``FileNotFoundError``, ``ValueError``,
``TypeError`` for an unknown option); what the command line prints as a warning is an ``MfuWarning``.
"""

from __future__ import annotations

import os
import warnings as _warnings
from typing import Any, Iterable, Iterator, Optional, Sequence, Union

import pyarrow as pa

from . import _mfu

__version__: str = _mfu.__version__
__all__ = [
    "MfuWarning",
    "Enricher",
    "peak_flops",
    "lookup",
    "enrich",
    "enrich_batches",
    "output_schema",
    "read",
    "summary",
    "goodput",
    "audit",
    "Meter",
    "detect_device",
    "flops_per_token",
]

Enricher = _mfu.Enricher

from .online import Meter, detect_device, flops_per_token  # noqa: E402  (after MfuWarning's module is set up)

PathLike = Union[str, "os.PathLike[str]"]


class MfuWarning(UserWarning):
    """Something mfu would print as a warning: an unknown device, non-numeric cells, null timings."""


def _warn(messages: Sequence[str]) -> None:
    for message in messages:
        _warnings.warn(message, MfuWarning, stacklevel=3)


def _stream(data: Any) -> Any:
    """Any Arrow-like data as an object with ``__arrow_c_stream__``."""
    if isinstance(data, pa.RecordBatch):
        return pa.RecordBatchReader.from_batches(data.schema, [data])
    if hasattr(data, "__arrow_c_stream__"):
        return data
    if hasattr(data, "__arrow_c_array__"):
        batch = pa.record_batch(data)
        return pa.RecordBatchReader.from_batches(batch.schema, [batch])
    module = type(data).__module__.split(".")[0]
    if module == "pandas":
        return pa.Table.from_pandas(data, preserve_index=False)
    raise TypeError(
        f"expected Arrow data (a pyarrow Table, RecordBatch or RecordBatchReader, a polars DataFrame, "
        f"a DuckDB relation) or a pandas DataFrame, not {type(data).__name__}"
    )


def _paths(paths: Union[PathLike, Iterable[PathLike]]) -> list:
    if isinstance(paths, (str, os.PathLike)):
        return [os.fspath(paths)]
    return [os.fspath(p) for p in paths]


def peak_flops(name: str, dtype: str, *, peaks: Optional[Sequence[PathLike]] = None) -> Optional[float]:
    """The dense peak FLOP/s of one device (as a framework names it) for a precision, or None when the
    device or the precision is unknown: what a trainer needs to log honest MFU as it runs.

    >>> peak_flops("NVIDIA H100 80GB HBM3", "bf16")
    989400000000000.0
    """
    return _mfu.peak_flops(name, dtype, _paths(peaks) if peaks else None)


def lookup(name: str, dtype: Optional[str] = None, *, peaks: Optional[Sequence[PathLike]] = None) -> dict:
    """Which table entry a device name resolves to, and why: the keys of ``mfu lookup --json`` (``name``,
    ``dtype``, ``device``, ``peak_flops_per_device``, ``source``, ``documents``); without ``dtype``,
    ``peaks`` maps every precision the device has to its FLOP/s."""
    return _mfu.lookup(name, dtype, _paths(peaks) if peaks else None)


def enrich(data: Any, *, strict: bool = False, **options: Any) -> pa.Table:
    """Adds throughput and MFU columns to a table of training-log rows, as ``mfu enrich`` does to a file.

    Every batch is enriched as one table, so running totals and rolling windows see every row. With
    ``strict``, a row whose peak cannot be resolved raises ``ValueError``.
    """
    reader, messages = Enricher(options, strict).enrich_stream(_stream(data), "data")
    _warn(messages)
    return reader.read_all()


def enrich_batches(
    batches: Iterable[Any], *, strict: bool = False, **options: Any
) -> Iterator[pa.RecordBatch]:
    """Enriches each batch on its own, lazily: an iterator of RecordBatches in, one out. This is the shape
    of Spark's ``mapInArrow`` function; use it for logs whose rows each carry what they need (no running
    totals, no ``window``). Give Spark ``output_schema(schema, **options)`` as the schema."""
    enricher = Enricher(options, strict)
    for batch in batches:
        reader, messages = enricher.enrich_each(_stream(batch), "batch")
        _warn(messages)
        yield from reader


def output_schema(schema: pa.Schema, **options: Any) -> pa.Schema:
    """The schema ``enrich`` and ``enrich_batches`` give for input of ``schema``."""
    empty = pa.RecordBatchReader.from_batches(schema, [])
    options.pop("strict", None)
    return Enricher(options).output_schema(empty).schema


def read(paths: Union[PathLike, Iterable[PathLike]], **options: Any) -> pa.Table:
    """Reads files, folders (searched recursively), globs and run folders the way the command line does
    (JSON Lines, CSV, Parquet, trainer logs, TensorBoard event files), enriched into one table; several
    inputs are stacked by column name with a ``source_file`` column. A path may be a URL (``s3://``,
    ``gs://``, ``az://``, ``abfs://``, ``http(s)://``) of an object or a prefix; ``storage_options={...}``
    configures the store (``aws_endpoint_url``, ``aws_access_key_id``, ``google_service_account``,
    ``azure_storage_account_name``, ``allow_http``, ...) over the environment, as in polars and pandas."""
    reader, messages = _mfu.read(_paths(paths), options)
    _warn(messages)
    return reader.read_all()


def _per_run(
    function: Any, data_or_paths: Any, by: Optional[Union[str, Sequence[str]]], **arguments: Any
) -> pa.Table:
    """Calls one of the per-run functions of the extension on paths or on Arrow data."""
    keys = [by] if isinstance(by, str) else list(by or [])
    if isinstance(data_or_paths, (str, os.PathLike)) or (
        isinstance(data_or_paths, (list, tuple))
        and all(isinstance(p, (str, os.PathLike)) for p in data_or_paths)
    ):
        reader, messages = function(paths=_paths(data_or_paths), by=keys, **arguments)
    else:
        reader, messages = function(data=_stream(data_or_paths), by=keys, **arguments)
    _warn(messages)
    return reader.read_all()


def summary(
    data_or_paths: Any,
    *,
    by: Optional[Union[str, Sequence[str]]] = None,
    skip_steps: int = 0,
    **options: Any,
) -> pa.Table:
    """One row per run, the columns of ``mfu summary``: run MFU as total model FLOPs over total device
    time, throughput, per-step percentiles and flags. ``data_or_paths`` is Arrow data (raw rows, or rows
    ``enrich`` already enriched) or paths; ``by`` names the key columns (default: the run_id field, else
    each input); the first ``skip_steps`` steps of each run are left out."""
    return _per_run(_mfu.summary, data_or_paths, by, skip_steps=skip_steps, options=options)


def goodput(
    data_or_paths: Any,
    *,
    by: Optional[Union[str, Sequence[str]]] = None,
    **options: Any,
) -> pa.Table:
    """Where each run's time went, the columns of ``mfu goodput``: attempts (a relaunch that resumes from
    a checkpoint), launches that logged no step, steps kept and redone, elapsed time split into productive, wasted progress, start-up,
    pauses, recovery and other, goodput, MFU over productive and over elapsed time. ``data_or_paths`` is
    Arrow data or paths, as for ``summary``; no option is required (a run's time needs only its steps and
    wall times). docs/goodput.md has the rules."""
    return _per_run(_mfu.goodput, data_or_paths, by, options=options)


def audit(
    data_or_paths: Any,
    *,
    by: Optional[Union[str, Sequence[str]]] = None,
    **options: Any,
) -> pa.Table:
    """The MFU or TFLOP/s each run's framework logged beside mfu's, the columns of ``mfu audit``: the
    framework, the peak it divided by and where that came from, its FLOPs per token, mfu's MFU, peak and
    count, the ratio, its peak and numerator factors, and a verdict. ``data_or_paths`` is Arrow data or
    paths, as for ``summary``; no option is required (``logged_peak_flops`` gives the framework's peak
    where the log does not). docs/audit.md has the frameworks."""
    return _per_run(_mfu.audit, data_or_paths, by, options=options)
