//! What configuration printed in or beside a log says about the run: YAML and `key: value` blocks,
//! JSON, Python dicts and pprint output, `Namespace(...)`, Megatron's dotted argument dump, launch
//! command lines (`--max_seq_len 512`), sentences (`global batch size 64`). Every line is read for
//! named values as training lines are ([`super::pairs`]), and the vocabulary's `[facts]` says which
//! names matter: the world size (or devices per node x nodes, or the product of the parallel degrees),
//! the precision, the batch, the sequence length and the model's shape. The first value of a name wins,
//! and each fact remembers its line for `-v`.

use std::collections::HashMap;

use super::vocabulary::{normalise, vocabulary, Fact, Framework};
use crate::columns::{Field, RunFact};

/// A value read for a fact, and where.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub number: Option<f64>,
    pub text: String,
    /// `file line N` or `line N`.
    pub origin: String,
    pub key: String,
    /// How telling its name is (see [`super::vocabulary::Vocabulary::rank`]); 0 for a flag.
    pub rank: usize,
}

/// The facts of one run, by kind.
#[derive(Debug, Default, Clone)]
pub struct ConfigFacts {
    found: HashMap<Fact, Found>,
    /// The framework whose meaning of a key comes first.
    framework: Option<&'static Framework>,
    /// Where an fp16 loss scaler spoke (`Attempted loss scale`): evidence of fp16 training.
    fp16_scaler: Option<String>,
}

impl ConfigFacts {
    /// Facts read with `framework`'s meaning of its keys first.
    pub fn of(framework: Option<&'static Framework>) -> ConfigFacts {
        ConfigFacts {
            framework,
            ..ConfigFacts::default()
        }
    }

    /// Takes from `earlier` (an earlier launch's facts) every fact these do not state themselves.
    pub fn inherit(&mut self, earlier: &ConfigFacts) {
        for (fact, found) in &earlier.found {
            self.found.entry(*fact).or_insert_with(|| found.clone());
        }
        if self.fp16_scaler.is_none() {
            self.fp16_scaler = earlier.fp16_scaler.clone();
        }
    }

    pub fn get(&self, fact: Fact) -> Option<&Found> {
        self.found.get(&fact)
    }

    pub fn number(&self, fact: Fact) -> Option<f64> {
        self.found
            .get(&fact)
            .and_then(|f| f.number)
            .filter(|n| n.is_finite() && *n > 0.0)
    }

    fn origin(&self, fact: Fact) -> String {
        self.found
            .get(&fact)
            .map(|f| format!("'{}' at {}", f.key, f.origin))
            .unwrap_or_default()
    }

    /// Adds what `text` says, but for the lines `skip` says; `place` names it (`line`, or a file name
    /// then `line`).
    pub fn read_text(&mut self, text: &str, place: &str, skip: &dyn Fn(&str) -> bool) {
        for (index, raw) in text.lines().enumerate() {
            if skip(raw) || raw.len() > 64 * 1024 {
                continue;
            }
            self.read_line(raw, &format!("{place} {}", index + 1));
        }
    }

