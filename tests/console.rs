//! The general console reader on real public training logs (tests/data/logs: an excerpt of each, its
//! SOURCE.md naming repository, path and commit, and the figures worked out by hand in its expect.json).
//! `corpus.csv` lists each log with only the flags its log cannot know (`_` stands for a space in a
//! value), the row whose figures were worked out (`check`: `column=value`, several joined by `;`, and
//! `#n` for the n-th such row; `no-steps` for a log that trained no step), and the figures: an empty one
//! must come out empty (no peak is known for the run's device and precision, no samples counted), `-`
//! is not checked.

use crate::util::{csv_rows, enrich_ok, number, Workdir};

/// Eight H100s in bf16 at 1e9 FLOPs a token: the facts a generated log does not print.
const H100_FLAGS: [&str; 8] = [
    "--device",
    "NVIDIA H100 80GB HBM3",
    "--dtype",
    "bf16",
    "--num-devices",
    "8",
    "--flops-per-token",
    "1e9",
];

fn logs() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/logs")
}

/// The row a check names: `step=100`, `epoch=2;iter=500`, `batch=100#2` (its second such row).
fn checked_row<'r>(
    rows: &'r [std::collections::HashMap<String, String>],
    check: &str,
) -> Option<&'r std::collections::HashMap<String, String>> {
    let (conditions, nth) = match check.rsplit_once('#') {
        Some((c, n)) if !c.is_empty() => (c, n.parse::<usize>().ok()?),
        _ => (check, 1),
    };
    let conditions: Vec<(&str, f64)> = conditions
        .split(';')
        .map(|c| {
            let (k, v) = c.split_once('=').expect("column=value");
            (k, v.parse().expect("a number"))
        })
        .collect();
    rows.iter()
        .filter(|r| {
            conditions
                .iter()
                .all(|(k, v)| r.get(*k).and_then(|x| x.parse::<f64>().ok()) == Some(*v))
        })
        .nth(nth - 1)
}

