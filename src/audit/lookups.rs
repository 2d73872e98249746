//! The peak each framework's own MFU divides by, as its code looked the device up at a named commit.
//!
//! A framework's lookup is a chain of name tests, first match wins, then a table or a value; what a
//! name no test matches gets is the framework's fallback (torchtitan: the A100's 312 TFLOP/s) or no
//! peak at all (Lightning, Composer: no MFU logged). The chains below are the frameworks' own, as data:
//! each rule is one branch of the framework's `if`/`elif` chain (a nested branch flattened into rules
//! in the same order), with its tests, and the table rows are the framework's table at that commit.
//! `tests/audit_lookups.rs` holds every chain to a line-for-line port of the framework's function over
//! the device names of `../shared/reference/device_cases.csv` and each table's own names.

use crate::peaks::precision::Dtype;

/// The precisions a framework's table row gives, in order.
pub const ROW_DTYPES: [Dtype; 7] = [
    Dtype::Fp64,
    Dtype::Fp32,
    Dtype::Tf32,
    Dtype::Bf16,
    Dtype::Fp16,
    Dtype::Fp8,
    Dtype::Int8,
];

/// A table row: FLOP/s per precision of [`ROW_DTYPES`], `None` where the framework has no entry.
pub type Row = [Option<f64>; 7];

/// llm.c's tensor-core figures of one architecture (`llmc/mfu.h` `PerfData`): TFLOP/s at the spec
/// sheet's tensor-core count and clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Family {
    pub name: &'static str,
    pub tf32: f32,
    pub bf16_32: f32,
    pub fp16_32: f32,
    pub cores: f32,
    pub clock_mhz: f32,
}

/// What a matching rule gives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Then {
    /// This many FLOP/s, whatever the precision (frameworks that assume BF16).
    Flops(f64),
    /// This row of the chain's table, at the run's precision.
    Key(&'static str),
    /// Lightning's GeForce key: `rtx ` + the name's fourth word (split on spaces) + ` super` or ` ti`
    /// where the name holds that text.
    GeforceKey,
    /// The name stays as it is, which no table row is named (Lightning's H200 without `sxm1`/`nvl1`).
    NameAsKey,
    /// llm.c: an architecture's figure scaled by this card's tensor cores and clock.
    Scaled {
        family: Family,
        cores: f32,
        clock_mhz: f32,
    },
    /// A value the log cannot tell (a device property the framework queries at run time).
    Unknowable(&'static str),
}

/// One branch of a framework's chain: the name starts with `prefix` and holds every text of `all`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    pub prefix: &'static str,
    pub all: &'static [&'static str],
    pub then: Then,
}

const fn has(all: &'static [&'static str], then: Then) -> Rule {
    Rule {
        prefix: "",
        all,
        then,
    }
}

/// How a chain compares a name with a rule's texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Matching {
    /// The text occurs in the name.
    Substring,
    /// The text is the whole name (llm.c's `strcmp`).
    Whole,
}

/// One framework's peak lookup at one commit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lookup {
    pub framework: &'static str,
    /// Repository, file, function and commit.
    pub source: &'static str,
    /// The name is lower-cased before the tests.
    pub lower: bool,
    pub matching: Matching,
    pub rules: &'static [Rule],
    pub table: &'static [(&'static str, Row)],
    /// What a name no rule matches gets: a peak and what the framework prints, or no peak.
    pub fallback: Option<(f64, &'static str)>,
    /// What the framework says of a device it has no peak for.
    pub unknown: &'static str,
    /// The only precisions it computes MFU at (OLMo-core: BF16); `None`: any.
    pub precisions: Option<&'static [Dtype]>,
}

/// A framework's peak for a device, and how its lookup came to it.
#[derive(Debug, Clone, PartialEq)]
pub struct Emulated {
    pub peak: Option<f64>,
    /// The branch that matched, or the fallback, in words.
    pub why: String,
    /// The peak is the framework's fallback for a device it does not know.
    pub fallback: bool,
}

fn tflops(flops: f64) -> String {
    let t = flops / 1e12;
    if (t - t.round()).abs() < 1e-9 {
        format!("{t:.0}")
    } else {
        format!("{}", (t * 1000.0).round() / 1000.0)
    }
}

impl Lookup {
    /// Whether the peak depends on the device (nanoGPT's does not).
    pub fn needs_device(&self) -> bool {
        !self
            .rules
            .iter()
            .any(|r| r.prefix.is_empty() && r.all.is_empty())
    }

    fn matches(&self, name: &str, rule: &Rule) -> bool {
        name.starts_with(rule.prefix)
            && rule.all.iter().all(|text| match self.matching {
                Matching::Substring => name.contains(text),
                Matching::Whole => name == *text,
            })
    }

