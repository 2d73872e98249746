//! Every framework's FLOPs-per-token count of one model, side by side, in one vocabulary of terms.
//!
//! The numerator of MFU is where published figures disagree most: for the same model, sequence length
//! and step time the conventions below differ by up to a quarter. Each is written here from its source
//! (the file, function and commit, or the paper's section, named on its arm of [`Convention`]), as terms
//! of forward + backward FLOPs per token that line up across conventions, so that a gap can be read off:
//!
//! | term | what |
//! | --- | --- |
//! | `projections` | the attention's q, k, v and o weights, 6 FLOPs a weight |
//! | `mlp` | the MLP's weights a token passes through (k routed experts and shared ones in a MoE) |
//! | `router` | a mixture of experts' router |
//! | `lm_head` | the output projection, h × V (V padded where the convention pads) |
//! | `input_embedding`, `position_embedding` | lookups, counted as if they were matmuls |
//! | `attention` | QKᵀ and softmax·V: the term with the sequence length (causal halving, windows) |
//! | `softmax` | the softmax's own exp, sum and divide |
//! | `norms_biases` | norm weights and linear biases, counted as weights |
//! | `recompute` | the extra forward of full activation recomputation |
//!
//! mfu's own convention ([`Convention::Mfu`], `mfu flops`) is 6 × the matmul weights (LM head included,
//! the embedding lookup not) + 6 × (d_qk + d_v) × H × S per layer, full attention, windows honoured.

use serde::Serialize;

use crate::flops::{model_dims, FlopsError, MlpKind, ModelConfig, ModelDims};

/// A way of counting model FLOPs per token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Convention {
    /// mfu's own (`src/flops.rs`): 6 × matmul weights + 6 (d_qk + d_v) H S_eff per layer.
    #[default]
    Mfu,
    /// pytorch/torchtitan `torchtitan/models/utils.py` `get_dense_model_nparams_and_flops` at b5bcd76
    /// (2026-08-21): 6 × every parameter but the embedding (tied: the shared matrix once) + 6 L H
    /// (d_qk + d_v) S, no causal halving, no windows.
    Torchtitan,
    /// NVIDIA/Megatron-LM `megatron/training/training.py` `num_floating_point_operations`, since
    /// 8873b55d6a (2025-03-06, MR !2789): 12 per weight-pair with exact GQA projections, the SwiGLU MLP
    /// as 3 matrices, the logit over the padded vocabulary, and the core attention halved for the causal
    /// mask (`seq_length / hidden_size / 2`); for multi-head latent attention its MLA branch (the latent
    /// ranks' norms counted as weights, the core attention over d_qk + d_v, halved).
    Megatron,
    /// Megatron-LM between e116d81ed7 (2024-03-25, the SwiGLU fix) and 8873b55d6a: as `Megatron`, with
    /// the core attention over the full S × S. Multi-head latent attention is counted with its
    /// grouped-query formula (an MLA branch of that period, if any, is not reproduced).
    Megatron2024,
    /// Megatron-LM between 2748e7c7d4 (2023-11-26, `--log-throughput`) and e116d81ed7:
    /// 60 L h² (1 + g/(5n) + s/(5h) + V/(10 L h)): the MLP taken as 4h wide and two matrices whatever
    /// the model has, projections as if H × head_dim = h.
    Megatron2023,
    /// Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using
    /// Megatron-LM", Appendix (eq. 3): 96 B s l h² (1 + s/6h + V/16lh) per iteration, with full
    /// activation recomputation (four passes of every layer).
    Narayanan2021,
    /// Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", §6:
    /// 72 B s l h² (1 + s/6h + V/12lh), model FLOPs without recomputation.
    Korthikanti2022,
    /// karpathy/nanoGPT `model.py` `GPT.estimate_mfu` at 3adf61e (2025-11-12), after PaLM Appendix B:
    /// 6 N + 12 L H Q T with N every parameter but the position embedding (the tied token embedding
    /// counted once, as the LM head) and Q = n_embd / n_head.
    Nanogpt,
    /// karpathy/nanochat `nanochat/gpt.py` `GPT.estimate_flops` at 92d63d4 (2026-07-03): 6 × the
    /// weights of Linear layers + 12 H Q S_eff per layer (windows honoured), Q = n_embd / n_head.
    Nanochat,
    /// Lightning's `measure_flops` (torch's `FlopCounterMode`, `torch/utils/flop_counter.py`) with fused
    /// attention (SDPA flash or memory-efficient): every Linear, and the attention's 2 matmuls forward
    /// and 5 backward (`sdpa_backward_flop_count` recomputes the scores): 2 S H (4 d_qk + 3 d_v) a
    /// layer, over the full S × S.
    LightningFused,
    /// `measure_flops` with eager attention: every Linear, and QKᵀ and AV as bmm (2 forward, 4
    /// backward), over the full S × S.
    LightningEager,
    /// mosaicml/llm-foundry `llmfoundry/models/mpt/modeling_mpt.py` `MPTForCausalLM.flops_per_batch`
    /// at 8c8dd48 (2025-07-21): (2 × active parameters + 4 L d_model S) × 3, every parameter counted
    /// (embedding, norms, biases).
    LlmFoundry,
    /// huggingface/transformers `ModuleUtilsMixin.floating_point_ops` (Transformers 4; `Trainer.
    /// floating_point_ops` in Transformers 5, the same arithmetic): 6 × `num_parameters(
    /// exclude_embeddings=True)` (every nn.Embedding weight left out, so a tied LM head too), no attention
    /// term; the Trainer applies it to every token of the batch, padding included.
    Hf,
    /// AI-Hypercomputer/maxtext `src/maxtext/utils/maxtext_utils.py` `calculate_tflops_training_per_device`
    /// at e591f30 (2026-08-22): q/k/v/o and MLP matmuls, the router, the unembedding, and the attention
    /// halved for the causal mask (sliding layers: S w − w²/2).
    Maxtext,
    /// stanford-crfm/levanter `src/levanter/utils/flop_utils.py` `lm_flops_per_token` at 9263f81
    /// (2025-09-26), × 3 for training as `train_lm.py` does: head_dim = h / H, the output projection
    /// as h × h, full attention with the softmax's 3 S H.
    Levanter,
    /// Chowdhery et al. 2022, "PaLM", Appendix B: 6 N + 12 L H Q T, N every parameter (the shared
    /// input/output embedding once), Q the head size.
    Palm,
    /// Kaplan et al. 2020, "Scaling Laws for Neural Language Models", §2.1: C ≈ 6 N with N the
    /// non-embedding parameters of the layers (no LM head, no attention term).
    Kaplan,
    /// Hoffmann et al. 2022, "Training Compute-Optimal Large Language Models" (Chinchilla), Appendix F:
    /// embeddings, q/k/v as full heads, logits, softmax, attention reduction, output, two MLP matrices
    /// of ffw_size, the final logits; backward = 2 × forward.
    Chinchilla,
}

