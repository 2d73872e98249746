//! `mfu audit` on real logs (tests/data/logs, each with its SOURCE.md), every figure checked against the
//! hand audit in docs/audit.md.

use crate::util::{number, ok_csv, Workdir};

/// `mfu audit LOG FLAGS --format csv` of a corpus log: its one row.
fn audited(log: &str, flags: &[&str]) -> std::collections::HashMap<String, String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/logs")
        .join(log);
    let wd = Workdir::new("audit");
    let mut rows = ok_csv(
        wd.mfu()
            .args(["audit", "--quiet", "--format", "csv"])
            .arg(&path)
            .args(flags),
    );
    assert_eq!(rows.len(), 1);
    rows.remove(0)
}

fn near(row: &std::collections::HashMap<String, String>, key: &str, hand: f64, tolerance: f64) {
    let v = number(row, key);
    assert!(
        (v / hand - 1.0).abs() <= tolerance,
        "{key}: {v}, by hand {hand}"
    );
}

#[test]
fn torchtitan_on_rtx_5090s_divided_by_the_a100_and_left_out_the_output_projection() {
    let row = audited(
        "torchtitan__qiu023-rtx5090-llama3-150m.log",
        &["--flops-per-token", "1270480896", "--dtype", "bf16"],
    );
    assert_eq!(row["framework"], "torchtitan");
    assert_eq!(row["device"], "NVIDIA GeForce RTX 5090");
    // Its tflops over its mfu is the A100's 312 TFLOP/s, as its lookup's fallback gives.
    assert_eq!(number(&row, "peak_logged"), 312e12);
    assert_eq!(number(&row, "peak_emulated"), 312e12);
    assert!(
        row["emulation"].contains("fallback to A100"),
        "{}",
        row["emulation"]
    );
    assert_eq!(number(&row, "peak"), 209.5e12);
    near(&row, "peak_factor", 312.0 / 209.5, 1e-12);
    // Its count: 48.38 TFLOP/s at 71,190 tokens/s (the median rows), 6.80e8 FLOPs per token.
    near(&row, "flops_per_token_logged", 6.796e8, 1e-3);
    near(&row, "numerator_factor", 1270480896.0 / 6.796e8, 1e-3);
    near(&row, "mfu_logged", 0.15505, 1e-9);
    near(&row, "mfu", 0.4317, 1e-3);
    // The ratio is the two factors together.
    near(
        &row,
        "ratio",
        number(&row, "peak_factor") * number(&row, "numerator_factor"),
        1e-3,
    );
    assert!(
        row["verdict"].contains("2.78x the logged figure"),
        "{}",
        row["verdict"]
    );
}

#[test]
fn llm_c_on_a_device_its_table_lacks_logs_only_placeholders() {
    let row = audited(
        "llmc__tannal-a800-pcie-gpt2-124m.log",
        &["--flops-per-token", "854654976"],
    );
    assert_eq!(row["framework"], "llm.c");
    assert_eq!(
        (row["rows"].as_str(), row["placeholder_rows"].as_str()),
        ("21", "21")
    );
    assert_eq!(row["mfu_logged"], "");
    assert!(row["emulation"].contains("no branch matches 'NVIDIA A800 80GB PCIe'"));
    assert!(
        row["verdict"].starts_with("llm.c logged no MFU"),
        "{}",
        row["verdict"]
    );
    near(&row, "mfu", 0.5204, 1e-3);
}

#[test]
fn nanogpt_divides_by_the_a100_whatever_the_device() {
    let row = audited(
        "nanogpt__rtx4070tisuper-shakespeare-char.log",
        &[
            "--num-devices",
            "1",
            "--dtype",
            "bf16",
            "--tokens-per-step",
            "655360",
            "--flops-per-token",
            "22119936",
            "--peak-flops",
            "88.2e12",
        ],
    );
    assert_eq!(row["framework"], "nanoGPT");
    assert_eq!(number(&row, "peak_logged"), 312e12);
    near(&row, "peak_factor", 312.0 / 88.2, 1e-12);
    assert_eq!(row["placeholder_rows"], "1");
    near(&row, "mfu_logged", 0.10185, 1e-9);
}

