//! `mfu goodput` on logs written here with a known history: a crash, a rollback to the last checkpoint,
//! a pause, a compilation step and time down between attempts, each bucket checked to the second.

use crate::util::{csv_rows, number, ok_csv, OkStdout, Workdir};

/// A torchtitan console line at `clock` (milliseconds since the epoch), added to `out`.
fn titan_line(out: &mut String, clock: u64, text: &str) {
    let seconds = clock / 1000;
    let (h, m, s) = (seconds / 3600 % 24, seconds / 60 % 60, seconds % 60);
    out.push_str(&format!(
        "[rank0]:[titan] 2026-04-18 {h:02}:{m:02}:{s:02},{:03} - root - INFO - {text}\n",
        clock % 1000
    ));
}

/// A torchtitan console log of `attempts` (first step, last step, seconds down before it), steps of 2 s,
/// each attempt's first step 30 s slower, 40 s of checkpointing after step 50 of the first attempt.
pub fn torchtitan_log(attempts: &[(u32, u32, u32)]) -> String {
    let mut clock: u64 = 1_776_549_600 * 1000; // 2026-04-18 22:00:00 UTC, in milliseconds
    let mut out = String::new();
    let mut line = |clock: u64, text: &str| titan_line(&mut out, clock, text);
    for (a, &(first, last, down)) in attempts.iter().enumerate() {
        clock += u64::from(down) * 1000;
        line(clock, "Trainer is initialized with local batch size 8, global batch size 64, gradient accumulation steps 1, sequence length 2048, total steps 1000 (warmup 10)");
        line(clock, &format!("Training starts at step {first}"));
        for step in first..=last {
            let seconds = if step == first { 32 } else { 2 };
            clock += seconds * 1000;
            let tps = 8 * 2048 / seconds;
            line(
                clock,
                &format!("step: {step:4}  loss: 2.1000  memory: 30.00GiB(40.00%)  tps: {tps}  tflops: 300.00  mfu: 30.00%"),
            );
            if a == 0 && step == 50 {
                clock += 40_000;
                line(clock, "Saving the checkpoint");
            }
        }
    }
    out
}

const FLAGS: [&str; 8] = [
    "--device",
    "H100 SXM",
    "--dtype",
    "bf16",
    "--num-devices",
    "8",
    "--flops-per-token",
    "6e9",
];

/// `mfu goodput INPUT FLAGS --format csv`, which must succeed: its rows.
fn goodput_rows(
    wd: &Workdir,
    input: &std::path::Path,
    flags: &[&str],
) -> Vec<std::collections::HashMap<String, String>> {
    ok_csv(
        wd.mfu()
            .args(["goodput", "--quiet", "--format", "csv"])
            .arg(input)
            .args(flags),
    )
}

#[test]
fn a_crash_a_rollback_a_pause_and_compilation_each_in_their_bucket() {
    let wd = Workdir::new("goodput_buckets");
    // Attempt 1 runs steps 1..130 and dies; attempt 2 resumes from the checkpoint at step 100 after
    // 600 s down and runs to 250.
    let log = wd.create("train.log", torchtitan_log(&[(1, 130, 0), (101, 250, 600)]));
    let rows = goodput_rows(&wd, &log, &FLAGS);
    assert_eq!(rows.len(), 1);
    let run = &rows[0];
    let n = |k: &str| -> f64 { run[k].parse().unwrap_or_else(|_| panic!("{k}: {}", run[k])) };
    assert_eq!(n("attempts"), 2.0);
    assert_eq!(
        (n("steps_executed"), n("steps_kept"), n("steps_redone")),
        (280.0, 250.0, 30.0)
    );
    // Elapsed: attempt 1 = 32 + 129 x 2 + 40 s; 600 s down; attempt 2 = 32 + 149 x 2 s.
    for (bucket, seconds) in [
        ("elapsed_s", 1260.0),
        ("productive_s", 500.0),
        ("wasted_progress_s", 60.0),
        ("startup_s", 60.0),
        ("pause_s", 40.0),
        ("recovery_s", 600.0),
        ("other_s", 0.0),
        ("ideal_step_time_s", 2.0),
    ] {
        assert!(
            (n(bucket) - seconds).abs() < 1e-6,
            "{bucket}: {}",
            run[bucket]
        );
    }
    let buckets: f64 = [
        "productive_s",
        "wasted_progress_s",
        "startup_s",
        "pause_s",
        "recovery_s",
        "other_s",
    ]
    .iter()
    .map(|b| n(b))
    .sum();
    assert!((buckets - n("elapsed_s")).abs() < 1e-6);
    assert!((n("goodput") - 500.0 / 1260.0).abs() < 1e-12);
    // 64 x 2048 tokens a step x 6e9 FLOPs over 2 s, on 8 H100 SXM at 989.4 TFLOP/s (bf16 dense).
    let mfu = 64.0 * 2048.0 * 6e9 / 2.0 / (8.0 * 989.4e12);
    assert!(
        (n("mfu_productive") - mfu).abs() < 1e-9,
        "{}",
        run["mfu_productive"]
    );
    assert!((n("mfu_effective") - n("goodput") * n("mfu_productive")).abs() < 1e-12);
    assert!((n("device_hours_lost") - 8.0 * 760.0 / 3600.0).abs() < 1e-9);
    // The 40 s pause follows a `Saving the checkpoint` line: checkpointing, not evaluation.
    assert_eq!(
        (n("pause_checkpoint_s"), n("pause_evaluation_s")),
        (40.0, 0.0)
    );
    assert_eq!(run["wall_time_column"], "wall_time");
    assert_eq!(run["notes"], "");
}

#[test]
fn json_and_table_say_the_same_and_a_run_without_wall_times_says_what_it_cannot_measure() {
    let wd = Workdir::new("goodput_formats");
    let log = wd.create("train.log", torchtitan_log(&[(1, 30, 0), (21, 60, 100)]));
    let out = wd
        .mfu()
        .args(["goodput", "--quiet", "--format", "json"])
        .arg(&log)
        .args(FLAGS)
        .ok_stdout();
    let runs: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(runs[0]["attempts"], 2);
    assert_eq!(runs[0]["steps_redone"], 10);
    assert_eq!(runs[0]["recovery_s"], 100.0);
    let table = wd
        .mfu()
        .args(["goodput", "--quiet", "--format", "table"])
        .arg(&log)
        .args(FLAGS)
        .ok_stdout();
    let table = String::from_utf8(table).unwrap();
    assert!(table.contains("0:01:40"), "{table}"); // recovery
    assert!(table.contains("60/70"), "{table}");

    // A table of steps and step times, no wall times and nothing else (no flag needed): productive and
    // wasted time are the step times, the rest is not measured, and the notes say so.
    let mut csv = String::from("step,step_time_s,tokens\n");
    for (first, last) in [(1, 20), (11, 30)] {
        for step in first..=last {
            csv.push_str(&format!("{step},0.5,65536\n"));
        }
    }
    let table = wd.create("steps.csv", csv);
    let rows = goodput_rows(&wd, &table, &[]);
    let run = &rows[0];
    assert_eq!(run["attempts"], "2");
    assert_eq!(run["productive_s"], "15.0");
    assert_eq!(run["wasted_progress_s"], "5.0");
    for unmeasured in [
        "elapsed_s",
        "goodput",
        "recovery_s",
        "mfu_productive",
        "pause_checkpoint_s",
    ] {
        assert_eq!(run[unmeasured], "", "{unmeasured}");
    }
    assert!(run["notes"].contains("no wall time"), "{}", run["notes"]);
    assert!(
        run["notes"].contains("MFU not measured"),
        "{}",
        run["notes"]
    );
}