impl Convention {
    pub const ALL: [Convention; 18] = [
        Convention::Mfu,
        Convention::Torchtitan,
        Convention::Megatron,
        Convention::Megatron2024,
        Convention::Megatron2023,
        Convention::Narayanan2021,
        Convention::Korthikanti2022,
        Convention::Nanogpt,
        Convention::Nanochat,
        Convention::LightningFused,
        Convention::LightningEager,
        Convention::LlmFoundry,
        Convention::Hf,
        Convention::Maxtext,
        Convention::Levanter,
        Convention::Palm,
        Convention::Kaplan,
        Convention::Chinchilla,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Convention::Mfu => "mfu",
            Convention::Torchtitan => "torchtitan",
            Convention::Megatron => "megatron",
            Convention::Megatron2024 => "megatron-2024",
            Convention::Megatron2023 => "megatron-2023",
            Convention::Narayanan2021 => "narayanan-2021",
            Convention::Korthikanti2022 => "korthikanti-2022",
            Convention::Nanogpt => "nanogpt",
            Convention::Nanochat => "nanochat",
            Convention::LightningFused => "lightning-fused",
            Convention::LightningEager => "lightning-eager",
            Convention::LlmFoundry => "llm-foundry",
            Convention::Hf => "hf",
            Convention::Maxtext => "maxtext",
            Convention::Levanter => "levanter",
            Convention::Palm => "palm",
            Convention::Kaplan => "kaplan",
            Convention::Chinchilla => "chinchilla",
        }
    }

    /// Where the convention is written down, in a few words.
    pub fn source(self) -> &'static str {
        match self {
            Convention::Mfu => "mfu flops (src/flops.rs)",
            Convention::Torchtitan => "torchtitan models/utils.py get_dense_model_nparams_and_flops @ b5bcd76",
            Convention::Megatron => "Megatron-LM training.py num_floating_point_operations since 8873b55d6a (2025-03-06)",
            Convention::Megatron2024 => "Megatron-LM num_floating_point_operations, e116d81ed7 (2024-03-25) to 8873b55d6a",
            Convention::Megatron2023 => "Megatron-LM num_floating_point_operations, 2748e7c7d4 (2023-11-26) to e116d81ed7",
            Convention::Narayanan2021 => "Narayanan et al. 2021, Appendix, eq. (3)",
            Convention::Korthikanti2022 => "Korthikanti et al. 2022, Section 6",
            Convention::Nanogpt => "nanoGPT model.py GPT.estimate_mfu @ 3adf61e",
            Convention::Nanochat => "nanochat gpt.py GPT.estimate_flops @ 92d63d4",
            Convention::LightningFused => "torch FlopCounterMode (Lightning measure_flops), SDPA flash/efficient",
            Convention::LightningEager => "torch FlopCounterMode (Lightning measure_flops), eager attention",
            Convention::LlmFoundry => "llm-foundry modeling_mpt.py flops_per_batch @ 8c8dd48",
            Convention::Hf => "transformers floating_point_ops (ModuleUtilsMixin in v4, Trainer in v5)",
            Convention::Maxtext => "maxtext maxtext_utils.py calculate_tflops_training_per_device @ e591f30",
            Convention::Levanter => "levanter flop_utils.py lm_flops_per_token @ 9263f81, x 3",
            Convention::Palm => "PaLM (Chowdhery et al. 2022), Appendix B",
            Convention::Kaplan => "Kaplan et al. 2020, Section 2.1",
            Convention::Chinchilla => "Chinchilla (Hoffmann et al. 2022), Appendix F",
        }
    }
}

