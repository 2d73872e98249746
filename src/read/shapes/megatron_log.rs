//! Megatron-LM, NeMo and Megatron-DeepSpeed console logs: one row per `iteration N/M | key: value | ...`
//! line, with or without a timestamp before it, and what the run's argument dump says about all of them.
//!
//! Each `key: value` pair becomes a column named in snake case, a unit in parentheses kept as a suffix:
//! `elapsed time per iteration (ms)` → `elapsed_time_per_iteration_ms` (the step time),
//! `consumed tokens` → `consumed_tokens` (cumulative tokens, Megatron-DeepSpeed), `global batch size`,
//! `lm loss`, `throughput per GPU (TFLOP/s/GPU)` → `throughput_per_gpu_tflop_s_gpu`. The iteration and
//! the run's total become `iteration` and `train_iters`. Megatron-Bridge's `Step Time : ... GPU
//! utilization: 59892.5MODEL_TFLOP/s/GPU` line, printed before each iteration line, gives that row's
//! `model_tflop_s_gpu` (its TFLOP/s of one GPU, which `mfu audit` reads).
//!
//! The argument dump Megatron prints at start (`  seq_length ......... 4096` between `arguments` rules)
//! supplies what the run knew and the log lines do not, as facts of the run that a flag overrides:
//! `world_size` (the device count), the precision (`fp8` when set, else `bf16` or `fp16` when true, else
//! fp32), `seq_length`, and FLOPs per token from the model's shape (layers, hidden and FFN sizes, heads,
//! query groups, padded vocabulary, SwiGLU, experts) counted as `mfu flops` counts them. `tokens` per
//! iteration = global batch size × seq_length is a column when the lines carry no token count of their own;
//! without a `seq_length`, `tokens/sec/gpu` × world size × the iteration's time. `using world size: N,
//! data-parallel size: D, ...` gives the device count when the dump does not. An FP8 run (`fp8 hybrid`) is
//! judged against the fp8 peak, and `-v` says so.
//!
//! Lines may carry what a launcher puts before each line of output (`srun --label`'s `0: `, torchrun's
//! `[default0]:`): it is stripped before anything is read.

use serde_json::{Map, Value};

use super::{rows_to_frame, ShapedFrame};
use crate::columns::{Field, RunFact};

/// A line without what launchers put before each line of a rank's output: `srun --label`'s task number
/// (`0: `) and torchrun's `--tee` rank tag (`[default0]:`, `[rank0]:`), in any order and number.
pub fn strip_launcher_prefix(line: &str) -> &str {
    let mut rest = line.trim_start();
    loop {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && rest[digits..].starts_with(": ") {
            rest = rest[digits + 1..].trim_start();
            continue;
        }
        if let Some(after) = rest.strip_prefix('[') {
            let tag = after
                .strip_prefix("default")
                .or_else(|| after.strip_prefix("rank"));
            if let Some(tag) = tag {
                let digits = tag.bytes().take_while(u8::is_ascii_digit).count();
                if digits > 0 && tag[digits..].starts_with("]:") {
                    rest = tag[digits + 2..].trim_start();
                    continue;
                }
            }
        }
        return rest;
    }
}

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
        let t = strip_launcher_prefix(line).trim();
        if t.starts_with("---") && t.contains("arguments") {
            inside = !t.contains("end of arguments");
            continue;
        }
        if !inside {
            continue;
        }
        if let Some((name, value)) = t.split_once(" ..") {
            let value = value.trim_start_matches('.').trim();
            // GPT-NeoX pads each value with dots and says whether the run set it:
            // `seq_length ...... 2048........updated`, `fp16 ...... None........default`.
            let value = match value
                .strip_suffix("updated")
                .or_else(|| value.strip_suffix("default"))
            {
                Some(v) if v.ends_with(['.', '}', ']', '\'']) => v.trim_end_matches('.').trim(),
                _ => value,
            };
            if !name.contains(' ') && !name.is_empty() {
                args.push((name.to_string(), value.to_string(), index + 1));
            }
        }
    }
    args
}

