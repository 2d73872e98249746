//! Validity built lazily, for the fast readers' columns.

use polars_arrow::bitmap::{Bitmap, MutableBitmap};

/// Which of a column's values are set: no bitmap until the first null, since most columns of a log have
/// none and pushing a bit per value costs about as much as the value.
#[derive(Default)]
pub(crate) struct Validity(Option<MutableBitmap>);

impl Validity {
    #[inline]
    pub(crate) fn push_valid(&mut self) {
        if let Some(bits) = &mut self.0 {
            bits.push(true);
        }
    }

    /// A null after `len` values.
    #[inline]
    pub(crate) fn push_null(&mut self, len: usize) {
        self.extend_nulls(len, 1);
    }

    /// `n` nulls after `len` values.
    pub(crate) fn extend_nulls(&mut self, len: usize, n: usize) {
        if n == 0 {
            return;
        }
        self.0
            .get_or_insert_with(|| {
                let mut bits = MutableBitmap::with_capacity(len + n + 1024);
                bits.extend_constant(len, true);
                bits
            })
            .extend_constant(n, false);
    }

    /// The bitmap, or `None` when no value was null.
    pub(crate) fn finish(self) -> Option<Bitmap> {
        self.0.map(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_bitmap_until_a_null_then_every_bit() {
        let mut valid = Validity::default();
        valid.push_valid();
        valid.push_valid();
        assert!(Validity::default().finish().is_none());
        valid.push_null(2);
        valid.push_valid();
        valid.extend_nulls(4, 2);
        let bits: Vec<bool> = valid.finish().unwrap().iter().collect();
        assert_eq!(bits, vec![true, true, false, true, false, false]);
    }
}