#[test]
fn real_logs_read_to_their_hand_worked_mfu() {
    let table = std::fs::read_to_string(logs().join("corpus.csv")).unwrap();
    let wd = Workdir::new("console_corpus");
    let mut frameworks = std::collections::BTreeSet::new();
    let mut cases = 0;
    let mut not_language_model = 0;
    let mut failures = Vec::new();
    // Each log's checked row and flags, for the traps below.
    let mut checked = std::collections::HashMap::new();
    for case in csv_rows(&table) {
        let log = logs().join(format!("{}.log", case["log"]));
        let expect: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(logs().join(format!("{}.expect.json", case["log"]))).unwrap(),
        )
        .unwrap();
        assert!(logs().join(format!("{}.SOURCE.md", case["log"])).exists());
        assert!(
            std::fs::metadata(&log).unwrap().len() <= 200 * 1024,
            "{}: an excerpt is at most 200 KB",
            case["log"]
        );
        let flags: Vec<String> = case["flags"]
            .split_whitespace()
            .map(|f| f.replace('_', " "))
            .collect();
        let out = wd
            .mfu()
            .arg("enrich")
            .arg(&log)
            .args(["-o", "-", "--quiet"])
            .args(&flags)
            .output()
            .unwrap();
        frameworks.insert(case["framework"].clone());
        not_language_model +=
            usize::from(!["lm-pretraining", "lm-finetuning"].contains(&case["area"].as_str()));
        cases += 1;
        let err = String::from_utf8_lossy(&out.stderr);
        if case["check"] == "no-steps" {
            // A log that trained no step says so, asking for no flag.
            if out.status.success() || !err.contains("no training steps found in") {
                failures.push(format!("{}: no steps expected: {err}", case["log"]));
            }
            continue;
        }
        if !out.status.success() {
            failures.push(format!("{}: {err}", case["log"]));
            continue;
        }
        let rows = csv_rows(&String::from_utf8(out.stdout).unwrap());
        let Some(row) = checked_row(&rows, &case["check"]) else {
            failures.push(format!("{}: no row for {}", case["log"], case["check"]));
            continue;
        };
        checked.insert(
            case["log"].clone(),
            (case.clone(), flags.clone(), row.clone()),
        );
        let tolerance: f64 = case["tolerance"].parse().unwrap();
        for (column, want) in [
            ("mfu_wall_clock", &case["expected_mfu"]),
            ("tokens_per_second", &case["expected_tokens_per_second"]),
            ("samples_per_second", &case["expected_samples_per_second"]),
        ] {
            if want == "-" {
                continue;
            }
            let got: Option<f64> = row.get(column).and_then(|v| v.parse().ok());
            // An empty figure: no peak is known for the run's device and precision (no device
            // anywhere in the log, a CPU, bf16 on a V100), or the log counts no samples, so the
            // figure must be empty, never guessed.
            let Ok(want) = want.parse::<f64>() else {
                if got.is_some() {
                    failures.push(format!("{}: {column} {got:?}, expected empty", case["log"]));
                }
                continue;
            };
            if !got.is_some_and(|g| ((g - want) / want).abs() <= tolerance) {
                failures.push(format!(
                    "{}: {column} {got:?}, worked out {want}",
                    case["log"]
                ));
            }
        }
        // The table's figures are the ones worked out by hand in the log's expect.json.
        for (key, column) in [
            ("mfu", "expected_mfu"),
            ("tokens_per_second", "expected_tokens_per_second"),
            ("samples_per_second", "expected_samples_per_second"),
        ] {
            if case[column] == "-" {
                continue;
            }
            let hand = expect[key].as_f64();
            let listed = case[column].parse::<f64>().ok();
            let agree = match (hand, listed) {
                (Some(h), Some(l)) => ((h - l) / h).abs() < 1e-3,
                (None, None) => true,
                _ => false,
            };
            assert!(agree, "{} {key}: {hand:?} vs {listed:?}", case["log"]);
        }
    }
    traps(&wd, &checked, &mut failures);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The bar: at least 60 real logs from at least 30 frameworks or hand-written trainers,
    // at least 15 of them not language models' (vision, speech, diffusion, RL post-training,
    // self-supervised, seq2seq).
    assert!(cases >= 60, "{cases} logs");
    assert!(frameworks.len() >= 30, "{frameworks:?}");
    assert!(not_language_model >= 15, "{not_language_model}");
}

type Checked = std::collections::HashMap<
    String,
    (
        std::collections::HashMap<String, String>,
        Vec<String>,
        std::collections::HashMap<String, String>,
    ),
>;

