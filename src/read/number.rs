//! Decimal numbers as JSON writes them, read to the same bits as the standard parser but in one pass over
//! text the readers are already walking: eight digits at a time, Clinger's fast path for short mantissas,
//! and the Eisel-Lemire algorithm for the 17-digit mantissas of floats printed in full.
//!
//! Why own code where `fast-float2` exists (measured 2026-12-03, release, 2-core machine): on a number
//! alone, `fast_float2::parse` is faster than this module's `parse_f64` (20,000 numbers as gen_logs.py
//! prints them: 350 µs against 469 µs; the standard library 409 µs; `cargo bench --bench number`, all
//! three giving the same bits). But the readers do not parse numbers alone: they walk a line, and this
//! parser finds where a number ends, checks JSON's grammar and tells integers from floats in the same pass
//! that converts it. With the conversion handed to fast-float2 after that walk (the same scan, then
//! `fast_float2::parse` on the number's bytes), the readers' benchmark (`cargo bench --bench enrich --
//! read`, 100,000 gen_logs-shaped rows, criterion baselines run back to back) went from 28.3 ms to 33.2
//! ms for JSON Lines (+17%) and from 14.1 ms to 19.0 ms for CSV (+34%), against +3% and +6% for this code
//! measured again: past the 5% a library must stay within to replace it. `bench_parse_f64` is held to the
//! standard library bit for bit by the tests below and to fast-float2 by the benchmark's check.
//!
//! Eisel-Lemire is from Daniel Lemire, "Number Parsing at a Gigabyte per Second" (Software: Practice and
//! Experience, 2021, arXiv:2101.11408), as the standard library also implements it. This one covers
//! decimal exponents from -27 to 27, where its 128-bit powers of five are computed here at compile time
//! and never need the error fallback; other exponents, and mantissas over 19 digits, go to the standard
//! parser.

/// A number in JSON's grammar.
pub(crate) enum Number {
    Int(i64),
    Float(f64),
}

/// `text`, all of it, as a number in JSON's grammar (an integer that fits i64, or a finite float read
/// exactly as the standard parser reads it); `None` for anything else.
#[inline]
pub(crate) fn parse_whole_number(text: &str) -> Option<Number> {
    match parse_number_at(text, 0)? {
        (Number::Float(v), end) if end == text.len() => Some(Number::Float(v)),
        (Number::Int(v), end) if end == text.len() => Some(Number::Int(v)),
        _ => None,
    }
}

/// The value of a decimal number written in JSON's grammar (the whole of `text`), exactly as the standard
/// parser reads it; `None` for anything else.
pub fn parse_f64(text: &str) -> Option<f64> {
    match parse_whole_number(text)? {
        // "-0" is an integer 0 to JSON, but negative zero as a float.
        Number::Int(0) if text.starts_with('-') => Some(-0.0),
        Number::Int(v) => Some(v as f64),
        Number::Float(v) => Some(v),
    }
}