    /// Adds what one line says.
    pub fn read_line(&mut self, raw: &str, origin: &str) {
        // A JSON object whose strings hold whole texts (MMDetection's first `*.log.json` line: its
        // `env_info` and `config`): each text is read line by line.
        if raw.len() < (1 << 20) && raw.trim_start().starts_with('{') && raw.contains("\\n") {
            if let Ok(serde_json::Value::Object(map)) = serde_json::from_str(raw) {
                for (key, value) in map {
                    if let serde_json::Value::String(text) = value {
                        if text.contains('\n') {
                            self.read_text(&text, &format!("{origin} '{key}' line"), &|_| false);
                        }
                    }
                }
                return;
            }
        }
        // mmcv's environment: `GPU 0,1,2,3: GeForce RTX 2080 Ti` names the devices it sees.
        if let Some(rest) = raw.trim().strip_prefix("GPU ") {
            if let Some((ids, name)) = rest.split_once(": ") {
                if ids.chars().all(|c| c.is_ascii_digit() || c == ',') && !name.trim().is_empty() {
                    self.offer(Fact::Device, "gpu", None, name.trim(), origin);
                }
            }
        }
        for line in super::clean::clean(raw) {
            let text = line.text.as_ref();
            if self.fp16_scaler.is_none()
                && (text.contains("Attempted loss scale")
                    || text.contains("Reducing dynamic loss scale")
                    || text.contains("Overflow detected. Skipping step"))
            {
                self.fp16_scaler = Some(origin.to_string());
            }
            // `Namespace(a=1, b=2)`, `TrainArgs(x=1, ...)`: the wrapper off, so its fields separate.
            let unwrapped;
            let text = if text.contains("=") && text.contains('(') {
                unwrapped = unwrap_calls(text);
                unwrapped.as_str()
            } else {
                text
            };
            // A Markdown table row of a key and its value: `| device | NVIDIA A800 80GB PCIe |`.
            if let Some((key, value)) = table_row(text) {
                if let Some((key, fact)) = sentence_fact(&fact_key(key), self.framework) {
                    let number = super::pairs::decode(value)
                        .filter(|(_, unit, _, rest)| unit.is_empty() && rest.trim().is_empty())
                        .map(|(n, ..)| n);
                    self.offer(fact, &key, number, value, origin);
                }
                continue;
            }
            let words: Vec<&str> = text.split_whitespace().collect();
            for (i, word) in words.iter().enumerate() {
                // `--bf16` alone on a command line: a flag that is on.
                if let Some(name) = word.strip_prefix("--") {
                    let key = normalise(name);
                    // `torchrun --standalone`: one node.
                    if key == "standalone" {
                        self.offer(Fact::Nodes, "standalone", Some(1.0), "1", origin);
                    }
                    if vocabulary().fact(&key, self.framework) == Some(Fact::DtypeFlags) {
                        self.offer(Fact::DtypeFlags, &key, None, "true", origin);
                    }
                }
                // `Using precision Precision.AMP_FP16`: a precision key, then a precision word.
                let key = normalise(word);
                if let Some(next) = words.get(i + 1) {
                    // A sentence's full stop or comma is not part of the word: torchtune's `Model is
                    // initialized with precision torch.bfloat16.`
                    let next = next.trim_end_matches(['.', ',']);
                    if vocabulary().fact(&key, self.framework) == Some(Fact::Dtype)
                        && dtype_word(next).is_some()
                    {
                        self.offer(Fact::Dtype, &key, None, next, origin);
                    }
                }
            }
            // A device mesh as two lists, its dimensions' names then their sizes: torchtitan's
            // `Building 2-D device mesh with ['dp_shard', 'tp'], [4, 2]`.
            for (name, size) in mesh_lists(text) {
                if let Some((key, fact)) = sentence_fact(&fact_key(name), self.framework) {
                    self.offer(fact, &key, Some(size), &size.to_string(), origin);
                }
            }
            let mut pairs = super::pairs::pairs(text);
            // A dict inside a dict (TensorFlow's `'gpu_info': {'count': 1, 'model': u'GeForce GTX
            // 1080'}`): its keys under the outer one's (`gpu_info_model`), three levels at most.
            let mut nested: Vec<super::pairs::Pair<'_>> = Vec::new();
            let mut level: Vec<(String, String)> = pairs
                .iter()
                .filter_map(|p| match &p.value {
                    super::pairs::Value::Text(t) if t.trim_start().starts_with('{') => {
                        Some((p.key.to_string(), t.to_string()))
                    }
                    _ => None,
                })
                .collect();
            // A list of dicts (TensorFlow's `'run_parameters': [{'name': 'dtype', 'string_value':
            // "<dtype: 'float32'>"}, ...]`): each dict read for its name and value.
            for p in &pairs {
                if let super::pairs::Value::Text(t) = &p.value {
                    if let Some(list) = t
                        .trim()
                        .strip_prefix('[')
                        .filter(|l| l.trim_start().starts_with('{'))
                    {
                        for item in list.split("}, {") {
                            let item = format!("{{{}}}", item.trim_matches(['{', '}', ']', ' ']));
                            self.named_value(&super::pairs::pairs(&item), origin);
                        }
                    }
                }
            }
            for _ in 0..3 {
                let mut next = Vec::new();
                for (outer, body) in &level {
                    for inner in super::pairs::pairs(body) {
                        // The inner key alone where it names a fact (`'train': {'batch_size': 12}`
                        // is a batch size, not HF's `train_batch_size`), else under the outer one.
                        let alone = vocabulary()
                            .fact(&fact_key(&inner.key), self.framework)
                            .is_some();
                        let key = if alone {
                            inner.key.to_string()
                        } else {
                            format!("{outer}_{}", inner.key)
                        };
                        if let super::pairs::Value::Text(t) = &inner.value {
                            if t.trim_start().starts_with('{') {
                                next.push((key.clone(), t.to_string()));
                            }
                        }
                        nested.push(super::pairs::Pair {
                            key: key.into(),
                            value: inner.value.into_owned(),
                            source: None,
                        });
                    }
                }
                level = next;
            }
            pairs.extend(nested);
            self.named_value(&pairs, origin);
            // A dataclass field with its default, as a script's source echoed into its log prints
            // it: `dtype: str = "bfloat16"`, `batch_size: int = 512`.
            if let Some((name, rest)) = text.trim().split_once(':') {
                if let Some((kind, value)) = rest.split_once('=') {
                    let identifier = |w: &str| {
                        !w.is_empty() && w.chars().all(|c| c.is_alphanumeric() || c == '_')
                    };
                    let kind = kind.trim();
                    if identifier(name.trim())
                        && kind
                            .chars()
                            .all(|c| c.is_alphanumeric() || "_[], .".contains(c))
                        && kind.starts_with(|c: char| c.is_alphabetic())
                    {
                        let value = value.split('#').next().unwrap_or(value).trim();
                        let key = fact_key(name.trim());
                        if let Some(fact) = vocabulary().fact(&key, self.framework) {
                            let number = super::pairs::decode(value)
                                .filter(|(_, unit, _, rest)| {
                                    unit.is_empty() && rest.trim().is_empty()
                                })
                                .map(|(n, ..)| n);
                            self.offer(fact, &key, number, value, origin);
                        }
                    }
                }
            }
            for pair in pairs {
                // A key under a metric's namespace (TRL's `'completions/max_length': 5.0`) names a
                // measurement: it is a fact only as a whole (`trainer/n_gpus_per_node`), never by its
                // last words.
                let found = if pair.key.contains('/') && !pair.key.contains(char::is_whitespace) {
                    let key = fact_key(&pair.key);
                    vocabulary()
                        .fact(&key, self.framework)
                        .map(|fact| (key, fact))
                } else {
                    sentence_fact(&fact_key(&pair.key), self.framework)
                };
                let Some((key, fact)) = found else {
                    continue;
                };
                // A list of device ids as the value (`gpus='0,1,2,3'`, `--gpus 0,1,2,3`): counted,
                // from the line's own text (its commas cut no field).
                if matches!(fact, Fact::WorldSize | Fact::DevicesPerNode) {
                    if let Some(n) = list_after(text, &pair.key) {
                        self.offer(fact, &key, Some(n), &n.to_string(), origin);
                        continue;
                    }
                }
                match (&pair.value, fact) {
                    (_, Fact::Device) => {
                        // The name as the line writes it after its key; a nested dict's value as
                        // it is (its key is not the line's).
                        let name = device_after(text, &pair.key).or_else(|| match &pair.value {
                            super::pairs::Value::Text(t) if pair.source.is_none() => {
                                Some(t.to_string())
                            }
                            _ => None,
                        });
                        if let Some(name) = name {
                            self.offer(fact, &key, None, &name, origin);
                        }
                    }
                    // A batch in tokens (nanochat's `Auto-computed optimal batch size: 1,048,576
                    // tokens`) counts no samples.
                    (
                        super::pairs::Value::Number { unit, .. },
                        Fact::GlobalBatch | Fact::MicroBatch,
                    ) if unit.to_ascii_lowercase().starts_with("token")
                        || word_after(text, &pair.key, pair.source)
                            .is_some_and(|w| w.to_ascii_lowercase().starts_with("token")) => {}
                    (super::pairs::Value::Number { value, .. }, _) => {
                        self.offer(fact, &key, Some(*value), &value.to_string(), origin)
                    }
                    (super::pairs::Value::Text(t), _) => self.offer(fact, &key, None, t, origin),
                }
            }
        }
    }

