//! Trainer log shapes: a small fixture of our own for every shape (always run), and the real logs in
//! ../shared/fixtures-real (skipped with a message when absent), with expected values worked out by hand
//! from the files' rows.

use std::collections::HashMap;

use predicates::prelude::*;

use crate::util::{csv_rows, fixtures, shared_file, OkStdout, Workdir, H100_RUN_FLAGS};

use crate::util::enrich_ok as enrich;

fn num(row: &HashMap<String, String>, col: &str) -> Option<f64> {
    let cell = row.get(col).unwrap_or_else(|| panic!("no column {col}"));
    (!cell.is_empty()).then(|| cell.parse().unwrap())
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| ((a - b) / b).abs() < 1e-9)
}

const RUN: [&str; 8] = [
    "--device",
    "NVIDIA H100 80GB HBM3",
    "--dtype",
    "bf16",
    "--num-devices",
    "8",
    "--flops-per-token",
    "1e10",
];
const H100: f64 = 989.4e12;

fn mfu(tokens_per_step: f64, step_time: f64) -> f64 {
    tokens_per_step * 1e10 / (8.0 * step_time) / H100
}

#[test]
fn hf_trainer_state_rows_and_cumulative_counters() {
    let file = fixtures().join("shapes/trainer_state.json");
    let (rows, _) = enrich(&file, &RUN);
    // Training rows only: the eval, predict and summary rows are not steps.
    let steps: Vec<_> = rows.iter().map(|r| r["step"].clone()).collect();
    assert_eq!(steps, ["10", "20", "30"]);
    // num_input_tokens_seen and train_runtime are cumulative: the first row has no interval.
    assert_eq!(num(&rows[0], "tokens_per_second"), None);
    // Row 2: (81920 - 40960) / 10 tokens per step over (25 - 12.5) / 10 s per step.
    assert!(close(num(&rows[1], "tokens_per_second"), 4096.0 / 1.25));
    assert!(close(num(&rows[1], "mfu_wall_clock"), mfu(4096.0, 1.25)));
    assert!(close(num(&rows[2], "mfu_wall_clock"), mfu(4096.0, 1.5)));

    let (all, _) = enrich(&file, &[&RUN[..], &["--rows", "all"]].concat());
    let kinds: Vec<_> = all.iter().map(|r| r["row_kind"].clone()).collect();
    assert_eq!(
        kinds,
        ["train", "train", "eval", "train", "predict", "summary"]
    );
    let (eval, _) = enrich(
        &file,
        &[&RUN[..], &["--rows", "eval", "--tokens-per-step", "1"]].concat(),
    );
    assert_eq!(eval.len(), 1);
    assert_eq!(eval[0]["eval_loss"], "2.2");
}

#[test]
fn hf_trainer_state_without_row_timing_uses_the_run_mean() {
    let file = fixtures().join("shapes/trainer_state_old.json");
    let (rows, err) = enrich(
        &file,
        &[&RUN[..], &["--tokens-per-step", "4096", "-v"]].concat(),
    );
    assert_eq!(rows.len(), 2);
    // train_runtime 2500 s, less its evaluation's eval_runtime 30 s, over 1000 steps.
    assert_eq!(num(&rows[0], "run_mean_step_time_s"), Some(2.47));
    assert!(close(num(&rows[1], "mfu_wall_clock"), mfu(4096.0, 2.47)));
    assert!(
        err.contains("less 30 s in the log's 1 evaluation and prediction entries"),
        "{err}"
    );
    assert!(
        err.contains("each training row gets the run's mean step time"),
        "{err}"
    );
    assert!(err.contains("num_input_tokens_seen is 0"), "{err}");
}

#[test]
fn llamafactory_elapsed_time_strings_and_total_tokens() {
    let file = fixtures().join("shapes/trainer_log.jsonl");
    let (rows, err) = enrich(&file, &[&RUN[..], &["-v"]].concat());
    let steps: Vec<_> = rows.iter().map(|r| r["current_steps"].clone()).collect();
    assert_eq!(
        steps,
        ["10", "20", "30", "40"],
        "eval line and repeated step dropped"
    );
    assert!(
        err.contains("1 evaluation line(s) and 1 repeated step(s) skipped"),
        "{err}"
    );
    assert_eq!(num(&rows[0], "mfu_wall_clock"), None);
    // 0:00:45 - 0:00:20 = 25 s over 10 steps; 20480 tokens over 10 steps.
    assert!(close(num(&rows[1], "tokens_per_second"), 2048.0 / 2.5));
    // Across the eval line: 0:01:15 - 0:00:45 = 30 s (evaluation time included, as logged).
    assert!(close(num(&rows[2], "tokens_per_second"), 2048.0 / 3.0));
    // "1 day, 0:00:35" - "0:01:15" = 86400 + 35 - 75 s.
    assert!(close(
        num(&rows[3], "tokens_per_second"),
        2048.0 / (86360.0 / 10.0)
    ));
}

#[test]
fn llamafactory_training_lines_with_null_eval_keys_are_steps() {
    // Newer LLaMA-Factory writes eval_loss, predict_loss, reward and accuracy as null on training lines.
    let file = fixtures().join("shapes/trainer_log_nulls.jsonl");
    let (rows, err) = enrich(&file, &[&RUN[..], &["-v"]].concat());
    let steps: Vec<_> = rows.iter().map(|r| r["current_steps"].clone()).collect();
    assert_eq!(steps, ["5", "10", "15"]);
    assert!(
        err.contains("1 evaluation line(s) and 0 repeated step(s) skipped"),
        "{err}"
    );
    assert_eq!(rows[0]["eval_loss"], "");
    // 0:00:30 - 0:00:10 = 20 s over 5 steps; 10240 tokens over 5 steps.
    assert!(close(num(&rows[1], "tokens_per_second"), 2048.0 / 4.0));
    // Across the eval line: 0:00:50 - 0:00:30 = 20 s.
    assert!(close(num(&rows[2], "tokens_per_second"), 2048.0 / 4.0));
}

#[test]
fn megatron_console_log_with_its_argument_dump() {
    // World size, precision and tokens per iteration come from the run's own argument dump.
    let file = fixtures().join("shapes/megatron_lm.log");
    let (rows, err) = enrich(
        &file,
        &[
            "--device",
            "NVIDIA H100 80GB HBM3",
            "--flops-per-token",
            "4.2e10",
            "-v",
        ],
    );
    assert!(err.contains("megatron-log log, 3 rows"), "{err}");
    // The argument dump's facts, each named with its line; the flag wins over the dump's model shape.
    for said in [
        "num_devices=64 from the argument dump's world_size at line 16",
        "dtype='bf16' from the argument dump's bf16 at line 4",
        "seq_len=4096 from the argument dump's seq_length at line 14",
        "flops_per_token=constant 42000000000",
        "tokens per iteration = global batch size x seq_length",
    ] {
        assert!(err.contains(said), "{said}: {err}");
    }
    let steps: Vec<_> = rows.iter().map(|r| r["iteration"].clone()).collect();
    assert_eq!(steps, ["10", "20", "30"]);
    assert_eq!(rows[1]["lm_loss"], "8.84321");
    // 512 x 4096 tokens in 2.95 s on 64 devices.
    let tokens = 512.0 * 4096.0;
    assert!(close(num(&rows[1], "tokens_per_second"), tokens / 2.95));
    let mfu = tokens * 4.2e10 / (64.0 * 2.95) / 989.4e12;
    assert!(close(num(&rows[1], "mfu_wall_clock"), mfu));
}

#[test]
fn megatron_argument_dump_gives_flops_per_token_as_mfu_flops_counts() {
    // The dump's model shape (a LLaMA-2 7B: SwiGLU, 11008 FFN, 32000 padded vocabulary) counted at its
    // seq_length is what `mfu flops` counts for the same model's config.json.
    let file = fixtures().join("shapes/megatron_lm.log");
    let (rows, err) = enrich(&file, &["--device", "NVIDIA H100 80GB HBM3", "-v"]);
    let flops = Workdir::new("megatron_dump_flops")
        .mfu()
        .args(["flops", "--config"])
        .arg(fixtures().join("configs/llama-2-7b.json"))
        .args(["--seq-len", "4096", "--json"])
        .output()
        .unwrap();
    let counted: serde_json::Value = serde_json::from_slice(&flops.stdout).unwrap();
    let per_token = counted["flops_per_token"].as_f64().unwrap();
    assert!(
        err.contains(&format!(
            "flops_per_token={per_token} from the argument dump's model shape"
        )),
        "{per_token}: {err}"
    );
    let mfu = 512.0 * 4096.0 * per_token / (64.0 * 2.95) / 989.4e12;
    assert!(close(num(&rows[1], "mfu_wall_clock"), mfu));
}