/// Serialised by the name `--convention` takes (`megatron-2024`).
impl Serialize for Convention {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl std::fmt::Display for Convention {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Convention {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_lowercase().replace('_', "-");
        Convention::ALL
            .into_iter()
            .find(|c| c.name() == wanted)
            .ok_or_else(|| {
                let names: Vec<&str> = Convention::ALL.iter().map(|c| c.name()).collect();
                format!(
                    "unknown convention '{s}': expected one of {}",
                    names.join(", ")
                )
            })
    }
}

/// What a convention depends on beyond the model's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConventionOptions {
    /// Megatron pads the vocabulary to a multiple of this (`--make-vocab-size-divisible-by`, 128 by
    /// default; times the tensor-parallel size in a run).
    pub megatron_vocab_multiple: u64,
}

impl Default for ConventionOptions {
    fn default() -> Self {
        ConventionOptions {
            megatron_vocab_multiple: 128,
        }
    }
}

/// A convention's FLOPs per token (forward + backward), term by term.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Terms {
    pub projections: f64,
    pub mlp: f64,
    pub router: f64,
    pub lm_head: f64,
    pub input_embedding: f64,
    pub position_embedding: f64,
    pub attention: f64,
    pub softmax: f64,
    pub norms_biases: f64,
    pub recompute: f64,
}

impl Terms {
    pub const NAMES: [&'static str; 10] = [
        "projections",
        "mlp",
        "router",
        "lm_head",
        "input_embedding",
        "position_embedding",
        "attention",
        "softmax",
        "norms_biases",
        "recompute",
    ];

    pub fn values(&self) -> [f64; 10] {
        [
            self.projections,
            self.mlp,
            self.router,
            self.lm_head,
            self.input_embedding,
            self.position_embedding,
            self.attention,
            self.softmax,
            self.norms_biases,
            self.recompute,
        ]
    }

    pub fn total(&self) -> f64 {
        self.values().iter().sum()
    }

    /// `self - other`, term by term.
    pub fn minus(&self, other: &Terms) -> Terms {
        let (a, b) = (self.values(), other.values());
        let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
        Terms {
            projections: d[0],
            mlp: d[1],
            router: d[2],
            lm_head: d[3],
            input_embedding: d[4],
            position_embedding: d[5],
            attention: d[6],
            softmax: d[7],
            norms_biases: d[8],
            recompute: d[9],
        }
    }
}

/// FLOPs per token of `config` at `seq_len` under `convention`.
pub fn count(
    convention: Convention,
    config: &ModelConfig,
    seq_len: u64,
    options: &ConventionOptions,
) -> Result<Terms, FlopsError> {
    let d = model_dims(config, seq_len)?;
    Ok(terms(convention, &d, options))
}