    fn offer(&mut self, fact: Fact, key: &str, number: Option<f64>, text: &str, origin: &str) {
        // Quotes and commas around a value are not part of it, nor is the full stop that ends a sentence
        // (Unsloth's `GPU: NVIDIA A100-SXM4-40GB.`, `Bfloat16 = TRUE.`).
        let text = text.trim();
        // Python 2's `u'GeForce GTX 1080'`.
        let text = text
            .strip_prefix("u'")
            .or_else(|| text.strip_prefix("u\""))
            .unwrap_or(text);
        let text = text
            .trim()
            .trim_matches(['\'', '"', ','])
            .trim_end_matches('.')
            .to_string();
        // A peak named for its precision (nanochat's `Peak FLOPS (BF16): 7.10e+13`) says the precision
        // the MFU is of, too.
        if fact == Fact::LoggedPeakFlops {
            let named = key.rsplit('_').next().unwrap_or(key);
            if vocabulary().fact(named, self.framework) == Some(Fact::DtypeFlags) {
                self.offer(Fact::DtypeFlags, named, number, &text, origin);
            }
        }
        // A precision is a word of the precision vocabulary, never a number (a metric named
        // `precision` is a classification score); a flag is a boolean that is on. A count (devices,
        // a batch, a length, a model dimension) is a whole number: `'completions/max_length': 71.4` is
        // a metric's mean, not a sequence length.
        // A list of device ids (`gpus='0,1,2,3'`, `--gpus 0,1,2,3`, `devices: [0, 1]`) counts devices.
        let listed = matches!(fact, Fact::WorldSize | Fact::DevicesPerNode)
            .then(|| device_list(&text))
            .flatten();
        let number = listed.or(number);
        let accepted = match fact {
            Fact::Ignore => false,
            Fact::Dtype => number.is_none() && dtype_word(&text).is_some(),
            Fact::DtypeFlags | Fact::Gated | Fact::Tied | Fact::Untied => {
                number.is_some_and(|n| n > 0.0) || is_true(&text)
            }
            Fact::Activation => number.is_none() && !text.is_empty(),
            // A device's name has a model number beside letters (`RTX 3090`, `A100`, `TPU v4`); a
            // flag (`gpu: True`) or a torch device (`cuda:0`) names none.
            Fact::Device => {
                number.is_none()
                    && text.chars().any(|c| c.is_ascii_digit())
                    && text.chars().any(|c| c.is_ascii_alphabetic())
                    && !["cuda", "cpu", "xpu", "mps", "npu", "gpu"].iter().any(|w| {
                        let t = text.trim().to_ascii_lowercase();
                        t == *w || t.starts_with(&format!("{w}:"))
                    })
            }
            Fact::LoggedPeakFlops | Fact::FlopsPerToken => {
                number.is_some_and(|n| n.is_finite() && n > 0.0)
            }
            _ => number.is_some_and(|n| n.is_finite() && n > 0.0 && n.fract() == 0.0),
        };
        if fact == Fact::DtypeFlags && accepted {
            // bf16: True, fp16: True, fp8: hybrid: the flag's name is the precision.
            let name = match key.rsplit('_').next().unwrap_or(key) {
                "bfloat16" => "bf16",
                "half" => "fp16",
                "amp" => return,
                other => other,
            };
            let name = name.to_string();
            self.found.entry(Fact::DtypeFlags).or_insert(Found {
                number: None,
                text: name,
                origin: origin.to_string(),
                key: key.to_string(),
                rank: 0,
            });
            return;
        }
        if fact == Fact::DtypeFlags && key.ends_with("fp8") && !text.is_empty() && !is_false(&text)
        {
            self.found.entry(Fact::DtypeFlags).or_insert(Found {
                number: None,
                text: "fp8".into(),
                origin: origin.to_string(),
                key: key.to_string(),
                rank: 0,
            });
            return;
        }
        if !accepted {
            return;
        }
        // The first value wins, unless a more telling name gives another later.
        let rank = vocabulary().rank(fact, key, self.framework);
        if self.found.get(&fact).is_some_and(|f| f.rank <= rank) {
            return;
        }
        self.found.insert(
            fact,
            Found {
                number,
                text,
                origin: origin.to_string(),
                key: key.to_string(),
                rank,
            },
        );
    }