    fn row(&self, key: &str) -> Option<&Row> {
        self.table.iter().find(|(k, _)| *k == key).map(|(_, r)| r)
    }

    /// The framework's peak for the device named `device` at precision `dtype` (its precision where
    /// the framework ignores it).
    pub fn peak(&self, device: &str, dtype: Option<Dtype>) -> Emulated {
        let at = |p: Option<f64>, why: String| Emulated {
            peak: p,
            why,
            fallback: false,
        };
        if let (Some(allowed), Some(d)) = (self.precisions, dtype) {
            if !allowed.contains(&d) {
                return at(
                    None,
                    format!("{} computes no MFU at {}", self.framework, d.as_str()),
                );
            }
        }
        let name = if self.lower {
            device.to_lowercase()
        } else {
            device.to_string()
        };
        let Some(rule) = self.rules.iter().find(|r| self.matches(&name, r)) else {
            return match self.fallback {
                Some((peak, says)) => Emulated {
                    peak: Some(peak),
                    why: format!(
                        "no branch matches '{device}', so its fallback, {} TFLOP/s (\"{}\")",
                        tflops(peak),
                        says.replace("{name}", device)
                    ),
                    fallback: true,
                },
                None => at(
                    None,
                    format!(
                        "no branch matches '{device}': no peak (\"{}\")",
                        self.unknown.replace("{name}", device)
                    ),
                ),
            };
        };
        let test = if rule.all.is_empty() && rule.prefix.is_empty() {
            "whatever the device".to_string()
        } else {
            let mut texts: Vec<String> = rule.all.iter().map(|t| format!("'{t}'")).collect();
            if !rule.prefix.is_empty() {
                texts.insert(0, format!("starts with '{}'", rule.prefix));
            }
            let verb = match self.matching {
                Matching::Substring => "in",
                Matching::Whole => "is",
            };
            let name_as = if self.lower {
                "the lower-cased name"
            } else {
                "the name"
            };
            format!("{} {verb} {name_as}", texts.join(" and "))
        };
        let by_precision = |row: &Row, key: &str| {
            let Some(d) = dtype else {
                return at(
                    None,
                    format!("{test}: row '{key}', at a precision the log does not say"),
                );
            };
            match ROW_DTYPES.iter().position(|x| *x == d).and_then(|i| row[i]) {
                Some(p) => at(
                    Some(p),
                    format!(
                        "{test}: row '{key}' at {}, {} TFLOP/s",
                        d.as_str(),
                        tflops(p)
                    ),
                ),
                None => at(
                    None,
                    format!(
                        "{test}: row '{key}' has no {} entry (\"{}\")",
                        d.as_str(),
                        self.unknown.replace("{name}", device)
                    ),
                ),
            }
        };
        match rule.then {
            Then::Flops(p) => at(Some(p), format!("{test}: {} TFLOP/s", tflops(p))),
            Then::Key(key) => match self.row(key) {
                Some(row) => by_precision(row, key),
                None => at(None, format!("{test}: '{key}', which its table lacks")),
            },
            Then::GeforceKey => {
                let key = lightning_geforce_key(&name);
                match key.as_deref().and_then(|k| self.row(k)) {
                    Some(row) => by_precision(row, key.as_deref().unwrap_or_default()),
                    None => at(
                        None,
                        format!(
                            "{test}: key '{}', which its table lacks: no peak",
                            key.unwrap_or_default()
                        ),
                    ),
                }
            }
            Then::NameAsKey => at(
                None,
                format!("{test}: the name is left as the key, which its table lacks: no peak"),
            ),
            Then::Scaled {
                family,
                cores,
                clock_mhz,
            } => {
                let base = match dtype {
                    Some(Dtype::Bf16) => family.bf16_32,
                    Some(Dtype::Fp16) => family.fp16_32,
                    Some(Dtype::Fp32) | Some(Dtype::Tf32) => family.tf32,
                    _ => -1.0,
                };
                if base < 0.0 {
                    return at(
                        None,
                        format!(
                            "{test}: {} has no figure at {}",
                            family.name,
                            dtype.map_or("an unknown precision", |d| d.as_str())
                        ),
                    );
                }
                // In f32, as llm.c computes it.
                let scaled = base * (cores / family.cores) * (clock_mhz / family.clock_mhz);
                let p = f64::from(scaled) * 1e12;
                at(
                    Some(p),
                    format!(
                        "{test}: {} {base} TFLOP/s x {cores}/{} tensor cores x {clock_mhz}/{} MHz = {} TFLOP/s",
                        family.name, family.cores, family.clock_mhz,
                        tflops(p)
                    ),
                )
            }
            Then::Unknowable(what) => at(None, format!("{test}: {what}")),
        }
    }
}

