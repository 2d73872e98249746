//! The vocabulary of training logs, read once from `frameworks.toml` (embedded): what each key of a
//! training line or a printed configuration means, and what is particular to each framework.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::Deserialize;

/// What a key of a training line means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Step,
    StepTime,
    Elapsed,
    Tokens,
    /// The samples of this step, all devices together (fairseq's `nsentences`).
    Samples,
    TokensSeen,
    TokensPerSecond,
    TokensPerSecondPerDevice,
    SamplesPerSecond,
    SamplesPerSecondPerDevice,
    /// Optimizer steps (batches) a second: the step time is its inverse.
    StepsPerSecond,
    GlobalBatch,
    LoggedMfu,
    LoggedTflops,
    /// A key that must not be taken for any of the others in this framework's logs.
    Ignore,
}

/// What a key of a printed configuration means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fact {
    WorldSize,
    DevicesPerNode,
    Nodes,
    DataParallel,
    /// torchtitan's replicated data-parallel degree (`dp_replicate`), beside its sharded one.
    DataReplicate,
    TensorParallel,
    PipelineParallel,
    ContextParallel,
    Dtype,
    DtypeFlags,
    /// Tokens of one optimizer step over all devices, stated outright.
    TokensPerStep,
    GlobalBatch,
    MicroBatch,
    GradAccum,
    SeqLen,
    Layers,
    Hidden,
    Ffn,
    Heads,
    KvHeads,
    Vocab,
    HeadDim,
    Gated,
    Activation,
    Tied,
    Untied,
    Device,
    /// Model FLOPs per token (forward + backward) a log states (nanochat's `Estimated FLOPs per token:
    /// 3.491758e+09`): the framework's own count.
    FlopsPerToken,
    /// The peak FLOP/s a framework says it computes its MFU against (a TFLOP/s figure under 1e6 is
    /// taken as TFLOP/s).
    LoggedPeakFlops,
    /// Not a fact in this framework's logs, whatever [facts] says (Unsloth's banner `Bfloat16 = TRUE`
    /// says the GPU supports bf16, not that the run trains in it).
    Ignore,
}

#[derive(Debug, Deserialize)]
struct File {
    #[serde(default)]
    restarts: Vec<String>,
    #[serde(default)]
    checkpoints: Vec<String>,
    #[serde(default)]
    setup_bars: Vec<String>,
    keys: HashMap<Role, Vec<String>>,
    facts: HashMap<Fact, Vec<String>>,
    framework: Vec<Framework>,
}

/// One framework's entry.
#[derive(Debug, Clone, Deserialize)]
pub struct Framework {
    pub name: String,
    /// Texts any one of which in a log names the framework.
    pub markers: Vec<String>,
    /// Keys that mean something else in this framework's logs.
    #[serde(default)]
    pub keys: HashMap<String, Role>,
    /// Configuration keys that mean something particular in this framework's logs (llm.c's
    /// `total_batch_size` counts tokens).
    #[serde(default)]
    pub facts: HashMap<String, Fact>,
    #[serde(default)]
    pub notes: Option<String>,
    /// Texts that separate fields in its lines besides the ones every log uses (Marian's ` : `).
    #[serde(default)]
    pub separators: Vec<String>,
    /// Keys (normalised) whose `N/M` value is read as its second number (OpenNMT's `src/tgt tok/s`:
    /// the target's rate).
    #[serde(default)]
    pub totals: Vec<String>,
}

/// The vocabulary, keyed by normalised name.
#[derive(Debug)]
pub struct Vocabulary {
    /// Texts that mark a (re)launch of training, and a checkpoint being saved.
    pub restarts: Vec<String>,
    pub checkpoints: Vec<String>,
    /// How progress bars that are not training begin (`Loading checkpoint shards`, `Map`): their
    /// counters are not steps.
    pub setup_bars: Vec<String>,
    keys: HashMap<String, Role>,
    facts: Vec<(String, Fact)>,
    /// Each fact's names in the order written: an earlier name is the more telling one.
    fact_order: HashMap<Fact, Vec<String>>,
    pub frameworks: Vec<Framework>,
}

const DATA: &str = include_str!("frameworks.toml");

/// The embedded vocabulary (checked by a test, so it always parses).
pub fn vocabulary() -> &'static Vocabulary {
    static VOCABULARY: OnceLock<Vocabulary> = OnceLock::new();
    VOCABULARY.get_or_init(|| parse(DATA).expect("frameworks.toml is checked by its tests"))
}

