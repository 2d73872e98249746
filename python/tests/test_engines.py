"""mfu inside the engines that scale it out: Spark (local[2]) and Ray (2 CPUs), end to end on the bundled
log, with the rows the command line gives whatever the partitioning. These are the recipes of
docs/python.md, run as written there."""

import os
import sys

import pyarrow as pa
import pyarrow.json as pajson
import pytest

import mfu
from conftest import FIXTURES
from test_api import ADDED, same_values


def by_run_and_step(table: pa.Table) -> pa.Table:
    return table.sort_by([("run", "ascending"), ("step", "ascending")])


def assert_rows_match_cli(got: pa.Table, cli_enriched: pa.Table) -> None:
    got, want = by_run_and_step(got), by_run_and_step(cli_enriched)
    assert got.num_rows == want.num_rows
    for name in ADDED:
        assert same_values(got.column(name), want.column(name)), name


@pytest.fixture(scope="module")
def spark():
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("mfu-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "3")
        .getOrCreate()
    )
    yield session
    session.stop()


def test_spark_map_in_arrow(spark, cli_enriched):
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

    df = spark.read.json(str(FIXTURES / "runs.jsonl")).repartition(3)
    # The recipe: the output schema from the DataFrame's own Arrow schema, then one enriched batch per
    # batch Spark hands over.
    schema = from_arrow_schema(mfu.output_schema(to_arrow_schema(df.schema)))
    enriched = df.mapInArrow(lambda batches: mfu.enrich_batches(batches), schema)
    assert_rows_match_cli(enriched.toArrow(), cli_enriched)


def test_spark_apply_in_arrow_per_run(spark, cli_enriched):
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

    df = spark.read.json(str(FIXTURES / "runs.jsonl"))
    schema = from_arrow_schema(mfu.output_schema(to_arrow_schema(df.schema)))
    # Whole runs at a time: what running totals and rolling windows need.
    enriched = df.groupBy("run").applyInArrow(lambda table: mfu.enrich(table), schema)
    assert_rows_match_cli(enriched.toArrow(), cli_enriched)


def test_ray_map_batches(cli_enriched):
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    try:
        dataset = ray.data.from_arrow(pajson.read_json(FIXTURES / "runs.jsonl")).repartition(3)
        enriched = dataset.map_batches(mfu.enrich, batch_format="pyarrow")
        table = pa.concat_tables(ray.get(enriched.to_arrow_refs()))
        assert_rows_match_cli(table, cli_enriched)
    finally:
        ray.shutdown()


def test_duckdb_and_polars_through_arrow(cli_enriched):
    duckdb = pytest.importorskip("duckdb")
    polars = pytest.importorskip("polars")
    relation = duckdb.sql(f"SELECT * FROM read_json_auto('{FIXTURES / 'runs.jsonl'}')")
    with pytest.warns(mfu.MfuWarning):
        from_duckdb = mfu.enrich(relation)
    assert_rows_match_cli(from_duckdb, cli_enriched)
    frame = polars.read_ndjson(FIXTURES / "runs.jsonl")
    with pytest.warns(mfu.MfuWarning):
        back = polars.from_arrow(mfu.enrich(frame))
    assert back.columns[-6:] == ADDED
