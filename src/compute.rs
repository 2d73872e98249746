//! The MFU arithmetic: throughput and utilization columns from the typed field values.
//!
//! Peaks are resolved once per distinct (device, precision) pair, never per row. A time that is zero,
//! negative, NaN or missing, or a count that is negative or not finite, gives null derived values, never
//! infinity; so does any result that is not a finite number (a subnormal step time such as 5e-324 makes
//! throughput overflow), the same in every output format. Each such row is counted so the end-of-run
//! report can say how many.

use std::collections::HashMap;

use polars::prelude::*;

use crate::columns::{FieldValues, Texts};
use crate::peaks::{Resolved, Resolver, Unresolved};
use crate::read::text_column::TextColumn;

/// Names of the added columns, in output order.
pub const RESOLVED_DEVICE: &str = "resolved_device";
pub const PEAK_FLOPS_PER_DEVICE: &str = "peak_flops_per_device";
pub const TOKENS_PER_SECOND: &str = "tokens_per_second";
pub const ACHIEVED_FLOPS_PER_DEVICE: &str = "achieved_flops_per_device";
pub const MFU_WALL_CLOCK: &str = "mfu_wall_clock";
pub const MFU_FWD_BWD: &str = "mfu_fwd_bwd";

/// Hardware FLOPs utilization, added with `--recompute full`: the MFU columns x 4/3, since full activation
/// recomputation runs the forward pass twice.
pub const HFU_WALL_CLOCK: &str = "hfu_wall_clock";
pub const HFU_FWD_BWD: &str = "hfu_fwd_bwd";
pub const HFU_COLUMNS: [&str; 2] = [HFU_WALL_CLOCK, HFU_FWD_BWD];

/// The log's own MFU re-based on the right peak: `logged MFU x --logged-peak-flops / peak_flops_per_device`.
pub const MFU_LOGGED_CORRECTED: &str = "mfu_logged_corrected";

/// Rolling means over `--window N` steps within a run.
pub const MFU_WALL_CLOCK_ROLLING: &str = "mfu_wall_clock_rolling";
pub const MFU_FWD_BWD_ROLLING: &str = "mfu_fwd_bwd_rolling";
pub const TOKENS_PER_SECOND_ROLLING: &str = "tokens_per_second_rolling";
pub const ROLLING_COLUMNS: [&str; 3] = [
    MFU_WALL_CLOCK_ROLLING,
    MFU_FWD_BWD_ROLLING,
    TOKENS_PER_SECOND_ROLLING,
];

/// Hardware FLOPs per model FLOP with full activation recomputation.
pub const FULL_RECOMPUTE_FACTOR: f64 = 4.0 / 3.0;

pub const OUTPUT_COLUMNS: [&str; 6] = [
    RESOLVED_DEVICE,
    PEAK_FLOPS_PER_DEVICE,
    TOKENS_PER_SECOND,
    ACHIEVED_FLOPS_PER_DEVICE,
    MFU_WALL_CLOCK,
    MFU_FWD_BWD,
];

/// (column, unit, definition) of every added column: the contract, also written into Parquet metadata.
pub const COLUMN_DEFINITIONS: [(&str, &str, &str); 6] = [
    (
        RESOLVED_DEVICE,
        "-",
        "canonical name of the peak-table entry that matched the device name (';'-joined for a list of ranks); null if unknown",
    ),
    (
        PEAK_FLOPS_PER_DEVICE,
        "FLOP/s",
        "dense peak FLOP/s of one device for the row's precision (mean over ranks for a list); null if unknown",
    ),
    (TOKENS_PER_SECOND, "tokens/s", "tokens / step_time"),
    (
        ACHIEVED_FLOPS_PER_DEVICE,
        "FLOP/s",
        "tokens * flops_per_token / (num_devices * step_time)",
    ),
    (
        MFU_WALL_CLOCK,
        "fraction",
        "achieved_flops_per_device / peak_flops_per_device; null if the peak is unknown",
    ),
    (
        MFU_FWD_BWD,
        "fraction",
        "tokens * flops_per_token / (num_devices * fwd_bwd_time) / peak_flops_per_device; null if the peak or fwd_bwd_time is unknown",
    ),
];