#[test]
fn megatron_deepspeed_console_log_counts_its_own_tokens() {
    let file = fixtures().join("shapes/megatron_deepspeed.out");
    let (rows, err) = enrich(&file, &[&RUN[..], &["-v"]].concat());
    assert!(err.contains("megatron-log log, 2 rows"), "{err}");
    assert_eq!(rows[1]["tokens_per_gpu_per_second_tgs"], "5120.0");
    // consumed tokens is a running total: 10485760 tokens over the 10 iterations since the last line,
    // 3.2 s each.
    assert!(close(
        num(&rows[1], "tokens_per_second"),
        10485760.0 / 10.0 / 3.2
    ));
}

#[test]
fn a_text_log_that_no_preset_reads_names_the_flags_that_would() {
    let wd = Workdir::new("shapes_unknown_text");
    wd.create("notes.log", "hello\nworld\n");
    let out = wd
        .mfu()
        .args(["enrich", "notes.log", "-o", "-"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("notes.log: cannot tell the format"),
        "{stderr}"
    );
    assert!(stderr.contains("--shape and --line-regex"), "{stderr}");
}

#[test]
fn a_console_log_is_recognised_past_a_long_preamble() {
    // modded-nanogpt logs start with the whole training script: the first step line is far in.
    let wd = Workdir::new("shapes_preamble");
    let mut text = String::from("import torch\n");
    text.push_str(
        &"# a line of the training script, printed before training starts\n".repeat(2000),
    );
    text.push_str(&std::fs::read_to_string(fixtures().join("shapes/modded_nanogpt.txt")).unwrap());
    assert!(text.find("step:").unwrap() > 64 * 1024);
    let path = wd.create("training_log.txt", &text);
    let (rows, err) = enrich(
        &path,
        &[&RUN[..], &["--tokens-per-step", "4096", "-v"]].concat(),
    );
    assert!(err.contains("modded-nanogpt log"), "{err}");
    assert!(!rows.is_empty());
}

#[test]
fn ms_swift_logging_jsonl() {
    let file = fixtures().join("shapes/ms_swift_logging.jsonl");
    let (rows, err) = enrich(
        &file,
        &[&RUN[..], &["--tokens-per-step", "131072", "-v"]].concat(),
    );
    assert!(err.contains("ms-swift log, 3 rows"), "{err}");
    assert!(
        err.contains("3 training line(s); 1 evaluation line(s), 2 other line(s) and 0 repeated step(s) skipped"),
        "{err}"
    );
    assert!(
        err.contains("tokens_this_step counts one data-parallel rank's tokens and the line logs no global rate"),
        "{err}"
    );
    assert!(
        err.contains("elapsed times from train_speed x steps"),
        "{err}"
    );
    assert!(
        err.contains("4.1 s of evaluation (eval_runtime of the evaluation lines in between) left out of 1 row(s)' intervals"),
        "{err}"
    );
    let steps: Vec<_> = rows.iter().map(|r| r["global_step"].clone()).collect();
    assert_eq!(steps, ["5", "10", "15"]);
    assert_eq!(rows[2]["elapsed_time"], "61.0");
    // The running totals from train_speed(iter/s): steps / speed. The first interval starts with
    // training; the third leaves out the 4.1 s the evaluation line between says it took.
    let total = |steps: f64, speed: f64| steps / speed;
    let times = [
        total(5.0, 0.412) / 5.0,
        (total(10.0, 0.455) - total(5.0, 0.412)) / 5.0,
        (total(15.0, 0.245902) - total(10.0, 0.455) - 4.1) / 5.0,
    ];
    for (row, time) in rows.iter().zip(times) {
        assert!(close(num(row, "mean_step_time_s"), time), "{row:?}");
        assert!(close(num(row, "tokens_per_second"), 131072.0 / time));
    }
}

/// Megatron under srun and torchrun (`0: [default0]:` before every line): the argument dump behind the
/// prefix still gives the device count, the precision (FP8, said in -v), the sequence length and the
/// FLOPs per token.
#[test]
fn megatron_log_under_srun() {
    let file = fixtures().join("shapes/megatron_srun.log");
    let (rows, err) = enrich(&file, &["--device", "NVIDIA H100 80GB HBM3", "-v"]);
    assert_eq!(rows.len(), 3, "{err}");
    assert!(
        err.contains("num_devices=4 from the argument dump's world_size"),
        "{err}"
    );
    assert!(
        err.contains("dtype='fp8' from the argument dump's fp8"),
        "{err}"
    );
    assert!(err.contains("the run trains in FP8 (fp8 hybrid"), "{err}");
    assert!(err.contains("seq_len=2048 from the argument dump"), "{err}");
    assert_eq!(rows[0]["tokens"], "131072"); // 64 x 2048
                                             // The model shape counted as `mfu flops` counts it (TinyLlama-like: 22 layers, GQA, SwiGLU).
    assert!(
        err.contains("flops_per_token=7313817600 from the argument dump's model shape"),
        "{err}"
    );
    assert_eq!(num(&rows[0], "peak_flops_per_device"), Some(1978.9e12));
    assert!(close(
        num(&rows[0], "mfu_wall_clock"),
        131072.0 * 7313817600.0 / (4.0 * 1.2104) / 1978.9e12
    ));
}

/// No argument dump: the device count from `using world size`, the tokens from tokens/sec/gpu.
#[test]
fn megatron_log_tokens_from_the_per_gpu_rate() {
    let file = fixtures().join("shapes/megatron_srun_rate.log");
    let (rows, err) = enrich(
        &file,
        &[
            "--device",
            "NVIDIA H100 80GB HBM3",
            "--dtype",
            "bf16",
            "--flops-per-token",
            "1e10",
            "-v",
        ],
    );
    assert!(
        err.contains("num_devices=8 from 'using world size' at line 1"),
        "{err}"
    );
    assert!(
        err.contains("world size 8, data-parallel size 2 (line 1)"),
        "{err}"
    );
    // 27072.0 tokens/s/GPU x 8 GPUs x 1.2104 s.
    assert!(close(num(&rows[0], "tokens"), 27072.0 * 8.0 * 1.2104));
    assert!(close(num(&rows[0], "tokens_per_second"), 27072.0 * 8.0));
    assert!(close(
        num(&rows[0], "mfu_wall_clock"),
        27072.0 * 1e10 / H100
    ));
}

/// A real ms-swift run folder (fixtures/ms_swift/SOURCE.md): the step time from train_speed(s/it) to the
/// millisecond, the global tokens from one rank's count and the global rate, precision and device count
/// from args.json beside the log.
#[test]
fn ms_swift_real_run_folder() {
    let file = fixtures().join("ms_swift/v0-20260425-045155/logging.jsonl");
    let (rows, err) = enrich(
        &file,
        &[
            "--device",
            "NVIDIA H100 80GB HBM3",
            "--flops-per-token",
            "1e10",
            "-v",
        ],
    );
    assert_eq!(rows.len(), 40, "{err}");
    assert!(err.contains("num_devices=8 from"), "{err}");
    assert!(err.contains("args.json (global_world_size)"), "{err}");
    assert!(err.contains("dtype='bf16' from"), "{err}");
    assert!(
        err.contains("/ tokens_this_step = 4)"),
        "the data-parallel size: {err}"
    );
    // train_speed(s/it) x steps is the running total, so the step times add up to the last line's.
    let sum: f64 = rows
        .iter()
        .map(|r| num(r, "mean_step_time_s").unwrap())
        .sum();
    assert!(close(Some(sum), 1.794522 * 40.0), "{sum}");
    // Step 4: 2.871698 s/it x 4 - 3.51807 s/it x 3; one rank's 221 tokens x 4 ranks.
    let step4 = &rows[3];
    assert_eq!(step4["global_step"], "4");
    let time = 2.871698 * 4.0 - 3.51807 * 3.0;
    assert!(close(num(step4, "mean_step_time_s"), time));
    assert!(close(num(step4, "global_tokens"), 884.0));
    let mfu = 884.0 * 1e10 / (8.0 * time) / H100;
    assert!(close(num(step4, "mfu_wall_clock"), mfu), "{step4:?}");
}

/// The event-file fixtures (made by fixtures/tensorboard/make_fixtures.py), copied into `wd`.
fn event_runs(wd: &Workdir) -> std::path::PathBuf {
    let from = fixtures().join("tensorboard/runs");
    for run in ["tbx", "tf2"] {
        for entry in std::fs::read_dir(from.join(run)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            wd.create(&format!("runs/{run}/{name}"), std::fs::read(&path).unwrap());
        }
    }
    wd.path("runs")
}

#[test]
fn tensorboard_event_files_one_run_per_folder() {
    let wd = Workdir::new("shapes_tfevents");
    let runs = event_runs(&wd);
    let (rows, err) = enrich(&runs, &[&H100_RUN_FLAGS[..], &["-v"]].concat());
    assert!(
        err.contains("runs/tbx: tensorboard-events log, 25 rows"),
        "{err}"
    );
    assert!(
        err.contains("2 event file(s), 25 step(s), 3 scalar tag(s)"),
        "{err}"
    );
    assert!(
        err.contains("15 value(s) at steps a later file logged again replaced by it"),
        "{err}"
    );
    assert!(
        err.contains("runs/tf2: tensorboard-events log, 12 rows"),
        "{err}"
    );
    // tensorboardX's run: simple values; its histogram and text are not columns.
    let tbx: Vec<_> = rows.iter().filter(|r| r["run_id"] == "tbx").collect();
    let steps: Vec<_> = tbx.iter().map(|r| r["step"].clone()).collect();
    assert_eq!(steps.len(), 25);
    assert_eq!((steps[0].as_str(), steps[24].as_str()), ("1", "25"));
    assert!(!rows[0].contains_key("weights") && !rows[0].contains_key("note"));
    // Steps 16-20 come from the resumed file: loss 3.0 - 0.05 * step written again, wall times later.
    assert_eq!(tbx[15]["wall_time"], "1700001002.5");
    assert!(close(
        num(tbx[15], "train/loss"),
        (3.0f32 - 0.05 * 16.0) as f64
    ));
    // perf/step_time_s is the step time: 131072 tokens in 2.5 s.
    assert!(close(num(tbx[3], "tokens_per_second"), 131072.0 / 2.5));
    // The TF2 run: rank-0 tensors of every kind; no step-time tag, so wall-time differences (1.25 s).
    let tf2: Vec<_> = rows.iter().filter(|r| r["run_id"] == "tf2").collect();
    assert_eq!(tf2.len(), 12);
    assert_eq!(tf2[4]["grad_scale"], "1.0");
    assert_eq!(tf2[4]["acc"], "0.25");
    assert_eq!(tf2[4]["loss"], "1.75");
    assert!(!tf2[0].contains_key("vector"));
    assert_eq!(num(tf2[0], "tokens_per_second"), None);
    assert!(close(num(tf2[4], "tokens_per_second"), 65536.0 / 1.25));
}

#[test]
fn damaged_event_files_are_read_as_far_as_they_can_be() {
    let wd = Workdir::new("shapes_tfevents_damaged");
    let runs = event_runs(&wd);
    let file = runs.join("tf2/events.out.tfevents.1700000000.host.3.v2");
    let bytes = std::fs::read(&file).unwrap();
    // A run killed mid-write: the last record cut short.
    std::fs::write(&file, &bytes[..bytes.len() - 7]).unwrap();
    let (rows, err) = enrich(&runs.join("tf2"), &H100_RUN_FLAGS);
    assert_eq!(rows.len(), 11, "{err}");
    assert!(
        err.contains("is cut short (a run killed mid-write?): skipped"),
        "{err}"
    );
    // A flipped byte inside a record's data: that record is skipped and counted.
    let mut flipped = bytes.clone();
    flipped[bytes.len() - 20] ^= 0x55;
    std::fs::write(&file, &flipped).unwrap();
    let (rows, err) = enrich(&runs.join("tf2"), &H100_RUN_FLAGS);
    assert_eq!(rows.len(), 11, "{err}");
    assert!(err.contains("1 record(s) with a wrong CRC"), "{err}");
    // A length that fails its CRC: the framing cannot be trusted; an error naming the file and offset.
    let mut broken = bytes.clone();
    broken[3] ^= 0x01;
    std::fs::write(&file, &broken).unwrap();
    let out = wd
        .mfu()
        .arg("enrich")
        .arg(runs.join("tf2"))
        .args(["-o", "-"])
        .args(H100_RUN_FLAGS)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "events.out.tfevents.1700000000.host.3.v2: byte 0: the record's length fails its CRC"
        ),
        "{stderr}"
    );
}

