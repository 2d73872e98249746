//! `mfu summary`: aggregates checked against hand computation on two runs, one on an unknown device.

use serde_json::Value;

use crate::util::OkStdout;
use crate::util::{fixtures, ok_csv, Workdir};

const H100: f64 = 989.4e12;

fn summary_json(args: &[&str]) -> Vec<Value> {
    let wd = Workdir::new("summary");
    let out = wd
        .mfu()
        .arg("summary")
        .arg(fixtures().join("summary_runs.csv"))
        .args(["--format", "json"])
        .args(args)
        .ok_stdout();
    serde_json::from_slice(&out).unwrap()
}

fn close(v: &Value, want: f64) -> bool {
    v.as_f64()
        .is_some_and(|x| ((x - want) / want).abs() < 1e-12)
}

#[test]
fn aggregates_weigh_steps_by_time() {
    let runs = summary_json(&[]);
    assert_eq!(runs.len(), 2);
    let a = &runs[0];
    assert_eq!(a["run_id"], "alpha");
    assert_eq!(a["device"], "H100 SXM5");
    assert_eq!(a["dtype"], "bf16");
    assert_eq!(a["num_devices"].as_f64(), Some(4.0));
    assert_eq!(a["steps"], 4);
    assert_eq!(
        (a["first_step"].as_f64(), a["last_step"].as_f64()),
        (Some(1.0), Some(4.0))
    );
    let tokens = 8192.0 * 3.0 + 4096.0;
    let time = 4.0 + 2.0 + 2.5 + 2.0;
    assert!(close(&a["tokens"], tokens));
    assert!(close(&a["step_time_total_s"], time));
    assert!(close(&a["tokens_per_second"], tokens / time));
    // sum(tokens x flops_per_token) / sum(num_devices x peak x step_time), not a mean of per-step MFU.
    assert!(close(
        &a["mfu_wall_clock"],
        tokens * 5e11 / (4.0 * H100 * time)
    ));
    let fb_time = 3.0 + 1.5 + 2.0 + 1.6;
    assert!(close(
        &a["mfu_fwd_bwd"],
        tokens * 5e11 / (4.0 * H100 * fb_time)
    ));
    // Per-step MFU, sorted: 4096/2, 8192/4, 8192/2.5, 8192/2 tokens per second, x 5e11 / (4 x peak).
    let mut per_step: Vec<f64> = [8192.0 / 4.0, 8192.0 / 2.0, 8192.0 / 2.5, 4096.0 / 2.0]
        .iter()
        .map(|tps| tps * 5e11 / (4.0 * H100))
        .collect();
    per_step.sort_by(f64::total_cmp);
    // numpy-style linear interpolation: p10 at position 0.3, p50 at 1.5, p90 at 2.7.
    let at = |pos: f64| {
        let lo = pos.floor() as usize;
        per_step[lo] + (per_step[lo + 1] - per_step[lo]) * (pos - lo as f64)
    };
    assert!(close(&a["mfu_wall_clock_p10"], at(0.3)));
    assert!(close(&a["mfu_wall_clock_p50"], at(1.5)));
    assert!(close(&a["mfu_wall_clock_p90"], at(2.7)));
    assert!(close(&a["peak_flops_per_device"], H100));
    assert_eq!(a["flags"], "fewer than 10 steps");

    let b = &runs[1];
    assert_eq!(b["run_id"], "beta");
    assert_eq!(b["device"], "Acme Tensor Engine X9");
    assert!(b["mfu_wall_clock"].is_null());
    assert!(b["peak_flops_per_device"].is_null());
    assert!(close(&b["tokens_per_second"], 2048.0));
    assert_eq!(b["flags"], "unknown device;fewer than 10 steps");
}