/// Lightning's key for a GeForce name (lower-cased): `None` where the name has no fourth word.
pub fn lightning_geforce_key(lower: &str) -> Option<String> {
    let number = lower.split(' ').nth(3)?;
    let extra = if lower.contains("super") {
        " super"
    } else if lower.contains("ti") {
        " ti"
    } else {
        ""
    };
    Some(format!("rtx {number}{extra}"))
}

/// pytorch/torchtitan `torchtitan/tools/utils.py` `get_peak_flops` at b5bcd76 (2026-08-21): BF16
/// peaks by substring, case as written; a name no branch matches gets the A100's. Before it, when
/// `lspci` lists a line with both `NVIDIA` and `H100`, that line replaces the name (not emulated: the
/// log does not show it). Intel's Max 1550 and AWS Neuron read device properties at run time.
pub const TORCHTITAN: Lookup = Lookup {
    framework: "torchtitan",
    source: "pytorch/torchtitan torchtitan/tools/utils.py get_peak_flops @ b5bcd76",
    lower: false,
    matching: Matching::Substring,
    rules: &[
        has(&["A100"], Then::Flops(312e12)),
        has(&["A6000"], Then::Flops(154.85e12)),
        has(&["H100", "NVL"], Then::Flops(835e12)),
        has(&["H100", "PCIe"], Then::Flops(756e12)),
        has(&["H100"], Then::Flops(989e12)),
        has(&["H200"], Then::Flops(989e12)),
        has(&["H20"], Then::Flops(148e12)),
        has(&["GB200"], Then::Flops(2.5e15)),
        has(&["GB300"], Then::Flops(2.5e15)),
        has(&["B300"], Then::Flops(2.25e15)),
        has(&["B200"], Then::Flops(2.25e15)),
        has(&["MI355X"], Then::Flops(2500e12)),
        has(&["MI300X"], Then::Flops(1300e12)),
        has(&["MI325X"], Then::Flops(1300e12)),
        has(&["MI250X"], Then::Flops(191.5e12)),
        has(
            &["Data Center GPU Max 1550"],
            Then::Unknowable(
                "512 x the device's compute units x 1300 MHz, which the log does not say",
            ),
        ),
        has(&["l40s"], Then::Flops(362e12)),
        has(
            &["neuron"],
            Then::Unknowable("the Neuron core's type, which the log does not say"),
        ),
        Rule {
            prefix: "TPU",
            all: &["v4"],
            then: Then::Flops(275e12),
        },
        Rule {
            prefix: "TPU",
            all: &["v5e"],
            then: Then::Flops(197e12),
        },
        Rule {
            prefix: "TPU",
            all: &["v5p"],
            then: Then::Flops(459e12),
        },
        Rule {
            prefix: "TPU",
            all: &["v6e"],
            then: Then::Flops(918e12),
        },
        Rule {
            prefix: "TPU",
            all: &["v7"],
            then: Then::Flops(2307e12 / 2.0),
        },
    ],
    table: &[],
    fallback: Some((312e12, "Peak flops undefined for: {name}, fallback to A100")),
    unknown: "",
    precisions: None,
};

/// karpathy/nanoGPT `model.py` `GPT.estimate_mfu` at 3adf61e (2025-11-12): the A100's BF16 peak,
/// whatever the device.
pub const NANOGPT: Lookup = Lookup {
    framework: "nanoGPT",
    source: "karpathy/nanoGPT model.py GPT.estimate_mfu @ 3adf61e",
    lower: false,
    matching: Matching::Substring,
    rules: &[has(&[], Then::Flops(312e12))],
    table: &[],
    fallback: None,
    unknown: "",
    precisions: None,
};

/// karpathy/nanochat `scripts/base_train.py` from its first commit 3a5e0bc (2025-10-13) to 2955650
/// (2026-01-17): `promised_flops_per_sec_h100 = 989e12 * ddp_world_size`, the H100 SXM's BF16 peak
/// whatever the device. From 2955650 on it looks the device up (`get_peak_flops` in
/// `nanochat/common.py`) and prints the peak it took (`GPU: ... | Peak FLOPS (BF16): 7.10e+13`), which
/// the audit reads from the log before it asks this emulation.
pub const NANOCHAT: Lookup = Lookup {
    framework: "nanochat",
    source: "karpathy/nanochat scripts/base_train.py @ 3a5e0bc (to 2955650, after which the log prints its peak)",
    lower: false,
    matching: Matching::Substring,
    rules: &[has(&[], Then::Flops(989e12))],
    table: &[],
    fallback: None,
    unknown: "",
    precisions: None,
};

