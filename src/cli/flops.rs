//! `mfu flops`: FLOPs per token from a model configuration, and FLOPs per sample of common vision
//! models.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde::Serialize;

use mfu::conventions::{self, ConventionOptions, Terms};
use mfu::flops::{flops_per_token, MlpKind, ModelConfig};
use mfu::vision_flops::{self, VisionModel};

use super::{AttentionArg, RecomputeArg};

/// Count model FLOPs per token from a Hugging Face config.json.
///
/// F = 6 x N_matmul + attention (forward + backward), the PaLM / nanoGPT / torchtitan convention: N_matmul
/// counts the weights of every matrix multiply a token passes through, LM head included, embedding lookup
/// excluded; the attention term is 12 x L x H x d x S (halved with --attention causal; min(S, window) on
/// sliding-window layers). Mixture-of-experts models count active experts only. With --recompute full,
/// hardware FLOPs per token are 4/3 of the model FLOPs.
///
/// With --compare, one row per published convention (torchtitan, Megatron-LM by version, Narayanan 2021,
/// Korthikanti 2022, nanoGPT, nanochat, Lightning measure_flops, llm-foundry, HF floating_point_ops,
/// MaxText, Levanter, PaLM, Kaplan, Chinchilla): its FLOPs per token, the ratio to mfu's, and the terms
/// behind the gap (docs/flops.md).
///
/// With --vision, FLOPs per image of common vision models for --flops-per-sample: torchvision's published
/// multiply-accumulates of each model's default weights at the image size given, x 6 (a multiply and an
/// add, forward and backward).
///
/// Examples:
///   mfu flops --config config.json --seq-len 4096
///   mfu flops --config config.json --seq-len 8192 --attention causal --recompute full --json
///   mfu flops --config config.json --seq-len 4096 --compare
///   mfu flops --vision
///   mfu flops --vision resnet50
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct FlopsArgs {
    /// The model's config.json.
    #[arg(long, value_name = "FILE", required_unless_present = "vision")]
    pub config: Option<PathBuf>,

    /// Training sequence length in tokens.
    #[arg(long, value_name = "S", value_parser = clap::value_parser!(u64).range(1..), required_unless_present = "vision")]
    pub seq_len: Option<u64>,

    /// FLOPs per image of common vision models (all of them, or those a name gives: `resnet50`, `vit`),
    /// for --flops-per-sample.
    #[arg(long, value_name = "MODEL", num_args = 0..=1, default_missing_value = "", conflicts_with_all = ["config", "seq_len", "compare"])]
    pub vision: Option<String>,

    /// How attention score FLOPs are counted.
    #[arg(long, value_enum, default_value_t = AttentionArg::Full)]
    pub attention: AttentionArg,

    /// Activation recomputation (changes hardware FLOPs, not model FLOPs).
    #[arg(long, value_enum, default_value_t = RecomputeArg::None)]
    pub recompute: RecomputeArg,

    /// One JSON object: n_matmul, attention_flops_per_token, flops_per_token, hardware_flops_per_token
    /// (with --compare, a JSON array of the conventions with their terms and gaps).
    #[arg(long)]
    pub json: bool,

    /// Every convention side by side: FLOPs per token, the ratio to mfu's, and the signed terms of the gap.
    #[arg(long)]
    pub compare: bool,

    /// Megatron's vocabulary padding (--make-vocab-size-divisible-by x tensor-parallel size), for the
    /// Megatron conventions' logit term.
    #[arg(long, value_name = "N", default_value_t = 128, value_parser = clap::value_parser!(u64).range(1..))]
    pub megatron_vocab_multiple: u64,
}

#[derive(Serialize)]
struct FlopsJson {
    n_matmul: f64,
    attention_flops_per_token: f64,
    flops_per_token: f64,
    hardware_flops_per_token: f64,
}