    /// A dict that names its key and gives its value: MLPerf's `:::MLLOG {"key": "global_batch_size",
    /// "value": 3264, ...}` (stated outright), TensorFlow's `{'name': 'dtype', 'string_value': "<dtype:
    /// 'float32'>"}`.
    fn named_value(&mut self, pairs: &[super::pairs::Pair<'_>], origin: &str) {
        let field = |names: &[&str]| {
            pairs
                .iter()
                .find(|p| names.contains(&p.key.as_ref()))
                .map(|p| &p.value)
        };
        let Some(super::pairs::Value::Text(key)) = field(&["key", "name"]) else {
            return;
        };
        let Some((key, fact)) = sentence_fact(&fact_key(key), self.framework) else {
            return;
        };
        match field(&["value", "long_value", "float_value", "string_value"]) {
            Some(super::pairs::Value::Number { value, .. }) => {
                self.outright(fact, &key, *value, origin)
            }
            Some(super::pairs::Value::Text(text)) => {
                // `<dtype: 'float32'>`: the quoted word inside.
                let inner = text
                    .split(['\'', '"'])
                    .find(|w| !w.trim().is_empty() && !w.contains(['<', ':']))
                    .unwrap_or(text);
                self.offer(fact, &key, None, inner, origin)
            }
            None => {}
        }
    }

    /// A number a log states as an event (MLPerf's MLLOG): it wins over what a configuration print
    /// says, never over a flag.
    fn outright(&mut self, fact: Fact, key: &str, n: f64, origin: &str) {
        if n.is_finite()
            && n > 0.0
            && n.fract() == 0.0
            && self
                .found
                .get(&fact)
                .is_none_or(|f| f.origin != "the command line")
        {
            self.found.insert(
                fact,
                Found {
                    number: Some(n),
                    text: n.to_string(),
                    origin: format!("'{key}' stated at {origin}"),
                    key: key.to_string(),
                    rank: 0,
                },
            );
        }
    }

    /// A value the user gave by `flag` (`--num-devices`, `--seq-len`, `--tokens-per-step`): it wins
    /// over what the log says.
    pub fn set_flag(&mut self, fact: Fact, n: f64, flag: &str) {
        self.found.insert(
            fact,
            Found {
                number: Some(n),
                text: n.to_string(),
                origin: "the command line".into(),
                key: flag.into(),
                rank: 0,
            },
        );
    }

    /// Two facts multiplied, and where they were read (`'a' at line 3 x 'b' at line 9`).
    fn product(&self, a: Fact, b: Fact) -> Option<(f64, String)> {
        Some((
            self.number(a)? * self.number(b)?,
            format!("{} x {}", self.origin(a), self.origin(b)),
        ))
    }

    /// The device count: stated, else devices per node x nodes, else the product of the parallel
    /// degrees (data x tensor x pipeline x context).
    pub fn world_size(&self) -> Option<(f64, String)> {
        if let Some(w) = self.number(Fact::WorldSize) {
            return Some((w, self.origin(Fact::WorldSize)));
        }
        if let Some(product) = self.product(Fact::DevicesPerNode, Fact::Nodes) {
            return Some(product);
        }
        let dp = self.number(Fact::DataParallel)?;
        let mut w = dp;
        let mut parts = vec![self.origin(Fact::DataParallel)];
        for f in [
            Fact::DataReplicate,
            Fact::TensorParallel,
            Fact::PipelineParallel,
            Fact::ContextParallel,
        ] {
            if let Some(n) = self.number(f) {
                w *= n;
                parts.push(self.origin(f));
            }
        }
        Some((w, parts.join(" x ")))
    }

    /// The training precision and where it was read.
    pub fn dtype(&self) -> Option<(String, String)> {
        if let Some(f) = self.found.get(&Fact::DtypeFlags) {
            return Some((f.text.clone(), self.origin(Fact::DtypeFlags)));
        }
        if let Some(f) = self.found.get(&Fact::Dtype) {
            let d = dtype_word(&f.text)?;
            return Some((d, self.origin(Fact::Dtype)));
        }
        self.fp16_scaler.as_ref().map(|at| {
            (
                "fp16".to_string(),
                format!("the fp16 loss scaler's line at {at}"),
            )
        })
    }

    /// Tokens of one optimizer step over all devices: the global batch x the sequence length, or the
    /// micro-batch x gradient accumulation x data-parallel ranks x the sequence length.
    pub fn tokens_per_step(&self) -> Option<(f64, String)> {
        if let Some(t) = self.number(Fact::TokensPerStep) {
            return Some((t, self.origin(Fact::TokensPerStep)));
        }
        let seq = self.number(Fact::SeqLen)?;
        if let Some(product) = self.product(Fact::GlobalBatch, Fact::SeqLen) {
            return Some(product);
        }
        let (samples, words) = self.micro_batches_per_step()?;
        Some((
            samples * seq,
            format!("{words} x {}", self.origin(Fact::SeqLen)),
        ))
    }

    /// Whether the tokens a step are stated outright (a flag, a count of tokens, the global batch and
    /// the sequence length) rather than inferred from one device's batch and a device count.
    pub fn tokens_per_step_stated(&self) -> bool {
        self.number(Fact::TokensPerStep).is_some()
            || (self.number(Fact::GlobalBatch).is_some() && self.number(Fact::SeqLen).is_some())
    }

    /// Whether the samples a step are stated outright (the global batch, or a flag).
    pub fn samples_per_step_stated(&self) -> bool {
        self.number(Fact::GlobalBatch).is_some()
    }

    /// Samples (sequences) of one optimizer step over all devices, as configured: the global batch,
    /// or the micro-batch x gradient accumulation x data-parallel ranks.
    pub fn samples_per_step(&self) -> Option<f64> {
        self.samples_per_step_from().map(|(n, _)| n)
    }

    /// One device's batch, where the log prints it but not what makes the samples of a step from it (the
    /// device count): the batch and where it was read.
    pub fn device_batch_without_ranks(&self) -> Option<(f64, String)> {
        if self.samples_per_step_from().is_some() {
            return None;
        }
        let micro = self.number(Fact::MicroBatch)?;
        Some((micro, self.origin(Fact::MicroBatch)))
    }

    /// [`ConfigFacts::samples_per_step`] and where it was read.
    pub fn samples_per_step_from(&self) -> Option<(f64, String)> {
        if let Some(batch) = self.number(Fact::GlobalBatch) {
            return Some((batch, self.origin(Fact::GlobalBatch)));
        }
        self.micro_batches_per_step()
    }

    /// The samples of a step from one device's batch: micro-batch x gradient accumulation x
    /// data-parallel ranks, and where each was read.
    fn micro_batches_per_step(&self) -> Option<(f64, String)> {
        let micro = self.number(Fact::MicroBatch)?;
        let accum = self.number(Fact::GradAccum).unwrap_or(1.0);
        let (ranks, ranks_from) = self.data_parallel_ranks()?;
        Some((
            micro * accum * ranks,
            format!(
                "{} x {} x {ranks} data-parallel ranks ({ranks_from})",
                self.origin(Fact::MicroBatch),
                if self.number(Fact::GradAccum).is_some() {
                    self.origin(Fact::GradAccum)
                } else {
                    "no gradient accumulation".into()
                },
            ),
        ))
    }

    /// The data-parallel ranks: stated, else the device count over the tensor, pipeline and context
    /// degrees; and where that was read.
    fn data_parallel_ranks(&self) -> Option<(f64, String)> {
        if let Some(dp) = self.number(Fact::DataParallel) {
            return Some((dp, self.origin(Fact::DataParallel)));
        }
        let (w, from) = self.world_size()?;
        let split = [
            Fact::TensorParallel,
            Fact::PipelineParallel,
            Fact::ContextParallel,
        ]
        .iter()
        .filter_map(|f| self.number(*f))
        .product::<f64>();
        Some((w / split, from))
    }

    /// The model's shape as the keys of a Hugging Face config, when layers, hidden size, heads and
    /// vocabulary are all there.
    pub fn model(&self) -> Option<(crate::flops::ModelConfig, String)> {
        let int = |f: Fact| self.number(f).map(|n| n.round() as u64);
        let mut config = serde_json::Map::new();
        config.insert("model_type".into(), "printed".into());
        config.insert("num_hidden_layers".into(), int(Fact::Layers)?.into());
        config.insert("hidden_size".into(), int(Fact::Hidden)?.into());
        config.insert("num_attention_heads".into(), int(Fact::Heads)?.into());
        config.insert("vocab_size".into(), int(Fact::Vocab)?.into());
        if let Some(ffn) = int(Fact::Ffn) {
            config.insert("intermediate_size".into(), ffn.into());
        }
        if let Some(kv) = int(Fact::KvHeads) {
            config.insert("num_key_value_heads".into(), kv.into());
        }
        if let Some(d) = int(Fact::HeadDim) {
            config.insert("head_dim".into(), d.into());
        }
        let act = self
            .get(Fact::Activation)
            .map(|f| f.text.to_ascii_lowercase());
        let gated = self.get(Fact::Gated).is_some()
            || act.as_deref().is_some_and(|a| {
                a.contains("silu") || a.contains("swi") || a.contains("glu") || a.contains("swish")
            });
        config.insert(
            "hidden_act".into(),
            if gated { "silu" } else { "gelu" }.into(),
        );
        let origin = [Fact::Layers, Fact::Hidden, Fact::Heads, Fact::Vocab]
            .iter()
            .map(|f| self.origin(*f))
            .collect::<Vec<_>>()
            .join(", ");
        let text = serde_json::Value::Object(config).to_string();
        crate::flops::ModelConfig::from_json(&text, "the printed model shape")
            .ok()
            .map(|c| (c, origin))
    }

    /// The run facts: device count, precision, sequence length, tokens a step, device.
    pub fn run_facts(&self) -> Vec<RunFact> {
        let mut facts = Vec::new();
        if let Some((w, from)) = self.world_size() {
            facts.push(RunFact::number(Field::NumDevices, w, from));
        }
        if let Some((d, from)) = self.dtype() {
            facts.push(RunFact::text(Field::Dtype, d, from));
        }
        if let Some(s) = self.number(Fact::SeqLen) {
            facts.push(RunFact::number(Field::SeqLen, s, self.origin(Fact::SeqLen)));
        }
        let tokens = self.tokens_per_step();
        // A sample holds at least one token: samples a step above the tokens a step are a batch in
        // tokens misread as one in samples (nanochat's `for batch size 1,048,576`), not a count.
        if let Some((n, from)) = self
            .samples_per_step_from()
            .filter(|(n, _)| tokens.as_ref().is_none_or(|(t, _)| n <= t))
        {
            facts.push(RunFact::number(
                Field::Samples,
                n,
                format!("samples a step = {from}"),
            ));
        }
        if let Some((t, from)) = tokens {
            facts.push(RunFact::number(
                Field::Tokens,
                t,
                format!("tokens a step = {from}"),
            ));
        }
        if let Some(f) = self.number(Fact::FlopsPerToken) {
            facts.push(RunFact::number(
                Field::FlopsPerToken,
                f,
                format!("{} (the log's own count)", self.origin(Fact::FlopsPerToken)),
            ));
        }
        if let Some(p) = self.number(Fact::LoggedPeakFlops) {
            // llm.c prints TFLOP/s (`| peak TFlops | 312.0 |`); the others FLOP/s.
            let flops = if p < 1e6 { p * 1e12 } else { p };
            facts.push(RunFact::number(
                Field::LoggedPeakFlops,
                flops,
                self.origin(Fact::LoggedPeakFlops),
            ));
        }
        if let Some(d) = self.get(Fact::Device) {
            facts.push(RunFact::text(
                Field::DeviceName,
                d.text.clone(),
                self.origin(Fact::Device),
            ));
        }
        facts
    }
}

/// A configuration key as the vocabulary compares it: `--max_seq_len` → `max_seq_len`,
/// `seq_length .......` → `seq_length`, `trainer.n_gpus_per_node` → `trainer_n_gpus_per_node`; of a
/// key of several words, the words from the last `--flag` on.
fn fact_key(key: &str) -> String {
    let key = match key.rfind("--") {
        Some(at) => &key[at..],
        None => key,
    };
    normalise(key.trim_end_matches(['.', ' ']))
}

/// The fact a key names: the whole key, else its last words (`Trainer is initialized with local batch
/// size` is `local_batch_size`), unless a dropped word says it is about something else (`eval batch
/// size`, `max position ...`).
/// The word the line writes after a pair's value (`tokens` in `batch size: 1,048,576 tokens`).
fn word_after<'t>(text: &'t str, key: &str, source: Option<&str>) -> Option<&'t str> {
    let at = text.find(key)? + key.len();
    let rest = &text[at..];
    let source = source?;
    let end = rest.find(source)? + source.len();
    rest[end..].split_whitespace().next()
}