/// The JSON number (strict grammar) that starts at `start`, and where it ends: an integer that fits i64,
/// or a finite float read exactly as the standard parser reads it. `None` when none starts there; the
/// caller decides whether the byte at the end may follow a number.
// Always inlined: the readers call it once per number cell, and returning the (number, end) pair through
// memory from a separate function cost 4% of a CSV run's instructions.
#[inline(always)]
pub(crate) fn parse_number_at(text: &str, start: usize) -> Option<(Number, usize)> {
    let b = text.as_bytes();
    let n = b.len();
    let mut i = start;
    let negative = b[i] == b'-';
    if negative {
        i += 1;
    }
    let digits_start = i;
    // The significant digits as an integer, and the power of ten that scales them, for the exact path.
    let mut mantissa: u64 = 0;
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i = eat_digits(b, i, &mut mantissa),
        _ => return None,
    }
    let int_digits = i - digits_start;
    let mut exponent: i64 = 0;
    let mut fractional = false;
    if i < n && b[i] == b'.' {
        i += 1;
        let from = i;
        i = eat_digits(b, i, &mut mantissa);
        if i == from {
            return None;
        }
        exponent -= (i - from) as i64;
        fractional = true;
    }
    // Leading zeros add nothing to the mantissa, which is exact unless more than 19 digits follow them.
    let digits = &b[digits_start..i];
    let exact = digits.len() <= 19 || significant_digits(digits) <= 19;
    if i < n && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        let mut sign = 1;
        if i < n && (b[i] == b'+' || b[i] == b'-') {
            if b[i] == b'-' {
                sign = -1;
            }
            i += 1;
        }
        let from = i;
        let mut e: i64 = 0;
        while i < n && b[i].is_ascii_digit() {
            e = (e * 10 + (b[i] - b'0') as i64).min(100_000);
            i += 1;
        }
        if i == from {
            return None;
        }
        exponent += sign * e;
        fractional = true;
    }
    if !fractional {
        if int_digits <= 18 {
            let v = mantissa as i64;
            return Some((Number::Int(if negative { -v } else { v }), i));
        }
        return Some((Number::Int(text[start..i].parse().ok()?), i));
    }
    // Clinger's fast path: a mantissa below 2^53 times or over a power of ten up to 10^22 is exact in
    // f64, so one multiplication or division rounds correctly. Longer mantissas (the 16 and 17 digits of
    // a float printed in full) go through Eisel-Lemire, and what that cannot settle to the standard
    // parser.
    if exact && mantissa <= 1 << 53 && (-22..=22).contains(&exponent) {
        let m = mantissa as f64;
        let v = if exponent < 0 {
            m / POWERS_OF_TEN[(-exponent) as usize]
        } else {
            m * POWERS_OF_TEN[exponent as usize]
        };
        return Some((Number::Float(if negative { -v } else { v }), i));
    }
    if exact && mantissa != 0 {
        if let Some(v) = eisel_lemire(mantissa, exponent) {
            return Some((Number::Float(if negative { -v } else { v }), i));
        }
    }
    let v: f64 = text[start..i].parse().ok()?;
    v.is_finite().then_some((Number::Float(v), i))
}

/// Reads the digits from `i` into `mantissa` (wrapping past 19 significant digits: the caller checks);
/// returns where they end. Eight bytes at a time where eight remain (the SWAR method of fast_float: check
/// and convert eight ASCII digits in a few word operations), the last word's digits included: a number's
/// final digits are followed by the byte that ends it, so they are found and converted in the same word
/// instead of one by one.
#[inline]
fn eat_digits(b: &[u8], mut i: usize, mantissa: &mut u64) -> usize {
    while let Some(chunk) = b.get(i..i + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        // A byte is a digit unless it is above 0x39 (adding 0x46 sets its bit 7) or below 0x30 (subtracting
        // 0x30 does). Borrows and carries only run towards later bytes, so the flag of the first
        // non-digit byte, and the digits before it, are exact.
        let not_digits = (word.wrapping_add(0x4646_4646_4646_4646)
            | word.wrapping_sub(0x3030_3030_3030_3030))
            & 0x8080_8080_8080_8080;
        let digits = (not_digits.trailing_zeros() / 8) as usize;
        if digits == 0 {
            return i;
        }
        // The digits moved to the word's end, zeros (leading zeros of an eight-digit number) before them.
        let values = word.wrapping_sub(0x3030_3030_3030_3030) << (8 * (8 - digits));
        let v = eight_digits(values);
        *mantissa = mantissa
            .wrapping_mul(POWERS_OF_TEN_U64[digits])
            .wrapping_add(v);
        i += digits;
        if digits < 8 {
            return i;
        }
    }
    while i < b.len() && b[i].is_ascii_digit() {
        *mantissa = mantissa.wrapping_mul(10).wrapping_add((b[i] - b'0') as u64);
        i += 1;
    }
    i
}

/// The digits of `digits` (digits and at most one point) after its leading zeros.
fn significant_digits(digits: &[u8]) -> usize {
    let first = digits
        .iter()
        .position(|d| !matches!(d, b'0' | b'.'))
        .unwrap_or(digits.len());
    digits[first..]
        .iter()
        .filter(|d| d.is_ascii_digit())
        .count()
}

/// The value of eight digit values (0-9) in a word, the first in its lowest byte.
#[inline]
fn eight_digits(mut v: u64) -> u64 {
    v = v.wrapping_mul(10) + (v >> 8);
    ((v & 0x0000_00FF_0000_00FF).wrapping_mul(0x000F_4240_0000_0064)
        + ((v >> 16) & 0x0000_00FF_0000_00FF).wrapping_mul(0x0000_2710_0000_0001))
        >> 32
}

