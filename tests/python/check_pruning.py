#!/usr/bin/env python3
"""Checks that readers can skip row groups of an mfu Parquet output on its statistics, float columns
included, and that filtered reads still give every matching row.

usage: check_pruning.py SORTED.csv ENRICHED.parquet
SORTED.csv has a column `wall` that grows with the row (made by .ci/run); the output has several row
groups, so a range filter on `wall` should need only the first.
"""
import sys

import duckdb
import polars as pl
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq


def main(source, path):
    walls = [float(line.split(",")[3]) for line in open(source).read().splitlines()[1:]]
    limit = walls[1000]
    want = sum(1 for w in walls if w < limit)
    groups = pq.ParquetFile(path).metadata.num_row_groups
    assert groups >= 2, groups
    fragment = next(ds.dataset(path).get_fragments())
    kept = fragment.split_by_row_group(filter=pc.field("wall") < limit)
    assert len(kept) == 1, (len(kept), groups)
    kept = fragment.split_by_row_group(filter=pc.field("mfu_wall_clock") < 0)
    assert len(kept) == 0, len(kept)
    got = {
        "pyarrow": ds.dataset(path).to_table(filter=pc.field("wall") < limit).num_rows,
        "polars": pl.scan_parquet(path).filter(pl.col("wall") < limit).collect().height,
        "duckdb": duckdb.connect().execute(f"SELECT count(*) FROM read_parquet('{path}') WHERE wall < {limit!r}").fetchall()[0][0],
    }
    assert all(n == want for n in got.values()), (want, got)
    print(f"python check: {path}: pyarrow keeps 1 of {groups} row groups for a range on a float column; pyarrow, polars and duckdb filter {want} rows")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