/// Unit and definition of the HFU columns, for the Parquet metadata when they are written.
pub const HFU_DEFINITIONS: [(&str, &str, &str); 2] = [
    (
        HFU_WALL_CLOCK,
        "fraction",
        "mfu_wall_clock x 4/3: hardware FLOPs with full activation recomputation",
    ),
    (
        HFU_FWD_BWD,
        "fraction",
        "mfu_fwd_bwd x 4/3: hardware FLOPs with full activation recomputation",
    ),
];

/// Optional columns beyond the six.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Extras {
    /// Add the HFU columns.
    pub hfu: bool,
    /// Add `mfu_logged_corrected`, re-basing the log's MFU computed against this peak.
    pub logged_peak_flops: Option<f64>,
    /// Add rolling means over this many rows of a run.
    pub window: Option<usize>,
}

/// Unit and definition of `mfu_logged_corrected`.
pub const LOGGED_DEFINITION: (&str, &str, &str) = (
    MFU_LOGGED_CORRECTED,
    "fraction",
    "the log's own MFU x --logged-peak-flops / peak_flops_per_device: the trainer's figure against the right peak",
);

/// What the computation saw in one frame, for the end-of-run report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ComputeStats {
    pub rows: usize,
    /// Rows whose `mfu_wall_clock` is null.
    pub null_mfu_rows: usize,
    /// Rows with a missing, zero, negative or non-finite step time.
    pub bad_step_time_rows: usize,
    /// Rows with a negative or non-finite token count, device count or FLOPs per token.
    pub bad_count_rows: usize,
    /// Rows with MFU above 1: impossible, so the FLOPs per token or the peak is wrong.
    pub mfu_above_one_rows: usize,
    /// Rows whose inputs were valid but a derived value overflowed to infinity: null instead.
    pub overflow_rows: usize,
    /// Each reason a peak was null, with the rows it affected.
    pub unresolved: Vec<(Unresolved, usize)>,
}

impl ComputeStats {
    /// Adds another frame's counts to these (the same reasons merged).
    pub fn add(&mut self, other: &ComputeStats) {
        self.rows += other.rows;
        self.null_mfu_rows += other.null_mfu_rows;
        self.bad_step_time_rows += other.bad_step_time_rows;
        self.bad_count_rows += other.bad_count_rows;
        self.overflow_rows += other.overflow_rows;
        self.mfu_above_one_rows += other.mfu_above_one_rows;
        for (why, rows) in &other.unresolved {
            match self.unresolved.iter_mut().find(|(w, _)| w == why) {
                Some(slot) => slot.1 += rows,
                None => self.unresolved.push((why.clone(), *rows)),
            }
        }
    }
}

/// The six added columns for one frame.
#[derive(Debug)]
pub struct Computed {
    pub columns: Vec<Column>,
    pub stats: ComputeStats,
}

/// A derived value, or null when it is not a finite number: the one rule for every output format.
#[inline]
fn finite(v: Option<f64>) -> Option<f64> {
    v.filter(|v| v.is_finite())
}

#[inline]
fn positive_time(t: Option<f64>) -> Option<f64> {
    t.filter(|t| t.is_finite() && *t > 0.0)
}

#[inline]
fn count(v: Option<f64>) -> Option<f64> {
    v.filter(|v| v.is_finite() && *v >= 0.0)
}

/// A distinct (device, precision) pair as the rows spell it.
type PairKey<'a> = (Option<&'a str>, Option<&'a str>);

/// The mean of the non-null values among each row and the `n - 1` rows before it in the same run (file
/// order); null when all of them are null.
pub fn rolling_mean(values: &[Option<f64>], runs: &[u32], n: usize) -> Vec<Option<f64>> {
    use std::collections::VecDeque;
    let mut windows: HashMap<u32, VecDeque<Option<f64>>> = HashMap::new();
    values
        .iter()
        .zip(runs)
        .map(|(v, run)| {
            let window = windows.entry(*run).or_default();
            window.push_back(*v);
            if window.len() > n {
                window.pop_front();
            }
            // Summed afresh each row, in window order: exact and the same whatever came before.
            let (sum, count) = window
                .iter()
                .flatten()
                .fold((0.0, 0usize), |(s, c), x| (s + x, c + 1));
            (count > 0).then(|| sum / count as f64)
        })
        .collect()
}

