//! Byte scans shared by the fast readers.

/// The position of the first `a` or `b` in `bytes[from..to]`, or `to`. Cells and strings in logs are
/// short, so instead of setting up a vector search this reads eight bytes at a time while eight remain: a
/// byte equals `a` where its XOR with `a` is zero, found with the usual has-zero-byte trick (exact for the
/// lowest such byte, which is the one wanted).
#[inline]
pub(crate) fn find_either(bytes: &[u8], mut from: usize, to: usize, a: u8, b: u8) -> usize {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let (all_a, all_b) = (LOW * a as u64, LOW * b as u64);
    while from + 8 <= to {
        let word = u64::from_le_bytes(bytes[from..from + 8].try_into().expect("eight bytes"));
        let (x, y) = (word ^ all_a, word ^ all_b);
        let found = (x.wrapping_sub(LOW) & !x | y.wrapping_sub(LOW) & !y) & HIGH;
        if found != 0 {
            return from + (found.trailing_zeros() / 8) as usize;
        }
        from += 8;
    }
    while from < to && bytes[from] != a && bytes[from] != b {
        from += 1;
    }
    from
}

/// `bytes` cut into about `n` ranges that end at line ends (each a run of whole lines, and so, in UTF-8
/// text, at character boundaries).
pub(crate) fn line_ranges(bytes: &[u8], n: usize) -> Vec<std::ops::Range<usize>> {
    let target = bytes.len() / n.max(1) + 1;
    let mut ranges = Vec::with_capacity(n);
    let mut start = 0;
    while start < bytes.len() {
        let mut end = (start + target).min(bytes.len());
        while end < bytes.len() && bytes[end - 1] != b'\n' {
            end += 1;
        }
        ranges.push(start..end);
        start = end;
    }
    ranges
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_first_of_either_byte() {
        let line = b"NVIDIA H100 80GB HBM3;run-0001\nnext";
        assert_eq!(find_either(line, 0, line.len(), b';', b'\n'), 21);
        assert_eq!(find_either(line, 22, line.len(), b';', b'\n'), 30);
        assert_eq!(find_either(line, 31, line.len(), b';', b'\n'), line.len());
        assert_eq!(find_either(line, 0, line.len(), b',', b'\n'), 30);
        assert_eq!(find_either(line, 0, 10, b';', b'\n'), 10);
        for at in 0..20 {
            let mut cell = vec![b'x'; 20];
            cell[at] = b'"';
            assert_eq!(find_either(&cell, 0, cell.len(), b'\\', b'"'), at);
            // The lowest match wins when both bytes occur.
            if at + 1 < 20 {
                cell[at + 1] = b'\\';
                assert_eq!(find_either(&cell, 0, cell.len(), b'\\', b'"'), at);
            }
        }
    }
}