/// [`count`] on a model's shape.
pub fn terms(convention: Convention, d: &ModelDims, options: &ConventionOptions) -> Terms {
    let l = d.layers as f64;
    let (h, heads, s, v) = (d.hidden, d.heads, d.seq_len, d.vocab);
    let q_per_head = h / heads; // n_embd / n_head, as nanoGPT, nanochat and Levanter take it
    let full_attention = 6.0 * (d.d_qk + d.d_v) * heads * s * l;
    let window_attention: f64 = d
        .spans
        .iter()
        .map(|span| 6.0 * (d.d_qk + d.d_v) * heads * span)
        .sum();
    // The embedding matrix a token's lookup reads, beside the LM head (untied models have both).
    let embedding = v * h;
    // 6 FLOPs per weight of every matmul a token passes through, the LM head included: what most
    // conventions start from before their attention term.
    let weights = Terms {
        projections: 6.0 * l * d.attn_weights,
        mlp: 6.0 * d.mlp_weights,
        router: 6.0 * d.router_weights,
        lm_head: 6.0 * h * v,
        ..Terms::default()
    };
    let norms_biases = 6.0 * (d.norm_weights + d.bias_weights);
    match convention {
        Convention::Mfu => Terms {
            attention: window_attention,
            ..weights
        },
        Convention::Torchtitan => Terms {
            attention: full_attention,
            norms_biases,
            ..weights
        },
        Convention::Megatron if d.latent_ranks.is_some() => {
            // The multi-latent-attention branch: the low-rank projections with their norms counted as
            // one more row each (`q_lora_rank x (h + H d_qk + 1)`, `kv_lora_rank x (h + H (d_nope +
            // d_v) + 1)`), and the core attention over (d_qk + d_v), halved for the causal mask.
            let (q_lora, kv_lora) = d.latent_ranks.unwrap_or_default();
            Terms {
                projections: 6.0 * l * (d.attn_weights + q_lora + kv_lora),
                mlp: 6.0 * d.mlp_weights,
                lm_head: 6.0 * h * padded_vocab(v, options.megatron_vocab_multiple),
                attention: full_attention / 2.0,
                ..Terms::default()
            }
        }
        Convention::Megatron | Convention::Megatron2024 => {
            let padded = padded_vocab(v, options.megatron_vocab_multiple);
            // 12 × h × (q + k + v + gate) + q × h per layer; k/v at the query-group width.
            let q = heads * d.d_qk;
            let kv = 2.0 * d.kv_heads * d.d_qk;
            let core = 6.0 * q * s * 2.0 * l; // QKᵀ and (QKᵀ)V over S × S
            Terms {
                projections: 6.0 * l * (h * (q + kv) + q * h),
                mlp: 6.0 * d.mlp_weights,
                lm_head: 6.0 * h * padded,
                attention: if convention == Convention::Megatron {
                    core / 2.0
                } else {
                    core
                },
                ..Terms::default()
            }
        }
        Convention::Megatron2023 => {
            let padded = padded_vocab(v, options.megatron_vocab_multiple);
            // 60 L h² (1 + g/(5n) + s/(5h) + V/(10 L h)) per token, split into its terms.
            Terms {
                projections: 12.0 * l * h * h * (1.0 + d.kv_heads / heads),
                mlp: 48.0 * l * h * h,
                lm_head: 6.0 * h * padded,
                attention: 12.0 * l * h * s,
                ..Terms::default()
            }
        }
        Convention::Narayanan2021 | Convention::Korthikanti2022 => {
            // 72 l h² (1 + s/6h + V/12lh): 24 h² projections, 48 h² MLP (4h, two matrices), 12 h s
            // attention, 6 h V logits; full recomputation re-runs every layer's forward.
            let base = Terms {
                projections: 24.0 * l * h * h,
                mlp: 48.0 * l * h * h,
                lm_head: 6.0 * h * v,
                attention: 12.0 * l * h * s,
                ..Terms::default()
            };
            if convention == Convention::Narayanan2021 {
                Terms {
                    recompute: (base.projections + base.mlp + base.attention) / 3.0,
                    ..base
                }
            } else {
                base
            }
        }
        Convention::Nanogpt => Terms {
            input_embedding: if d.tied { 0.0 } else { 6.0 * embedding },
            attention: 12.0 * l * heads * q_per_head * s,
            norms_biases,
            ..weights
        },
        Convention::Nanochat => Terms {
            attention: d
                .spans
                .iter()
                .map(|span| 12.0 * heads * q_per_head * span)
                .sum(),
            ..weights
        },
        Convention::LightningFused | Convention::LightningEager => {
            let per_layer = if convention == Convention::LightningFused {
                2.0 * s * heads * (4.0 * d.d_qk + 3.0 * d.d_v)
            } else {
                6.0 * s * heads * (d.d_qk + d.d_v)
            };
            Terms {
                attention: per_layer * l,
                ..weights
            }
        }
        Convention::LlmFoundry => Terms {
            input_embedding: if d.tied { 0.0 } else { 6.0 * embedding },
            position_embedding: 6.0 * d.position_embedding,
            attention: 12.0 * l * h * s,
            norms_biases,
            ..weights
        },
        Convention::Hf => Terms {
            // A tied head is the embedding's weight, which num_parameters(exclude_embeddings) leaves out.
            lm_head: if d.tied { 0.0 } else { weights.lm_head },
            norms_biases,
            ..weights
        },
        Convention::Maxtext => Terms {
            // 4 S² H d / 2 a sequence; a window w: 4 (S w − w²/2) H d; x 3 for training.
            attention: d
                .spans
                .iter()
                .map(|&w| {
                    let pairs = if w < s {
                        s * w - w * w / 2.0
                    } else {
                        s * s / 2.0
                    };
                    3.0 * 4.0 * pairs * heads * d.d_qk / s
                })
                .sum(),
            ..weights
        },
        Convention::Levanter => {
            let hd = q_per_head;
            let glu = if d.mlp == MlpKind::Gated { 3.0 } else { 2.0 };
            let mlp = if d.moe_layers > 0 {
                // Levanter's MoE form: (k + shared) experts of intermediate width, on every layer.
                6.0 * d.mlp_weights
            } else {
                3.0 * 2.0 * glu * h * d.intermediate * l
            };
            Terms {
                projections: 3.0
                    * l
                    * (2.0 * h * (heads * hd + 2.0 * d.kv_heads * hd) + 2.0 * h * h),
                mlp,
                router: 6.0 * d.router_weights,
                lm_head: 3.0 * 2.0 * h * v,
                attention: 3.0 * l * (2.0 * s * heads * hd + 2.0 * s * hd * heads),
                softmax: 3.0 * l * 3.0 * s * heads,
                ..Terms::default()
            }
        }
        Convention::Palm => Terms {
            input_embedding: if d.tied { 0.0 } else { 6.0 * embedding },
            position_embedding: 6.0 * d.position_embedding,
            attention: 12.0 * l * heads * d.d_qk * s,
            norms_biases,
            ..weights
        },
        Convention::Kaplan => Terms {
            lm_head: 0.0,
            ..weights
        },
        Convention::Chinchilla => {
            // Forward a token: q, k, v as full heads and the output projection; two MLP matrices of
            // ffw_size; logits and the attention reduction over S; the softmax; embeddings and logits.
            // Training: 3 x forward.
            let kh = heads * d.d_qk; // key_size x num_heads
            Terms {
                projections: 3.0 * l * (2.0 * 3.0 * h * kh + 2.0 * kh * h),
                mlp: 3.0 * l * 2.0 * 2.0 * h * d.intermediate,
                lm_head: 3.0 * 2.0 * h * v,
                input_embedding: 3.0 * 2.0 * h * v,
                attention: 3.0 * l * (2.0 * s * kh + 2.0 * s * kh),
                softmax: 3.0 * l * 3.0 * heads * s,
                ..Terms::default()
            }
        }
    }
}

