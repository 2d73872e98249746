//! Reading numbers that logs write as text.
//!
//! Real logs hold `"nan"`, `"5,856"`, `"34.3%"`, `"1 day, 2:03:04"` and `"2950ms"` where a number is meant.
//! [`parse_cell`] reads each of these, or says the cell is not a number, so the caller can count it; it
//! never guesses.

/// A number read from a text cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CellNumber {
    pub value: f64,
    /// Seconds per unit when the cell named a time unit itself (`2950ms`, `1.5 s`) or was a duration
    /// (`1:02:03`, already in seconds: factor 1).
    pub seconds_per_unit: Option<f64>,
}

/// A text cell that is not a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotANumber;

impl CellNumber {
    fn plain(value: f64) -> CellNumber {
        CellNumber {
            value,
            seconds_per_unit: None,
        }
    }
}

/// Reads a cell. Empty, `nan`, `null` and `none` (any case) are null (`Ok(None)`). Accepted:
/// plain numbers (`1.5e3`, `-inf`), thousands separators (`5,856`), percentages (`34.3%` is 0.343),
/// durations (`H:MM:SS[.fff]`, `MM:SS`, `N day(s), H:MM:SS`, in seconds), and a number followed by a
/// unit (`2950ms`, `1.5 s`, `12 tokens`); a time unit is reported in `seconds_per_unit`.
pub fn parse_cell(cell: &str) -> Result<Option<CellNumber>, NotANumber> {
    let t = cell.trim();
    if t.is_empty()
        || t.eq_ignore_ascii_case("nan")
        || t.eq_ignore_ascii_case("null")
        || t.eq_ignore_ascii_case("none")
    {
        return Ok(None);
    }
    if let Ok(v) = t.parse::<f64>() {
        return Ok(Some(CellNumber::plain(v)));
    }
    if let Some(v) = thousands(t) {
        return Ok(Some(CellNumber::plain(v)));
    }
    if let Some(rest) = t.strip_suffix('%') {
        let v = rest.trim().parse::<f64>().map_err(|_| NotANumber)?;
        return Ok(Some(CellNumber::plain(v / 100.0)));
    }
    if let Some(seconds) = parse_duration(t) {
        return Ok(Some(CellNumber {
            value: seconds,
            seconds_per_unit: Some(1.0),
        }));
    }
    number_with_unit(t).map(Some).ok_or(NotANumber)
}

/// `5,856` or `1,234,567.5` → the number; anything else → `None`.
fn thousands(t: &str) -> Option<f64> {
    let (sign, digits) = match t.strip_prefix('-') {
        Some(rest) => (-1.0, rest),
        None => (1.0, t),
    };
    let (int, frac) = match digits.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (digits, None),
    };
    let groups: Vec<&str> = int.split(',').collect();
    if groups.len() < 2
        || groups[0].is_empty()
        || groups[0].len() > 3
        || groups[1..].iter().any(|g| g.len() != 3)
        || !groups.iter().all(|g| g.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    let mut joined = groups.concat();
    if let Some(f) = frac {
        if f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        joined.push('.');
        joined.push_str(f);
    }
    joined.parse::<f64>().ok().map(|v| sign * v)
}

/// Python timedelta text (`H:MM:SS`, `H:MM:SS.ffffff`, `N day, H:MM:SS`, `N days, H:MM:SS`) or `MM:SS`, in
/// seconds.
pub fn parse_duration(text: &str) -> Option<f64> {
    let t = text.trim();
    let (days, clock) = match t.split_once(',') {
        Some((d, rest)) => {
            let d = d.trim();
            let n = d
                .strip_suffix("days")
                .or_else(|| d.strip_suffix("day"))?
                .trim();
            (n.parse::<f64>().ok()?, rest.trim())
        }
        None => (0.0, t),
    };
    let parts: Vec<&str> = clock.split(':').collect();
    if !(2..=3).contains(&parts.len()) {
        return None;
    }
    let field = |s: &str, max_digits: usize| -> Option<f64> {
        let int = s.split('.').next().unwrap_or("");
        if s.is_empty() || int.is_empty() || int.len() > max_digits || s.starts_with(['-', '+']) {
            return None;
        }
        s.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0)
    };
    let seconds = field(parts[parts.len() - 1], 2)?;
    let minutes = field(parts[parts.len() - 2], 2)?;
    if parts[parts.len() - 2].contains('.') || seconds >= 60.0 || minutes >= 60.0 {
        return None;
    }
    let hours = if parts.len() == 3 {
        let h = parts[0];
        if h.contains('.') {
            return None;
        }
        field(h, 9)?
    } else {
        0.0
    };
    Some(days * 86_400.0 + hours * 3_600.0 + minutes * 60.0 + seconds)
}

