#!/usr/bin/env python3
"""Reads an mfu Parquet output the way notebook users do (pyarrow, pandas, polars, DuckDB) and checks the
output contract: column types, values recomputed from the input columns, and the file metadata.

usage: check_parquet.py ENRICHED.parquet   (made from fixtures/runs.jsonl)
"""
import json
import math
import sys

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

ADDED = [
    "resolved_device",
    "peak_flops_per_device",
    "tokens_per_second",
    "achieved_flops_per_device",
    "mfu_wall_clock",
    "mfu_fwd_bwd",
]
PEAKS = {"H100 SXM5": 989.4e12, "A100 SXM4": 312e12}


def close(a, b):
    return a is not None and not (isinstance(a, float) and math.isnan(a)) and abs(a - b) <= 1e-12 * abs(b)


def expected(row):
    t = row["step_time_ms"] / 1e3
    f = row["fwd_bwd_time_ms"] / 1e3
    work = row["tokens"] * row["flops_per_token"] / row["world_size"]
    peak = PEAKS.get(row["resolved_device"])
    return {
        "tokens_per_second": row["tokens"] / t,
        "achieved_flops_per_device": work / t,
        "mfu_wall_clock": None if peak is None else work / t / peak,
        "mfu_fwd_bwd": None if peak is None else work / f / peak,
    }


def check_rows(rows, reader):
    assert len(rows) == 15, (reader, len(rows))
    unknown = 0
    for row in rows:
        want = expected(row)
        for key, value in want.items():
            got = row[key]
            if value is None:
                assert got is None or (isinstance(got, float) and math.isnan(got)), (reader, key, got)
            else:
                assert close(got, value), (reader, key, got, value)
        if row["resolved_device"] is None:
            unknown += 1
    assert unknown == 5, (reader, unknown)


def main(path):
    # pyarrow: types and metadata.
    table = pq.read_table(path)
    schema = table.schema
    names = schema.names
    assert names[-6:] == ADDED, names
    assert schema.field("resolved_device").type in (pa.string(), pa.large_string(), pa.string_view()), schema
    for name in ADDED[1:]:
        assert schema.field(name).type == pa.float64(), (name, schema.field(name).type)
    meta = {k.decode(): v.decode() for k, v in (schema.metadata or {}).items()}
    for key in ("mfu.version", "mfu.peak_table_sha256", "mfu.columns"):
        assert key in meta, (key, list(meta))
    columns = json.loads(meta["mfu.columns"])
    # samples_per_second's definition is written with the six's (it applies where the rows count samples;
    # these count tokens, so the column itself is absent).
    assert set(columns) == set(ADDED) | {"samples_per_second"}, columns
    assert "samples_per_second" not in names, names
    assert columns["mfu_wall_clock"]["unit"] == "fraction"
    assert len(meta["mfu.peak_table_sha256"]) == 64
    check_rows(table.to_pylist(), "pyarrow")
    # pyarrow sees min/max for every column with values (those of float columns only since mfu marks
    # them type-ordered in the footer), and they are the column's own.
    meta_rg = pq.ParquetFile(path).metadata.row_group(0)
    for i in range(meta_rg.num_columns):
        chunk = meta_rg.column(i)
        values = [v for v in table.column(chunk.path_in_schema).to_pylist() if v is not None]
        if not values:
            continue
        stats = chunk.statistics
        assert stats is not None and stats.has_min_max, (chunk.path_in_schema, chunk.physical_type)
        assert (stats.min, stats.max) == (min(values), max(values)), (chunk.path_in_schema, stats)

    # pandas: nulls come back as None/NaN, floats as float64.
    df = pd.read_parquet(path)
    for name in ADDED[1:]:
        assert str(df[name].dtype) == "float64", (name, df[name].dtype)
    records = [{k: (None if (isinstance(v, float) and math.isnan(v)) else v) for k, v in r.items()} for r in df.to_dict("records")]
    check_rows(records, "pandas")

    # polars
    pdf = pl.read_parquet(path)
    for name in ADDED[1:]:
        assert pdf.schema[name] == pl.Float64, (name, pdf.schema[name])
    assert pdf.schema["resolved_device"] == pl.String
    check_rows(pdf.to_dicts(), "polars")

    # DuckDB: SQL over the file, the aggregate MFU a user would compute per run.
    con = duckdb.connect()
    got = con.execute(
        f"""
        SELECT run, sum(tokens * flops_per_token) / sum(world_size * peak_flops_per_device * step_time_ms / 1e3)
        FROM read_parquet('{path}') WHERE peak_flops_per_device IS NOT NULL GROUP BY run ORDER BY run
        """
    ).fetchall()
    assert [r[0] for r in got] == ["llama-7b-a100", "llama-7b-h100"], got
    assert all(0.0 < r[1] < 1.0 for r in got), got
    check_rows(con.execute(f"SELECT * FROM read_parquet('{path}')").fetchdf().replace({float("nan"): None}).to_dict("records"), "duckdb")
    print(f"python check: {path}: pyarrow, pandas, polars and duckdb agree with the contract")


if __name__ == "__main__":
    main(sys.argv[1])