#[test]
fn verl_logs_mfu_over_the_update_time_with_its_own_count() {
    let row = audited(
        "verl__dstack-qwen25-7b-ppo-2node.log",
        &[
            "--device",
            "NVIDIA_H100_80GB_HBM3",
            "--flops-per-token",
            "43346558976",
        ],
    );
    assert_eq!(row["framework"], "verl");
    assert_eq!(number(&row, "peak_logged"), 989e12);
    near(&row, "peak_factor", 989.0 / 989.4, 1e-12);
    near(&row, "mfu_logged", 0.067, 1e-9);
    // Its figure is 4.4x mfu's: the update's time, not the step's, and its count over all tokens. The
    // median over every step, those that also ran a validation (110, 120, ...: their lines carry
    // `val-core/` figures besides the step's) included.
    near(&row, "numerator_factor", 0.2240, 1e-3);
}

#[test]
fn tflops_only_frameworks_are_rebased_on_the_right_peak() {
    let row = audited(
        "megatron-lm__mi300x-28b-thera.log",
        &[
            "--device",
            "AMD_Instinct_MI300X",
            "--flops-per-token",
            "200577908736",
        ],
    );
    assert_eq!(row["framework"], "Megatron-LM");
    assert_eq!(row["mfu_logged"], "");
    near(&row, "tflops_logged", 250.8, 1e-9);
    // 250.8 TFLOP/s of the MI300X's 1307.4.
    near(&row, "mfu_logged_rebased", 250.8 / 1307.4, 1e-9);
    let row = audited(
        "maxtext__dpo-qwen3-0.6b-tpuv5p8.log",
        &["--device", "TPU_v5p", "--flops-per-token", "4280549376"],
    );
    assert_eq!(row["framework"], "MaxText");
    near(&row, "mfu_logged_rebased", 85.828 / 459.0, 1e-9);
}

#[test]
fn a_log_without_a_framework_figure_says_there_is_nothing_to_audit() {
    let row = audited(
        "hf-trainer__khanusa-llama32-1b-2gpu.log",
        &[
            "--num-devices",
            "2",
            "--tokens-per-step",
            "8192",
            "--flops-per-token",
            "7615807488",
        ],
    );
    assert_eq!(row["framework"], "");
    assert!(
        row["notes"].contains("nothing to audit"),
        "{}",
        row["notes"]
    );
}

#[test]
fn a_peak_the_log_announces_wins_and_is_explained() {
    // torchtitan on Intel Max 1550s: its lookup reads the compute units at run time (448 here, not the
    // full 512), and the log says what it got: 2.982e+14.
    let row = audited(
        "torchtitan__aurora-blendcorpus-llama2-6l-24xmax1550.log",
        &["--flops-per-token", "9279897600", "--dtype", "bf16"],
    );
    assert_eq!(row["framework"], "torchtitan");
    assert_eq!(number(&row, "peak_logged"), 298.2e12);
    assert!(
        row["peak_logged_from"].starts_with("the log says so: 'peak_flops_used_for_computing_mfu'"),
        "{}",
        row["peak_logged_from"]
    );
    assert_eq!(row["peak_emulated"], "");
    assert!(
        row["emulation"].contains("compute units"),
        "{}",
        row["emulation"]
    );
    near(&row, "peak_factor", 298.2 / 340.8, 1e-12);
    // Its count is mfu's: the whole gap is the peak.
    near(&row, "numerator_factor", 1.0, 2e-3);
    near(&row, "ratio", 298.2 / 340.8, 2e-3);
}

#[test]
fn a_logged_mfu_no_framework_names_is_audited_against_the_users_peak() {
    // A table with an `mfu` column (a fraction) and nothing that names its framework: the column mfu
    // enrich reads as the log's MFU, against the peak the user gives.
    let wd = Workdir::new("audit_unknown");
    let mut csv = String::from("step,step_time_s,tokens,mfu\n");
    for step in 1..=4 {
        // 8,000 tokens a second at 1e9 FLOPs a token on one H100 SXM (989.4 TF/s): 0.8086%; the
        // framework said 1.6%, the same count against 500 TF/s.
        csv.push_str(&format!("{step},1.0,8000,0.016\n"));
    }
    let table = wd.create("metrics.csv", csv);
    let run = |flags: &[&str]| {
        ok_csv(
            wd.mfu()
                .args([
                    "audit", "--quiet", "--format", "csv", "--device", "H100 SXM", "--dtype",
                    "bf16",
                ])
                .args(["--num-devices", "1", "--flops-per-token", "1e9"])
                .args(flags)
                .arg(&table),
        )
        .remove(0)
    };
    let row = run(&[]);
    assert_eq!(row["framework"], "an unknown framework");
    assert_eq!(row["figure"], "mfu");
    assert_eq!(number(&row, "mfu_logged"), 0.016);
    assert_eq!(row["peak_logged"], "");
    assert!(
        row["notes"].contains("--logged-peak-flops"),
        "{}",
        row["notes"]
    );
    let row = run(&["--logged-peak-flops", "500e12"]);
    assert_eq!(number(&row, "peak_logged"), 500e12);
    near(&row, "peak_factor", 500.0 / 989.4, 1e-12);
    near(&row, "numerator_factor", 1.0, 1e-9);
    near(&row, "ratio", 500.0 / 989.4, 1e-9);
}