/// `traps.csv`: for each trap class of a naive reading (a running or window mean taken as the step
/// time, a rate or count of one device taken as the run's, a running total or a rate read as a step
/// time, a step's own figure where its running mean is printed beside it, the facts of another launch,
/// an interval of several steps taken as one, a percentage read as a fraction), at least 3 corpus logs
/// where that reading is wrong, with the naive figure and the right one. The right figure is what mfu's
/// output at the log's checked row implies: proportional to it (`same`), inversely (`inverse`, a time
/// against a rate), the checked row's step (`step`), or the log's own MFU as `mfu audit --per-row`
/// reads it at that step (`audit`). The naive figure must be more than 3% off the right one, and the
/// implied figure within 3% of it.
fn traps(wd: &Workdir, checked: &Checked, failures: &mut Vec<String>) {
    let table = std::fs::read_to_string(logs().join("traps.csv")).unwrap();
    let mut classes: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
        Default::default();
    for trap in csv_rows(&table) {
        let log = &trap["log"];
        let (case, flags, row) = checked
            .get(log)
            .unwrap_or_else(|| panic!("{log}: a trap's log is a corpus log with a checked row"));
        let naive: f64 = trap["naive"].parse().unwrap();
        let right: f64 = trap["right"].parse().unwrap();
        let off = |a: f64, b: f64| ((a - b) / b).abs();
        assert!(
            off(naive, right) > 0.03,
            "{log} {}: the naive figure is the right one",
            trap["trap"]
        );
        let output = trap["output"].as_str();
        let implied = match trap["relation"].as_str() {
            relation @ ("same" | "inverse") => {
                let column = match output {
                    "mfu_wall_clock" => "expected_mfu",
                    "tokens_per_second" => "expected_tokens_per_second",
                    "samples_per_second" => "expected_samples_per_second",
                    other => panic!("{log}: no corpus figure for {other}"),
                };
                let want: f64 = case[column].parse().unwrap_or_else(|_| {
                    panic!("{log}: the corpus checks no {output} for this trap")
                });
                let got: Option<f64> = row.get(output).and_then(|v| v.parse().ok());
                got.map(|g| {
                    if relation == "same" {
                        right * g / want
                    } else {
                        right * want / g
                    }
                })
            }
            "step" => row.get("step").and_then(|v| v.parse().ok()),
            "audit" => {
                let (column, value) = case["check"].split_once('=').unwrap();
                let value: f64 = value.parse().unwrap();
                let out = wd
                    .mfu()
                    .arg("audit")
                    .arg(logs().join(format!("{log}.log")))
                    .args(["--per-row", "--format", "csv", "--quiet"])
                    .args(flags)
                    .output()
                    .unwrap();
                let rows = csv_rows(&String::from_utf8_lossy(&out.stdout));
                rows.iter()
                    .find(|r| r.get(column).and_then(|v| v.parse::<f64>().ok()) == Some(value))
                    .and_then(|r| r.get(output))
                    .and_then(|v| v.parse().ok())
            }
            other => panic!("{log}: unknown relation {other}"),
        };
        match implied {
            Some(i) if off(i, right) <= 0.03 => {}
            _ => failures.push(format!(
                "{log} {}: mfu's output implies {implied:?}, the right figure is {right} (naive {naive})",
                trap["trap"]
            )),
        }
        classes
            .entry(trap["trap"].clone())
            .or_default()
            .insert(log.clone());
    }
    for class in [
        "clock-mean",
        "scope",
        "clock-cumulative",
        "running-mean-value",
        "launch-facts",
        "interval",
        "percent",
    ] {
        let logs = classes.get(class).map_or(0, |l| l.len());
        assert!(logs >= 3, "{class}: {logs} real logs, at least 3 wanted");
    }
}

#[test]
fn a_log_that_lacks_one_fact_asks_for_exactly_that_flag() {
    let wd = Workdir::new("console_asks");
    let out = wd
        .mfu()
        .arg("enrich")
        .arg(logs().join("torchtitan__qiu023-rtx5090-llama3-150m.log"))
        .args(["-o", "-", "--dtype", "bf16"])
        .output()
        .unwrap();
    // The log gives the device, its count, the batch and the step time: only the FLOPs a token lack.
    // Throughput is filled without them; MFU is null and the warning names the flag.
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no FLOPs per token: MFU is null, throughput is filled"),
        "{err}"
    );
    assert!(err.contains("give it with --flops-per-token"), "{err}");
    assert!(!err.contains("--num-devices"), "{err}");
    let rows = csv_rows(&String::from_utf8(out.stdout).unwrap());
    let row = rows.iter().find(|r| r["step"] == "100").unwrap();
    assert!(
        (number(row, "tokens_per_second") - 70848.0).abs() < 1.0,
        "{row:?}"
    );
    assert_eq!(row["mfu_wall_clock"], "");
}