fn sentence_fact(key: &str, framework: Option<&Framework>) -> Option<(String, Fact)> {
    if let Some(fact) = vocabulary().fact(key, framework) {
        return Some((key.to_string(), fact));
    }
    let words: Vec<&str> = key.split('_').collect();
    for start in 1..words.len() {
        let dropped = &words[..start];
        if dropped.iter().any(|w| {
            matches!(
                *w,
                "eval"
                    | "val"
                    | "valid"
                    | "validation"
                    | "test"
                    | "max"
                    | "min"
                    | "micro"
                    | "per"
                    | "total"
                    | "global"
                    | "local"
                    | "padded"
                    | "new"
                    | "old"
                    | "effective"
                    // `Tokens / micro-batch: 262,144` counts tokens, not a batch's samples.
                    | "tokens"
                    | "token"
            )
        }) {
            return None;
        }
        let tail = words[start..].join("_");
        if let Some(fact) = vocabulary().fact(&tail, framework) {
            return Some((tail, fact));
        }
    }
    None
}

/// `| key | value |` → the key and the value, trimmed.
fn table_row(text: &str) -> Option<(&str, &str)> {
    let inner = text.strip_prefix('|')?.strip_suffix('|')?;
    let (key, value) = inner.split_once('|')?;
    let (key, value) = (key.trim(), value.trim());
    let plain = |s: &str| !s.is_empty() && !s.contains('|') && !s.starts_with('-');
    (plain(key) && plain(value)).then_some((key, value))
}

