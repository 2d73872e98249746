//! `mfu audit`: the MFU (or TFLOP/s) a framework logged, re-based on the right peak and explained.
//!
//! A logged MFU is `F_l × R / P_l`: the framework's FLOPs per token `F_l`, the token rate `R` of one
//! device, over the peak `P_l` the framework looked up. mfu's is `F × R / P`. So the two differ by a
//! peak factor `P_l / P` and a numerator factor `F / F_l`, and nothing else where both use the same
//! rate. The audit finds `P_l` from the log where it can (a framework that logs both TFLOP/s and MFU
//! divided one by the other; `--logged-peak-flops`), else by running the framework's own lookup, as its
//! code was at a named commit ([`lookups`]), on the run's device name; `F_l` is then the logged figure
//! times `P_l` over the rate. Which framework wrote a log is told from its shape and its columns
//! (`frameworks.toml`).

pub mod lookups;

use std::sync::OnceLock;

use serde::Deserialize;

use crate::peaks::precision::Dtype;
use crate::stats::{Counted, Tally};
use lookups::Emulated;

/// How a framework writes its MFU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    Percent,
    Fraction,
}

/// What `frameworks.toml` says of one framework.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Framework {
    pub name: String,
    #[serde(default)]
    pub shapes: Vec<String>,
    #[serde(default)]
    pub keys: Vec<String>,
    #[serde(default)]
    pub mfu: Vec<String>,
    pub mfu_unit: Option<Unit>,
    #[serde(default)]
    pub tflops: Vec<String>,
    pub lookup: Option<String>,
    pub convention: Option<String>,
    pub counts: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    framework: Vec<Framework>,
}

/// The frameworks `mfu audit` knows, in the order they are tried.
pub fn frameworks() -> &'static [Framework] {
    static FRAMEWORKS: OnceLock<Vec<Framework>> = OnceLock::new();
    FRAMEWORKS.get_or_init(|| {
        let file: File = toml::from_str(include_str!("frameworks.toml"))
            .expect("src/audit/frameworks.toml is valid (a test reads it)");
        file.framework
    })
}

/// The framework of a log whose MFU column no known framework writes: its figure is the column `mfu
/// enrich` reads as the log's own MFU, its peak what `--logged-peak-flops` says.
pub fn unknown() -> &'static Framework {
    static UNKNOWN: OnceLock<Framework> = OnceLock::new();
    UNKNOWN.get_or_init(|| Framework {
        name: "an unknown framework".into(),
        shapes: Vec::new(),
        keys: Vec::new(),
        mfu: Vec::new(),
        mfu_unit: Some(Unit::Fraction),
        tflops: Vec::new(),
        lookup: None,
        convention: None,
        counts:
            "a count the log does not name (mfu enrich --logged-convention re-bases a known one)"
                .into(),
    })
}

/// The `lookup` of mfu's own callbacks: mfu's peak table.
pub const OWN_TABLE: &str = "mfu";

/// A column name as `frameworks.toml` writes names (the console reader's normal form).
fn normal(name: &str) -> String {
    crate::read::console::vocabulary::normalise(name)
}

/// Whether `column` is `name`, whole or after a tracker's prefix (what follows a `/` or a space):
/// `train/device/mfu` is `device_mfu`, `Train throughput/device/mfu` is `throughput_device_mfu`.
fn names(column: &str, name: &str) -> bool {
    normal(column) == name
        || column
            .char_indices()
            .filter(|(_, c)| *c == '/' || *c == ' ')
            .any(|(i, _)| normal(&column[i + 1..]) == name)
}

/// The framework a log was written by, and the columns that hold its figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Recognised {
    pub framework: &'static Framework,
    pub mfu_column: Option<String>,
    pub tflops_column: Option<String>,
    /// Why: the shape, or the columns that named it.
    pub by: String,
}