fn parse(text: &str) -> Result<Vocabulary, String> {
    let file: File = toml::from_str(text).map_err(|e| e.to_string())?;
    let mut keys = HashMap::new();
    for (role, names) in file.keys {
        for name in names {
            if let Some(other) = keys.insert(normalise(&name), role) {
                return Err(format!(
                    "key '{name}' has two roles: {other:?} and {role:?}"
                ));
            }
        }
    }
    let mut facts = Vec::new();
    let mut fact_order = HashMap::new();
    for (fact, names) in file.facts {
        let names: Vec<String> = names.iter().map(|n| normalise(n)).collect();
        for name in &names {
            facts.push((name.clone(), fact));
        }
        fact_order.insert(fact, names);
    }
    // Longest names first, so `global_batch_size` is tried before `batch_size`.
    facts.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
    let mut frameworks = file.framework;
    for f in &mut frameworks {
        f.keys = f.keys.drain().map(|(k, r)| (normalise(&k), r)).collect();
        f.facts = f.facts.drain().map(|(k, r)| (normalise(&k), r)).collect();
    }
    Ok(Vocabulary {
        restarts: file.restarts,
        checkpoints: file.checkpoints,
        setup_bars: file.setup_bars,
        keys,
        facts,
        fact_order,
        frameworks,
    })
}

/// `elapsed time per iteration (ms)` → `elapsed_time_per_iteration_ms`; `perf/mfu/actor` → `perf_mfu_actor`.
pub fn normalise(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for c in key.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    out
}

impl Vocabulary {
    /// The role of a column as the reader names it (`ips (images/s)`, `time (ms)`): its key's where its
    /// key has one (Paddle's `ips` is one card's, whatever unit it is written in), else the whole
    /// name's (`Speed (samples/sec)` is a rate of samples by its unit).
    pub fn column_role(&self, column: &str, framework: Option<&Framework>) -> Option<Role> {
        if let Some((key, _)) = column.rsplit_once(" (").filter(|_| column.ends_with(')')) {
            if let Some(role) = self.role(&normalise(key), framework) {
                return Some(role);
            }
        }
        self.role(&normalise(column), framework)
    }

    /// The role of a training-line key (normalised), the framework's meaning first.
    pub fn role(&self, key: &str, framework: Option<&Framework>) -> Option<Role> {
        if let Some(role) = framework.and_then(|f| f.keys.get(key)) {
            return Some(*role);
        }
        if let Some(role) = self.keys.get(key) {
            return Some(*role);
        }
        // `train/tokens_per_second`, `Train throughput/batches_per_sec`: namespaces (nested too) before
        // a known name.
        const NAMESPACES: [&str; 6] = [
            "train_",
            "training_",
            "perf_",
            "throughput_",
            "time_metrics_",
            "timing_",
        ];
        let mut rest = key;
        while let Some(inner) = NAMESPACES.iter().find_map(|p| rest.strip_prefix(p)) {
            if let Some(role) = self.keys.get(inner) {
                return Some(*role);
            }
            rest = inner;
        }
        // A unit at the end of a time key: `iter_time_ms`, `step_time_s`.
        for unit in ["_ms", "_s", "_sec", "_us"] {
            if let Some(rest) = key.strip_suffix(unit) {
                if let Some(role @ (Role::StepTime | Role::Elapsed)) = self.keys.get(rest) {
                    return Some(*role);
                }
            }
        }
        // A rate named by its unit after another word: `speed_samples_sec` (MXNet's `Speed: 4599.27
        // samples/sec`), `throughput_tok_s`. Only rates: `data_time` is no step time.
        let mut at = 0;
        while let Some(next) = key[at..].find('_') {
            at += next + 1;
            if let Some(
                role @ (Role::TokensPerSecond
                | Role::TokensPerSecondPerDevice
                | Role::SamplesPerSecond
                | Role::SamplesPerSecondPerDevice
                | Role::StepsPerSecond),
            ) = self.keys.get(&key[at..])
            {
                return Some(*role);
            }
        }
        None
    }

    /// What a configuration key (normalised, maybe dotted into `section_key`) means, the framework's
    /// meaning first.
    pub fn fact(&self, key: &str, framework: Option<&Framework>) -> Option<Fact> {
        if let Some(fact) = framework.and_then(|f| f.facts.get(key)) {
            return Some(*fact);
        }
        for (name, fact) in &self.facts {
            if key == name
                || (key.len() > name.len()
                    && key.ends_with(name.as_str())
                    && key.as_bytes()[key.len() - name.len() - 1] == b'_'
                    && section_key(key, name))
            {
                // A batch counted in tokens (nanochat's `Tokens / micro-batch: 262,144`) is no count of
                // samples: it says nothing a step's samples could be derived from.
                if matches!(fact, Fact::GlobalBatch | Fact::MicroBatch)
                    && key.split('_').any(|w| w == "tokens" || w == "token")
                {
                    return None;
                }
                return Some(*fact);
            }
        }
        None
    }

