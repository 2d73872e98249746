//! Model FLOPs per token from a Hugging Face `config.json`, with one documented convention.
//!
//! F = 6 x N_matmul + attention, forward and backward (PaLM appendix B; nanoGPT; torchtitan):
//! - N_matmul counts the weights of every matrix multiply a token goes through: per layer the attention
//!   projections (q, k, v, o) and the MLP, plus the LM head (h x V, whether or not it is tied to the input
//!   embedding). The embedding lookup is not a matmul and never counts; norms and biases are left out.
//! - The attention term is 6 x (d_qk + d_v) x H x S_eff per layer (QK^T and AV, forward and backward), which
//!   is 12 x H x d x S when d_qk = d_v = d. `causal` halves it. S_eff is min(S, window) on sliding-window
//!   layers.
//! - Mixture of experts counts active parameters only: k routed experts, the router, and shared experts.
//! - With full activation recomputation the hardware executes one more forward: hardware FLOPs = 4/3 x F.

use serde_json::Value;

/// How attention FLOPs are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Attention {
    /// Every query attends to every key (PaLM's and nanoGPT's count).
    #[default]
    Full,
    /// Only the causal half of the score matrix is counted.
    Causal,
}

/// Activation recomputation, which changes hardware FLOPs but not model FLOPs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Recompute {
    #[default]
    None,
    Full,
}

/// The MLP shape of a layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MlpKind {
    /// gate, up and down projections: 3 x h x I.
    Gated,
    /// up and down projections: 2 x h x I.
    Plain,
}

/// Errors reading a model configuration.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FlopsError {
    #[error("{origin}: not JSON: {message}")]
    Json { origin: String, message: String },
    #[error("{origin}: missing {missing} (model_type '{model_type}'); add them to the config or give flops_per_token directly")]
    Missing {
        origin: String,
        model_type: String,
        missing: String,
    },
    #[error("{origin}: field '{field}' must be a positive integer, found {found}")]
    Invalid {
        origin: String,
        field: String,
        found: String,
    },
    #[error("sequence length must be positive")]
    SeqLen,
}

/// The result of counting, with its parts.
#[derive(Debug, Clone, PartialEq)]
pub struct FlopsBreakdown {
    pub model_type: String,
    pub mlp: MlpKind,
    /// Weights in matrix multiplies that one token passes through (active parameters for MoE).
    pub n_matmul: f64,
    /// Attention score and value FLOPs per token, forward and backward.
    pub attention_flops_per_token: f64,
    /// 6 x n_matmul + attention.
    pub flops_per_token: f64,
    /// flops_per_token, x 4/3 with full recomputation.
    pub hardware_flops_per_token: f64,
    /// Layers counted with a sliding window smaller than the sequence.
    pub sliding_layers: usize,
    /// What was counted, in words, for `mfu flops` to show.
    pub notes: Vec<String>,
}

const GATED: &[&str] = &[
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen2_moe",
    "qwen3",
    "qwen3_moe",
    "gemma",
    "gemma2",
    "gemma3_text",
    "phi3",
    "olmo",
    "olmo2",
    "olmoe",
    "deepseek_v2",
    "deepseek_v3",
    "granite",
    "cohere",
    "internlm2",
    "yi",
    "baichuan",
    "starcoder2_gated",
];
const PLAIN: &[&str] = &[
    "gpt2",
    "gpt_neox",
    "gptj",
    "opt",
    "phi",
    "gpt_bigcode",
    "bloom",
    "falcon",
    "starcoder2",
    "bert",
    "roberta",
    "t5",
    "mpt",
];

/// A model configuration, with aliases across families resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    origin: String,
    root: Value,
}

impl ModelConfig {
    /// Parses `config.json` text; `origin` names it in errors. A multimodal config's `text_config` is used
    /// when the top level has no layer count.
    pub fn from_json(text: &str, origin: &str) -> Result<ModelConfig, FlopsError> {
        let mut root: Value = serde_json::from_str(text).map_err(|e| FlopsError::Json {
            origin: origin.to_string(),
            message: e.to_string(),
        })?;
        let has_layers = LAYERS.iter().any(|k| root.get(*k).is_some());
        if !has_layers {
            if let Some(text_config) = root.get("text_config").cloned() {
                let model_type = root.get("model_type").cloned();
                root = text_config;
                if root.get("model_type").is_none() {
                    if let (Some(obj), Some(mt)) = (root.as_object_mut(), model_type) {
                        obj.insert("model_type".into(), mt);
                    }
                }
            }
        }
        Ok(ModelConfig {
            origin: origin.to_string(),
            root,
        })
    }