#[test]
fn megatron_halves_the_causal_attention_and_nanotron_rounds_its_tflops() {
    // Llama 3.2 1B at 8,192 tokens a sequence on 40 GH200s: Megatron-LM's 92.5 TFLOP/s make 9.03e9
    // FLOPs a token where mfu counts 1.0636e10: the other half of the core attention.
    let row = audited(
        "megatron-lm__gh200-llama3-1b.log",
        &[
            "--device",
            "NVIDIA_GH200_120GB",
            "--num-devices",
            "40",
            "--tokens-per-step",
            "655360",
            "--dtype",
            "bf16",
            "--flops-per-token",
            "10635706368",
        ],
    );
    assert_eq!(row["framework"], "Megatron-LM");
    near(&row, "numerator_factor", 1.178, 2e-3);
    near(&row, "peak", 989.4e12, 1e-12);
    // nanotron prints three significant digits: its 0.0101 TFLOP/s at 58.7K tokens/s agree with mfu's
    // count to that.
    let row = audited(
        "nanotron__david-share-tinyllama-h100.log",
        &["--device", "NVIDIA_H100_80GB_HBM3"],
    );
    assert_eq!(row["framework"], "nanotron");
    near(&row, "numerator_factor", 1.0, 0.01);
}

#[test]
fn per_row_the_logged_figure_stands_beside_mfus() {
    let log = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/logs/torchtitan__qiu023-rtx5090-llama3-150m.log");
    let wd = Workdir::new("audit_rows");
    let rows = ok_csv(
        wd.mfu()
            .args([
                "audit",
                "--quiet",
                "--per-row",
                "--format",
                "csv",
                "--dtype",
                "bf16",
            ])
            .args(["--flops-per-token", "1270480896"])
            .arg(&log),
    );
    assert_eq!(rows.len(), 102);
    // Step 100: `tps: 70,848  tflops: 48.15  mfu: 15.43%` (docs/audit.md works it by hand).
    let row = rows.iter().find(|r| r["step"] == "100.0").unwrap();
    near(row, "mfu_logged", 0.1543, 1e-12);
    near(row, "tflops_logged", 48.15, 1e-12);
    near(row, "flops_per_token_logged", 48.15e12 / 70848.0, 1e-9);
    near(row, "mfu", 1270480896.0 * 70848.0 / 209.5e12, 1e-9);
    near(
        row,
        "ratio",
        1270480896.0 * 70848.0 / 209.5e12 / 0.1543,
        1e-9,
    );
    assert_eq!(number(row, "peak_logged"), 312e12);
}

#[test]
fn mfus_own_callbacks_agree_with_mfu() {
    // What mfu.Meter logs (prefix perf/), read back: the same peak, the same count, ratio 1.
    let wd = Workdir::new("audit_own");
    let mut csv = String::from(
        "step,perf/step_s,perf/tokens,perf/flops_per_token,perf/num_devices,perf/mfu_wall_clock,device,dtype\n",
    );
    for step in 1..=5 {
        // 8,000 tokens in 1 s at 1e9 FLOPs a token on one H100 SXM: 8e12 / 989.4e12.
        csv.push_str(&format!(
            "{step},1.0,8000,1e9,1,{},NVIDIA H100 80GB HBM3,bf16\n",
            8e12 / 989.4e12
        ));
    }
    let table = wd.create("meter.csv", csv);
    let row = ok_csv(
        wd.mfu()
            .args(["audit", "--quiet", "--format", "csv"])
            .args([
                "--map",
                "step_time=perf/step_s",
                "--map",
                "tokens=perf/tokens",
            ])
            .args([
                "--map",
                "flops_per_token=perf/flops_per_token",
                "--map",
                "num_devices=perf/num_devices",
            ])
            .arg(&table),
    )
    .remove(0);
    assert_eq!(row["framework"], "mfu");
    assert_eq!(number(&row, "peak_logged"), 989.4e12);
    near(&row, "ratio", 1.0, 1e-12);
    near(&row, "numerator_factor", 1.0, 1e-12);
    assert!(
        row["verdict"].contains("its peak is the right one"),
        "{}",
        row["verdict"]
    );
}