    /// How telling `key` is for `fact`, 0 the most: its place in the fact's list (a framework's own
    /// meaning first). A later value under a more telling name replaces an earlier one (MaxText prints
    /// `batch_size: 1` before `per_device_batch_size: 4`).
    pub fn rank(&self, fact: Fact, key: &str, framework: Option<&Framework>) -> usize {
        if framework.is_some_and(|f| f.facts.get(key) == Some(&fact)) {
            return 0;
        }
        self.fact_order
            .get(&fact)
            .and_then(|names| {
                names.iter().position(|name| {
                    key == name
                        || (key.len() > name.len()
                            && key.ends_with(name.as_str())
                            && key.as_bytes()[key.len() - name.len() - 1] == b'_')
                })
            })
            .map_or(usize::MAX, |at| at + 1)
    }

    /// The framework the log's text names, by its markers (the first entry whose marker appears).
    /// The first framework (in the table's order) one of whose markers `text` holds. Markers are
    /// searched as bytes with `memchr`'s SIMD search: `str::contains` over a log's 4 MiB head, marker by
    /// marker, took a fiftieth of reading a torchtitan log.
    pub fn framework_of(&self, text: &[u8]) -> Option<&Framework> {
        self.frameworks.iter().find(|f| {
            f.markers
                .iter()
                .any(|m| memchr::memmem::find(text, m.as_bytes()).is_some())
        })
    }

    pub fn framework(&self, name: &str) -> Option<&Framework> {
        self.frameworks.iter().find(|f| f.name == name)
    }
}

/// Whether `key` ending in `_name` is `name` under a section (`trainer_n_gpus_per_node`), not a
/// different key that happens to end the same way (`max_position_embeddings` is not `embeddings`): the
/// part before must itself look like a section, so only short names of two or more words, or known
/// section words, qualify.
fn section_key(key: &str, name: &str) -> bool {
    let section = &key[..key.len() - name.len() - 1];
    let sections = [
        "trainer",
        "model",
        "data",
        "training",
        "train",
        "args",
        "config",
        "actor_rollout_ref_model",
        "actor",
        "optimizer",
        "parallelism",
        "distributed",
        "mixed_precision",
        "fsdp",
        "deepspeed",
        "run",
        "job",
        "system",
        "hparams",
        "cfg",
        "model_config",
        "training_args",
        "model_args",
        "data_args",
        "dataset",
        "arch",
        "transformer",
        "llm",
        "strategy",
        "precision",
        "dataloader",
        "tokens",
        "batch",
        "hardware",
        "compute",
        "env",
        "experiment",
        "train_config",
        "hyperparameters",
    ];
    sections
        .iter()
        .any(|s| section == *s || section.ends_with(&format!("_{s}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_vocabulary_parses_and_each_framework_has_markers() {
        let v = parse(DATA).unwrap();
        assert!(v.frameworks.len() >= 10);
        for f in &v.frameworks {
            assert!(!f.markers.is_empty(), "{}", f.name);
        }
        assert_eq!(
            v.role("elapsed_time_per_iteration_ms", None),
            Some(Role::StepTime)
        );
        assert_eq!(
            v.role("train_tokens_per_second", None),
            Some(Role::TokensPerSecond)
        );
        assert_eq!(v.role("iter_time_ms", None), Some(Role::StepTime));
        assert_eq!(
            v.role("train_throughput_batches_per_sec", None),
            Some(Role::StepsPerSecond)
        );
        let titan = v.framework("torchtitan");
        assert_eq!(v.role("tps", titan), Some(Role::TokensPerSecondPerDevice));
        assert_eq!(
            v.fact("trainer_n_gpus_per_node", None),
            Some(Fact::DevicesPerNode)
        );
        assert_eq!(v.fact("global_batch_size", None), Some(Fact::GlobalBatch));
        assert_eq!(v.fact("tokens_micro_batch", None), None);
        assert_eq!(v.fact("max_position_embeddings", None), None);
        assert_eq!(v.fact("data_max_seq_len", None), Some(Fact::SeqLen));
    }

    #[test]
    fn a_key_with_two_roles_is_refused() {
        let bad = "[keys]\nstep = [\"x\"]\nstep_time = [\"X\"]\n[facts]\n[[framework]]\nname = \"a\"\nmarkers = [\"a\"]\n";
        assert!(parse(bad).unwrap_err().contains("two roles"));
    }

    #[test]
    fn names_normalise() {
        assert_eq!(
            normalise("elapsed time per iteration (ms)"),
            "elapsed_time_per_iteration_ms"
        );
        assert_eq!(normalise("perf/mfu/actor"), "perf_mfu_actor");
        assert_eq!(normalise("Tokens/s/device"), "tokens_s_device");
    }
}