#[test]
fn a_logged_mfu_above_one_is_flagged_not_passed_on_quietly() {
    // A torchtitan run has logged 15,277% MFU (a FLOPs count or a peak gone wrong by far).
    let wd = Workdir::new("console_logged_above_one");
    let log = wd.create(
        "train.log",
        "[titan] 2025-05-01 10:00:00,000 - root - INFO - Training starts at step 1, with local batch size 2, global batch size 16, sequence length 1024\n\
         [titan] 2025-05-01 10:00:01,000 - root - INFO - step:  1  loss: 10.9  memory: 10.00GiB(12.00%)  tps: 3,000  mfu: 15,277.00%\n\
         [titan] 2025-05-01 10:00:02,000 - root - INFO - step:  2  loss: 10.1  memory: 10.00GiB(12.00%)  tps: 3,100  mfu: 12.50%\n\
         [titan] 2025-05-01 10:00:03,000 - root - INFO - step:  3  loss: 9.80  memory: 10.00GiB(12.00%)  tps: 3,050  mfu: 13.00%\n",
    );
    let out = wd
        .mfu()
        .arg("enrich")
        .arg(&log)
        .args([
            "-o",
            "-",
            "--device",
            "NVIDIA H100 80GB HBM3",
            "--dtype",
            "bf16",
        ])
        .args(["--num-devices", "8", "--flops-per-token", "1e9"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("1 rows have a logged MFU above 1 (up to 152.7700, 15277%)"),
        "{err}"
    );
    // The value itself reaches the output unchanged.
    let rows = csv_rows(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(rows[0]["mfu (%)"], "15277.0");
}

#[test]
fn a_log_larger_than_its_detected_head_streams_to_what_it_reads_whole() {
    // Past 16 MiB a console log on disk is read as it streams; compressed, it is read whole once
    // decompressed. The two give one output, byte for byte.
    let wd = Workdir::new("console_streamed");
    let mut log = String::from(
        "[titan] 2025-05-01 10:00:00,000 - root - INFO - Training starts at step 1, with local batch size 2, global batch size 16, sequence length 1024\n",
    );
    let mut step = 0u32;
    while log.len() < 17 << 20 {
        step += 1;
        log.push_str(&format!(
            "[rank0]:[titan] 2025-05-01 10:{:02}:{:02},{:03} - root - INFO - \u{1b}[31mstep: {step:>5}  \u{1b}[32mloss: {:7.4}  memory: {:5.2}GiB({:5.2}%)  tps: {}  mfu: {:5.2}%\u{1b}[39m\n",
            step / 60 % 60,
            step % 60,
            step % 1000,
            2.0 + f64::from(step % 997) / 1000.0,
            35.0 + f64::from(step % 7) / 100.0,
            44.0 + f64::from(step % 3) / 10.0,
            6900 + step % 50 * 1000,
            30.0 + f64::from(step % 11) / 100.0,
        ));
    }
    let path = wd.create("big.log", &log);
    let streamed = wd
        .mfu()
        .arg("enrich")
        .arg(&path)
        .args(["-o", "-"])
        .args(H100_FLAGS)
        .output()
        .unwrap();
    assert!(
        streamed.status.success(),
        "{}",
        String::from_utf8_lossy(&streamed.stderr)
    );
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, log.as_bytes()).unwrap();
    let gz_path = wd.create("big.log.gz", gz.finish().unwrap());
    let whole = wd
        .mfu()
        .arg("enrich")
        .arg(&gz_path)
        .args(["-o", "-"])
        .args(H100_FLAGS)
        .output()
        .unwrap();
    assert!(
        whole.status.success(),
        "{}",
        String::from_utf8_lossy(&whole.stderr)
    );
    assert_eq!(streamed.stdout, whole.stdout);
    let rows = csv_rows(&String::from_utf8(streamed.stdout).unwrap());
    assert_eq!(rows.len(), step as usize);
    assert_eq!(rows[rows.len() - 1]["step"], step.to_string());
}

#[test]
fn a_console_log_on_standard_input_reads_with_its_shape_named() {
    // A log piped in (`kubectl logs POD | mfu enrich - --shape console`) reads as the file does.
    let wd = Workdir::new("console_stdin");
    let log = logs().join("torchtitan__qiu023-rtx5090-llama3-150m.log");
    let flags = ["--flops-per-token", "1270480896", "--dtype", "bf16"];
    let from_file = wd
        .mfu()
        .arg("enrich")
        .arg(&log)
        .args(["-o", "-"])
        .args(flags)
        .output()
        .unwrap();
    assert!(from_file.status.success());
    let piped = wd
        .mfu()
        .args(["enrich", "-", "-o", "-", "--shape", "console"])
        .args(flags)
        .write_stdin(std::fs::read(&log).unwrap())
        .output()
        .unwrap();
    assert!(
        piped.status.success(),
        "{}",
        String::from_utf8_lossy(&piped.stderr)
    );
    assert_eq!(piped.stdout, from_file.stdout);
    // Compressed, it streams through the decompressor.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &std::fs::read(&log).unwrap()).unwrap();
    let piped_gz = wd
        .mfu()
        .args(["enrich", "-", "-o", "-", "--shape", "console"])
        .args(flags)
        .write_stdin(gz.finish().unwrap())
        .output()
        .unwrap();
    assert!(
        piped_gz.status.success(),
        "{}",
        String::from_utf8_lossy(&piped_gz.stderr)
    );
    assert_eq!(piped_gz.stdout, from_file.stdout);
    // Without a shape, standard input says what it needs.
    let unnamed = wd
        .mfu()
        .args(["enrich", "-", "-o", "-"])
        .write_stdin("step: 1 loss: 2\n")
        .output()
        .unwrap();
    assert!(!unnamed.status.success());
    let err = String::from_utf8_lossy(&unnamed.stderr);
    assert!(err.contains("--shape console"), "{err}");
}

/// `mfu enrich LOG -o - -v ARGS` on a log of tests/data/logs, which must succeed: its rows and what it
/// said.
fn enrich_verbose(
    log: &str,
    args: &[&str],
) -> (Vec<std::collections::HashMap<String, String>>, String) {
    enrich_ok(&logs().join(log), &[&["-v"][..], args].concat())
}

/// fairseq's `train_inner` lines (docs/shapes.md, fairseq__syngec-glat-enro-8x3090.expect.json). The
/// model (a non-autoregressive translator with a graph encoder) has no FLOPs count anyone can work out
/// from the log, so the FLOPs given are a stand-in and only the reading is checked.
#[test]
fn fairseq_updates_are_read_with_their_global_word_rate() {
    let (rows, err) = enrich_verbose(
        "fairseq__syngec-glat-enro-8x3090.log",
        &["--flops-per-token", "1e9"],
    );
    assert!(err.contains("framework: fairseq"), "{err}");
    // The Namespace dump (its `adam_betas='(0.9, 0.999)'` and a quoted JSON dict before the flags) and
    // the per-rank GPU table give the count, the precision and the device.
    assert!(
        err.contains("num_devices=8 from 'distributed_world_size'"),
        "{err}"
    );
    assert!(err.contains("dtype='fp16' from 'fp16'"), "{err}");
    assert!(
        err.contains("device_name='NVIDIA GeForce RTX 3090'"),
        "{err}"
    );
    // The validation lines (`| valid | epoch 143 | ... | num_updates 40297`) are not steps.
    assert!(err.contains("(62 evaluation)"), "{err}");
    assert_eq!(rows.len(), 235);
    // Update 40200: wps=132396, wpb=60718.4 (all eight GPUs); the step time is their ratio.
    let row = rows.iter().find(|r| r["num_updates"] == "40200").unwrap();
    assert_eq!(number(row, "tokens_per_second"), 132396.0);
    assert!((number(row, "step_time_s") - 60718.4 / 132396.0).abs() < 1e-12);
    assert_eq!(row["resolved_device"], "GeForce RTX 3090");
    assert_eq!(number(row, "peak_flops_per_device"), 71e12);
}

/// GPT-NeoX's iteration lines look like Megatron's, and its argument dump pads every value with dots
/// and a status word (`seq_length ..... 2048.......updated`).
#[test]
fn gpt_neox_argument_dump_gives_batch_length_and_precision() {
    let (rows, err) = enrich_verbose(
        "gpt-neox__zainsarwar-moe8top1-125m-1gpu.log",
        &["--flops-per-token", "1327546368", "--device", "NVIDIA A40"],
    );
    // `precision ... bfloat16`, not fp32 from `bf16 ... {'enabled': True}` beside `fp16 ... None`.
    assert!(
        err.contains("dtype='bf16' from the argument dump's precision"),
        "{err}"
    );
    assert!(
        err.contains("the global batch (the argument dump's train_batch_size"),
        "{err}"
    );
    let row = rows.iter().find(|r| r["iteration"] == "30").unwrap();
    assert_eq!(number(row, "tokens"), 18.0 * 2048.0);
    // The hand figures of its expect.json, on an A40 (149.7 TFLOP/s bf16): 0.2521.
    assert!((number(row, "tokens_per_second") - 28429.09).abs() < 0.01);
    assert!((number(row, "mfu_wall_clock") - 0.2521).abs() < 1e-4);
}

/// PaddleNLP's Trainer lines: `[INFO] - loss: ..., global_step: 20, interval_runtime: 1.9257,
/// interval_samples_per_second: 4.154, interval_steps_per_second: 5.193`.
#[test]
fn paddlenlp_steps_are_timed_by_their_interval_rate() {
    let (rows, err) = enrich_verbose(
        "paddlenlp__lemonnoel-fewclue-csl-ernie3-base-1gpu.log",
        &["--flops-per-token", "1e9"],
    );
    assert!(err.contains("framework: paddlenlp"), "{err}");
    assert_eq!(rows.len(), 70);
    let row = rows.iter().find(|r| r["global_step"] == "20").unwrap();
    assert!((number(row, "step_time_s") - 1.0 / 5.193).abs() < 1e-12);
    // The logger's ` - ` is not part of the first key.
    assert!(row.contains_key("loss"), "{:?}", row.keys());
    // The samples rate this PaddleNLP version logs is one step's samples over the whole interval
    // (8 / 1.9257 = 4.154 where 8 x 5.193 = 41.5 is true): it times nothing.
    assert!(!err.contains("step_time_s = samples"), "{err}");
}

/// Unsloth's banner names the GPU (`GPU: NVIDIA A100-SXM4-40GB. Max memory: ...`) and says the GPU
/// supports bf16 (`Bfloat16 = TRUE.`), which is not the run's precision.
#[test]
fn unsloth_banner_gives_the_device_but_not_the_precision() {
    let (rows, err) = enrich_verbose(
        "unsloth__araia-llama31-8b-qlora-a100.log",
        // The log counts no tokens (batches padded to their longest example): a stand-in count.
        &[
            "--tokens-per-step",
            "2048",
            "--flops-per-token",
            "45027950592",
        ],
    );
    assert!(
        err.contains("device_name='NVIDIA A100-SXM4-40GB' from 'gpu'"),
        "{err}"
    );
    assert!(err.contains("dtype=missing"), "{err}");
    assert!(err.contains("no precision: MFU is null"), "{err}");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["resolved_device"], "A100 SXM4");
    assert!((number(&rows[0], "step_time_s") - 71.5487 / 60.0).abs() < 1e-12);
}

