//! The MFU arithmetic: throughput and utilization columns from the typed field values.
//!
//! Peaks are resolved once per distinct (device, precision) pair, never per row. A time that is zero,
//! negative, NaN or missing, or a count that is negative or not finite, gives null derived values, never
//! infinity; so does any result that is not a finite number (a subnormal step time such as 5e-324 makes
//! throughput overflow), the same in every output format. Each such row is counted so the end-of-run
//! report can say how many.

use std::collections::HashMap;
use std::mem::MaybeUninit;

use polars::prelude::*;

use crate::columns::{FieldValues, Numbers, Texts, WorkUnit};
use crate::peaks::{Resolved, Resolver, Unresolved};
use crate::read::text_column::TextColumn;

/// Names of the added columns, in output order.
pub const RESOLVED_DEVICE: &str = "resolved_device";
pub const PEAK_FLOPS_PER_DEVICE: &str = "peak_flops_per_device";
pub const TOKENS_PER_SECOND: &str = "tokens_per_second";
pub const ACHIEVED_FLOPS_PER_DEVICE: &str = "achieved_flops_per_device";
pub const MFU_WALL_CLOCK: &str = "mfu_wall_clock";
pub const MFU_FWD_BWD: &str = "mfu_fwd_bwd";
/// Added after the six where the rows count samples (images, utterances, completions).
pub const SAMPLES_PER_SECOND: &str = "samples_per_second";
/// Unit and definition of `samples_per_second`.
pub const SAMPLES_DEFINITION: (&str, &str, &str) = (
    SAMPLES_PER_SECOND,
    "samples/s",
    "samples / step_time, where the rows count samples (images, utterances, sequences, completions); where they count no tokens, tokens_per_second is null and achieved_flops_per_device is samples * flops_per_sample / (num_devices * step_time)",
);

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
    (
        TOKENS_PER_SECOND,
        "tokens/s",
        "tokens / step_time; where a row has no step time or no count, the rate the log measured (token_rate)",
    ),
    (
        ACHIEVED_FLOPS_PER_DEVICE,
        "FLOP/s",
        "tokens * flops_per_token / (num_devices * step_time), or token_rate * flops_per_token / num_devices",
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
    "the log's own MFU x --logged-peak-flops / peak_flops_per_device (and, with --logged-convention, x flops_per_token / that convention's count): the trainer's figure against the right peak and numerator",
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
    /// Rows whose logged MFU (the framework's own, as a fraction; re-based where `--logged-convention`
    /// asked) is above 1, and the largest such value.
    pub logged_mfu_above_one: (usize, f64),
    /// Rows whose `mfu_logged_corrected` (the logged MFU against mfu's peak) is above 1.
    pub corrected_mfu_above_one_rows: usize,
    /// Rows whose inputs were valid but a derived value overflowed to infinity: null instead.
    pub overflow_rows: usize,
    /// Each reason a peak was null, with the rows it affected.
    pub unresolved: Vec<(Unresolved, usize)>,
    /// Rows whose throughput is the rate the log measured, having no step time or count to divide.
    pub logged_rate_rows: usize,
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
        self.logged_rate_rows += other.logged_rate_rows;
        self.logged_mfu_above_one.0 += other.logged_mfu_above_one.0;
        self.logged_mfu_above_one.1 = self
            .logged_mfu_above_one
            .1
            .max(other.logged_mfu_above_one.1);
        self.corrected_mfu_above_one_rows += other.corrected_mfu_above_one_rows;
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

/// One output column over one chunk of rows, for the row loop: the values (each written once, never
/// read) and each row's validity.
type Slots<'a> = (&'a mut [MaybeUninit<f64>], &'a mut [bool]);

/// One output column over a range of rows: the values, each written once, and the validity bitmap in
/// Arrow's layout (a range starts on a multiple of 8 rows, so its bits start on a byte of their own).
type Out<'a> = (&'a mut [MaybeUninit<f64>], &'a mut [u8]);

/// The output slices of a range of rows (from `start`) of the five numeric columns.
struct Rows<'a> {
    start: usize,
    peak: Out<'a>,
    tps: Out<'a>,
    achieved: Out<'a>,
    mfu: Out<'a>,
    mfu_fb: Out<'a>,
}

impl<'a> Rows<'a> {
    fn len(&self) -> usize {
        self.peak.0.len()
    }