/// `2950ms`, `1.5 s`, `12 tokens`: a leading number and a unit made of letters (and `/`).
fn number_with_unit(t: &str) -> Option<CellNumber> {
    let end = t
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E')))
        .map(|(i, _)| i)?;
    // An exponent marker at the cut belongs to the unit, not the number (`5ms` vs `5e3ms`).
    let (mut number, mut unit) = t.split_at(end);
    while number.ends_with(['e', 'E']) {
        unit = &t[number.len() - 1..];
        number = &number[..number.len() - 1];
    }
    let value = number.parse::<f64>().ok()?;
    let unit = unit.trim();
    if unit.is_empty()
        || !unit
            .chars()
            .all(|c| c.is_alphabetic() || c == '/' || c == ' ')
    {
        return None;
    }
    let seconds_per_unit = match unit.to_ascii_lowercase().as_str() {
        "s" | "sec" | "secs" | "seconds" => Some(1.0),
        "ms" => Some(1e-3),
        "us" | "µs" => Some(1e-6),
        "min" | "mins" => Some(60.0),
        "h" | "hr" | "hrs" | "hours" => Some(3600.0),
        _ => None,
    };
    Some(CellNumber {
        value,
        seconds_per_unit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(s: &str) -> Option<f64> {
        parse_cell(s).unwrap().map(|c| c.value)
    }

    #[test]
    fn nulls_numbers_and_separators() {
        assert_eq!(value("nan"), None);
        assert_eq!(value("NaN"), None);
        assert_eq!(value(""), None);
        assert_eq!(value(" 1.5 "), Some(1.5));
        assert_eq!(value("5,856"), Some(5856.0));
        assert_eq!(value("1,234,567.25"), Some(1_234_567.25));
        assert_eq!(value("-1,000"), Some(-1000.0));
        assert_eq!(value("34.3%"), Some(34.3 / 100.0));
        assert_eq!(value("-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_cell("12,34"), Err(NotANumber));
        assert_eq!(parse_cell("abc"), Err(NotANumber));
        assert_eq!(parse_cell("1,2345"), Err(NotANumber));
    }

    #[test]
    fn durations_in_seconds() {
        assert_eq!(parse_duration("0:00:05"), Some(5.0));
        assert_eq!(
            parse_duration("6:48:01"),
            Some(6.0 * 3600.0 + 48.0 * 60.0 + 1.0)
        );
        assert_eq!(parse_duration("1 day, 2:03:04"), Some(86400.0 + 7384.0));
        assert_eq!(
            parse_duration("3 days, 0:00:00.5"),
            Some(3.0 * 86400.0 + 0.5)
        );
        assert_eq!(parse_duration("12:30"), Some(750.0));
        for bad in [
            "1:60:00",
            "1:00:60",
            "x:00:00",
            "1:2:3:4",
            "day, 1:00:00",
            "-1:00:00",
            "1.5:00:00",
        ] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
        let c = parse_cell("1 day, 2:03:04").unwrap().unwrap();
        assert_eq!(c.seconds_per_unit, Some(1.0));
    }

    #[test]
    fn numbers_with_units() {
        let c = parse_cell("2950ms").unwrap().unwrap();
        assert_eq!((c.value, c.seconds_per_unit), (2950.0, Some(1e-3)));
        let c = parse_cell("1.5 s").unwrap().unwrap();
        assert_eq!((c.value, c.seconds_per_unit), (1.5, Some(1.0)));
        let c = parse_cell("12 tokens").unwrap().unwrap();
        assert_eq!((c.value, c.seconds_per_unit), (12.0, None));
        let c = parse_cell("5e3ms").unwrap().unwrap();
        assert_eq!((c.value, c.seconds_per_unit), (5000.0, Some(1e-3)));
        assert_eq!(parse_cell("ms"), Err(NotANumber));
        assert_eq!(parse_cell("12 tokens!"), Err(NotANumber));
    }
}

/// A timestamp as console logs write it, in seconds since the Unix epoch (a time without a zone is
/// taken as UTC: only differences between a log's timestamps are used). Takes RFC 3339 / ISO 8601
/// (`2024-02-02T17:32:13.283Z`, `2025-10-21T16:18:53+08:00`), `2024-02-02 17:32:13[.283]` and
/// `2024/02/02 17:32:13`, a comma before the fraction (Python logging's `17:32:13,283`), inside square
/// brackets or not; `None` for anything else.
pub fn parse_timestamp(text: &str) -> Option<f64> {
    use chrono::{DateTime, NaiveDateTime};
    let t = text
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim();
    // Every form taken starts with a four-digit year and '-' or '/': anything else (the numbers of a
    // console line's other groups) is turned away before the parsers are tried.
    let b = t.as_bytes();
    if b.len() < 10 || !b[..4].iter().all(u8::is_ascii_digit) || !matches!(b[4], b'-' | b'/') {
        return None;
    }
    if let Ok(at) = DateTime::parse_from_rfc3339(t) {
        return Some(at.timestamp_micros() as f64 / 1e6);
    }
    let t = t.replacen(',', ".", 1);
    for format in [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y/%m/%d %H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f%:z",
        "%Y-%m-%d %H:%M:%S%.f%z",
    ] {
        if let Ok(at) = DateTime::parse_from_str(&t, format) {
            return Some(at.timestamp_micros() as f64 / 1e6);
        }
        if let Ok(at) = NaiveDateTime::parse_from_str(&t, format) {
            return Some(at.and_utc().timestamp_micros() as f64 / 1e6);
        }
    }
    None
}

#[cfg(test)]
mod timestamp_tests {
    use super::parse_timestamp;

    #[test]
    fn timestamps_of_common_log_formats() {
        let base = parse_timestamp("2024-04-17 09:42:26").unwrap();
        assert_eq!(base, 1_713_346_946.0);
        assert_eq!(parse_timestamp("[2024-04-17 09:42:26]"), Some(base));
        assert_eq!(parse_timestamp("2024-04-17T09:42:26Z"), Some(base));
        assert_eq!(parse_timestamp("2024-04-17T11:42:26+02:00"), Some(base));
        assert_eq!(parse_timestamp("2024/04/17 09:42:26"), Some(base));
        assert_eq!(
            parse_timestamp("2024-04-17 09:42:26.283"),
            Some(base + 0.283)
        );
        assert_eq!(parse_timestamp("2024-04-17 09:42:26,500"), Some(base + 0.5));
        assert_eq!(parse_timestamp("2024-04-17T09:42:26.25"), Some(base + 0.25));
        assert_eq!(parse_timestamp("17:32:13"), None);
        assert_eq!(parse_timestamp("1.5"), None);
        assert_eq!(parse_timestamp("2024-13-40 99:00:00"), None);
    }
}
