//! FLOPs per token from real model configurations (written into fixtures/configs from their public
//! config.json), each checked to the FLOP against the convention's formula evaluated here by hand.

use mfu::flops::{flops_per_token, Attention, FlopsError, ModelConfig, Recompute};
use predicates::prelude::*;

use crate::util::OkStdout;
use crate::util::{fixtures, Workdir};

fn config(name: &str) -> ModelConfig {
    ModelConfig::from_file(&fixtures().join("configs").join(name)).unwrap()
}

fn count(name: &str, seq: u64) -> mfu::flops::FlopsBreakdown {
    flops_per_token(&config(name), seq, Attention::Full, Recompute::None).unwrap()
}

/// 6 x N + sum over layers of 6 x (d_qk + d_v) x H x S_eff.
fn total(n_matmul: f64, attention: f64) -> f64 {
    6.0 * n_matmul + attention
}

#[test]
fn llama_2_7b() {
    let (h, l, heads, i, v, s) = (4096.0, 32.0, 32.0, 11008.0, 32000.0, 4096.0);
    let d = h / heads;
    let n = l * (h * heads * d + 2.0 * h * heads * d + heads * d * h + 3.0 * h * i) + h * v;
    let attn = 12.0 * l * heads * d * s;
    let got = count("llama-2-7b.json", 4096);
    assert_eq!(got.n_matmul, n);
    assert_eq!(n, 6_607_077_376.0);
    assert_eq!(got.attention_flops_per_token, attn);
    assert_eq!(got.flops_per_token, total(n, attn));
    assert_eq!(got.hardware_flops_per_token, got.flops_per_token);
    let causal = flops_per_token(
        &config("llama-2-7b.json"),
        4096,
        Attention::Causal,
        Recompute::Full,
    )
    .unwrap();
    assert_eq!(causal.attention_flops_per_token, attn / 2.0);
    assert_eq!(
        causal.hardware_flops_per_token,
        total(n, attn / 2.0) * 4.0 / 3.0
    );
}

#[test]
fn mistral_7b_grouped_query_attention() {
    let (h, l, heads, kv, i, v) = (4096.0, 32.0, 32.0, 8.0, 14336.0, 32000.0);
    let d = h / heads;
    let n = l * (h * heads * d + 2.0 * h * kv * d + heads * d * h + 3.0 * h * i) + h * v;
    let got = count("mistral-7b.json", 2048);
    assert_eq!(got.n_matmul, n);
    assert_eq!(got.flops_per_token, total(n, 12.0 * l * heads * d * 2048.0));
    // Past its 4096-token window every layer attends over 4096 tokens only.
    let long = count("mistral-7b.json", 8192);
    assert_eq!(
        long.attention_flops_per_token,
        12.0 * l * heads * d * 4096.0
    );
    assert_eq!(long.sliding_layers, 32);
}

#[test]
fn gpt2_small_tied_embeddings_count_the_head() {
    let (h, l, heads, v, s) = (768.0, 12.0, 12.0, 50257.0, 1024.0);
    let i = 4.0 * h;
    let n = l * (4.0 * h * h + 2.0 * h * i) + h * v;
    let got = count("gpt2.json", 1024);
    assert_eq!(got.n_matmul, n);
    assert_eq!(n, 123_532_032.0);
    assert_eq!(
        got.flops_per_token,
        total(n, 12.0 * l * heads * (h / heads) * s)
    );
}

#[test]
fn mixtral_8x7b_counts_active_experts() {
    let (h, l, heads, kv, i, v, e, k) = (4096.0, 32.0, 32.0, 8.0, 14336.0, 32000.0, 8.0, 2.0);
    let d = h / heads;
    let attn_params = h * heads * d + 2.0 * h * kv * d + heads * d * h;
    let mlp = k * 3.0 * h * i + h * e;
    let n = l * (attn_params + mlp) + h * v;
    let got = count("mixtral-8x7b.json", 4096);
    assert_eq!(got.n_matmul, n);
    assert!((got.n_matmul - 12.75e9).abs() < 0.01e9, "{}", got.n_matmul);
    assert_eq!(got.sliding_layers, 0, "sliding_window is null");
    assert_eq!(got.flops_per_token, total(n, 12.0 * l * heads * d * 4096.0));
}

#[test]
fn qwen2_moe_with_shared_expert() {
    let (h, l, heads, v, e, k, ie, is) = (2048.0, 24.0, 16.0, 151936.0, 60.0, 4.0, 1408.0, 5632.0);
    let d = h / heads;
    let mlp = k * 3.0 * h * ie + h * e + 3.0 * h * is;
    let n = l * (4.0 * h * heads * d + mlp) + h * v;
    let got = count("qwen1.5-moe-a2.7b.json", 4096);
    assert_eq!(got.n_matmul, n);
    // use_sliding_window is false: the 32768 window never applies.
    let long = count("qwen1.5-moe-a2.7b.json", 65536);
    assert_eq!(long.sliding_layers, 0);
    assert_eq!(got.flops_per_token, total(n, 12.0 * l * heads * d * 4096.0));
}