/// volcengine/verl `verl/utils/flops_counter.py` `get_device_flops` at b178a3c (2026-01-29): the
/// first key of `_DEVICE_FLOPS`, in reverse sorted order, that the name holds; unknown devices get
/// infinity (MFU 0).
pub const VERL: Lookup = Lookup {
    framework: "verl",
    source: "volcengine/verl verl/utils/flops_counter.py get_device_flops @ b178a3c",
    lower: false,
    matching: Matching::Substring,
    // _DEVICE_FLOPS's keys in reverse sorted order, as get_device_flops walks them.
    rules: &[
        has(&["RTX 3070 Ti"], Then::Flops(21.75e12)),
        has(&["MI300X"], Then::Flops(1336e12)),
        has(&["L40S"], Then::Flops(362.05e12)),
        has(&["L40"], Then::Flops(181.05e12)),
        has(&["L20"], Then::Flops(119.5e12)),
        has(&["H800"], Then::Flops(989e12)),
        has(&["H200"], Then::Flops(989e12)),
        has(&["H20"], Then::Flops(148e12)),
        has(&["H100"], Then::Flops(989e12)),
        has(&["GB200"], Then::Flops(2.5e15)),
        has(&["CPU"], Then::Flops(448e9)),
        has(&["B200"], Then::Flops(2.25e15)),
        has(&["Ascend910"], Then::Flops(354e12)),
        has(&["A800"], Then::Flops(312e12)),
        has(&["A40"], Then::Flops(149.7e12)),
        has(&["A100"], Then::Flops(312e12)),
        has(&["910B"], Then::Flops(354e12)),
    ],
    table: &[],
    fallback: None,
    unknown: "unknown device: float('inf') FLOP/s, so MFU 0",
    precisions: None,
};