    pub fn from_file(path: &std::path::Path) -> Result<ModelConfig, FlopsError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| FlopsError::Json {
            origin: origin.clone(),
            message: e.to_string(),
        })?;
        ModelConfig::from_json(&text, &origin)
    }

    pub fn model_type(&self) -> String {
        self.root
            .get("model_type")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_string()
    }

    fn raw(&self, keys: &[&str]) -> Option<&Value> {
        keys.iter()
            .filter_map(|k| self.root.get(*k))
            .find(|v| !v.is_null())
    }

    /// A positive integer under the first of `keys` present; `Ok(None)` when none is present.
    fn int(&self, keys: &[&str]) -> Result<Option<u64>, FlopsError> {
        let Some(v) = self.raw(keys) else {
            return Ok(None);
        };
        match v.as_u64().or_else(|| {
            v.as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                .map(|f| f as u64)
        }) {
            Some(n) if n > 0 => Ok(Some(n)),
            Some(0) => Ok(Some(0)),
            _ => Err(FlopsError::Invalid {
                origin: self.origin.clone(),
                field: keys
                    .iter()
                    .find(|k| self.root.get(**k).is_some())
                    .unwrap_or(&keys[0])
                    .to_string(),
                found: v.to_string(),
            }),
        }
    }

    fn mlp_kind(&self) -> MlpKind {
        let mt = self.model_type();
        if GATED.contains(&mt.as_str()) {
            return MlpKind::Gated;
        }
        if PLAIN.contains(&mt.as_str()) {
            return MlpKind::Plain;
        }
        // Unknown family: the activation tells. Gated units (SwiGLU, GeGLU) are what modern configs mean by
        // silu; gelu/relu without a gate are the classic two-matrix MLP.
        let act = self
            .raw(&["hidden_act", "hidden_activation", "activation_function"])
            .and_then(Value::as_str)
            .unwrap_or("silu")
            .to_ascii_lowercase();
        if act.contains("silu") || act.contains("swish") || act.contains("glu") {
            MlpKind::Gated
        } else {
            MlpKind::Plain
        }
    }
}

const HIDDEN: &[&str] = &["hidden_size", "n_embd", "d_model", "dim", "model_dim"];
const LAYERS: &[&str] = &["num_hidden_layers", "n_layer", "num_layers", "n_layers"];
const HEADS: &[&str] = &["num_attention_heads", "n_head", "num_heads", "n_heads"];
const KV_HEADS: &[&str] = &[
    "num_key_value_heads",
    "num_kv_heads",
    "n_kv_heads",
    "multi_query_group_num",
];
const INTERMEDIATE: &[&str] = &["intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size"];
const VOCAB: &[&str] = &["vocab_size", "padded_vocab_size", "n_vocab"];
const HEAD_DIM: &[&str] = &["head_dim", "kv_channels"];

/// A model's shape as the FLOPs conventions need it: sizes, the weights a token passes through, and
/// each layer's attention span at a sequence length (see [`model_dims`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelDims {
    pub model_type: String,
    pub mlp: MlpKind,
    pub hidden: f64,
    pub layers: u64,
    pub heads: f64,
    pub kv_heads: f64,
    /// Query-key and value head sizes (they differ in multi-head latent attention).
    pub d_qk: f64,
    pub d_v: f64,
    pub intermediate: f64,
    pub vocab: f64,
    /// Whether the LM head shares the input embedding's weights.
    pub tied: bool,
    /// q, k, v and o weights of one layer.
    pub attn_weights: f64,
    /// Multi-head latent attention's ranks (`q_lora_rank`, 0 without one, and `kv_lora_rank`), for the
    /// conventions that count its norms; `None` for multi-head and grouped-query attention.
    pub latent_ranks: Option<(f64, f64)>,
    /// The MLP weights a token passes through, all layers (dense MLPs, k routed experts, shared experts).
    pub mlp_weights: f64,
    /// Router weights, all layers.
    pub router_weights: f64,
    /// Layers with a mixture of experts.
    pub moe_layers: u64,
    /// The sequence length, and each layer's attention span (the window where it is shorter).
    pub seq_len: f64,
    pub spans: Vec<f64>,
    pub window: Option<u64>,
    /// A learned absolute position embedding's weights (GPT-2's wpe), 0 for rotary and relative ones.
    pub position_embedding: f64,
    /// Norm weights (and LayerNorm biases), and the biases of linear layers, all layers.
    pub norm_weights: f64,
    pub bias_weights: f64,
    pub notes: Vec<String>,
}

