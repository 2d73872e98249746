//! Timestamps as loggers write them at the start of a line, in every common layout: ISO 8601 and
//! Python logging's `2024-04-17 09:42:26,123`, `2024/04/17 09:42:26` (MMEngine), `24-10-19 18:47:38.013`
//! (two-digit years), `04/17/2024 09:42:26` (Hugging Face's examples), `08/17/22 21:56:42` (rich),
//! `[04/17 09:42:26]` with no year (detectron2, PaddleDetection), glog's `I0417 09:42:26.945926`, and a
//! bare time of day `09:42:26,123`.
//!
//! A timestamp with a date and a year is read in seconds since the epoch (as UTC). One without a year,
//! or without a date, is read in seconds since the start of 1970 as if it were that year's: a clock
//! whose values say how far apart two lines are, not when. Every such value is below [`UNDATED`] (a
//! date no log has), which is how the rows tell a dated clock from one that is not: the rows stage
//! turns an undated clock into seconds since the log's first timestamp, carrying it over midnight and
//! over New Year ([`unwrap_undated`]).

/// Values of a timestamp below this have no date (or no year): seconds since an unknown 1 January.
pub const UNDATED: f64 = 1e8;

const DAY: f64 = 86_400.0;

/// The value of `n` ASCII digits at `b[from..]`.
fn digits(b: &[u8], from: usize, n: usize) -> Option<i64> {
    let part = b.get(from..from + n)?;
    part.iter().try_fold(0i64, |v, d| {
        d.is_ascii_digit().then(|| v * 10 + i64::from(d - b'0'))
    })
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's days_from_civil), `None` for an impossible
/// date.
fn days_from_civil(year: i64, month: i64, day: i64) -> Option<i64> {
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if !(1..=days_in_month).contains(&day) {
        return None;
    }
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146_097 + doe - 719_468)
}

/// A time of day `HH:MM:SS` with an optional fraction (`.123`, `,123456`) at `b[from..]`: its seconds
/// and where it ends. It must end the timestamp: no digit, `:` or `/` follows.
fn time_of_day(b: &[u8], from: usize) -> Option<(f64, usize)> {
    let (h, m, s) = (
        digits(b, from, 2)?,
        digits(b, from + 3, 2)?,
        digits(b, from + 6, 2)?,
    );
    if b[from + 2] != b':' || b[from + 5] != b':' || h > 23 || m > 59 || s > 60 {
        return None;
    }
    let mut end = from + 8;
    let mut fraction = 0.0;
    if matches!(b.get(end), Some(b'.' | b',')) && b.get(end + 1).is_some_and(u8::is_ascii_digit) {
        let start = end + 1;
        end = start;
        while b.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
        // Microseconds at most: a fraction is read to six digits, as chrono reads it.
        let kept = (end - start).min(6);
        let micros = digits(b, start, kept)? * 10i64.pow(6 - kept as u32);
        fraction = micros as f64 / 1e6;
    }
    if b.get(end)
        .is_some_and(|c| c.is_ascii_digit() || *c == b':' || *c == b'/')
    {
        return None;
    }
    Some(((h * 3600 + m * 60 + s) as f64 + fraction, end))
}

/// A timestamp at the start of `text` in one of the layouts this module names: its length in bytes and
/// its value (see the module's documentation for what an undated value is).
pub fn leading(text: &str) -> Option<(usize, f64)> {
    let b = text.as_bytes();
    if b.len() < 8 || !b[0].is_ascii_digit() {
        return None;
    }
    // ISO 8601 and Python logging's layout, with fractions and zones: the reader every log's lines
    // mostly go through.
    if let Some(found) = leading_iso(text) {
        return Some(found);
    }
    let dated = |days: Option<i64>, at: usize| -> Option<(usize, f64)> {
        let (seconds, end) = time_of_day(b, at)?;
        Some((end, days? as f64 * DAY + seconds))
    };
    let separated = |at: usize| matches!(b.get(at), Some(b' ' | b'T'));
    // `2024/04/17 09:42:26`
    if let (Some(y), Some(mo), Some(d)) = (digits(b, 0, 4), digits(b, 5, 2), digits(b, 8, 2)) {
        if b[4] == b'/' && b[7] == b'/' && separated(10) {
            return dated(days_from_civil(y, mo, d), 11);
        }
    }
    let (Some(first), Some(second)) = (digits(b, 0, 2), digits(b, 3, 2)) else {
        // `09:42:26`: a time of day and no date.
        return None;
    };
    match (b[2], b.get(5)) {
        // `24-10-19 18:47:38.013`: a two-digit year.
        (b'-', Some(b'-')) if separated(8) => {
            let day = digits(b, 6, 2)?;
            dated(days_from_civil(2000 + first, second, day), 9)
        }
        // `04/17/2024 09:42:26` (day first where the first number cannot be a month), `08/17/22
        // 21:56:42`, and `04/17 09:42:26` with no year.
        (b'/', Some(b'/')) => {
            let (month, day) = if first > 12 {
                (second, first)
            } else {
                (first, second)
            };
            if let (Some(year), true) = (digits(b, 6, 4), separated(10)) {
                dated(days_from_civil(year, month, day), 11)
            } else if let (Some(year), true) = (digits(b, 6, 2), separated(8)) {
                dated(days_from_civil(2000 + year, month, day), 9)
            } else {
                None
            }
        }
        (b'/', Some(b' ')) => {
            // No year: a day of 1970 (not a leap year, so 29 February has no place and is read as
            // 1 March's; only the differences between lines are used).
            if !(1..=31).contains(&second) {
                return None;
            }
            let days = days_from_civil(1970, first, second.min(28))? + (second - 28).max(0);
            let (seconds, end) = time_of_day(b, 6)?;
            Some((end, days as f64 * DAY + seconds))
        }
        (b':', _) => {
            let (seconds, end) = time_of_day(b, 0)?;
            Some((end, seconds))
        }
        _ => None,
    }
}