/// Lightning-AI/pytorch-lightning `src/lightning/fabric/utilities/throughput.py`
/// `get_available_flops` and `_CUDA_FLOPS` at release 2.6.5 (be98784, 2026-05-27; the table as
/// e55650d left it): the lower-cased name mapped to a table key, then the run's precision (FP32 runs
/// on Ampere or later count at TF32 unless `torch.set_float32_matmul_precision("highest")`: give
/// `tf32` then). `l4` is tested before the other cards, so an L40S reads as an L4.
pub const LIGHTNING: Lookup = Lookup {
    framework: "Lightning",
    source: "Lightning-AI/pytorch-lightning src/lightning/fabric/utilities/throughput.py get_available_flops @ 2.6.5 (be98784)",
    lower: true,
    matching: Matching::Substring,
    rules: &[
        has(&["h200", "sxm1"], Then::Key("h200 sxm1")),
        has(&["h200", "nvl1"], Then::Key("h200 nvl1")),
        has(&["h200"], Then::NameAsKey),
        has(&["h100", "hbm3"], Then::Key("h100 sxm")),
        has(&["h100", "nvl"], Then::Key("h100 nvl")),
        has(&["h100", "pcie"], Then::Key("h100 pcie")),
        has(&["h100", "hbm2e"], Then::Key("h100 pcie")),
        has(&["h100"], Then::NameAsKey),
        has(&["l4", "tesla"], Then::Key("l40")),
        has(&["l4"], Then::Key("l4")),
        has(&["geforce rtx"], Then::GeforceKey),
        has(&["a6000"], Then::Key("a6000")),
        has(&["a100"], Then::Key("a100")),
        has(&["a40"], Then::Key("a40")),
        has(&["a10g"], Then::Key("a10g")),
        has(&["t4"], Then::Key("t4")),
        has(&["quadro rtx 5000"], Then::Key("quadro rtx 5000")),
        has(&["titan rtx"], Then::Key("titan rtx")),
        has(&["v100-sxm"], Then::Key("v100 sxm")),
        has(&["v100-pcie"], Then::Key("v100 pcie")),
        has(&["v100s-pcie"], Then::Key("v100s pcie")),
    ],
    // fp64, fp32, tf32, bf16, fp16, fp8, int8
    table: &[
        (
            "h200 sxm1",
            [Some(34e12), Some(67e12), Some(990e12), Some(2.0e15), Some(2.0e15), None, Some(4.0e15)],
        ),
        (
            "h200 nvl1",
            [Some(30e12), Some(60e12), Some(840e12), Some(1.7e15), Some(1.7e15), None, Some(3.3e15)],
        ),
        (
            "h100 nvl",
            [Some(67e12), Some(133.8e12), Some(989.4e12), Some(1978.8e12), Some(1978.8e12), None, Some(3957.8e12)],
        ),
        (
            "h100 sxm",
            [Some(33.5e12), Some(66.9e12), Some(494.7e12), Some(989.4e12), Some(989.4e12), None, Some(1978.9e12)],
        ),
        (
            "h100 pcie",
            [Some(25.6e12), Some(51.2e12), Some(378e12), Some(756e12), Some(756e12), None, Some(1513e12)],
        ),
        ("rtx 4090", [None, Some(82.6e12), Some(82.6e12), Some(82.6e12), Some(82.6e12), None, Some(660.6e12)]),
        ("rtx 4080", [None, Some(48.7e12), Some(48.7e12), Some(48.7e12), Some(48.7e12), None, Some(389.9e12)]),
        ("rtx 4080 super", [None, Some(52.2e12), Some(52.2e12), Some(52.2e12), Some(52.2e12), None, Some(417.6e12)]),
        ("l4", [None, Some(30.3e12), Some(60e12), Some(121e12), Some(121e12), None, Some(242e12)]),
        ("l40", [None, Some(90.5e12), Some(90.5e12), Some(181e12), Some(181e12), None, Some(362e12)]),
        ("a100", [Some(9.7e12), Some(19.5e12), Some(156e12), Some(312e12), Some(312e12), None, Some(624e12)]),
        ("a6000", [None, Some(38.7e12), Some(77.4e12), Some(38.7e12), Some(38.7e12), None, Some(309.7e12)]),
        ("a40", [None, Some(37.4e12), Some(74.8e12), Some(37.4e12), Some(37.4e12), None, Some(299.3e12)]),
        ("a10g", [None, Some(31.2e12), Some(62.5e12), Some(125e12), Some(125e12), None, Some(250e12)]),
        ("rtx 3090 ti", [None, Some(40e12), Some(40e12), Some(40e12), Some(40e12), None, Some(320e12)]),
        ("rtx 3090", [None, Some(35.6e12), Some(35.6e12), Some(35.6e12), Some(35.6e12), None, Some(284e12)]),
        ("rtx 3080 ti", [None, Some(34.1e12), Some(34.1e12), Some(34.1e12), Some(34.1e12), None, Some(272.8e12)]),
        ("rtx 3080", [None, Some(29.8e12), Some(29.8e12), Some(29.8e12), Some(29.8e12), None, Some(238e12)]),
        ("rtx 3070", [None, Some(20.3e12), Some(20.3e12), Some(20.3e12), Some(20.3e12), None, Some(162.6e12)]),
        ("t4", [None, Some(8.1e12), None, None, Some(65e12), None, Some(130e12)]),
        ("quadro rtx 5000", [None, Some(11.2e12), None, None, Some(89.2e12), None, None]),
        ("rtx 2080 super", [None, Some(11.2e12), None, None, Some(22.3e12), None, Some(178.4e12)]),
        ("rtx 2080 ti", [None, Some(14.2e12), None, None, Some(28.5e12), None, Some(227.7e12)]),
        ("rtx 2080", [None, Some(10.6e12), None, None, Some(21.2e12), None, Some(169.6e12)]),
        ("rtx 2070 super", [None, Some(9.1e12), None, None, Some(18.1e12), None, Some(145e12)]),
        ("titan rtx", [None, Some(16.3e12), None, None, Some(32.6e12), None, Some(261e12)]),
        ("v100 sxm", [Some(7.8e12), Some(15.7e12), None, None, Some(125e12), None, None]),
        ("v100 pcie", [Some(7e12), Some(14e12), None, None, Some(112e12), None, None]),
        ("v100s pcie", [Some(8.2e12), Some(16.4e12), None, None, Some(130e12), None, None]),
    ],
    fallback: None,
    unknown: "FLOPs not found for '{name}'",
    precisions: None,
};