/// Which framework wrote a log of shape `shape` (its name, as `mfu enrich -v` gives it) with these
/// columns: the first in `frameworks.toml` with one of its figures among the columns whose shape it is
/// or whose keys are all columns. `None`: no framework's figure is there.
pub fn recognise(shape: Option<&str>, columns: &[&str]) -> Option<Recognised> {
    let find = |wanted: &[String]| {
        wanted
            .iter()
            .find_map(|w| columns.iter().find(|c| names(c, w)).map(|c| c.to_string()))
    };
    frameworks().iter().find_map(|f| {
        let mfu_column = find(&f.mfu);
        let tflops_column = find(&f.tflops);
        if mfu_column.is_none() && tflops_column.is_none() {
            return None;
        }
        let by_shape = shape.is_some_and(|s| f.shapes.iter().any(|x| x == s));
        let keys_present = f.keys.iter().all(|k| columns.iter().any(|c| names(c, k)));
        let by_keys = keys_present && (f.shapes.is_empty() || !f.keys.is_empty());
        let figures: Vec<&str> = [&mfu_column, &tflops_column]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect();
        let by = if by_shape {
            format!(
                "a {} log with '{}'",
                shape.unwrap_or_default(),
                figures.join("', '")
            )
        } else if by_keys {
            let mut shown: Vec<&str> = figures.clone();
            shown.extend(f.keys.iter().map(String::as_str));
            format!("its columns '{}'", shown.join("', '"))
        } else {
            return None;
        };
        Some(Recognised {
            framework: f,
            mfu_column,
            tflops_column,
            by,
        })
    })
}

/// One row of a run, as the audit needs it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Row {
    /// The framework's MFU, as a fraction (negative: its placeholder for "not computed").
    pub mfu_logged: Option<f64>,
    /// The framework's achieved TFLOP/s of one device.
    pub tflops_logged: Option<f64>,
    /// Tokens a second of one device, as mfu reads the log.
    pub tokens_per_second_per_device: Option<f64>,
    /// mfu's MFU, peak and FLOPs per token.
    pub mfu: Option<f64>,
    pub peak: Option<f64>,
    pub flops_per_token: Option<f64>,
}

impl Row {
    /// Whether the row holds the framework's figure, the only rows [`audit`] weighs.
    pub fn is_logged(&self) -> bool {
        self.mfu_logged.is_some_and(f64::is_finite) || positive(self.tflops_logged).is_some()
    }
}

/// What is known of a whole run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Run {
    /// The device name as the log or the flags give it.
    pub device: Option<String>,
    pub dtype: Option<Dtype>,
    /// `--logged-peak-flops`: the peak the user says the framework used.
    pub logged_peak_flops: Option<f64>,
    /// The peak the log says the framework used, and where it says so.
    pub announced_peak: Option<(f64, String)>,
}

/// The audit of one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Audit {
    pub framework: String,
    /// The column(s) the logged figure came from.
    pub figure: String,
    /// Rows with a logged figure.
    pub rows: usize,
    /// Medians over those rows. The logged MFU as a fraction.
    pub mfu_logged: Option<f64>,
    pub tflops_logged: Option<f64>,
    /// The peak the framework divided by, and where that came from.
    pub peak_logged: Option<f64>,
    pub peak_logged_from: Option<String>,
    /// The framework's own lookup for the run's device, and how it got there.
    pub peak_emulated: Option<f64>,
    pub emulation: Option<String>,
    pub flops_per_token_logged: Option<f64>,
    pub mfu: Option<f64>,
    pub peak: Option<f64>,
    pub flops_per_token: Option<f64>,
    /// The framework's figure against mfu's peak: its count at the right peak.
    pub mfu_logged_rebased: Option<f64>,
    /// mfu's MFU over the logged one (median of the rows' ratios).
    pub ratio: Option<f64>,
    /// The logged peak over mfu's: above 1, the framework divided by too much.
    pub peak_factor: Option<f64>,
    /// mfu's FLOPs per token over the framework's: above 1, the framework counted too few.
    pub numerator_factor: Option<f64>,
    /// Rows whose logged MFU is above 1: impossible.
    pub impossible_rows: usize,
    /// Rows whose logged MFU is negative: the framework's "not computed".
    pub placeholder_rows: usize,
    /// A sentence to paste into a ticket.
    pub verdict: String,
    pub notes: Vec<String>,
}

fn positive(v: Option<f64>) -> Option<f64> {
    v.filter(|v| v.is_finite() && *v > 0.0)
}

