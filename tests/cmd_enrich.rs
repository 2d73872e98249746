//! `mfu enrich`: formats, column detection, constants, outputs, errors, determinism. Expected values are
//! computed here from the formula, never taken from the tool's earlier output.

use std::io::Write;

use arrow::array::{Array, Float64Array, RecordBatch, StringArray};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use predicates::prelude::*;

use crate::util::{csv_rows, f64s, fixtures, read_parquet, OkStdout, Workdir};

const ADDED: [&str; 6] = [
    "resolved_device",
    "peak_flops_per_device",
    "tokens_per_second",
    "achieved_flops_per_device",
    "mfu_wall_clock",
    "mfu_fwd_bwd",
];

fn strings(batch: &RecordBatch, name: &str) -> Vec<Option<String>> {
    let col = cast(batch.column_by_name(name).unwrap(), &DataType::Utf8).unwrap();
    let a = col.as_any().downcast_ref::<StringArray>().unwrap();
    (0..a.len())
        .map(|i| (!a.is_null(i)).then(|| a.value(i).to_string()))
        .collect()
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| ((a - b) / b).abs() < 1e-12)
}

fn num(cell: &str) -> Option<f64> {
    (!cell.is_empty()).then(|| cell.parse().unwrap())
}

#[test]
fn each_reason_for_a_null_peak_names_its_own_remedy() {
    // No precision anywhere: the hint is --dtype, not a peaks file.
    let wd = Workdir::new("enrich_hints");
    wd.create(
        "log.csv",
        "step,step_time,tokens,device\n1,1.5,131072,NVIDIA H100 80GB HBM3\n2,1.5,131072,NVIDIA H100 80GB HBM3\n",
    );
    let enrich = |extra: &[&str]| {
        let flags = ["--num-devices", "8", "--flops-per-token", "4.2e10"];
        wd.mfu()
            .args(["enrich", "log.csv", "-o", "-"])
            .args(flags)
            .args(extra)
            .assert()
            .success()
    };
    enrich(&[])
        .stderr(predicate::str::contains(
            "no precision: MFU is null for 2 rows; give the precision with --dtype",
        ))
        .stderr(predicate::str::contains("--peaks FILE").not());
    // A known device without a rate for the precision: check the precision.
    enrich(&["--device", "Tesla T4", "--override", "--dtype", "bf16"]).stderr(
        predicate::str::contains("no published rate for this precision"),
    );
}

#[test]
fn bundled_fixture_to_parquet_with_metadata() {
    let wd = Workdir::new("enrich_fixture");
    let input = fixtures().join("runs.jsonl");
    wd.mfu()
        .arg("enrich")
        .arg(&input)
        .args(["-o", "out.parquet"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "unknown device 'Acme Tensor Engine X9': MFU is null for 5 rows",
        ))
        .stderr(predicate::str::contains("--peaks FILE"));
    let (batch, meta) = read_parquet(&wd.path("out.parquet"));
    assert_eq!(batch.num_rows(), 15);
    let schema = batch.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(
        &names[..10],
        &[
            "run",
            "step",
            "loss",
            "step_time_ms",
            "fwd_bwd_time_ms",
            "tokens",
            "world_size",
            "flops_per_token",
            "device_name",
            "dtype"
        ]
    );
    assert_eq!(&names[10..], &ADDED);
    for name in &ADDED[1..] {
        assert_eq!(
            schema.field_with_name(name).unwrap().data_type(),
            &DataType::Float64,
            "{name}"
        );
    }

    // Every row from the formula, with the peaks of the datasheet.
    let step_ms = f64s(&batch, "step_time_ms");
    let fb_ms = f64s(&batch, "fwd_bwd_time_ms");
    let tokens = f64s(&batch, "tokens");
    let world = f64s(&batch, "world_size");
    let fpt = f64s(&batch, "flops_per_token");
    let devices = strings(&batch, "resolved_device");
    let peak = f64s(&batch, "peak_flops_per_device");
    let tps = f64s(&batch, "tokens_per_second");
    let achieved = f64s(&batch, "achieved_flops_per_device");
    let mfu = f64s(&batch, "mfu_wall_clock");
    let mfu_fb = f64s(&batch, "mfu_fwd_bwd");
    for i in 0..15 {
        let (t, f, tok, n, flops) = (
            step_ms[i].unwrap() / 1e3,
            fb_ms[i].unwrap() / 1e3,
            tokens[i].unwrap(),
            world[i].unwrap(),
            fpt[i].unwrap(),
        );
        let want_peak = match i / 5 {
            0 => Some(989.4e12),
            1 => Some(312e12),
            _ => None,
        };
        assert_eq!(peak[i], want_peak, "row {i}");
        assert!(close(tps[i], tok / t), "row {i}");
        assert!(close(achieved[i], tok * flops / (n * t)), "row {i}");
        match want_peak {
            Some(p) => {
                assert!(close(mfu[i], tok * flops / (n * t) / p), "row {i}");
                assert!(close(mfu_fb[i], tok * flops / (n * f) / p), "row {i}");
            }
            None => {
                assert_eq!((mfu[i], mfu_fb[i]), (None, None), "row {i}");
                assert_eq!(devices[i], None);
            }
        }
    }
    assert_eq!(devices[0].as_deref(), Some("H100 SXM5"));
    assert_eq!(devices[5].as_deref(), Some("A100 SXM4"));

    assert_eq!(meta["mfu.version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(meta["mfu.peak_table_sha256"].len(), 64);
    let columns: serde_json::Value = serde_json::from_str(&meta["mfu.columns"]).unwrap();
    for name in ADDED {
        assert!(columns[name]["unit"].is_string(), "{name}");
        assert!(columns[name]["definition"].is_string(), "{name}");
    }
    assert_eq!(columns["mfu_wall_clock"]["unit"], "fraction");
    assert_eq!(
        wd.listing(),
        vec!["out.parquet"],
        "no temporary file is left"
    );
}

#[test]
fn csv_with_constants_from_flags_and_units_from_names() {
    let wd = Workdir::new("enrich_csv_constants");
    wd.create(
        "log.csv",
        "iteration,elapsed_time_per_iteration_ms,global_tokens\n1,1000,65536\n2,2000,65536\n3,0,65536\n",
    );
    let out = wd
        .mfu()
        .args([
            "enrich",
            "log.csv",
            "-o",
            "-",
            "--device",
            "NVIDIA L40S",
            "--dtype",
            "torch.bfloat16",
            "--num-devices",
            "4",
            "--flops-per-token",
            "1e9",
            "-q",
        ])
        .ok_stdout();
    let rows = csv_rows(&String::from_utf8(out).unwrap());
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0]["elapsed_time_per_iteration_ms"], "1000");
    assert_eq!(rows[0]["resolved_device"], "L40S");
    let peak = 362.05e12;
    assert!(close(num(&rows[0]["peak_flops_per_device"]), peak));
    assert!(close(num(&rows[0]["tokens_per_second"]), 65536.0));
    assert!(close(
        num(&rows[1]["mfu_wall_clock"]),
        65536.0 * 1e9 / (4.0 * 2.0) / peak
    ));
    // A zero step time gives empty (null) derived cells, never inf.
    assert_eq!(rows[2]["tokens_per_second"], "");
    assert_eq!(rows[2]["mfu_wall_clock"], "");
    // No fwd_bwd_time column: that MFU is null everywhere.
    assert!(rows.iter().all(|r| r["mfu_fwd_bwd"].is_empty()));
}