#[test]
fn runs_split_by_a_column_and_wall_times_from_wandb_timestamps() {
    // Two runs in one W&B-style history export: `_timestamp` in seconds, one run resumed once.
    let wd = Workdir::new("goodput_by");
    let mut csv = String::from("run,_step,_timestamp,step_time_s,tokens\n");
    let mut clock = 1_700_000_000.0;
    for (run, attempts) in [("a", vec![(1, 10), (6, 12)]), ("b", vec![(1, 8)])] {
        for (first, last) in attempts {
            clock += 50.0;
            for step in first..=last {
                clock += 1.0;
                csv.push_str(&format!("{run},{step},{clock},1.0,4096\n"));
            }
        }
    }
    let table = wd.create("history.csv", csv);
    let rows = goodput_rows(&wd, &table, &["--by", "run"]);
    assert_eq!(rows.len(), 2);
    assert_eq!(
        (rows[0]["run"].as_str(), rows[0]["attempts"].as_str()),
        ("a", "2")
    );
    assert_eq!(rows[0]["steps_redone"], "5.0");
    assert_eq!(rows[0]["recovery_s"], "50.0");
    assert_eq!(rows[0]["elapsed_s"], "67.0");
    assert_eq!(rows[0]["wall_time_column"], "_timestamp");
    assert_eq!(
        (rows[1]["run"].as_str(), rows[1]["attempts"].as_str()),
        ("b", "1")
    );
    assert_eq!(rows[1]["goodput"], "1.0");
}

#[test]
fn a_resumed_wandb_run_whose_redone_steps_wandb_dropped_is_told_apart_by_its_runtime() {
    // A W&B history export of a run that died 5 s after logging step 130 and was resumed 600 s later
    // from the checkpoint at step 100: the relaunch took 30 s to start and ran steps 101 to 130 again
    // (60 s), which W&B dropped (lower than its current step), then logged 131 to 250. `_runtime`
    // carries on from the dead process's last (W&B starts a resumed run at it); `_timestamp` does not.
    let wd = Workdir::new("goodput_wandb_resume");
    let mut csv = String::from("_step,_runtime,_timestamp,train/loss\n");
    let (mut runtime, mut wall) = (0.0, 1_700_000_000.0);
    // A row `ran` seconds of the run's processes after the one before, `down` seconds of none.
    let mut row = |step: u32, ran: f64, down: f64| {
        runtime += ran;
        wall += ran + down;
        format!("{step},{runtime},{wall},2.5\n")
    };
    csv.push_str(&row(1, 32.0, 0.0));
    for step in 2..=130 {
        csv.push_str(&row(step, 2.0, 0.0));
    }
    csv.push_str(&row(131, 5.0 + 30.0 + 60.0 + 2.0, 600.0));
    for step in 132..=250 {
        csv.push_str(&row(step, 2.0, 0.0));
    }
    let export = wd.create("wandb_export.csv", csv);
    let run = &goodput_rows(&wd, &export, &[])[0];
    assert_eq!(run["attempts"], "2");
    assert_eq!(run["wall_time_column"], "_timestamp");
    // Down: 600 s, exactly the jump of _timestamp - _runtime. The 95 s the run ran between its last
    // row and the first row W&B kept (5 s after step 130, 30 s of start-up, 60 s of steps run again)
    // cannot be split: other_s holds it, and the notes say so.
    // Step times are `_runtime` differenced, so the first row has none: it is left out (a note says
    // so), and the run is timed from step 2's start.
    assert_eq!(number(run, "recovery_s"), 600.0);
    assert_eq!(number(run, "other_s"), 95.0);
    assert_eq!(number(run, "productive_s"), 249.0 * 2.0);
    assert_eq!(number(run, "startup_s"), 0.0);
    assert_eq!(number(run, "pause_s"), 0.0);
    assert_eq!(number(run, "wasted_progress_s"), 0.0);
    assert_eq!(number(run, "elapsed_s"), 129.0 * 2.0 + 697.0 + 119.0 * 2.0);
    assert_eq!(
        (run["steps_kept"].as_str(), run["steps_redone"].as_str()),
        ("249.0", "0.0")
    );
    buckets_add_up(run);
    assert!(
        run["notes"].contains("W&B drops a step lower than the current one"),
        "{}",
        run["notes"]
    );
    // Without `_runtime` the same gap is one pause: nothing in the log tells a relaunch apart.
    let no_runtime: String = std::fs::read_to_string(&export)
        .unwrap()
        .lines()
        .map(|l| {
            let mut f: Vec<&str> = l.split(',').collect();
            f.remove(1);
            f.join(",") + "\n"
        })
        .collect();
    let export = wd.create("no_runtime.csv", no_runtime);
    let run = &goodput_rows(&wd, &export, &[])[0];
    assert_eq!(run["attempts"], "1", "{run:?}");
}

#[test]
fn a_real_resumed_wandb_run_read_from_its_launch_folders() {
    // Three launch folders of a real run W&B resumed after 12.5 hours down (attempts.md beside it has
    // every figure by hand): the resume is seen by `_timestamp - _runtime` jumping; a launch with only
    // a summary is no step.
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/goodput/wandb__abdelrahman350-synergy-1oyvcl3v");
    let wd = Workdir::new("goodput_wandb_real");
    let rows = goodput_rows(&wd, &folder, &[]);
    assert_eq!(rows.len(), 1);
    let run = &rows[0];
    assert_eq!(run["run_id"], "1oyvcl3v");
    for (key, hand) in [
        ("attempts", 2.0),
        ("steps_kept", 9.0),
        ("steps_redone", 0.0),
        ("ideal_step_time_s", 772.0),
        ("startup_s", 5.0),
        ("recovery_s", 45137.0),
        ("other_s", 458.0),
        ("productive_s", 7492.0),
        ("pause_s", 0.0),
        ("straggler_steps", 2.0),
        ("straggler_s", 544.0),
        ("elapsed_s", 53092.0),
    ] {
        assert_eq!(number(run, key), hand, "{key}");
    }
    buckets_add_up(run);
}

