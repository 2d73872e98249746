//! Order statistics of `f64`s in linear time (`select_nth_unstable`): the medians that goodput, the
//! audit, the compute stage and the console reader's evidence take, over as many values as a log has
//! rows. NaN sorts after every number (`total_cmp`).
//!
//! [`Counted`] holds the same values by distinct value, for the commands that fold a large console log
//! window by window: a log prints its figures with a few digits, so the millions of rows of a 4 GiB log
//! hold a few thousand distinct values of each (docs/memory.md). Its medians are the very values
//! [`median`] gives. [`ExactSum`] sums without rounding until the end, so a mean over values folded in
//! any order is the same to the last bit.

use polars::prelude::PlHashMap;

/// The median of `values` (reordered in place): the mean of the middle two of an even count; `None`
/// when empty.
pub fn median(values: &mut [f64]) -> Option<f64> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let (below, middle, _) = values.select_nth_unstable_by(n / 2, f64::total_cmp);
    let middle = *middle;
    Some(if n % 2 == 1 {
        middle
    } else {
        // The largest of the lower half is the other middle value.
        let lower = below.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lower + middle) / 2.0
    })
}

/// The value at the middle of `values` once sorted (the upper of the two middles of an even count),
/// reordered in place; `None` when empty.
pub fn upper_middle(values: &mut [f64]) -> Option<f64> {
    let n = values.len();
    (n > 0).then(|| *values.select_nth_unstable_by(n / 2, f64::total_cmp).1)
}

/// Keys as they were seen: one by one (8 to 24 bytes each) until [`ASK_AFTER`] of them, then by how
/// often each was seen where they repeat (a quarter or fewer of the latest [`ASK_AFTER`] distinct),
/// back to one by one where a map's distinct keys outgrow [`RAW_AFTER`] and a quarter of all. A key
/// takes 20 to 48 bytes in a map (its count, the table's control byte and slack): a run of a few
/// thousand rows, or a log whose every row's figure differs (`benches/console_log.py gen-distinct`),
/// holds less one by one; a console log's millions of rows of a few thousand values, far less by
/// value.
#[derive(Debug, Clone)]
pub struct Tally<K> {
    store: Store<K>,
    len: u64,
    /// The count of keys kept one by one at which to ask again whether they repeat.
    next_check: usize,
}

#[derive(Debug, Clone)]
enum Store<K> {
    OneByOne(Vec<K>),
    ByValue(PlHashMap<K, u64>),
}

/// Keys a [`Tally`] keeps one by one before it asks whether the latest of them repeat (64 Ki keys,
/// 512 KiB of `f64`s: a run of a few thousand rows never asks).
pub const ASK_AFTER: usize = 1 << 16;

/// Distinct keys a [`Tally`]'s map holds before it may keep them one by one again.
pub const RAW_AFTER: usize = 1 << 18;

impl<K> Default for Tally<K> {
    fn default() -> Tally<K> {
        Tally {
            store: Store::OneByOne(Vec::new()),
            len: 0,
            next_check: ASK_AFTER,
        }
    }
}

impl<K: Copy + Eq + std::hash::Hash> Tally<K> {
    /// Counts `key` `times` times.
    pub fn push_times(&mut self, key: K, times: u64) {
        if times == 0 {
            return;
        }
        self.len += times;
        let raw = match &mut self.store {
            // A key seen this often repeats: counted, not written out.
            Store::OneByOne(raw) if times as usize >= ASK_AFTER => {
                let mut counts = by_value(raw);
                *counts.entry(key).or_insert(0) += times;
                self.store = Store::ByValue(counts);
                return;
            }
            Store::OneByOne(raw) => raw,
            Store::ByValue(counts) => {
                *counts.entry(key).or_insert(0) += times;
                let distinct = counts.len();
                if distinct > RAW_AFTER && (distinct as u64).saturating_mul(4) > self.len {
                    let mut raw = Vec::with_capacity(self.len as usize);
                    for (key, n) in counts.drain() {
                        raw.extend(std::iter::repeat_n(key, n as usize));
                    }
                    self.next_check = raw.len().saturating_mul(2);
                    self.store = Store::OneByOne(raw);
                }
                return;
            }
        };
        raw.extend(std::iter::repeat_n(key, times as usize));
        if raw.len() < self.next_check {
            return;
        }
        self.next_check = raw.len().saturating_mul(2);
        let recent = &raw[raw.len() - ASK_AFTER..];
        let distinct = recent
            .iter()
            .collect::<polars::prelude::PlHashSet<&K>>()
            .len();
        if distinct * 4 <= ASK_AFTER {
            let counts = by_value(raw);
            self.store = Store::ByValue(counts);
        }
    }

    /// Keys counted, each as often as it was seen.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Each key with how often it was seen, in no order; a key kept one by one comes once each time.
    pub fn entries(&self) -> Box<dyn Iterator<Item = (K, u64)> + '_> {
        match &self.store {
            Store::OneByOne(raw) => Box::new(raw.iter().map(|k| (*k, 1))),
            Store::ByValue(counts) => Box::new(counts.iter().map(|(k, n)| (*k, *n))),
        }
    }

    /// Whether the keys are kept one by one.
    pub fn one_by_one(&self) -> bool {
        matches!(self.store, Store::OneByOne(_))
    }
}

