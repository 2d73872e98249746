//! Megatron-LM, NeMo and Megatron-DeepSpeed console logs: one row per `iteration N/M | key: value | ...`
//! line, with or without a timestamp before it, and what the run's argument dump says about all of them.
//!
//! Each `key: value` pair becomes a column named in snake case, a unit in parentheses kept as a suffix:
//! `elapsed time per iteration (ms)` → `elapsed_time_per_iteration_ms` (the step time),
//! `consumed tokens` → `consumed_tokens` (cumulative tokens, Megatron-DeepSpeed), `global batch size`,
//! `lm loss`, `throughput per GPU (TFLOP/s/GPU)` → `throughput_per_gpu_tflop_s_gpu`. The iteration and
//! the run's total become `iteration` and `train_iters`.
//!
//! The argument dump Megatron prints at start (`  seq_length ......... 4096` between `arguments` rules)
//! supplies what the run knew and the log lines do not, as facts of the run that a flag overrides:
//! `world_size` (the device count), the precision (`fp8` when set, else `bf16` or `fp16` when true, else
//! fp32), `seq_length`, and FLOPs per token from the model's shape (layers, hidden and FFN sizes, heads,
//! query groups, padded vocabulary, SwiGLU, experts) counted as `mfu flops` counts them. `tokens` per
//! iteration = global batch size × seq_length is a column when the lines carry no token count of their own.

use serde_json::{Map, Value};

use super::{rows_to_frame, ShapedFrame};
use crate::columns::{Field, RunFact};

/// Whether a line is an iteration line: `iteration N/M |` followed by `key: value` pairs with the
/// per-iteration time among them.
pub fn is_iteration_line(line: &str) -> bool {
    iteration_of(line).is_some() && line.contains("elapsed time per iteration")
}

/// The iteration, the run's total and the rest of the line after `iteration N/ M |`.
fn iteration_of(line: &str) -> Option<(i64, i64, &str)> {
    let at = line.find("iteration")?;
    let rest = line[at + "iteration".len()..].trim_start();
    let (numbers, after) = rest.split_once('|')?;
    let (n, m) = numbers.split_once('/')?;
    Some((n.trim().parse().ok()?, m.trim().parse().ok()?, after))
}

/// `elapsed time per iteration (ms)` → `elapsed_time_per_iteration_ms`.
fn column_name(key: &str) -> String {
    let mut name = String::with_capacity(key.len());
    for c in key.trim().chars() {
        if c.is_ascii_alphanumeric() {
            name.push(c.to_ascii_lowercase());
        } else if !name.ends_with('_') && !name.is_empty() {
            name.push('_');
        }
    }
    name.trim_end_matches('_').to_string()
}

/// A logged value: an integer, a number (`1.234567E+01`), or text.
fn value_of(text: &str) -> Value {
    let t = text.trim();
    if let Ok(i) = t.parse::<i64>() {
        return Value::from(i);
    }
    match t.parse::<f64>() {
        Ok(f) if f.is_finite() => {
            serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
        }
        Ok(_) => Value::Null, // nan, inf: not a value
        Err(_) => Value::String(t.to_string()),
    }
}

/// An argument's name, value and line number (from 1).
type Argument = (String, String, usize);

/// The last value given for `name`.
fn argument<'a>(args: &'a [Argument], name: &str) -> Option<&'a Argument> {
    args.iter().rev().find(|(n, _, _)| n == name)
}

/// The `name ....... value` lines of Megatron's argument dump.
fn arguments(text: &str) -> Vec<Argument> {
    let mut args = Vec::new();
    let mut inside = false;
    for (index, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.starts_with("---") && t.contains("arguments") {
            inside = !t.contains("end of arguments");
            continue;
        }
        if !inside {
            continue;
        }
        if let Some((name, value)) = t.split_once(" ..") {
            let value = value.trim_start_matches('.').trim();
            if !name.contains(' ') && !name.is_empty() {
                args.push((name.to_string(), value.to_string(), index + 1));
            }
        }
    }
    args
}

/// The model's shape from the argument dump, as the keys of a Hugging Face config that
/// [`crate::flops`] counts: `None` when the layers, hidden size, heads or vocabulary are not all there.
fn model_config(args: &[Argument]) -> Option<crate::flops::ModelConfig> {
    let arg = |name: &str| argument(args, name).map(|(_, v, _)| v.as_str());
    let int = |name: &str| {
        arg(name)
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|v| *v > 0)
    };
    let mut config = Map::new();
    config.insert("model_type".into(), Value::from("megatron"));
    config.insert("hidden_size".into(), Value::from(int("hidden_size")?));
    config.insert("num_hidden_layers".into(), Value::from(int("num_layers")?));
    config.insert(
        "num_attention_heads".into(),
        Value::from(int("num_attention_heads")?),
    );
    let vocab = int("padded_vocab_size").or_else(|| int("vocab_size"))?;
    config.insert("vocab_size".into(), Value::from(vocab));
    if arg("group_query_attention") == Some("True") {
        if let Some(groups) = int("num_query_groups") {
            config.insert("num_key_value_heads".into(), Value::from(groups));
        }
    }
    for (from, to) in [
        ("ffn_hidden_size", "intermediate_size"),
        ("kv_channels", "head_dim"),
        ("num_experts", "num_experts"),
        ("moe_router_topk", "num_experts_per_tok"),
        ("moe_ffn_hidden_size", "moe_intermediate_size"),
    ] {
        if let Some(v) = int(from) {
            config.insert(to.into(), Value::from(v));
        }
    }
    // Megatron's --swiglu is the gated MLP; without it the MLP is GeLU's two matrices.
    let act = if arg("swiglu") == Some("True") {
        "silu"
    } else {
        "gelu"
    };
    config.insert("hidden_act".into(), Value::from(act));
    crate::flops::ModelConfig::from_json(&Value::Object(config).to_string(), "argument dump").ok()
}