/// `using world size: 64, data-parallel size: 8, ...`, which Megatron prints before its argument dump:
/// the world size, the data-parallel size and the line number (from 1).
fn parallel_sizes(text: &str) -> Option<(f64, Option<f64>, usize)> {
    text.lines().enumerate().find_map(|(index, line)| {
        let t = strip_launcher_prefix(line);
        let rest = t.strip_prefix("using world size:")?;
        let number = |s: &str| {
            s.trim()
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|n| n.parse::<f64>().ok())
        };
        let world = number(rest)?;
        let data = rest
            .split_once("data-parallel size:")
            .and_then(|(_, r)| number(r));
        Some((world, data, index + 1))
    })
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

/// The column of Megatron-Bridge's `GPU utilization` figure (TFLOP/s of one GPU).
pub const BRIDGE_TFLOPS: &str = "model_tflop_s_gpu";

/// Megatron-Bridge's TFLOP/s of one GPU from its `Step Time : ... GPU utilization: 59892.5MODEL_TFLOP/s/GPU`
/// line (`TFLOP/s/GPU` before 2025-11-07).
fn bridge_utilization(line: &str) -> Option<f64> {
    let rest = line.split_once("GPU utilization:")?.1.trim_start();
    let number = rest
        .strip_suffix("MODEL_TFLOP/s/GPU")
        .or_else(|| rest.strip_suffix("TFLOP/s/GPU"))?;
    number.trim().parse().ok().filter(|v: &f64| v.is_finite())
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
    // Megatron-Bridge prints `Step Time : 4.65s GPU utilization: 59892.5MODEL_TFLOP/s/GPU` before each
    // iteration line: its TFLOP/s of one GPU, a column of the row that follows.
    let mut bridge_tflops: Option<f64> = None;
    for line in text.lines() {
        if let Some(tflops) = bridge_utilization(line) {
            bridge_tflops = Some(tflops);
            continue;
        }
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
        if let Some(tflops) = bridge_tflops.take() {
            row.insert(BRIDGE_TFLOPS.into(), Value::from(tflops));
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
    let sizes = parallel_sizes(&text);
    let world = match arg("world_size").and_then(|v| v.parse::<f64>().ok()) {
        Some(w) => Some((w, origin("world_size"))),
        None => sizes.map(|(w, _, line)| (w, format!("'using world size' at line {line}"))),
    };
    if let Some((w, from)) = &world {
        facts.push(RunFact::number(Field::NumDevices, *w, from.clone()));
    }
    if let Some((w, Some(d), line)) = sizes {
        if d < w {
            notes.push(format!(
                "world size {w}, data-parallel size {d} (line {line}): every device shares the FLOPs, so MFU is over all {w}; the tokens are the global batch's, counted once"
            ));
        }
    }
    // Transformer Engine's FP8 (`--fp8-format hybrid|e4m3`) runs the matmuls in fp8 on top of bf16.
    let fp8 = arg("fp8").is_some_and(|v| v != "None" && v != "False");
    // A flag is on as `True`, or as GPT-NeoX's DeepSpeed section `{'enabled': True}`.
    let on = |v: &str| v == "True" || v.contains("'enabled': True");
    // GPT-NeoX names the precision outright (`precision ... bfloat16`).
    let named = arg("precision").and_then(crate::read::console::facts::dtype_word);
    let precision = match (fp8, named, arg("bf16"), arg("fp16")) {
        (true, _, _, _) => Some(("fp8".to_string(), "fp8")),
        (_, Some(d), _, _) => Some((d, "precision")),
        (_, _, Some(b), _) if on(b) => Some(("bf16".to_string(), "bf16")),
        (_, _, _, Some(f)) if on(f) => Some(("fp16".to_string(), "fp16")),
        (_, _, Some(_), Some(_)) => Some(("fp32".to_string(), "bf16")),
        _ => None,
    };
    if let Some((p, key)) = precision {
        facts.push(RunFact::text(Field::Dtype, &p, origin(key)));
        if fp8 {
            notes.push(format!(
                "the run trains in FP8 (fp8 {} at {}): MFU is against the device's dense fp8 peak; give --dtype bf16 to judge it against bf16",
                arg("fp8").unwrap_or(""),
                origin("fp8")
            ));
        }
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
    // A count of tokens (Megatron-DeepSpeed's `consumed tokens`), not a rate such as `tokens/sec/gpu`.
    let counts_tokens = rows.iter().any(|row| {
        row.iter()
            .any(|(k, v)| (k == "tokens" || k.ends_with("_tokens")) && v.is_number())
    });
    let (mut from_batch, mut from_rate) = (0usize, 0usize);
    // GPT-NeoX's lines carry no batch size; its dump's `train_batch_size` is the global batch (micro
    // batch x accumulation x data-parallel size).
    let dump_batch = arg("train_batch_size")
        .and_then(|v| v.parse::<i64>().ok())
        .filter(|b| *b > 0);
    let mut batch_from_dump = false;
    if !counts_tokens {
        let world = world.as_ref().map(|(w, _)| *w);
        for row in &mut rows {
            let line_batch = row.get("global_batch_size").and_then(Value::as_i64);
            batch_from_dump |= line_batch.is_none() && dump_batch.is_some();
            let batch = line_batch.or(dump_batch);
            let rate = row.get("tokens_sec_gpu").and_then(Value::as_f64);
            let seconds = row
                .get("elapsed_time_per_iteration_ms")
                .and_then(Value::as_f64)
                .map(|ms| ms / 1e3)
                .or_else(|| {
                    row.get("elapsed_time_per_iteration_s")
                        .and_then(Value::as_f64)
                });
            if let (Some(batch), Some(seq)) = (batch, seq_length) {
                row.insert("tokens".into(), Value::from(batch * seq));
                from_batch += 1;
            } else if let (Some(rate), Some(world), Some(seconds)) = (rate, world, seconds) {
                if let Some(t) = serde_json::Number::from_f64(rate * world * seconds) {
                    row.insert("tokens".into(), Value::Number(t));
                    from_rate += 1;
                }
            }
        }
    }
    if from_batch > 0 {
        let batch = if batch_from_dump {
            format!("the global batch ({})", origin("train_batch_size"))
        } else {
            "global batch size".to_string()
        };
        notes.push(format!(
            "tokens per iteration = {batch} x seq_length ({}) on {from_batch} line(s)",
            origin("seq_length")
        ));
    }
    if from_rate > 0 {
        notes.push(format!(
            "tokens per iteration = tokens/sec/GPU x world size x elapsed time per iteration on {from_rate} line(s) (no seq_length to count the global batch with; the rate is rounded to 0.1)"
        ));
    }
    Ok(ShapedFrame {
        frame: rows_to_frame(&rows)?,
        notes,
        facts,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launcher_prefixes() {
        assert_eq!(
            strip_launcher_prefix("0: [default0]:  seq_length .. 4"),
            "seq_length .. 4"
        );
        assert_eq!(
            strip_launcher_prefix("[rank3]: using world size: 4"),
            "using world size: 4"
        );
        assert_eq!(
            strip_launcher_prefix("12:  [2024-06-05 14:02:11] iteration"),
            "[2024-06-05 14:02:11] iteration"
        );
        // A time of day is not a task number; a tag that is not a rank's stays.
        assert_eq!(
            strip_launcher_prefix("14:02:11 iteration"),
            "14:02:11 iteration"
        );
        assert_eq!(strip_launcher_prefix("[defaultx]: a"), "[defaultx]: a");
        let text =
            "0: [default0]:using world size: 8, data-parallel size: 2, context-parallel size: 1\n";
        assert_eq!(parallel_sizes(text), Some((8.0, Some(2.0), 1)));
    }

    #[test]
    fn bridge_utilization_lines() {
        assert_eq!(
            bridge_utilization("Step Time : 4.65s GPU utilization: 59892.5TFLOP/s/GPU"),
            Some(59892.5)
        );
        assert_eq!(
            bridge_utilization(
                "[rank0]: Step Time : 1.20s GPU utilization: 412.3MODEL_TFLOP/s/GPU"
            ),
            Some(412.3)
        );
        assert_eq!(bridge_utilization("GPU utilization: high"), None);
        assert_eq!(bridge_utilization("iteration 1/2 | lm loss: 1.0 |"), None);
    }

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
