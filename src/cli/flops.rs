//! `mfu flops`: FLOPs per token from a model configuration.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde::Serialize;

use mfu::flops::{flops_per_token, MlpKind, ModelConfig};

use super::{AttentionArg, RecomputeArg};

/// Count model FLOPs per token from a Hugging Face config.json.
///
/// F = 6 x N_matmul + attention (forward + backward), the PaLM / nanoGPT / torchtitan convention: N_matmul
/// counts the weights of every matrix multiply a token passes through, LM head included, embedding lookup
/// excluded; the attention term is 12 x L x H x d x S (halved with --attention causal; min(S, window) on
/// sliding-window layers). Mixture-of-experts models count active experts only. With --recompute full,
/// hardware FLOPs per token are 4/3 of the model FLOPs.
///
/// Examples:
///   mfu flops --config config.json --seq-len 4096
///   mfu flops --config config.json --seq-len 8192 --attention causal --recompute full --json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct FlopsArgs {
    /// The model's config.json.
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,

    /// Training sequence length in tokens.
    #[arg(long, value_name = "S", value_parser = clap::value_parser!(u64).range(1..))]
    pub seq_len: u64,

    /// How attention score FLOPs are counted.
    #[arg(long, value_enum, default_value_t = AttentionArg::Full)]
    pub attention: AttentionArg,

    /// Activation recomputation (changes hardware FLOPs, not model FLOPs).
    #[arg(long, value_enum, default_value_t = RecomputeArg::None)]
    pub recompute: RecomputeArg,

    /// One JSON object: n_matmul, attention_flops_per_token, flops_per_token, hardware_flops_per_token.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct FlopsJson {
    n_matmul: f64,
    attention_flops_per_token: f64,
    flops_per_token: f64,
    hardware_flops_per_token: f64,
}

pub fn run(args: &FlopsArgs) -> anyhow::Result<ExitCode> {
    let config = ModelConfig::from_file(&args.config)?;
    let b = flops_per_token(
        &config,
        args.seq_len,
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
        args.seq_len
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

/// 6607077376 → "6.607e9".
fn sci(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let exp = v.abs().log10().floor() as i32;
    format!("{:.3}e{exp}", v / 10f64.powi(exp))
}