#[test]
fn deepseek_v3_latent_attention_and_dense_first_layers() {
    let (h, l, heads, v) = (7168.0, 61.0, 128.0, 129280.0);
    let (q_lora, kv_lora, nope, rope, vd) = (1536.0, 512.0, 128.0, 64.0, 128.0);
    let (dense_i, expert_i, experts, k, shared) = (18432.0, 2048.0, 256.0, 8.0, 1.0);
    let attn_params = h * q_lora
        + q_lora * heads * (nope + rope)
        + h * (kv_lora + rope)
        + kv_lora * heads * (nope + vd)
        + heads * vd * h;
    let dense_mlp = 3.0 * h * dense_i;
    let moe_mlp = k * 3.0 * h * expert_i + h * experts + 3.0 * h * shared * expert_i;
    let n = 3.0 * (attn_params + dense_mlp) + 58.0 * (attn_params + moe_mlp) + h * v;
    let s = 4096.0;
    let attn = l * 6.0 * ((nope + rope) + vd) * heads * s;
    let got = count("deepseek-v3.json", 4096);
    assert_eq!(got.n_matmul, n);
    assert_eq!(got.attention_flops_per_token, attn);
    assert_eq!(got.flops_per_token, total(n, attn));
    // About 37B active parameters (the published figure, which also counts the embedding and MTP layer).
    assert!((36e9..39e9).contains(&got.n_matmul), "{}", got.n_matmul);
}

#[test]
fn gemma2_alternates_sliding_and_global_layers() {
    let (h, l, heads, kv, d, i, v) = (3584.0, 42.0, 16.0, 8.0, 256.0, 14336.0, 256000.0);
    let n = l * (h * heads * d + 2.0 * h * kv * d + heads * d * h + 3.0 * h * i) + h * v;
    let s = 8192.0;
    // 21 local layers attend over 4096 tokens, 21 global layers over all 8192.
    let attn = 21.0 * 12.0 * heads * d * 4096.0 + 21.0 * 12.0 * heads * d * s;
    let got = count("gemma-2-9b.json", 8192);
    assert_eq!(got.n_matmul, n);
    assert_eq!(got.sliding_layers, 21);
    assert_eq!(got.attention_flops_per_token, attn);
    assert_eq!(got.flops_per_token, total(n, attn));
}

#[test]
fn layer_types_and_aliases_of_unknown_families() {
    let text = r#"{"model_type": "my_lm", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 100,
        "intermediate_size": 256, "hidden_act": "gelu", "sliding_window": 16,
        "layer_types": ["sliding_attention", "full_attention"]}"#;
    let c = ModelConfig::from_json(text, "inline").unwrap();
    let got = flops_per_token(&c, 32, Attention::Full, Recompute::None).unwrap();
    let (h, i) = (64.0, 256.0);
    assert_eq!(
        got.n_matmul,
        2.0 * (4.0 * h * h + 2.0 * h * i) + h * 100.0,
        "gelu: plain MLP"
    );
    assert_eq!(
        got.attention_flops_per_token,
        12.0 * 4.0 * 16.0 * (16.0 + 32.0)
    );
}