/// mosaicml/composer `composer/callbacks/speed_monitor.py` `get_gpu_flops_available` and
/// `GPU_AVAILABLE_FLOPS` at 6405188 (2026-04-29): the lower-cased name mapped to a key (`a100` is a
/// substring of `rtx a1000`, which reads as an A100), then the precision (`amp_bf16` as
/// `bf16`, whose rows are the same).
pub const COMPOSER: Lookup = Lookup {
    framework: "Composer",
    source:
        "mosaicml/composer composer/callbacks/speed_monitor.py get_gpu_flops_available @ 6405188",
    lower: true,
    matching: Matching::Substring,
    rules: &[
        has(&["h200"], Then::Key("h200-sxm")),
        has(&["h100", "hbm3"], Then::Key("h100-sxm")),
        has(&["h100", "pcie"], Then::Key("h100-pcie")),
        has(&["h100", "hbm2e"], Then::Key("h100-pcie")),
        has(&["a100"], Then::Key("a100")),
        has(&["a10"], Then::Key("a10")),
        has(&["v100-sxm"], Then::Key("v100-sxm")),
        has(&["v100-pcie"], Then::Key("v100-pcie")),
        has(&["t4"], Then::Key("t4")),
    ],
    // fp64, fp32, tf32, bf16, fp16, fp8, int8
    table: &[
        (
            "h200-sxm",
            [
                Some(67e12),
                Some(67e12),
                Some(494.5e12),
                Some(989.5e12),
                Some(989.5e12),
                Some(1979e12),
                Some(1979e12),
            ],
        ),
        (
            "h100-sxm",
            [
                Some(67e12),
                Some(67e12),
                Some(494.5e12),
                Some(989.5e12),
                Some(989.5e12),
                Some(1979e12),
                Some(1979e12),
            ],
        ),
        (
            "h100-pcie",
            [
                Some(51e12),
                Some(51e12),
                Some(378e12),
                Some(756.5e12),
                Some(756.5e12),
                Some(1513e12),
                Some(1513e12),
            ],
        ),
        (
            "a100",
            [
                Some(19.5e12),
                Some(19.5e12),
                Some(156e12),
                Some(312e12),
                Some(312e12),
                None,
                None,
            ],
        ),
        (
            "a10",
            [
                None,
                Some(31.2e12),
                Some(62.5e12),
                Some(125e12),
                Some(125e12),
                None,
                None,
            ],
        ),
        (
            "v100-sxm",
            [
                Some(7.8e12),
                Some(15.7e12),
                None,
                None,
                Some(125e12),
                None,
                None,
            ],
        ),
        (
            "v100-pcie",
            [
                Some(7e12),
                Some(14e12),
                None,
                None,
                Some(112e12),
                None,
                None,
            ],
        ),
        (
            "v100s-pcie",
            [
                Some(8.2e12),
                Some(16.4e12),
                None,
                None,
                Some(130e12),
                None,
                None,
            ],
        ),
        (
            "t4",
            [
                None,
                Some(8.1e12),
                None,
                None,
                Some(65e12),
                None,
                Some(130e12),
            ],
        ),
    ],
    fallback: None,
    unknown: "gpu_flop count not found for {name}: MFU cannot be calculated and reported",
    precisions: None,
};

/// allenai/OLMo-core `src/olmo_core/train/callbacks/speed_monitor.py` `SpeedMonitorCallback.pre_train`
/// at fa6c501 (2026-06-22): BF16 runs only; H100 variants and B200 by substring, every other device
/// the A100's 312 TFLOP/s (156 between 2025-08-11 and 2026-02-20).
pub const OLMO_CORE: Lookup = Lookup {
    framework: "OLMo-core",
    source: "allenai/OLMo-core src/olmo_core/train/callbacks/speed_monitor.py pre_train @ fa6c501",
    lower: false,
    matching: Matching::Substring,
    rules: &[
        has(&["H100", "NVL"], Then::Flops(835.5e12)),
        has(&["H100", "PCIe"], Then::Flops(756.5e12)),
        has(&["H100"], Then::Flops(989.5e12)),
        has(&["B200"], Then::Flops(2.25e15)),
    ],
    table: &[],
    fallback: Some((312e12, "for other GPU types, assume A100")),
    unknown: "",
    precisions: Some(&[Dtype::Bf16]),
};

const VOLTA: Family = Family {
    name: "VOLTA",
    tf32: 125.0,
    bf16_32: -1.0,
    fp16_32: 125.0,
    cores: 640.0,
    clock_mhz: 1530.0,
};
const AMPERE_DATACENTER: Family = Family {
    name: "AMPERE_DATACENTER",
    tf32: 156.0,
    bf16_32: 312.0,
    fp16_32: 312.0,
    cores: 432.0,
    clock_mhz: 1410.0,
};
const AMPERE_CONSUMER: Family = Family {
    name: "AMPERE_CONSUMER",
    tf32: 40.0,
    bf16_32: 80.0,
    fp16_32: 80.0,
    cores: 336.0,
    clock_mhz: 1860.0,
};
const HOPPER: Family = Family {
    name: "HOPPER",
    tf32: 378.0,
    bf16_32: 756.0,
    fp16_32: 756.0,
    cores: 456.0,
    clock_mhz: 1620.0,
};
const ADA: Family = Family {
    name: "ADA",
    tf32: 82.6,
    bf16_32: 165.2,
    fp16_32: 165.2,
    cores: 512.0,
    clock_mhz: 2520.0,
};

const fn card(name: &'static [&'static str], family: Family, cores: f32, clock_mhz: f32) -> Rule {
    has(
        name,
        Then::Scaled {
            family,
            cores,
            clock_mhz,
        },
    )
}