#[test]
fn lightning_rows_of_one_step_are_merged() {
    let file = fixtures().join("shapes/metrics.csv");
    let (rows, _) = enrich(&file, &[&RUN[..], &["--tokens-per-step", "4096"]].concat());
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[1]["val_loss"], "3.0");
    assert_eq!(rows[1]["train_loss_epoch"], "3.05");
    assert_eq!(rows[1]["train_loss_step"], "2.9");
    assert!(close(num(&rows[1], "mfu_wall_clock"), mfu(4096.0, 0.55)));
}

#[test]
fn tensorboard_wall_time_differences_and_restarts() {
    let file = fixtures().join("shapes/run-exp1-tag-loss.csv");
    let (rows, _) = enrich(&file, &[&RUN[..], &["--tokens-per-step", "1000"]].concat());
    assert_eq!(rows[0]["run"], "exp1");
    assert_eq!(rows[0]["loss"], "3.0");
    assert_eq!(num(&rows[0], "tokens_per_second"), None);
    // 10 s over 5 steps; 20 s over 10 steps.
    assert!(close(num(&rows[1], "tokens_per_second"), 1000.0 / 2.0));
    assert!(close(num(&rows[2], "tokens_per_second"), 1000.0 / 2.0));
    // The step drops from 20 to 3 (a restart): a new segment, no interval.
    assert_eq!(num(&rows[3], "tokens_per_second"), None);
    assert!(close(num(&rows[4], "tokens_per_second"), 1000.0 / 2.0));
}

#[test]
fn transformers_tensorboard_folder_with_a_final_evaluation_and_an_hparams_folder() {
    // Made by fixtures/tensorboard/trainers/make_fixtures.py with transformers.Trainer: logging every 2
    // of 8 steps, evaluating every 4, then trainer.evaluate(), whose event file starts at step 8; and the
    // hparams-only folder PyTorch's add_hparams writes beside the run.
    let folder = fixtures().join("tensorboard/trainers/hf");
    let (rows, err) = enrich(&folder, &[&RUN[..], &["--tokens-per-step", "48"]].concat());
    let steps: Vec<&str> = rows.iter().map(|r| r["step"].as_str()).collect();
    assert_eq!(steps, ["2", "4", "6", "8"]);
    // The evaluation file adds its tags at step 8 and keeps the training values there.
    assert!(!rows[3]["train/loss"].is_empty(), "{:?}", rows[3]);
    assert!(!rows[3]["eval/loss"].is_empty() && !rows[3]["train/train_runtime"].is_empty());
    // Step 8's wall time is the training log's, not the final evaluation's.
    for row in &rows[1..] {
        assert!(num(row, "tokens_per_second").is_some(), "{row:?}");
    }
    assert!(
        err.contains(
            "1 TensorBoard folder(s) hold no scalar values (hyperparameters only) and were skipped"
        ),
        "{err}"
    );
    assert!(!err.contains("error"), "{err}");
}

#[test]
fn lightning_hp_metric_placeholder_is_not_a_step() {
    // Lightning's TensorBoardLogger writes hp_metric = -1 at step 0 with the hyperparameters.
    let folder = fixtures().join("tensorboard/trainers/lightning");
    let wd = Workdir::new("shapes_hp_metric");
    let out = wd
        .mfu()
        .arg("enrich")
        .arg(&folder)
        .args(["-o", "-", "-v", "--tokens-per-step", "48"])
        .args(RUN)
        .assert()
        .success()
        .get_output()
        .clone();
    let rows = csv_rows(&String::from_utf8(out.stdout).unwrap());
    let err = String::from_utf8(out.stderr).unwrap();
    let steps: Vec<&str> = rows.iter().map(|r| r["step"].as_str()).collect();
    assert_eq!(steps, ["1", "3", "5"]);
    assert!(!rows[0].contains_key("hp_metric"));
    assert!(err.contains("hp_metric placeholder"), "{err}");
    // The first real step has no interval before it (the placeholder's wall time is not one).
    assert_eq!(num(&rows[0], "tokens_per_second"), None);
}