/// TFLOP/s for people: two decimal places at most, no trailing zeros (209.5, 312, 48.38).
fn tf(flops: f64) -> String {
    format!("{:.2}", flops / 1e12)
        .trim_end_matches('0')
        .trim_end_matches('.')
        .to_string()
}

/// A factor for people: two decimal places, or three significant digits under 0.01.
fn factor(k: f64) -> String {
    if k < 0.01 {
        format!("{k:.2e}x")
    } else {
        format!("{k:.2}x")
    }
}

/// A fraction as a percentage: two decimal places, or two significant digits under 0.01%.
fn pct(fraction: f64) -> String {
    let p = fraction * 100.0;
    if p != 0.0 && p.abs() < 0.01 {
        format!("{p:.1e}%")
    } else {
        format!("{p:.2}%")
    }
}

/// The audit of a run by `framework` whose rows are `rows`.
pub fn audit(framework: &Framework, figure: &str, run: &Run, rows: &[Row]) -> Audit {
    let mut folded = Folded::default();
    rows.iter().for_each(|r| folded.push(r));
    folded.audit(framework, figure, run)
}

/// What the audit weighs of a run's rows (those with the framework's figure), folded one row at a
/// time: counts, and each median's values by distinct value ([`Counted`]), so a console log read in
/// windows is audited without its rows in memory. A figure that needs the peak the framework used (known
/// once every row is in) keeps the pair of values it is worked out from.
#[derive(Debug, Clone, Default)]
pub struct Folded {
    rows: usize,
    placeholder_rows: usize,
    impossible_rows: usize,
    mfu_logged: Counted,
    tflops_logged: Counted,
    peak: Counted,
    /// The peak each row's TFLOP/s and MFU imply.
    inferred: Counted,
    /// FLOPs per token from each row's TFLOP/s over its rate.
    tflops_per_rate: Counted,
    /// Rows with a logged MFU and a rate: (MFU, rate) by their bits, whether the row has TFLOP/s too,
    /// and how many.
    mfu_and_rate: Tally<(u64, u64, bool)>,
    mfu: Counted,
    flops_per_token: Counted,
    ratio: Counted,
}

/// A finite value counted (the medians are of finite values).
fn count_finite(counted: &mut Counted, value: Option<f64>) {
    if let Some(v) = value.filter(|v| v.is_finite()) {
        counted.push(v);
    }
}

impl Folded {
    /// Weighs one row (one without the framework's figure is passed over).
    pub fn push(&mut self, r: &Row) {
        if !r.is_logged() {
            return;
        }
        self.rows += 1;
        if r.mfu_logged.is_some_and(|m| m < 0.0) {
            self.placeholder_rows += 1;
        }
        // Above 100%, or TFLOP/s above the device's peak: more than the device can do.
        let impossible = match (r.mfu_logged, positive(r.tflops_logged), positive(r.peak)) {
            (Some(m), _, _) => m > 1.0,
            (None, Some(t), Some(p)) => t * 1e12 > p,
            _ => false,
        };
        if impossible {
            self.impossible_rows += 1;
        }
        let (mfu_logged, tflops) = (positive(r.mfu_logged), positive(r.tflops_logged));
        let rate = positive(r.tokens_per_second_per_device);
        count_finite(&mut self.mfu_logged, mfu_logged);
        count_finite(&mut self.tflops_logged, tflops);
        count_finite(&mut self.peak, positive(r.peak));
        count_finite(
            &mut self.inferred,
            tflops.zip(mfu_logged).map(|(t, m)| t * 1e12 / m),
        );
        count_finite(
            &mut self.tflops_per_rate,
            tflops.zip(rate).map(|(t, rate)| t * 1e12 / rate),
        );
        if let (Some(m), Some(rate)) = (mfu_logged, rate) {
            self.mfu_and_rate
                .push_times((m.to_bits(), rate.to_bits(), tflops.is_some()), 1);
        }
        count_finite(&mut self.mfu, positive(r.mfu));
        count_finite(&mut self.flops_per_token, positive(r.flops_per_token));
        count_finite(
            &mut self.ratio,
            positive(r.mfu).zip(mfu_logged).map(|(m, l)| m / l),
        );
    }