/// `Namespace(a=1, b=2)` → `a=1, b=2`: a call's name and parentheses off, where its arguments are
/// `name=value`. Other parentheses stay, each with its own closing one (a tuple value such as
/// `adam_betas=(0.9, 0.999)`), and a quoted value is copied as it is (fairseq's
/// `adam_betas='(0.9, 0.999)'`): an unwrapped call's `)` left behind would leave its `(` unclosed, and
/// the rest of the line would read as one value.
fn unwrap_calls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word_start: Option<usize> = None;
    // For each open parenthesis, whether it was a call's (unwrapped) or is kept.
    let mut open: Vec<bool> = Vec::new();
    let mut quote: Option<char> = None;
    let mut previous = ' ';
    for (i, c) in text.char_indices() {
        let before = std::mem::replace(&mut previous, c);
        if let Some(q) = quote {
            out.push(c);
            if c == q {
                quote = None;
            }
            continue;
        }
        if super::pairs::opens_quote(before, c) {
            quote = Some(c);
            word_start = None;
            out.push(c);
            continue;
        }
        if c.is_alphanumeric() || c == '_' || c == '.' {
            word_start.get_or_insert(out.len());
            out.push(c);
            continue;
        }
        if c == '(' {
            if let Some(s) = word_start {
                let inner_has_eq = text[i + 1..]
                    .split(')')
                    .next()
                    .is_some_and(|x| x.contains('='));
                if inner_has_eq && out[s..].chars().next().is_some_and(char::is_alphabetic) {
                    out.truncate(s);
                    out.push_str(", ");
                    word_start = None;
                    open.push(true);
                    continue;
                }
            }
            open.push(false);
        }
        if c == ')' && open.pop().unwrap_or(true) {
            out.push_str(", ");
            word_start = None;
            continue;
        }
        word_start = None;
        out.push(c);
    }
    out
}

/// The device name after `key:` on the line: `CUDA capacity: NVIDIA H100 80GB HBM3 with 79.11GiB
/// memory` → `NVIDIA H100 80GB HBM3`.
/// The count of a list of device ids written after `key` in `text` (`gpus='0,1,2,3'`, `--gpus 0,1,2,3`,
/// `devices: [0, 1]`, `gpu_ids = range(0, 4)`).
fn list_after(text: &str, key: &str) -> Option<f64> {
    let at = text.find(key)? + key.len();
    let rest = text[at..]
        .trim_start()
        .trim_start_matches([':', '='])
        .trim_start()
        .trim_start_matches(['\'', '"']);
    let end = if rest.starts_with('[') || rest.starts_with("range(") {
        rest.find([']', ')']).map_or(rest.len(), |e| e + 1)
    } else {
        rest.find(|c: char| !(c.is_ascii_digit() || c == ','))
            .unwrap_or(rest.len())
    };
    device_list(&rest[..end])
}