#[test]
fn skip_steps_leaves_out_warm_up() {
    let runs = summary_json(&["--skip-steps", "1"]);
    let a = &runs[0];
    assert_eq!(a["steps"], 3);
    assert_eq!(a["first_step"].as_f64(), Some(2.0));
    let tokens = 8192.0 * 2.0 + 4096.0;
    let time = 2.0 + 2.5 + 2.0;
    assert!(close(
        &a["mfu_wall_clock"],
        tokens * 5e11 / (4.0 * H100 * time)
    ));
}

#[test]
fn csv_table_and_enriched_input_agree() {
    let wd = Workdir::new("summary_formats");
    let input = fixtures().join("summary_runs.csv");
    wd.mfu()
        .arg("enrich")
        .arg(&input)
        .args(["-o", "enriched.parquet", "-q"])
        .assert()
        .success();
    let from_raw = wd
        .mfu()
        .arg("summary")
        .arg(&input)
        .args(["--format", "csv"])
        .ok_stdout();
    let from_enriched = wd
        .mfu()
        .args(["summary", "enriched.parquet", "--format", "csv"])
        .ok_stdout();
    let text = String::from_utf8(from_raw.clone()).unwrap();
    let header = text.lines().next().unwrap();
    assert_eq!(
        header,
        "run_id,device,dtype,num_devices,steps,first_step,last_step,tokens,step_time_total_s,tokens_per_second,mfu_wall_clock,mfu_fwd_bwd,mfu_wall_clock_p10,mfu_wall_clock_p50,mfu_wall_clock_p90,peak_flops_per_device,flags,framework,mfu_logged,audit,samples,samples_per_second"
    );
    assert_eq!(
        from_raw, from_enriched,
        "the enriched table summarises the same"
    );
    // Counts are integers: 4 devices, not 4.0.
    let rows = crate::util::csv_rows(&text);
    let alpha = rows.iter().find(|r| r["run_id"] == "alpha").unwrap();
    assert_eq!(alpha["num_devices"], "4");
    assert!(!alpha["tokens"].contains('.'), "{}", alpha["tokens"]);
    assert!(
        !alpha["first_step"].contains('.'),
        "{}",
        alpha["first_step"]
    );
    let json = wd
        .mfu()
        .arg("summary")
        .arg(&input)
        .args(["--format", "json"])
        .ok_stdout();
    let json: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert!(json[0]["num_devices"].is_i64(), "{}", json[0]);
    assert!(json[0]["tokens"].is_i64(), "{}", json[0]);

    let table = wd
        .mfu()
        .arg("summary")
        .arg(&input)
        .args(["--format", "table"])
        .ok_stdout();
    let table = String::from_utf8(table).unwrap();
    let want = format!("{:.1}", 28672.0 * 5e11 / (4.0 * H100 * 10.5) * 100.0);
    let alpha = table.lines().find(|l| l.starts_with("alpha")).unwrap();
    assert!(alpha.contains(&want), "{alpha} lacks {want}");

    wd.mfu()
        .arg("summary")
        .arg(&input)
        .args(["-o", "runs.parquet"])
        .assert()
        .success();
    assert!(wd.path("runs.parquet").is_file());
    // A key named like a summary column is written as by_<key>.
    let by_dtype = wd
        .mfu()
        .arg("summary")
        .arg(&input)
        .args(["--by", "dtype", "--format", "csv"])
        .ok_stdout();
    let by_dtype = String::from_utf8(by_dtype).unwrap();
    assert!(by_dtype.starts_with("by_dtype,device,dtype,"), "{by_dtype}");
    assert_eq!(by_dtype.lines().count(), 2, "both runs are bf16: one group");
    wd.mfu()
        .arg("summary")
        .arg(&input)
        .args(["--by", "nope"])
        .assert()
        .code(1);
}

