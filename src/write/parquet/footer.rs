//! The footer's column order for float columns: the one place mfu changes a byte arrow-rs writes.
//!
//! arrow-rs 60 marks every FLOAT and DOUBLE column `IEEE_754_TOTAL_ORDER` in the footer's
//! `column_orders` (a 2025 addition to the format), and has no option to write the type-defined order
//! instead. pyarrow 26 (Arrow C++) ignores the statistics of a column whose order it does not know, so it
//! showed no min/max for any timing, loss or MFU column and its dataset filters could not skip a row group
//! on them. mfu's min/max are valid bounds under either order (NaN is never a bound; a zero bound is a
//! zero, and IEEE comparison treats -0.0 and +0.0 as equal, which is what readers of the type-defined
//! order assume), so the only change is the order's tag.
//!
//! The footer ends `... column_orders: list<ColumnOrder>, STOP, length (u32 LE), "PAR1"`, and in Thrift's
//! compact protocol each element is three bytes: a field header naming the union's member (`0x1C` for
//! `TYPE_ORDER`, `0x2C` for `IEEE_754_TOTAL_ORDER`), the member's empty struct's STOP, and the union's
//! STOP. The bytes keep their length, so the footer's length and every offset stay as written. The
//! writer below holds back the last bytes of the file until the end, checks that they have exactly that
//! shape for the file's leaf columns, and only then swaps the tags; anything else is written unchanged.

use std::io::{self, Write};

const TYPE_ORDER: u8 = 0x1C;
const IEEE_754_TOTAL_ORDER: u8 = 0x2C;
const LIST_OF_STRUCTS: u8 = 0x0C;

/// Bytes held back: the column orders of up to 21,000 leaf columns (a wider file keeps arrow-rs's tags).
const KEEP: usize = 64 << 10;

/// Passes bytes on to `inner`, holding back the last `keep` of them until [`FooterPatch::finish`].
pub struct FooterPatch<W: Write> {
    inner: W,
    tail: Vec<u8>,
    keep: usize,
}

impl<W: Write> FooterPatch<W> {
    pub fn new(inner: W) -> FooterPatch<W> {
        FooterPatch::holding(inner, KEEP)
    }

    fn holding(inner: W, keep: usize) -> FooterPatch<W> {
        FooterPatch {
            inner,
            tail: Vec::with_capacity(2 * keep),
            keep,
        }
    }

    /// Writes the held-back bytes, float columns' order tags swapped when the footer has the expected
    /// shape for `leaves` leaf columns, and gives back the output.
    pub fn finish(mut self, leaves: usize) -> io::Result<W> {
        mark_floats_type_ordered(&mut self.tail, leaves);
        self.inner.write_all(&self.tail)?;
        Ok(self.inner)
    }
}