#[test]
fn tensorboard_tag_files_of_one_run_combine_by_step() {
    let wd = Workdir::new("shapes_tb_tags");
    wd.create(
        "tb/run-exp1-tag-loss.csv",
        "Wall time,Step,Value\n1700000000.0,5,3.0\n1700000010.0,10,2.8\n",
    );
    wd.create(
        "tb/run-exp1-tag-tokens.csv",
        "Wall time,Step,Value\n1700000000.1,5,4000\n1700000010.1,10,4000\n",
    );
    wd.create(
        "tb/run-exp2-tag-loss.csv",
        "Wall time,Step,Value\n1700000000.0,1,9.0\n",
    );
    wd.create(
        "tb/run-exp2-tag-tokens.csv",
        "Wall time,Step,Value\n1700000000.0,1,100\n",
    );
    let out = wd
        .mfu()
        .args(["enrich", "tb", "-o", "-", "-v"])
        .args(RUN)
        .ok_stdout();
    let rows = csv_rows(&String::from_utf8(out).unwrap());
    // exp1's two tags are one input of two rows; exp2 is another.
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[1]["loss"], "2.8");
    assert_eq!(rows[1]["tokens"], "4000.0");
    // 10 s over 5 steps; 4000 tokens per step from the tokens tag.
    assert!(close(num(&rows[1], "tokens_per_second"), 4000.0 / 2.0));
    assert!(
        rows[0]["source_file"].ends_with("run-exp1-tag-loss.csv (+1 tags)"),
        "{:?}",
        rows[0]
    );
}

#[test]
fn megatron_metric_major_json() {
    let file = fixtures().join("shapes/golden_values.json");
    let (rows, _) = enrich(&file, &[&RUN[..], &["--tokens-per-step", "65536"]].concat());
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[0]["iteration-time"], "", "the string nan is null");
    assert_eq!(num(&rows[0], "mfu_wall_clock"), None);
    assert!(close(num(&rows[1], "mfu_wall_clock"), mfu(65536.0, 1.25)));
    assert!(close(num(&rows[3], "mfu_wall_clock"), mfu(65536.0, 1.5)));
}

#[test]
fn modded_nanogpt_console_log() {
    let file = fixtures().join("shapes/modded_nanogpt.txt");
    let (rows, _) = enrich(&file, &[&RUN[..], &["--tokens-per-step", "32768"]].concat());
    assert_eq!(rows.len(), 5);
    // train_time is cumulative ms: step 2 took 589 - 326 ms.
    assert!(close(num(&rows[2], "tokens_per_second"), 32768.0 / 0.263));
    assert!(close(num(&rows[3], "tokens_per_second"), 32768.0 / 0.5));
    assert_eq!(rows[4]["val_loss"], "6.07");
}

#[test]
fn nanogpt_log_with_its_own_mfu_corrected() {
    let file = fixtures().join("shapes/nanogpt.txt");
    let (rows, _) = enrich(
        &file,
        &[
            &RUN[..],
            &[
                "--tokens-per-step",
                "491520",
                "--logged-peak-flops",
                "312e12",
            ],
        ]
        .concat(),
    );
    assert_eq!(rows.len(), 3);
    assert!(close(num(&rows[1], "tokens_per_second"), 491520.0 / 0.15));
    // nanoGPT's 30% was against the A100's 312 TFLOP/s; on an H100 that is 30% x 312 / 989.4.
    assert!(close(
        num(&rows[1], "mfu_logged_corrected"),
        0.30 * 312e12 / H100
    ));
    assert!(close(
        num(&rows[2], "mfu_logged_corrected"),
        0.285 * 312e12 / H100
    ));
}

/// nanoGPT prints its tokens per iteration before training: no flag needed for them.
#[test]
fn nanogpt_tokens_per_iteration_from_its_header() {
    let file = fixtures().join("shapes/nanogpt.txt");
    let (rows, err) = enrich(&file, &[&RUN[..], &["-v"]].concat());
    assert!(
        err.contains("tokens=491520 from 'tokens per iteration will be:' at line 1"),
        "{err}"
    );
    assert!(close(num(&rows[1], "tokens_per_second"), 491520.0 / 0.15));
}

#[test]
fn a_negative_logged_mfu_is_a_placeholder_not_a_value() {
    // nanoGPT prints "mfu -100.00%" until its running estimate warms up (train.py's running_mfu = -1.0).
    let file = fixtures().join("shapes/nanogpt.txt");
    assert!(std::fs::read_to_string(&file)
        .unwrap()
        .contains("mfu -100.00%"));
    let (rows, err) = enrich(
        &file,
        &[
            &RUN[..],
            &[
                "--tokens-per-step",
                "491520",
                "--logged-peak-flops",
                "312e12",
            ],
        ]
        .concat(),
    );
    assert_eq!(rows[0]["mfu_logged_corrected"], "", "{:?}", rows[0]);
    assert!(
        err.contains("1 negative value(s)") && err.contains("read as null"),
        "{err}"
    );
    assert!(!rows[1]["mfu_logged_corrected"].is_empty());
}

#[test]
fn a_token_counter_that_never_moves_is_not_counted() {
    // LLaMA-Factory's trainer_log.jsonl with total_tokens 0 on every line (the trainer did not count
    // tokens): null tokens and MFU, said once, not 0 tokens/s and MFU 0.
    let wd = Workdir::new("shapes_unmoving_tokens");
    let text: String = std::fs::read_to_string(fixtures().join("shapes/trainer_log.jsonl"))
        .unwrap()
        .lines()
        .map(|line| {
            let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
            if v.get("total_tokens").is_some() {
                v["total_tokens"] = 0.into();
                v["throughput"] = 0.0.into();
            }
            format!("{v}\n")
        })
        .collect();
    let path = wd.create("trainer_log.jsonl", &text);
    let (rows, err) = enrich(&path, &RUN);
    assert!(!rows.is_empty());
    for row in &rows {
        assert_eq!(row["mfu_wall_clock"], "", "{row:?}");
        assert_eq!(row["tokens_per_second"], "", "{row:?}");
    }
    assert!(
        err.contains("column 'total_tokens' never moves in 1 run(s)"),
        "{err}"
    );
    // The same log with its real counts keeps them.
    let (rows, err) = enrich(&fixtures().join("shapes/trainer_log.jsonl"), &RUN);
    assert!(!err.contains("never moves"), "{err}");
    assert!(rows.iter().any(|r| !r["mfu_wall_clock"].is_empty()));
}

#[test]
fn text_log_with_a_user_regex() {
    let wd = Workdir::new("shapes_regex");
    wd.create(
        "train.log",
        "boot\nit=1 dt=0.5s tok=1,024\nit=2 dt=0.25s tok=1,024\n",
    );
    let out = wd
        .mfu()
        .args([
            "enrich",
            "train.log",
            "-o",
            "-",
            "--line-regex",
            r"^it=(?P<step>\d+) dt=(?P<step_time>\S+) tok=(?P<tokens>\S+)",
            "--num-devices",
            "1",
            "--flops-per-token",
            "1",
            "-q",
        ])
        .ok_stdout();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("0.5s"), "{text}");
    let tps: Vec<f64> = csv_rows(&text)
        .iter()
        .map(|row| row["tokens_per_second"].parse().unwrap())
        .collect();
    assert_eq!(tps, [2048.0, 4096.0]);
    wd.mfu()
        .args(["enrich", "train.log", "-o", "-", "--shape", "text"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("--shape text needs --line-regex"));
    wd.mfu()
        .args([
            "enrich",
            "train.log",
            "-o",
            "-",
            "--line-regex",
            r"it=(\d+)",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no named group"));
}

#[test]
fn wandb_history_with_metadata() {
    let file = fixtures().join("shapes/wandb_history.csv");
    let meta = fixtures().join("shapes/wandb-metadata.json");
    let (rows, _) = enrich(
        &file,
        &[
            "--metadata",
            meta.to_str().unwrap(),
            "--dtype",
            "bf16",
            "--flops-per-token",
            "1e10",
        ],
    );
    assert_eq!(rows[1]["resolved_device"], "A100 SXM4");
    // _runtime is cumulative: 2 s for step 2, then 5 s over steps 3 and 4. 8 GPUs from gpu_count.
    let a100 = 312e12;
    assert!(close(
        num(&rows[1], "mfu_wall_clock"),
        8192.0 * 1e10 / (8.0 * 2.0) / a100
    ));
    assert!(close(
        num(&rows[2], "mfu_wall_clock"),
        8192.0 * 1e10 / (8.0 * 2.5) / a100
    ));
}

// The real logs.

fn real(name: &str) -> Option<std::path::PathBuf> {
    shared_file(&format!("fixtures-real/{name}"))
}

#[test]
fn real_hf_trainer_state() {
    let Some(file) = real("hf_trainer_state__Jaong_Checkpoint-of-CPT.json") else {
        return;
    };
    let (rows, _) = enrich(&file, &[&RUN[..], &["--tokens-per-step", "6144"]].concat());
    // 31 log_history entries: 10 training rows every 500 steps (the rest eval, predict, summary).
    assert_eq!(rows.len(), 10);
    assert_eq!(rows[0]["step"], "500");
    // Summary: train_runtime 64358.151 s over global step 5490, less the 61258.829 s its evaluation and
    // prediction entries took.
    let step_time = (64358.151 - 61258.829) / 5490.0;
    assert!(close(
        num(&rows[9], "mfu_wall_clock"),
        mfu(6144.0, step_time)
    ));
}

#[test]
fn real_trl_trainer_state_has_tokens_but_no_timing() {
    let Some(file) = real("trl_grpo_trainer_state__Rusheel86_Chaos-Economy.json") else {
        return;
    };
    let wd = Workdir::new("real_trl");
    wd.mfu()
        .arg("enrich")
        .arg(&file)
        .args([
            "-o",
            "-",
            "--device",
            "Tesla T4",
            "--dtype",
            "fp16",
            "--num-devices",
            "1",
            "--flops-per-token",
            "3e9",
        ])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "has no step timing: throughput and MFU are null",
        ));
}