#[test]
fn a_trainer_state_json_says_it_cannot_show_relaunches() {
    // A real HF trainer_state.json (../shared/fixtures-real): reloaded from the checkpoint on resume, it
    // holds kept steps only and no wall times, so only productive time is measured, and the notes say
    // why the rest is not.
    let real = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures-real/hf_trainer_state__Jaong_Checkpoint-of-CPT.json");
    if !real.exists() {
        eprintln!("skipped: {} is absent", real.display());
        return;
    }
    let wd = Workdir::new("goodput_trainer_state");
    // The reader knows the file by its name, as HF writes it.
    let state = wd.create(
        "trainer_state.json",
        std::fs::read_to_string(&real).unwrap(),
    );
    let run = &goodput_rows(&wd, &state, &[])[0];
    assert_eq!(run["attempts"], "1");
    assert_eq!(run["elapsed_s"], "");
    assert_eq!(run["goodput"], "");
    assert_eq!(run["steps_kept"], "5000.0");
    assert!(number(run, "productive_s") > 0.0);
    assert!(
        run["notes"].contains("reloaded from the checkpoint")
            && run["notes"].contains("no wall time"),
        "{}",
        run["notes"]
    );
}

/// `mfu goodput` of a real log in tests/data/goodput (its SOURCE.md names repository, path and commit;
/// its attempts.md is the hand reading the figures below come from), as CSV fields.
fn real_run(name: &str) -> std::collections::HashMap<String, String> {
    let log = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/goodput")
        .join(format!("{name}.log"));
    let wd = Workdir::new("goodput_real");
    let mut rows = goodput_rows(&wd, &log, &[]);
    assert_eq!(rows.len(), 1);
    rows.remove(0)
}

fn buckets_add_up(run: &std::collections::HashMap<String, String>) {
    let sum: f64 = [
        "productive_s",
        "wasted_progress_s",
        "startup_s",
        "pause_s",
        "recovery_s",
        "other_s",
    ]
    .iter()
    .map(|b| number(run, b))
    .sum();
    assert!((sum - number(run, "elapsed_s")).abs() < 1e-6);
}

#[test]
fn a_real_run_relaunched_six_times_by_a_retry_wrapper() {
    // torchtitan SFT on 8 RTX 5090s, relaunched after crashes from its latest checkpoint until step
    // 7000 (QIU023/torchtitan_attention_residual). Hand reading: six attempts trained, 2,712 step lines
    // for the 2,000 steps 5001 to 7000, so 712 steps run again.
    let run = real_run("torchtitan__qiu023-vlm447m-sft-stage2-continuation");
    assert_eq!(run["attempts"], "6");
    // Two launches trained no step; the first's only step line (line 531) is the launch before's, printed
    // late.
    assert_eq!(run["launches_without_steps"], "2");
    assert_eq!(
        (
            number(&run, "steps_executed"),
            number(&run, "steps_kept"),
            number(&run, "steps_redone")
        ),
        (2712.0, 2000.0, 712.0)
    );
    // Each step's time is one device's 4,096 tokens over its `tps`. The first step line of each attempt
    // (excerpt lines 157, 384, 491, 630, 857, 1083) prints tps 222, 173, 218, 221, 235 and 213.
    let first_steps: Vec<f64> = [222.0, 173.0, 218.0, 221.0, 235.0, 213.0]
        .iter()
        .map(|tps| 4096.0 / tps)
        .collect();
    // Elapsed: the first training line to the last is 20,895.791 s, and the first step began its own
    // time before its line.
    assert!((number(&run, "elapsed_s") - (20_895.791 + first_steps[0])).abs() < 0.002);
    // Recovery: the five gaps between one attempt's last line and the next one's first (71.450 +
    // 5,123.221 + 3,590.065 + 66.175 + 67.245 = 8,918.156 s), less each later first step's own time.
    let recovery = 8_918.156 - first_steps[1..].iter().sum::<f64>();
    assert!(
        (number(&run, "recovery_s") - recovery).abs() < 0.005,
        "{}",
        run["recovery_s"]
    );
    buckets_add_up(&run);
    // The crashes come 150 steps after a checkpoint: about a quarter of the time trained steps that were
    // thrown away, and the run's goodput is under one half.
    let wasted = number(&run, "wasted_progress_s") / number(&run, "elapsed_s");
    assert!((0.15..0.16).contains(&wasted), "{wasted}");
    assert!(number(&run, "goodput") < 0.42);
}

#[test]
fn a_real_run_resumed_where_it_stopped_is_told_apart_by_its_restart_lines() {
    // torchtitan pre-training on 4 RTX 5090s, logged every 10 steps over three files of one run folder
    // (QIU023/torchtitan_attention_residual): steps 1 to 12500, then a relaunch from step 12500 that
    // crashed at 12960 without saving, then another from step 12500 again, to 14020. The second
    // attempt goes on from the first's last step: only its `Training starts at step 12501` line says
    // it is a new one.
    let run = real_run("torchtitan__qiu023-kimi436m-attnres-pretrain-resumes");
    assert_eq!(run["attempts"], "3");
    assert_eq!(
        (number(&run, "steps_executed"), number(&run, "steps_redone")),
        (12_500.0 + 460.0 + 1_520.0, 460.0)
    );
    // One device's 49,152 tokens a step over `tps`: step 1 (tps 1,601) is one step; the first line of
    // each relaunch is step 12510 (tps 2,528 and 2,579), ten steps.
    let step_one = 49_152.0 / 1_601.0;
    assert!((number(&run, "elapsed_s") - (223_516.170 + step_one)).abs() < 0.002);
    // The gaps 283.509 and 1,214.225 s, less the ten steps of each relaunch's first line.
    let recovery = 283.509 + 1_214.225 - 10.0 * 49_152.0 / 2_528.0 - 10.0 * 49_152.0 / 2_579.0;
    assert!(
        (number(&run, "recovery_s") - recovery).abs() < 0.005,
        "{}",
        run["recovery_s"]
    );
    buckets_add_up(&run);
}

#[test]
fn a_resumed_tensorboard_run_keeps_every_attempts_steps_for_goodput_only() {
    // fixtures/tensorboard/runs/tbx (written by tensorboardX, make_fixtures.py): steps 1-20 logged
    // 2.5 s apart, then a second event file resumed at step 16 about 1,000 s later, to step 25.
    let wd = Workdir::new("goodput_tensorboard");
    let run = crate::util::fixtures().join("tensorboard/runs/tbx");
    let rows = goodput_rows(&wd, &run, &[]);
    let run_row = &rows[0];
    let n = |k: &str| -> f64 { run_row[k].parse().unwrap() };
    assert_eq!(run_row["attempts"], "2");
    assert_eq!(
        (n("steps_executed"), n("steps_kept"), n("steps_redone")),
        (30.0, 25.0, 5.0)
    );
    // Steps 1-20 end at +50 s (the first began at +0); the resumed file's first step began at +1,000 s
    // and its last ended at +1,025 s.
    assert_eq!(n("elapsed_s"), 1025.0);
    assert_eq!(n("productive_s"), 25.0 * 2.5);
    assert_eq!(n("wasted_progress_s"), 5.0 * 2.5);
    assert_eq!(n("recovery_s"), 950.0);
    // `mfu enrich` of the same folder keeps TensorBoard's rule: one row a step, the later file's.
    assert_eq!(
        ok_csv(
            wd.mfu()
                .args(["enrich", "--quiet", "-o", "-", "--num-devices", "1"])
                .args(["--flops-per-token", "1e9"])
                .arg(&run)
        )
        .len(),
        25
    );
}

