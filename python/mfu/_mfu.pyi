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

class Enricher:
    """Enrichment with one set of options (the peak table parsed once), for many batches."""

    def __init__(self, options: Optional[Mapping[str, Any]] = None, strict: bool = False) -> None: ...
    def enrich_stream(self, data: Any, label: str) -> Tuple[pa.RecordBatchReader, list[str]]: ...
    def enrich_each(self, data: Any, label: str) -> Tuple[pa.RecordBatchReader, list[str]]: ...
    def output_schema(self, data: Any) -> pa.RecordBatchReader: ...