#[test]
fn megatron_bridge_counted_every_sequence_at_the_models_maximum_length() {
    // Its `GPU utilization: 59892.5TFLOP/s/GPU` on H100s: 60 times the device's peak. It counted each
    // of the 512 sequences as 131,072 tokens (the model's seq_length) where the data's are 1,024.
    let row = audited(
        "megatron-bridge__verdimrc-llama32-1b-8xh100.log",
        &[
            "--device",
            "NVIDIA_H100_80GB_HBM3",
            "--tokens-per-step",
            "524288",
            "--flops-per-token",
            "7817134080",
        ],
    );
    assert_eq!(row["framework"], "Megatron-Bridge");
    near(&row, "tflops_logged", 59892.5, 1e-12);
    assert_eq!(row["impossible_rows"], "1");
    // Megatron-LM's count at S = 131,072 (mfu flops --compare: 3.318e10) x 128 tokens counted per token
    // trained.
    near(&row, "flops_per_token_logged", 3.318e10 * 128.0, 1e-3);
    assert!(
        row["verdict"].contains("which is impossible"),
        "{}",
        row["verdict"]
    );
}

/// nanochat logs its MFU as a percentage without `%` (`mfu: 47.65`, `bf16_mfu: 38.60` from 2026-02-10),
/// beside `lrm`, its learning-rate multiplier: it is nanochat's, not llm.c's (whose `bf16 MFU` has the
/// same name) nor an unknown framework's. Its first versions divide by the H100's 989 TFLOP/s whatever
/// the device; later ones look the device up and print the peak they took, which the audit reads.
#[test]
fn nanochat_is_named_by_its_own_keys_and_its_printed_peak_wins() {
    // 8 H100s (the device is not printed: given), the first version's constant peak.
    let row = audited(
        "nanochat__jhinpan-d20-8xh100-speedrun.log",
        &["--device", "NVIDIA H100 80GB HBM3", "--dtype", "bf16"],
    );
    assert_eq!(row["framework"], "nanochat");
    assert_eq!(row["recognised_by"], "its columns 'mfu', 'lrm'");
    assert_eq!(number(&row, "peak_logged"), 989e12);
    assert!(row["peak_logged_from"].contains("nanochat's lookup emulated"));
    near(&row, "mfu_logged", 0.4765, 1e-9);
    near(&row, "peak_factor", 989.0 / 989.4, 1e-9);
    // Its count is mfu's own (the log prints `Estimated FLOPs per token: 3.491758e+09`).
    near(&row, "numerator_factor", 1.0, 1e-5);
    near(&row, "mfu", 0.4763, 1e-3);

    // 4 RTX 3090s: `GPU: NVIDIA GeForce RTX 3090 | Peak FLOPS (BF16): 7.10e+13` at line 15, the device,
    // the precision and the peak read from it with no flag.
    let row = audited("nanochat__c-ding-math-d24-4x3090-bf16-mfu.log", &[]);
    assert_eq!(row["framework"], "nanochat");
    assert_eq!(number(&row, "peak_logged"), 71e12);
    assert_eq!(
        row["peak_logged_from"],
        "the log says so: 'peak_flops_bf16' at line 15"
    );
    assert_eq!(row["device"], "NVIDIA GeForce RTX 3090");
    near(&row, "mfu_logged", 0.386, 1e-9);
    near(&row, "mfu", 0.3860, 1e-3);
    near(&row, "ratio", 1.0, 1e-4);
}

/// A framework is named only on a marker of its own: llm.c by its `norm` beside `bf16 MFU`, nanochat by
/// its `lrm`. A loop that logs a `bf16_mfu` and neither is an unknown framework's, and says so.
#[test]
fn a_figure_name_alone_names_no_framework() {
    let wd = Workdir::new("audit_unknown");
    let log = wd.create(
        "loop.log",
        "step 10 | loss 2.31 | dt: 500.0ms | bf16_mfu: 40.10\n\
         step 20 | loss 2.21 | dt: 501.0ms | bf16_mfu: 40.02\n\
         step 30 | loss 2.11 | dt: 499.0ms | bf16_mfu: 40.20\n",
    );
    let mut rows = ok_csv(
        wd.mfu()
            .args(["audit", "--quiet", "--format", "csv"])
            .arg(&log),
    );
    let row = rows.remove(0);
    assert_eq!(row["framework"], "an unknown framework");
    assert_eq!(row["figure"], "bf16_mfu");
    let llmc = audited("llmc__llm-kittens-rtx5090.log", &[]);
    assert_eq!(llmc["framework"], "llm.c");
    assert_eq!(llmc["recognised_by"], "its columns 'bf16 MFU (%)', 'norm'");
}