#[test]
fn real_llamafactory_log() {
    let Some(file) =
        real("llamafactory_trainer_log__xueh88401-web_qwen2.5-7b-medical-finetune.jsonl")
    else {
        return;
    };
    let (rows, _) = enrich(&file, &[&RUN[..], &["--tokens-per-step", "8192"]].concat());
    // 689 lines: 675 training lines, 13 eval lines, 1 repeated final step.
    assert_eq!(rows.len(), 675);
    // Steps 10 and 20 at 0:00:32 and 0:01:03: 31 s over 10 steps.
    assert_eq!(rows[1]["current_steps"], "20");
    assert!(close(num(&rows[1], "tokens_per_second"), 8192.0 / 3.1));
}

#[test]
fn real_lightning_metrics_merge_and_report_no_timing() {
    let Some(file) = real("lightning_csvlogger_metrics__0Xero7_slm_training.csv") else {
        return;
    };
    let (rows, err) = enrich(&file, &[&RUN[..], &["--tokens-per-step", "4096"]].concat());
    assert!(err.contains("has no step timing"), "{err}");
    // Every step appears once after merging.
    let mut steps: Vec<&str> = rows.iter().map(|r| r["step"].as_str()).collect();
    let n = steps.len();
    steps.dedup();
    assert_eq!(steps.len(), n);
    assert_eq!(rows[0]["step"], "49");
    assert_eq!(rows[0]["train_loss_step"], "8.620475769042969");
}

#[test]
fn real_megatron_golden_values() {
    let Some(file) = real("megatron_golden_values__gpt3_7b_tp4_pp1_memory_speed_dgx_h100.json")
    else {
        return;
    };
    // 32 layers x 4096 hidden at seq 8192, global batch 8: 65,536 tokens per iteration.
    let (rows, _) = enrich(&file, &[&RUN[..], &["--tokens-per-step", "65536"]].concat());
    assert_eq!(rows.len(), 25);
    assert_eq!(rows[0]["iteration-time"], "");
    let t = num(&rows[1], "iteration-time").unwrap();
    assert!(close(num(&rows[1], "mfu_wall_clock"), mfu(65536.0, t)));
}

#[test]
fn real_modded_nanogpt_log() {
    let Some(file) =
        real("modded_nanogpt_training_log__AkramjitS_gpt-lab-diffusion_Baseline_60m.txt")
    else {
        return;
    };
    // train_seq_len 8192 x grad_acc_steps 4 x 1 GPU.
    let (rows, _) = enrich(&file, &[&RUN[..], &["--tokens-per-step", "32768"]].concat());
    // Steps 1 and 2 at train_time 326 ms and 589 ms.
    let row = rows.iter().find(|r| r["step"] == "2").unwrap();
    assert!(close(num(row, "tokens_per_second"), 32768.0 / 0.263));
    // The log's own nvidia-smi table (line 24: one GeForce RTX 3070) names the device and its count
    // when no flag does.
    let (rows, err) = enrich(
        &file,
        &[
            "--dtype",
            "bf16",
            "--flops-per-token",
            "1e9",
            "--tokens-per-step",
            "32768",
            "-v",
        ],
    );
    assert!(
        err.contains("device_name='NVIDIA GeForce RTX 3070' from the nvidia-smi table at line 24"),
        "{err}"
    );
    assert!(
        err.contains("num_devices=1 from the nvidia-smi table at line 24"),
        "{err}"
    );
    let row = rows.iter().find(|r| r["step"] == "2").unwrap();
    assert_eq!(row["resolved_device"], "GeForce RTX 3070");
}

#[test]
fn real_tensorboard_export() {
    let Some(file) = real("tensorboard_scalar_export__ShahariarRabby_run-.-tag-loss.csv") else {
        return;
    };
    let (rows, _) = enrich(&file, &[&RUN[..], &["--tokens-per-step", "1000"]].concat());
    assert_eq!(rows.len(), 1000);
    assert_eq!(rows[0]["run"], ".");
    // Steps 43 and 46 at Wall time 1575618724.7046697 and 1575618728.6547477.
    let step_time = (1575618728.6547477 - 1575618724.7046697) / 3.0;
    assert!(close(
        num(&rows[1], "tokens_per_second"),
        1000.0 / step_time
    ));
    // Three restarts (the step drops): each starts a segment with no interval.
    let nulls = rows
        .iter()
        .filter(|r| r["tokens_per_second"].is_empty())
        .count();
    assert_eq!(nulls, 4);
}

#[test]
fn real_wandb_metadata_supplies_the_device() {
    let Some(meta) = real("wandb_run_metadata__emgun_universal_simulator_REDACTED.json") else {
        return;
    };
    let file = fixtures().join("shapes/wandb_history.csv");
    let (rows, _) = enrich(
        &file,
        &[
            "--metadata",
            meta.to_str().unwrap(),
            "--dtype",
            "bf16",
            "--flops-per-token",
            "1e10",
        ],
    );
    // "gpu": "NVIDIA A100-SXM4-80GB", "gpu_count": 1.
    assert_eq!(rows[1]["resolved_device"], "A100 SXM4");
    assert!(close(
        num(&rows[1], "mfu_wall_clock"),
        8192.0 * 1e10 / 2.0 / 312e12
    ));
}

#[test]
fn mlflow_file_store_one_run_per_folder() {
    // fixtures/mlflow/mlruns, written by MLflow's own client (fixtures/mlflow/make_fixtures.py).
    let store = fixtures().join("mlflow/mlruns");
    let args = [
        "--device",
        "NVIDIA H100 80GB HBM3",
        "--dtype",
        "bf16",
        "--flops-per-token",
        "1e10",
        // The gpt run logs no device count; the llama run's own (8) is the same.
        "--num-devices",
        "8",
        "--override",
        "-v",
    ];
    let (rows, err) = enrich(&store, &args[..]);
    assert!(err.contains("mlflow log, 5 rows"), "{err}");
    assert!(err.contains("mlflow log, 4 rows"), "{err}");
    assert!(err.contains("4 metric(s) over 1 run(s)"), "{err}");
    let llama: Vec<_> = rows
        .iter()
        .filter(|r| r["run_name"] == "llama-h100")
        .collect();
    let gpt: Vec<_> = rows
        .iter()
        .filter(|r| r["run_name"] == "gpt-a100")
        .collect();
    assert_eq!((llama.len(), gpt.len()), (5, 4));
    // Metric keys as columns, the nested one with its '/', steps in order, the timestamp in seconds.
    assert_eq!(llama[1]["step"], "2");
    assert_eq!(llama[1]["wall_time"], "1760000006.0");
    assert!(close(num(llama[1], "train/loss"), 3.0));
    assert_eq!(llama[0]["run_id"].len(), 32);
    assert_eq!(llama[0]["experiment_id"], gpt[0]["experiment_id"]);
    // The llama run logs its step time: 131072 tokens in 2.92 s at step 2.
    assert!(close(num(llama[1], "tokens_per_second"), 131072.0 / 2.92));
    assert!(close(num(llama[1], "mfu_wall_clock"), mfu(131072.0, 2.92)));
    // The gpt run logs none: metric timestamps 5 s apart give it; the first step has no step before it.
    assert_eq!(num(gpt[0], "tokens_per_second"), None);
    assert!(close(num(gpt[2], "tokens_per_second"), 65536.0 / 5.0));
}

