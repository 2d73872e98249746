"""The Python API against the command line on the same inputs, and its behaviour as a Python library."""

import json
import math
import threading

import pyarrow as pa
import pyarrow.json as pajson
import pytest

import mfu
from conftest import FIXTURES

ADDED = [
    "resolved_device",
    "peak_flops_per_device",
    "tokens_per_second",
    "achieved_flops_per_device",
    "mfu_wall_clock",
    "mfu_fwd_bwd",
]


def same_values(a: pa.Array, b: pa.Array) -> bool:
    """Equal value for value, floats bit for bit (NaN equal to NaN), nulls in the same places."""
    left, right = a.to_pylist(), b.to_pylist()
    if len(left) != len(right):
        return False
    for x, y in zip(left, right):
        if isinstance(x, float) and isinstance(y, float):
            if not (x == y or (math.isnan(x) and math.isnan(y))):
                return False
        elif x != y:
            return False
    return True


def runs_table() -> pa.Table:
    return pajson.read_json(FIXTURES / "runs.jsonl")


def test_peak_flops_is_the_dense_peak_or_none():
    assert mfu.peak_flops("NVIDIA H100 80GB HBM3", "bf16") == 989.4e12
    assert mfu.peak_flops("NVIDIA A100-SXM4-80GB", "torch.bfloat16") == 312e12
    assert mfu.peak_flops("Tesla T4", "bf16") is None  # no bf16 in hardware
    assert mfu.peak_flops("NVIDIA RTX A1000", "bf16") is None  # not an A100
    assert mfu.peak_flops("Acme X9", "bf16") is None


def test_lookup_has_the_keys_and_values_of_the_cli(mfu_cli):
    name = "NVIDIA H100 80GB HBM3"
    ours = mfu.lookup(name, "bf16")
    cli = json.loads(mfu_cli("lookup", "--json", "--dtype", "bf16", name).stdout)
    assert ours == cli
    every = mfu.lookup(name)
    assert every["dtype"] is None and every["peak_flops_per_device"] is None
    assert every["peaks"]["bf16"] == 989.4e12 and every["peaks"]["fp8"] == 1978.9e12
    assert mfu.lookup("Acme X9", "bf16")["device"] is None


def test_enrich_adds_the_columns_the_cli_adds_bit_for_bit(cli_enriched):
    data = runs_table()
    with pytest.warns(mfu.MfuWarning, match="unknown device 'Acme Tensor Engine X9'"):
        out = mfu.enrich(data)
    assert out.column_names == data.column_names + ADDED
    for i, name in enumerate(data.column_names):
        assert out.column(i).equals(data.column(i)), name  # the caller's columns untouched
    for name in ADDED:
        assert same_values(out.column(name), cli_enriched.column(name)), name


def test_every_kind_of_arrow_data_gives_the_same_table():
    import duckdb
    import pandas
    import polars

    data = runs_table()
    with pytest.warns(mfu.MfuWarning):
        want = mfu.enrich(data)
        from_batches = mfu.enrich(pa.RecordBatchReader.from_batches(data.schema, data.to_batches(4)))
        from_batch = mfu.enrich(data.combine_chunks().to_batches()[0])
        from_pandas = mfu.enrich(data.to_pandas())
        from_polars = mfu.enrich(polars.from_arrow(data))
        relation = duckdb.arrow(data)
        from_duckdb = mfu.enrich(relation)
    for got in (from_batches, from_batch, from_pandas, from_polars, from_duckdb):
        for name in ADDED:
            assert same_values(got.column(name), want.column(name)), name
    assert isinstance(pandas.DataFrame, type)


def test_enrich_batches_enriches_each_batch_lazily_and_matches_output_schema():
    data = runs_table()
    batches = data.to_batches(max_chunksize=4)
    schema = mfu.output_schema(data.schema)
    with pytest.warns(mfu.MfuWarning):
        outs = list(mfu.enrich_batches(iter(batches)))
    assert [b.num_rows for b in outs] == [b.num_rows for b in batches]
    assert all(b.schema.equals(schema) for b in outs)
    with pytest.warns(mfu.MfuWarning):
        whole = mfu.enrich(data)
    stacked = pa.Table.from_batches(outs)
    for name in ADDED:
        assert same_values(stacked.column(name), whole.column(name)), name