pub fn run(args: &FlopsArgs) -> anyhow::Result<ExitCode> {
    if let Some(name) = &args.vision {
        return vision(name, args.json);
    }
    // clap requires both without --vision.
    let (Some(config), Some(seq_len)) = (&args.config, args.seq_len) else {
        anyhow::bail!("--config and --seq-len are needed (or --vision)");
    };
    let config = ModelConfig::from_file(config)?;
    if args.compare {
        return compare(args, &config, seq_len);
    }
    let b = flops_per_token(
        &config,
        seq_len,
        args.attention.into(),
        args.recompute.into(),
    )?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(
            &mut out,
            &FlopsJson {
                n_matmul: b.n_matmul,
                attention_flops_per_token: b.attention_flops_per_token,
                flops_per_token: b.flops_per_token,
                hardware_flops_per_token: b.hardware_flops_per_token,
            },
        )?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mlp = match b.mlp {
        MlpKind::Gated => "gated (3 x h x I)",
        MlpKind::Plain => "plain (2 x h x I)",
    };
    writeln!(out, "model_type                {}", b.model_type)?;
    writeln!(out, "MLP                       {mlp}")?;
    writeln!(
        out,
        "N_matmul                  {} ({:.0})",
        sci(b.n_matmul),
        b.n_matmul
    )?;
    writeln!(
        out,
        "attention FLOPs/token     {} ({} attention, S = {})",
        sci(b.attention_flops_per_token),
        match args.attention {
            AttentionArg::Full => "full",
            AttentionArg::Causal => "causal",
        },
        seq_len
    )?;
    writeln!(
        out,
        "model FLOPs/token         {} = 6 x N_matmul + attention",
        sci(b.flops_per_token)
    )?;
    writeln!(
        out,
        "hardware FLOPs/token      {}{}",
        sci(b.hardware_flops_per_token),
        match args.recompute {
            RecomputeArg::Full => " (x 4/3: full recomputation)",
            RecomputeArg::None => " (no recomputation)",
        }
    )?;
    for note in &b.notes {
        writeln!(out, "note: {note}")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `mfu flops --compare`: a row per convention, its terms beside mfu's.
fn compare(args: &FlopsArgs, config: &ModelConfig, seq_len: u64) -> anyhow::Result<ExitCode> {
    let options = ConventionOptions {
        megatron_vocab_multiple: args.megatron_vocab_multiple,
    };
    let rows = conventions::compare(config, seq_len, &options)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &rows)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let header = [
        "convention",
        "FLOPs/token",
        "vs mfu",
        "the gap, term by term",
        "source",
    ];
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let gap: Vec<String> = Terms::NAMES
                .iter()
                .zip(r.gap.values())
                .filter(|(_, v)| v.abs() > 1e-9 * r.flops_per_token)
                .map(|(name, v)| {
                    format!("{name} {}{}", if v > 0.0 { "+" } else { "-" }, sci(v.abs()))
                })
                .collect();
            vec![
                r.convention.name().to_string(),
                sci(r.flops_per_token),
                format!("{:+.1}%", (r.ratio - 1.0) * 100.0),
                if gap.is_empty() {
                    "-".into()
                } else {
                    gap.join(", ")
                },
                r.source.to_string(),
            ]
        })
        .collect();
    write!(out, "{}", super::aligned_table(&header, &table))?;
    writeln!(
        out,
        "(S = {}; the gap is each term of the convention minus mfu's, FLOPs per token; docs/flops.md)",
        seq_len
    )?;
    Ok(ExitCode::SUCCESS)
}

#[derive(Serialize)]
struct VisionJson<'a> {
    #[serde(flatten)]
    model: &'a VisionModel,
    flops_per_sample: f64,
}

/// `mfu flops --vision [NAME]`: the table, or the models a name gives.
fn vision(name: &str, json: bool) -> anyhow::Result<ExitCode> {
    let models = vision_flops::find(name);
    if models.is_empty() {
        anyhow::bail!(
            "no vision model named '{name}' in the table; `mfu flops --vision` lists them all (docs/flops.md says how to count another)"
        );
    }
    let mut out = std::io::stdout().lock();
    if json {
        let rows: Vec<VisionJson> = models
            .iter()
            .map(|m| VisionJson {
                model: m,
                flops_per_sample: m.flops_per_sample(),
            })
            .collect();
        serde_json::to_writer(&mut out, &rows)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let header = [
        "model",
        "weights",
        "image",
        "params",
        "forward GMACs",
        "--flops-per-sample",
    ];
    let table: Vec<Vec<String>> = models
        .iter()
        .map(|m| {
            vec![
                m.model.clone(),
                m.weights.clone(),
                format!("{0}x{0}", m.image_size),
                format!("{:.1}M", m.params as f64 / 1e6),
                format!("{}", m.gmacs),
                sci(m.flops_per_sample()),
            ]
        })
        .collect();
    write!(out, "{}", super::aligned_table(&header, &table))?;
    writeln!(
        out,
        "(torchvision's multiply-accumulates per image x 6: a multiply and an add, forward and backward; at another image size, scale by the pixels; docs/flops.md)"
    )?;
    Ok(ExitCode::SUCCESS)
}

/// 6607077376 → "6.607e9".
fn sci(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let exp = v.abs().log10().floor() as i32;
    format!("{:.3}e{exp}", v / 10f64.powi(exp))
}