#[test]
fn gzip_tsv_and_parquet_magic_under_any_name() {
    let wd = Workdir::new("enrich_compressed");
    let tsv = "step\tstep_time\ttokens\tnum_devices\tflops_per_token\tgpu\tprecision\n1\t0.5\t1000\t1\t6000000000\tNVIDIA A10G\tfp16\n";
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(tsv.as_bytes()).unwrap();
    wd.create("log.tsv.gz", gz.finish().unwrap());
    wd.mfu()
        .args(["enrich", "log.tsv.gz", "-o", "a.parquet", "-q"])
        .assert()
        .success();
    let (batch, _) = read_parquet(&wd.path("a.parquet"));
    assert!(close(
        f64s(&batch, "mfu_wall_clock")[0],
        1000.0 * 6e9 / 0.5 / 70e12
    ));

    // A Parquet file named .dat is still read as Parquet (magic bytes).
    std::fs::copy(wd.path("a.parquet"), wd.path("copy.dat")).unwrap();
    wd.mfu()
        .args(["enrich", "copy.dat", "-o", "b.csv", "-q"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("looks enriched already"));
    let zst = zstd::stream::encode_all(tsv.as_bytes(), 3).unwrap();
    wd.create("log.tsv.zst", zst);
    wd.mfu()
        .args(["enrich", "log.tsv.zst", "-o", "c.jsonl", "-q"])
        .assert()
        .success();
    let line: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(wd.path("c.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(line["resolved_device"], "A10G");
    assert_eq!(line["gpu"], "NVIDIA A10G");
}

#[test]
fn folder_of_runs_into_one_output_with_source_file() {
    let wd = Workdir::new("enrich_folder");
    wd.create(
        "runs/b/log.jsonl",
        "{\"step\":1,\"step_time\":1.0,\"tokens\":100,\"num_devices\":1,\"flops_per_token\":1e12,\"device\":\"NVIDIA H100 PCIe\",\"dtype\":\"bf16\",\"loss\":2.0}\n",
    );
    wd.create(
        "runs/a/log.csv",
        "step,step_time,tokens,num_devices,flops_per_token,device,dtype,lr\n1,2.0,100,2,1e12,NVIDIA H100 PCIe,bf16,0.001\n2,2.0,100,2,1e12,NVIDIA H100 PCIe,bf16,0.001\n",
    );
    wd.create("runs/a/notes.txt", "not a log");
    wd.mfu()
        .args(["enrich", "runs", "-o", "all.csv", "-q"])
        .assert()
        .success();
    let rows = csv_rows(&std::fs::read_to_string(wd.path("all.csv")).unwrap());
    assert_eq!(rows.len(), 3);
    // Sorted by path: runs/a/log.csv first; lr only in a, loss only in b.
    assert_eq!(rows[0]["source_file"], "runs/a/log.csv");
    assert_eq!(rows[2]["source_file"], "runs/b/log.jsonl");
    assert_eq!(rows[0]["lr"], "0.001");
    assert_eq!(rows[2]["lr"], "");
    assert_eq!(rows[2]["loss"], "2.0");
    let header: Vec<String> = std::fs::read_to_string(wd.path("all.csv"))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .split(',')
        .map(String::from)
        .collect();
    let tail: Vec<&str> = header[header.len() - 7..]
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(tail[0], "source_file");
    assert_eq!(&tail[1..], &ADDED);
    assert!(close(
        num(&rows[0]["mfu_wall_clock"]),
        100.0 * 1e12 / (2.0 * 2.0) / 756e12
    ));
    assert!(close(
        num(&rows[2]["mfu_wall_clock"]),
        100.0 * 1e12 / 756e12
    ));
}

#[test]
fn out_dir_mirrors_relative_paths() {
    let wd = Workdir::new("enrich_out_dir");
    let line =
        "{\"step\":1,\"step_time\":1.0,\"tokens\":100,\"num_devices\":1,\"flops_per_token\":1e9}\n";
    wd.create("logs/x/run.jsonl", line);
    wd.create("logs/y/run.jsonl.gz", {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(line.as_bytes()).unwrap();
        gz.finish().unwrap()
    });
    wd.mfu()
        .args([
            "enrich",
            "logs",
            "--out-dir",
            "out",
            "--output-format",
            "csv",
            "-q",
        ])
        .assert()
        .success();
    assert!(wd.path("out/x/run.csv").is_file());
    assert!(wd.path("out/y/run.csv").is_file());
    let rows = csv_rows(&std::fs::read_to_string(wd.path("out/y/run.csv")).unwrap());
    assert!(close(num(&rows[0]["tokens_per_second"]), 100.0));
    assert!(
        !rows[0].contains_key("source_file"),
        "one output per input needs no source_file"
    );
}

#[test]
fn stdin_to_stdout() {
    let wd = Workdir::new("enrich_stdin");
    let out = wd
        .mfu()
        .args(["enrich", "-", "--input-format", "jsonl", "-o", "-", "--output-format", "jsonl", "-q"])
        .write_stdin("{\"step\":1,\"step_time_s\":2.0,\"tokens\":10,\"world_size\":1,\"flops_per_token\":3e12,\"gpu_name\":\"NVIDIA GeForce RTX 4090\",\"precision\":\"16-mixed\"}\n")
        .ok_stdout();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["resolved_device"], "GeForce RTX 4090");
    assert!(close(
        v["mfu_wall_clock"].as_f64(),
        10.0 * 3e12 / 2.0 / 165.2e12
    ));
    wd.mfu()
        .args(["enrich", "-", "-o", "-"])
        .write_stdin("")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("needs --input-format"));
}

#[test]
fn list_of_devices_per_rank_uses_the_mean_when_all_known() {
    let wd = Workdir::new("enrich_device_list");
    wd.create(
        "mixed.jsonl",
        concat!(
            "{\"step\":1,\"step_time\":1.0,\"tokens\":1000,\"num_devices\":2,\"flops_per_token\":1e12,\"device_name\":[\"NVIDIA H100 80GB HBM3\",\"NVIDIA A100-SXM4-80GB\"],\"dtype\":\"bf16\"}\n",
            "{\"step\":2,\"step_time\":1.0,\"tokens\":1000,\"num_devices\":2,\"flops_per_token\":1e12,\"device_name\":[\"NVIDIA H100 80GB HBM3\",\"Acme X9\"],\"dtype\":\"bf16\"}\n",
        ),
    );
    wd.create(
        "semi.csv",
        "step,step_time,tokens,num_devices,flops_per_token,device_name,dtype\n1,1.0,1000,2,1e12,NVIDIA L4;NVIDIA L40S,bf16\n",
    );
    for (input, want) in [
        ("mixed.jsonl", vec![Some((989.4e12 + 312e12) / 2.0), None]),
        ("semi.csv", vec![Some((121e12 + 362.05e12) / 2.0)]),
    ] {
        let out = wd
            .mfu()
            .args(["enrich", input, "-o", "-", "-q"])
            .ok_stdout();
        let rows = csv_rows(&String::from_utf8(out).unwrap());
        for (row, want) in rows.iter().zip(&want) {
            let got = num(&row["peak_flops_per_device"]);
            match want {
                Some(w) => assert!(close(got, *w), "{input}: {got:?} vs {w}"),
                None => assert_eq!(got, None, "{input}"),
            }
        }
    }
}

#[test]
fn missing_field_names_field_aliases_and_columns() {
    let wd = Workdir::new("enrich_missing");
    wd.create("log.csv", "step,loss,tokens\n1,2.0,100\n");
    wd.mfu()
        .args(["enrich", "log.csv", "-o", "out.csv"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("log.csv"))
        .stderr(predicate::str::contains(
            "no column for step_time (tried step_time, step_time_s, step_time_ms",
        ))
        .stderr(predicate::str::contains("the file has: step, loss, tokens"));
    assert_eq!(wd.listing(), vec!["log.csv"], "no output on failure");
}

#[test]
fn constant_for_a_present_column_needs_override() {
    let wd = Workdir::new("enrich_override");
    wd.create(
        "log.csv",
        "step,step_time,tokens,num_devices,flops_per_token,device\n1,1.0,100,1,1e12,NVIDIA L4\n",
    );
    wd.mfu()
        .args([
            "enrich",
            "log.csv",
            "-o",
            "-",
            "--device",
            "NVIDIA L40S",
            "--dtype",
            "bf16",
        ])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "--device was given but the file has a device_name column 'device'",
        ));
    let out = wd
        .mfu()
        .args([
            "enrich",
            "log.csv",
            "-o",
            "-",
            "--device",
            "NVIDIA L40S",
            "--dtype",
            "bf16",
            "--override",
            "-q",
        ])
        .ok_stdout();
    let rows = csv_rows(&String::from_utf8(out).unwrap());
    assert_eq!(
        rows[0]["device"], "NVIDIA L4",
        "the input column is kept unchanged"
    );
    assert_eq!(rows[0]["resolved_device"], "L40S");
}