/// Families whose linear layers carry biases by default (GPT-2's Conv1D, GPT-NeoX, OPT, ...), whose
/// norms are LayerNorms with a bias, and whose position embedding is learned.
const BIASED: &[&str] = &[
    "gpt2",
    "gpt_neox",
    "gptj",
    "opt",
    "phi",
    "gpt_bigcode",
    "bloom",
    "starcoder2",
    "bert",
    "roberta",
];
const LEARNED_POSITIONS: &[&str] = &["gpt2", "opt", "gpt_bigcode", "bert", "roberta"];
/// Families whose configs tie the LM head to the input embedding unless they say otherwise.
const TIED_BY_DEFAULT: &[&str] = &[
    "gpt2",
    "gemma",
    "gemma2",
    "gemma3_text",
    "bert",
    "roberta",
    "t5",
    "opt",
    "gpt_bigcode",
    "phi",
];

/// The shape of `config` at sequence length `seq_len`.
pub fn model_dims(config: &ModelConfig, seq_len: u64) -> Result<ModelDims, FlopsError> {
    if seq_len == 0 {
        return Err(FlopsError::SeqLen);
    }
    let mut missing = Vec::new();
    let mut need = |keys: &[&str]| -> Result<u64, FlopsError> {
        match config.int(keys)? {
            Some(v) if v > 0 => Ok(v),
            _ => {
                missing.push(keys.join("|"));
                Ok(1)
            }
        }
    };
    let h = need(HIDDEN)? as f64;
    let layers = need(LAYERS)?;
    let heads = need(HEADS)? as f64;
    let vocab = need(VOCAB)? as f64;
    if !missing.is_empty() {
        return Err(FlopsError::Missing {
            origin: config.origin.clone(),
            model_type: config.model_type(),
            missing: missing.join(", "),
        });
    }
    let kv_heads = config
        .int(KV_HEADS)?
        .filter(|v| *v > 0)
        .map_or(heads, |v| v as f64);
    let head_dim = config
        .int(HEAD_DIM)?
        .filter(|v| *v > 0)
        .map_or(h / heads, |v| v as f64);
    let mlp = config.mlp_kind();
    let intermediate = config
        .int(INTERMEDIATE)?
        .filter(|v| *v > 0)
        .map_or(4.0 * h, |v| v as f64);
    let mut notes = Vec::new();

    let AttentionShape {
        weights: attn_params,
        d_qk,
        d_v,
        latent_ranks,
    } = attention_projections(config, h, heads, kv_heads, head_dim, &mut notes)?;
    let mlp_factor = match mlp {
        MlpKind::Gated => 3.0,
        MlpKind::Plain => 2.0,
    };
    let dense_mlp = mlp_factor * h * intermediate;

    let moe_mlp = routed_mlp(config, h, intermediate, &mut notes)?;
    let first_dense = config.int(&["first_k_dense_replace"])?.unwrap_or(0);
    let sparse_step = config.int(&["decoder_sparse_step"])?.unwrap_or(1).max(1);
    let mlp_only: Vec<u64> = config
        .root
        .get("mlp_only_layers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    let is_moe_layer = |i: u64| {
        moe_mlp.is_some()
            && i >= first_dense
            && !mlp_only.contains(&i)
            && (i + 1).is_multiple_of(sparse_step)
    };

    // Sliding windows.
    let window = config.int(&["sliding_window"])?.filter(|v| *v > 0);
    let layer_types: Option<Vec<String>> = config
        .root
        .get("layer_types")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|v| v.as_str().unwrap_or("").to_string())
                .collect()
        });
    let use_sliding = config
        .root
        .get("use_sliding_window")
        .and_then(Value::as_bool);
    let max_window_layers = config.int(&["max_window_layers"])?;
    let model_type = config.model_type();
    let is_sliding = |i: u64| -> bool {
        if window.is_none() {
            return false;
        }
        if let Some(types) = &layer_types {
            return types.get(i as usize).is_some_and(|t| t.contains("sliding"));
        }
        match use_sliding {
            // Qwen2-style: the first max_window_layers layers keep full attention.
            Some(false) => false,
            Some(true) => max_window_layers.is_none_or(|m| i >= m),
            None => match model_type.as_str() {
                // Gemma 2 alternates local and global layers, starting with a local one.
                "gemma2" => i.is_multiple_of(2),
                // Mistral v0.1 applies its window on every layer.
                "mistral" | "mixtral" => true,
                _ => false,
            },
        }
    };

    let mut mlp_weights = 0.0;
    let mut router_weights = 0.0;
    let mut moe_layers = 0;
    let mut spans = Vec::with_capacity(layers as usize);
    let mut sliding_layers = 0;
    for i in 0..layers {
        match moe_mlp {
            Some((experts, router)) if is_moe_layer(i) => {
                mlp_weights += experts;
                router_weights += router;
                moe_layers += 1;
            }
            _ => mlp_weights += dense_mlp,
        }
        spans.push(match window {
            Some(w) if is_sliding(i) && w < seq_len => {
                sliding_layers += 1;
                w
            }
            _ => seq_len,
        } as f64);
    }
    if sliding_layers > 0 {
        notes.push(format!(
            "{sliding_layers} of {layers} layers attend over a window of {} tokens",
            window.unwrap_or(0)
        ));
    }
    // Weights that are not matmuls: norms, and the biases some families' linear layers carry.
    let biased = BIASED.contains(&model_type.as_str());
    let flag = |key: &str| config.root.get(key).and_then(Value::as_bool);
    let norm_each = if biased { 2.0 * h } else { h };
    let norm_weights = norm_each * (2 * layers + 1) as f64;
    let q_width = heads * d_qk;
    let attention_biases = match (
        flag("attention_bias").or(flag("bias")).or(flag("use_bias")),
        model_type.as_str(),
    ) {
        (Some(true), _) => q_width + 2.0 * kv_heads * d_qk + h,
        (Some(false), _) => 0.0,
        (None, "qwen2" | "qwen2_moe") => q_width + 2.0 * kv_heads * d_qk,
        (None, _) if biased => q_width + 2.0 * kv_heads * d_qk + h,
        (None, _) => 0.0,
    };
    let mlp_biases = match flag("mlp_bias").or(flag("bias")).or(flag("use_bias")) {
        Some(true) => (mlp_factor - 1.0) * intermediate + h,
        Some(false) => 0.0,
        None if biased => (mlp_factor - 1.0) * intermediate + h,
        None => 0.0,
    };
    let bias_weights = (attention_biases + mlp_biases) * layers as f64;
    let position_embedding = if LEARNED_POSITIONS.contains(&model_type.as_str()) {
        config
            .int(&["n_positions", "max_position_embeddings"])?
            .unwrap_or(0) as f64
            * h
    } else {
        0.0
    };
    let tied = flag("tie_word_embeddings")
        .unwrap_or_else(|| TIED_BY_DEFAULT.contains(&model_type.as_str()));
    Ok(ModelDims {
        model_type,
        mlp,
        hidden: h,
        layers,
        heads,
        kv_heads,
        d_qk,
        d_v,
        intermediate,
        vocab,
        tied,
        attn_weights: attn_params,
        latent_ranks,
        mlp_weights,
        router_weights,
        moe_layers,
        seq_len: seq_len as f64,
        spans,
        window,
        position_embedding,
        norm_weights,
        bias_weights,
        notes,
    })
}