/// V rounded up to a multiple of `multiple` (Megatron's padded vocabulary).
pub fn padded_vocab(vocab: f64, multiple: u64) -> f64 {
    let m = multiple.max(1) as f64;
    (vocab / m).ceil() * m
}

/// One convention's figure beside mfu's, with the terms behind the gap.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub convention: Convention,
    pub source: &'static str,
    pub flops_per_token: f64,
    /// flops_per_token / mfu's.
    pub ratio: f64,
    pub terms: Terms,
    /// The convention's terms minus mfu's.
    pub gap: Terms,
}

/// Every convention on one model and sequence length.
pub fn compare(
    config: &ModelConfig,
    seq_len: u64,
    options: &ConventionOptions,
) -> Result<Vec<Comparison>, FlopsError> {
    let d = model_dims(config, seq_len)?;
    let own = terms(Convention::Mfu, &d, options);
    Ok(Convention::ALL
        .iter()
        .map(|&c| {
            let t = terms(c, &d, options);
            Comparison {
                convention: c,
                source: c.source(),
                flops_per_token: t.total(),
                ratio: t.total() / own.total(),
                terms: t,
                gap: t.minus(&own),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_vocab_pads() {
        for c in Convention::ALL {
            assert_eq!(c.name().parse::<Convention>(), Ok(c));
        }
        assert_eq!(
            "Megatron_2024".parse::<Convention>(),
            Ok(Convention::Megatron2024)
        );
        assert!("nope".parse::<Convention>().is_err());
        assert_eq!(padded_vocab(32000.0, 128), 32000.0);
        assert_eq!(padded_vocab(50257.0, 128), 50304.0);
    }
}
