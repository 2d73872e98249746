//! A text column built straight into polars' string views, for the fast readers.
//!
//! Text in logs is a handful of values repeated row after row (run names, device names, precisions). A
//! string of up to 12 bytes lives inside its 16-byte view; a longer one is copied into a buffer once and a
//! row that repeats the row before it (within the same column) gets the same view, so a device name
//! written a million times is stored once. Building the views directly, rather than through polars'
//! general-purpose builder, also skips its per-value bookkeeping.

use polars_arrow::array::{Utf8ViewArray, View};
use polars_arrow::datatypes::ArrowDataType;
use polars_buffer::Buffer;

use super::validity::Validity;

/// Bytes a buffer may hold: views address them with 32-bit offsets.
const BUFFER_LIMIT: usize = u32::MAX as usize;

/// A string column being built, value by value.
#[derive(Default)]
pub(crate) struct TextColumn {
    views: Vec<View>,
    /// Filled buffers, then the one being filled.
    done: Vec<Buffer<u8>>,
    buffer: Vec<u8>,
    validity: Validity,
    /// The view of the last value too long to inline: the next long value equal to it shares it.
    last_long: Option<View>,
    total_bytes: usize,
}

impl TextColumn {
    pub(crate) fn with_capacity(rows: usize) -> Self {
        TextColumn {
            views: Vec::with_capacity(rows),
            ..Default::default()
        }
    }

    #[inline]
    pub(crate) fn push_value(&mut self, value: &str) {
        let bytes = value.as_bytes();
        self.total_bytes += bytes.len();
        if bytes.len() <= View::MAX_INLINE_SIZE as usize {
            self.views.push(View::new_inline(bytes));
        } else {
            let view = match self.last_long {
                Some(last) if self.long_bytes(last) == bytes => last,
                _ => self.push_long(bytes),
            };
            self.last_long = Some(view);
            self.views.push(view);
        }
        self.validity.push_valid();
    }

    #[inline]
    pub(crate) fn push_null(&mut self) {
        self.validity.push_null(self.views.len());
        self.views.push(View::default());
    }

    /// The bytes a long value's view points at (in a finished buffer or the one being filled).
    fn long_bytes(&self, view: View) -> &[u8] {
        let buffer = match self.done.get(view.buffer_idx as usize) {
            Some(done) => done.as_slice(),
            None => &self.buffer,
        };
        let start = view.offset as usize;
        &buffer[start..start + view.length as usize]
    }

    fn push_long(&mut self, bytes: &[u8]) -> View {
        if self.buffer.len() + bytes.len() > BUFFER_LIMIT {
            let full = std::mem::take(&mut self.buffer);
            self.done.push(Buffer::from(full));
        }
        let offset = self.buffer.len() as u32;
        self.buffer.extend_from_slice(bytes);
        View::new_from_bytes(bytes, self.done.len() as u32, offset)
    }

    pub(crate) fn finish(mut self) -> Utf8ViewArray {
        let mut buffers = std::mem::take(&mut self.done);
        if !self.buffer.is_empty() {
            buffers.push(Buffer::from(std::mem::take(&mut self.buffer)));
        }
        let buffer_bytes = buffers.iter().map(|b| b.len()).sum();
        // SAFETY: every view is inline or points inside the buffer it names, at bytes copied from a
        // `&str`, so the views, buffers and lengths satisfy the array's invariants (which polars checks
        // itself in debug builds, so the tests check them too).
        unsafe {
            Utf8ViewArray::new_unchecked(
                ArrowDataType::Utf8View,
                Buffer::from(self.views),
                Buffer::from(buffers),
                self.validity.finish(),
                Some(self.total_bytes),
                buffer_bytes,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use polars_arrow::array::Array;

    #[test]
    fn values_repeats_and_nulls_read_back() {
        let long = "NVIDIA H100 80GB HBM3";
        let mut column = TextColumn::with_capacity(4);
        for value in [
            Some("bf16"),
            Some(long),
            Some(long),
            None,
            Some("A100-SXM4-80GB-x"),
            Some(long),
        ] {
            match value {
                Some(v) => column.push_value(v),
                None => column.push_null(),
            }
        }
        let array = column.finish();
        assert_eq!(array.len(), 6);
        let read: Vec<Option<&str>> = array.iter().collect();
        assert_eq!(
            read,
            vec![
                Some("bf16"),
                Some(long),
                Some(long),
                None,
                Some("A100-SXM4-80GB-x"),
                Some(long)
            ]
        );
        // The repeated name is stored once; the name after another long one is stored again.
        assert_eq!(
            array.total_buffer_len(),
            2 * long.len() + "A100-SXM4-80GB-x".len()
        );
        assert_eq!(array.null_count(), 1);
    }

    #[test]
    fn a_column_without_nulls_has_no_validity() {
        let mut column = TextColumn::default();
        column.push_value("x");
        assert!(column.finish().validity().is_none());
    }
}