/// A field's text values row by row (a constant repeated, or nothing).
fn text_values<'a>(texts: &'a Texts, n: usize) -> Box<dyn Iterator<Item = Option<&'a str>> + 'a> {
    match texts {
        Texts::Column(c) => Box::new(c.iter()),
        Texts::Coded { codes, values } => {
            Box::new(codes.iter().map(|c| values[*c as usize].as_deref()))
        }
        Texts::Constant(s) => Box::new(std::iter::repeat_n(Some(s.as_str()), n)),
        Texts::Missing => Box::new(std::iter::repeat_n(None, n)),
    }
}

/// The values and validity of one output column over a range of rows.
type Slots<'a> = (&'a mut [f64], &'a mut [bool]);

/// The output slices of a range of rows (from `start`): values and validity of the five numeric columns.
struct Rows<'a> {
    start: usize,
    peak: Slots<'a>,
    tps: Slots<'a>,
    achieved: Slots<'a>,
    mfu: Slots<'a>,
    mfu_fb: Slots<'a>,
}

impl<'a> Rows<'a> {
    fn len(&self) -> usize {
        self.peak.0.len()
    }

    fn split(self, at: usize) -> (Rows<'a>, Rows<'a>) {
        fn cut(slots: Slots<'_>, at: usize) -> (Slots<'_>, Slots<'_>) {
            let (values, valid) = slots;
            let (v1, v2) = values.split_at_mut(at);
            let (b1, b2) = valid.split_at_mut(at);
            ((v1, b1), (v2, b2))
        }
        let (p1, p2) = cut(self.peak, at);
        let (t1, t2) = cut(self.tps, at);
        let (a1, a2) = cut(self.achieved, at);
        let (m1, m2) = cut(self.mfu, at);
        let (f1, f2) = cut(self.mfu_fb, at);
        (
            Rows {
                start: self.start,
                peak: p1,
                tps: t1,
                achieved: a1,
                mfu: m1,
                mfu_fb: f1,
            },
            Rows {
                start: self.start + at,
                peak: p2,
                tps: t2,
                achieved: a2,
                mfu: m2,
                mfu_fb: f2,
            },
        )
    }
}

#[inline]
fn put((values, valid): &mut Slots<'_>, i: usize, v: Option<f64>) {
    values[i] = v.unwrap_or(0.0);
    valid[i] = v.is_some();
}

/// Rows per piece of work: a large table's rows are computed in pieces on the thread pool (each row on
/// its own, so the result is the same whatever the number of threads).
const PIECE_ROWS: usize = 1 << 17;