    /// A median of values each (MFU, rate) pair gives, counted as often as the pair was seen; `with_tflops`
    /// says which rows' pairs count (`None`: all).
    fn pairs(&self, with_tflops: Option<bool>, value: impl Fn(f64, f64) -> f64) -> Counted {
        let mut out = Counted::default();
        for ((m, rate, tflops), n) in self.mfu_and_rate.entries() {
            if with_tflops.is_none_or(|w| w == tflops) {
                let v = value(f64::from_bits(m), f64::from_bits(rate));
                if v.is_finite() {
                    out.push_times(v, n);
                }
            }
        }
        out
    }

    /// The audit of the rows folded, of a run by `framework`.
    pub fn audit(&self, framework: &Framework, figure: &str, run: &Run) -> Audit {
        let mut out = Audit {
            framework: framework.name.clone(),
            figure: figure.to_string(),
            rows: self.rows,
            placeholder_rows: self.placeholder_rows,
            impossible_rows: self.impossible_rows,
            ..Audit::default()
        };
        out.mfu_logged = self.mfu_logged.median();
        out.tflops_logged = self.tflops_logged.median();
        out.peak = self.peak.median();
        // The framework's own lookup on this device (mfu's callbacks look the peak up in mfu's table).
        let emulated: Option<(&lookups::Lookup, Emulated)> = framework
            .lookup
            .as_deref()
            .and_then(lookups::lookup)
            .and_then(|l| {
                let device = run
                    .device
                    .as_deref()
                    .or((!l.needs_device()).then_some(""))?;
                Some((l, l.peak(device, run.dtype)))
            });
        if framework.lookup.as_deref() == Some(OWN_TABLE) {
            out.peak_emulated = out.peak;
            out.emulation =
                Some("mfu's own peak table, as mfu enrich resolves the run's device".into());
        } else if let Some((l, e)) = &emulated {
            out.peak_emulated = e.peak;
            out.emulation = Some(format!("{}: {}", l.source, e.why));
        } else if framework.lookup.is_some() && run.device.is_none() {
            out.notes.push(format!(
                "{}'s own peak lookup not run: the log names no device (give --device)",
                framework.name
            ));
        }
        // The peak the framework divided by: what the user says, else what the log's own figures imply,
        // else the framework's lookup.
        let inferred = self.inferred.median();
        let announced = run
            .announced_peak
            .as_ref()
            .and_then(|(p, origin)| Some((positive(Some(*p))?, origin)));
        (out.peak_logged, out.peak_logged_from) = if let Some(p) = positive(run.logged_peak_flops) {
            (Some(p), Some("--logged-peak-flops".into()))
        } else if let Some((p, origin)) = announced {
            (Some(p), Some(format!("the log says so: {origin}")))
        } else if let Some(p) = inferred {
            // Where the framework's lookup gives what its figures imply (to rounding), its exact value.
            match out.peak_emulated.filter(|e| (p / e - 1.0).abs() <= 0.01) {
                Some(e) => (
                    Some(e),
                    Some(format!(
                        "the log's own figures ({figure}), as {}'s lookup gives",
                        framework.name
                    )),
                ),
                None => (Some(p), Some(format!("the log's own figures: {figure}"))),
            }
        } else if let Some((l, e)) = emulated.as_ref().filter(|(_, e)| e.peak.is_some()) {
            (
                e.peak,
                Some(format!(
                    "{}'s lookup emulated ({})",
                    framework.name, l.source
                )),
            )
        } else if let Some(p) = out.peak_emulated {
            (Some(p), Some("mfu's own peak table".into()))
        } else {
            (None, None)
        };
        if let (Some((a, _)), Some(e)) = (announced, out.peak_emulated) {
            if (a / e - 1.0).abs() > 0.001 {
                out.notes.push(format!(
                "the log announces a peak of {} TFLOP/s where {}'s lookup gives {} for '{}': the announcement wins (a lookup of another version, a device property, or a name the log does not show)",
                tf(a),
                framework.name,
                tf(e),
                run.device.as_deref().unwrap_or_default()
            ));
            }
        }
        if let (Some(i), Some(e)) = (inferred, out.peak_emulated) {
            if (i / e - 1.0).abs() > 0.01 {
                out.notes.push(format!(
                "the log's figures imply a peak of {} TFLOP/s, {}'s lookup gives {} for this device: a lookup of another version, or another device name",
                tf(i),
                framework.name,
                tf(e)
            ));
            }
        }
        // The framework's FLOPs per token: its TFLOP/s over the rate, else its MFU times its peak.
        let mut per_token = self.tflops_per_rate.clone();
        if let Some(p) = out.peak_logged {
            for (v, n) in self.pairs(Some(false), |m, rate| m * p / rate).sorted() {
                per_token.push_times(v, n);
            }
        }
        out.flops_per_token_logged = per_token.median();
        out.mfu = self.mfu.median();
        out.flops_per_token = self.flops_per_token.median();
        out.ratio = self.ratio.median();
        out.peak_factor = out.peak_logged.zip(out.peak).map(|(l, p)| l / p);
        out.numerator_factor = out
            .flops_per_token
            .zip(out.flops_per_token_logged)
            .map(|(f, l)| f / l);
        out.mfu_logged_rebased =
            match (out.mfu_logged, out.tflops_logged, out.peak_factor, out.peak) {
                (Some(m), _, Some(k), _) => Some(m * k),
                (None, Some(t), _, Some(p)) => Some(t * 1e12 / p),
                _ => None,
            };
        if out.peak_logged.is_none() && out.mfu_logged.is_some() && framework.lookup.is_none() {
            out.notes.push(
                "the peak the logged MFU divides by is not known: give it with --logged-peak-flops"
                    .into(),
            );
        }
        if let (None, Some(m), Some(f)) = (out.peak_logged, out.mfu_logged, out.flops_per_token) {
            if let Some(p) = self.pairs(None, |m, rate| f * rate / m).median() {
                out.notes.push(format!(
                "the peak {} divided by is not known; had it counted mfu's {f:.3e} FLOPs per token, its {} MFU implies a peak of {} TFLOP/s",
                framework.name,
                pct(m),
                tf(p)
            ));
            }
        }
        if out.placeholder_rows > 0 {
            out.notes.push(format!(
                "{} row(s) log a negative MFU, {}'s placeholder where it computed none: left out",
                out.placeholder_rows, framework.name
            ));
        }
        out.verdict = verdict(framework, run, &out);
        out
    }
}

