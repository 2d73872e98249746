//! The digest of a training line's pairs, to tell a line repeated verbatim (several ranks writing one
//! line with no tag) from the next step's.
//!
//! A digest is of what a line says (each key, the unit and value of each number, each word), not of its
//! text, so every way a line is read gives it the same digest: the general path from its pairs, a
//! template from the values it read ([`fold`] over the template's [`key`] digests), whatever the line's
//! timestamp, tags or colour codes. Digests are only compared within one read.

use std::hash::{BuildHasher, Hash, Hasher};

use super::pairs::{Pair, Value};

/// One hasher state for the process: a digest is only ever compared within a read.
fn state() -> &'static polars::prelude::PlRandomState {
    static STATE: std::sync::OnceLock<polars::prelude::PlRandomState> = std::sync::OnceLock::new();
    STATE.get_or_init(Default::default)
}

/// splitmix64's finaliser: every bit of the input moves every bit of the output.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What a pair's key, and the unit or kind of its value, add to a digest.
pub fn key(pair: &Pair<'_>) -> u64 {
    let mut h = state().build_hasher();
    pair.key.hash(&mut h);
    match &pair.value {
        Value::Number { unit, .. } => (0u8, unit.as_ref()).hash(&mut h),
        Value::Text(_) => 1u8.hash(&mut h),
    }
    h.finish()
}

/// What a number (and the total of an `N/M` counter) adds to a digest.
pub fn number(value: f64, total: Option<f64>) -> u64 {
    value.to_bits() ^ mix(total.map_or(0x9e37_79b9_7f4a_7c15, f64::to_bits))
}

/// What a pair's value adds to a digest.
pub fn value(value: &Value<'_>) -> u64 {
    match value {
        Value::Number { value, total, .. } => number(*value, *total),
        Value::Text(text) => state().hash_one(text),
    }
}

/// The digest of the pairs before, followed by a pair of digests `key` and `value`.
pub fn fold(previous: u64, key: u64, value: u64) -> u64 {
    mix(mix(previous ^ key).wrapping_add(value))
}

/// The digest of the pairs before, followed by `pair`.
pub fn pair(previous: u64, pair: &Pair<'_>) -> u64 {
    fold(previous, key(pair), value(&pair.value))
}

/// The digest of a line's pairs.
pub fn pairs(pairs: &[Pair<'_>]) -> u64 {
    pairs.iter().fold(0, |h, p| pair(h, p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::console::pairs::pairs as read;

    #[test]
    fn a_line_and_its_repeat_share_a_digest_and_the_next_step_does_not() {
        let line = read("step: 10  loss: 2.5  tps: 6,912");
        assert_eq!(
            pairs(&line),
            pairs(&read("step: 10  loss: 2.5  tps: 6,912"))
        );
        // The same pairs, spaced otherwise: the same step.
        assert_eq!(pairs(&line), pairs(&read("step: 10 loss: 2.5 tps: 6,912")));
        for other in [
            "step: 11  loss: 2.5  tps: 6,912",
            "step: 10  loss: 2.5  tps: 6,913",
            "step: 10  loss: 2.5s  tps: 6,912",
            "step: 10  tps: 6,912  loss: 2.5",
            "step: 10  loss: nan  tps: 6,912",
            "step: 10/20  loss: 2.5  tps: 6,912",
            "step: 10  loss: 2.5  tps: 6,912  note: x",
        ] {
            assert_ne!(pairs(&line), pairs(&read(other)), "{other}");
        }
    }
}