/// TRL's GRPO console: a model-loading bar before training, metric dicts with namespaced keys, and no
/// run summary (the run was stopped at step 188).
#[test]
fn trl_console_without_a_summary_says_its_rows_are_the_bars() {
    let (rows, err) = enrich_verbose(
        "trl__trldapo-grpo-qwen25vl-3b-1gpu.log",
        &[
            "--tokens-per-step",
            "945",
            "--flops-per-token",
            "1e9",
            "--num-devices",
            "1",
        ],
    );
    // `'completions/max_length': 5.0` is a measurement, not the sequence length.
    assert!(err.contains("seq_len=missing"), "{err}");
    assert!(
        err.contains("no run summary (train_runtime) in the log"),
        "{err}"
    );
    // `Loading checkpoint shards: 100%|...| 2/2` counts shards: no row has its total of 2.
    assert!(rows
        .iter()
        .all(|r| r["progress"] != "2" || r["progress elapsed (s)"] != "0.0"));
    let steps: Vec<f64> = rows.iter().map(|r| number(r, "progress")).collect();
    assert_eq!(steps.iter().cloned().fold(f64::MIN, f64::max), 188.0);
}

/// torchtune names its precision in a sentence (`Model is initialized with precision torch.bfloat16.`)
/// and logs one device's token rate but no token count and no time: the rate alone is the throughput
/// (with the device count, which it does not print), and a count given only stands in: the rate comes
/// out the same whatever it is.
#[test]
fn torchtune_rate_and_sentence_precision() {
    for stand_in in [None, Some("4096"), Some("65536")] {
        let mut flags = vec![
            "--num-devices",
            "1",
            "--flops-per-token",
            "39642857472",
            "--device",
            "NVIDIA A100-SXM4-80GB",
        ];
        if let Some(tokens) = stand_in {
            flags.extend(["--tokens-per-step", tokens]);
        }
        let (rows, err) = enrich_verbose("torchtune__pr1358-codellama7b-full.log", &flags);
        assert!(err.contains("dtype='bf16' from 'precision'"), "{err}");
        let row = rows.iter().find(|r| r["Step"] == "10").unwrap();
        // The hand figures of its expect.json: 962.2259 tokens a second on its one GPU, 38.1 TFLOP/s,
        // 0.1223 of an A100's 312 in bf16.
        assert!((number(row, "tokens_per_second") - 962.2259327743811).abs() < 1e-6);
        assert!((number(row, "achieved_flops_per_device") / 3.8145e13 - 1.0).abs() < 1e-4);
        assert!((number(row, "mfu_wall_clock") - 0.1223).abs() < 1e-4);
    }
}

