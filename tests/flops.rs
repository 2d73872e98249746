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