#[test]
fn mlflow_sqlite_store_gives_what_the_file_store_gives() {
    // The same two runs logged by MLflow's client into mlflow.db (the default store since MLflow 3.7).
    let args = [&RUN[..], &["--override", "-v"]].concat();
    let (from_db, err) = enrich(&fixtures().join("mlflow/mlflow.db"), &args);
    let (from_files, _) = enrich(&fixtures().join("mlflow/mlruns"), &args);
    // One input per run, each mapped on its own: the gpt run's step time comes from its timestamps.
    assert!(err.contains("mlflow.db#"), "{err}");
    assert!(
        err.contains("step_time=column 'wall_time' (s, cumulative)"),
        "{err}"
    );
    let by_run =
        |rows: &Vec<HashMap<String, String>>, name: &str| -> Vec<HashMap<String, String>> {
            rows.iter()
                .filter(|r| r["run_name"] == name)
                .cloned()
                .collect()
        };
    for run in ["llama-h100", "gpt-a100"] {
        let (db, files) = (by_run(&from_db, run), by_run(&from_files, run));
        assert_eq!(db.len(), files.len(), "{run}");
        assert!(!db.is_empty());
        for (a, b) in db.iter().zip(&files) {
            for column in [
                "step",
                "wall_time",
                "tokens",
                "tokens_per_second",
                "mfu_wall_clock",
            ] {
                assert_eq!(a[column], b[column], "{run} {column}");
            }
        }
    }
    let gpt = by_run(&from_db, "gpt-a100");
    assert!(close(num(&gpt[2], "tokens_per_second"), 65536.0 / 5.0));
    // The input is never written to: SQLite opened immutable leaves no -wal or -shm beside it.
    let dir = fixtures().join("mlflow");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names
            .iter()
            .any(|n| n.ends_with("-wal") || n.ends_with("-shm")),
        "{names:?}"
    );
}

#[test]
fn mlflow_damaged_metric_lines_are_counted_and_a_run_without_metrics_is_an_error() {
    let wd = Workdir::new("shapes_mlflow_damaged");
    let run = wd.path("mlruns/0/abc");
    std::fs::create_dir_all(run.join("metrics/train")).unwrap();
    wd.create("mlruns/0/meta.yaml", "experiment_id: '0'\nname: Default\n");
    wd.create(
        "mlruns/0/abc/meta.yaml",
        "run_id: abc\nrun_name: tiny\nexperiment_id: '0'\n",
    );
    wd.create(
        "mlruns/0/abc/metrics/train/step_time",
        "1000 2.0 1\ngarbage\n2000 2.0 2\n",
    );
    wd.create("mlruns/0/abc/metrics/tokens", "1000 100 1\n2000 100 2\n");
    let (rows, err) = enrich(&wd.path("mlruns"), &RUN);
    assert_eq!(rows.len(), 2);
    assert!(
        err.contains("1 metric value(s) that are not 'timestamp value step' skipped, the first at metrics/train/step_time line 2"),
        "{err}"
    );
    std::fs::create_dir_all(wd.path("mlruns/0/empty/metrics")).unwrap();
    wd.create("mlruns/0/empty/meta.yaml", "run_id: empty\n");
    wd.mfu()
        .arg("enrich")
        .arg(wd.path("mlruns"))
        .args(["-o", "-"])
        .args(RUN)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "not a valid mlflow log: the run logged no metric values",
        ));
}

#[test]
fn a_folder_walk_reads_console_logs_and_skips_other_text_files() {
    let wd = Workdir::new("shapes_folder_console_logs");
    let megatron = std::fs::read(fixtures().join("shapes/megatron_lm.log")).unwrap();
    wd.create("run/slurm-1234.out", &megatron);
    wd.create("run/requirements.txt", "torch==2.5\nnumpy\n");
    wd.create("run/notes.log", "started the job on Tuesday\n");
    let args = [
        "--device",
        "NVIDIA H100 80GB HBM3",
        "--flops-per-token",
        "1e10",
        "-v",
    ];
    let (rows, err) = enrich(&wd.path("run"), &args);
    assert!(!rows.is_empty());
    assert!(err.contains("slurm-1234.out: megatron-log log"), "{err}");
    assert!(
        err.contains(
            "2 text file(s) in folders matched no console-log preset and were skipped (the first:"
        ),
        "{err}"
    );
    assert!(err.contains("1 of 1 input enriched"), "{err}");
    // A folder of nothing but such files holds no log: an error, not an empty success.
    std::fs::remove_file(wd.path("run/slurm-1234.out")).unwrap();
    wd.mfu()
        .arg("enrich")
        .arg(wd.path("run"))
        .args(["-o", "-"])
        .args(args)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("no input holds a log mfu reads"));
}

/// The W&B fixtures' step time at `step` (fixtures/wandb/make_fixtures.py).
fn wandb_step_time(step: usize) -> f64 {
    0.5 + (step % 7) as f64 * 0.01
}

#[test]
fn wandb_run_folder_with_its_machine_and_config() {
    // wandb 0.31 offline: history from the run-<id>.wandb log, the GPUs from files/wandb-metadata.json,
    // the precision and sequence length from the run's config; wandb's own logs and its latest-run link
    // are not inputs.
    let (rows, err) = enrich(
        &fixtures().join("wandb/current/wandb"),
        &["--flops-per-token", "1e9", "-v"],
    );
    assert!(err.contains("wandb log, 250 rows"), "{err}");
    assert!(err.contains("1 of 1 input enriched"), "{err}");
    assert!(!err.contains("console-log preset"), "{err}");
    for said in [
        "device_name='NVIDIA A100-SXM4-80GB' from files/wandb-metadata.json",
        "num_devices=8 from files/wandb-metadata.json",
        "dtype='bf16' from the run's config key 'dtype'",
        "seq_len=2048 from the run's config key 'seq_len'",
        "step_time=column 'perf/step_time_s' (s)",
    ] {
        assert!(err.contains(said), "{said}: {err}");
    }
    assert_eq!(rows.len(), 250);
    assert_eq!(rows[12]["_step"], "12");
    assert_eq!(rows[12]["train/loss"], "3.88");
    assert_eq!(rows[3]["phase"], "warmup");
    assert_eq!(rows[12]["run_name"], "fixture-current");
    assert_eq!(rows[12]["resolved_device"], "A100 SXM4");
    let mfu = 16384.0 * 1e9 / 8.0 / wandb_step_time(12) / 312e12;
    assert!(close(num(&rows[12], "mfu_wall_clock"), mfu));

    // A flag wins over what the run says, with no --override.
    let (rows, err) = enrich(
        &fixtures().join("wandb/current/wandb"),
        &["--flops-per-token", "1e9", "--num-devices", "16", "-v"],
    );
    assert!(err.contains("num_devices=constant 16"), "{err}");
    assert!(close(num(&rows[12], "mfu_wall_clock"), mfu / 2.0));
}

#[test]
fn wandb_logs_of_both_older_block_layouts() {
    // wandb 0.17.5's Python writer counts 32 KiB blocks from the start of the file; wandb-core before
    // 0.17.6 counted them from the end of the 7-byte header. Both logs cross block boundaries.
    let args = [
        "--device",
        "NVIDIA H100 80GB HBM3",
        "--flops-per-token",
        "1e9",
        "-v",
    ];
    let (python, err) = enrich(&fixtures().join("wandb/legacy-python"), &args);
    assert!(err.contains("wandb log, 250 rows"), "{err}");
    assert!(!err.contains("0.17.6"), "{err}");
    let (core, err) = enrich(&fixtures().join("wandb/legacy-core"), &args);
    assert!(err.contains("wandb log, 250 rows"), "{err}");
    assert!(
        err.contains("blocks counted from the end of the header (wandb-core before 0.17.6)"),
        "{err}"
    );
    assert!(!err.contains("warning"), "{err}");
    for said in [
        "num_devices=4 from the run's config key 'world_size'",
        "dtype='bf16-mixed' from the run's config key 'precision'",
    ] {
        assert!(err.contains(said), "{said}: {err}");
    }
    for (i, (p, c)) in python.iter().zip(&core).enumerate() {
        for column in ["_step", "train/loss", "perf/step_time_s", "tokens", "phase"] {
            assert_eq!(p[column], c[column], "row {i} {column}");
        }
        assert!(close(num(c, "perf/step_time_s"), wandb_step_time(i)));
    }
    let mfu = 16384.0 * 1e9 / 4.0 / wandb_step_time(100) / 989.4e12;
    assert!(close(num(&core[100], "mfu_wall_clock"), mfu));
}