#[test]
fn a_real_tensorboard_export_restarted_three_times_is_measured_by_its_wall_times() {
    // ../shared/fixtures-real: a TensorBoard CSV export (Wall time, Step, Value) of one `loss` tag whose
    // step goes back three times (95 -> 68, 2454 -> 41, 28094 -> 36). Its step times would be its own
    // wall times differenced, so only the wall times are used: each gap between the last row before a
    // restart and the first after is recovery.
    let Some(export) = crate::util::shared_file(
        "fixtures-real/tensorboard_scalar_export__ShahariarRabby_run-.-tag-loss.csv",
    ) else {
        return;
    };
    let wd = Workdir::new("goodput_tb_export");
    let run = &goodput_rows(&wd, &export, &[])[0];
    let n = |k: &str| -> f64 { run[k].parse().unwrap() };
    assert_eq!(run["attempts"], "4");
    assert_eq!(run["wall_time_column"], "Wall time");
    // Rows 3/4, 71/72 and 638/639 of the export.
    let gaps = (1_575_619_050.372_710_2 - 1_575_618_793.469_023_5)
        + (1_575_623_153.729_89 - 1_575_622_251.192_073_8)
        + (1_575_694_418.508_282_4 - 1_575_659_710.065_096_4);
    assert!(
        (n("recovery_s") - gaps).abs() < 1e-3,
        "{}",
        run["recovery_s"]
    );
    assert!((n("elapsed_s") - (1_575_708_912.829_657 - 1_575_618_724.704_669_7)).abs() < 1e-3);
    buckets_add_up(run);
}

#[test]
fn a_run_folder_of_one_log_per_launch_is_one_run_its_files_in_order_of_time() {
    // The kimi excerpt is three files of one run folder put end to end (its SOURCE.md: lines 1-247,
    // 248-580 and 581-782). Split back into files, named so that name order is not time order, the
    // folder given as one argument reads as the log does: one run, three attempts.
    let log = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/goodput/torchtitan__qiu023-kimi436m-attnres-pretrain-resumes.log"),
    )
    .unwrap();
    let lines: Vec<&str> = log.split_inclusive('\n').collect();
    let wd = Workdir::new("goodput_folder");
    for (name, range) in [
        ("c_first.log", 0..247),
        ("a_second.log", 247..580),
        ("b_third.log", 580..lines.len()),
    ] {
        wd.create(&format!("run/{name}"), lines[range].concat());
    }
    let whole = real_run("torchtitan__qiu023-kimi436m-attnres-pretrain-resumes");
    let rows = goodput_rows(&wd, &wd.path("run"), &[]);
    assert_eq!(rows.len(), 1);
    let run = &rows[0];
    assert!(run["input"].ends_with("run"), "{}", run["input"]);
    for key in [
        "attempts",
        "steps_executed",
        "steps_redone",
        "elapsed_s",
        "productive_s",
        "recovery_s",
        "pause_s",
    ] {
        assert_eq!(run[key], whole[key], "{key}");
    }
}

/// A batch counter that starts again every epoch, the epoch beside it and no total printed (MXNet's
/// `Epoch[1] Batch [20-40]`, an MLPerf ResNet-50 log): a new epoch goes on from the last, it is no
/// relaunch. Read as one attempt with no step redone; before, each epoch was an attempt that threw the
/// last one's steps away (goodput 2.8%).
#[test]
fn a_counter_that_restarts_every_epoch_is_no_relaunch() {
    let log = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/logs/mxnet__mlperf-v1-dell-resnet50-2x8xa100-pcie.log");
    let wd = Workdir::new("goodput_epochs");
    let rows = goodput_rows(&wd, &log, &[]);
    assert_eq!(rows.len(), 1);
    let run = &rows[0];
    assert_eq!(run["attempts"], "1");
    assert_eq!(number(run, "steps_redone"), 0.0);
    buckets_add_up(run);
    // 17:01:54 to 17:22:51 by the line timestamps; productive time is the rows' step times (samples a
    // step over the logged rate), most of it.
    let goodput = number(run, "goodput");
    assert!((0.9..=1.0).contains(&goodput), "{goodput}");
}

/// One step printed on several lines with no time between (ranks without a rank tag, as MLPerf's Mask
/// R-CNN log with eight lines of each `iter`, one of them timestamped; a progress bar drawn again at the
/// same elapsed time, as a TRL GRPO console) is one row and no relaunch; a step printed again after a
/// relaunch's start-up lines is a relaunch that redid it.
#[test]
fn a_step_printed_again_with_no_time_between_is_one_step_not_a_relaunch() {
    let logs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/logs");
    let wd = Workdir::new("goodput_repeats");
    for (log, rows) in [
        (
            "maskrcnn-benchmark__mlperf-v1-nvidia-maskrcnn-dgxa100-8gpu.log",
            27,
        ),
        ("trl__trldapo-grpo-qwen25vl-3b-1gpu.log", 189),
    ] {
        let run = &goodput_rows(&wd, &logs.join(log), &[])[0];
        assert_eq!(run["attempts"], "1", "{log}");
        assert_eq!(number(run, "steps_redone"), 0.0, "{log}");
        let out = wd
            .mfu()
            .args(["enrich", "-o", "-", "-v"])
            .arg(logs.join(log))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("of a step already read"), "{err}");
        assert!(err.contains(&format!("console log, {rows} rows")), "{err}");
    }
    // Four ranks' lines of each step (one timestamped), then a relaunch that resumes at step 20 and
    // prints step 20 again after its start-up lines.
    let mut text = String::new();
    for (step, at) in [(10, "10:00:10"), (20, "10:00:20")] {
        for rank in 0..4 {
            let stamp = if rank == 0 {
                format!("2026-01-05 {at} ")
            } else {
                String::new()
            };
            text.push_str(&format!("{stamp}iter: {step}  loss: 2.{rank}  time: 1.0\n"));
        }
    }
    text.push_str("Traceback (most recent call last):\nRuntimeError: NCCL timeout\n");
    text.push_str("launching again\nloading checkpoint of step 10\nbuilding the model\n");
    for (step, at) in [(20, "10:05:20"), (30, "10:05:30")] {
        text.push_str(&format!(
            "2026-01-05 {at} iter: {step}  loss: 1.9  time: 1.0\n"
        ));
    }
    let log = wd.create("ranks.log", text);
    let run = &goodput_rows(&wd, &log, &[])[0];
    assert_eq!(run["attempts"], "2");
    assert_eq!(number(run, "steps_redone"), 10.0);
}

