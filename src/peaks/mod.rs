//! Peak FLOP/s: the table, the name matcher, the precision reader, and the resolver that joins them.
//!
//! The resolver answers one question: for a device name (or a list of names, one per rank) and a precision
//! spelling, what is the dense peak FLOP/s of one device? The answer is a number or null, never a guess, and
//! it carries the reason when it is null so the caller can report it.

pub mod matcher;
pub mod pattern;
pub mod precision;
pub mod sources;
pub mod table;

use std::sync::{Arc, LazyLock};

pub use matcher::{Found, MatchOutcome, Matcher, NoMatch};
pub use pattern::{normalize, tokenize, Pattern};
pub use precision::{parse_dtype, parse_precision, Dtype, Precision};
pub use sources::{cited_in, cites_vendor, legend, source_kind, Source, SourceKind};
pub use table::{FlopsPerSecond, PeakEntry, PeakTable, TableError};

/// How peaks are resolved beyond the table itself.
#[derive(Debug, Clone, Default)]
pub struct ResolveOptions {
    /// `--peak-flops`: one peak for every row, whatever the device or precision.
    pub forced_peak: Option<FlopsPerSecond>,
    /// `--model-dtype`: what accelerate's `mixed_precision = "no"` means for this run.
    pub model_dtype: Option<Dtype>,
}

/// Why a peak is null.
#[derive(Debug, Clone, PartialEq)]
pub enum Unresolved {
    /// No device name was given.
    NoDevice,
    /// No precision was given.
    NoDtype,
    /// The device name matched nothing usable (see [`NoMatch`]).
    Device { name: String, why: NoMatch },
    /// The precision spelling is not one we know.
    Dtype { spelling: String },
    /// `no` (model's own dtype) without `--model-dtype`.
    ModelDtypeUnknown,
    /// The device is known but has no published rate for this precision (T4 bf16).
    NoRate { device: String, dtype: Dtype },
}

impl std::fmt::Display for Unresolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unresolved::NoDevice => write!(f, "no device name"),
            Unresolved::NoDtype => write!(f, "no precision"),
            Unresolved::Device { name, why } => match why {
                NoMatch::Empty => write!(f, "empty device name"),
                NoMatch::Unmatched => write!(f, "unknown device '{name}'"),
                NoMatch::CutDown { qualifier, .. } => write!(
                    f,
                    "device '{name}' is a cut-down variant ('{qualifier}') with no entry of its own"
                ),
                NoMatch::Ambiguous { .. } => {
                    write!(f, "device '{name}' matches several entries equally")
                }
            },
            Unresolved::Dtype { spelling } => write!(f, "unknown precision '{spelling}'"),
            Unresolved::ModelDtypeUnknown => write!(
                f,
                "precision 'no' means the model's own dtype: give it with --model-dtype"
            ),
            Unresolved::NoRate { device, dtype } => {
                write!(f, "{device} has no {dtype} rate")
            }
        }
    }
}

impl Unresolved {
    /// What the user can do about it, in the command line's terms.
    pub fn hint(&self) -> &'static str {
        match self {
            Unresolved::NoDevice => "give the device with --device NAME or --map device_name=COLUMN",
            Unresolved::NoDtype => "give the precision with --dtype (bf16, fp16, fp8, tf32, fp32, ...)",
            Unresolved::Device { .. } => {
                "add the device with --peaks FILE or force a value with --peak-flops F"
            }
            Unresolved::Dtype { .. } => {
                "give a precision mfu knows with --dtype (mfu lookup --help lists the spellings)"
            }
            Unresolved::ModelDtypeUnknown => "give the model's own precision with --model-dtype",
            Unresolved::NoRate { .. } => {
                "the device has no published rate for this precision: check --dtype, or force a value with --peak-flops F"
            }
        }
    }
}

/// The answer for one (device, precision) pair.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// Canonical name(s) of the matched entries (`;`-joined for a list of ranks); `None` when any is unknown.
    pub device: Option<String>,
    /// Dense peak FLOP/s of one device; for a list of ranks, the mean of their peaks.
    pub peak: Option<FlopsPerSecond>,
    /// Why `peak` is null, when it is.
    pub unresolved: Option<Unresolved>,
}

/// The embedded table's matcher, built once per process: building a resolver took 0.3 ms before, paid by
/// every `mfu.peak_flops` call and every `mfu.enrich` (measured from Python, 2026-12-03).
static BUILTIN_MATCHER: LazyLock<Arc<Matcher>> =
    LazyLock::new(|| Arc::new(Matcher::new(&PeakTable::builtin())));