def test_options_mirror_the_cli(mfu_cli, tmp_path):
    data = runs_table().drop_columns(["device_name"])
    out = mfu.enrich(data, device="NVIDIA A100-SXM4-80GB", map={"num_devices": "world_size"})
    assert set(out.column("resolved_device").to_pylist()) == {"A100 SXM4"}
    cli_out = tmp_path / "cli.parquet"
    source = tmp_path / "in.parquet"
    import pyarrow.parquet as pq

    pq.write_table(data, source)
    mfu_cli(
        "enrich", str(source), "-o", str(cli_out), "--quiet",
        "--device", "NVIDIA A100-SXM4-80GB", "--map", "num_devices=world_size",
    )
    cli = pq.read_table(cli_out)
    for name in ADDED:
        assert same_values(out.column(name), cli.column(name)), name
    forced = mfu.enrich(data, device="Acme X9", peak_flops=1e15)
    assert set(forced.column("peak_flops_per_device").to_pylist()) == {1e15}


def test_errors_are_python_exceptions_with_the_cli_messages(tmp_path):
    with pytest.raises(TypeError, match="unknown option 'devcie'"):
        mfu.enrich(runs_table(), devcie="H100")
    with pytest.raises(ValueError, match="dtype=\"bf17\""):
        mfu.enrich(runs_table(), dtype="bf17")
    with pytest.raises(ValueError, match="attention=\"half\": expected one of full, causal"):
        mfu.enrich(runs_table(), attention="half")
    with pytest.raises(FileNotFoundError, match="nowhere.jsonl: no such file"):
        mfu.read(tmp_path / "nowhere.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"step": 1, "step_time": 0.5}\n{not json\n')
    with pytest.raises(ValueError, match="bad.jsonl.*line 2"):
        mfu.read(bad)
    with pytest.raises(ValueError, match="strict"):
        mfu.enrich(runs_table(), strict=True)
    with pytest.raises(TypeError, match="expected Arrow data"):
        mfu.enrich(42)


def test_read_gives_what_the_cli_writes(cli_enriched):
    with pytest.warns(mfu.MfuWarning):
        table = mfu.read(FIXTURES / "runs.jsonl")
    assert table.column_names == cli_enriched.column_names
    for name in table.column_names:
        assert same_values(table.column(name), cli_enriched.column(name)), name


def test_summary_of_paths_and_of_data_match_the_cli(mfu_cli):
    cli = mfu_cli("summary", str(FIXTURES / "runs.jsonl"), "--format", "json").stdout
    want = json.loads(cli)
    # As `mfu summary`, an unknown device is a flag of its run, not a warning.
    from_paths = mfu.summary(FIXTURES / "runs.jsonl")
    from_data = mfu.summary(runs_table())
    with pytest.warns(mfu.MfuWarning):
        enriched = mfu.enrich(runs_table())
    from_enriched = mfu.summary(enriched)
    assert "unknown device" in from_paths.column("flags").to_pylist()[2]
    for table in (from_paths, from_data, from_enriched):
        rows = table.to_pylist()
        assert [r["run_id"] for r in rows] == [r["run_id"] for r in want]
        for got, expected in zip(rows, want):
            for key in ("mfu_wall_clock", "tokens_per_second", "steps", "num_devices"):
                assert got[key] == expected[key], (key, got[key], expected[key])


def test_calls_from_several_threads_agree():
    # The work runs with the GIL released: calls from threads run side by side and must not disturb
    # each other. (A forced peak keeps these calls free of warnings, which pytest cannot catch per thread.)
    data = runs_table()
    results = []

    def work():
        results.append(mfu.enrich(data, peak_flops=1e15))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4
    assert all(r.equals(results[0]) for r in results)


def test_audit_of_a_path_matches_the_cli(mfu_cli):
    # torchtitan on an RTX 5090 (tests/data/logs: its source; docs/audit.md: the hand audit).
    log = FIXTURES.parent / "tests" / "data" / "logs" / "torchtitan__qiu023-rtx5090-llama3-150m.log"
    flags = {"flops_per_token": 1270480896, "dtype": "bf16"}
    want = json.loads(mfu_cli("audit", str(log), "--flops-per-token", "1270480896", "--dtype", "bf16",
                              "--format", "json", "--quiet").stdout)[0]
    got = mfu.audit(log, **flags).to_pylist()[0]
    assert got["framework"] == "torchtitan"
    assert got["peak_logged"] == 312e12
    assert got["peak"] == 209.5e12
    for key in ("mfu_logged", "mfu", "ratio", "peak_factor", "numerator_factor", "verdict"):
        assert got[key] == want[key], (key, got[key], want[key])
    # The user's word for the framework's peak wins.
    told = mfu.audit(log, logged_peak_flops=400e12, **flags).to_pylist()[0]
    assert (told["peak_logged"], told["peak_logged_from"]) == (400e12, "--logged-peak-flops")


def test_goodput_of_paths_and_of_data_match_the_cli(mfu_cli):
    # A real torchtitan run relaunched six times (tests/data/goodput: its source and a hand reading).
    log = FIXTURES.parent / "tests" / "data" / "goodput" / (
        "torchtitan__qiu023-vlm447m-sft-stage2-continuation.log"
    )
    want = json.loads(mfu_cli("goodput", str(log), "--format", "json", "--quiet").stdout)[0]
    got = mfu.goodput(log).to_pylist()[0]
    assert (got["attempts"], got["steps_executed"], got["steps_redone"]) == (6, 2712.0, 712.0)
    for key in ("elapsed_s", "productive_s", "wasted_progress_s", "recovery_s", "startup_s",
                "pause_s", "other_s", "goodput"):
        assert got[key] == want[key], (key, got[key], want[key])
    # Arrow data: one run of steps 1-4, then a relaunch from step 2 after 10 s down, no other field.
    table = pa.table({
        "step": [1, 2, 3, 4, 3, 4],
        "wall_time": [101.0, 102.0, 103.0, 104.0, 115.0, 116.0],
        "step_time_s": [1.0] * 6,
    })
    row = mfu.goodput(table).to_pylist()[0]
    assert (row["attempts"], row["steps_redone"]) == (2, 2.0)
    assert (row["elapsed_s"], row["productive_s"], row["wasted_progress_s"]) == (16.0, 4.0, 2.0)
    assert row["recovery_s"] == 10.0
    assert row["goodput"] == 0.25


def test_a_large_log_folded_in_windows_gives_what_reading_it_whole_gives(tmp_path, monkeypatch):
    # A torchtitan log with a checkpoint every 500 steps, read in windows of 500 rows after a head of
    # 64 KiB (MFU_CONSOLE_WINDOWS makes a small log large): summary, goodput and audit of its path fold
    # it window by window, as the CLI does, and give the tables reading it whole gives.
    lines = ["[rank0]:[titan] 2026-04-18 22:00:00,000 - root - INFO - Trainer is initialized with local "
             "batch size 8, global batch size 64, gradient accumulation steps 1, sequence length 2048, "
             "total steps 100000 (warmup 10)"]
    clock = 1_776_549_600 * 1000
    for step in range(1, 6001):
        clock += 2000 + (step % 7) * 3
        seconds = clock // 1000
        stamp = f"{seconds // 3600 % 24:02}:{seconds // 60 % 60:02}:{seconds % 60:02},{clock % 1000:03}"
        lines.append(f"[rank0]:[titan] 2026-04-18 {stamp} - root - INFO - step: {step:5}  loss: 2.1000  "
                     "memory: 30.00GiB(40.00%)  tps: 8192  tflops: 300.00  mfu: 30.00%")
        if step % 500 == 0:
            clock += 40_000
            seconds = clock // 1000
            stamp = f"{seconds // 3600 % 24:02}:{seconds // 60 % 60:02}:{seconds % 60:02},{clock % 1000:03}"
            lines.append(f"[rank0]:[titan] 2026-04-18 {stamp} - root - INFO - Saving the checkpoint")
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    flags = {"flops_per_token": 6e9, "dtype": "bf16", "device": "H100 SXM", "num_devices": 8}
    whole = {f: getattr(mfu, f)(log, **flags) for f in ("summary", "goodput", "audit")}
    monkeypatch.setenv("MFU_CONSOLE_WINDOWS", "65536,500,32,16384")
    for name, table in whole.items():
        folded = getattr(mfu, name)(log, **flags)
        assert folded.equals(table), name
    # Twelve checkpoints of 40 s, the last after the last step.
    assert abs(whole["goodput"].column("pause_checkpoint_s")[0].as_py() - 11 * 40.0) < 0.5
