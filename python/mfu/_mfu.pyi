"""Type stubs of the native module; the documented API is in ``mfu/__init__.py``."""

from os import PathLike
from typing import Any, Mapping, Optional, Sequence, Tuple

import pyarrow as pa

__version__: str
OPTION_NAMES: list[str]

def peak_flops(
    name: str, dtype: str, peaks: Optional[Sequence[str | PathLike[str]]] = None
) -> Optional[float]: ...
def lookup(
    name: str, dtype: Optional[str] = None, peaks: Optional[Sequence[str | PathLike[str]]] = None
) -> dict[str, Any]: ...
def read(
    paths: Sequence[str], options: Optional[Mapping[str, Any]] = None
) -> Tuple[pa.RecordBatchReader, list[str]]: ...
def summary(
    paths: Optional[Sequence[str]] = None,
    data: Any = None,
    by: Sequence[str] = ...,
    skip_steps: int = 0,
    options: Optional[Mapping[str, Any]] = None,
) -> Tuple[pa.RecordBatchReader, list[str]]: ...

def goodput(
    paths: Optional[Sequence[str]] = None,
    data: Any = None,
    by: Sequence[str] = ...,
    options: Optional[Mapping[str, Any]] = None,
) -> Tuple[pa.RecordBatchReader, list[str]]: ...

def audit(
    paths: Optional[Sequence[str]] = None,
    data: Any = None,
    by: Sequence[str] = ...,
    options: Optional[Mapping[str, Any]] = None,
) -> Tuple[pa.RecordBatchReader, list[str]]: ...

def check_counting(attention: str = "full", recompute: str = "none", convention: str = "mfu") -> None: ...

def resolve(
    device: str | Sequence[str] | None,
    dtype: Optional[str],
    peaks: Optional[Sequence[str | PathLike[str]]] = None,
    peak_flops: Optional[float] = None,
    model_dtype: Optional[str] = None,
) -> Tuple[Optional[str], Optional[float], Optional[str], Optional[str]]: ...
def step_metrics(
    step_time: Optional[float],
    tokens: Optional[float],
    num_devices: Optional[float],
    flops_per_token: Optional[float],
    peak: Optional[float] = None,
    fwd_bwd_time: Optional[float] = None,
) -> Tuple[Optional[float], Optional[float], Optional[float], Optional[float]]: ...
def flops_per_token(
    config_json: str,
    seq_len: int,
    attention: str = "full",
    recompute: str = "none",
    origin: str = "model_config",
    convention: str = "mfu",
) -> Tuple[float, float, str]: ...
def precision(spelling: str) -> Optional[str]: ...

class Enricher:
    """Enrichment with one set of options (the peak table parsed once), for many batches."""

    def __init__(self, options: Optional[Mapping[str, Any]] = None, strict: bool = False) -> None: ...
    def enrich_stream(self, data: Any, label: str) -> Tuple[pa.RecordBatchReader, list[str]]: ...
    def enrich_each(self, data: Any, label: str) -> Tuple[pa.RecordBatchReader, list[str]]: ...
    def output_schema(self, data: Any) -> pa.RecordBatchReader: ...