/// karpathy/llm.c `llmc/mfu.h` `get_flops_promised` at f1e2ace (2025-05-10): the CUDA name compared
/// whole (`strcmp`), its architecture's figure scaled by its tensor cores and clock; any other name
/// gets -1, which llm.c prints as `-100.0%` MFU.
pub const LLMC: Lookup = Lookup {
    framework: "llm.c",
    source: "karpathy/llm.c llmc/mfu.h get_flops_promised @ f1e2ace",
    lower: false,
    matching: Matching::Whole,
    rules: &[
        card(&["Tesla V100-SXM2-16GB"], VOLTA, 640.0, 1530.0),
        card(&["Tesla V100-PCIE-32GB"], VOLTA, 640.0, 1530.0),
        card(&["NVIDIA A100-PCIE-40GB"], AMPERE_DATACENTER, 432.0, 1410.0),
        card(&["NVIDIA A100-PCIE-80GB"], AMPERE_DATACENTER, 432.0, 1410.0),
        card(&["NVIDIA A100-SXM4-40GB"], AMPERE_DATACENTER, 432.0, 1410.0),
        card(&["NVIDIA A100-SXM4-80GB"], AMPERE_DATACENTER, 432.0, 1410.0),
        card(&["NVIDIA RTX A2000"], AMPERE_CONSUMER, 104.0, 1200.0),
        card(&["NVIDIA RTX A4000"], AMPERE_CONSUMER, 192.0, 1560.0),
        card(&["NVIDIA RTX A4500"], AMPERE_CONSUMER, 224.0, 1650.0),
        card(&["NVIDIA RTX A5000"], AMPERE_CONSUMER, 256.0, 1695.0),
        card(&["NVIDIA RTX A5500"], AMPERE_CONSUMER, 320.0, 1770.0),
        card(&["NVIDIA RTX A6000"], AMPERE_CONSUMER, 336.0, 1800.0),
        card(
            &["NVIDIA GeForce RTX 3090 Ti"],
            AMPERE_CONSUMER,
            336.0,
            1860.0,
        ),
        card(&["NVIDIA GeForce RTX 3090"], AMPERE_CONSUMER, 328.0, 1695.0),
        card(
            &["NVIDIA GeForce RTX 3080 Ti"],
            AMPERE_CONSUMER,
            320.0,
            1665.0,
        ),
        card(&["NVIDIA GeForce RTX 3080"], AMPERE_CONSUMER, 272.0, 1710.0),
        card(
            &["NVIDIA GeForce RTX 3070 Ti"],
            AMPERE_CONSUMER,
            192.0,
            1770.0,
        ),
        card(&["NVIDIA GeForce RTX 3070"], AMPERE_CONSUMER, 184.0, 1725.0),
        card(
            &["NVIDIA GeForce RTX 3060 Ti"],
            AMPERE_CONSUMER,
            152.0,
            1665.0,
        ),
        card(&["NVIDIA GeForce RTX 3060"], AMPERE_CONSUMER, 112.0, 1777.0),
        card(&["NVIDIA RTX A2000 ADA"], ADA, 88.0, 2130.0),
        card(&["NVIDIA RTX A4000 ADA"], ADA, 192.0, 2175.0),
        card(&["NVIDIA RTX A4500 ADA"], ADA, 224.0, 2580.0),
        card(&["NVIDIA RTX A5000 ADA"], ADA, 400.0, 2550.0),
        card(&["NVIDIA RTX A5880 ADA"], ADA, 440.0, 2460.0),
        card(&["NVIDIA RTX A6000 ADA"], ADA, 568.0, 2505.0),
        card(&["NVIDIA GeForce RTX 4090"], ADA, 512.0, 2520.0),
        card(&["NVIDIA GeForce RTX 4080 SUPER"], ADA, 320.0, 2550.0),
        card(&["NVIDIA GeForce RTX 4080"], ADA, 304.0, 2505.0),
        card(&["NVIDIA GeForce RTX 4070 Ti SUPER"], ADA, 264.0, 2610.0),
        card(&["NVIDIA GeForce RTX 4070 Ti"], ADA, 240.0, 2610.0),
        card(&["NVIDIA GeForce RTX 4070 SUPER"], ADA, 224.0, 2475.0),
        card(&["NVIDIA GeForce RTX 4070"], ADA, 184.0, 2475.0),
        card(&["NVIDIA GeForce RTX 4060 Ti"], ADA, 136.0, 2535.0),
        card(&["NVIDIA GeForce RTX 4060"], ADA, 96.0, 2460.0),
        card(&["NVIDIA H100 PCIe"], HOPPER, 456.0, 1620.0),
        card(&["NVIDIA H100 80GB HBM3"], HOPPER, 528.0, 1830.0),
    ],
    table: &[],
    fallback: None,
    unknown: "get_flops_promised returns -1: MFU printed as -100.0%",
    precisions: None,
};

/// Every emulated lookup, by framework name.
pub const LOOKUPS: [&Lookup; 8] = [
    &TORCHTITAN,
    &NANOGPT,
    &NANOCHAT,
    &VERL,
    &LIGHTNING,
    &COMPOSER,
    &OLMO_CORE,
    &LLMC,
];

