//! Parquet's RLE / bit-packing hybrid encoding (the format's `RLE` encoding), for definition levels and
//! dictionary indices. Input comes as runs of equal values, which is how the text column encoder finds
//! them: a run of at least eight values becomes one RLE run; shorter runs go into bit-packed groups of
//! eight. A bit-packed section must hold a whole number of groups unless it ends the stream, so before an
//! RLE run the pending values are topped up to a multiple of eight from the run itself.

/// Bits needed for values up to `max` (0 for 0).
pub fn bit_width(max: u32) -> u8 {
    (32 - max.leading_zeros()) as u8
}

/// At most this many groups of eight per bit-packed header, so the header is one byte (what parquet-mr
/// writes; every reader accepts it).
const MAX_GROUPS_PER_HEADER: usize = 63;

/// Appends `runs` (value, count) encoded with `width` bits a value.
pub fn encode_runs(runs: &[(u32, u32)], width: u8, out: &mut Vec<u8>) {
    let mut pending: Vec<u32> = Vec::new();
    for &(value, count) in runs {
        let count = count as usize;
        let fill = (8 - pending.len() % 8) % 8;
        if count >= fill + 8 {
            pending.extend(std::iter::repeat_n(value, fill));
            write_bit_packed(&pending, width, out);
            pending.clear();
            write_rle_run(value, count - fill, width, out);
        } else {
            pending.extend(std::iter::repeat_n(value, count));
        }
    }
    write_bit_packed(&pending, width, out);
}

fn write_varint(mut value: u64, out: &mut Vec<u8>) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn write_rle_run(value: u32, count: usize, width: u8, out: &mut Vec<u8>) {
    write_varint((count as u64) << 1, out);
    out.extend_from_slice(&value.to_le_bytes()[..(width as usize).div_ceil(8)]);
}

/// Writes `values` as bit-packed groups, the last group padded with zeros (the page's value count tells
/// readers where the values end).
fn write_bit_packed(values: &[u32], width: u8, out: &mut Vec<u8>) {
    for section in values.chunks(MAX_GROUPS_PER_HEADER * 8) {
        let groups = section.len().div_ceil(8);
        write_varint(((groups as u64) << 1) | 1, out);
        let mut acc: u64 = 0;
        let mut bits = 0u32;
        for k in 0..groups * 8 {
            acc |= u64::from(section.get(k).copied().unwrap_or(0)) << bits;
            bits += u32::from(width);
            while bits >= 8 {
                out.push(acc as u8);
                acc >>= 8;
                bits -= 8;
            }
        }
        // Eight values of `width` bits fill whole bytes.
        debug_assert_eq!(bits, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reference decoder, written from the format's description.
    fn decode(mut bytes: &[u8], width: u8, count: usize) -> Vec<u32> {
        let mut out = Vec::new();
        let read_varint = |bytes: &mut &[u8]| {
            let mut value = 0u64;
            let mut shift = 0;
            loop {
                let b = bytes[0];
                *bytes = &bytes[1..];
                value |= u64::from(b & 0x7f) << shift;
                shift += 7;
                if b & 0x80 == 0 {
                    return value;
                }
            }
        };
        while out.len() < count {
            let header = read_varint(&mut bytes);
            if header & 1 == 0 {
                let n = (header >> 1) as usize;
                let w = (width as usize).div_ceil(8);
                let mut le = [0u8; 4];
                le[..w].copy_from_slice(&bytes[..w]);
                bytes = &bytes[w..];
                out.extend(std::iter::repeat_n(u32::from_le_bytes(le), n));
            } else {
                let n = (header >> 1) as usize * 8;
                let len = n * width as usize / 8;
                let (packed, rest) = bytes.split_at(len);
                bytes = rest;
                for k in 0..n {
                    let mut v = 0u32;
                    for b in 0..width as usize {
                        let bit = k * width as usize + b;
                        v |= u32::from((packed[bit / 8] >> (bit % 8)) & 1) << b;
                    }
                    out.push(v);
                }
            }
        }
        assert!(bytes.is_empty(), "trailing bytes");
        out.truncate(count);
        out
    }

    fn runs_of(values: &[u32]) -> Vec<(u32, u32)> {
        let mut runs: Vec<(u32, u32)> = Vec::new();
        for &v in values {
            match runs.last_mut() {
                Some((last, n)) if *last == v => *n += 1,
                _ => runs.push((v, 1)),
            }
        }
        runs
    }

    #[test]
    fn bit_widths() {
        assert_eq!(
            [0, 1, 2, 3, 255, 256, u32::MAX].map(bit_width),
            [0, 1, 2, 2, 8, 9, 32]
        );
    }

    #[test]
    fn runs_and_literals_round_trip() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for case in 0..300 {
            let width = (case % 13) as u8;
            let max = if width == 0 { 0 } else { (1u64 << width) - 1 } as u32;
            let len = (next() % 2000) as usize;
            let mut values = Vec::with_capacity(len);
            while values.len() < len {
                let v = (next() % (u64::from(max) + 1)) as u32;
                // Runs of every length from 1 to 40, so RLE runs meet bit-packed groups at every phase.
                let run = (next() % 40 + 1) as usize;
                values.extend(std::iter::repeat_n(v, run.min(len - values.len())));
            }
            let mut bytes = Vec::new();
            encode_runs(&runs_of(&values), width, &mut bytes);
            assert_eq!(decode(&bytes, width, values.len()), values, "case {case}");
        }
    }

    #[test]
    fn a_long_run_is_two_bytes_and_its_value() {
        let mut bytes = Vec::new();
        encode_runs(&[(5, 1000)], 3, &mut bytes);
        // varint(1000 << 1) = [0xd0, 0x0f], then the value in one byte.
        assert_eq!(bytes, [0xd0, 0x0f, 5]);
        bytes.clear();
        encode_runs(&[(0, 65536)], 0, &mut bytes);
        assert_eq!(bytes, [0x80, 0x80, 0x08]);
    }
}