#[test]
fn wandb_run_read_from_its_log_or_folder_and_a_damaged_log() {
    let folder = std::fs::read_dir(fixtures().join("wandb/current/wandb"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir() && !p.is_symlink())
        .unwrap();
    let log = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "wandb"))
        .unwrap();
    let args = ["--flops-per-token", "1e9"];
    let (from_log, _) = enrich(&log, &args);
    let (from_folder, _) = enrich(&folder, &args);
    assert_eq!(from_log.len(), 250);
    assert_eq!(
        from_log[7]["mfu_wall_clock"],
        from_folder[7]["mfu_wall_clock"]
    );
    // A killed run: the log cut in the middle of a record keeps the records before it, with a warning.
    let wd = Workdir::new("wandb_cut");
    let bytes = std::fs::read(&log).unwrap();
    let run = wd.path("run-cut");
    std::fs::create_dir_all(run.join("files")).unwrap();
    std::fs::write(run.join("run-cut.wandb"), &bytes[..bytes.len() / 2]).unwrap();
    std::fs::copy(
        folder.join("files/wandb-metadata.json"),
        run.join("files/wandb-metadata.json"),
    )
    .unwrap();
    let out = wd
        .mfu()
        .args([
            "enrich",
            "run-cut",
            "-o",
            "cut.csv",
            "--flops-per-token",
            "1e9",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("cut short"), "{err}");
    let rows = csv_rows(&std::fs::read_to_string(wd.path("cut.csv")).unwrap());
    assert!(rows.len() > 50 && rows.len() < 250, "{}", rows.len());
}

#[test]
fn torchtitan_console_log_times_steps_from_tps_and_its_batch_line() {
    // tps is tokens per second per device; the start line gives local batch 1, global batch 8 and
    // sequence length 8192, so a step is 8 x 8192 tokens in 1 x 8192 / tps seconds. The validation line
    // is not a step; the device comes from the log's CUDA capacity line.
    let file = fixtures().join("shapes/torchtitan.log");
    let (rows, err) = enrich(
        &file,
        &[
            "--num-devices",
            "8",
            "--dtype",
            "bf16",
            "--flops-per-token",
            "5.9e10",
            "-v",
        ],
    );
    assert!(err.contains("torchtitan log, 3 rows"), "{err}");
    assert!(
        err.contains("device_name='NVIDIA H100 80GB HBM3' from 'cuda_capacity' at line 4"),
        "{err}"
    );
    assert!(err.contains("1 evaluation"), "{err}");
    let steps: Vec<_> = rows.iter().map(|r| r["step"].clone()).collect();
    assert_eq!(steps, ["1", "10", "20"]);
    assert_eq!(rows[1]["loss"], "9.87654");
    // The log's own MFU, as printed (a percentage: its column says so).
    assert_eq!(rows[1]["mfu (%)"], "40.47");
    assert!(close(num(&rows[1], "step_time_s"), 8192.0 / 6912.0));
    // Per device: tps x FLOPs per token over the H100's dense bf16 peak.
    assert!(close(
        num(&rows[1], "mfu_wall_clock"),
        6912.0 * 5.9e10 / 989.4e12
    ));
}

#[test]
fn mlflow_parameters_named_like_fields_are_facts_of_their_run() {
    // The llama run logged params device and dtype (fixtures/mlflow/make_fixtures.py); the gpt run
    // logged none, so its MFU stays null. Both stores say the same.
    for store in ["mlflow/mlflow.db", "mlflow/mlruns"] {
        let (rows, err) = enrich(
            &fixtures().join(store),
            &[
                "--flops-per-token",
                "1e10",
                "--num-devices",
                "8",
                "--override",
                "-v",
            ],
        );
        assert!(
            err.contains("device_name='NVIDIA H100 80GB HBM3' from the run's parameter 'device'"),
            "{store}: {err}"
        );
        assert!(
            err.contains("dtype='bf16' from the run's parameter 'dtype'"),
            "{store}: {err}"
        );
        for row in &rows {
            let known = row["run_name"] == "llama-h100";
            assert_eq!(
                !row["peak_flops_per_device"].is_empty(),
                known,
                "{store}: {row:?}"
            );
        }
    }
}

#[test]
fn mlflow_tags_and_namespaced_parameters_are_facts_too() {
    // The gpt run of fixtures/mlflow/mlruns, given what a trainer writes where MLflow holds text: the
    // device name as a tag under a namespace (tags/perf/device_name) and the precision as a parameter
    // under one (params/perf/dtype). MLflow's own mlflow.* tags are not facts.
    let wd = Workdir::new("mlflow_tags");
    let store = wd.path("mlruns");
    let src = fixtures().join("mlflow/mlruns");
    for entry in walkdir(&src) {
        let to = store.join(entry.strip_prefix(&src).unwrap());
        if entry.is_dir() {
            std::fs::create_dir_all(&to).unwrap();
        } else {
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(&entry, &to).unwrap();
        }
    }
    let run = store.join("641426647988408432/5a442158620048feb549e16e6c2c9fc1");
    std::fs::create_dir_all(run.join("tags/perf")).unwrap();
    std::fs::write(run.join("tags/perf/device_name"), "NVIDIA H100 80GB HBM3").unwrap();
    std::fs::create_dir_all(run.join("params/perf")).unwrap();
    std::fs::write(run.join("params/perf/dtype"), "bf16").unwrap();
    let (rows, err) = enrich(
        &store,
        &[
            "--flops-per-token",
            "1e10",
            "--num-devices",
            "8",
            "--override",
            "-v",
        ],
    );
    assert!(
        err.contains("from the run's tag 'perf/device_name' (tags/perf/device_name)"),
        "{err}"
    );
    assert!(
        err.contains("from the run's parameter 'perf/dtype'"),
        "{err}"
    );
    assert!(
        rows.iter().all(|r| !r["peak_flops_per_device"].is_empty()),
        "{rows:?}"
    );
}

