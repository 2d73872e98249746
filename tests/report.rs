//! `mfu report`: the page's contents, its independence from the network, its size for a fleet, and what
//! a reader sees in a real browser (headless Chromium driven by tests/python/browser_check.py over the
//! DevTools protocol; skipped, with a message, where Chromium is not installed: `.ci/run` installs it).

use std::path::{Path, PathBuf};
use std::process::Command as Process;

use serde_json::Value;

use crate::util::{fixtures, OkStdout, Workdir, H100_RUN_FLAGS};

/// What the browser saw of a page, or `None` (after saying why) where there is no Chromium.
fn in_browser(page: &Path, args: &[&str]) -> Option<Value> {
    let out = Process::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/browser_check.py"))
        .arg(page)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "browser_check.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    if let Some(why) = seen.get("skipped") {
        eprintln!("skipped: {why}");
        return None;
    }
    Some(seen)
}

fn report(wd: &Workdir, input: &Path, flags: &[&str]) -> PathBuf {
    let page = wd.path("report.html");
    wd.mfu()
        .env("SOURCE_DATE_EPOCH", "1796500000")
        .arg("report")
        .arg(input)
        .arg("-o")
        .arg(&page)
        .args(["--force", "-q"])
        .args(flags)
        .assert()
        .success();
    page
}