/// The audit in a sentence a person can paste into a ticket.
fn verdict(framework: &Framework, run: &Run, a: &Audit) -> String {
    let name = &framework.name;
    let device = run.device.as_deref().unwrap_or("the device");
    let mut parts = Vec::new();
    match (a.mfu_logged, a.tflops_logged) {
        (None, None) if a.placeholder_rows > 0 => {
            parts.push(format!("{name} logged no MFU (its placeholder, -100%, in every row): its lookup has no peak for {device}"));
        }
        (None, None) => parts.push(format!("{name}'s figure has no usable value")),
        (Some(m), _) => {
            let mut s = format!("{name} logged {} MFU", pct(m));
            if let Some(p) = a.peak_logged {
                s += &format!(" against {} TFLOP/s", tf(p));
                let announced = a
                    .peak_logged_from
                    .as_deref()
                    .is_some_and(|f| f.starts_with("the log says"));
                let agrees = a.peak_emulated.is_some_and(|e| (e / p - 1.0).abs() < 0.01);
                let why = a
                    .emulation
                    .as_deref()
                    .map(|w| w.split_once(": ").map_or(w, |(_, w)| w));
                match (why, agrees || a.peak_emulated.is_none(), announced) {
                    (Some(why), true, true) => {
                        s += &format!(" (as the log says; its lookup: {why})")
                    }
                    (Some(why), true, false) => s += &format!(" (its lookup: {why})"),
                    (_, _, true) => s += " (as the log says)",
                    _ => {}
                }
            }
            if a.impossible_rows > 0 {
                s += &format!(
                    ", above 100% in {} row(s), which is impossible",
                    a.impossible_rows
                );
            }
            parts.push(s);
        }
        (None, Some(t)) => {
            let mut s = format!(
                "{name} logged {} TFLOP/s per device and no MFU",
                tf(t * 1e12)
            );
            if a.impossible_rows > 0 {
                s += &format!(
                    ", above the device's peak in {} row(s), which is impossible",
                    a.impossible_rows
                );
            }
            parts.push(s);
        }
    }
    match (a.peak, a.peak_factor) {
        (Some(p), Some(k)) if (k - 1.0).abs() > 0.005 => parts.push(format!(
            "the dense {} peak of {device} is {} TFLOP/s, so its peak is {:.2}x the right one",
            run.dtype.map_or("", |d| d.as_str()),
            tf(p),
            k
        )),
        (Some(p), Some(_)) => parts.push(format!("its peak is the right one ({} TFLOP/s)", tf(p))),
        (Some(p), None) if a.mfu_logged.is_none() && a.tflops_logged.is_some() => {
            parts.push(format!(
                "against the dense peak of {} TFLOP/s that is {}",
                tf(p),
                a.mfu_logged_rebased.map_or("-".into(), pct)
            ))
        }
        (None, _) => {
            parts.push("mfu has no peak for the device (give --device and --dtype)".into())
        }
        _ => {}
    }
    match (a.flops_per_token, a.flops_per_token_logged, a.numerator_factor) {
        (Some(f), Some(l), Some(k)) if (k - 1.0).abs() > 0.005 => parts.push(format!(
            "at mfu's token rate its figure makes {l:.3e} FLOPs per token where mfu counts {f:.3e} ({}, from its count, its time base or its averaging; {name} counts {})",
            factor(k),
            framework.counts
        )),
        (Some(_), Some(_), Some(_)) => parts.push("at mfu's token rate its figure makes mfu's FLOPs per token".into()),
        (None, _, _) => parts.push("mfu has no FLOPs per token for the model (give --flops-per-token or --model-config)".into()),
        _ => {}
    }
    if let (Some(m), Some(r)) = (a.mfu, a.ratio) {
        parts.push(format!("mfu says {}, {r:.2}x the logged figure", pct(m)));
    } else if let Some(m) = a.mfu {
        parts.push(format!("mfu says {}", pct(m)));
    }
    let mut text = parts.join("; ");
    text.push('.');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_framework_table_reads_and_names_known_lookups() {
        let all = frameworks();
        assert!(all.len() >= 10);
        for f in all {
            if let Some(l) = f.lookup.as_deref().filter(|l| *l != OWN_TABLE) {
                assert!(lookups::lookup(l).is_some(), "{}: no lookup {l}", f.name);
            }
            if let Some(c) = &f.convention {
                assert!(
                    c.parse::<crate::conventions::Convention>().is_ok(),
                    "{}: convention {c}",
                    f.name
                );
            }
            assert!(!f.mfu.is_empty() || !f.tflops.is_empty(), "{}", f.name);
            assert_eq!(f.mfu.is_empty(), f.mfu_unit.is_none(), "{}", f.name);
        }
    }

    #[test]
    fn frameworks_are_told_by_shape_and_columns() {
        let r = recognise(Some("torchtitan"), &["step", "tps", "tflops", "mfu (%)"]).unwrap();
        assert_eq!(r.framework.name, "torchtitan");
        assert_eq!(r.mfu_column.as_deref(), Some("mfu (%)"));
        assert_eq!(r.tflops_column.as_deref(), Some("tflops"));
        let r = recognise(None, &["step", "perf/mfu/actor", "perf/throughput"]).unwrap();
        assert_eq!(r.framework.name, "verl");
        // OLMo-core and Composer write the same name, told apart by OLMo-core's TPS.
        let r = recognise(None, &["throughput/device/MFU", "throughput/device/TPS"]).unwrap();
        assert_eq!(r.framework.name, "OLMo-core");
        let r = recognise(None, &["Train throughput/device/mfu", "batch"]).unwrap();
        assert_eq!(r.framework.name, "Composer");
        let r = recognise(None, &["train/device/mfu", "step"]).unwrap();
        assert_eq!(r.framework.name, "Lightning");
        // A bare `mfu` column names no framework unless the shape or nanoGPT's keys do.
        assert_eq!(recognise(Some("table"), &["step", "mfu"]), None);
        let r = recognise(None, &["iter", "train/loss", "lr", "mfu"]).unwrap();
        assert_eq!(r.framework.name, "nanoGPT");
        let r = recognise(
            Some("megatron-log"),
            &["iteration", "throughput_per_gpu_tflop_s_gpu"],
        );
        assert_eq!(r.unwrap().framework.name, "Megatron-LM");
        assert_eq!(
            recognise(None, &["step", "tflops", "tokens_per_gpu_per_second_tgs"])
                .unwrap()
                .framework
                .name,
            "Megatron-DeepSpeed"
        );
        assert_eq!(recognise(None, &["step", "loss"]), None);
    }

    fn row(mfu_logged: f64, tflops: Option<f64>, rate: f64, mfu: f64, peak: f64, fpt: f64) -> Row {
        Row {
            mfu_logged: Some(mfu_logged),
            tflops_logged: tflops,
            tokens_per_second_per_device: Some(rate),
            mfu: Some(mfu),
            peak: Some(peak),
            flops_per_token: Some(fpt),
        }
    }

    #[test]
    fn a_logged_mfu_splits_into_a_peak_and_a_numerator_factor() {
        // torchtitan on an RTX 5090: 1e5 tokens/s, its count 6e8 FLOPs per token (60 TFLOP/s), over
        // its A100 fallback: 19.23%. mfu counts 1.2e9 against 209.5 TFLOP/s: 57.28%.
        let f = frameworks()
            .iter()
            .find(|f| f.name == "torchtitan")
            .unwrap();
        let run = Run {
            device: Some("NVIDIA GeForce RTX 5090".into()),
            dtype: Some(Dtype::Bf16),
            logged_peak_flops: None,
            announced_peak: None,
        };
        let mfu = 1.2e9 * 1e5 / 209.5e12;
        let rows = vec![row(60.0 / 312.0, Some(60.0), 1e5, mfu, 209.5e12, 1.2e9); 3];
        let a = audit(f, "mfu (%), tflops", &run, &rows);
        assert_eq!(a.rows, 3);
        assert!((a.peak_logged.unwrap() - 312e12).abs() < 1.0);
        assert_eq!(a.peak_emulated, Some(312e12));
        assert!((a.flops_per_token_logged.unwrap() - 6e8).abs() < 1e-3);
        assert!((a.peak_factor.unwrap() - 312.0 / 209.5).abs() < 1e-12);
        assert!((a.numerator_factor.unwrap() - 2.0).abs() < 1e-12);
        // The ratio is the product of the factors.
        let product = a.peak_factor.unwrap() * a.numerator_factor.unwrap();
        assert!((a.ratio.unwrap() - product).abs() < 1e-9);
        assert!((a.mfu_logged_rebased.unwrap() - 60.0 / 209.5).abs() < 1e-12);
        assert!(a.verdict.contains("fallback to A100"), "{}", a.verdict);
        assert!(a.verdict.contains("2.00x"), "{}", a.verdict);
        // The user's word wins over the log's.
        let told = Run {
            logged_peak_flops: Some(400e12),
            ..run.clone()
        };
        assert_eq!(audit(f, "", &told, &rows).peak_logged, Some(400e12));
    }

    #[test]
    fn placeholders_and_impossible_values_are_counted_not_averaged() {
        let f = frameworks().iter().find(|f| f.name == "llm.c").unwrap();
        let run = Run {
            device: Some("NVIDIA H100 NVL".into()),
            dtype: Some(Dtype::Bf16),
            logged_peak_flops: None,
            announced_peak: None,
        };
        let rows = vec![
            Row {
                mfu_logged: Some(-1.0),
                ..Row::default()
            };
            4
        ];
        let a = audit(f, "bf16 MFU (%)", &run, &rows);
        assert_eq!((a.rows, a.placeholder_rows, a.mfu_logged), (4, 4, None));
        assert!(
            a.verdict.contains("no peak for NVIDIA H100 NVL"),
            "{}",
            a.verdict
        );
        assert!(a.emulation.unwrap().contains("-100.0%"));
        let f = frameworks()
            .iter()
            .find(|f| f.name == "torchtitan")
            .unwrap();
        let rows = vec![row(152.77, Some(100.0), 1e5, 0.3, 1e15, 1e9)];
        let a = audit(f, "mfu (%)", &run, &rows);
        assert_eq!(a.impossible_rows, 1);
        assert!(a.verdict.contains("impossible"));
    }
}