#[test]
fn missing_fields_are_listed() {
    let c = ModelConfig::from_json(r#"{"model_type": "mystery", "hidden_size": 64}"#, "c.json")
        .unwrap();
    let err = flops_per_token(&c, 128, Attention::Full, Recompute::None).unwrap_err();
    let FlopsError::Missing { missing, .. } = &err else {
        panic!("{err:?}")
    };
    assert!(missing.contains("num_hidden_layers|n_layer"), "{missing}");
    assert!(missing.contains("num_attention_heads"), "{missing}");
    assert!(missing.contains("vocab_size"), "{missing}");
    assert!(err.to_string().starts_with("c.json: missing"), "{err}");
}

#[test]
fn multimodal_text_config_is_used() {
    let text = r#"{"model_type": "llava", "text_config": {"model_type": "llama", "hidden_size": 64,
        "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100, "intermediate_size": 128}}"#;
    let c = ModelConfig::from_json(text, "inline").unwrap();
    let got = flops_per_token(&c, 8, Attention::Full, Recompute::None).unwrap();
    assert_eq!(
        got.n_matmul,
        2.0 * (4.0 * 64.0 * 64.0 + 3.0 * 64.0 * 128.0) + 6400.0
    );
}

#[test]
fn flops_command_json_and_text() {
    let wd = Workdir::new("flops_cmd");
    let cfg = fixtures().join("configs/llama-2-7b.json");
    let out = wd
        .mfu()
        .args([
            "flops",
            "--seq-len",
            "4096",
            "--recompute",
            "full",
            "--json",
            "--config",
        ])
        .arg(&cfg)
        .ok_stdout();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let n = 6_607_077_376.0;
    let attn = 12.0 * 32.0 * 32.0 * 128.0 * 4096.0;
    assert_eq!(v["n_matmul"].as_f64(), Some(n));
    assert_eq!(v["attention_flops_per_token"].as_f64(), Some(attn));
    assert_eq!(v["flops_per_token"].as_f64(), Some(6.0 * n + attn));
    assert_eq!(
        v["hardware_flops_per_token"].as_f64(),
        Some((6.0 * n + attn) * 4.0 / 3.0)
    );
    wd.mfu()
        .args(["flops", "--seq-len", "4096", "--config"])
        .arg(&cfg)
        .assert()
        .success()
        .stdout(predicate::str::contains("N_matmul"))
        .stdout(predicate::str::contains("6.607e9"));
    wd.create("bad.json", r#"{"model_type": "mystery"}"#);
    wd.mfu()
        .args(["flops", "--seq-len", "8", "--config", "bad.json"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("bad.json: missing hidden_size"));
}

#[test]
fn flops_vision_lists_flops_per_image_and_enrich_takes_them() {
    let wd = Workdir::new("flops_vision");
    // Every model, as a table; one family by its name.
    let all = String::from_utf8(wd.mfu().args(["flops", "--vision"]).ok_stdout()).unwrap();
    assert!(
        all.contains("vit_b_16") && all.contains("convnext_tiny"),
        "{all}"
    );
    let resnets =
        String::from_utf8(wd.mfu().args(["flops", "--vision", "resnet"]).ok_stdout()).unwrap();
    assert!(
        resnets.contains("resnet50") && !resnets.contains("wide_resnet50_2"),
        "{resnets}"
    );
    // ResNet-50: torchvision's 4.089 G multiply-accumulates x 2 x 3.
    let out = wd
        .mfu()
        .args(["flops", "--vision", "ResNet-50", "--json"])
        .ok_stdout();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v.as_array().map(Vec::len), Some(1));
    assert_eq!(v[0]["model"], "resnet50");
    assert_eq!(v[0]["image_size"], 224);
    let f = v[0]["flops_per_sample"].as_f64().unwrap();
    assert!((f - 24.534e9).abs() < 1e3, "{f}");
    assert!(v[0]["source"].as_str().unwrap().contains("torchvision"));
    wd.mfu()
        .args(["flops", "--vision", "no-such-net"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "no vision model named 'no-such-net'",
        ));
    // --vision stands alone; without it, a config and a length are needed.
    wd.mfu()
        .args(["flops", "--vision", "resnet50", "--seq-len", "8"])
        .assert()
        .code(2);
    wd.mfu().args(["flops"]).assert().code(2);
    // The figure into enrich: 256 images a step at 0.5 s on 8 A100s.
    let log = wd.create(
        "train.csv",
        "step,step_time,samples,num_devices\n1,0.5,256,8\n2,0.5,256,8\n",
    );
    let csv = String::from_utf8(
        wd.mfu()
            .arg("enrich")
            .arg(&log)
            .args([
                "-o",
                "-",
                "--device",
                "NVIDIA A100-SXM4-80GB",
                "--dtype",
                "bf16",
            ])
            .args(["--flops-per-sample", &f.to_string()])
            .ok_stdout(),
    )
    .unwrap();
    let rows = crate::util::csv_rows(&csv);
    let mfu: f64 = rows[0]["mfu_wall_clock"].parse().unwrap();
    let want = 256.0 / 0.5 * 24.534e9 / 8.0 / 312e12;
    assert!((mfu - want).abs() < 1e-9, "{mfu} {want}");
    assert_eq!(rows[0]["samples_per_second"], "512.0");
}

#[test]
fn enrich_fills_flops_per_token_from_the_config() {
    let wd = Workdir::new("flops_enrich");
    wd.create(
        "log.csv",
        "step,step_time,tokens,seq_len\n1,2.0,8192,4096\n2,2.0,8192,2048\n",
    );
    let cfg = fixtures().join("configs/llama-2-7b.json");
    let out = wd
        .mfu()
        .args([
            "enrich",
            "log.csv",
            "-o",
            "-",
            "--num-devices",
            "1",
            "--device",
            "NVIDIA H100 80GB HBM3",
            "--dtype",
            "bf16",
            "--recompute",
            "full",
            "-q",
            "--model-config",
        ])
        .arg(&cfg)
        .ok_stdout();
    let text = String::from_utf8(out).unwrap();
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let headers = r.headers().unwrap().clone();
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    let col = |name: &str| {
        headers
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("{name}"))
    };
    let n = 6_607_077_376.0;
    for (row, s) in rows.iter().zip([4096.0, 2048.0]) {
        let f = 6.0 * n + 12.0 * 32.0 * 32.0 * 128.0 * s;
        let mfu: f64 = row[col("mfu_wall_clock")].parse().unwrap();
        let want = 8192.0 * f / 2.0 / 989.4e12;
        assert!(((mfu - want) / want).abs() < 1e-12, "{mfu} vs {want}");
        let hfu: f64 = row[col("hfu_wall_clock")].parse().unwrap();
        assert!(((hfu - want * 4.0 / 3.0) / hfu).abs() < 1e-12);
    }
    assert_eq!(headers.iter().next_back(), Some("hfu_fwd_bwd"));
    // Without a sequence length, the config alone is not enough.
    wd.create("noseq.csv", "step,step_time,tokens\n1,2.0,8192\n");
    wd.mfu()
        .args([
            "enrich",
            "noseq.csv",
            "-o",
            "-",
            "--num-devices",
            "1",
            "--model-config",
        ])
        .arg(&cfg)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("--seq-len"));
}