/// Every path under `dir`, folders before what they hold.
fn walkdir(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            out.push(path.clone());
            if path.is_dir() {
                stack.push(path);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn hf_checkpoint_folder_config_gives_flops_per_token_and_precision() {
    // An HF checkpoint folder: trainer_state.json beside the model's config.json. With the sequence
    // length known, FLOPs per token are counted from the config as `mfu flops` counts them; torch_dtype
    // is the precision unless a flag says otherwise.
    let wd = Workdir::new("hf_checkpoint_config");
    let folder = wd.path("checkpoint-30");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(
        fixtures().join("shapes/trainer_state.json"),
        folder.join("trainer_state.json"),
    )
    .unwrap();
    std::fs::copy(
        fixtures().join("configs/llama-2-7b.json"),
        folder.join("config.json"),
    )
    .unwrap();
    let args = [
        "--device",
        "NVIDIA H100 80GB HBM3",
        "--num-devices",
        "8",
        "--seq-len",
        "4096",
        "-v",
    ];
    let (rows, err) = enrich(&folder.join("trainer_state.json"), &args);
    assert!(
        err.contains("flops_per_token=counted from the model config"),
        "{err}"
    );
    assert!(err.contains("config.json (torch_dtype)"), "{err}");
    assert!(err.contains("beside the trainer state"), "{err}");
    // 46084915200 FLOPs per token (mfu flops, llama-2-7b at 4096) at the fp16 dense peak.
    let tokens_per_second = num(&rows[1], "tokens_per_second").unwrap();
    assert!(close(
        num(&rows[1], "mfu_wall_clock"),
        tokens_per_second * 46084915200.0 / 8.0 / 989.4e12
    ));
    // Without the sequence length the config counts no FLOPs per token: throughput is filled, MFU is
    // null, and the warning says what to give.
    let out = wd
        .mfu()
        .arg("enrich")
        .arg(folder.join("trainer_state.json"))
        .args([
            "-o",
            "-",
            "--device",
            "NVIDIA H100 80GB HBM3",
            "--num-devices",
            "8",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no FLOPs per token"), "{err}");
    let rows = csv_rows(&String::from_utf8(out.stdout).unwrap());
    assert!(num(&rows[1], "tokens_per_second").is_some());
    assert_eq!(rows[1]["mfu_wall_clock"], "");
}

#[test]
fn dvclive_run_folders_with_their_parameters() {
    // fixtures/dvclive/make_fixtures.py: DVCLive's own client. `timed` logs step_time_s; `stamped` logs
    // timestamps only, whose differences give the step time. Both have dtype and num_devices params.
    let (rows, err) = enrich(
        &fixtures().join("dvclive"),
        &[
            "--device",
            "NVIDIA H100 80GB HBM3",
            "--flops-per-token",
            "1e9",
            "-v",
        ],
    );
    assert!(err.contains("2 of 2 inputs enriched"), "{err}");
    assert!(
        err.contains("num_devices=8 from the run's parameter 'num_devices' (params.yaml)"),
        "{err}"
    );
    assert!(
        err.contains("step_time=column 'wall_time' (s, cumulative)"),
        "{err}"
    );
    let timed: Vec<_> = rows
        .iter()
        .filter(|r| r["run_id"] == "timed/dvclive")
        .collect();
    let stamped: Vec<_> = rows
        .iter()
        .filter(|r| r["run_id"] == "stamped/dvclive")
        .collect();
    assert_eq!((timed.len(), stamped.len()), (6, 6));
    assert_eq!(timed[2]["train/loss"], "2.8");
    let mfu = 16384.0 * 1e9 / 8.0 / 0.52 / 989.4e12;
    assert!(close(num(timed[2], "mfu_wall_clock"), mfu));
    let dt = num(stamped[3], "wall_time").unwrap() - num(stamped[2], "wall_time").unwrap();
    assert!(close(num(stamped[3], "tokens_per_second"), 16384.0 / dt));
    assert_eq!(stamped[0]["tokens_per_second"], "");
}

#[test]
fn real_trainer_state_run_mean_leaves_out_its_evaluations() {
    // A Seq2Seq fine-tune (../shared/fixtures-real, its .source.txt says where from) whose generation
    // evaluations and prediction take 61,259 s of its 64,358 s train_runtime: the run-mean step time is
    // what is left over 5,490 steps, not the whole runtime (which made MFU 20x too low).
    let Some(file) = shared_file("fixtures-real/hf_trainer_state__Jaong_Checkpoint-of-CPT.json")
    else {
        return;
    };
    let history: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let entries = history["log_history"].as_array().unwrap();
    let not_training: f64 = entries
        .iter()
        .map(|e| {
            e.get("eval_runtime")
                .and_then(|v| v.as_f64())
                .unwrap_or(0.0)
                + e.get("predict_runtime")
                    .and_then(|v| v.as_f64())
                    .unwrap_or(0.0)
        })
        .sum();
    let (rows, err) = enrich(
        &file,
        &[&RUN[..], &["--tokens-per-step", "1000", "-v"]].concat(),
    );
    let want = (64358.151 - not_training) / 5490.0;
    assert!(
        err.contains("less 61258.829 s in the log's 20 evaluation and prediction entries"),
        "{err}"
    );
    for row in &rows {
        assert!(close(num(row, "run_mean_step_time_s"), want), "{row:?}");
        assert!(
            close(num(row, "tokens_per_second"), 1000.0 / want),
            "{row:?}"
        );
    }
}

/// A W&B run folder holding only the files/ an online run writes (no transaction log): one row from its
/// summary, the run-mean step time over Transformers' train/global_step, the GPUs from its metadata.
#[test]
fn wandb_run_folder_of_files_only() {
    let folder = fixtures().join("wandb/files-only");
    let args = [
        "--dtype",
        "bf16",
        "--tokens-per-step",
        "65536",
        "--flops-per-token",
        "1e10",
        "-v",
    ];
    let (rows, err) = enrich(&folder, &args);
    assert_eq!(rows.len(), 1, "{err}");
    assert!(err.contains("no transaction log, so one row from files/wandb-summary.json: its step time is the run's mean"), "{err}");
    assert!(err.contains("_runtime / train/global_step"), "{err}");
    assert!(
        err.contains("num_devices=8 from files/wandb-metadata.json"),
        "{err}"
    );
    let row = &rows[0];
    assert_eq!(row["run_id"], "5k2v9q1x");
    assert_eq!(row["resolved_device"], "H100 SXM5");
    // make_fixtures.py: 12.5 s of start-up, then 250 steps of 0.5 + (step % 7) x 0.01 s.
    let runtime = 12.5 + (0..250).map(wandb_step_time).sum::<f64>();
    let mean = runtime / 250.0;
    assert!(close(num(row, "run_mean_step_time_s"), mean));
    assert!(close(
        num(row, "mfu_wall_clock"),
        65536.0 * 1e10 / (8.0 * mean) / H100
    ));
    // The summary file itself, given as the input, reads the same.
    let summary = folder.join("wandb/run-20261205_101500-5k2v9q1x/files/wandb-summary.json");
    let (again, _) = enrich(&summary, &args);
    assert_eq!(again, rows);
}

/// A LLaMA-Factory log of its final row only: its running totals count from step 0, so the row is the
/// whole run's mean, and its tokens per second equal the trainer's own throughput.
#[test]
fn llamafactory_log_of_one_final_row() {
    let file = fixtures().join("shapes/trainer_log_final_row.jsonl");
    let (rows, err) = enrich(&file, &RUN);
    assert_eq!(rows.len(), 1);
    assert!(
        err.contains("a running total with a single row in 1 run(s)"),
        "{err}"
    );
    let row = &rows[0];
    // 491,520 tokens and 20 minutes over 120 steps.
    assert!(close(num(row, "tokens_per_second"), 409.6));
    assert!(close(num(row, "mfu_wall_clock"), mfu(4096.0, 10.0)));
}

/// A real OLMo console log (fixtures/olmo/SOURCE.md): multi-line records, the step time from one rank's
/// batches per second, the tokens from the running total, the device count from the two together.
#[test]
fn olmo_console_log() {
    let file = fixtures().join("olmo/olmo-1b.log");
    let (rows, err) = enrich(
        &file,
        &[
            "--device",
            "NVIDIA H100 80GB HBM3",
            "--dtype",
            "bf16",
            "--flops-per-token",
            "7.5e9",
            "-v",
        ],
    );
    assert!(err.contains("olmo log, 10 rows"), "{err}");
    assert!(err.contains("num_devices=8 from the log's tokens"), "{err}");
    assert_eq!(rows[1]["throughput/total_tokens"], "8388608");
    // The first record has no rate (OLMo times from the second batch) and no interval.
    assert_eq!(rows[0]["mfu_wall_clock"], "");
    // Step 2: 4,194,304 tokens (the running total's step), 1 / 0.0867 s.
    let time = 1.0 / 0.0867;
    assert!(close(num(&rows[1], "step_time_s"), time));
    assert!(close(
        num(&rows[1], "tokens_per_second"),
        4_194_304.0 / time
    ));
    let mfu = 4_194_304.0 * 7.5e9 / (8.0 * time) / H100;
    assert!(close(num(&rows[1], "mfu_wall_clock"), mfu));
    // The header's timestamp, in seconds: 09:47:21 - 09:47:10.
    assert!(close(
        Some(num(&rows[1], "wall_time").unwrap() - num(&rows[0], "wall_time").unwrap()),
        11.0
    ));
}

/// A --line-regex group that captures a timestamp is read in seconds, so its differences are the step
/// time.
#[test]
fn line_regex_wall_time_from_a_timestamp() {
    let wd = Workdir::new("shapes_timestamps");
    let log = wd.create(
        "train.log",
        "2025-10-24 09:52:15,120 INFO it=10 tok=65536\n2025-10-24 09:52:17,620 INFO it=11 tok=65536\n2025-10-24T09:52:20.120Z INFO it=12 tok=65536\n",
    );
    let (rows, _) = enrich(
        &log,
        &[
            &RUN[..],
            &[
                "--line-regex",
                r"^(?P<wall_time>\S+(?: \S+)?) INFO it=(?P<step>\d+) tok=(?P<tokens>\d+)",
            ],
        ]
        .concat(),
    );
    assert_eq!(rows.len(), 3);
    assert!(close(num(&rows[1], "tokens_per_second"), 65536.0 / 2.5));
    assert!(close(num(&rows[2], "mfu_wall_clock"), mfu(65536.0, 2.5)));
}

/// A run whose bytes are mostly images and histograms (tensorboardX, fixtures/tensorboard/media): only its
/// scalars become columns, every step of them, and the images and histograms are skipped unread.
#[test]
fn event_files_of_images_and_histograms_give_their_scalars_only() {
    let media = crate::util::fixtures().join("tensorboard/media");
    let (rows, err) = enrich(&media, &[&H100_RUN_FLAGS[..], &["-v"]].concat());
    assert!(
        err.contains("1 event file(s), 30 step(s), 2 scalar tag(s)"),
        "{err}"
    );
    assert_eq!(rows.len(), 30);
    for (k, row) in rows.iter().enumerate() {
        let step = k as f64 + 1.0;
        assert_eq!(row["step"], format!("{}", k + 1));
        // tensorboardX stores 3.0 - 0.05 x step (a Python float) as a 32-bit float.
        assert!(close(
            num(row, "train/loss"),
            (3.0 - 0.05 * step) as f32 as f64
        ));
        assert!(!row.contains_key("samples") && !row.contains_key("weights"));
        assert!(!row.contains_key("note"));
    }
    assert!(!err.contains("not events skipped"), "{err}");
}