fn device_after(text: &str, key: &str) -> Option<String> {
    let at = text.find(key)? + key.len();
    let rest = text[at..]
        .trim_start()
        .trim_start_matches([':', '='])
        .trim();
    // The name ends where its sentence or field does: `GPU: NVIDIA A100-SXM4-40GB. Max memory: ...`,
    // `GPU: ... | Num GPUs = 1`.
    let name = rest.split(" with ").next()?;
    let name = name.split(". ").next()?.split(" | ").next()?.trim();
    let name = match name.rfind(" (") {
        Some(p) if name.ends_with(')') => &name[..p],
        _ => name,
    };
    let name = name.trim_matches(['\'', '"', ',']).trim_end_matches('.');
    (!name.is_empty() && name.len() < 100).then(|| name.to_string())
}

/// A precision word (`bf16`, `torch.bfloat16`, `Precision.AMP_FP16`, `bf16-mixed`) as mfu names it;
/// a number is never one.
pub fn dtype_word(text: &str) -> Option<String> {
    let t = text.trim().trim_matches(['\'', '"']);
    if t.is_empty() || t.parse::<f64>().is_ok() {
        return None;
    }
    let lower = t.to_ascii_lowercase();
    let bare = match lower.rsplit_once('.') {
        Some((head, tail)) if !head.contains(|c: char| c.is_ascii_digit()) => tail,
        _ => lower.as_str(),
    };
    for candidate in [lower.as_str(), bare] {
        if let Some(d) = crate::peaks::precision::parse_dtype(candidate) {
            return Some(d.as_str().to_string());
        }
    }
    None
}

fn is_true(text: &str) -> bool {
    matches!(
        text.to_ascii_lowercase().as_str(),
        "true" | "yes" | "on" | "1"
    )
}

fn is_false(text: &str) -> bool {
    matches!(
        text.to_ascii_lowercase().as_str(),
        "false" | "no" | "off" | "0" | "none" | "null" | "~"
    )
}

/// The dimensions of a device mesh written as a list of names and a list of sizes (`mesh with
/// ['dp_shard', 'tp'], [4, 2]`), each name with its size; nothing where the lists differ in length.
fn mesh_lists(text: &str) -> Vec<(&str, f64)> {
    let Some(at) = text.find("mesh with [") else {
        return Vec::new();
    };
    let rest = &text[at + "mesh with [".len()..];
    let Some((names, rest)) = rest.split_once(']') else {
        return Vec::new();
    };
    let Some(sizes) = rest
        .trim_start_matches([',', ' '])
        .strip_prefix('[')
        .and_then(|r| r.split_once(']'))
        .map(|(sizes, _)| sizes)
    else {
        return Vec::new();
    };
    let names: Vec<&str> = names
        .split(',')
        .map(|n| n.trim().trim_matches(['\'', '"']))
        .collect();
    let sizes: Option<Vec<f64>> = sizes.split(',').map(|n| n.trim().parse().ok()).collect();
    match sizes {
        Some(sizes) if sizes.len() == names.len() => names.into_iter().zip(sizes).collect(),
        _ => Vec::new(),
    }
}