/// The time of glog's prefix (`I0417 09:42:26.945926 ...`, the level letter taken off): month and
/// day, no year.
pub fn glog(text: &str) -> Option<f64> {
    let b = text.as_bytes();
    let (month, day) = (digits(b, 0, 2)?, digits(b, 2, 2)?);
    if b.get(4) != Some(&b' ') || !(1..=31).contains(&day) {
        return None;
    }
    let days = days_from_civil(1970, month, day.min(28))? + (day - 28).max(0);
    let (seconds, _) = time_of_day(b, 5)?;
    Some(days as f64 * DAY + seconds)
}

/// Turns the undated clock values of a log's lines, in order (NaN where a line has none), into seconds
/// since the first of them: a time of day that goes back by more than half a day has passed midnight,
/// and a month and day that go back by more than half a year have passed New Year.
pub fn unwrap_undated(values: &mut [f64]) {
    let Some(first) = values.iter().copied().find(|v| !v.is_nan()) else {
        return;
    };
    let times_of_day = values.iter().all(|v| v.is_nan() || *v < DAY);
    let turn = if times_of_day { DAY } else { 365.0 * DAY };
    let (mut carried, mut previous) = (0.0, first);
    for v in values.iter_mut().filter(|v| !v.is_nan()) {
        if *v + turn / 2.0 < previous {
            carried += turn;
        }
        previous = *v;
        *v += carried - first;
    }
}

/// Whether a timestamp's date and time (`2024-04-17 09:42:26`, `2024-04-17T09:42:26`) start at `s`.
fn timestamp_at(b: &[u8], s: usize) -> bool {
    let Some(c) = b.get(s..s + 19) else {
        return false;
    };
    c[4] == b'-'
        && c[7] == b'-'
        && c[13] == b':'
        && c[16] == b':'
        && (c[10] == b' ' || c[10] == b'T')
        && c[..4].iter().all(u8::is_ascii_digit)
        && c[5..7].iter().all(u8::is_ascii_digit)
        && c[8..10].iter().all(u8::is_ascii_digit)
        && c[11..13].iter().all(u8::is_ascii_digit)
        && c[14..16].iter().all(u8::is_ascii_digit)
        && c[17..19].iter().all(u8::is_ascii_digit)
        && (s == 0 || !b[s - 1].is_ascii_digit())
}

/// Where a timestamp (`2024-04-17 09:42:26`, `2024-04-17T09:42:26.123Z`) starts in `text`, from `from`.
pub(crate) fn find_timestamp(text: &str, from: usize) -> Option<usize> {
    let b = text.as_bytes();
    // A timestamp's first `-` is its fifth byte.
    let search = b.get(from + 4..)?;
    memchr::memchr_iter(b'-', search)
        .map(|p| from + p)
        .find(|&s| timestamp_at(b, s))
}

/// The length of the timestamp at the start of `text` (with fractions and a zone) and its value.
pub(crate) fn leading_iso(text: &str) -> Option<(usize, f64)> {
    let b = text.as_bytes();
    if !timestamp_at(b, 0) {
        return None;
    }
    let mut end = 19;
    if end < b.len() && (b[end] == b'.' || b[end] == b',') {
        end += 1;
        while end < b.len() && b[end].is_ascii_digit() {
            end += 1;
        }
    }
    if end < b.len() && b[end] == b'Z' {
        end += 1;
    } else if end + 5 <= b.len()
        && (b[end] == b'+' || b[end] == b'-')
        && b[end + 1..end + 3].iter().all(u8::is_ascii_digit)
    {
        end += if b.get(end + 3) == Some(&b':') { 6 } else { 5 };
        end = end.min(b.len());
    }
    // A fraction or zone of other characters ends it on a character boundary (the pattern's own
    // bytes are ASCII); anything else is not a timestamp.
    if !text.is_char_boundary(end) {
        return None;
    }
    let value =
        plain_timestamp(&text[..end]).or_else(|| crate::values::parse_timestamp(&text[..end]))?;
    Some((end, value))
}