pub fn read(bytes: &[u8]) -> Result<ShapedFrame, String> {
    let text = String::from_utf8_lossy(bytes);
    let args = arguments(&text);
    let arg = |name: &str| argument(&args, name).map(|(_, v, _)| v.as_str());
    let origin = |name: &str| {
        argument(&args, name).map_or_else(
            || "the argument dump".to_string(),
            |(_, _, line)| format!("the argument dump's {name} at line {line}"),
        )
    };
    let mut rows: Vec<Map<String, Value>> = Vec::new();
    for line in text.lines() {
        if !is_iteration_line(line) {
            continue;
        }
        let Some((iteration, total, pairs)) = iteration_of(line) else {
            continue;
        };
        let mut row = Map::new();
        row.insert("iteration".into(), Value::from(iteration));
        row.insert("train_iters".into(), Value::from(total));
        for pair in pairs.split('|') {
            if let Some((key, value)) = pair.split_once(':') {
                let name = column_name(key);
                if !name.is_empty() {
                    row.insert(name, value_of(value));
                }
            }
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return Err("no 'iteration N/M | ... | elapsed time per iteration (ms): ...' line".into());
    }
    let mut notes = vec![format!("{} iteration line(s) read", rows.len())];
    // What the argument dump knows about the whole run: facts, which a column of the lines or a flag
    // overrides.
    let seq_length = arg("seq_length").and_then(|v| v.parse::<i64>().ok());
    let mut facts = Vec::new();
    if let Some(w) = arg("world_size").and_then(|v| v.parse::<f64>().ok()) {
        facts.push(RunFact::number(Field::NumDevices, w, origin("world_size")));
    }
    // Transformer Engine's FP8 (`--fp8-format hybrid|e4m3`) runs the matmuls in fp8 on top of bf16.
    let fp8 = arg("fp8").is_some_and(|v| v != "None" && v != "False");
    let precision = match (fp8, arg("bf16"), arg("fp16")) {
        (true, _, _) => Some(("fp8", "fp8")),
        (_, Some("True"), _) => Some(("bf16", "bf16")),
        (_, _, Some("True")) => Some(("fp16", "fp16")),
        (_, Some(_), Some(_)) => Some(("fp32", "bf16")),
        _ => None,
    };
    if let Some((p, key)) = precision {
        facts.push(RunFact::text(Field::Dtype, p, origin(key)));
    }
    if let Some(s) = seq_length {
        facts.push(RunFact::number(
            Field::SeqLen,
            s as f64,
            origin("seq_length"),
        ));
        if let Some(config) = model_config(&args) {
            let counted = crate::flops::flops_per_token(
                &config,
                s as u64,
                crate::flops::Attention::default(),
                crate::flops::Recompute::None,
            );
            if let Ok(counted) = counted {
                facts.push(RunFact::number(
                    Field::FlopsPerToken,
                    counted.flops_per_token,
                    "the argument dump's model shape and seq_length, counted as mfu flops counts",
                ));
            }
        }
    }
    let counts_tokens = rows[0].keys().any(|k| k.contains("tokens"));
    let mut derived_tokens = false;
    if !counts_tokens {
        for row in &mut rows {
            if let (Some(batch), Some(seq)) = (
                row.get("global_batch_size").and_then(Value::as_i64),
                seq_length,
            ) {
                row.insert("tokens".into(), Value::from(batch * seq));
                derived_tokens = true;
            }
        }
    }
    if derived_tokens {
        notes.push(format!(
            "tokens per iteration = global batch size x seq_length ({})",
            origin("seq_length")
        ));
    }
    Ok(ShapedFrame {
        frame: rows_to_frame(&rows)?,
        notes,
        facts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_values_and_lines() {
        assert_eq!(
            column_name("elapsed time per iteration (ms)"),
            "elapsed_time_per_iteration_ms"
        );
        assert_eq!(
            column_name(" throughput per GPU (TFLOP/s/GPU)"),
            "throughput_per_gpu_tflop_s_gpu"
        );
        assert_eq!(column_name("lm loss"), "lm_loss");
        assert_eq!(value_of(" 1.234567E+01 "), Value::from(12.34567));
        assert_eq!(value_of("   512"), Value::from(512));
        assert_eq!(value_of("nan"), Value::Null);
        assert!(is_iteration_line(" [2024-05-01 10:00:00] iteration       10/  500000 | consumed samples:         5120 | elapsed time per iteration (ms): 1234.5 |"));
        assert!(!is_iteration_line("iteration 10: loss 2.0"));
        assert!(!is_iteration_line(
            "  train_iters ...................................... 500000"
        ));
    }
}
