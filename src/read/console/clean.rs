//! What surrounds the fields of a console line, taken off before they are read: ANSI colour codes,
//! progress-bar redraws (`\r`), lines of several writers glued together, launcher and rank tags
//! (`0: `, `[default0]:`, `[rank0]:`, Ray's `(TaskRunner pid=123)`), a leading timestamp (kept as the
//! line's wall time), and bracketed logger tags (`[titan]`, `[NeMo I 2024-05-01 10:00:00 nemo:381]`).

use std::borrow::Cow;

/// One cleaned line (a raw line may give several).
#[derive(Debug, Clone, PartialEq)]
pub struct Line<'a> {
    pub text: Cow<'a, str>,
    /// The timestamp written before the fields, in seconds since the epoch.
    pub wall_time: Option<f64>,
    /// The rank a launcher tagged the line with.
    pub rank: Option<u32>,
    /// Whether the fields start after white space (a record's continuation line).
    pub indented: bool,
}

/// The text without ANSI escape sequences (`ESC [ ... letter`, `ESC ] ... BEL`).
pub fn strip_ansi(line: &str) -> Cow<'_, str> {
    if !line.contains('\u{1b}') {
        return Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('[') => {
                chars.next();
                for d in chars.by_ref() {
                    if d.is_ascii_alphabetic() || d == '~' {
                        break;
                    }
                }
            }
            Some(']') => {
                for d in chars.by_ref() {
                    if d == '\u{7}' {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    Cow::Owned(out)
}

/// Where a timestamp (`2024-04-17 09:42:26`, `2024-04-17T09:42:26.123Z`) starts in `text`, from `from`.
fn find_timestamp(text: &str, from: usize) -> Option<usize> {
    let b = text.as_bytes();
    let mut i = from;
    while i + 19 <= b.len() {
        let at = memchr::memchr(b'-', &b[i..]).map(|p| i + p)?;
        if at >= 4 {
            let s = at - 4;
            let c = &b[s..];
            if c.len() >= 19
                && c[..4].iter().all(u8::is_ascii_digit)
                && c[5..7].iter().all(u8::is_ascii_digit)
                && c[7] == b'-'
                && c[8..10].iter().all(u8::is_ascii_digit)
                && (c[10] == b' ' || c[10] == b'T')
                && c[11..13].iter().all(u8::is_ascii_digit)
                && c[13] == b':'
                && c[16] == b':'
                && (s == 0 || !b[s - 1].is_ascii_digit())
            {
                return Some(s);
            }
        }
        i = at + 1;
    }
    None
}

/// The length of the timestamp at the start of `text` (with fractions and a zone) and its value.
fn leading_timestamp(text: &str) -> Option<(usize, f64)> {
    if find_timestamp(text, 0) != Some(0) {
        return None;
    }
    let b = text.as_bytes();
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
    let value = crate::values::parse_timestamp(&text[..end])?;
    Some((end, value))
}

/// The length of a glog line prefix (`I0706 16:49:36.945926 140110937163584 file.py:559] `): a level
/// letter, month and day, a time, a thread id and the source location up to `] `. It has no year, so
/// it gives no wall time.
fn glog_prefix(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let head_ok = b.len() > 22
        && matches!(b[0], b'I' | b'W' | b'E' | b'F')
        && b[1..5].iter().all(u8::is_ascii_digit)
        && b[5] == b' '
        && b[6..8].iter().all(u8::is_ascii_digit)
        && b[8] == b':'
        && b[11] == b':';
    if !head_ok {
        return None;
    }
    let close = text[..text.len().min(256)].find("] ")?;
    Some(close + 2)
}

/// Takes the launcher's and logger's decorations off the front of `text`.
fn strip_prefixes<'a>(mut text: &'a str, line: &mut Line<'_>) -> &'a str {
    loop {
        let trimmed = text.trim_start();
        // srun --label: `12: `
        let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && digits < 6 && trimmed[digits..].starts_with(": ") {
            line.rank = line.rank.or(trimmed[..digits].parse().ok());
            text = &trimmed[digits + 2..];
            continue;
        }
        // glog's prefix (absl, JAX, MaxText): `I0706 16:49:36.945926 140110937163584 pyconfig.py:559] `.
        if let Some(used) = glog_prefix(trimmed) {
            text = &trimmed[used..];
            continue;
        }
        if let Some((used, value)) = leading_timestamp(trimmed) {
            line.wall_time = line.wall_time.or(Some(value));
            text = trimmed[used..].trim_start_matches([' ', ':']);
            continue;
        }
        if let Some(inner) = trimmed
            .strip_prefix('[')
            .or_else(|| trimmed.strip_prefix('('))
        {
            let close = if trimmed.starts_with('[') { ']' } else { ')' };
            let Some(end) = inner.find(close) else {
                return text;
            };
            let tag = &inner[..end];
            // `[step=1/100]` and `[batch=10/1000]` are fields, not tags.
            let ray = tag.contains(" pid=");
            if tag.contains('=') && !ray {
                return text;
            }
            if let Some(rest) = tag
                .strip_prefix("default")
                .or_else(|| tag.strip_prefix("rank"))
                .or_else(|| tag.strip_prefix("Rank "))
            {
                if let Ok(rank) = rest.trim().parse::<u32>() {
                    line.rank = line.rank.or(Some(rank));
                }
            }
            if let Some(at) = find_timestamp(tag, 0) {
                if let Some((_, value)) = leading_timestamp(&tag[at..]) {
                    line.wall_time = line.wall_time.or(Some(value));
                }
            }
            // A tag is short and holds no field layout of its own.
            if end > 120 || tag.contains('|') {
                return text;
            }
            text = inner[end + 1..].trim_start_matches(':');
            continue;
        }
        return text;
    }
}

/// The cleaned lines of one raw line of a log.
pub fn clean(raw: &str) -> Vec<Line<'_>> {
    match strip_ansi(raw) {
        // Nothing to take out of the middle: the lines borrow from the log's text.
        Cow::Borrowed(plain) => cut(plain, Cow::Borrowed),
        Cow::Owned(plain) => cut(&plain, |text| Cow::Owned(text.to_string())),
    }
}

/// The lines of `plain`, their text made by `text` (borrowed or owned).
fn cut<'s, 'a>(plain: &'s str, text: impl Fn(&'s str) -> Cow<'a, str>) -> Vec<Line<'a>> {
    let mut out = Vec::new();
    for piece in plain.split('\r').filter(|p| !p.trim().is_empty()) {
        // Several writers' lines glued together: a second timestamp starts a new line.
        let mut starts = vec![0];
        let mut from = 1;
        while let Some(at) = find_timestamp(piece, from) {
            let before = piece[..at].trim_end_matches(['[', ' ']);
            if !before.trim().is_empty() && at > starts[starts.len() - 1] + 40 {
                starts.push(at - (piece[..at].len() - piece[..at].trim_end_matches('[').len()));
            }
            from = at + 19;
        }
        starts.push(piece.len());
        for window in starts.windows(2) {
            let part = &piece[window[0]..window[1]];
            let mut line = Line {
                text: Cow::Borrowed(""),
                wall_time: None,
                rank: None,
                indented: false,
            };
            let rest = strip_prefixes(part, &mut line);
            line.indented = rest.starts_with([' ', '\t']) && line.wall_time.is_none();
            let rest = rest.trim();
            if rest.is_empty() {
                continue;
            }
            line.text = text(rest);
            out.push(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(raw: &str) -> Line<'_> {
        let mut lines = clean(raw);
        assert_eq!(lines.len(), 1, "{lines:?}");
        lines.remove(0)
    }

    #[test]
    fn prefixes_and_timestamps() {
        let l = one("\u{1b}[32m[titan] 2025-03-01 10:00:00,000 - root - INFO - \u{1b}[31mstep: 20\u{1b}[39m");
        assert_eq!(l.text, "- root - INFO - step: 20");
        assert_eq!(
            l.wall_time,
            crate::values::parse_timestamp("2025-03-01 10:00:00.000")
        );
        let l = one("0: [default0]: [2024-06-05 14:02:11] iteration 10/100 |");
        assert_eq!(l.text, "iteration 10/100 |");
        assert_eq!(l.rank, Some(0));
        assert!(l.wall_time.is_some());
        let l = one("(TaskRunner pid=2213) step:1 - a:2");
        assert_eq!(l.text, "step:1 - a:2");
        let l = one("[rank3]: using world size: 4");
        assert_eq!((l.text.as_ref(), l.rank), ("using world size: 4", Some(3)));
        let l =
            one("[NeMo I 2024-05-01 10:00:00 nemo_logging:381] Training epoch 0, iteration 3/99");
        assert_eq!(l.text, "Training epoch 0, iteration 3/99");
        assert!(l.wall_time.is_some());
        let l = one("[step=10/739328]");
        assert_eq!(l.text, "[step=10/739328]");
        let l = one("    train/CrossEntropyLoss=11.25");
        assert!(l.indented);
        let l = one("2024-04-17T09:42:26.123Z INFO x=1");
        assert_eq!(l.text, "INFO x=1");
        // A time of day is not a launcher's task number.
        assert_eq!(one("14:02:11 iteration").text, "14:02:11 iteration");
        let l = one("I0706 16:50:30.761657 140110937163584 metric_logger.py:214] completed step: 20, seconds: 0.250");
        assert_eq!(l.text, "completed step: 20, seconds: 0.250");
    }

    #[test]
    fn redraws_and_glued_lines() {
        let lines =
            clean(" 10%|#  | 1/10 [00:01<00:09]\r 20%|##  | 2/10 [00:02<00:08]{'loss': 1.0}");
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1].text, "20%|##  | 2/10 [00:02<00:08]{'loss': 1.0}");
        let lines = clean("[2025-05-01 10:00:00] iteration 1/10 | loss: 2.0 |Setting up a thing [2025-05-01 10:00:01] iteration 2/10 | loss: 1.9 |");
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(lines[1].text, "iteration 2/10 | loss: 1.9 |");
    }
}
