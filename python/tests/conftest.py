"""Shared fixtures: the repository's bundled logs and the command line built from the same checkout."""

import os
import pathlib
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"


def cli_binary() -> pathlib.Path:
    """The `mfu` binary to compare against: $MFU_BIN, else the debug build of this checkout."""
    if os.environ.get("MFU_BIN"):
        return pathlib.Path(os.environ["MFU_BIN"])
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "debug" / "mfu"


@pytest.fixture(scope="session")
def mfu_cli():
    binary = cli_binary()
    if not binary.exists():
        pytest.skip(f"{binary} is not built (cargo build, or set MFU_BIN)")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(binary), *args], capture_output=True, text=True, check=True)

    return run


@pytest.fixture(scope="session")
def cli_enriched(mfu_cli, tmp_path_factory) -> pa.Table:
    """fixtures/runs.jsonl enriched by the command line, as Parquet read back."""
    out = tmp_path_factory.mktemp("cli") / "runs.parquet"
    mfu_cli("enrich", str(FIXTURES / "runs.jsonl"), "-o", str(out), "--quiet")
    return pq.read_table(out)