#[test]
fn map_and_time_unit_flags() {
    let wd = Workdir::new("enrich_map");
    wd.create("log.csv", "it,secs_x,toks\n1,1500,300\n");
    let out = wd
        .mfu()
        .args([
            "enrich",
            "log.csv",
            "-o",
            "-",
            "--map",
            "step_time=secs_x",
            "--map",
            "tokens=toks",
            "--time-unit",
            "ms",
            "--num-devices",
            "1",
            "--flops-per-token",
            "1",
            "-q",
        ])
        .ok_stdout();
    let rows = csv_rows(&String::from_utf8(out).unwrap());
    assert!(close(num(&rows[0]["tokens_per_second"]), 200.0));
    wd.mfu()
        .args(["enrich", "log.csv", "-o", "-", "--map", "speed=secs_x"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown field 'speed'"));
}

#[test]
fn outputs_are_never_inputs_and_never_overwritten_without_force() {
    let wd = Workdir::new("enrich_outputs");
    let csv = "step,step_time,tokens,num_devices,flops_per_token\n1,1.0,100,1,1e9\n";
    wd.create("log.csv", csv);
    wd.mfu()
        .args(["enrich", "log.csv", "-o", "log.csv", "--force"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("the output is also an input"));
    assert_eq!(std::fs::read_to_string(wd.path("log.csv")).unwrap(), csv);
    wd.create("out.csv", "keep me");
    wd.mfu()
        .args(["enrich", "log.csv", "-o", "out.csv"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "out.csv: already exists; add --force",
        ));
    assert_eq!(
        std::fs::read_to_string(wd.path("out.csv")).unwrap(),
        "keep me"
    );
    wd.mfu()
        .args(["enrich", "log.csv", "-o", "out.csv", "--force", "-q"])
        .assert()
        .success();
    assert!(std::fs::read_to_string(wd.path("out.csv"))
        .unwrap()
        .starts_with("step,step_time"));
    wd.mfu()
        .args(["enrich", "log.csv", "-o", "out.txt"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("cannot tell the output format"));
}

#[test]
fn strict_fails_on_unknown_devices_and_other_inputs_still_land() {
    let wd = Workdir::new("enrich_strict");
    let fixture = fixtures().join("runs.jsonl");
    wd.mfu()
        .arg("enrich")
        .arg(&fixture)
        .args(["-o", "out.csv", "--strict"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "--strict: unknown device 'Acme Tensor Engine X9' for 5 rows",
        ));
    assert!(!wd.path("out.csv").exists());

    // One bad input among good ones: the good ones are written, the exit code says something failed.
    wd.create(
        "good.csv",
        "step,step_time,tokens,num_devices,flops_per_token\n1,1.0,100,1,1e9\n",
    );
    wd.create("bad.csv", "step,loss\n1,2\n");
    wd.mfu()
        .args(["enrich", "good.csv", "bad.csv", "-o", "both.csv"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "mfu: error: bad.csv: no column for step_time",
        ))
        .stderr(predicate::str::contains("1 of 2 inputs enriched"));
    assert_eq!(
        csv_rows(&std::fs::read_to_string(wd.path("both.csv")).unwrap()).len(),
        1
    );
    wd.mfu()
        .args([
            "enrich",
            "good.csv",
            "bad.csv",
            "-o",
            "none.csv",
            "--fail-fast",
        ])
        .assert()
        .code(1);
    assert!(!wd.path("none.csv").exists());
}

#[test]
fn missing_inputs_are_errors() {
    let wd = Workdir::new("enrich_missing_inputs");
    wd.mfu()
        .args(["enrich", "nope.jsonl", "-o", "x.csv"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "nope.jsonl: no such file or folder",
        ));
    std::fs::create_dir_all(wd.path("empty")).unwrap();
    wd.mfu()
        .args(["enrich", "empty", "-o", "x.csv"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("folder holds no logs"));
    wd.mfu().args(["enrich", "x.jsonl"]).assert().code(2);
}

#[test]
fn outputs_are_byte_identical_whatever_the_thread_count() {
    let wd = Workdir::new("enrich_determinism");
    for i in 0..6 {
        let mut text =
            String::from("step,step_time,tokens,num_devices,flops_per_token,device_name,dtype\n");
        for s in 1..=50 {
            text.push_str(&format!(
                "{s},{:.3},{},8,4.2e10,{},bf16\n",
                1.0 + (s * (i + 1)) as f64 * 0.001,
                4096 * (i + 1),
                ["NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB", "Acme X9"][i % 3]
            ));
        }
        wd.create(&format!("in/run{i}.csv"), text);
    }
    for ext in ["parquet", "csv", "jsonl"] {
        let mut outputs = Vec::new();
        for jobs in ["1", "2", "8"] {
            let name = format!("out-{jobs}.{ext}");
            wd.mfu()
                .args(["enrich", "in", "-o", &name, "--jobs", jobs, "-q"])
                .assert()
                .success();
            outputs.push(std::fs::read(wd.path(&name)).unwrap());
        }
        assert!(
            outputs.windows(2).all(|w| w[0] == w[1]),
            "{ext} differs between --jobs 1, 2, 8"
        );
    }
}

#[test]
fn window_adds_rolling_means_within_each_run() {
    let wd = Workdir::new("enrich_window");
    let out = wd
        .mfu()
        .arg("enrich")
        .arg(fixtures().join("summary_runs.csv"))
        .args(["-o", "-", "--window", "2", "-q"])
        .ok_stdout();
    let rows = csv_rows(&String::from_utf8(out).unwrap());
    let header: Vec<&String> = rows[0].keys().collect();
    assert!(header.iter().any(|h| *h == "mfu_wall_clock_rolling"));
    let tps = |i: usize| num(&rows[i]["tokens_per_second"]).unwrap();
    // Row 2 of alpha: mean of rows 1 and 2; row 4 (beta's first): its own value only.
    assert!(close(
        num(&rows[1]["tokens_per_second_rolling"]),
        (tps(0) + tps(1)) / 2.0
    ));
    assert!(close(
        num(&rows[3]["tokens_per_second_rolling"]),
        (tps(2) + tps(3)) / 2.0
    ));
    assert!(close(num(&rows[4]["tokens_per_second_rolling"]), tps(4)));
    let mfu = |i: usize| num(&rows[i]["mfu_wall_clock"]).unwrap();
    assert!(close(
        num(&rows[2]["mfu_wall_clock_rolling"]),
        (mfu(1) + mfu(2)) / 2.0
    ));
    assert_eq!(
        rows[4]["mfu_wall_clock_rolling"], "",
        "unknown device: no MFU to average"
    );
}

/// A JSONL log of `rows` steps over three runs and devices (one unknown), with a null step time, a zero
/// one and a name that needs escaping.
fn streaming_log(rows: usize) -> String {
    let mut text = String::new();
    for s in 0..rows {
        let device = [
            "NVIDIA H100 80GB HBM3",
            "AMD Instinct MI300X",
            "Acme \\\"X9\\\"",
        ][s % 3];
        let time = match s {
            7 => "null".to_string(),
            11 => "0".to_string(),
            _ => format!("{:.6}", 0.5 + (s % 17) as f64 * 0.013),
        };
        text.push_str(&format!(
            "{{\"run_id\":\"run-{}\",\"step\":{s},\"step_time_s\":{time},\"tokens\":{},\"num_devices\":8,\"device_name\":\"{device}\",\"dtype\":\"bf16\",\"flops_per_token\":4.2e10}}\n",
            s % 3,
            4096 * (1 + s % 5)
        ));
    }
    text
}

/// The same log as CSV.
fn streaming_csv(rows: usize) -> String {
    let mut text = String::from("run_id,step,step_time_s,tokens,num_devices,device_name,dtype\n");
    for s in 0..rows {
        text.push_str(&format!(
            "run-{},{s},{:.6},{},8,\"{}\",bf16\n",
            s % 3,
            0.5 + (s % 17) as f64 * 0.013,
            4096 * (1 + s % 5),
            [
                "NVIDIA H100 80GB HBM3",
                "AMD Instinct MI300X",
                "Acme, \"X9\""
            ][s % 3]
        ));
    }
    text
}

/// `mfu enrich INPUT -o OUT` with 4 KiB blocks (streamed when it can be), and whether it was streamed.
fn enrich_in_blocks(wd: &Workdir, input: &str, out: &str, extra: &[&str]) -> (Vec<u8>, bool) {
    let assert = wd
        .mfu()
        .env("MFU_BLOCK_BYTES", "4096")
        .env("MFU_TIMINGS", "1")
        .args(["enrich", input, "-o", out, "--force", "-q"])
        .args(extra)
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    (
        std::fs::read(wd.path(out)).unwrap(),
        stderr.contains(": streamed"),
    )
}

/// The whole-input way: standard output is never streamed.
fn enrich_whole(wd: &Workdir, input: &str, format: &str, extra: &[&str]) -> Vec<u8> {
    wd.mfu()
        .args(["enrich", input, "-o", "-", "--output-format", format, "-q"])
        .args(extra)
        .ok_stdout()
}

#[test]
fn streamed_outputs_are_byte_identical_to_whole_input_outputs() {
    let wd = Workdir::new("enrich_streamed");
    wd.create("log.jsonl", streaming_log(3000));
    wd.create("log.csv", streaming_csv(3000));
    let fpt = ["--flops-per-token", "4.2e10", "--override"];
    for input in ["log.jsonl", "log.csv"] {
        for format in ["parquet", "csv", "jsonl"] {
            let extra: &[&str] = if input == "log.csv" { &fpt } else { &[] };
            let (streamed, was_streamed) =
                enrich_in_blocks(&wd, input, &format!("out.{format}"), extra);
            assert!(was_streamed, "{input} -> {format} was not streamed");
            assert_eq!(
                streamed,
                enrich_whole(&wd, input, format, extra),
                "{input} -> {format}"
            );
        }
    }
}

#[test]
fn stacked_inputs_stream_with_large_and_small_ones_mixed() {
    let wd = Workdir::new("enrich_streamed_stacked");
    wd.create("in/a.jsonl", streaming_log(2000));
    wd.create("in/b.jsonl", streaming_log(5));
    wd.create("in/c.jsonl", streaming_log(1500));
    for format in ["parquet", "csv"] {
        let (streamed, was_streamed) = enrich_in_blocks(&wd, "in", &format!("out.{format}"), &[]);
        assert!(was_streamed);
        assert_eq!(streamed, enrich_whole(&wd, "in", format, &[]), "{format}");
    }
}

#[test]
fn a_late_block_that_does_not_fit_falls_back_to_the_whole_input() {
    let wd = Workdir::new("enrich_streamed_fallback");
    // A column that turns fractional, and another that first appears, after the first blocks.
    let mut late_float = streaming_log(2000);
    late_float.push_str("{\"run_id\":\"run-0\",\"step\":1.5,\"step_time_s\":0.5,\"tokens\":4096,\"num_devices\":8,\"device_name\":\"NVIDIA H100 80GB HBM3\",\"dtype\":\"bf16\",\"flops_per_token\":4.2e10,\"late\":\"x\"}\n");
    wd.create("late.jsonl", late_float);
    // Cumulative counters need the rows before: not streamed either.
    let mut cumulative = String::new();
    for s in 1..=2000 {
        cumulative.push_str(&format!(
            "{{\"step\":{s},\"elapsed_time\":{},\"consumed_tokens\":{}}}\n",
            s as f64 * 0.5,
            s * 4096
        ));
    }
    wd.create("cumulative.jsonl", cumulative);
    let constants = [
        "--num-devices",
        "8",
        "--flops-per-token",
        "4.2e10",
        "--device",
        "H100 SXM",
        "--dtype",
        "bf16",
    ];
    for (input, extra) in [
        ("late.jsonl", &[][..]),
        ("cumulative.jsonl", &constants[..]),
    ] {
        let (out, was_streamed) = enrich_in_blocks(&wd, input, "out.parquet", extra);
        assert!(!was_streamed, "{input}");
        assert_eq!(out, enrich_whole(&wd, input, "parquet", extra), "{input}");
    }
    let (batch, _) = read_parquet(&wd.path("out.parquet"));
    assert_eq!(batch.num_rows(), 2000);
    let (batch, _) = {
        enrich_in_blocks(&wd, "late.jsonl", "late.parquet", &[]);
        read_parquet(&wd.path("late.parquet"))
    };
    assert_eq!(
        batch.column_by_name("step").unwrap().data_type(),
        &DataType::Float64
    );
    assert!(batch.column_by_name("late").is_some());
}

#[test]
fn streamed_rejects_and_torn_lines_keep_the_files_line_numbers() {
    let wd = Workdir::new("enrich_streamed_rejects");
    let mut lines: Vec<String> = streaming_log(2000).lines().map(str::to_string).collect();
    lines[1499] = "{\"run_id\": oops}".to_string();
    let mut text = lines.join("\n");
    text.push_str("\n{\"run_id\":\"run-0\",\"step\":");
    wd.create("bad.jsonl", text);
    let (_, was_streamed) = enrich_in_blocks(
        &wd,
        "bad.jsonl",
        "out.csv",
        &["--skip-bad-rows", "--rejects", "rejects.jsonl"],
    );
    assert!(was_streamed);
    let rejects = std::fs::read_to_string(wd.path("rejects.jsonl")).unwrap();
    let lines: Vec<u64> = rejects
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["line"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(lines, [1500, 2001]);
    let rows = csv_rows(&String::from_utf8(std::fs::read(wd.path("out.csv")).unwrap()).unwrap());
    assert_eq!(rows.len(), 1999);
}

#[test]
fn compressed_inputs_stream_as_they_decompress() {
    let wd = Workdir::new("enrich_streamed_gzip");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(streaming_log(3000).as_bytes()).unwrap();
    wd.create("log.jsonl.gz", gz.finish().unwrap());
    let (streamed, was_streamed) = enrich_in_blocks(&wd, "log.jsonl.gz", "out.parquet", &[]);
    assert!(was_streamed);
    assert_eq!(streamed, enrich_whole(&wd, "log.jsonl.gz", "parquet", &[]));
    let (batch, _) = read_parquet(&wd.path("out.parquet"));
    assert_eq!(batch.num_rows(), 3000);
}

/// A Parquet log of `rows` steps in row groups of 700, with nulls, several integer widths and, with
/// `timestamps`, a timestamp column (not a plain type, so polars reads the file whole).
fn parquet_log(rows: usize, timestamps: bool) -> Vec<u8> {
    use arrow::array::{
        ArrayRef, BooleanArray, Float32Array, Int32Array, Int64Array, TimestampMillisecondArray,
        UInt8Array,
    };
    use std::sync::Arc;
    let mut columns: Vec<(&str, ArrayRef)> = vec![
        (
            "run_id",
            Arc::new(StringArray::from_iter(
                (0..rows).map(|i| (i % 11 != 5).then(|| format!("run-{}", i % 3))),
            )),
        ),
        (
            "step",
            Arc::new(Int64Array::from_iter_values(0..rows as i64)),
        ),
        (
            "step_time_s",
            Arc::new(Float64Array::from_iter(
                (0..rows).map(|i| (i % 13 != 0).then_some(0.5 + (i % 17) as f64 * 0.013)),
            )),
        ),
        (
            "tokens",
            Arc::new(Int32Array::from_iter_values(
                (0..rows).map(|i| 4096 * (1 + i as i32 % 5)),
            )),
        ),
        (
            "num_devices",
            Arc::new(UInt8Array::from_iter_values((0..rows).map(|_| 8u8))),
        ),
        (
            "device_name",
            Arc::new(StringArray::from_iter_values((0..rows).map(|i| {
                ["NVIDIA H100 80GB HBM3", "AMD Instinct MI300X", "Acme X9"][i % 3]
            }))),
        ),
        (
            "dtype",
            Arc::new(StringArray::from_iter_values((0..rows).map(|_| "bf16"))),
        ),
        (
            "flops_per_token",
            Arc::new(Float32Array::from_iter_values((0..rows).map(|_| 4.2e10f32))),
        ),
        (
            "ok",
            Arc::new(BooleanArray::from_iter((0..rows).map(|i| Some(i % 2 == 0)))),
        ),
    ];
    if timestamps {
        columns.push((
            "time",
            Arc::new(TimestampMillisecondArray::from_iter_values(
                (0..rows as i64).map(|i| 1_700_000_000_000 + i * 1000),
            )),
        ));
    }
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(700))
        .build();
    let mut bytes = Vec::new();
    let mut writer =
        parquet::arrow::ArrowWriter::try_new(&mut bytes, batch.schema(), Some(props)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    bytes
}

#[test]
fn parquet_inputs_stream_with_the_bytes_of_the_whole_input_way() {
    let wd = Workdir::new("enrich_streamed_parquet");
    wd.create("plain.parquet", parquet_log(3000, false));
    wd.create("timed.parquet", parquet_log(3000, true));
    for input in ["plain.parquet", "timed.parquet"] {
        for format in ["parquet", "csv"] {
            let (streamed, was_streamed) =
                enrich_in_blocks(&wd, input, &format!("out.{format}"), &[]);
            assert!(was_streamed, "{input}");
            assert_eq!(
                streamed,
                enrich_whole(&wd, input, format, &[]),
                "{input} -> {format}"
            );
        }
    }
    let (batch, _) = read_parquet(&wd.path("out.parquet"));
    assert_eq!(batch.num_rows(), 3000);
}

/// A table whose only measure of work is a rate of its own (a W&B export with a global tokens-a-second
/// series and nothing else): `--map token_rate=COLUMN` makes it the throughput, with no step time or
/// count asked for, and the mapping says so; a table with neither a time nor a rate still must name one.
#[test]
fn a_table_with_only_a_logged_rate_is_enriched_from_it() {
    let wd = Workdir::new("enrich_rate_only");
    let input = wd.create(
        "history.csv",
        "step,loss,throughput\n1,2.5,400000\n2,2.4,410000\n3,2.3,\n",
    );
    let out = wd
        .mfu()
        .args(["enrich", "history.csv", "-o", "-", "-v"])
        .args(["--map", "token_rate=throughput", "--num-devices", "4"])
        .args([
            "--flops-per-token",
            "2e9",
            "--device",
            "NVIDIA H100 80GB HBM3",
        ])
        .args(["--dtype", "bf16"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("token_rate=column 'throughput'"), "{err}");
    assert!(!err.contains("no step timing"), "{err}");
    let rows = csv_rows(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(num(&rows[1]["tokens_per_second"]), Some(410000.0));
    assert_eq!(
        num(&rows[1]["achieved_flops_per_device"]),
        Some(410000.0 * 2e9 / 4.0)
    );
    assert!(close(
        num(&rows[0]["mfu_wall_clock"]),
        400000.0 * 2e9 / 4.0 / 989.4e12
    ));
    // The row without a rate has none, and is counted among the rows with null derived values.
    assert_eq!(rows[2]["tokens_per_second"], "");
    assert!(err.contains("1 row(s) with a missing"), "{err}");
    drop(input);
    wd.mfu()
        .args(["enrich", "history.csv", "-o", "-"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("step_time"));
}

/// A torchtitan console log of `steps` steps, timestamped to the millisecond; the device named in its
/// first line.
fn torchtitan_log(steps: u32, device: &str) -> String {
    let mut log = format!(
        "[rank0]:[titan] 2026-04-18 22:15:35,952 - root - INFO - CUDA capacity: {device} with 79.11GiB memory\n\
         [rank0]:[titan] 2026-04-18 22:15:35,963 - root - INFO - Building device mesh with parallelism: pp=1, dp_replicate=1, dp_shard=8, cp=1, tp=1\n\
         [rank0]:[titan] 2026-04-18 22:15:36,647 - root - INFO - Trainer is initialized with local batch size 8, global batch size 64, gradient accumulation steps 1, sequence length 2048, total steps 100000 (warmup 500)\n"
    );
    for step in 1..=steps {
        let ms = 80_000_000 + u64::from(step) * 1013 + u64::from(step % 7) * 31;
        log.push_str(&format!(
            "[rank0]:[titan] 2026-04-18 {:02}:{:02}:{:02},{:03} - root - INFO - \u{1b}[31mstep: {step:>5}  \u{1b}[32mloss: {:7.4}  memory: 35.13GiB(44.36%)  tps: {}  tflops: 325.77  mfu: 32.94%\u{1b}[39m\n",
            ms / 3_600_000 % 24,
            ms / 60_000 % 60,
            ms / 1000 % 60,
            ms % 1000,
            3.0 - f64::from(step) * 1e-4,
            6000 + step % 900,
        ));
    }
    log
}

/// `mfu enrich LOG -o OUT -v` with windows of a few thousand rows: the output, and the verbose lines.
fn enrich_in_windows(wd: &Workdir, input: &str, out: &str) -> (Vec<u8>, String) {
    let assert = wd
        .mfu()
        .env("MFU_BLOCK_BYTES", "65536")
        .env("MFU_CONSOLE_WINDOWS", "131072,3000,64,16384")
        .args(["enrich", input, "-o", out, "--force", "-v"])
        .assert()
        .success();
    (
        std::fs::read(wd.path(out)).unwrap(),
        String::from_utf8_lossy(&assert.get_output().stderr).into_owned(),
    )
}

#[test]
fn a_large_console_log_is_read_in_windows_to_the_same_rows() {
    let wd = Workdir::new("enrich_console_windows");
    wd.create("train.log", torchtitan_log(12_000, "NVIDIA H100 80GB HBM3"));
    for format in ["csv", "parquet", "jsonl"] {
        let (windowed, said) = enrich_in_windows(&wd, "train.log", &format!("out.{format}"));
        assert!(said.contains("read in windows ("), "{said}");
        assert!(said.contains("window(s) of up to 3000 rows"), "{said}");
        assert!(
            windowed == enrich_whole(&wd, "train.log", format, &[]),
            "{format}"
        );
    }
    let rows = csv_rows(&std::fs::read_to_string(wd.path("out.csv")).unwrap());
    assert_eq!(rows.len(), 12_000);
    // The counts of lines and rows in the notes are the whole log's (the evidence's figures, such as
    // a median ratio, are the head's rows').
    let notes = |said: &str| -> Vec<String> {
        said.lines()
            .filter(|l| l.starts_with("mfu: train.log: ") && !l.contains(": read in windows: "))
            .filter(|l| l.contains(" line(s)") || l.contains(" row(s)"))
            .map(|l| {
                let l = l.split(", read in windows (").next().unwrap();
                l.split(", read whole (").next().unwrap().to_string()
            })
            .collect()
    };
    let (_, windowed) = enrich_in_windows(&wd, "train.log", "out.csv");
    let whole = wd
        .mfu()
        .args(["enrich", "train.log", "-o", "-", "-v"])
        .assert()
        .success();
    let whole = String::from_utf8_lossy(&whole.get_output().stderr).into_owned();
    assert_eq!(notes(&windowed), notes(&whole));
    assert!(
        notes(&whole)
            .iter()
            .any(|n| n.contains("12000 training line(s)")),
        "{whole}"
    );
    // With its shape named: the same.
    let assert = wd
        .mfu()
        .env("MFU_BLOCK_BYTES", "65536")
        .env("MFU_CONSOLE_WINDOWS", "131072,3000,64,16384")
        .args([
            "enrich",
            "train.log",
            "--shape",
            "torchtitan",
            "-o",
            "shaped.csv",
            "-v",
        ])
        .assert()
        .success();
    let said = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(said.contains("read in windows ("), "{said}");
    assert!(
        std::fs::read(wd.path("shaped.csv")).unwrap() == std::fs::read(wd.path("out.csv")).unwrap()
    );
    // Compressed, judged by its size once decompressed: the same rows, in windows.
    let zst =
        zstd::stream::encode_all(&std::fs::read(wd.path("train.log")).unwrap()[..], 3).unwrap();
    wd.create("train.log.zst", &zst);
    let (windowed, said) = enrich_in_windows(&wd, "train.log.zst", "zst.csv");
    assert!(said.contains("read in windows ("), "{said}");
    assert!(windowed == enrich_whole(&wd, "train.log", "csv", &[]));
}

#[test]
fn a_console_log_whose_rest_reads_otherwise_than_its_head_is_read_whole() {
    // A relaunch on other devices after the head: the windows stop, and the whole-input way reads the
    // log, each launch with its own device.
    let wd = Workdir::new("enrich_console_windows_stop");
    let mut log = torchtitan_log(6_000, "NVIDIA H100 80GB HBM3");
    log.push_str(&torchtitan_log(6_000, "NVIDIA A100-SXM4-80GB"));
    wd.create("train.log", log);
    let (windowed, said) = enrich_in_windows(&wd, "train.log", "out.csv");
    assert!(said.contains("differ from the head's"), "{said}");
    assert!(!said.contains("read in windows ("), "{said}");
    assert_eq!(windowed, enrich_whole(&wd, "train.log", "csv", &[]));
    let text = String::from_utf8(windowed).unwrap();
    assert!(
        text.contains("H100 SXM5") && text.contains("A100"),
        "{}",
        &text[..400]
    );
}