impl<W: Write> Write for FooterPatch<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.len() >= self.keep {
            // Everything held and all but the last `keep` bytes of `buf` go on now.
            self.inner.write_all(&self.tail)?;
            let (now, later) = buf.split_at(buf.len() - self.keep);
            self.inner.write_all(now)?;
            self.tail.clear();
            self.tail.extend_from_slice(later);
        } else {
            self.tail.extend_from_slice(buf);
            if self.tail.len() > 2 * self.keep {
                let cut = self.tail.len() - self.keep;
                self.inner.write_all(&self.tail[..cut])?;
                self.tail.drain(..cut);
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Swaps `IEEE_754_TOTAL_ORDER` for `TYPE_ORDER` in the `column_orders` at the end of a Parquet file's
/// last bytes, when they have the shape described above for `leaves` columns; returns whether it did.
fn mark_floats_type_ordered(tail: &mut [u8], leaves: usize) -> bool {
    let Some(metadata_end) = tail.len().checked_sub(8) else {
        return false;
    };
    if !tail.ends_with(b"PAR1") || leaves == 0 {
        return false;
    }
    // The footer's STOP, then the list's elements before it.
    let Some(stop) = metadata_end.checked_sub(1) else {
        return false;
    };
    let Some(start) = stop.checked_sub(3 * leaves) else {
        return false;
    };
    if tail[stop] != 0 {
        return false;
    }
    let elements_ok = tail[start..stop]
        .chunks_exact(3)
        .all(|e| matches!(e[0], TYPE_ORDER | IEEE_754_TOTAL_ORDER) && e[1] == 0 && e[2] == 0);
    if !elements_ok || !list_header_before(tail, start, leaves) {
        return false;
    }
    for element in tail[start..stop].chunks_exact_mut(3) {
        element[0] = TYPE_ORDER;
    }
    true
}

/// Whether the compact protocol's list header for `leaves` structs ends just before `start`: one byte
/// `(size << 4) | 0x0C` below 15 elements, else `0xFC` and the size as a varint.
fn list_header_before(tail: &[u8], start: usize, leaves: usize) -> bool {
    if leaves < 15 {
        return start >= 1 && tail[start - 1] == ((leaves as u8) << 4 | LIST_OF_STRUCTS);
    }
    let mut varint = Vec::new();
    let mut n = leaves;
    loop {
        let byte = (n & 0x7F) as u8;
        n >>= 7;
        if n == 0 {
            varint.push(byte);
            break;
        }
        varint.push(byte | 0x80);
    }
    let header_len = 1 + varint.len();
    start >= header_len
        && tail[start - header_len] == 0xF0 | LIST_OF_STRUCTS
        && tail[start - varint.len()..start] == varint[..]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The last bytes of a footer with these order tags.
    fn footer(tags: &[u8]) -> Vec<u8> {
        let mut bytes = vec![0x19]; // field 7, a list
        if tags.len() < 15 {
            bytes.push((tags.len() as u8) << 4 | 0x0C);
        } else {
            bytes.push(0xFC);
            let mut n = tags.len();
            while n >= 0x80 {
                bytes.push((n as u8 & 0x7F) | 0x80);
                n >>= 7;
            }
            bytes.push(n as u8);
        }
        for tag in tags {
            bytes.extend_from_slice(&[*tag, 0, 0]);
        }
        bytes.push(0); // the footer's STOP
        bytes.extend_from_slice(&1234u32.to_le_bytes());
        bytes.extend_from_slice(b"PAR1");
        bytes
    }

    #[test]
    fn float_orders_are_swapped_only_in_the_expected_shape() {
        for n in [1, 3, 14, 15, 16, 200] {
            let tags: Vec<u8> = (0..n)
                .map(|i| if i % 3 == 0 { 0x2C } else { 0x1C })
                .collect();
            let mut tail = footer(&tags);
            assert!(mark_floats_type_ordered(&mut tail, n), "{n}");
            assert_eq!(tail, footer(&vec![0x1C; n]), "{n}");
            // The wrong column count, a stray byte, a cut tail: left alone.
            let original = footer(&tags);
            for (leaves, tail) in [
                (n + 1, original.clone()),
                (n, [&original[..original.len() - 1], b"X"].concat()),
                (n, original[3..].to_vec()),
            ] {
                let mut copy = tail.clone();
                assert!(!mark_floats_type_ordered(&mut copy, leaves), "{n} {leaves}");
                assert_eq!(copy, tail);
            }
        }
    }

    #[test]
    fn the_writer_holds_back_only_the_last_bytes() {
        let tags = [0x1C, 0x2C, 0x2C];
        let mut file = vec![7u8; 10_000];
        file.extend(footer(&tags));
        for piece in [1, 5, 40, 4096, 20_000] {
            let mut patch = FooterPatch::holding(Vec::new(), 3 * tags.len() + 32);
            for chunk in file.chunks(piece) {
                patch.write_all(chunk).unwrap();
                assert!(patch.tail.len() <= 2 * patch.keep.max(piece));
            }
            let out = patch.finish(tags.len()).unwrap();
            assert_eq!(out.len(), file.len());
            assert_eq!(&out[..10_000], &file[..10_000]);
            assert!(out.ends_with(&footer(&[0x1C; 3])), "{piece}");
        }
    }
}