/// The number of ids in a list of device ids (`0,1,2,3`, `[0, 1]`): two or more whole numbers, each
/// once; `None` for anything else.
fn device_list(text: &str) -> Option<f64> {
    // `gpu_ids = range(0, 4)`.
    if let Some(range) = text
        .trim()
        .strip_prefix("range(")
        .and_then(|r| r.strip_suffix(')'))
    {
        let (a, b) = range.split_once(',')?;
        let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
        return (b > a).then(|| f64::from(b - a));
    }
    let inner = text.trim().trim_start_matches('[').trim_end_matches(']');
    let ids: Vec<u32> = inner
        .split(',')
        .map(|id| id.trim().parse::<u32>())
        .collect::<Result<_, _>>()
        .ok()?;
    let mut distinct = ids.clone();
    distinct.sort_unstable();
    distinct.dedup();
    (ids.len() >= 2 && distinct.len() == ids.len()).then_some(ids.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> ConfigFacts {
        let mut f = ConfigFacts::default();
        f.read_text(text, "line", &|_| false);
        f
    }

    #[test]
    fn brackets_and_braces_inside_values_do_not_swallow_the_line() {
        // fairseq's Namespace: a quoted tuple, a quoted JSON dict, a bare tuple, then the facts.
        let f = read("Namespace(adam_betas='(0.9, 0.999)', eval_bleu_args='{\"iter\": 0, \"beam\": 1}', lr=(0.1, 0.2), distributed_world_size=8, fp16=True)");
        assert_eq!(f.number(Fact::WorldSize), Some(8.0));
        assert_eq!(f.dtype().map(|(d, _)| d), Some("fp16".to_string()));
        assert_eq!(
            unwrap_calls("Namespace(a='(1)', b=(2, 3), c=4)"),
            ", a='(1)', b=(2, 3), c=4, "
        );
        // An apostrophe inside a word opens no string.
        let f = read("Namespace(note=it's, world_size=4)");
        assert_eq!(f.number(Fact::WorldSize), Some(4.0));
    }

    #[test]
    fn a_count_is_a_whole_number_and_a_metric_is_no_fact() {
        // TRL's completion statistics: a mean is no sequence length, nor is a namespaced maximum.
        let f =
            read("{'loss': 0.1, 'completions/max_length': 71.4}\n{'completions/max_length': 5.0}");
        assert_eq!(f.number(Fact::SeqLen), None);
        let f = read("max_length: 71.4");
        assert_eq!(f.number(Fact::SeqLen), None);
        let f = read("max_length: 2048");
        assert_eq!(f.number(Fact::SeqLen), Some(2048.0));
        // A sentence's full stop is not part of a flag's value.
        let f = read("Bfloat16 = TRUE. FA [Xformers = 0.0.29.post2. FA2 = False]");
        assert_eq!(f.dtype().map(|(d, _)| d), Some("bf16".to_string()));
    }

    #[test]
    fn layouts_of_printed_configuration() {
        let f = read("trainer:\n  n_gpus_per_node: 8\n  nnodes: 2\ndata:\n  max_seq_len: 4096\n  train_batch_size: 256\nmixed_precision: bf16\n");
        assert_eq!(f.world_size().unwrap().0, 16.0);
        assert_eq!(f.dtype().unwrap().0, "bf16");
        assert_eq!(f.tokens_per_step().unwrap().0, 256.0 * 4096.0);
        let f = read(
            "Namespace(world_size=4, seq_length=1024, global_batch_size=32, fp16=True, bf16=False)",
        );
        assert_eq!(f.world_size().unwrap().0, 4.0);
        assert_eq!(f.dtype().unwrap().0, "fp16");
        assert_eq!(f.tokens_per_step().unwrap().0, 32.0 * 1024.0);
        let f = read("torchrun --nproc_per_node=2 train.py --bf16 --max_seq_length 512 --per_device_train_batch_size 8 --gradient_accumulation_steps 4\n--nnodes 1\n");
        assert_eq!(f.world_size().unwrap().0, 2.0);
        assert_eq!(f.dtype().unwrap().0, "bf16");
        assert_eq!(f.tokens_per_step().unwrap().0, 8.0 * 4.0 * 2.0 * 512.0);
        let f = read("  seq_length ...................................... 8192\n  world_size ...................................... 8\n  bf16 ............................................ True\n");
        assert_eq!(f.number(Fact::SeqLen), Some(8192.0));
        assert_eq!(f.world_size().unwrap().0, 8.0);
        assert_eq!(f.dtype().unwrap().0, "bf16");
        // lit-gpt's `block_size` is its sequence length (a framework's own meaning of a key).
        let mut f = ConfigFacts::of(vocabulary().framework("litgpt"));
        f.read_text("{'model_name': 'phi-2', 'micro_batch_size': 8, 'precision': 'bf16-true', 'n_layer': 32, 'n_head': 32, 'n_embd': 2560, 'padded_vocab_size': 51200, 'block_size': 2048}", "line", &|_| false);
        assert_eq!(f.dtype().unwrap().0, "bf16");
        assert!(f.model().is_some());
        assert_eq!(f.number(Fact::SeqLen), Some(2048.0));
        // `torchrun --standalone` runs on one node.
        let f = read("torchrun --standalone --nproc_per_node=8 /tmp/train.py");
        assert_eq!(f.world_size().unwrap().0, 8.0);
        // A device mesh as a list of names and a list of sizes.
        let f = read("[2025-02-03 09:19:43][I][parallel_dims:80] Building 2-D device mesh with ['dp_shard', 'tp'], [4, 2]");
        assert_eq!(f.world_size().unwrap().0, 8.0);
        let f = read("Building 1-D device mesh with ['dp_shard'], [8, 2]");
        assert_eq!(f.world_size(), None, "lists of two lengths say nothing");
    }

    #[test]
    fn a_more_telling_name_wins_over_an_earlier_one() {
        let f = read("Config param batch_size: 1\nConfig param per_device_batch_size: 4\nConfig param batch_size: 2\n");
        assert_eq!(f.number(Fact::MicroBatch), Some(4.0));
        assert_eq!(
            f.get(Fact::MicroBatch).unwrap().key,
            "per_device_batch_size"
        );
    }

    #[test]
    fn a_metric_named_precision_is_not_the_precision() {
        let f = read("precision: 0.83\nrecall: 0.7\n");
        assert!(f.dtype().is_none());
        assert_eq!(dtype_word("Precision.AMP_FP16").as_deref(), Some("fp16"));
        assert_eq!(dtype_word("torch.bfloat16").as_deref(), Some("bf16"));
        assert_eq!(dtype_word("16"), None);
        let f = read("INFO: composer.trainer.trainer: Using precision Precision.AMP_FP16\n");
        assert_eq!(f.dtype().unwrap().0, "fp16");
        // llm.c's parameter table: Markdown rows, its device and its tokens a step.
        let llmc = vocabulary().framework("llm.c");
        let mut f = ConfigFacts::of(llmc);
        f.read_text("| device                | NVIDIA A800 80GB PCIe                              |\n| precision             | BF16                                               |\n| max_sequence_length T | 1024                                               |\nbatch_size B=56 * seq_len T=1024 * num_processes=1 and total_batch_size=458752\n", "line", &|_| false);
        assert_eq!(f.get(Fact::Device).unwrap().text, "NVIDIA A800 80GB PCIe");
        assert_eq!(f.dtype().unwrap().0, "bf16");
        assert_eq!(f.tokens_per_step().unwrap().0, 458752.0);
    }

    #[test]
    fn devices_and_the_fp16_scaler() {
        let f = read("CUDA capacity: NVIDIA H100 80GB HBM3 with 79.11GiB memory\n[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768\n");
        assert_eq!(f.get(Fact::Device).unwrap().text, "NVIDIA H100 80GB HBM3");
        assert_eq!(f.dtype().unwrap().0, "fp16");
    }
}