/// `YYYY-MM-DD HH:MM:SS[.,]ffffff` with no zone, in seconds since the epoch (as UTC), computed directly:
/// every line of most logs starts with one, and chrono's format parser took a tenth of the reader's
/// time on them. The same value as [`crate::values::parse_timestamp`] (a test holds them equal); `None`
/// for anything else (a zone, an impossible date), which goes to chrono.
pub(crate) fn plain_timestamp(text: &str) -> Option<f64> {
    let b = text.as_bytes();
    if b.len() < 19 || !(b[10] == b' ' || b[10] == b'T') {
        return None;
    }
    let number = |from: usize, to: usize| -> Option<i64> {
        b[from..to].iter().try_fold(0i64, |n, d| {
            d.is_ascii_digit().then(|| n * 10 + i64::from(d - b'0'))
        })
    };
    let (year, month, day) = (number(0, 4)?, number(5, 7)?, number(8, 10)?);
    let (hour, minute, second) = (number(11, 13)?, number(14, 16)?, number(17, 19)?);
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if b[4] != b'-'
        || b[7] != b'-'
        || b[13] != b':'
        || b[16] != b':'
        || day < 1
        || day > days_in_month
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    let mut micros = 0i64;
    if b.len() > 19 {
        if !(b[19] == b'.' || b[19] == b',') || b.len() == 20 {
            return None;
        }
        let digits = &b[20..];
        if !digits.iter().all(u8::is_ascii_digit) || digits.len() > 9 {
            return None;
        }
        for k in 0..6 {
            micros = micros * 10 + digits.get(k).map_or(0, |d| i64::from(d - b'0'));
        }
    }
    // Days since 1970-01-01 (Howard Hinnant's days_from_civil).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second;
    Some((seconds * 1_000_000 + micros) as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str) -> Option<f64> {
        leading(text).map(|(_, v)| v)
    }

    #[test]
    fn every_layout_reads_to_the_same_instant() {
        let iso = crate::values::parse_timestamp("2024-04-17 09:42:26.125").unwrap();
        for text in [
            "2024-04-17 09:42:26,125 - INFO",
            "2024-04-17T09:42:26.125Z INFO",
            "2024/04/17 09:42:26.125 - mmengine",
            "24-04-17 09:42:26.125 - 0:00:49",
            "04/17/2024 09:42:26.125 - INFO",
            "17/04/2024 09:42:26.125 - INFO",
            "04/17/24 09:42:26.125] INFO",
        ] {
            assert_eq!(value(text), Some(iso), "{text}");
        }
        let (used, _) = leading("24-04-17 09:42:26.125 - 0:00:49").unwrap();
        assert_eq!(used, 21);
    }

    #[test]
    fn undated_clocks_are_below_the_mark_and_a_second_apart_where_their_lines_are() {
        let a = value("04/17 09:42:26] d2.utils.events").unwrap();
        let b = value("04/17 09:42:27] d2.utils.events").unwrap();
        assert!(a < UNDATED && b - a == 1.0);
        let t = value("09:42:26,500 INFO").unwrap();
        assert_eq!(t, 9.0 * 3600.0 + 42.0 * 60.0 + 26.5);
        let g = glog("0417 09:42:26.945926 1401 file.py:12] x").unwrap();
        assert!(g < UNDATED && (g - a - 0.945926).abs() < 1e-9);
    }

    #[test]
    fn what_is_not_a_timestamp() {
        for text in [
            "10/200 [00:12<03:40, 1.16s/it]",
            "12:30 loss 2.1",
            "2024-13-01 00:00:00",
            "12:61:00 x",
            "1234567890 step 10",
            "09:42:26:01",
            "04/17 9:42:26",
        ] {
            assert_eq!(value(text), None, "{text}");
        }
    }

    #[test]
    fn an_undated_clock_is_carried_over_midnight_and_new_year() {
        let mut times = [23.0 * 3600.0 + 59.0 * 60.0, f64::NAN, 30.0, 90.0];
        unwrap_undated(&mut times);
        assert_eq!(times[0], 0.0);
        assert!(times[1].is_nan());
        assert_eq!(times[2], 90.0);
        assert_eq!(times[3], 150.0);
        let dec31 = value("12/31 23:59:00 x").unwrap();
        let jan1 = value("01/01 00:01:00 x").unwrap();
        let mut days = [dec31, jan1];
        unwrap_undated(&mut days);
        assert_eq!(days, [0.0, 120.0]);
    }
}