// ---- Every convention against its source, computed independently -------------------------------------

use mfu::conventions::{count as convention_count, Convention, ConventionOptions};

fn convention(name: &str, c: Convention, seq: u64) -> f64 {
    convention_count(
        c,
        &config(&format!("{name}.json")),
        seq,
        &ConventionOptions::default(),
    )
    .unwrap()
    .total()
}

fn relative(a: f64, b: f64) -> f64 {
    ((a - b) / b).abs()
}

/// A config.json's field, as Megatron's arguments would carry it.
fn field(name: &str, keys: &[&str]) -> Option<f64> {
    let text = std::fs::read_to_string(fixtures().join(format!("configs/{name}.json"))).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    keys.iter()
        .find_map(|k| v.get(*k).and_then(serde_json::Value::as_f64))
}

/// Megatron-LM's arguments for a Hugging Face config (the conversion a Megatron user would make).
struct MegatronArgs {
    hidden: f64,
    layers: f64,
    heads: f64,
    groups: f64,
    kv_channels: f64,
    ffn: f64,
    swiglu: bool,
    padded_vocab: f64,
    experts: Option<f64>,
    topk: f64,
    moe_ffn: f64,
    shared: f64,
}

fn megatron_args(name: &str) -> MegatronArgs {
    let hidden = field(name, &["hidden_size"]).unwrap();
    let heads = field(name, &["num_attention_heads"]).unwrap();
    let vocab = field(name, &["vocab_size"]).unwrap();
    let ffn = field(name, &["intermediate_size"]).unwrap();
    MegatronArgs {
        hidden,
        layers: field(name, &["num_hidden_layers"]).unwrap(),
        heads,
        groups: field(name, &["num_key_value_heads"]).unwrap_or(heads),
        kv_channels: field(name, &["head_dim"]).unwrap_or(hidden / heads),
        ffn,
        swiglu: true,
        padded_vocab: (vocab / 128.0).ceil() * 128.0,
        experts: field(name, &["num_local_experts", "num_experts"]),
        topk: field(name, &["num_experts_per_tok"]).unwrap_or(1.0),
        moe_ffn: field(name, &["moe_intermediate_size"]).unwrap_or(ffn),
        shared: field(name, &["shared_expert_intermediate_size"]).unwrap_or(0.0),
    }
}

/// Megatron-LM `megatron/training/training.py` `num_floating_point_operations` at 8873b55d6a (2025-03-06),
/// ported line for line (every layer a MoE layer when the model has experts, `--moe-layer-freq 1`);
/// `halve_attention: false` is the formula before it (e116d81ed7, 2024-03-25, to 8873b55d6a), whose
/// attention term reads `seq_length / hidden_size`.
fn megatron_flops(a: &MegatronArgs, batch: f64, seq: f64, halve_attention: bool) -> f64 {
    let query_projection_size = a.kv_channels * a.heads;
    let query_projection_to_hidden_size_ratio = query_projection_size / a.hidden;
    let (num_moe_layers, num_dense_layers, num_experts_routed_to) = match a.experts {
        Some(_) => (a.layers, 0.0, a.topk),
        None => (0.0, a.layers, 0.0),
    };
    let gated_linear_multiplier = if a.swiglu { 3.0 / 2.0 } else { 1.0 };
    let expansion_factor = 3.0 * 2.0 * 2.0;
    let attention_seq = if halve_attention {
        seq / a.hidden / 2.0
    } else {
        seq / a.hidden
    };
    expansion_factor
        * batch
        * seq
        * a.layers
        * a.hidden
        * a.hidden
        * ((1.0 + (a.groups / a.heads) + attention_seq) * query_projection_to_hidden_size_ratio
            + ((a.ffn * num_dense_layers)
                + ((a.moe_ffn * num_experts_routed_to + a.shared) * num_moe_layers))
                * gated_linear_multiplier
                / (a.layers * a.hidden)
            + (a.padded_vocab / (2.0 * a.layers * a.hidden)))
}