/// A table and its matcher, ready to answer many queries.
#[derive(Debug, Clone)]
pub struct Resolver {
    table: PeakTable,
    matcher: Arc<Matcher>,
    options: ResolveOptions,
}

impl Resolver {
    pub fn new(table: PeakTable, options: ResolveOptions) -> Resolver {
        // A table's hash covers every entry applied to it, so the embedded table's matcher serves any
        // table with its hash.
        let matcher = if table.is_builtin() {
            Arc::clone(&BUILTIN_MATCHER)
        } else {
            Arc::new(Matcher::new(&table))
        };
        Resolver {
            table,
            matcher,
            options,
        }
    }

    /// The built-in table with no forced peak and no model dtype.
    pub fn builtin() -> Resolver {
        Resolver::new(PeakTable::builtin(), ResolveOptions::default())
    }

    pub fn table(&self) -> &PeakTable {
        &self.table
    }

    pub fn matcher(&self) -> &Matcher {
        &self.matcher
    }

    pub fn options(&self) -> &ResolveOptions {
        &self.options
    }

    /// Reads a precision spelling into a dtype, applying `--model-dtype` to `no`.
    pub fn dtype(&self, spelling: &str) -> Result<Dtype, Unresolved> {
        match parse_precision(spelling) {
            Some(Precision::Known(d)) => Ok(d),
            Some(Precision::ModelDtype) => self
                .options
                .model_dtype
                .ok_or(Unresolved::ModelDtypeUnknown),
            None if spelling.trim().is_empty() => Err(Unresolved::NoDtype),
            None => Err(Unresolved::Dtype {
                spelling: spelling.to_string(),
            }),
        }
    }

    /// Resolves a device value (one name, a `;`-separated list, or a JSON array of names) and a precision.
    pub fn resolve(&self, device: Option<&str>, dtype: Option<&str>) -> Resolved {
        let names = device.map(split_device_list).unwrap_or_default();
        if let Some(forced) = self.options.forced_peak {
            // The user's figure wins; still name the device when we can, for the record.
            let device = self.canonical_names(&names).ok();
            return Resolved {
                device,
                peak: Some(forced),
                unresolved: None,
            };
        }
        let unresolved = |why| Resolved {
            device: None,
            peak: None,
            unresolved: Some(why),
        };
        if names.is_empty() {
            return unresolved(Unresolved::NoDevice);
        }
        let entries = match self.canonical_entries(&names) {
            Ok(e) => e,
            Err(why) => return unresolved(why),
        };
        let device_label = entries
            .iter()
            .map(|e| e.name.as_str())
            .collect::<Vec<_>>()
            .join(";");
        let dtype = match dtype.map(|s| self.dtype(s)) {
            None => Err(Unresolved::NoDtype),
            Some(d) => d,
        };
        let dtype = match dtype {
            Ok(d) => d,
            Err(why) => {
                return Resolved {
                    device: Some(device_label),
                    peak: None,
                    unresolved: Some(why),
                }
            }
        };
        let mut sum = 0.0;
        for e in &entries {
            match e.peak(dtype) {
                Some(p) => sum += p,
                None => {
                    return Resolved {
                        device: Some(device_label),
                        peak: None,
                        unresolved: Some(Unresolved::NoRate {
                            device: e.name.clone(),
                            dtype,
                        }),
                    }
                }
            }
        }
        Resolved {
            device: Some(device_label),
            peak: Some(sum / entries.len() as f64),
            unresolved: None,
        }
    }

    fn canonical_entries(&self, names: &[String]) -> Result<Vec<&PeakEntry>, Unresolved> {
        names
            .iter()
            .map(|n| match self.matcher.find(n) {
                MatchOutcome::Found(f) => Ok(&self.table.entries()[f.entry]),
                MatchOutcome::NotFound(why) => Err(Unresolved::Device {
                    name: n.clone(),
                    why,
                }),
            })
            .collect()
    }

    fn canonical_names(&self, names: &[String]) -> Result<String, Unresolved> {
        if names.is_empty() {
            return Err(Unresolved::NoDevice);
        }
        Ok(self
            .canonical_entries(names)?
            .iter()
            .map(|e| e.name.as_str())
            .collect::<Vec<_>>()
            .join(";"))
    }
}