/// Axolotl runs the HF Trainer; its `total_num_tokens per device: 26275` is the dataset's, not a step's.
#[test]
fn axolotl_dataset_token_count_is_not_a_step_count() {
    let wd = Workdir::new("console_axolotl");
    let out = wd
        .mfu()
        .arg("enrich")
        .arg(logs().join("axolotl__issue592-hang-casper.log"))
        .args([
            "-o",
            "-",
            "-v",
            "--num-devices",
            "1",
            "--flops-per-token",
            "1e9",
        ])
        .output()
        .unwrap();
    // Its dataset-wide count is no step's: no count a step, so no throughput (with a warning that
    // asks for one), and the step times still read.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("no count a step"), "{err}");
    let rows = csv_rows(&String::from_utf8(out.stdout).unwrap());
    assert!(rows.iter().all(|r| r["tokens_per_second"].is_empty()));
    let (rows, err) = enrich_verbose(
        "axolotl__issue592-hang-casper.log",
        &[
            "--num-devices",
            "1",
            "--flops-per-token",
            "1e9",
            "--tokens-per-step",
            "4096",
        ],
    );
    assert!(err.contains("framework: axolotl"), "{err}");
    assert!(err.contains("no run summary"), "{err}");
    assert!(rows.iter().any(|r| r["progress"] == "283"));
}