/// Counts FLOPs per token for sequence length `seq_len`.
pub fn flops_per_token(
    config: &ModelConfig,
    seq_len: u64,
    attention: Attention,
    recompute: Recompute,
) -> Result<FlopsBreakdown, FlopsError> {
    let d = model_dims(config, seq_len)?;
    let attn_factor = match attention {
        Attention::Full => 1.0,
        Attention::Causal => 0.5,
    };
    let n_matmul =
        d.vocab * d.hidden + d.layers as f64 * d.attn_weights + d.mlp_weights + d.router_weights;
    let attention_flops: f64 = d
        .spans
        .iter()
        .map(|span| 6.0 * (d.d_qk + d.d_v) * d.heads * span * attn_factor)
        .sum();
    let flops = 6.0 * n_matmul + attention_flops;
    let hardware = match recompute {
        Recompute::None => flops,
        Recompute::Full => flops * 4.0 / 3.0,
    };
    let sliding_layers = d.spans.iter().filter(|s| **s < d.seq_len).count();
    Ok(FlopsBreakdown {
        model_type: d.model_type,
        mlp: d.mlp,
        n_matmul,
        attention_flops_per_token: attention_flops,
        flops_per_token: flops,
        hardware_flops_per_token: hardware,
        sliding_layers,
        notes: d.notes,
    })
}