/// 10^0 ..= 10^8.
const POWERS_OF_TEN_U64: [u64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// 10^0 ..= 10^22, each exact in f64.
const POWERS_OF_TEN: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The smallest and largest decimal exponents [`eisel_lemire`] takes.
const LEMIRE_MIN_EXPONENT: i64 = -27;
const LEMIRE_MAX_EXPONENT: i64 = 27;

/// 5^q for q in `LEMIRE_MIN_EXPONENT..=LEMIRE_MAX_EXPONENT`, as 128 bits with the top bit set: exact (zeros
/// below) for q >= 0, since 5^27 < 2^64; for q < 0, floor(2^b / 5^-q) + 1 with b chosen so the result
/// has 128 bits, the rounding the algorithm's proof assumes.
const POWERS_OF_FIVE_128: [u128; (LEMIRE_MAX_EXPONENT - LEMIRE_MIN_EXPONENT + 1) as usize] = {
    let mut table = [0u128; (LEMIRE_MAX_EXPONENT - LEMIRE_MIN_EXPONENT + 1) as usize];
    let mut q = LEMIRE_MIN_EXPONENT;
    while q <= LEMIRE_MAX_EXPONENT {
        let index = (q - LEMIRE_MIN_EXPONENT) as usize;
        if q >= 0 {
            let p = 5u128.pow(q as u32);
            table[index] = p << p.leading_zeros();
        } else {
            let d = 5u128.pow((-q) as u32);
            // z: the bit length of d, so 2^(z-1) <= d < 2^z and 2^(z+127) / d lies in [2^127, 2^128).
            let z = 128 - d.leading_zeros();
            let b = z + 127;
            // Long division of 2^b by d, one bit at a time; the remainder stays below d < 2^64.
            let mut quotient: u128 = 0;
            let mut remainder: u128 = 0;
            let mut bit = b as i64;
            while bit >= 0 {
                remainder = (remainder << 1) | (bit == b as i64) as u128;
                quotient <<= 1;
                if remainder >= d {
                    remainder -= d;
                    quotient |= 1;
                }
                bit -= 1;
            }
            table[index] = quotient + 1;
        }
        q += 1;
    }
    table
};

/// `mantissa` × 10^`exponent` correctly rounded to f64 (a nonzero mantissa of at most 19 digits, so it is
/// exact), or `None` when the exponent is outside the table. Within it the result is never subnormal or
/// infinite, and the 128-bit product always settles the rounding (the paper's section 8 and 9.1: for
/// exponents from -27 to 55 the truncated product cannot be off by one across a halfway point).
#[inline]
fn eisel_lemire(mantissa: u64, exponent: i64) -> Option<f64> {
    const EXPLICIT_BITS: i32 = 52;
    if !(LEMIRE_MIN_EXPONENT..=LEMIRE_MAX_EXPONENT).contains(&exponent) || mantissa == 0 {
        return None;
    }
    let q = exponent as i32;
    let lz = mantissa.leading_zeros();
    let w = mantissa << lz;
    let power = POWERS_OF_FIVE_128[(exponent - LEMIRE_MIN_EXPONENT) as usize];
    let (hi5, lo5) = ((power >> 64) as u64, power as u64);
    // The top 64 bits of w × 5^q, with a second multiplication only when the bits below the 55 that
    // matter are all ones (a carry from the low half could change them).
    let first = w as u128 * hi5 as u128;
    let (mut lo, mut hi) = (first as u64, (first >> 64) as u64);
    let mask = u64::MAX >> (EXPLICIT_BITS + 3);
    if hi & mask == mask {
        let second_hi = ((w as u128 * lo5 as u128) >> 64) as u64;
        lo = lo.wrapping_add(second_hi);
        if second_hi > lo {
            hi += 1;
        }
    }
    let upper_bit = (hi >> 63) as i32;
    let shift = upper_bit + 64 - EXPLICIT_BITS - 3;
    let mut m = hi >> shift;
    // The binary exponent: floor(q × log2(10)) + 63, from the paper's multiply-and-shift, and the IEEE
    // bias of 1023.
    let mut power2 = ((q.wrapping_mul(152_170 + 65_536)) >> 16) + 63 + upper_bit - lz as i32 + 1023;
    // Exactly halfway between two floats (possible only where 5^q is exact and small): round to even.
    if lo <= 1 && (-4..=23).contains(&q) && m & 3 == 1 && (m << shift) == hi {
        m &= !1;
    }
    m += m & 1;
    m >>= 1;
    if m >= 2 << EXPLICIT_BITS {
        m = 1 << EXPLICIT_BITS;
        power2 += 1;
    }
    m &= !(1 << EXPLICIT_BITS);
    debug_assert!(power2 > 0 && power2 < 0x7FF);
    Some(f64::from_bits(m | (power2 as u64) << EXPLICIT_BITS))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reproducible stream of pseudo-random words (Marsaglia's xorshift64).
    fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    #[test]
    fn numbers_parse_to_the_same_bits_as_the_standard_parser() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..100_000 {
            let bits = next();
            let x = f64::from_bits(bits);
            let small = (bits % 1_000_000_007) as f64 / 10f64.powi((bits % 12) as i32);
            for v in [x, small, -small] {
                if !v.is_finite() {
                    continue;
                }
                for text in [
                    format!("{v:?}"),
                    format!("{v:e}"),
                    format!("{v:.3}"),
                    format!("{v:.17}"),
                ] {
                    let want: f64 = text.parse().unwrap();
                    // Alone, and followed by what ends a number in a log (digits in the same
                    // eight-byte word as its last digits must not be taken for its own).
                    for suffix in ["", ",123456789", "}\n{\"a\":12", "\u{e9}99"] {
                        let line = format!("{text}{suffix}");
                        match parse_number_at(&line, 0) {
                            Some((Number::Float(got), end)) => {
                                assert_eq!(end, text.len(), "{line}");
                                assert_eq!(got.to_bits(), want.to_bits(), "{line}");
                            }
                            Some((Number::Int(got), end)) => {
                                assert_eq!(end, text.len(), "{line}");
                                assert_eq!(got as f64, want, "{line}");
                            }
                            _ => panic!("{line} not read"),
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn long_mantissas_at_every_exponent_match_the_standard_parser() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        for exponent in LEMIRE_MIN_EXPONENT..=LEMIRE_MAX_EXPONENT {
            for digits in 15..=19u32 {
                for _ in 0..2_000 {
                    let mantissa = next() % 10u64.pow(digits);
                    if mantissa == 0 {
                        continue;
                    }
                    let text = format!("{mantissa}e{exponent}");
                    let want: f64 = text.parse().unwrap();
                    let got = eisel_lemire(mantissa, exponent).unwrap();
                    assert_eq!(got.to_bits(), want.to_bits(), "{text}");
                }
            }
        }
        // Halfway cases, where rounding to even decides: 2^53 + 1 and neighbours, times small powers.
        for base in [
            (1u64 << 53) + 1,
            (1 << 53) + 3,
            (1 << 54) + 2,
            9_007_199_254_740_993,
        ] {
            for exponent in -4..=23 {
                let text = format!("{base}e{exponent}");
                let want: f64 = text.parse().unwrap();
                let got = eisel_lemire(base, exponent).unwrap();
                assert_eq!(got.to_bits(), want.to_bits(), "{text}");
            }
        }
        assert!(eisel_lemire(1, 28).is_none());
        assert!(eisel_lemire(1, -28).is_none());
    }

    #[test]
    fn a_number_ends_where_its_grammar_ends() {
        let text = "12.5,x";
        match parse_number_at(text, 0) {
            Some((Number::Float(v), 4)) => assert_eq!(v, 12.5),
            _ => panic!("12.5 not read"),
        }
        // Past 19 digits, leading zeros do not count; significant ones send it to the standard parser.
        for text in [
            "0.000000000000000000001234",
            "0.0000000000000000000012345678901234567",
            "0.12345678901234567890123",
            "12345678901234567890.5",
            "-0.00000000000000000000000000000001e3",
        ] {
            match parse_number_at(text, 0) {
                Some((Number::Float(v), end)) => {
                    assert_eq!(end, text.len());
                    assert_eq!(
                        v.to_bits(),
                        text.parse::<f64>().unwrap().to_bits(),
                        "{text}"
                    );
                }
                _ => panic!("{text} not read"),
            }
        }
        assert!(parse_number_at("-x", 0).is_none());
        assert!(parse_whole_number("0123").is_none());
        assert!(parse_whole_number("1.").is_none());
    }
}