/// The data a report page carries for its script.
fn page_data(page: &Path) -> Value {
    let html = std::fs::read_to_string(page).unwrap();
    let start = html
        .find(r#"<script id="data" type="application/json">"#)
        .unwrap();
    let json = &html[start..];
    let json = &json[json.find('>').unwrap() + 1..json.find("</script>").unwrap()];
    serde_json::from_str(json).unwrap()
}

/// `1234.5` as the page writes it: whole, with thousands separators.
fn grouped(v: f64) -> String {
    let digits = format!("{:.0}", v);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn pct(v: &Value) -> String {
    v.as_f64()
        .map_or("-".into(), |v| format!("{:.1}", v * 100.0))
}

#[test]
fn the_page_holds_everything_and_asks_for_nothing() {
    let wd = Workdir::new("report_page");
    let page = report(&wd, &fixtures().join("demo_runs.csv"), &[]);
    let html = std::fs::read_to_string(&page).unwrap();
    // One file: the data, uPlot and the page's script inline; a policy that forbids every request.
    assert!(html.contains("default-src 'none'"));
    for outside in [
        "src=\"http",
        "href=\"http",
        "src='http",
        "<link ",
        "@import",
        "url(http",
    ] {
        assert!(!html.contains(outside), "{outside}");
    }
    assert!(html.contains("uPlot"));
    // The same inputs make the same page (SOURCE_DATE_EPOCH fixes the time it shows).
    let again =
        std::fs::read_to_string(report(&wd, &fixtures().join("demo_runs.csv"), &[])).unwrap();
    assert_eq!(html, again);
    assert!(
        html.contains("2026-12-05T"),
        "the generation time, from SOURCE_DATE_EPOCH"
    );
}

#[test]
fn in_a_browser_the_summary_matches_mfu_summary_and_sorts() {
    let wd = Workdir::new("report_browser");
    let input = fixtures().join("demo_runs.csv");
    let page = report(&wd, &input, &[]);
    // MFU % is column 6 (after run_id, device, dtype, devices, steps, tokens/s).
    let Some(seen) = in_browser(&page, &["--sort-column", "6"]) else {
        return;
    };
    assert_eq!(seen["console"], Value::Array(vec![]), "{seen}");
    assert_eq!(seen["exceptions"], Value::Array(vec![]), "{seen}");
    assert_eq!(
        seen["requests"],
        Value::Array(vec![]),
        "no request of any kind: {seen}"
    );
    assert_eq!(seen["canvases"], 3);
    let summary: Vec<Value> = serde_json::from_slice(
        &wd.mfu()
            .arg("summary")
            .arg(&input)
            .args(["--format", "json"])
            .ok_stdout(),
    )
    .unwrap();
    // One drawn series per run on each chart, and a dashed fwd+bwd line per run that has one.
    let with_fwd_bwd = summary
        .iter()
        .filter(|r| !r["mfu_fwd_bwd"].is_null())
        .count();
    assert_eq!(
        seen["series"],
        (3 * summary.len() + with_fwd_bwd).to_string()
    );
    let rows = seen["rows"].as_array().unwrap();
    assert_eq!(rows.len(), summary.len());
    for (row, run) in rows.iter().zip(&summary) {
        let cell = |i: usize| row[i].as_str().unwrap().to_string();
        assert_eq!(cell(0), run["run_id"].as_str().unwrap());
        assert_eq!(cell(1), run["device"].as_str().unwrap());
        assert_eq!(cell(2), run["dtype"].as_str().unwrap());
        assert_eq!(cell(3), run["num_devices"].to_string());
        assert_eq!(cell(4), run["steps"].to_string());
        assert_eq!(cell(5), grouped(run["tokens_per_second"].as_f64().unwrap()));
        assert_eq!(cell(6), pct(&run["mfu_wall_clock"]));
        assert_eq!(cell(7), pct(&run["mfu_fwd_bwd"]));
        assert_eq!(cell(9), pct(&run["mfu_wall_clock_p50"]));
    }
    // A click on the MFU header sorts ascending, a second descending.
    let mut mfu: Vec<f64> = summary
        .iter()
        .map(|r| r["mfu_wall_clock"].as_f64().unwrap())
        .collect();
    mfu.sort_by(f64::total_cmp);
    let column = |rows: &Value| -> Vec<String> {
        rows.as_array()
            .unwrap()
            .iter()
            .map(|r| r[6].as_str().unwrap().to_string())
            .collect()
    };
    let ascending: Vec<String> = mfu.iter().map(|v| format!("{:.1}", v * 100.0)).collect();
    assert_eq!(column(&seen["sorted"][0]), ascending);
    let descending: Vec<String> = ascending.iter().rev().cloned().collect();
    assert_eq!(column(&seen["sorted"][1]), descending);
}

#[test]
fn an_unknown_device_keeps_its_throughput_and_says_why_mfu_is_empty() {
    let wd = Workdir::new("report_unknown");
    let page = report(&wd, &fixtures().join("runs.jsonl"), &[]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("unknown device 'Acme Tensor Engine X9'"));
    assert!(html.contains("--peaks FILE"));
    let Some(seen) = in_browser(&page, &[]) else {
        return;
    };
    let rows = seen["rows"].as_array().unwrap();
    let acme = rows
        .iter()
        .find(|r| r[1] == "Acme Tensor Engine X9")
        .expect("the Acme run has a row");
    assert_ne!(acme[5], "-", "throughput is still there: {acme}");
    assert_eq!(acme[6], "-", "MFU is empty: {acme}");
    assert!(acme[12].as_str().unwrap().contains("unknown device"));
    let warnings = seen["warnings"].as_array().unwrap();
    assert!(warnings.iter().any(|w| w
        .as_str()
        .unwrap()
        .contains("unknown device 'Acme Tensor Engine X9'")));
}

#[test]
fn nothing_to_report_is_an_error() {
    let wd = Workdir::new("report_nothing");
    let notes = wd.create("notes/readme.txt", "not a log\n");
    let out = wd
        .mfu()
        .arg("report")
        .arg(notes.parent().unwrap())
        .args(["-o", "r.html"])
        .assert()
        .failure()
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8(out).unwrap();
    assert!(
        err.contains("no input holds a log") || err.contains("nothing to report"),
        "{err}"
    );
    assert!(!wd.path("r.html").exists());
}

/// 200 runs of 10,000 steps: the page stays under 3 MB (and, in the browser, draws every run).
#[test]
fn a_fleet_page_stays_light() {
    let wd = Workdir::new("report_fleet");
    let mut csv = String::with_capacity(50 << 20);
    csv.push_str("run,step,step_time,tokens\n");
    for run in 0..200 {
        let base = 1.0 + (run % 13) as f64 * 0.05;
        for step in 1..=10_000 {
            csv.push_str(&format!(
                "run-{run:03},{step},{:.4},65536\n",
                base + (step % 17) as f64 * 0.003
            ));
        }
    }
    let input = wd.create("fleet.csv", csv);
    let page = report(&wd, &input, &H100_RUN_FLAGS);
    let size = std::fs::metadata(&page).unwrap().len();
    assert!(size < 3 << 20, "{size} bytes");
    let Some(seen) = in_browser(&page, &[]) else {
        return;
    };
    assert_eq!(seen["rows"].as_array().unwrap().len(), 200);
    assert_eq!(seen["series"], "600");
    assert_eq!(seen["exceptions"], Value::Array(vec![]));
    eprintln!(
        "a 200-run page of {size} bytes drawn in {} ms",
        seen["ready_ms"]
    );
}

#[test]
fn a_relaunched_run_shows_where_its_time_went() {
    // The log of tests/cmd_goodput.rs: a crash at step 130, a relaunch from step 100 after 600 s, a
    // 40 s checkpoint, 30 s of compilation at each start.
    let wd = Workdir::new("report_goodput");
    let log = wd.create(
        "train.log",
        crate::cmd_goodput::torchtitan_log(&[(1, 130, 0), (101, 250, 600)]),
    );
    let page = report(
        &wd,
        &log,
        &[
            "--dtype",
            "bf16",
            "--device",
            "H100 SXM",
            "--num-devices",
            "8",
            "--flops-per-token",
            "6e9",
        ],
    );
    let data = page_data(&page);
    let run = &data["goodput"]["rows"][0];
    assert_eq!(run["attempts"], 2);
    for (bucket, seconds) in [
        ("elapsed_s", 1260.0),
        ("productive_s", 500.0),
        ("wasted_progress_s", 60.0),
        ("startup_s", 60.0),
        ("pause_s", 40.0),
        ("recovery_s", 600.0),
    ] {
        assert!(
            (run[bucket].as_f64().unwrap() - seconds).abs() < 1e-6,
            "{bucket}: {run}"
        );
    }
    // torchtitan's own 30% MFU (its lines' `mfu: 30.00%`), audited beside mfu's.
    let summary = &data["summary"]["rows"][0];
    assert_eq!(summary["framework"], "torchtitan");
    assert_eq!(summary["mfu_logged"], 0.3);
    let audit = summary["audit"].as_str().unwrap();
    assert!(audit.starts_with("torchtitan logged 30.00% MFU"), "{audit}");
    let Some(seen) = in_browser(&page, &[]) else {
        return;
    };
    assert_eq!(seen["exceptions"], Value::Array(vec![]), "{seen}");
    let audits = seen["audits"].as_array().unwrap();
    assert_eq!(audits.len(), 1, "{seen}");
    assert!(
        audits[0]
            .as_str()
            .unwrap()
            .ends_with(&format!("train.log: {audit}")),
        "{seen}"
    );
    assert!(
        seen["header"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h == "logged MFU %"),
        "{seen}"
    );
    // The relaunch is marked on the MFU chart, at step 101.
    assert_eq!(
        data["goodput"]["rows"][0]["attempt_steps"],
        serde_json::json!([101.0])
    );
    assert_eq!(seen["relaunches"], "1");
    let bars = seen["goodput"].as_array().unwrap();
    assert_eq!(bars.len(), 1);
    let label = bars[0].as_str().unwrap();
    for share in [
        "productive 39.7%",
        "wasted progress 4.8%",
        "start-up 4.8%",
        "pauses 3.2%",
        "recovery 47.6%",
    ] {
        assert!(label.contains(share), "{share} in {label}");
    }
}

/// The report's goodput section shows `mfu goodput`'s figures for the real relaunched runs of
/// docs/goodput.md, attempts, launches without steps and buckets alike.
#[test]
fn real_relaunched_runs_show_the_figures_of_mfu_goodput() {
    let data_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    for name in [
        "logs/paddledetection__miracle2333-dino-ssod-launches",
        "logs/nanochat__jonhenshaw-d20-1x4090-after-failed-8rank-launch",
        "logs/swin__byungwanlim-swin-t-imagenet-subset-5-launches-2-1-1-1-2gpu",
        "logs/libai__oneflow-vit-tiny-imagenet-launches",
        "logs/gpt-neox__zainsarwar-moe8top1-125m-1gpu",
        "logs/so-vits-svc__skwths-dodo-32k-7-launches",
        "goodput/torchtitan__qiu023-vlm447m-sft-stage2-continuation",
        "goodput/torchtitan__qiu023-kimi436m-attnres-pretrain-resumes",
    ] {
        let wd = Workdir::new("report_real_goodput");
        let log = data_dir.join(format!("{name}.log"));
        let page = report(&wd, &log, &[]);
        let data = page_data(&page);
        let shown = &data["goodput"]["rows"][0];
        let out = wd
            .mfu()
            .args(["goodput", "--quiet", "--format", "json"])
            .arg(&log)
            .output()
            .unwrap();
        let measured: Value = serde_json::from_slice(&out.stdout).unwrap();
        let measured = &measured[0];
        for field in [
            "attempts",
            "launches_without_steps",
            "steps_kept",
            "steps_executed",
            "elapsed_s",
            "productive_s",
            "wasted_progress_s",
            "recovery_s",
            "goodput",
        ] {
            assert_eq!(
                shown[field].as_f64(),
                measured[field].as_f64(),
                "{name} {field}"
            );
        }
    }
}