/// The formula from 2748e7c7d4 (2023-11-26, `--log-throughput`) to e116d81ed7.
fn megatron_2023_flops(a: &MegatronArgs, batch: f64, seq: f64) -> f64 {
    60.0 * batch
        * seq
        * a.layers
        * a.hidden
        * a.hidden
        * (1.0
            + (a.groups / (5.0 * a.heads))
            + (seq / (5.0 * a.hidden))
            + (a.padded_vocab / (10.0 * a.layers * a.hidden)))
}

#[test]
fn megatron_conventions_equal_its_own_function() {
    for name in [
        "llama-2-7b",
        "mistral-7b",
        "mixtral-8x7b",
        "qwen1.5-moe-a2.7b",
    ] {
        let a = megatron_args(name);
        for seq in [2048u64, 4096] {
            let (b, s) = (8.0, seq as f64);
            let now = megatron_flops(&a, b, s, true) / (b * s);
            let before = megatron_flops(&a, b, s, false) / (b * s);
            let old = megatron_2023_flops(&a, b, s) / (b * s);
            assert!(
                relative(convention(name, Convention::Megatron, seq), now) < 1e-12,
                "{name} {seq}"
            );
            assert!(
                relative(convention(name, Convention::Megatron2024, seq), before) < 1e-12,
                "{name} {seq}"
            );
            assert!(
                relative(convention(name, Convention::Megatron2023, seq), old) < 1e-12,
                "{name} {seq}"
            );
        }
    }
}

/// Megatron-LM's multi-latent-attention branch of `num_floating_point_operations` (NVIDIA/Megatron-LM
/// `megatron/training/training.py` at 001b00c), ported for DeepSeek-V3 as a Megatron user would set it
/// up: `--q-lora-rank 1536 --kv-lora-rank 512 --qk-head-dim 128 --qk-pos-emb-head-dim 64 --v-head-dim
/// 128`, `--moe-layer-freq [0]*3+[1]*58`, top-8 of 2048-wide experts and one shared expert, no MTP layers.
#[test]
fn megatron_convention_follows_its_mla_branch() {
    let name = "deepseek-v3";
    let f = |k: &str| field(name, &[k]).unwrap();
    let (h, layers, heads) = (
        f("hidden_size"),
        f("num_hidden_layers"),
        f("num_attention_heads"),
    );
    let (q_lora, kv_lora) = (f("q_lora_rank"), f("kv_lora_rank"));
    let (qk_head_dim, qk_pos_emb_head_dim, v_head_dim) = (
        f("qk_nope_head_dim"),
        f("qk_rope_head_dim"),
        f("v_head_dim"),
    );
    let (ffn, moe_ffn, topk) = (
        f("intermediate_size"),
        f("moe_intermediate_size"),
        f("num_experts_per_tok"),
    );
    let shared = f("n_shared_experts") * moe_ffn;
    let dense_layers = f("first_k_dense_replace");
    let moe_layers = layers - dense_layers;
    let padded_vocab = (f("vocab_size") / 128.0).ceil() * 128.0;
    for seq in [4096u64, 8192] {
        let (batch, s) = (4.0, seq as f64);
        let (fb, fma, ffn_expansion) = (3.0, 2.0, 3.0);
        let q_term = q_lora * (h + heads * (qk_head_dim + qk_pos_emb_head_dim) + 1.0);
        let standard_self_attn_term = fb
            * fma
            * (q_term
                + kv_lora * (h + heads * (qk_head_dim + v_head_dim) + 1.0)
                + h * qk_pos_emb_head_dim
                + (heads * v_head_dim) * h
                + s * (heads * (qk_head_dim + qk_pos_emb_head_dim)) / 2.0
                + s * heads * v_head_dim / 2.0);
        let total = batch
            * s
            * (fb
                * fma
                * h
                * ((ffn * ffn_expansion) * dense_layers
                    + (moe_ffn * topk * ffn_expansion) * moe_layers
                    + (shared * ffn_expansion) * moe_layers)
                + standard_self_attn_term * layers
                + fb * fma * h * padded_vocab);
        let ours = convention(name, Convention::Megatron, seq);
        assert!(
            relative(ours, total / (batch * s)) < 1e-12,
            "{seq}: {ours} vs {}",
            total / (batch * s)
        );
    }
}

/// karpathy/nanoGPT `model.py` at 3adf61e: `estimate_mfu`'s flops_per_token, with `get_num_params()`
/// for GPT-2 small: 124,439,808 parameters less the position embedding's 1024 x 768.
#[test]
fn nanogpt_convention_equals_estimate_mfu() {
    let n = 124_439_808.0 - 1024.0 * 768.0;
    let (l, h, q, t) = (12.0, 12.0, 768.0 / 12.0, 1024.0);
    let flops_per_token = 6.0 * n + 12.0 * l * h * q * t;
    assert!(
        relative(
            convention("gpt2", Convention::Nanogpt, 1024),
            flops_per_token
        ) < 1e-12
    );
    // llm-foundry counts every parameter (the tied embedding once), PaLM's rule too (with the head size).
    let foundry = 6.0 * 124_439_808.0 + 12.0 * 12.0 * 768.0 * 1024.0;
    assert!(relative(convention("gpt2", Convention::LlmFoundry, 1024), foundry) < 1e-12);
}