/// Splits a device value into one name per rank: a JSON array of strings, or names separated by `;`.
/// A single name comes back as a one-element list; blanks are dropped.
pub fn split_device_list(value: &str) -> Vec<String> {
    let trimmed = value.trim();
    if trimmed.starts_with('[') {
        if let Ok(names) = serde_json::from_str::<Vec<String>>(trimmed) {
            return names
                .into_iter()
                .map(|n| n.trim().to_string())
                .filter(|n| !n.is_empty())
                .collect();
        }
    }
    trimmed
        .split(';')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolver() -> Resolver {
        Resolver::builtin()
    }

    #[test]
    fn a_table_with_user_entries_gets_its_own_matcher() {
        let mut table = PeakTable::builtin();
        assert!(table.is_builtin());
        table
            .apply_csv(
                "vendor,name,form_factor,patterns,fp64_tflops,fp32_tflops,tf32_tflops,bf16_tflops,fp16_tflops,fp8_tflops,int8_tflops,source,note\nAcme,Acme X1,card,acme x1,,,,123,,,,s,\n",
                "acme.csv",
            )
            .unwrap();
        assert!(!table.is_builtin());
        let with_user = Resolver::new(table, ResolveOptions::default());
        assert_eq!(
            with_user.resolve(Some("Acme X1"), Some("bf16")).peak,
            Some(123e12)
        );
        // And the shared built-in matcher still knows nothing of it.
        assert_eq!(resolver().resolve(Some("Acme X1"), Some("bf16")).peak, None);
    }

    #[test]
    fn resolves_device_and_dtype() {
        let r = resolver().resolve(Some("NVIDIA H100 80GB HBM3"), Some("bf16-mixed"));
        assert_eq!(r.device.as_deref(), Some("H100 SXM5"));
        assert_eq!(r.peak, Some(989.4e12));
        assert_eq!(r.unresolved, None);
    }

    #[test]
    fn missing_rate_is_null_not_a_neighbour() {
        let r = resolver().resolve(Some("Tesla T4"), Some("torch.bfloat16"));
        assert_eq!(r.device.as_deref(), Some("T4"));
        assert_eq!(r.peak, None);
        assert_eq!(
            r.unresolved,
            Some(Unresolved::NoRate {
                device: "T4".into(),
                dtype: Dtype::Bf16
            })
        );
    }

    #[test]
    fn list_of_ranks_is_the_mean_when_all_known() {
        let r = resolver().resolve(
            Some("NVIDIA H100 80GB HBM3;NVIDIA A100-SXM4-80GB"),
            Some("bf16"),
        );
        assert_eq!(r.device.as_deref(), Some("H100 SXM5;A100 SXM4"));
        assert_eq!(r.peak, Some((989.4e12 + 312e12) / 2.0));
        let r = resolver().resolve(
            Some(r#"["NVIDIA H100", "NVIDIA Graphics Device"]"#),
            Some("bf16"),
        );
        assert_eq!(r.peak, None);
        assert!(matches!(r.unresolved, Some(Unresolved::Device { .. })));
    }

    #[test]
    fn model_dtype_and_forced_peak() {
        let r = resolver().resolve(Some("NVIDIA A100-SXM4-80GB"), Some("no"));
        assert_eq!(r.unresolved, Some(Unresolved::ModelDtypeUnknown));
        let with_model = Resolver::new(
            PeakTable::builtin(),
            ResolveOptions {
                model_dtype: Some(Dtype::Fp32),
                ..Default::default()
            },
        );
        assert_eq!(
            with_model
                .resolve(Some("NVIDIA A100-SXM4-80GB"), Some("no"))
                .peak,
            Some(19.5e12)
        );
        let forced = Resolver::new(
            PeakTable::builtin(),
            ResolveOptions {
                forced_peak: Some(1e15),
                ..Default::default()
            },
        );
        let r = forced.resolve(Some("Acme X9"), None);
        assert_eq!((r.device, r.peak), (None, Some(1e15)));
    }

    #[test]
    fn unknown_precision_names_the_spelling() {
        let r = resolver().resolve(Some("NVIDIA L4"), Some("fp5"));
        assert_eq!(r.peak, None);
        assert_eq!(r.unresolved.unwrap().to_string(), "unknown precision 'fp5'");
    }

    #[test]
    fn split_device_list_forms() {
        assert_eq!(split_device_list("a; b ;"), vec!["a", "b"]);
        assert_eq!(split_device_list(r#"["a","b"]"#), vec!["a", "b"]);
        assert_eq!(split_device_list("NVIDIA H100"), vec!["NVIDIA H100"]);
        assert!(split_device_list("  ").is_empty());
    }
}