/// A log's own MFU written as a percentage without '%' is read as one where mfu's own MFU of the same
/// rows is a hundredth of it; a fraction stays a fraction; without an MFU of mfu's own to compare, a
/// value above 1 stays as written and is flagged.
#[test]
fn a_logged_mfu_without_its_percent_sign_is_read_by_the_evidence() {
    let wd = Workdir::new("console_percent");
    // 8 H100s, 65,536 tokens a step in 0.5 s, 4e9 FLOPs a token: mfu's own MFU is
    // 65536 x 4e9 / (0.5 x 8 x 989.4e12) = 0.0662.
    let log = |mfu: &dyn Fn(u32) -> String| {
        (1..=20)
            .map(|s| {
                format!(
                    "2026-01-01 00:00:{:02}.{:03} step: {s}  loss: 2.1  tokens: 65536  step_time: 0.5  mfu: {}\n",
                    s / 2,
                    (s % 2) * 500,
                    mfu(s)
                )
            })
            .collect::<String>()
    };
    let flags = [
        "--device",
        "NVIDIA H100 80GB HBM3",
        "--num-devices",
        "8",
        "--dtype",
        "bf16",
        "--flops-per-token",
        "4e9",
        "--logged-peak-flops",
        "989.4e12",
    ];
    let read = |name: &str, text: String, flags: &[&str]| {
        let file = wd.create(name, text);
        enrich_ok(&file, flags)
    };
    let (rows, err) = read("percent.log", log(&|_| "6.62".into()), &flags);
    assert!(err.contains("written as a percentage without '%'"), "{err}");
    let corrected = number(&rows[5], "mfu_logged_corrected");
    assert!((corrected - 0.0662).abs() < 1e-3, "{corrected}");
    assert!(!err.contains("above 1"), "{err}");
    let (rows, err) = read("fraction.log", log(&|_| "0.0662".into()), &flags);
    assert!(!err.contains("percentage"), "{err}");
    assert!((number(&rows[5], "mfu_logged_corrected") - 0.0662).abs() < 1e-3);
    // No FLOPs a token: nothing to compare the figure with.
    let (_, err) = read(
        "unknown.log",
        log(&|_| "6.62".into()),
        &flags[..6]
            .iter()
            .chain(&flags[8..])
            .copied()
            .collect::<Vec<_>>(),
    );
    assert!(err.contains("read as written"), "{err}");
}