/// Parameter counts as the checkpoints have them: Llama-2-7B 6,738,415,616 (embedding and head 32000 x
/// 4096 each, untied; 65 RMSNorms of 4096); GPT-2 small 124,439,808 (tied).
#[test]
fn parameter_count_conventions() {
    let llama = 6_738_415_616.0;
    let embedding = 32_000.0 * 4096.0;
    let norms = 65.0 * 4096.0;
    let seq = 4096.0;
    // torchtitan: every parameter but the (untied) embedding, + 6 L H (d_qk + d_v) S.
    let torchtitan = 6.0 * (llama - embedding) + 6.0 * 32.0 * 32.0 * 256.0 * seq;
    assert!(
        relative(
            convention("llama-2-7b", Convention::Torchtitan, 4096),
            torchtitan
        ) < 1e-12
    );
    // HF floating_point_ops: num_parameters(exclude_embeddings=True), no attention.
    let hf = 6.0 * (llama - embedding);
    assert!(relative(convention("llama-2-7b", Convention::Hf, 4096), hf) < 1e-12);
    let gpt2_hf = 6.0 * (124_439_808.0 - 50_257.0 * 768.0 - 1024.0 * 768.0);
    assert!(relative(convention("gpt2", Convention::Hf, 1024), gpt2_hf) < 1e-12);
    // Kaplan: the layers' weights only.
    let kaplan = 6.0 * (llama - 2.0 * embedding - norms);
    assert!(relative(convention("llama-2-7b", Convention::Kaplan, 4096), kaplan) < 1e-12);
    // PaLM: every parameter, + 12 L H Q T.
    let palm = 6.0 * llama + 12.0 * 32.0 * 32.0 * 128.0 * seq;
    assert!(relative(convention("llama-2-7b", Convention::Palm, 4096), palm) < 1e-12);
}

/// Chinchilla, Appendix F, written out for one sequence and divided by its length.
#[test]
fn chinchilla_appendix_f() {
    let (seq, vocab, d, heads, key, ffw, layers) =
        (4096.0, 32_000.0, 4096.0, 32.0, 128.0, 11_008.0, 32.0);
    let embeddings = 2.0 * seq * vocab * d;
    let attention = 2.0 * 3.0 * seq * d * (key * heads)
        + 2.0 * seq * seq * (key * heads)
        + 3.0 * heads * seq * seq
        + 2.0 * seq * seq * (key * heads)
        + 2.0 * seq * (key * heads) * d;
    let dense = 2.0 * seq * (d * ffw + d * ffw);
    let logits = 2.0 * seq * d * vocab;
    let forward = embeddings + layers * (attention + dense) + logits;
    let per_token = 3.0 * forward / seq;
    assert!(
        relative(
            convention("llama-2-7b", Convention::Chinchilla, 4096),
            per_token
        ) < 1e-12
    );
}

/// MaxText's `calculate_tflops_training_per_device` (default decoder block) and Levanter's
/// `lm_flops_per_token` x 3, ported, on a GQA model (Mistral 7B, which MaxText's default block reads
/// without its window).
#[test]
fn maxtext_and_levanter_ported() {
    let (b, s, emb, heads, kv, hd, mlp, vocab, layers) = (
        1.0, 2048.0, 4096.0, 32.0, 8.0, 128.0, 14_336.0, 32_000.0, 32.0,
    );
    let ffn = 2.0 * b * s * mlp * emb * 2.0 + 2.0 * b * s * mlp * emb; // two activations (silu, linear)
    let qkv = 2.0 * b * s * emb * (heads + 2.0 * kv) * hd;
    let causal = 4.0 * b * s * s * heads * hd / 2.0;
    let projection = 2.0 * b * s * emb * heads * hd;
    let embedding = 2.0 * b * s * emb * vocab;
    let learnable = (ffn * layers + (qkv + projection) * layers + embedding) * 3.0;
    let attention = causal * layers * 3.0;
    let maxtext = (learnable + attention) / (b * s);
    // Mistral's window (4096) is longer than 2048 here, so every layer attends over the whole sequence.
    assert!(relative(convention("mistral-7b", Convention::Maxtext, 2048), maxtext) < 1e-12);

    let (hidden, inter) = (4096.0, 14_336.0);
    let head_dim = hidden / heads;
    let mlp = 2.0 * 3.0 * hidden * inter;
    let qkv_proj = 2.0 * hidden * (heads * head_dim + 2.0 * kv * head_dim);
    let dense_proj = 2.0 * hidden * hidden;
    let seq_flops =
        2.0 * s * s * heads * head_dim + 3.0 * s * s * heads + 2.0 * s * s * head_dim * heads;
    let attn = seq_flops / s;
    let lm_head = 2.0 * hidden * vocab;
    let levanter = 3.0 * (layers * (mlp + qkv_proj + dense_proj + attn) + lm_head);
    assert!(
        relative(
            convention("mistral-7b", Convention::Levanter, 2048),
            levanter
        ) < 1e-12
    );
}