    /// Cuts the range at row `at`, a multiple of 8.
    fn split(self, at: usize) -> (Rows<'a>, Rows<'a>) {
        debug_assert!(at.is_multiple_of(8));
        fn cut(out: Out<'_>, at: usize) -> (Out<'_>, Out<'_>) {
            let (values, bits) = out;
            let (v1, v2) = values.split_at_mut(at);
            let (b1, b2) = bits.split_at_mut(at / 8);
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

/// Rows per piece of work: a large table's rows are computed in pieces on the thread pool (each row on
/// its own, so the result is the same whatever the number of threads).
const PIECE_ROWS: usize = 1 << 17;

/// Rows per chunk of the row loop: each input field is laid out as plain values and validity over a
/// chunk, so the loop itself is straight-line arithmetic the compiler can vectorize.
const CHUNK_ROWS: usize = 1024;

/// One input field over a chunk of rows: values (NaN where null) and whether each is there.
struct Lane {
    values: [f64; CHUNK_ROWS],
    valid: [bool; CHUNK_ROWS],
}

/// The validity of a column with a value in every row.
static ALL_VALID: [bool; CHUNK_ROWS] = [true; CHUNK_ROWS];

/// One field's values and validity over a chunk of rows.
type Field<'a> = (&'a [f64], &'a [bool]);

impl Lane {
    fn new() -> Box<Lane> {
        Box::new(Lane {
            values: [0.0; CHUNK_ROWS],
            valid: [false; CHUNK_ROWS],
        })
    }

    /// Rows `start..start + len` of `numbers`: a dense column's own values where they lie, anything else
    /// laid out in this lane.
    fn field<'a>(&'a mut self, numbers: &'a Numbers, start: usize, len: usize) -> Field<'a> {
        match numbers {
            Numbers::Dense(v) => return (&v[start..start + len], &ALL_VALID[..len]),
            Numbers::Pieces { starts, pieces } => {
                let piece = starts.partition_point(|s| *s <= start) - 1;
                let end = starts.get(piece + 1).copied().unwrap_or(usize::MAX);
                if start + len <= end {
                    return self.field(&pieces[piece], start - starts[piece], len);
                }
                // The rows straddle two or more pieces: laid out here, piece by piece.
                let mut row = start;
                while row < start + len {
                    let piece = starts.partition_point(|s| *s <= row) - 1;
                    let end = starts.get(piece + 1).copied().unwrap_or(usize::MAX);
                    let take = (start + len).min(end) - row;
                    let at = row - start;
                    Lane::dense_into(
                        &pieces[piece],
                        row - starts[piece],
                        &mut self.values[at..at + take],
                    );
                    row += take;
                }
                self.valid[..len].fill(true);
            }
            Numbers::DenseInt(_) => {
                Lane::dense_into(numbers, start, &mut self.values[..len]);
                self.valid[..len].fill(true);
            }
            Numbers::Column(v) => {
                let (values, valid) = (&mut self.values[..len], &mut self.valid[..len]);
                for ((value, ok), x) in values.iter_mut().zip(valid.iter_mut()).zip(&v[start..]) {
                    *value = x.unwrap_or(f64::NAN);
                    *ok = x.is_some();
                }
            }
            Numbers::Constant(c) => {
                self.values[..len].fill(*c);
                self.valid[..len].fill(true);
            }
            Numbers::Missing => {
                self.values[..len].fill(f64::NAN);
                self.valid[..len].fill(false);
            }
        }
        (&self.values[..len], &self.valid[..len])
    }
}

impl Lane {
    /// Rows `start..start + out.len()` of a dense column (`Dense` or `DenseInt`) into `out`.
    fn dense_into(numbers: &Numbers, start: usize, out: &mut [f64]) {
        let end = start + out.len();
        match numbers {
            Numbers::Dense(v) => out.copy_from_slice(&v[start..end]),
            Numbers::DenseInt(v) => {
                for (value, x) in out.iter_mut().zip(&v[start..end]) {
                    *value = *x as f64;
                }
            }
            other => {
                for (k, value) in out.iter_mut().enumerate() {
                    *value = other.get(start + k).unwrap_or(f64::NAN);
                }
            }
        }
    }
}

/// The arithmetic of every row of `rows`, and its counts. `peaks` is each pair's peak: positive and
/// finite when known (the table, `--peaks` files and `--peak-flops` take nothing else), NaN when not.
/// Also gives each output column's count of nulls, in output order.
fn arithmetic(
    values: &FieldValues,
    peaks: &[f64],
    runs: &PairRuns,
    rows: Rows<'_>,
) -> (ComputeStats, [usize; 5]) {
    if rows.len() > PIECE_ROWS {
        // Cut on a multiple of 8 rows, so each half's validity starts on a byte.
        let mid = rows.len() / 2 / 8 * 8;
        let (left, right) = rows.split(mid);
        let ((mut a, mut nulls), (b, more)) = rayon::join(
            || arithmetic(values, peaks, runs, left),
            || arithmetic(values, peaks, runs, right),
        );
        a.add(&b);
        nulls.iter_mut().zip(more).for_each(|(n, m)| *n += m);
        return (a, nulls);
    }
    let mut stats = ComputeStats::default();
    let mut nulls = [0usize; 5];
    let [mut step, mut fwd_bwd, mut tokens, mut devices, mut fpt, mut peak] =
        std::array::from_fn(|_| Lane::new());
    // Each chunk's validity, a byte a row while the loop writes it (bytes keep the loop vectorized), then
    // packed into the columns' bitmaps: 1 KiB a column stays in cache, where a byte a row for the whole
    // table would be written out and read back.
    let mut valid = Box::new([[false; CHUNK_ROWS]; 5]);
    let Rows {
        start: first_row,
        peak: (peak_out, peak_bits),
        tps: (tps_out, tps_bits),
        achieved: (achieved_out, achieved_bits),
        mfu: (mfu_out, mfu_bits),
        mfu_fb: (mfu_fb_out, mfu_fb_bits),
    } = rows;
    let n = peak_out.len();
    let mut done = 0;
    while done < n {
        let len = CHUNK_ROWS.min(n - done);
        let row0 = first_row + done;
        runs.fill(row0, peaks, &mut peak.values[..len]);
        let fields = [
            step.field(&values.step_time_s, row0, len),
            fwd_bwd.field(&values.fwd_bwd_time_s, row0, len),
            tokens.field(&values.tokens, row0, len),
            devices.field(&values.num_devices, row0, len),
            fpt.field(&values.flops_per_token, row0, len),
            (&peak.values[..len], &ALL_VALID[..len]),
        ];
        let out = done..done + len;
        let [v0, v1, v2, v3, v4] = &mut *valid;
        let counts = chunk_arithmetic(
            fields,
            len,
            [
                (&mut peak_out[out.clone()], &mut v0[..]),
                (&mut tps_out[out.clone()], &mut v1[..]),
                (&mut achieved_out[out.clone()], &mut v2[..]),
                (&mut mfu_out[out.clone()], &mut v3[..]),
                (&mut mfu_fb_out[out], &mut v4[..]),
            ],
        );
        let bytes = done / 8..(done + len).div_ceil(8);
        for ((bits, flags), nulls) in [
            &mut *peak_bits,
            &mut *tps_bits,
            &mut *achieved_bits,
            &mut *mfu_bits,
            &mut *mfu_fb_bits,
        ]
        .into_iter()
        .zip(valid.iter())
        .zip(nulls.iter_mut())
        {
            *nulls += len - pack_bits_into(&flags[..len], &mut bits[bytes.clone()]);
        }
        stats.bad_step_time_rows += counts[0];
        stats.bad_count_rows += counts[1];
        stats.overflow_rows += counts[2];
        stats.null_mfu_rows += counts[3];
        stats.mfu_above_one_rows += counts[4];
        done += len;
    }
    (stats, nulls)
}

/// The row loop over one chunk, on the widest vector unit the processor has: the same arithmetic, so the
/// same bits, on every path (IEEE division and multiplication are exactly rounded at any width, and Rust
/// never fuses a multiply and an add). Measured on the project's 2-core machine with a standalone copy of
/// the loop over 1024-row chunks (2026-12-03): 15 to 17 ns a row on the baseline x86-64 code the wheel
/// and the binary are built for, 5.7 with AVX2, 4.4 with AVX-512; `mfu.enrich` of a 1M-row table went
/// from 41.7 to 35.4 ms. A test holds every path to the row-by-row reference, bit for bit.
fn chunk_arithmetic(lanes: [Field<'_>; 6], len: usize, out: [Slots<'_>; 5]) -> [usize; 5] {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the processor has AVX-512F, checked just above.
            return unsafe { chunk_arithmetic_avx512(lanes, len, out) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor has AVX2, checked just above.
            return unsafe { chunk_arithmetic_avx2(lanes, len, out) };
        }
    }
    chunk_arithmetic_plain(lanes, len, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn chunk_arithmetic_avx512(
    lanes: [Field<'_>; 6],
    len: usize,
    out: [Slots<'_>; 5],
) -> [usize; 5] {
    chunk_rows(lanes, len, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn chunk_arithmetic_avx2(
    lanes: [Field<'_>; 6],
    len: usize,
    out: [Slots<'_>; 5],
) -> [usize; 5] {
    chunk_rows(lanes, len, out)
}

fn chunk_arithmetic_plain(lanes: [Field<'_>; 6], len: usize, out: [Slots<'_>; 5]) -> [usize; 5] {
    chunk_rows(lanes, len, out)
}

/// The row loop over one chunk. A missing value is NaN, and so is a time that is zero, negative or not
/// finite, or a count that is negative or not finite (a device count of zero too): NaN carries through
/// every product and quotient, so what depends on it is null. With valid inputs a result is finite or
/// +infinity (an overflow, also null and counted), never NaN, since every input is at least 0 and every
/// divisor positive. No branch per row, so the loop vectorizes. Gives the counts of bad step times, bad
/// counts, overflowed rows, null MFU and MFU above 1.
// `(x >= 0.0) & (x < INF)` rather than `(0.0..INF).contains(&x)`: the non-short-circuit `&` keeps the
// loop free of branches.
#[allow(clippy::manual_range_contains)]
#[inline(always)]
fn chunk_rows(
    [step, fwd_bwd, tokens, devices, fpt, peak]: [Field<'_>; 6],
    len: usize,
    [peak_out, tps_out, achieved_out, mfu_out, mfu_fb_out]: [Slots<'_>; 5],
) -> [usize; 5] {
    const INF: f64 = f64::INFINITY;
    // Every slice cut to the chunk's length up front: no bounds check in the loops.
    let (peak_values, peak_valid) = (&mut peak_out.0[..len], &mut peak_out.1[..len]);
    let (tps_values, tps_valid) = (&mut tps_out.0[..len], &mut tps_out.1[..len]);
    let (achieved_values, achieved_valid) =
        (&mut achieved_out.0[..len], &mut achieved_out.1[..len]);
    let (mfu_values, mfu_valid) = (&mut mfu_out.0[..len], &mut mfu_out.1[..len]);
    let (mfu_fb_values, mfu_fb_valid) = (&mut mfu_fb_out.0[..len], &mut mfu_fb_out.1[..len]);
    let (sv, bv, tv, dv, fv, pv) = (
        &step.0[..len],
        &fwd_bwd.0[..len],
        &tokens.0[..len],
        &devices.0[..len],
        &fpt.0[..len],
        &peak.0[..len],
    );
    let (tm, dm, fm) = (&tokens.1[..len], &devices.1[..len], &fpt.1[..len]);
    // A count that is there but not valid (a loop of its own: the validity bytes beside the values would
    // keep the main loop from vectorizing).
    let mut bad_count = 0usize;
    for i in 0..len {
        let (t, d, f) = (tv[i], dv[i], fv[i]);
        let t_ok = (t >= 0.0) & (t < INF);
        let d_ok = (d > 0.0) & (d < INF);
        let f_ok = (f >= 0.0) & (f < INF);
        bad_count += usize::from((tm[i] & !t_ok) | (dm[i] & !d_ok) | (fm[i] & !f_ok));
    }
    let (mut bad_step, mut overflowed, mut null_mfu, mut above_one) =
        (0usize, 0usize, 0usize, 0usize);
    for i in 0..len {
        let p = pv[i];
        let RowValues {
            step_ok: s_ok,
            work,
            tps,
            achieved,
            mfu,
            mfu_fb,
        } = row_values(sv[i], bv[i], tv[i], dv[i], fv[i], p);

        bad_step += usize::from(!s_ok);
        overflowed += usize::from(
            (work == INF) | (tps == INF) | (achieved == INF) | (mfu == INF) | (mfu_fb == INF),
        );
        let mfu_ok = mfu.is_finite();
        null_mfu += usize::from(!mfu_ok);
        above_one += usize::from(mfu_ok & (mfu > 1.0));

        let peak_ok = !p.is_nan();
        peak_values[i].write(if peak_ok { p } else { 0.0 });
        peak_valid[i] = peak_ok;
        let ok = tps.is_finite();
        tps_values[i].write(if ok { tps } else { 0.0 });
        tps_valid[i] = ok;
        let ok = achieved.is_finite();
        achieved_values[i].write(if ok { achieved } else { 0.0 });
        achieved_valid[i] = ok;
        mfu_values[i].write(if mfu_ok { mfu } else { 0.0 });
        mfu_valid[i] = mfu_ok;
        let ok = mfu_fb.is_finite();
        mfu_fb_values[i].write(if ok { mfu_fb } else { 0.0 });
        mfu_fb_valid[i] = ok;
    }
    [bad_step, bad_count, overflowed, null_mfu, above_one]
}

/// One row's arithmetic before the null rule: NaN where an input is missing or invalid, +infinity where a
/// valid row overflowed. Both the row loop and [`step_metrics`] call it, so a value logged while training
/// and the same row enriched afterwards are the same bits.
struct RowValues {
    /// Whether the step time is positive and finite.
    step_ok: bool,
    /// `tokens * flops_per_token / num_devices`.
    work: f64,
    tps: f64,
    achieved: f64,
    mfu: f64,
    mfu_fb: f64,
}

/// [`RowValues`] of step time `s`, fwd+bwd time `b`, tokens `t`, devices `d`, FLOPs per token `f` and peak
/// `p` (NaN for any that is missing; `p` is positive and finite when known). No branch: it is the body of a
/// loop that vectorizes.
// `(x >= 0.0) & (x < INF)` rather than `(0.0..INF).contains(&x)`: the non-short-circuit `&` keeps the
// loop free of branches.
#[allow(clippy::manual_range_contains)]
#[inline(always)]
fn row_values(s: f64, b: f64, t: f64, d: f64, f: f64, p: f64) -> RowValues {
    const INF: f64 = f64::INFINITY;
    let step_ok = (s > 0.0) & (s < INF);
    let s = if step_ok { s } else { f64::NAN };
    let b = if (b > 0.0) & (b < INF) { b } else { f64::NAN };
    let t = if (t >= 0.0) & (t < INF) { t } else { f64::NAN };
    let d = if (d > 0.0) & (d < INF) { d } else { f64::NAN };
    let f = if (f >= 0.0) & (f < INF) { f } else { f64::NAN };
    let work = t * f / d;
    let achieved = work / s;
    RowValues {
        step_ok,
        work,
        tps: t / s,
        achieved,
        mfu: achieved / p,
        mfu_fb: work / b / p,
    }
}

/// What one step (or one logging interval, given as per-step means) measured: the inputs of one row of
/// `mfu enrich`. `None` is a missing value.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StepInputs {
    /// Wall-clock seconds of the step.
    pub step_time: Option<f64>,
    /// Seconds of forward and backward only.
    pub fwd_bwd_time: Option<f64>,
    /// Tokens trained on by all devices in the step.
    pub tokens: Option<f64>,
    pub num_devices: Option<f64>,
    pub flops_per_token: Option<f64>,
    /// Dense peak FLOP/s of one device; `None` when unknown.
    pub peak: Option<f64>,
}

/// The added columns of one row (all but `resolved_device`), each null by the rule of the column path.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StepMetrics {
    pub peak_flops_per_device: Option<f64>,
    pub tokens_per_second: Option<f64>,
    pub achieved_flops_per_device: Option<f64>,
    pub mfu_wall_clock: Option<f64>,
    pub mfu_fwd_bwd: Option<f64>,
}

/// The per-step entry point: the row loop's arithmetic for one row, for a meter that logs while a run
/// trains. A value that is not a finite number is null, as in every output format; a peak that is not
/// positive and finite counts as unknown.
pub fn step_metrics(inputs: &StepInputs) -> StepMetrics {
    let value = |v: Option<f64>| v.unwrap_or(f64::NAN);
    let peak = inputs.peak.filter(|p| p.is_finite() && *p > 0.0);
    let row = row_values(
        value(inputs.step_time),
        value(inputs.fwd_bwd_time),
        value(inputs.tokens),
        value(inputs.num_devices),
        value(inputs.flops_per_token),
        value(peak),
    );
    let finite = |v: f64| v.is_finite().then_some(v);
    StepMetrics {
        peak_flops_per_device: peak,
        tokens_per_second: finite(row.tps),
        achieved_flops_per_device: finite(row.achieved),
        mfu_wall_clock: finite(row.mfu),
        mfu_fwd_bwd: finite(row.mfu_fb),
    }
}

/// Rows the pair walk compares at once with the current pair.
const PAIR_BLOCK: usize = 64;

/// Each row's code of a text field whose texts are coded, constant or missing (one code for all rows).
#[derive(Clone, Copy)]
enum Codes<'a> {
    Rows(&'a [u32]),
    One,
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
    let (values, bits, nulls) = v.into_parts();
    let rows = values.len();
    let validity = (nulls > 0).then(|| polars_arrow::bitmap::Bitmap::from_u8_vec(bits, rows));
    Float64Chunked::from_vec_validity(name.into(), values, validity).into_column()
}

/// A nullable float column being built: the values (0 where null), a validity bitmap in Arrow's layout
/// and its count of nulls. Already in the form Arrow and polars arrays take.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Floats {
    pub values: Vec<f64>,
    /// Bit `i % 8` of byte `i / 8` is set when row `i` has a value.
    valid: Vec<u8>,
    nulls: usize,
}

impl Floats {
    pub fn with_capacity(n: usize) -> Floats {
        Floats {
            values: Vec::with_capacity(n),
            valid: Vec::with_capacity(n.div_ceil(8)),
            nulls: 0,
        }
    }

    #[inline]
    pub fn push(&mut self, v: Option<f64>) {
        let row = self.values.len();
        if row.is_multiple_of(8) {
            self.valid.push(0);
        }
        self.values.push(v.unwrap_or(0.0));
        match v {
            Some(_) => self.valid[row / 8] |= 1 << (row % 8),
            None => self.nulls += 1,
        }
    }

    #[inline]
    pub fn get(&self, row: usize) -> Option<f64> {
        (self.valid[row / 8] >> (row % 8) & 1 == 1).then(|| self.values[row])
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

    /// Gives row `row` (which must exist) the value `v`.
    pub fn set(&mut self, row: usize, v: f64) {
        if self.get(row).is_none() {
            self.nulls -= 1;
            self.valid[row / 8] |= 1 << (row % 8);
        }
        self.values[row] = v;
    }

    /// The values, the validity bitmap and the count of nulls.
    pub fn into_parts(self) -> (Vec<f64>, Vec<u8>, usize) {
        (self.values, self.valid, self.nulls)
    }
}

impl From<Vec<Option<f64>>> for Floats {
    fn from(v: Vec<Option<f64>>) -> Floats {
        let mut f = Floats::with_capacity(v.len());
        v.into_iter().for_each(|x| f.push(x));
        f
    }
}

/// `flags` into `bits` (`flags.len()` rounded up to bytes long) as a bitmap in Arrow's layout (bit `i % 8`
/// of byte `i / 8`, least significant first), eight at a time: eight 0/1 bytes read as one little-endian
/// word, times a constant whose partial products never overlap, put flag `i` at bit `56 + i` of the
/// product. Gives the number of flags set.
fn pack_bits_into(flags: &[bool], bits: &mut [u8]) -> usize {
    let mut set = 0;
    let mut chunks = flags.chunks_exact(8);
    for (chunk, byte) in (&mut chunks).zip(bits.iter_mut()) {
        let word = u64::from_le_bytes(std::array::from_fn(|k| u8::from(chunk[k])));
        *byte = (word.wrapping_mul(0x0102_0408_1020_4080) >> 56) as u8;
        set += byte.count_ones() as usize;
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let byte = rest
            .iter()
            .enumerate()
            .fold(0u8, |byte, (k, v)| byte | (u8::from(*v) << k));
        bits[flags.len() / 8] = byte;
        set += byte.count_ones() as usize;
    }
    set
}

/// Each row's (device, precision) pair, as runs of rows with one pair: run `k` covers rows `starts[k]` up
/// to the next run's start (the last one to `rows`). A log keeps a run's rows together, so runs are few
/// and the columns that follow the pair (the peak, `resolved_device`) are laid a run at a time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PairRuns {
    starts: Vec<usize>,
    pairs: Vec<u32>,
    rows: usize,
}

impl PairRuns {
    /// Row `row` (the next one) has pair `pair`, which starts a run if the row before had another.
    #[inline]
    fn at(&mut self, row: usize, pair: u32) {
        if self.pairs.last() != Some(&pair) {
            self.starts.push(row);
            self.pairs.push(pair);
        }
    }

    /// Runs of each row's pair in `row_pair`.
    #[cfg(test)]
    pub fn from_rows(row_pair: &[u32]) -> PairRuns {
        let mut runs = PairRuns::default();
        for (row, pair) in row_pair.iter().enumerate() {
            runs.at(row, *pair);
        }
        runs.rows = row_pair.len();
        runs
    }

    /// The number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Each run's rows and pair, in row order.
    pub fn iter(&self) -> impl Iterator<Item = (std::ops::Range<usize>, u32)> + '_ {
        let ends = self.starts.iter().skip(1).copied().chain([self.rows]);
        self.starts
            .iter()
            .zip(ends)
            .zip(&self.pairs)
            .map(|((start, end), pair)| (*start..end, *pair))
    }

    /// Rows `start..start + out.len()`, each given its pair's value in `per_pair`.
    fn fill(&self, start: usize, per_pair: &[f64], out: &mut [f64]) {
        let end = start + out.len();
        let mut run = self
            .starts
            .partition_point(|s| *s <= start)
            .saturating_sub(1);
        let mut row = start;
        while row < end {
            let run_end = self.starts.get(run + 1).map_or(end, |s| (*s).min(end));
            out[row - start..run_end - start].fill(per_pair[self.pairs[run] as usize]);
            (row, run) = (run_end, run + 1);
        }
    }
}

/// The added columns as plain values, before they become a table's columns.
#[derive(Debug)]
pub struct ComputedValues {
    /// Each distinct (device, precision) pair's resolution, and each row's pair.
    pub pairs: Vec<Resolved>,
    pub runs: PairRuns,
    /// The five numeric columns of the six, in output order, then the extras asked for.
    pub numbers: Vec<(&'static str, Floats)>,
    pub stats: ComputeStats,
}

/// Each distinct (device, dtype) pair of the rows, resolved once, and each row's pair as runs. Runs are
/// contiguous in real logs, so the previous row's pair is checked before the hash map; text read from Arrow
/// is coded, so pairs are pairs of codes.
fn resolve_pairs(values: &FieldValues, resolver: &Resolver) -> (Vec<Resolved>, PairRuns) {
    let n = values.height;
    let mut pairs: Vec<Resolved> = Vec::new();
    let mut runs = PairRuns::default();
    match (text_codes(&values.device), text_codes(&values.dtype)) {
        (Some(device_codes), Some(dtype_codes)) => {
            let mut pair_index: PlHashMap<(u32, u32), usize> = PlHashMap::default();
            // A pair seen for the first time, or again after another: looked up, resolved when new.
            let mut lookup = |row: usize, key: (u32, u32)| -> u32 {
                *pair_index.entry(key).or_insert_with(|| {
                    pairs.push(resolver.resolve(values.device.get(row), values.dtype.get(row)));
                    pairs.len() - 1
                }) as u32
            };
            let code = |codes: Codes<'_>, row: usize| match codes {
                Codes::Rows(c) => c[row],
                Codes::One => 0,
            };
            // Whether every row of `rows` has code `value` (no early exit, so it vectorizes).
            let all = |codes: Codes<'_>, rows: std::ops::Range<usize>, value: u32| match codes {
                Codes::Rows(c) => c[rows].iter().fold(true, |all, c| all & (*c == value)),
                Codes::One => true,
            };
            // The codes walked a block of rows at a time: a block all of the current pair (most of them:
            // a run's rows are contiguous) is one comparison, and the map is looked up only where the
            // pair changes.
            // The pair before the current one is kept too: rows that alternate between two pairs skip
            // the map.
            if n > 0 {
                let mut last = (code(device_codes, 0), code(dtype_codes, 0));
                let mut last_pair = lookup(0, last);
                let mut before: Option<((u32, u32), u32)> = None;
                runs.at(0, last_pair);
                let mut row = 0;
                while row < n {
                    let end = (row + PAIR_BLOCK).min(n);
                    if !(all(device_codes, row..end, last.0) && all(dtype_codes, row..end, last.1))
                    {
                        for r in row..end {
                            let key = (code(device_codes, r), code(dtype_codes, r));
                            if key != last {
                                let pair = match before {
                                    Some((k, p)) if k == key => p,
                                    _ => lookup(r, key),
                                };
                                before = Some((last, last_pair));
                                (last, last_pair) = (key, pair);
                                runs.at(r, pair);
                            }
                        }
                    }
                    row = end;
                }
            }
        }
        _ => {
            let mut pair_index: PlHashMap<PairKey, u32> = PlHashMap::default();
            let mut last: Option<PairKey> = None;
            let keys = text_values(&values.device, n).zip(text_values(&values.dtype, n));
            for (row, key) in keys.enumerate() {
                if last != Some(key) {
                    last = Some(key);
                    let pair = *pair_index.entry(key).or_insert_with(|| {
                        pairs.push(resolver.resolve(key.0, key.1));
                        (pairs.len() - 1) as u32
                    });
                    runs.at(row, pair);
                }
            }
        }
    }
    runs.rows = n;
    (pairs, runs)
}

/// Reads a log's own MFU as percentages where its values, written without `%`, are a hundred times
/// mfu's own MFU of the same rows (`mfu: 38.42` beside mfu's 0.37): divided by 100, with a warning
/// that gives the evidence. Where mfu has no MFU of its own to compare (no device, no FLOPs), values
/// above 1 stay as written (and are flagged as impossible where they are used).
pub fn read_logged_percentages(values: &mut FieldValues, resolver: &Resolver) {
    let n = values.height;
    let median = |mut v: Vec<f64>| crate::stats::upper_middle(&mut v);
    let logged: Vec<Option<f64>> = (0..n)
        .map(|row| {
            values
                .logged_mfu
                .get(row)
                .filter(|m| m.is_finite() && *m > 0.0)
        })
        .collect();
    let Some(written) = median(logged.iter().flatten().copied().collect()) else {
        return;
    };
    if !(written > 1.0 && written <= 100.0) {
        return;
    }
    let (pairs, runs) = resolve_pairs(values, resolver);
    let mut own = Vec::new();
    for (rows, pair) in runs.iter() {
        let peak = pairs[pair as usize].peak.unwrap_or(f64::NAN);
        for row in rows {
            if logged[row].is_none() {
                continue;
            }
            let get = |n: &Numbers| n.get(row).unwrap_or(f64::NAN);
            let mfu = row_values(
                get(&values.step_time_s),
                f64::NAN,
                get(&values.tokens),
                get(&values.num_devices),
                get(&values.flops_per_token),
                peak,
            )
            .mfu;
            if mfu.is_finite() && mfu > 0.0 {
                own.push(mfu);
            }
        }
    }
    let Some(computed) = median(own) else {
        values.column_warnings.push(format!(
            "the log's own MFU (median {written:.4}) is above 1 and mfu has no MFU of its own to tell whether it is a percentage: read as written"
        ));
        return;
    };
    let ratio = written / computed;
    // Read as a percentage, the log's MFU is mfu's times its peak and FLOPs count over the log's:
    // within a factor of 20 of mfu's either way (nanochat divides a 4090's FLOP/s by an H100's peak,
    // 6x). Read as a fraction it is above 1: impossible. Beyond a factor of 20 neither reading is
    // borne out, and the figure stays as written (flagged where it is used).
    if (5.0..=2000.0).contains(&ratio) {
        let scaled: Vec<Option<f64>> = (0..n)
            .map(|row| values.logged_mfu.get(row).map(|m| m / 100.0))
            .collect();
        values.logged_mfu = Numbers::Column(scaled);
        let apart = if (50.0..=200.0).contains(&ratio) {
            String::new()
        } else {
            "; its peak or FLOPs count is not mfu's: `mfu audit` says which".to_string()
        };
        values.column_warnings.push(format!(
            "the log's own MFU is written as a percentage without '%' (median {written:.4}, {ratio:.0}x mfu's own median {computed:.4}): read as {:.4}{apart}",
            written / 100.0
        ));
    }
}

/// Computes the added columns for `values` against `resolver`, and the `extras` asked for.
pub fn compute(values: &FieldValues, resolver: &Resolver, extras: Extras) -> Computed {
    let computed = compute_values(values, resolver, extras);
    let mut resolved_device = TextColumn::with_capacity(computed.runs.rows());
    for (rows, pair) in computed.runs.iter() {
        match computed.pairs[pair as usize].device.as_deref() {
            Some(device) => rows.for_each(|_| resolved_device.push_value(device)),
            None => rows.for_each(|_| resolved_device.push_null()),
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

    let (pairs, runs) = resolve_pairs(values, resolver);
    let mut pair_rows = vec![0usize; pairs.len()];
    for (rows, pair) in runs.iter() {
        pair_rows[pair as usize] += rows.len();
    }

    // The values are left unwritten until the row loop writes each once: clearing 40 MB of output for a 1M
    // row table first was 4% of `mfu.enrich`'s time (memset, or the kernel's zeroing of fresh pages).
    let mut outputs: [(Vec<f64>, Vec<u8>); 5] =
        std::array::from_fn(|_| (Vec::with_capacity(n), vec![0u8; n.div_ceil(8)]));
    let [o0, o1, o2, o3, o4] = &mut outputs;
    fn out(column: &mut (Vec<f64>, Vec<u8>), n: usize) -> Out<'_> {
        (&mut column.0.spare_capacity_mut()[..n], &mut column.1[..])
    }
    let rows = Rows {
        start: 0,
        peak: out(o0, n),
        tps: out(o1, n),
        achieved: out(o2, n),
        mfu: out(o3, n),
        mfu_fb: out(o4, n),
    };
    let peaks: Vec<f64> = pairs.iter().map(|r| r.peak.unwrap_or(f64::NAN)).collect();
    let (counted, nulls) = arithmetic(values, &peaks, &runs, rows);
    let mut column = 0;
    let [peak_col, mut tps_col, mut achieved_col, mut mfu_col, mfu_fb_col] =
        outputs.map(|(mut values, valid)| {
            // SAFETY: `arithmetic` wrote each of the first `n` slots: its chunks cover rows 0..n, and the row
            // loop writes every row of a chunk in every column.
            unsafe { values.set_len(n) };
            column += 1;
            Floats {
                values,
                valid,
                nulls: nulls[column - 1],
            }
        });
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

    if !values.rate.is_missing() {
        let mut outputs = RateOutputs {
            rate: &mut tps_col,
            achieved: &mut achieved_col,
            mfu: &mut mfu_col,
        };
        fill_from_logged_rate(values, &peak_col, &mut outputs, &mut stats);
    }
    // Where the work is counted in samples, the rate computed is samples a second; where the rows
    // count samples besides tokens, samples a second is their own division (or the samples rate the
    // log measured, where that division gives none).
    let (tps_col, samples_col) = match values.unit {
        WorkUnit::Samples => {
            let nulls = Floats::from(vec![None; n]);
            (nulls, Some(tps_col))
        }
        WorkUnit::Tokens if !values.samples.is_missing() || !values.sample_rate.is_missing() => {
            let mut rate = Floats::with_capacity(n);
            for row in 0..n {
                let divided = values
                    .samples
                    .get(row)
                    .filter(|c| *c >= 0.0)
                    .zip(values.step_time_s.get(row).filter(|t| *t > 0.0))
                    .map(|(c, t)| c / t);
                let logged = || values.sample_rate.get(row).filter(|r| *r >= 0.0);
                rate.push(finite(divided.or_else(logged)));
            }
            (tps_col, Some(rate))
        }
        WorkUnit::Tokens => (tps_col, None),
    };
    let extra_columns = extra_columns(values, extras, &peak_col, &tps_col, &mfu_col, &mfu_fb_col);
    // Every MFU column follows the rule for MFU above 1, the framework's own too: counted, for a
    // warning, never passed on quietly.
    for row in 0..values.height {
        if let Some(m) = values.logged_mfu.get(row).filter(|m| *m > 1.0) {
            stats.logged_mfu_above_one.0 += 1;
            stats.logged_mfu_above_one.1 = stats.logged_mfu_above_one.1.max(m);
        }
    }
    if let Some((_, corrected)) = extra_columns
        .iter()
        .find(|(name, _)| *name == MFU_LOGGED_CORRECTED)
    {
        stats.corrected_mfu_above_one_rows = (0..corrected.len())
            .filter(|row| corrected.get(*row).is_some_and(|m| m > 1.0))
            .count();
    }
    let mut numbers = vec![
        (PEAK_FLOPS_PER_DEVICE, peak_col),
        (TOKENS_PER_SECOND, tps_col),
        (ACHIEVED_FLOPS_PER_DEVICE, achieved_col),
        (MFU_WALL_CLOCK, mfu_col),
        (MFU_FWD_BWD, mfu_fb_col),
    ];
    if let Some(samples) = samples_col {
        numbers.push((SAMPLES_PER_SECOND, samples));
    }
    numbers.extend(extra_columns);
    ComputedValues {
        pairs,
        runs,
        numbers,
        stats,
    }
}

/// The columns a logged rate fills where the division gives nothing.
struct RateOutputs<'a> {
    rate: &'a mut Floats,
    achieved: &'a mut Floats,
    mfu: &'a mut Floats,
}

/// Rows with no throughput (no step time, or no count, to divide) but a rate the log measured, of all
/// devices in the unit of the work: that rate is their throughput, and achieved FLOP/s and MFU follow
/// from it as from a division: a rate is the work of one second, so the row loop's own arithmetic
/// ([`row_values`]) gives them, with its rules for what is valid. Rows the division filled keep its
/// figure: where both exist the reading has already checked them against each other. A filled row no
/// longer counts as one with a bad step time or a null MFU.
fn fill_from_logged_rate(
    values: &FieldValues,
    peak: &Floats,
    out: &mut RateOutputs<'_>,
    stats: &mut ComputeStats,
) {
    let value = |numbers: &Numbers, row: usize| numbers.get(row).unwrap_or(f64::NAN);
    for row in 0..values.height {
        if out.rate.get(row).is_some() {
            continue;
        }
        let one_second = row_values(
            1.0,
            f64::NAN,
            value(&values.rate, row),
            value(&values.num_devices, row),
            value(&values.flops_per_token, row),
            peak.get(row).unwrap_or(f64::NAN),
        );
        if !one_second.tps.is_finite() {
            continue;
        }
        out.rate.set(row, one_second.tps);
        stats.logged_rate_rows += 1;
        let step_time = value(&values.step_time_s, row);
        if !(step_time.is_finite() && step_time > 0.0) {
            stats.bad_step_time_rows = stats.bad_step_time_rows.saturating_sub(1);
        }
        if one_second.achieved.is_finite() {
            out.achieved.set(row, one_second.achieved);
        }
        if one_second.mfu.is_finite() {
            out.mfu.set(row, one_second.mfu);
            stats.null_mfu_rows = stats.null_mfu_rows.saturating_sub(1);
            if one_second.mfu > 1.0 {
                stats.mfu_above_one_rows += 1;
            }
        }
    }
}

/// The optional columns `extras` asks for, from the computed peak, throughput and MFU columns.
fn extra_columns(
    values: &FieldValues,
    extras: Extras,
    peak_col: &Floats,
    tps_col: &Floats,
    mfu_col: &Floats,
    mfu_fb_col: &Floats,
) -> Vec<(&'static str, Floats)> {
    let n = values.height;
    let scaled = |v: &Floats| -> Floats {
        let mut out = Floats::with_capacity(v.len());
        for row in 0..v.len() {
            out.push(finite(v.get(row).map(|m| m * FULL_RECOMPUTE_FACTOR)));
        }
        out
    };
    let mut extra_columns = if extras.hfu {
        vec![
            (HFU_WALL_CLOCK, scaled(mfu_col)),
            (HFU_FWD_BWD, scaled(mfu_fb_col)),
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
        assert_eq!(
            values.runs.len(),
            n,
            "a rolling window needs the rows' runs"
        );
        for (name, column) in [
            (MFU_WALL_CLOCK_ROLLING, mfu_col),
            (MFU_FWD_BWD_ROLLING, mfu_fb_col),
            (TOKENS_PER_SECOND_ROLLING, tps_col),
        ] {
            let mean = rolling_mean(&column.to_options(), &values.runs, w);
            extra_columns.push((name, Floats::from(mean)));
        }
    }
    extra_columns
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

    #[test]
    fn a_column_in_pieces_reads_as_its_concatenation() {
        let a: Vec<f64> = (0..700).map(|i| i as f64 * 0.5).collect();
        let b: Vec<i64> = (0..1500).map(|i| (1i64 << 60) + i).collect();
        let c: Vec<f64> = (0..900).map(|i| -(i as f64)).collect();
        let whole: Vec<f64> = a
            .iter()
            .copied()
            .chain(b.iter().map(|x| *x as f64))
            .chain(c.iter().copied())
            .collect();
        let pieces = Numbers::Pieces {
            starts: vec![0, 700, 2200],
            pieces: vec![
                Numbers::Dense(a.into()),
                Numbers::DenseInt(b.into()),
                Numbers::Dense(c.into()),
            ],
        };
        let mut lane = Lane::new();
        for (start, len) in [
            (0, 700),
            (0, 1024),
            (600, 1024),
            (700, 1500),
            (1024, 1024),
            (2048, 1024),
            (3000, 100),
            (650, 1600),
        ] {
            let len = len.min(whole.len() - start);
            let (values, valid) = lane.field(&pieces, start, len.min(CHUNK_ROWS));
            let len = len.min(CHUNK_ROWS);
            assert_eq!(values, &whole[start..start + len], "{start} {len}");
            assert!(valid.iter().all(|v| *v));
        }
        for row in [0, 699, 700, 2199, 2200, 3099] {
            assert_eq!(pieces.get(row), Some(whole[row]));
        }
    }

    #[test]
    fn validity_bits_are_arrows_layout() {
        for len in [0usize, 1, 7, 8, 9, 63, 64, 65, 1000] {
            let valid: Vec<bool> = (0..len).map(|i| (i * 7 + i / 3) % 5 < 2).collect();
            let mut floats = Floats::with_capacity(len);
            for (row, ok) in valid.iter().enumerate() {
                floats.push(ok.then_some(row as f64));
            }
            let nulls = valid.iter().filter(|v| !**v).count();
            for (row, ok) in valid.iter().enumerate() {
                assert_eq!(floats.get(row), ok.then_some(row as f64));
            }
            let (_, bits, counted) = floats.into_parts();
            assert_eq!(counted, nulls);
            assert_eq!(bits.len(), len.div_ceil(8));
            let packed = arrow::buffer::BooleanBuffer::new(bits.clone().into(), 0, len);
            assert_eq!(packed.iter().collect::<Vec<_>>(), valid, "{len} rows");
            let mut into = vec![0xAAu8; len.div_ceil(8)];
            assert_eq!(pack_bits_into(&valid, &mut into), len - nulls);
            assert_eq!(into, bits, "{len} rows");
        }
    }

    /// One row the plain way, value by value with `Option`s: the arithmetic as it was written before the
    /// vectorized loop, kept as its reference. Gives the five outputs and the five counts' increments.
    fn reference_row(
        [s, b, t, d, f]: [Option<f64>; 5],
        peak: Option<f64>,
    ) -> ([Option<f64>; 5], [usize; 5]) {
        let time = |x: Option<f64>| x.filter(|x| x.is_finite() && *x > 0.0);
        let count = |x: Option<f64>| x.filter(|x| x.is_finite() && *x >= 0.0);
        let step = time(s);
        let (tokens, fpt) = (count(t), count(f));
        let devices = count(d).filter(|d| *d > 0.0);
        let bad = |raw: Option<f64>, ok: Option<f64>| raw.is_some() && ok.is_none();
        let bad_count = bad(t, tokens) || bad(d, devices) || bad(f, fpt);
        let work = match (tokens, fpt, devices) {
            (Some(t), Some(f), Some(d)) => Some(t * f / d),
            _ => None,
        };
        let tps = tokens.zip(step).map(|(t, s)| t / s);
        let achieved = work.zip(step).map(|(w, s)| w / s);
        let mfu = achieved.zip(peak).map(|(a, p)| a / p);
        let mfu_fb = match (work, time(b), peak) {
            (Some(w), Some(t), Some(p)) => Some(w / t / p),
            _ => None,
        };
        let overflowed = [work, tps, achieved, mfu, mfu_fb]
            .iter()
            .any(|v| v.is_some_and(|v| !v.is_finite()));
        let (tps, achieved, mfu, mfu_fb) =
            (finite(tps), finite(achieved), finite(mfu), finite(mfu_fb));
        let counts = [
            usize::from(step.is_none()),
            usize::from(bad_count),
            usize::from(overflowed),
            usize::from(mfu.is_none()),
            usize::from(mfu.is_some_and(|m| m > 1.0)),
        ];
        ([peak, tps, achieved, mfu, mfu_fb], counts)
    }

    /// A table past two pieces of work (so cut in pieces for the thread pool, each cut on a multiple of 8
    /// rows) with nulls and bad values throughout: every output equals the reference row by row, each
    /// column's bitmap and null count agree, and one thread gives the same bits as many.
    #[test]
    fn pieces_and_bitmaps_hold_over_a_large_table() {
        let n = 2 * PIECE_ROWS + 1237;
        let cell = |k: usize, row: usize| -> Option<f64> {
            match (row * (k + 3) + row / 7) % 97 {
                0 => None,
                1 => Some(f64::NAN),
                2 => Some(-1.0),
                3 => Some(0.0),
                r => Some(r as f64 * 0.37 + k as f64),
            }
        };
        let column = |k: usize| Numbers::Column((0..n).map(|row| cell(k, row)).collect());
        let device = Texts::Coded {
            codes: (0..n).map(|row| u32::from(row % 1000 >= 700)).collect(),
            values: vec![Some("NVIDIA H100 80GB HBM3".into()), Some("Acme X".into())],
        };
        let values = FieldValues {
            height: n,
            step_time_s: column(0),
            fwd_bwd_time_s: column(1),
            tokens: column(2),
            num_devices: column(3),
            flops_per_token: column(4),
            device,
            ..bf16_tokens(n)
        };
        let resolver = Resolver::builtin();
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| compute_values(&values, &resolver, Extras::default()))
        };
        let many = run(4);
        let one = run(1);
        for ((name, a), (_, b)) in many.numbers.iter().zip(&one.numbers) {
            assert_eq!(a, b, "{name}: one thread and four differ");
        }
        let peak = |row: usize| (row % 1000 < 700).then_some(989.4e12);
        for row in 0..n {
            let fields = std::array::from_fn(|k| cell(k, row));
            let (want, _) = reference_row(fields, peak(row));
            for (k, (name, floats)) in many.numbers.iter().enumerate() {
                assert_eq!(
                    floats.get(row).map(f64::to_bits),
                    want[k].map(f64::to_bits),
                    "{name} row {row}"
                );
            }
        }
        // Each row's pair, and the rows of the unknown device counted once each.
        let acme_rows = (0..n).filter(|row| row % 1000 >= 700).count();
        assert_eq!(many.runs.rows(), n);
        let mut next = 0;
        for (rows, pair) in many.runs.iter() {
            assert_eq!(rows.start, next);
            next = rows.end;
            for row in rows {
                assert_eq!(many.pairs[pair as usize].peak, peak(row), "row {row}");
            }
        }
        assert_eq!(next, n);
        assert_eq!(many.runs.iter().count(), n.div_ceil(1000) * 2 - 1);
        let unresolved: usize = many.stats.unresolved.iter().map(|(_, rows)| rows).sum();
        assert_eq!(unresolved, acme_rows);
        for (name, floats) in &many.numbers {
            let nulls = (0..n).filter(|row| floats.get(*row).is_none()).count();
            assert_eq!(floats.nulls, nulls, "{name}");
            assert!(nulls > 0 && nulls < n, "{name}: {nulls} nulls");
        }
    }

    /// Rows whose device alternates row by row among three (the walk's memory of the pair before the
    /// last one, and its map) each get their own device's peak, and the rows per pair add up.
    #[test]
    fn pairs_that_alternate_row_by_row_resolve_each_row() {
        let codes: Vec<u32> = (0..5000u32)
            .map(|row| [0, 1, 0, 1, 2, 1][row as usize % 6])
            .collect();
        let names = ["NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "Acme X"];
        let n = codes.len();
        let values = FieldValues {
            height: n,
            step_time_s: Numbers::Constant(1.0),
            fwd_bwd_time_s: Numbers::Missing,
            tokens: Numbers::Constant(1000.0),
            num_devices: Numbers::Constant(1.0),
            flops_per_token: Numbers::Constant(1e9),
            device: Texts::Coded {
                codes: codes.clone(),
                values: names.iter().map(|s| Some(s.to_string())).collect(),
            },
            ..bf16_tokens(n)
        };
        let computed = compute_values(&values, &Resolver::builtin(), Extras::default());
        let want = [Some(989.4e12), Some(312e12), None];
        let peak = &computed.numbers[0].1;
        for (row, code) in codes.iter().enumerate() {
            assert_eq!(peak.get(row), want[*code as usize], "row {row}");
        }
        assert_eq!(computed.runs.iter().count(), n);
        let unresolved: usize = computed.stats.unresolved.iter().map(|(_, r)| r).sum();
        assert_eq!(unresolved, codes.iter().filter(|c| **c == 2).count());
    }

    /// `height` rows of a bf16 run counted in tokens, every other field missing or empty: the base the
    /// tests fill in.
    fn bf16_tokens(height: usize) -> FieldValues {
        FieldValues {
            height,
            step_time_s: Numbers::Missing,
            fwd_bwd_time_s: Numbers::Missing,
            tokens: Numbers::Missing,
            num_devices: Numbers::Missing,
            flops_per_token: Numbers::Missing,
            unit: WorkUnit::Tokens,
            samples: Numbers::Missing,
            device: Texts::Missing,
            dtype: Texts::Constant("bf16".into()),
            logged_mfu: Numbers::Missing,
            rate: Numbers::Missing,
            sample_rate: Numbers::Missing,
            steps: Vec::new(),
            runs: Vec::new(),
            spans: None,
            non_numeric: Vec::new(),
            column_warnings: Vec::new(),
        }
    }

    #[test]
    fn a_logged_rate_gives_throughput_and_mfu_only_where_the_division_gives_none() {
        // Rows 0-1: a step time and tokens (the division's figure kept, the rate ignored); row 2: no step
        // time, the rate taken; row 3: no tokens, the rate taken; row 4: neither a division nor a rate.
        let values = FieldValues {
            height: 5,
            step_time_s: Numbers::Column(vec![Some(2.0), Some(2.0), None, Some(2.0), None]),
            fwd_bwd_time_s: Numbers::Missing,
            tokens: Numbers::Column(vec![Some(8e5), Some(8e5), Some(8e5), None, None]),
            num_devices: Numbers::Constant(8.0),
            flops_per_token: Numbers::Constant(1e9),
            device: Texts::Constant("NVIDIA H100 80GB HBM3".into()),
            rate: Numbers::Column(vec![Some(1e6), None, Some(3e6), Some(4e6), None]),
            ..bf16_tokens(5)
        };
        let computed = compute_values(&values, &Resolver::builtin(), Extras::default());
        let column = |name: &str| {
            let (_, floats) = computed
                .numbers
                .iter()
                .find(|(n, _)| *n == name)
                .expect("an output column");
            floats.to_options()
        };
        let tps = column(TOKENS_PER_SECOND);
        assert_eq!(tps, [Some(4e5), Some(4e5), Some(3e6), Some(4e6), None]);
        let achieved = column(ACHIEVED_FLOPS_PER_DEVICE);
        assert_eq!(achieved[2], Some(3e6 * 1e9 / 8.0));
        assert_eq!(achieved[3], Some(4e6 * 1e9 / 8.0));
        let mfu = column(MFU_WALL_CLOCK);
        assert_eq!(mfu[2], Some(3e6 * 1e9 / 8.0 / 989.4e12));
        assert_eq!(mfu[4], None);
        // The filled rows are neither bad-step-time rows nor null-MFU rows any more.
        assert_eq!(computed.stats.logged_rate_rows, 2);
        assert_eq!(computed.stats.bad_step_time_rows, 1);
        assert_eq!(computed.stats.null_mfu_rows, 1);
        // No fwd+bwd figure comes from a rate.
        assert_eq!(column(MFU_FWD_BWD)[2], None);
    }

    fn corner() -> impl proptest::strategy::Strategy<Value = Option<f64>> {
        use proptest::prelude::*;
        prop_oneof![
            Just(None),
            Just(Some(f64::NAN)),
            Just(Some(f64::INFINITY)),
            Just(Some(f64::NEG_INFINITY)),
            Just(Some(0.0)),
            Just(Some(-0.0)),
            Just(Some(-1.5)),
            Just(Some(5e-324)),
            Just(Some(f64::MAX)),
            Just(Some(1e-300)),
            (1e-3f64..1e13).prop_map(Some),
            (1u32..4096).prop_map(|n| Some(f64::from(n))),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 32, ..Default::default() })]
        /// Every path of the row loop (plain, and AVX2 and AVX-512 where this processor has them) gives the
        /// reference's values bit for bit and its counts, over inputs full of corners.
        #[test]
        fn the_row_loop_matches_the_reference_on_every_path(
            rows in proptest::collection::vec(
                (
                    proptest::array::uniform5(corner()),
                    proptest::option::of(1e9f64..1e16),
                ),
                1..CHUNK_ROWS,
            )
        ) {
            let len = rows.len();
            let mut lanes: [Box<Lane>; 5] = std::array::from_fn(|_| Lane::new());
            let columns: Vec<Numbers> = (0..5)
                .map(|k| Numbers::Column(rows.iter().map(|(fields, _)| fields[k]).collect()))
                .collect();
            let peaks: Vec<f64> = rows.iter().map(|(_, p)| p.unwrap_or(f64::NAN)).collect();
            let mut want_counts = [0usize; 5];
            let mut want: Vec<[Option<f64>; 5]> = Vec::new();
            for (fields, peak) in &rows {
                let (values, counts) = reference_row(*fields, *peak);
                want.push(values);
                want_counts.iter_mut().zip(counts).for_each(|(w, c)| *w += c);
            }
            type Path = fn([Field<'_>; 6], usize, [Slots<'_>; 5]) -> [usize; 5];
            let mut paths: Vec<(&str, Path)> = vec![("plain", chunk_arithmetic_plain)];
            #[cfg(target_arch = "x86_64")]
            {
                if std::arch::is_x86_feature_detected!("avx2") {
                    paths.push(("avx2", |l, n, o| unsafe { chunk_arithmetic_avx2(l, n, o) }));
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    paths.push(("avx512", |l, n, o| unsafe { chunk_arithmetic_avx512(l, n, o) }));
                }
            }
            for (name, path) in paths {
                let mut out: Vec<(Vec<MaybeUninit<f64>>, Vec<bool>)> = (0..5)
                    .map(|_| (vec![MaybeUninit::new(7.0); len], vec![true; len]))
                    .collect();
                let [a, b, c, d, e] = &mut out[..] else { unreachable!() };
                let slots = [
                    (&mut a.0[..], &mut a.1[..]),
                    (&mut b.0[..], &mut b.1[..]),
                    (&mut c.0[..], &mut c.1[..]),
                    (&mut d.0[..], &mut d.1[..]),
                    (&mut e.0[..], &mut e.1[..]),
                ];
                let [l0, l1, l2, l3, l4] = &mut lanes;
                let fields = [
                    l0.field(&columns[0], 0, len),
                    l1.field(&columns[1], 0, len),
                    l2.field(&columns[2], 0, len),
                    l3.field(&columns[3], 0, len),
                    l4.field(&columns[4], 0, len),
                    (&peaks[..], &ALL_VALID[..len]),
                ];
                let counts = path(fields, len, slots);
                proptest::prop_assert_eq!(counts, want_counts, "{} counts", name);
                for (row, wanted) in want.iter().enumerate() {
                    for (column, w) in wanted.iter().enumerate() {
                        let (values, valid) = &out[column];
                        // SAFETY: every slot was initialised (to 7.0) before the loop wrote it.
                        let value = unsafe { values[row].assume_init() };
                        let got = valid[row].then_some(value);
                        proptest::prop_assert_eq!(
                            got.map(f64::to_bits),
                            w.map(f64::to_bits),
                            "{} row {} column {}: {:?}",
                            name,
                            row,
                            column,
                            rows[row]
                        );
                        if !valid[row] {
                            proptest::prop_assert_eq!(value.to_bits(), 0.0f64.to_bits());
                        }
                    }
                }
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]
        /// The per-step entry point gives the column path's values for one row, bit for bit, over the same
        /// corners: the figure a meter logs is the figure `mfu enrich` computes from it.
        #[test]
        fn step_metrics_match_the_row_loop(
            fields in proptest::array::uniform5(corner()),
            peak in proptest::option::of(1e9f64..1e16),
        ) {
            let ([want_peak, tps, achieved, mfu, mfu_fb], _) = reference_row(fields, peak);
            let [s, b, t, d, f] = fields;
            let got = step_metrics(&StepInputs {
                step_time: s,
                fwd_bwd_time: b,
                tokens: t,
                num_devices: d,
                flops_per_token: f,
                peak,
            });
            let bits = |v: Option<f64>| v.map(f64::to_bits);
            proptest::prop_assert_eq!(bits(got.peak_flops_per_device), bits(want_peak));
            proptest::prop_assert_eq!(bits(got.tokens_per_second), bits(tps));
            proptest::prop_assert_eq!(bits(got.achieved_flops_per_device), bits(achieved));
            proptest::prop_assert_eq!(bits(got.mfu_wall_clock), bits(mfu));
            proptest::prop_assert_eq!(bits(got.mfu_fwd_bwd), bits(mfu_fb));
        }
    }

    #[test]
    fn step_metrics_of_a_known_step() {
        // 8 H100s, 1M tokens in 2 s at 4.2e10 FLOPs per token: 2.625e15 FLOP/s per device.
        let got = step_metrics(&StepInputs {
            step_time: Some(2.0),
            fwd_bwd_time: Some(1.5),
            tokens: Some(1e6),
            num_devices: Some(8.0),
            flops_per_token: Some(4.2e10),
            peak: Some(989.4e12),
        });
        assert_eq!(got.tokens_per_second, Some(5e5));
        assert_eq!(
            got.achieved_flops_per_device,
            Some(1e6 * 4.2e10 / 8.0 / 2.0)
        );
        assert_eq!(
            got.mfu_wall_clock,
            Some(1e6 * 4.2e10 / 8.0 / 2.0 / 989.4e12)
        );
        assert_eq!(got.mfu_fwd_bwd, Some(1e6 * 4.2e10 / 8.0 / 1.5 / 989.4e12));
        let unknown = step_metrics(&StepInputs {
            peak: None,
            ..StepInputs {
                step_time: Some(2.0),
                tokens: Some(1e6),
                num_devices: Some(8.0),
                flops_per_token: Some(4.2e10),
                ..Default::default()
            }
        });
        assert_eq!(unknown.mfu_wall_clock, None);
        assert_eq!(unknown.mfu_fwd_bwd, None);
        assert_eq!(unknown.tokens_per_second, Some(5e5));
    }
}