/// The arithmetic of every row of `rows`, and its counts.
fn arithmetic(
    values: &FieldValues,
    pairs: &[Resolved],
    row_pair: &[u32],
    mut rows: Rows<'_>,
) -> ComputeStats {
    if rows.len() > PIECE_ROWS {
        let mid = rows.len() / 2;
        let (left, right) = rows.split(mid);
        let (mut a, b) = rayon::join(
            || arithmetic(values, pairs, row_pair, left),
            || arithmetic(values, pairs, row_pair, right),
        );
        a.add(&b);
        return a;
    }
    let mut stats = ComputeStats::default();
    for i in 0..rows.len() {
        let row = rows.start + i;
        let resolved = &pairs[row_pair[row] as usize];
        let step_time = positive_time(values.step_time_s.get(row));
        if step_time.is_none() {
            stats.bad_step_time_rows += 1;
        }
        let tokens_raw = values.tokens.get(row);
        let devices_raw = values.num_devices.get(row);
        let fpt_raw = values.flops_per_token.get(row);
        let tokens = count(tokens_raw);
        let devices = count(devices_raw).filter(|d| *d > 0.0);
        let fpt = count(fpt_raw);
        let bad_count = |raw: Option<f64>, ok: Option<f64>| raw.is_some() && ok.is_none();
        if bad_count(tokens_raw, tokens)
            || bad_count(devices_raw, devices)
            || bad_count(fpt_raw, fpt)
        {
            stats.bad_count_rows += 1;
        }

        let work_per_device = match (tokens, fpt, devices) {
            (Some(t), Some(f), Some(d)) => Some(t * f / d),
            _ => None,
        };
        let tps = match (tokens, step_time) {
            (Some(t), Some(s)) => Some(t / s),
            _ => None,
        };
        let achieved = match (work_per_device, step_time) {
            (Some(w), Some(s)) => Some(w / s),
            _ => None,
        };
        let peak = resolved.peak;
        let mfu = match (achieved, peak) {
            (Some(a), Some(p)) => Some(a / p),
            _ => None,
        };
        let fwd_bwd = positive_time(values.fwd_bwd_time_s.get(row));
        let mfu_fb = match (work_per_device, fwd_bwd, peak) {
            (Some(w), Some(t), Some(p)) => Some(w / t / p),
            _ => None,
        };
        let overflowed = [work_per_device, tps, achieved, mfu, mfu_fb]
            .iter()
            .any(|v| v.is_some_and(|v| !v.is_finite()));
        // Infinity carries through every later division, so each value is judged on its own.
        let (tps, achieved, mfu, mfu_fb) = if overflowed {
            stats.overflow_rows += 1;
            (finite(tps), finite(achieved), finite(mfu), finite(mfu_fb))
        } else {
            (tps, achieved, mfu, mfu_fb)
        };
        match mfu {
            None => stats.null_mfu_rows += 1,
            Some(m) if m > 1.0 => stats.mfu_above_one_rows += 1,
            Some(_) => {}
        }
        put(&mut rows.peak, i, peak);
        put(&mut rows.tps, i, tps);
        put(&mut rows.achieved, i, achieved);
        put(&mut rows.mfu, i, mfu);
        put(&mut rows.mfu_fb, i, mfu_fb);
    }
    stats
}

/// Each row's code of a text field whose texts are coded, constant or missing (one code for all rows).
#[derive(Clone, Copy)]
enum Codes<'a> {
    Rows(&'a [u32]),
    One,
}

impl Codes<'_> {
    #[inline]
    fn get(self, row: usize) -> u32 {
        match self {
            Codes::Rows(codes) => codes[row],
            Codes::One => 0,
        }
    }
}

fn text_codes(texts: &Texts) -> Option<Codes<'_>> {
    match texts {
        Texts::Column(_) => None,
        Texts::Coded { codes, .. } => Some(Codes::Rows(codes)),
        Texts::Constant(_) | Texts::Missing => Some(Codes::One),
    }
}

/// A nullable float column, built as values plus a validity bitmap (none when nothing is null).
fn f64_column(name: &str, v: Floats) -> Column {
    let validity = v.has_nulls().then(|| {
        v.valid
            .iter()
            .copied()
            .collect::<polars_arrow::bitmap::Bitmap>()
    });
    Float64Chunked::from_vec_validity(name.into(), v.values, validity).into_column()
}

/// A nullable float column being built: the values (0 where null) and whether each is there. Half the
/// memory of `Vec<Option<f64>>` and already in the form Arrow and polars arrays take.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Floats {
    pub values: Vec<f64>,
    pub valid: Vec<bool>,
}

impl Floats {
    pub fn with_capacity(n: usize) -> Floats {
        Floats {
            values: Vec::with_capacity(n),
            valid: Vec::with_capacity(n),
        }
    }

    #[inline]
    pub fn push(&mut self, v: Option<f64>) {
        self.values.push(v.unwrap_or(0.0));
        self.valid.push(v.is_some());
    }