/// mfu's own convention is `mfu flops`' count, and the window-aware conventions honour Mistral's window.
#[test]
fn mfu_convention_is_mfu_flops_and_windows_count() {
    for (name, seq) in [
        ("llama-2-7b", 4096u64),
        ("mistral-7b", 8192),
        ("gemma-2-9b", 8192),
        ("mixtral-8x7b", 4096),
    ] {
        let own = count(&format!("{name}.json"), seq).flops_per_token;
        assert!(
            relative(convention(name, Convention::Mfu, seq), own) < 1e-12,
            "{name}"
        );
    }
    // Mistral at 8192 with a 4096 window: nanochat counts the window, nanoGPT the whole sequence.
    let nanochat = convention("mistral-7b", Convention::Nanochat, 8192);
    let nanogpt_attention_only = convention("mistral-7b", Convention::LightningEager, 8192);
    assert!(nanochat < nanogpt_attention_only);
}

#[test]
fn flops_compare_lists_every_convention() {
    let out = assert_cmd::Command::cargo_bin("mfu")
        .unwrap()
        .args([
            "flops",
            "--seq-len",
            "4096",
            "--compare",
            "--json",
            "--config",
        ])
        .arg(fixtures().join("configs/llama-2-7b.json"))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out).unwrap();
    assert_eq!(rows.len(), Convention::ALL.len());
    // Each row names its convention as --convention takes it.
    for (row, c) in rows.iter().zip(Convention::ALL) {
        assert_eq!(
            row["convention"].as_str().unwrap().parse::<Convention>(),
            Ok(c)
        );
    }
    let megatron = rows.iter().find(|r| r["convention"] == "megatron").unwrap();
    // Megatron halves the causal attention: the gap is exactly half of mfu's attention term.
    let own = count("llama-2-7b.json", 4096);
    assert!(
        relative(
            -megatron["gap"]["attention"].as_f64().unwrap(),
            own.attention_flops_per_token / 2.0
        ) < 1e-12
    );
    assert!(
        relative(
            megatron["ratio"].as_f64().unwrap(),
            megatron["flops_per_token"].as_f64().unwrap() / own.flops_per_token
        ) < 1e-12
    );
}