/// A table mfu enriched with constants that replaced the file's own columns: the summary reads its rows as
/// the enrichment did (the options its Parquet metadata records), so the totals agree with its MFU.
#[test]
fn an_enriched_file_is_summarised_with_the_options_it_was_made_with() {
    let wd = Workdir::new("summary_recorded");
    let out = wd.path("runs.parquet");
    wd.mfu()
        .arg("enrich")
        .arg(fixtures().join("runs.jsonl"))
        .arg("-o")
        .arg(&out)
        .args(["--tokens-per-step", "100000", "--dtype", "fp8"])
        .args(["--num-devices", "4", "--override", "--quiet"])
        .assert()
        .success();
    let json = wd
        .mfu()
        .arg("summary")
        .arg(&out)
        .args(["--format", "json"])
        .ok_stdout();
    let runs: Vec<Value> = serde_json::from_slice(&json).unwrap();
    assert_eq!(runs.len(), 3);
    // fixtures/runs.jsonl: the H100 run's five step times, in ms.
    let time = (2950.0 + 2910.0 + 2920.0 + 2930.0 + 2920.0) / 1000.0;
    let h100 = &runs[0];
    assert_eq!(h100["run_id"], "llama-7b-h100");
    assert_eq!(h100["dtype"], "fp8");
    assert_eq!(h100["num_devices"], 4);
    assert_eq!(h100["tokens"], 500_000);
    assert!(close(&h100["step_time_total_s"], time), "{h100}");
    assert!(close(&h100["tokens_per_second"], 500_000.0 / time));
    // The fp8 dense peak of the H100 SXM5, and the MFU computed with the constants.
    let peak = h100["peak_flops_per_device"].as_f64().unwrap();
    assert!(close(
        &h100["mfu_wall_clock"],
        500_000.0 * 4.2e10 / (4.0 * peak * time)
    ));
    // The A100 has no fp8 rate: no MFU, and the flag says why.
    let a100 = &runs[1];
    assert!(a100["mfu_wall_clock"].is_null());
    assert_eq!(
        a100["flags"],
        "no fp8 peak for A100 SXM4;fewer than 10 steps"
    );
}

/// Rows a trainer logs every k steps stand for k steps each in the totals.
#[test]
fn rows_logged_every_k_steps_count_for_k_steps() {
    let wd = Workdir::new("summary_spans");
    let log = wd.create(
        "every10.csv",
        "step,step_time,tokens\n10,1.5,1000\n20,2.0,1000\n30,2.5,1000\n",
    );
    let json = wd
        .mfu()
        .arg("summary")
        .arg(&log)
        .args(crate::util::H100_RUN_FLAGS)
        .args(["--format", "json"])
        .ok_stdout();
    let runs: Vec<Value> = serde_json::from_slice(&json).unwrap();
    let run = &runs[0];
    assert_eq!(run["steps"], 3);
    assert_eq!(run["tokens"], 30_000);
    assert!(close(&run["step_time_total_s"], 60.0), "{run}");
    assert!(close(&run["tokens_per_second"], 500.0));
}

#[test]
fn a_run_with_its_frameworks_own_mfu_gets_the_audit_of_it() {
    // torchtitan on an RTX 5090 (tests/data/logs; docs/audit.md has the hand audit).
    let log = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/logs/torchtitan__qiu023-rtx5090-llama3-150m.log");
    let wd = Workdir::new("summary_audit");
    let rows = ok_csv(
        wd.mfu()
            .args(["summary", "--quiet", "--format", "csv", "--dtype", "bf16"])
            .args(["--flops-per-token", "1270480896"])
            .arg(&log),
    );
    assert_eq!(rows[0]["framework"], "torchtitan");
    assert_eq!(rows[0]["mfu_logged"], "0.15505");
    assert!(
        rows[0]["audit"].contains("2.78x the logged figure"),
        "{}",
        rows[0]["audit"]
    );
    // The table says it under the runs.
    let out = wd
        .mfu()
        .args(["summary", "--quiet", "--format", "table", "--dtype", "bf16"])
        .args(["--flops-per-token", "1270480896"])
        .arg(&log)
        .ok_stdout();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("logged MFU %") && text.contains("15.5 (torchtitan)"),
        "{text}"
    );
    assert!(text.contains("\naudit of "), "{text}");
}
