//! Order statistics of `f64`s in linear time (`select_nth_unstable`): the medians that goodput, the
//! audit, the compute stage and the console reader's evidence take, over as many values as a log has
//! rows. NaN sorts after every number (`total_cmp`).

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

#[cfg(test)]
mod tests {
    use super::*;

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