/// The emulated lookup of the framework named `name` (as [`Lookup::framework`], any case).
pub fn lookup(name: &str) -> Option<&'static Lookup> {
    LOOKUPS
        .iter()
        .copied()
        .find(|l| l.framework.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peak(l: &Lookup, device: &str, dtype: Dtype) -> Option<f64> {
        l.peak(device, Some(dtype)).peak
    }

    #[test]
    fn the_traps_each_framework_is_known_for() {
        // torchtitan: an RTX 5090 falls back to the A100; its lower-case "l40s" never matches CUDA's
        // "NVIDIA L40S", which falls back too.
        let e = TORCHTITAN.peak("NVIDIA GeForce RTX 5090", Some(Dtype::Bf16));
        assert_eq!((e.peak, e.fallback), (Some(312e12), true));
        assert!(e
            .why
            .contains("Peak flops undefined for: NVIDIA GeForce RTX 5090"));
        assert_eq!(peak(&TORCHTITAN, "NVIDIA L40S", Dtype::Bf16), Some(312e12));
        assert_eq!(
            peak(&TORCHTITAN, "NVIDIA H100 NVL", Dtype::Bf16),
            Some(835e12)
        );
        assert_eq!(peak(&TORCHTITAN, "TPU v5p", Dtype::Bf16), Some(459e12));
        // Lightning: "l4" is in "nvidia l40s".
        assert_eq!(peak(&LIGHTNING, "NVIDIA L40S", Dtype::Bf16), Some(121e12));
        assert_eq!(
            peak(&LIGHTNING, "NVIDIA GeForce RTX 4090", Dtype::Bf16),
            Some(82.6e12)
        );
        assert_eq!(
            peak(&LIGHTNING, "NVIDIA GeForce RTX 5090", Dtype::Bf16),
            None
        );
        assert_eq!(peak(&LIGHTNING, "NVIDIA H200", Dtype::Bf16), None);
        assert_eq!(peak(&LIGHTNING, "Tesla T4", Dtype::Bf16), None);
        assert_eq!(peak(&LIGHTNING, "Tesla T4", Dtype::Fp16), Some(65e12));
        // Composer: "nvidia rtx a1000" holds "a100"; an A10G holds "a10".
        assert_eq!(
            peak(&COMPOSER, "NVIDIA RTX A1000", Dtype::Bf16),
            Some(312e12)
        );
        assert_eq!(peak(&COMPOSER, "NVIDIA A10G", Dtype::Bf16), Some(125e12));
        assert_eq!(
            peak(&COMPOSER, "NVIDIA H100 80GB HBM3", Dtype::Fp8),
            Some(1979e12)
        );
        assert_eq!(peak(&COMPOSER, "NVIDIA L40S", Dtype::Bf16), None);
        // verl walks its keys in reverse sorted order: "H200" before "H20".
        assert_eq!(peak(&VERL, "NVIDIA H200", Dtype::Bf16), Some(989e12));
        assert_eq!(peak(&VERL, "NVIDIA H20", Dtype::Bf16), Some(148e12));
        assert_eq!(peak(&VERL, "NVIDIA GeForce RTX 4090", Dtype::Bf16), None);
        // nanoGPT: the A100 whatever the device; nanochat's first versions: the H100 SXM.
        assert_eq!(peak(&NANOGPT, "Apple M2", Dtype::Fp32), Some(312e12));
        assert_eq!(
            peak(&NANOCHAT, "NVIDIA GeForce RTX 4090", Dtype::Bf16),
            Some(989e12)
        );
        // OLMo-core: BF16 only; the A100 for anything but H100 and B200.
        assert_eq!(
            peak(&OLMO_CORE, "NVIDIA H100 80GB HBM3", Dtype::Bf16),
            Some(989.5e12)
        );
        assert_eq!(peak(&OLMO_CORE, "NVIDIA L40S", Dtype::Bf16), Some(312e12));
        assert_eq!(peak(&OLMO_CORE, "NVIDIA H100 80GB HBM3", Dtype::Fp32), None);
        // llm.c: whole names, scaled in f32.
        let h100 = peak(&LLMC, "NVIDIA H100 80GB HBM3", Dtype::Bf16).unwrap();
        assert!((h100 / 1e12 - 988.842).abs() < 1e-3, "{h100}");
        assert_eq!(
            peak(&LLMC, "NVIDIA A100-SXM4-80GB", Dtype::Bf16),
            Some(312e12)
        );
        assert_eq!(peak(&LLMC, "NVIDIA H100 NVL", Dtype::Bf16), None);
        assert_eq!(peak(&LLMC, "Tesla V100-SXM2-16GB", Dtype::Bf16), None);
        assert_eq!(lookup("LIGHTNING").map(|l| l.framework), Some("Lightning"));
    }
}