/// so-vits-svc (tests/data/logs, its expect.json reads the launches by hand): seven launches appended in
/// one file, each a configuration dump and `Loaded checkpoint './logs\32k\G_N.pth'`; the first three
/// logged no step. A relaunch's first step line has no time of its own (nothing of its launch came
/// before it), and two of them print the step the last attempt ended on (10000, 11000): the checkpoint
/// line, and the step going back, each start an attempt even where that row is left out as untimed.
#[test]
fn seven_appended_launches_of_a_real_run_are_five_attempts_with_steps() {
    let log = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/logs/so-vits-svc__skwths-dodo-32k-7-launches.log");
    let wd = Workdir::new("goodput_sovits");
    let run = &goodput_rows(&wd, &log, &[])[0];
    assert_eq!(run["attempts"], "5");
    // The first two launches (configuration dumps at lines 1 and 5, then minutes of silence) trained no
    // step.
    assert_eq!(run["launches_without_steps"], "2");
    // Steps 6000-6200 and 19000-19200 ran twice (200 each; a row every 200 steps).
    assert_eq!(number(run, "steps_redone"), 400.0);
    assert_eq!(number(run, "steps_kept"), 20000.0);
    // The first step line (excerpt line 14, 2023-02-18 17:38:38,439) to the last (line 699, 2023-02-19
    // 20:39:37,874): 97,259.435 s.
    assert!((number(run, "elapsed_s") - 97_259.435).abs() < 0.001);
    // The four gaps from an attempt's last step line to the next one's first: lines 214 -> 221 (626.358
    // s), 349 -> 357 (2,664.450), 389 -> 397 (6,860.750), 661 -> 667 (69,905.695).
    let gaps = 626.358 + 2_664.450 + 6_860.750 + 69_905.695;
    assert!((number(run, "recovery_s") - gaps).abs() < 0.002);
    buckets_add_up(run);
}

/// torchtitan writes each launch's TensorBoard events to a dated folder of its own (`tb/20260505-0152/`,
/// `tb/20260505-0305/`, ...): the launches of one run, not one run each. The resumed tensorboardX run of
/// fixtures/tensorboard/runs/tbx, its two event files put in two dated folders, reads as the one folder
/// of both files does: one run of two attempts, to the same figures. Dated folders whose wall times
/// overlap ran side by side and stay separate runs.
#[test]
fn dated_launch_folders_of_one_run_are_its_attempts() {
    let wd = Workdir::new("goodput_launch_folders");
    let tbx = crate::util::fixtures().join("tensorboard/runs/tbx");
    let files = [
        "events.out.tfevents.1700000000.host.1.0",
        "events.out.tfevents.1700001000.host.2.0",
    ];
    for (folder, file) in ["20231114-2213", "20231114-2230"].iter().zip(files) {
        wd.create(
            &format!("tb/{folder}/{file}"),
            std::fs::read(tbx.join(file)).unwrap(),
        );
    }
    let rows = goodput_rows(&wd, &wd.path("tb"), &[]);
    assert_eq!(rows.len(), 1, "{rows:?}");
    let joined = &rows[0];
    let whole = &goodput_rows(&wd, &tbx, &[])[0];
    // Every figure the same; the notes name the folders, and the sources are the folders' files.
    for column in mfu::pipeline::goodput::GOODPUT_COLUMNS
        .into_iter()
        .filter(|c| !["notes", "source_files"].contains(c))
    {
        assert_eq!(joined[column], whole[column], "{column}");
    }
    assert_eq!(joined["attempts"], "2");
    assert!(
        joined["notes"].contains("2 launch folders of '")
            && joined["notes"].contains("read as one run, each an attempt"),
        "{}",
        joined["notes"]
    );
    assert!(joined["run_id"].ends_with("tb"), "{joined:?}");
    // The same first file in two dated folders: one ran beside the other, two runs.
    for folder in ["20231114-2213", "20231114-2214"] {
        wd.create(
            &format!("side/{folder}/{}", files[0]),
            std::fs::read(tbx.join(files[0])).unwrap(),
        );
    }
    assert_eq!(goodput_rows(&wd, &wd.path("side"), &[]).len(), 2);
}

/// A real log of tests/data/logs, its goodput row.
fn real_log_goodput(name: &str, flags: &[&str]) -> std::collections::HashMap<String, String> {
    let log = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/logs")
        .join(format!("{name}.log"));
    let wd = Workdir::new(&format!(
        "goodput_{}",
        &name[..name.find("__").unwrap_or(8)]
    ));
    goodput_rows(&wd, &log, flags).remove(0)
}

fn counts(run: &std::collections::HashMap<String, String>) -> (f64, f64, f64) {
    (
        number(run, "steps_executed"),
        number(run, "steps_kept"),
        number(run, "steps_redone"),
    )
}

/// PaddleDetection DINO semi-supervised training, four launches appended in one worker log over six
/// days, each from step 1 of the same pretrained weights (4, 4, 8 and 8 GPUs). Hand reading
/// (docs/goodput.md): steps 1-5063, 1, 1-51 and 1-3618, so only the last launch's 3,618 are kept.
#[test]
fn four_launches_of_a_real_detection_run_each_from_scratch() {
    let run = real_log_goodput("paddledetection__miracle2333-dino-ssod-launches", &[]);
    assert_eq!(
        (
            run["attempts"].as_str(),
            run["launches_without_steps"].as_str()
        ),
        ("4", "0")
    );
    assert_eq!(counts(&run), (8733.0, 3618.0, 5115.0));
    // First step line 03/08 11:18:56 to the last 03/14 20:55:11: 552,975 s, and the first step's own
    // 10.2023 s (its batch_cost, a mean over the one step) before its line.
    assert!(
        (number(&run, "elapsed_s") - 552_985.202_3).abs() < 1e-3,
        "{run:?}"
    );
    // Gaps 524,118 + 740 + 228 s between attempts, less each relaunch's first step (batch_cost 38.7370,
    // 9.2102, 9.1874 on lines 348, 390, 438).
    let recovery = 525_086.0 - (38.7370 + 9.2102 + 9.1874);
    assert!(
        (number(&run, "recovery_s") - recovery).abs() < 1e-3,
        "{run:?}"
    );
    // The evaluation between steps 3559 and 3609 (lines 99 to 219): 2,655 s less 50 steps at the
    // batch_cost of 2.509 the line after it logs.
    assert!(
        (number(&run, "pause_evaluation_s") - 2_529.55).abs() < 1e-3,
        "{run:?}"
    );
    buckets_add_up(&run);
    // Device-hours: the first two launches' stretches (17,983 s and its first step's 10.2023, then the
    // gap of 524,118 s to the second's only line) on 4 GPUs, the last two's (740 + 136, 228 + 9,770 s) on
    // 8, less the kept steps' time on 8.
    let device_s =
        4.0 * (17_983.0 + 10.202_3 + 524_118.0) + 8.0 * (740.0 + 136.0 + 228.0 + 9_770.0);
    let lost = (device_s - 8.0 * number(&run, "productive_s")) / 3600.0;
    assert!(
        (number(&run, "device_hours_lost") - lost).abs() < 1e-6,
        "{run:?}"
    );
}