    #[inline]
    pub fn get(&self, row: usize) -> Option<f64> {
        self.valid[row].then(|| self.values[row])
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    pub fn to_options(&self) -> Vec<Option<f64>> {
        (0..self.len()).map(|row| self.get(row)).collect()
    }

    pub fn has_nulls(&self) -> bool {
        self.valid.iter().any(|v| !v)
    }
}

impl From<Vec<Option<f64>>> for Floats {
    fn from(v: Vec<Option<f64>>) -> Floats {
        let mut f = Floats::with_capacity(v.len());
        v.into_iter().for_each(|x| f.push(x));
        f
    }
}

/// The added columns as plain values, before they become a table's columns.
#[derive(Debug)]
pub struct ComputedValues {
    /// Each distinct (device, precision) pair's resolution, and each row's pair.
    pub pairs: Vec<Resolved>,
    pub row_pair: Vec<u32>,
    /// The five numeric columns of the six, in output order, then the extras asked for.
    pub numbers: Vec<(&'static str, Floats)>,
    pub stats: ComputeStats,
}

/// Computes the added columns for `values` against `resolver`, and the `extras` asked for.
pub fn compute(values: &FieldValues, resolver: &Resolver, extras: Extras) -> Computed {
    let computed = compute_values(values, resolver, extras);
    let mut resolved_device = TextColumn::with_capacity(computed.row_pair.len());
    for &pair in &computed.row_pair {
        match computed.pairs[pair as usize].device.as_deref() {
            Some(device) => resolved_device.push_value(device),
            None => resolved_device.push_null(),
        }
    }
    let mut columns = Vec::with_capacity(computed.numbers.len() + 1);
    columns.push(
        StringChunked::with_chunk(RESOLVED_DEVICE.into(), resolved_device.finish()).into_column(),
    );
    for (name, values) in computed.numbers {
        columns.push(f64_column(name, values));
    }
    Computed {
        columns,
        stats: computed.stats,
    }
}

/// [`compute`], giving the values rather than columns.
pub fn compute_values(values: &FieldValues, resolver: &Resolver, extras: Extras) -> ComputedValues {
    let n = values.height;
    let mut stats = ComputeStats {
        rows: n,
        ..Default::default()
    };

    // Distinct (device, dtype) pairs, each resolved once. Runs are contiguous in real logs, so the previous
    // row's pair is checked before the hash map; text read from Arrow is coded, so pairs are pairs of codes.
    let mut pairs: Vec<Resolved> = Vec::new();
    let mut pair_rows: Vec<usize> = Vec::new();
    let mut row_pair: Vec<u32> = Vec::with_capacity(n);
    match (text_codes(&values.device), text_codes(&values.dtype)) {
        (Some(device_codes), Some(dtype_codes)) => {
            let mut pair_index: HashMap<(u32, u32), usize> = HashMap::new();
            let mut last: Option<((u32, u32), usize)> = None;
            for row in 0..n {
                let key = (device_codes.get(row), dtype_codes.get(row));
                let idx = match last {
                    Some((k, i)) if k == key => i,
                    _ => {
                        let i = *pair_index.entry(key).or_insert_with(|| {
                            pairs.push(
                                resolver.resolve(values.device.get(row), values.dtype.get(row)),
                            );
                            pair_rows.push(0);
                            pairs.len() - 1
                        });
                        last = Some((key, i));
                        i
                    }
                };
                pair_rows[idx] += 1;
                row_pair.push(idx as u32);
            }
        }
        _ => {
            let mut pair_index: HashMap<PairKey, usize> = HashMap::new();
            let mut last: Option<(PairKey, usize)> = None;
            for key in text_values(&values.device, n).zip(text_values(&values.dtype, n)) {
                let idx = match last {
                    Some((k, i)) if k == key => i,
                    _ => {
                        let i = *pair_index.entry(key).or_insert_with(|| {
                            pairs.push(resolver.resolve(key.0, key.1));
                            pair_rows.push(0);
                            pairs.len() - 1
                        });
                        last = Some((key, i));
                        i
                    }
                };
                pair_rows[idx] += 1;
                row_pair.push(idx as u32);
            }
        }
    }

    let mut peak_col = Floats::with_capacity(n);
    let mut tps_col = Floats::with_capacity(n);
    let mut achieved_col = Floats::with_capacity(n);
    let mut mfu_col = Floats::with_capacity(n);
    let mut mfu_fb_col = Floats::with_capacity(n);

    let mut outputs = [
        &mut peak_col,
        &mut tps_col,
        &mut achieved_col,
        &mut mfu_col,
        &mut mfu_fb_col,
    ];
    for column in outputs.iter_mut() {
        column.values.resize(n, 0.0);
        column.valid.resize(n, false);
    }
    let [peak_out, tps_out, achieved_out, mfu_out, mfu_fb_out] = outputs;
    let rows = Rows {
        start: 0,
        peak: (&mut peak_out.values, &mut peak_out.valid),
        tps: (&mut tps_out.values, &mut tps_out.valid),
        achieved: (&mut achieved_out.values, &mut achieved_out.valid),
        mfu: (&mut mfu_out.values, &mut mfu_out.valid),
        mfu_fb: (&mut mfu_fb_out.values, &mut mfu_fb_out.valid),
    };
    let counted = arithmetic(values, &pairs, &row_pair, rows);
    stats.bad_step_time_rows = counted.bad_step_time_rows;
    stats.bad_count_rows = counted.bad_count_rows;
    stats.overflow_rows = counted.overflow_rows;
    stats.null_mfu_rows = counted.null_mfu_rows;
    stats.mfu_above_one_rows = counted.mfu_above_one_rows;

    for (resolved, rows) in pairs.iter().zip(&pair_rows) {
        if let Some(why) = &resolved.unresolved {
            match stats.unresolved.iter_mut().find(|(w, _)| w == why) {
                Some(slot) => slot.1 += rows,
                None => stats.unresolved.push((why.clone(), *rows)),
            }
        }
    }

    let scaled = |v: &Floats| -> Floats {
        let mut out = Floats::with_capacity(v.len());
        for row in 0..v.len() {
            out.push(finite(v.get(row).map(|m| m * FULL_RECOMPUTE_FACTOR)));
        }
        out
    };
    let mut extra_columns = if extras.hfu {
        vec![
            (HFU_WALL_CLOCK, scaled(&mfu_col)),
            (HFU_FWD_BWD, scaled(&mfu_fb_col)),
        ]
    } else {
        Vec::new()
    };
    if let Some(logged_peak) = extras.logged_peak_flops {
        let mut corrected = Floats::with_capacity(n);
        for row in 0..n {
            corrected.push(match (values.logged_mfu.get(row), peak_col.get(row)) {
                (Some(m), Some(p)) => finite(Some(m * logged_peak / p)),
                _ => None,
            });
        }
        extra_columns.push((MFU_LOGGED_CORRECTED, corrected));
    }
    if let Some(w) = extras.window.filter(|w| *w > 0) {
        for (name, column) in [
            (MFU_WALL_CLOCK_ROLLING, &mfu_col),
            (MFU_FWD_BWD_ROLLING, &mfu_fb_col),
            (TOKENS_PER_SECOND_ROLLING, &tps_col),
        ] {
            let mean = rolling_mean(&column.to_options(), &values.runs, w);
            extra_columns.push((name, Floats::from(mean)));
        }
    }
    let mut numbers = vec![
        (PEAK_FLOPS_PER_DEVICE, peak_col),
        (TOKENS_PER_SECOND, tps_col),
        (ACHIEVED_FLOPS_PER_DEVICE, achieved_col),
        (MFU_WALL_CLOCK, mfu_col),
        (MFU_FWD_BWD, mfu_fb_col),
    ];
    numbers.extend(extra_columns);
    ComputedValues {
        pairs,
        row_pair,
        numbers,
        stats,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rolling_mean_stays_within_a_run_and_skips_nulls() {
        let v = [Some(1.0), Some(3.0), None, Some(5.0), Some(10.0), Some(7.0)];
        let runs = [0, 0, 0, 0, 1, 0];
        assert_eq!(
            rolling_mean(&v, &runs, 2),
            vec![
                Some(1.0),
                Some(2.0),
                Some(3.0),
                Some(5.0),
                Some(10.0),
                Some(6.0)
            ]
        );
        assert_eq!(rolling_mean(&[None, None], &[0, 0], 3), vec![None, None]);
    }
}