/// One layer's attention as the counts need it.
struct AttentionShape {
    /// q, k, v and o weights (multi-head latent attention's low-rank factors where the config has
    /// `kv_lora_rank`).
    weights: f64,
    /// The query-key and value head sizes of the attention term.
    d_qk: f64,
    d_v: f64,
    /// Multi-head latent attention's (q, kv) ranks.
    latent_ranks: Option<(f64, f64)>,
}

/// The attention's shape from the config.
fn attention_projections(
    config: &ModelConfig,
    h: f64,
    heads: f64,
    kv_heads: f64,
    head_dim: f64,
    notes: &mut Vec<String>,
) -> Result<AttentionShape, FlopsError> {
    let kv_lora = config.int(&["kv_lora_rank"])?.filter(|v| *v > 0);
    Ok(match kv_lora {
        Some(kv_lora) => {
            let kv_lora = kv_lora as f64;
            let nope = config.int(&["qk_nope_head_dim"])?.unwrap_or(0) as f64;
            let rope = config.int(&["qk_rope_head_dim"])?.unwrap_or(0) as f64;
            let v_dim = config.int(&["v_head_dim"])?.map_or(head_dim, |v| v as f64);
            let qk = nope + rope;
            let q_lora = config.int(&["q_lora_rank"])?.filter(|v| *v > 0);
            let q = match q_lora {
                Some(r) => h * r as f64 + r as f64 * heads * qk,
                None => h * heads * qk,
            };
            let kv = h * (kv_lora + rope) + kv_lora * heads * (nope + v_dim);
            let o = heads * v_dim * h;
            notes.push(format!(
                "multi-head latent attention: q {} + kv_a h x (kv_lora_rank + qk_rope_head_dim) + kv_b kv_lora_rank x H x (qk_nope_head_dim + v_head_dim) + o H x v_head_dim x h; attention term with d_qk = {qk}, d_v = {v_dim}",
                if config.int(&["q_lora_rank"])?.filter(|v| *v > 0).is_some() {
                    "h x q_lora_rank + q_lora_rank x H x d_qk"
                } else {
                    "h x H x d_qk"
                }
            ));
            AttentionShape {
                weights: q + kv + o,
                d_qk: qk,
                d_v: v_dim,
                latent_ranks: Some((q_lora.map_or(0.0, |r| r as f64), kv_lora)),
            }
        }
        None => AttentionShape {
            weights: h * heads * head_dim + 2.0 * h * kv_heads * head_dim + heads * head_dim * h,
            d_qk: head_dim,
            d_v: head_dim,
            latent_ranks: None,
        },
    })
}

/// The MLP weights a token passes through in a mixture-of-experts layer (k routed experts and any shared
/// experts) and the router's, or `None` for a dense model.
fn routed_mlp(
    config: &ModelConfig,
    h: f64,
    intermediate: f64,
    notes: &mut Vec<String>,
) -> Result<Option<(f64, f64)>, FlopsError> {
    let experts = config
        .int(&["num_local_experts", "num_experts", "n_routed_experts"])?
        .filter(|v| *v > 0);
    Ok(match experts {
        Some(e) => {
            let k = config
                .int(&["num_experts_per_tok", "moe_topk", "top_k"])?
                .unwrap_or(1) as f64;
            let expert_i = config
                .int(&["moe_intermediate_size"])?
                .filter(|v| *v > 0)
                .map_or(intermediate, |v| v as f64);
            let shared_i = match (
                config
                    .int(&["shared_expert_intermediate_size"])?
                    .filter(|v| *v > 0),
                config
                    .int(&["n_shared_experts", "num_shared_experts"])?
                    .filter(|v| *v > 0),
            ) {
                (Some(i), _) => i as f64,
                (None, Some(n)) => n as f64 * expert_i,
                (None, None) => 0.0,
            };
            notes.push(format!(
                "mixture of experts: {k} of {e} experts of {expert_i} x 3 x h, router h x {e}{}",
                if shared_i > 0.0 {
                    format!(", shared experts 3 x h x {shared_i}")
                } else {
                    String::new()
                }
            ));
            Some((k * 3.0 * h * expert_i + 3.0 * h * shared_i, h * e as f64))
        }
        None => None,
    })
}