/// Swin-T on an ImageNet subset, five launches appended over five days, each from scratch (2, 1, 1, 1
/// and 2 GPUs), a line every 10 steps from index 0. Hand reading: steps 0-30, 0-60, 0-380, 0-50, 0-170.
#[test]
fn five_launches_of_a_real_vision_run_from_scratch() {
    let run = real_log_goodput(
        "swin__byungwanlim-swin-t-imagenet-subset-5-launches-2-1-1-1-2gpu",
        &[],
    );
    assert_eq!(run["attempts"], "5");
    assert_eq!(counts(&run), (695.0, 171.0, 524.0));
    // 2024-02-27 18:28:51 to 2024-03-03 14:52:51 (2024 is a leap year): 419,040 s, plus the first
    // step's logged 2.5494 s.
    assert!(
        (number(&run, "elapsed_s") - 419_042.549_4).abs() < 1e-3,
        "{run:?}"
    );
    // Gaps 57,381 + 156 + 3,704 + 357,640 s, less each relaunch's first step (2.3359, 2.3637, 2.3202,
    // 2.8811 s).
    let recovery = 418_881.0 - (2.3359 + 2.3637 + 2.3202 + 2.8811);
    assert!(
        (number(&run, "recovery_s") - recovery).abs() < 1e-3,
        "{run:?}"
    );
    buckets_add_up(&run);
}

/// LiBai ViT: a 1-GPU launch of 86 steps in 3 s (its clock whole seconds, too coarse for mfu enrich to
/// time a step), then an 8-GPU launch from iteration 0 that ran 999 steps. The short launch is an attempt,
/// timed by its own span (3 s over 85 steps), whose 86 steps were all run again.
#[test]
fn a_launch_too_short_for_its_clock_is_still_an_attempt() {
    let run = real_log_goodput("libai__oneflow-vit-tiny-imagenet-launches", &[]);
    assert_eq!(run["attempts"], "2");
    // By hand 1,085 / 999 / 86: the relaunch's first line (iteration 1) has no time of its own, but it
    // is a step, and its attempt starts with it.
    assert_eq!(counts(&run), (1085.0, 999.0, 86.0));
    // 03:07:42 to 03:10:15: 153 s, and the first step's 3/85 s; the gap between the launches, 03:07:45
    // to the relaunch's first line at 03:08:08, is 23 s.
    assert!(
        (number(&run, "elapsed_s") - (153.0 + 3.0 / 85.0)).abs() < 1e-6,
        "{run:?}"
    );
    assert!((number(&run, "recovery_s") - 23.0).abs() < 1e-9, "{run:?}");
    assert!(run["notes"].contains("1 attempt(s) logged no step time of their own"));
    assert!(run["notes"].contains("1 attempt(s) start with a row that has no step time"));
    buckets_add_up(&run);
}

/// GPT-NeoX MoE on one GPU, launched twice from iteration 0 (no checkpoint), a line every 10 iterations
/// whose time is the mean over those 10, and no timestamps: 40 iterations then 10.
#[test]
fn a_real_relaunch_from_scratch_without_a_clock() {
    let run = real_log_goodput("gpt-neox__zainsarwar-moe8top1-125m-1gpu", &[]);
    assert_eq!(run["attempts"], "2");
    // The relaunch's only line, iteration 10, stands for its 10 iterations.
    assert_eq!(counts(&run), (50.0, 10.0, 40.0));
    // The logged times: (1554.7 + 1292.2 + 1296.7 + 1292.7) x 10 ms redone, 1546.8 x 10 ms kept.
    let logged = number(&run, "productive_s")
        + number(&run, "wasted_progress_s")
        + number(&run, "startup_s");
    assert!((logged - 69.831).abs() < 1e-6, "{run:?}");
    assert_eq!(run["elapsed_s"], "");
}

/// nanochat: an 8-process launch on a machine with one GPU died at start-up (`invalid device ordinal`),
/// then a 1-GPU launch trained steps 0 to 2369. The first is counted, not an attempt.
#[test]
fn a_launch_that_died_before_its_first_step_is_counted_not_an_attempt() {
    let run = real_log_goodput(
        "nanochat__jonhenshaw-d20-1x4090-after-failed-8rank-launch",
        &[],
    );
    assert_eq!(
        (
            run["attempts"].as_str(),
            run["launches_without_steps"].as_str()
        ),
        ("1", "1")
    );
    assert_eq!(counts(&run), (2370.0, 2370.0, 0.0));
    assert!(run["notes"].contains("1 launch(es) logged no training step"));
}