/// `enrich --convention`: the MFU columns take that convention's numerator (the denominator unchanged),
/// the output records the convention, and FLOPs that do not come from a model config keep their figure
/// with a warning.
#[test]
fn enrich_with_a_convention_counts_its_numerator() {
    let wd = Workdir::new("flops_convention");
    let run = |extra: &[&str], out: &str| {
        wd.mfu()
            .arg("enrich")
            .arg(fixtures().join("shapes/trainer_state.json"))
            .args(["--device", "NVIDIA H100 80GB HBM3", "--dtype", "bf16"])
            .args(["--num-devices", "8", "--seq-len", "4096", "--model-config"])
            .arg(fixtures().join("configs/llama-2-7b.json"))
            .args(extra)
            .args(["-o", out, "--quiet"])
            .assert()
            .success();
        let (batch, meta) = crate::util::read_parquet(&wd.path(out));
        let column = |name: &str| -> Vec<f64> {
            crate::util::f64s(&batch, name)
                .into_iter()
                .flatten()
                .collect()
        };
        let options: serde_json::Value = serde_json::from_str(&meta["mfu.options"]).unwrap();
        // FLOPs per token as the enrichment used them: achieved x devices / tokens per second.
        let fpt: Vec<f64> = column("achieved_flops_per_device")
            .iter()
            .zip(column("tokens_per_second"))
            .map(|(achieved, tps)| achieved * 8.0 / tps)
            .collect();
        (
            fpt,
            column("mfu_wall_clock"),
            options["convention"].as_str().unwrap().to_string(),
        )
    };
    let (own_fpt, own_mfu, own_name) = run(&[], "own.parquet");
    let (meg_fpt, meg_mfu, meg_name) = run(&["--convention", "megatron"], "megatron.parquet");
    assert_eq!((own_name.as_str(), meg_name.as_str()), ("mfu", "megatron"));
    let megatron = convention("llama-2-7b", Convention::Megatron, 4096);
    let own = count("llama-2-7b.json", 4096).flops_per_token;
    assert!(own_fpt.iter().all(|&f| relative(f, own) < 1e-12));
    assert!(meg_fpt.iter().all(|&f| relative(f, megatron) < 1e-12));
    // Step 20 of the fixture: 3,276.8 tokens/s on 8 H100s (989.4 TFLOP/s bf16).
    assert!(relative(own_mfu[0], 3276.8 * own / 8.0 / 989.4e12) < 1e-12);
    assert_eq!(own_mfu.len(), meg_mfu.len());
    assert!(!own_mfu.is_empty());
    for (own, meg) in own_mfu.iter().zip(&meg_mfu) {
        assert!(relative(meg / own, megatron / own_fpt[0]) < 1e-12);
    }

    // A FLOPs figure given outright is kept as given, and the user is told the convention did not apply.
    wd.mfu()
        .arg("enrich")
        .arg(fixtures().join("shapes/trainer_state.json"))
        .args(["--device", "NVIDIA H100 80GB HBM3", "--dtype", "bf16"])
        .args(["--num-devices", "8", "--flops-per-token", "4.2e10"])
        .args(["--convention", "megatron"])
        .args(["-o", "given.csv"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "--convention megatron counts FLOPs per token from a model config",
        ));
    let given = std::fs::read_to_string(wd.path("given.csv")).unwrap();
    let rows = crate::util::csv_rows(&given);
    let achieved: Vec<f64> = rows
        .iter()
        .filter_map(|r| {
            let a = r["achieved_flops_per_device"].parse::<f64>().ok()?;
            Some(a * 8.0 / r["tokens_per_second"].parse::<f64>().ok()?)
        })
        .collect();
    assert!(!achieved.is_empty());
    assert!(achieved.iter().all(|&f| relative(f, 4.2e10) < 1e-12));

    // An unknown name is refused, naming the conventions there are.
    wd.mfu()
        .args(["enrich", "x.csv", "--convention", "megatron-1999"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("torchtitan"));
}

/// `--logged-convention`: a framework's own MFU, counted with its numerator against its peak, re-based on
/// both sides comes out as mfu's figure for the same tokens and time, row by row and length by length.
#[test]
fn logged_mfu_rebased_on_both_sides_equals_mfu() {
    let wd = Workdir::new("flops_logged_convention");
    let (devices, their_peak, ours) = (8.0, 312e12, 989.4e12);
    let mut csv = String::from("step,step_time,tokens,seq_len,mfu\n");
    let rows = [
        (1, 2.0, 1048576.0, 4096),
        (2, 1.5, 1048576.0, 4096),
        (3, 3.0, 2097152.0, 8192),
    ];
    for (step, time, tokens, seq) in rows {
        // What Megatron-LM logs: its own FLOPs count against the peak it was told.
        let theirs = convention("llama-2-7b", Convention::Megatron, seq);
        let logged = tokens * theirs / (devices * time) / their_peak;
        csv.push_str(&format!("{step},{time},{tokens},{seq},{logged}\n"));
    }
    wd.create("megatron.csv", csv);
    let out = wd
        .mfu()
        .args(["enrich", "megatron.csv", "-o", "-", "--num-devices", "8"])
        .args(["--device", "NVIDIA H100 80GB HBM3", "--dtype", "bf16"])
        .args([
            "--logged-peak-flops",
            "312e12",
            "--logged-convention",
            "megatron",
        ])
        .arg("--model-config")
        .arg(fixtures().join("configs/llama-2-7b.json"))
        .ok_stdout();
    let out = crate::util::csv_rows(&String::from_utf8(out).unwrap());
    assert_eq!(out.len(), 3);
    for (row, (_, time, tokens, seq)) in out.iter().zip(rows) {
        let corrected: f64 = row["mfu_logged_corrected"].parse().unwrap();
        let own: f64 = row["mfu_wall_clock"].parse().unwrap();
        let expected =
            tokens * count("llama-2-7b.json", seq).flops_per_token / (devices * time) / ours;
        assert!(relative(own, expected) < 1e-12);
        assert!(
            relative(corrected, own) < 1e-12,
            "{corrected} against {own}"
        );
    }

    // The peak side alone leaves the numerator's gap (Megatron halves the causal attention).
    let peak_only = wd
        .mfu()
        .args(["enrich", "megatron.csv", "-o", "-", "--num-devices", "8"])
        .args(["--device", "NVIDIA H100 80GB HBM3", "--dtype", "bf16"])
        .args(["--logged-peak-flops", "312e12", "--model-config"])
        .arg(fixtures().join("configs/llama-2-7b.json"))
        .ok_stdout();
    let peak_only = crate::util::csv_rows(&String::from_utf8(peak_only).unwrap());
    let first: f64 = peak_only[0]["mfu_logged_corrected"].parse().unwrap();
    let own: f64 = peak_only[0]["mfu_wall_clock"].parse().unwrap();
    let gap = convention("llama-2-7b", Convention::Megatron, 4096)
        / count("llama-2-7b.json", 4096).flops_per_token;
    assert!(relative(first / own, gap) < 1e-12);

    // Both sides need what they re-base with.
    wd.mfu()
        .args(["enrich", "megatron.csv", "--logged-convention", "megatron"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("--logged-peak-flops"));
}