/// Keys kept one by one, counted by value.
fn by_value<K: Copy + Eq + std::hash::Hash>(raw: &[K]) -> PlHashMap<K, u64> {
    let mut counts = PlHashMap::default();
    for key in raw {
        *counts.entry(*key).or_insert(0) += 1;
    }
    counts
}

/// Values by how often each was seen (keyed by their bits: `-0.0` and `0.0` apart, as `total_cmp` has
/// them): the order statistics of as many values as a log has rows, in memory of its distinct values
/// where they repeat ([`Tally`]).
#[derive(Debug, Clone, Default)]
pub struct Counted {
    tally: Tally<u64>,
}

impl Counted {
    pub fn push(&mut self, value: f64) {
        self.push_times(value, 1);
    }

    /// Counts `value` `times` times.
    pub fn push_times(&mut self, value: f64, times: u64) {
        self.tally.push_times(value.to_bits(), times);
    }

    /// Values counted, each as often as it was seen.
    pub fn len(&self) -> u64 {
        self.tally.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tally.is_empty()
    }

    /// Distinct values.
    pub fn distinct(&self) -> usize {
        self.sorted().len()
    }

    /// The distinct values in `total_cmp` order, each with its count.
    pub fn sorted(&self) -> Vec<(f64, u64)> {
        let mut out: Vec<(f64, u64)> = self
            .tally
            .entries()
            .map(|(bits, n)| (f64::from_bits(bits), n))
            .collect();
        out.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        // Values kept one by one come once each: their counts put together.
        out.dedup_by(|later, kept| {
            let same = later.0.to_bits() == kept.0.to_bits();
            if same {
                kept.1 += later.1;
            }
            same
        });
        out
    }

    /// The median, as [`median`] gives it over the values one by one.
    pub fn median(&self) -> Option<f64> {
        median_of_sorted(&self.sorted(), self.len())
    }

    /// Whether every value equals every other (true when empty), as comparing each with the first says.
    pub fn all_equal(&self) -> bool {
        let mut values = self.tally.entries().map(|(b, _)| f64::from_bits(b));
        let Some(first) = values.next() else {
            return true;
        };
        // NaN equals nothing, itself included; 0.0 and -0.0 are equal though their bits differ.
        (!first.is_nan() || self.len() == 1) && values.all(|v| v == first)
    }
}

/// The median of sorted distinct values with their counts (`len` in all): the middle value, or the
/// mean of the middle two of an even count.
pub fn median_of_sorted(sorted: &[(f64, u64)], len: u64) -> Option<f64> {
    if len == 0 {
        return None;
    }
    let middle = value_at(sorted, len / 2);
    Some(if len % 2 == 1 {
        middle
    } else {
        (value_at(sorted, len / 2 - 1) + middle) / 2.0
    })
}

/// The value at `position` (from 0) of sorted distinct values with their counts, as it would be in
/// the values sorted one by one; NaN past the end.
pub fn value_at(sorted: &[(f64, u64)], position: u64) -> f64 {
    let mut seen = 0;
    for (value, n) in sorted {
        seen += n;
        if position < seen {
            return *value;
        }
    }
    f64::NAN
}

/// A sum of `f64`s kept exactly (Shewchuk's non-overlapping partials, as Python's `math.fsum`) and
/// rounded once, correctly, at the end: the same bits whatever order the values come in.
#[derive(Debug, Clone, Default)]
pub struct ExactSum {
    partials: Vec<f64>,
}

impl ExactSum {
    pub fn add(&mut self, value: f64) {
        let mut x = value;
        let mut kept = 0;
        for j in 0..self.partials.len() {
            let mut y = self.partials[j];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let high = x + y;
            let low = y - (high - x);
            if low != 0.0 {
                self.partials[kept] = low;
                kept += 1;
            }
            x = high;
        }
        self.partials.truncate(kept);
        self.partials.push(x);
    }

    /// Adds `value` `times` times, exactly: the product and its rounding error (a fused multiply-add).
    pub fn add_times(&mut self, value: f64, times: u64) {
        let times = times as f64;
        let product = value * times;
        self.add(product);
        if product.is_finite() {
            self.add(value.mul_add(times, -product));
        }
    }