/// A loop that prints only its own rate (no timestamps, no step time, no batch size): the rate is the
/// throughput and gives MFU, with no count a step asked for; one device's rate is multiplied by the
/// device count, and without one the log says what is missing instead of printing a figure.
#[test]
fn a_logged_rate_alone_gives_throughput_and_mfu() {
    let wd = Workdir::new("console_rate_alone");
    let global = wd.create(
        "global.log",
        "step 10 | loss 2.31 | tokens/s 120000\nstep 20 | loss 2.21 | tokens/s 121000\n\
         step 30 | loss 2.11 | tokens/s 119000\nstep 40 | loss 2.01 | tokens/s 122000\n",
    );
    let flags = [&H100_FLAGS[..], &["-v"]].concat();
    let (rows, err) = enrich_ok(&global, &flags);
    assert!(!err.contains("no count a step"), "{err}");
    assert!(!err.contains("no step timing"), "{err}");
    assert!(err.contains("the throughput is 'tokens/s'"), "{err}");
    assert_eq!(rows.len(), 4);
    let row = rows.iter().find(|r| r["step"] == "20").unwrap();
    assert_eq!(number(row, "tokens_per_second"), 121000.0);
    assert_eq!(
        number(row, "achieved_flops_per_device"),
        121000.0 * 1e9 / 8.0
    );
    let want = 121000.0 * 1e9 / 8.0 / 989.4e12;
    assert!((number(row, "mfu_wall_clock") - want).abs() < 1e-15);
    assert_eq!(row["mfu_fwd_bwd"], "");

    let per_device = wd.create(
        "device.log",
        "step 10 | loss 2.31 | tokens_per_sec_per_gpu 15000\n\
         step 20 | loss 2.21 | tokens_per_sec_per_gpu 15100\n\
         step 30 | loss 2.11 | tokens_per_sec_per_gpu 14900\n",
    );
    let (rows, err) = enrich_ok(&per_device, &flags);
    let row = rows.iter().find(|r| r["step"] == "20").unwrap();
    assert_eq!(number(row, "tokens_per_second"), 15100.0 * 8.0, "{err}");
    assert_eq!(number(row, "achieved_flops_per_device"), 15100.0 * 1e9);
    let without_count: Vec<&str> = flags
        .iter()
        .copied()
        .filter(|f| *f != "--num-devices" && *f != "8")
        .collect();
    let (rows, err) = enrich_ok(&per_device, &without_count);
    assert!(err.contains("give --num-devices"), "{err}");
    assert_eq!(rows[1]["tokens_per_second"], "", "{err}");
}

/// Swin prints one device's batch (`BATCH_SIZE: 128`) and never its device count: the warning names the
/// batch it found and the one flag that makes the samples of a step from it; with that flag, each step is
/// 128 x 2 samples and the warning is gone.
#[test]
fn one_device_s_batch_without_a_device_count_asks_for_the_count() {
    let log = "swin__byungwanlim-swin-t-imagenet-subset-5-launches-2-1-1-1-2gpu.log";
    let (_, err) = enrich_verbose(log, &[]);
    assert!(
        err.contains(
            "one device's batch is printed (128 at 'batch_size' at line 19) but not the device count: give --num-devices"
        ),
        "{err}"
    );
    let (rows, err) = enrich_verbose(log, &["--num-devices", "2"]);
    assert!(!err.contains("one device's batch is printed"), "{err}");
    // Each row's samples a second times its step time ('time', the step's own): 128 x 2 samples.
    for row in &rows {
        let samples = number(row, "samples_per_second") * number(row, "time");
        assert!((samples - 256.0).abs() < 1e-6, "{row:?}");
    }
}