/// `-o -` is standard output for the per-run commands, as for `mfu enrich`: not a file named `-`.
#[test]
fn dash_output_is_standard_output() {
    let wd = Workdir::new("goodput_dash_output");
    let log = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/logs/gpt-neox__zainsarwar-moe8top1-125m-1gpu.log");
    for command in ["goodput", "summary", "audit"] {
        let out = wd
            .mfu()
            .args([command, "--quiet", "--format", "csv", "-o", "-"])
            .arg(&log)
            .output()
            .unwrap();
        assert!(out.status.success(), "{command}: {out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.lines().count() >= 2, "{command}: {text}");
        assert!(!wd.path("-").exists(), "{command} wrote a file named '-'");
    }
}

/// One attempt of `steps` steps of 2 s with 40 s of checkpointing after every `every`-th step, as
/// torchtitan logs it.
fn checkpointed_log(steps: u32, every: u32) -> String {
    let mut clock: u64 = 1_776_549_600 * 1000;
    let mut out = String::from("[rank0]:[titan] 2026-04-18 22:00:00,000 - root - INFO - Trainer is initialized with local batch size 8, global batch size 64, gradient accumulation steps 1, sequence length 2048, total steps 100000 (warmup 10)\n");
    let mut line = |clock: u64, text: &str| titan_line(&mut out, clock, text);
    for step in 1..=steps {
        clock += 2000 + u64::from(step % 7) * 3;
        line(
            clock,
            &format!("step: {step:5}  loss: 2.1000  memory: 30.00GiB(40.00%)  tps: 8192  tflops: 300.00  mfu: 30.00%"),
        );
        if step % every == 0 {
            clock += 40_000;
            line(clock, "Saving the checkpoint");
        }
    }
    out
}

/// `mfu COMMAND INPUT FLAGS --format csv -v` with windows of 500 rows: its output and what it said.
fn in_windows(wd: &Workdir, command: &str, input: &str, windows: Option<&str>) -> (String, String) {
    run_in_windows(wd, &[command, input, "--format", "csv", "-v"], windows)
}

/// `mfu ARGS FLAGS`, which must succeed, with windows of the sizes `windows` gives
/// (`MFU_CONSOLE_WINDOWS`; the defaults without): its output and what it said.
fn run_in_windows(wd: &Workdir, args: &[&str], windows: Option<&str>) -> (String, String) {
    let mut mfu = wd.mfu();
    if let Some(sizes) = windows {
        mfu.env("MFU_CONSOLE_WINDOWS", sizes);
    }
    let assert = mfu.args(args).args(FLAGS).assert().success();
    let out = assert.get_output();
    (
        String::from_utf8(out.stdout.clone()).unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The warnings in what mfu said.
fn warnings_said(said: &str) -> Vec<String> {
    said.lines()
        .filter(|l| l.starts_with("mfu: warning"))
        .map(String::from)
        .collect()
}

/// What `-v` says of the reading, less how the log was read and its figures (the evidence's figures
/// read in windows are the head's rows'): the choices it made.
fn reading_said(said: &str) -> Vec<String> {
    said.lines()
        .filter(|l| !l.contains(": read in windows: "))
        .map(|l| {
            let l = l
                .replace(", their rows put together", "")
                .replace(", folded window by window", "");
            let l = match (l.find(", read in windows ("), l.find(", read whole (")) {
                (Some(at), _) | (None, Some(at)) => {
                    let end = l[at..].find(");").map_or(l.len(), |e| at + e + 2);
                    format!("{}{}", &l[..at], &l[end..])
                }
                _ => l,
            };
            // Each number one '#'.
            let mut out = String::with_capacity(l.len());
            for c in l.chars() {
                let c = if c.is_ascii_digit() { '#' } else { c };
                if !(c == '#' && out.ends_with('#')) {
                    out.push(c);
                }
            }
            out
        })
        .collect()
}

#[test]
fn a_large_log_read_in_windows_gives_the_goodput_summary_and_audit_read_whole_gives() {
    // Windows of 500 rows after a head of 64 KiB: the rows of every window are folded into each
    // command's figures, with what the lines between them said (the checkpoints, each on the row
    // after it).
    let wd = Workdir::new("goodput_windows");
    wd.create("train.log", checkpointed_log(6_000, 500));
    let sizes = Some("65536,500,32,16384");
    for command in ["goodput", "summary", "audit"] {
        let (whole, said_whole) = in_windows(&wd, command, "train.log", None);
        let (windowed, said) = in_windows(&wd, command, "train.log", sizes);
        assert!(said.contains("read in windows ("), "{command}: {said}");
        assert!(
            said_whole.contains("read whole ("),
            "{command}: {said_whole}"
        );
        assert_eq!(windowed, whole, "{command}");
        assert_eq!(reading_said(&said), reading_said(&said_whole), "{command}");
        // Each command folds the windows, their rows never held at once.
        assert!(
            said.contains("folded window by window"),
            "{command}: {said}"
        );
    }
    // Compressed, judged by its size once decompressed: the same.
    let zst =
        zstd::stream::encode_all(&std::fs::read(wd.path("train.log")).unwrap()[..], 3).unwrap();
    wd.create("train.log.zst", &zst);
    let (whole, _) = in_windows(&wd, "goodput", "train.log", None);
    let (windowed, said) = in_windows(&wd, "goodput", "train.log.zst", sizes);
    assert!(said.contains("read in windows ("), "{said}");
    assert_eq!(windowed, whole.replace("train.log", "train.log.zst"));
    let rows = ok_csv(
        wd.mfu()
            .env("MFU_CONSOLE_WINDOWS", "65536,500,32,16384")
            .args(["goodput", "train.log", "--format", "csv"])
            .args(FLAGS),
    );
    // Twelve checkpoints of 40 s, the last after the last step (not a pause between steps).
    let checkpointing = number(&rows[0], "pause_checkpoint_s");
    assert!((checkpointing - 11.0 * 40.0).abs() < 0.5, "{checkpointing}");
    assert_eq!(rows[0]["attempts"], "1");
}

#[test]
fn a_relaunch_after_the_head_stops_the_windows_and_the_log_is_read_whole() {
    // The step counter goes back after the head's rows, whose counter never did: evidence the head's
    // reading did not weigh (a relaunch here; a counter that starts again each epoch elsewhere).
    let wd = Workdir::new("goodput_windows_relaunch");
    wd.create(
        "train.log",
        torchtitan_log(&[(1, 3_000, 0), (2_501, 6_000, 600)]),
    );
    let (whole, _) = in_windows(&wd, "goodput", "train.log", None);
    let (windowed, said) = in_windows(&wd, "goodput", "train.log", Some("65536,500,32,16384"));
    assert!(said.contains("read whole ("), "{said}");
    // `-v` says why the log was not folded.
    assert!(
        said.contains("not folded window by window (the step counter goes back (3000 to 2501)"),
        "{said}"
    );
    assert_eq!(windowed, whole);
    let rows = csv_rows(&whole);
    assert_eq!(rows[0]["attempts"], "2");
    assert_eq!(number(&rows[0], "steps_redone"), 500.0);
}

#[test]
fn real_logs_read_in_windows_give_what_they_give_read_whole_where_the_reading_is_the_same() {
    // Each real console log of tests/data/logs over 30 KB, in windows of 64 rows after a head of 30 KB:
    // where the head's rows chose the reading the whole log's choose (-v says the same), the same
    // goodput, summary and audit, to the byte.
    let wd = Workdir::new("goodput_windows_real");
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/logs");
    let mut logs: Vec<_> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .filter(|p| std::fs::metadata(p).unwrap().len() > 30_000)
        .collect();
    logs.sort();
    let mut same = 0;
    for log in &logs {
        let log = log.to_str().unwrap();
        let run = |command: &str, windows: Option<&str>| {
            let mut mfu = wd.mfu();
            if let Some(sizes) = windows {
                mfu.env("MFU_CONSOLE_WINDOWS", sizes);
            }
            mfu.args([command, log, "--format", "csv", "-v"])
                .output()
                .unwrap()
        };
        for command in ["goodput", "summary", "audit"] {
            let windowed = run(command, Some("30000,64,8,4096"));
            if command == "goodput"
                && !String::from_utf8_lossy(&windowed.stderr).contains("read in windows (")
            {
                break; // the windows stopped: every command reads the log whole
            }
            let whole = run(command, None);
            let said = String::from_utf8_lossy(&windowed.stderr).into_owned();
            let said_whole = String::from_utf8_lossy(&whole.stderr).into_owned();
            if !said.contains("read in windows (")
                || reading_said(&said) != reading_said(&said_whole)
            {
                continue;
            }
            assert_eq!(
                windowed.status.code(),
                whole.status.code(),
                "{command} {log}"
            );
            assert_eq!(
                String::from_utf8_lossy(&windowed.stdout),
                String::from_utf8_lossy(&whole.stdout),
                "{command} {log}"
            );
            same += 1;
        }
    }
    eprintln!("{same} readings in windows alike");
    assert!(same >= 15, "{same} readings in windows alike");
}

#[test]
fn relaunches_after_a_head_that_saw_one_are_weighed_in_windows_as_read_whole() {
    // A relaunch in the head (step 300 back to 251) lets the windows read later ones: attempt 3 goes
    // back from 1500 to 1401 inside the windows. Goodput folds the windows twice (a survey, then the
    // accounts) and gives the whole read's bytes: 3 attempts, the steps redone by each relaunch.
    let wd = Workdir::new("goodput_windows_relaunched");
    wd.create(
        "train.log",
        torchtitan_log(&[(1, 300, 0), (251, 1500, 600), (1401, 3000, 300)]),
    );
    let sizes = Some("65536,500,32,16384");
    for command in ["goodput", "audit", "summary"] {
        let (whole, _) = in_windows(&wd, command, "train.log", None);
        let (windowed, said) = in_windows(&wd, command, "train.log", sizes);
        assert!(
            said.contains("folded window by window"),
            "{command}: {said}"
        );
        assert_eq!(windowed, whole, "{command}");
    }
    // Warm-up left out of the summary: the first step the first window holds is the log's.
    let summary = |windows: Option<&str>| {
        let args = [
            "summary",
            "train.log",
            "--skip-steps",
            "20",
            "--format",
            "csv",
        ];
        run_in_windows(&wd, &args, windows).0
    };
    let warm = summary(sizes);
    assert_eq!(warm, summary(None));
    // Steps 1..=20 left out of the 3,150 rows (150 run twice).
    assert!(warm.contains(",3130,21,3000,"), "{warm}");
    let rows = ok_csv(
        wd.mfu()
            .env("MFU_CONSOLE_WINDOWS", "65536,500,32,16384")
            .args(["goodput", "train.log", "--format", "csv"])
            .args(FLAGS),
    );
    assert_eq!(number(&rows[0], "attempts"), 3.0);
    // Steps 251..=300 and 1401..=1500 ran twice.
    assert_eq!(number(&rows[0], "steps_redone"), 150.0);
    assert_eq!(number(&rows[0], "steps_kept"), 3000.0);
    let recovery = number(&rows[0], "recovery_s");
    assert!((recovery - 900.0).abs() < 1.0, "{recovery}");
}

#[test]
fn several_inputs_fold_their_large_logs_and_read_the_rest_whole() {
    // Two logs over the head, folded window by window one after the other, and a small table read
    // whole, in input order: the summary, audit and goodput read every input whole give, to the byte,
    // with the same warnings.
    let wd = Workdir::new("goodput_windows_several");
    wd.create("a.log", checkpointed_log(6_000, 500));
    wd.create(
        "b.log",
        torchtitan_log(&[(1, 300, 0), (251, 1500, 600), (1401, 3000, 300)]),
    );
    wd.create(
        "c.jsonl",
        "{\"step\": 1, \"step_time_s\": 2.0, \"tokens\": 8192}\n{\"step\": 2, \"step_time_s\": 2.0, \"tokens\": 8192}\n",
    );
    let run = |command: &str, windows: Option<&str>| {
        let args = [
            command, "a.log", "c.jsonl", "b.log", "--format", "csv", "-v",
        ];
        run_in_windows(&wd, &args, windows)
    };
    for command in ["summary", "audit"] {
        let (whole, said_whole) = run(command, None);
        let (folded, said) = run(command, Some("65536,500,32,16384"));
        assert_eq!(
            said.matches("folded window by window").count(),
            2,
            "{command}: {said}"
        );
        assert_eq!(folded, whole, "{command}");
        assert_eq!(
            warnings_said(&said),
            warnings_said(&said_whole),
            "{command}"
        );
        assert_eq!(csv_rows(&folded).len(), 3, "{command}: {folded}");
    }
    // Goodput folds them too, each input its own run, twice.
    let (whole, _) = run("goodput", None);
    let (folded, said) = run("goodput", Some("65536,500,32,16384"));
    assert_eq!(said.matches("folded window by window").count(), 2, "{said}");
    assert_eq!(folded, whole);
}

#[test]
fn a_run_of_one_log_per_launch_is_folded_in_windows_as_read_whole() {
    // A folder of three launch logs (as a launcher that writes a log per launch leaves them), named so
    // that their order is not their launches': one run, its files put in order of their first wall
    // time, each after the first an attempt; every log over the head, folded window by window twice.
    let wd = Workdir::new("goodput_windows_launches");
    // Within one day: the helper's timestamps do not roll the date over at midnight.
    let log = torchtitan_log(&[(1, 1000, 0), (901, 1800, 600), (1701, 2400, 300)]);
    let mut launches: Vec<String> = Vec::new();
    for line in log.lines() {
        if line.contains("Trainer is initialized") {
            launches.push(String::new());
        }
        let last = launches.last_mut().expect("the log starts with a launch");
        last.push_str(line);
        last.push('\n');
    }
    assert_eq!(launches.len(), 3);
    for (name, text) in ["c.log", "a.log", "b.log"].iter().zip(&launches) {
        wd.create(&format!("run/{name}"), text);
    }
    let run = |windows: Option<&str>| {
        run_in_windows(&wd, &["goodput", "run", "--format", "csv", "-v"], windows)
    };
    let (whole, _) = run(None);
    let (folded, said) = run(Some("65536,500,32,16384"));
    assert_eq!(said.matches("folded window by window").count(), 3, "{said}");
    assert_eq!(folded, whole);
    let rows = csv_rows(&folded);
    assert_eq!(rows.len(), 1, "{folded}");
    assert_eq!(rows[0]["attempts"], "3");
    // Steps 901..=1000 and 1701..=1800 ran twice; 900 s down between the launches.
    assert_eq!(number(&rows[0], "steps_redone"), 200.0);
    assert_eq!(number(&rows[0], "steps_kept"), 2400.0);
    let recovery = number(&rows[0], "recovery_s");
    assert!((recovery - 900.0).abs() < 1.0, "{recovery}");
}

#[test]
fn a_folder_with_a_file_no_reader_takes_says_each_inputs_warnings_when_folded() {
    // A folder walk finds a text file no reader takes (skipped, said once), a log over the head
    // (folded) and a table with cells that are not numbers (read whole, warned of): each input's
    // warnings are said as reading every input whole says them, and the summary is the same.
    let wd = Workdir::new("goodput_windows_skipped");
    wd.create(
        "run/a_notes.txt",
        "These are the notes of the run, not a log.\nNothing to read.\n",
    );
    wd.create("run/b.log", checkpointed_log(6_000, 500));
    wd.create(
        "run/c.jsonl",
        "{\"step\": 1, \"step_time_s\": \"fast\", \"tokens\": 8192}\n{\"step\": 2, \"step_time_s\": 2.0, \"tokens\": 8192}\n",
    );
    let run = |windows: Option<&str>| {
        run_in_windows(&wd, &["summary", "run", "--format", "csv", "-v"], windows)
    };
    let (whole, said_whole) = run(None);
    let (folded, said) = run(Some("65536,500,32,16384"));
    assert!(said.contains("folded window by window"), "{said}");
    assert_eq!(folded, whole);
    let told = warnings_said(&said);
    assert_eq!(told, warnings_said(&said_whole));
    assert!(
        told.iter()
            .any(|w| w.contains("c.jsonl") && w.contains("not a number")),
        "{said}"
    );
    assert!(told.iter().any(|w| w.contains("a_notes.txt")), "{said}");
}