    /// The sum, correctly rounded.
    pub fn value(&self) -> f64 {
        let p = &self.partials;
        let Some(mut i) = p.len().checked_sub(1) else {
            return 0.0;
        };
        let mut high = p[i];
        let mut low = 0.0;
        while i > 0 {
            i -= 1;
            let x = high;
            let y = p[i];
            high = x + y;
            low = y - (high - x);
            if low != 0.0 {
                break;
            }
        }
        // A half-way case: the partials below decide which way it rounds.
        if i > 0 && ((low < 0.0 && p[i - 1] < 0.0) || (low > 0.0 && p[i - 1] > 0.0)) {
            let y = low * 2.0;
            let x = high + y;
            if y == x - high {
                high = x;
            }
        }
        high
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_medians_are_the_medians_of_the_values_one_by_one() {
        let values = [3.0, 1.0, 2.0, 2.0, 9.0, 1.0, 2.5, -0.0, 0.0, 7.25];
        for n in 0..=values.len() {
            let mut one_by_one = values[..n].to_vec();
            let mut counted = Counted::default();
            values[..n].iter().for_each(|v| counted.push(*v));
            assert_eq!(counted.len(), n as u64);
            assert_eq!(
                counted.median().map(f64::to_bits),
                median(&mut one_by_one).map(f64::to_bits),
                "{n} values"
            );
        }
        let mut counted = Counted::default();
        counted.push_times(4.0, 3);
        counted.push(1.0);
        assert_eq!((counted.median(), counted.distinct()), (Some(4.0), 2));
        assert!(!counted.all_equal());
        let mut zeros = Counted::default();
        zeros.push(0.0);
        zeros.push(-0.0);
        assert!(zeros.all_equal());
        let mut nans = Counted::default();
        nans.push_times(f64::NAN, 2);
        assert!(!nans.all_equal());
    }

    #[test]
    fn values_that_hardly_repeat_are_kept_one_by_one_with_the_same_statistics() {
        // Values that hardly repeat stay one by one past every question whether they repeat: the same
        // median, sorted counts and equality as counted by value.
        let n = RAW_AFTER as u64 + 1000;
        let values: Vec<f64> = (0..n).map(|i| (i % (n - 7)) as f64 * 0.5 - 3.0).collect();
        let mut counted = Counted::default();
        values.iter().for_each(|v| counted.push(*v));
        assert!(counted.tally.one_by_one());
        let mut one_by_one = values.clone();
        assert_eq!(counted.median(), median(&mut one_by_one));
        let sorted = counted.sorted();
        assert_eq!(sorted.len() as u64, n - 7);
        assert_eq!(sorted.iter().map(|(_, c)| c).sum::<u64>(), n);
        assert_eq!(sorted[0], (-3.0, 2));
        assert!(!counted.all_equal());
        // A few values repeated many times are counted by value once there are enough of them, with
        // the same statistics; fewer are kept one by one, as a run of a few thousand rows.
        let mut few = Counted::default();
        (0..n).for_each(|i| few.push((i % 100) as f64));
        assert!(!few.tally.one_by_one());
        assert_eq!(few.distinct(), 100);
        let mut again: Vec<f64> = (0..n).map(|i| (i % 100) as f64).collect();
        assert_eq!(few.median(), median(&mut again));
        let mut small = Counted::default();
        (0..5000).for_each(|i| small.push((i % 100) as f64));
        assert!(small.tally.one_by_one());
        assert_eq!(small.sorted()[3], (3.0, 50));
        // A value pushed many times at once is counted, not written out.
        let mut many = Counted::default();
        many.push(1.0);
        many.push_times(2.0, 1 << 20);
        assert!(!many.tally.one_by_one());
        assert_eq!((many.len(), many.median()), ((1 << 20) + 1, Some(2.0)));
    }

    #[test]
    fn an_exact_sum_is_the_same_in_any_order_and_correctly_rounded() {
        let mut sum = ExactSum::default();
        for v in [1e100, 1.0, -1e100, 1e-20] {
            sum.add(v);
        }
        assert_eq!(sum.value(), 1.0 + 1e-20);
        // 0.1 ten times: 0.9999999999999999 summed one by one, 1 rounded once.
        let mut tenths = ExactSum::default();
        (0..10).for_each(|_| tenths.add(0.1));
        assert_eq!(tenths.value(), 1.0);
        let mut times = ExactSum::default();
        times.add_times(0.1, 10);
        assert_eq!(times.value(), tenths.value());
        let values: Vec<f64> = (1..2000)
            .map(|i| 1.0 / i as f64 + (i % 7) as f64 * 1e-3)
            .collect();
        let (mut forward, mut backward) = (ExactSum::default(), ExactSum::default());
        values.iter().for_each(|v| forward.add(*v));
        values.iter().rev().for_each(|v| backward.add(*v));
        assert_eq!(forward.value().to_bits(), backward.value().to_bits());
        assert!((forward.value() - values.iter().sum::<f64>()).abs() < 1e-12);
        assert_eq!(ExactSum::default().value(), 0.0);
    }

    #[test]
    fn medians_of_odd_and_even_counts_are_the_sorted_ones() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&mut [5.0]), Some(5.0));
        assert_eq!(median(&mut []), None);
        assert_eq!(upper_middle(&mut [4.0, 1.0, 3.0, 2.0]), Some(3.0));
        assert_eq!(upper_middle(&mut [2.0, 2.0, 1.0, 9.0, 9.0, 0.5]), Some(2.0));
        assert_eq!(upper_middle(&mut []), None);
    }
}
