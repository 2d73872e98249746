//! What surrounds the fields of a console line, taken off before they are read: ANSI colour codes,
//! progress-bar redraws (`\r`), lines of several writers glued together, launcher and rank tags
//! (`0: `, `[default0]:`, `[rank0]:`, Ray's `(TaskRunner pid=123)`), a leading timestamp (kept as the
//! line's wall time), and bracketed logger tags (`[titan]`, `[NeMo I 2024-05-01 10:00:00 nemo:381]`).

use std::borrow::Cow;

use super::stamp;

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
    /// Whether a tag taken off says the line is an evaluation's (Marian's `[valid]`).
    pub evaluation: bool,
}

/// The text without ANSI escape sequences (`ESC [ ... letter`, `ESC ] ... BEL`), the text between them
/// copied a run at a time.
pub fn strip_ansi(line: &str) -> Cow<'_, str> {
    if memchr::memchr(0x1b, line.as_bytes()).is_none() {
        return Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    strip_ansi_into(line, &mut out, &mut Vec::new());
    Cow::Owned(out)
}

/// [`strip_ansi`] into `out` (cleared first), for a caller that reuses one buffer line after line.
fn strip_ansi_into(line: &str, out: &mut String, segments: &mut Vec<(usize, usize)>) {
    out.clear();
    segments.clear();
    segments.push((0, 0));
    let b = line.as_bytes();
    let Some(first) = memchr::memchr(0x1b, b) else {
        out.push_str(line);
        return;
    };
    out.push_str(&line[..first]);
    let mut at = first;
    while at < b.len() {
        // `at` is on an ESC: skip the sequence it starts.
        let mut next = at + 1;
        match b.get(next) {
            Some(b'[') => {
                next += 1;
                while next < b.len() && !(b[next].is_ascii_alphabetic() || b[next] == b'~') {
                    next += 1;
                }
                next = (next + 1).min(b.len());
            }
            Some(b']') => {
                next = memchr::memchr(0x07, &b[next..]).map_or(b.len(), |p| next + p + 1);
            }
            _ => {}
        }
        // Sequences end on ASCII bytes, so `next` is on a character boundary.
        let end = memchr::memchr(0x1b, &b[next..]).map_or(b.len(), |p| next + p);
        segments.push((out.len(), next));
        out.push_str(&line[next..end]);
        at = end;
    }
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
    let close = memchr::memmem::find(&b[..b.len().min(256)], b"] ")?;
    Some(close + 2)
}

/// The levels of loggers, written before a timestamp by some (`INFO    24-10-19 18:47:38.013589`).
const LEVELS: [&str; 9] = [
    "INFO", "WARNING", "WARN", "DEBUG", "ERROR", "CRITICAL", "TRACE", "NOTICE", "FATAL",
];

/// The length of a level word, the separators after it and the timestamp after them, and the
/// timestamp's value.
fn level_then_stamp(text: &str) -> Option<(usize, f64)> {
    let level = LEVELS.iter().find(|l| text.starts_with(**l))?;
    let rest = &text[level.len()..];
    let after = rest.trim_start_matches([' ', '\t', ':', '-', '|']);
    if after.len() == rest.len() {
        return None;
    }
    let (used, value) = stamp::leading(after)?;
    Some((text.len() - after.len() + used, value))
}

/// The length of a logger's name and level before its message: Python logging's basic layout
/// `INFO:root:` (MXNet), `d2.utils.events INFO:` (detectron2, PaddleDetection, LiBai), and `- mmdet -
/// INFO - ` / `- mindformers[file.py:316] - INFO - ` / `- INFO - ` after a timestamp.
fn logger_prefix(text: &str) -> Option<usize> {
    let name_char = |c: char| c.is_alphanumeric() || matches!(c, '_' | '.' | '<' | '>' | '-');
    // `INFO:root:`
    for level in LEVELS {
        if let Some(rest) = text.strip_prefix(level).and_then(|r| r.strip_prefix(':')) {
            let name = rest.find(|c: char| !name_char(c)).unwrap_or(rest.len());
            if name > 0 && rest[name..].starts_with(':') {
                return Some(level.len() + 1 + name + 1);
            }
        }
    }
    // `d2.utils.events INFO:`
    let name = text.find(|c: char| !name_char(c)).unwrap_or(text.len());
    if name > 0 && text[name..].starts_with(' ') {
        let rest = &text[name + 1..];
        for level in LEVELS {
            if rest.starts_with(level) && rest[level.len()..].starts_with(':') {
                return Some(name + 1 + level.len() + 1);
            }
        }
    }
    // `- mmdet - INFO - `, `- INFO - `: fields of a logger's layout up to the level.
    let mut at = usize::from(text.starts_with("- ")) * 2;
    for _ in 0..3 {
        let rest = &text[at..];
        let field_end = rest.find(" - ")?;
        let field = rest[..field_end].trim();
        if LEVELS.contains(&field) {
            return Some(at + field_end + 3);
        }
        if field.is_empty() || field.contains(' ') || field.len() > 80 {
            return None;
        }
        at += field_end + 3;
    }
    None
}

/// The timestamp inside a logger's bracketed tag (`[2024-05-01 10:00:00,123]`, `[03/08 14:32:46]`,
/// `[NeMo I 2024-05-01 10:00:00 nemo_logging:381]`): at its start or at the start of one of its words.
fn stamp_in_tag(tag: &str) -> Option<f64> {
    let b = tag.as_bytes();
    (0..b.len())
        .filter(|&at| {
            b[at].is_ascii_digit() && (at == 0 || matches!(b[at - 1], b' ' | b'[' | b'('))
        })
        .find_map(|at| stamp::leading(&tag[at..]).map(|(_, v)| v))
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
        // glog's prefix (absl, JAX, MaxText): `I0706 16:49:36.945926 140110937163584 pyconfig.py:559] `,
        // whose time has no year.
        if let Some(used) = glog_prefix(trimmed) {
            line.wall_time = line.wall_time.or_else(|| stamp::glog(&trimmed[1..]));
            text = &trimmed[used..];
            continue;
        }
        if let Some((used, value)) = stamp::leading(trimmed) {
            line.wall_time = line.wall_time.or(Some(value));
            text = trimmed[used..].trim_start_matches([' ', ':']);
            continue;
        }
        if let Some(used) = logger_prefix(trimmed) {
            text = &trimmed[used..];
            continue;
        }
        // A level word before the timestamp: `INFO    24-10-19 18:47:38.013589 - ...`,
        // `INFO:2026-03-05 23:25:42,758: ...`. Taken off only with the timestamp after it.
        if let Some((used, value)) = level_then_stamp(trimmed) {
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
            if let Some(value) = stamp_in_tag(tag) {
                line.wall_time = line.wall_time.or(Some(value));
            }
            // A tag is short and holds no field layout of its own.
            if end > 120 || tag.contains('|') {
                return text;
            }
            let lower = tag.to_ascii_lowercase();
            line.evaluation |= ["valid", "eval"].iter().any(|w| lower.contains(w));
            text = inner[end + 1..].trim_start_matches(':');
            continue;
        }
        return text;
    }
}

/// The cleaned lines of one raw line of a log.
pub fn clean(raw: &str) -> Vec<Line<'_>> {
    let mut cleaner = Cleaner::default();
    cleaner.clean(raw);
    cleaner
        .places
        .iter()
        .map(|place| Line {
            text: if cleaner.coloured {
                Cow::Owned(cleaner.text(raw, place).to_string())
            } else {
                Cow::Borrowed(&raw[place.start..place.end])
            },
            wall_time: place.wall_time,
            rank: place.rank,
            indented: place.indented,
            evaluation: place.evaluation,
        })
        .collect()
}

/// Where a cleaned line's text is (in the raw line, or in the cleaner's copy of it without colour
/// codes), and what cleaning found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Place {
    start: usize,
    end: usize,
    pub wall_time: Option<f64>,
    pub rank: Option<u32>,
    pub indented: bool,
    pub evaluation: bool,
}

/// [`clean`] with its buffers kept from line to line (the reader's pass allocates nothing per line).
#[derive(Debug, Default)]
pub struct Cleaner {
    plain: String,
    coloured: bool,
    /// Where each run of the plain text between colour codes starts, in it and in the raw line.
    segments: Vec<(usize, usize)>,
    starts: Vec<usize>,
    pub places: Vec<Place>,
}

impl Cleaner {
    /// Cleans `raw` into [`Cleaner::places`].
    pub fn clean(&mut self, raw: &str) {
        self.places.clear();
        self.coloured = memchr::memchr(0x1b, raw.as_bytes()).is_some();
        if self.coloured {
            strip_ansi_into(raw, &mut self.plain, &mut self.segments);
        }
        let plain: &str = if self.coloured { &self.plain } else { raw };
        let base = plain.as_ptr() as usize;
        for piece in plain.split('\r').filter(|p| !p.trim().is_empty()) {
            // Several writers' lines glued together: a second timestamp starts a new line.
            self.starts.clear();
            self.starts.push(0);
            let mut from = 1;
            while let Some(at) = stamp::find_timestamp(piece, from) {
                let before = piece[..at].trim_end_matches(['[', ' ']);
                // A timestamp that is a field's value (`time: 2025-08-20 13:54:19`) glues nothing.
                let value = before.ends_with([':', '=']);
                if !value
                    && !before.trim().is_empty()
                    && at > self.starts[self.starts.len() - 1] + 40
                {
                    self.starts
                        .push(at - (piece[..at].len() - piece[..at].trim_end_matches('[').len()));
                }
                from = at + 19;
            }
            self.starts.push(piece.len());
            for window in self.starts.windows(2) {
                let part = &piece[window[0]..window[1]];
                let mut line = Line {
                    text: Cow::Borrowed(""),
                    wall_time: None,
                    rank: None,
                    indented: false,
                    evaluation: false,
                };
                let rest = strip_prefixes(part, &mut line);
                let indented = rest.starts_with([' ', '\t']) && line.wall_time.is_none();
                let rest = rest.trim();
                if rest.is_empty() {
                    continue;
                }
                let start = rest.as_ptr() as usize - base;
                self.places.push(Place {
                    start,
                    end: start + rest.len(),
                    wall_time: line.wall_time,
                    rank: line.rank,
                    indented,
                    evaluation: line.evaluation,
                });
            }
        }
    }

    /// The text of a cleaned line of `raw` (the line last cleaned).
    pub fn text<'a>(&'a self, raw: &'a str, place: &Place) -> &'a str {
        if self.coloured {
            &self.plain[place.start..place.end]
        } else {
            &raw[place.start..place.end]
        }
    }

    /// Whether `raw` (the line last cleaned) is one line, as a raw line's template needs: no redraws,
    /// no lines glued together.
    pub fn one_line(&self, raw: &str) -> bool {
        self.places.len() == 1 && !raw.contains('\r')
    }

    /// The text of the line last cleaned, with its colour codes: what a template over its raw line
    /// sees.
    pub fn plain<'a>(&'a self, raw: &'a str) -> &'a str {
        if self.coloured {
            &self.plain
        } else {
            raw
        }
    }

    /// The same text in `raw` (the line last cleaned) as `part`, a slice of one of its cleaned lines,
    /// where no colour code cuts it.
    pub fn raw_of<'a>(&self, raw: &'a str, part: &str) -> Option<&'a str> {
        if !self.coloured {
            let start = (part.as_ptr() as usize).checked_sub(raw.as_ptr() as usize)?;
            return raw.get(start..start + part.len());
        }
        let start = (part.as_ptr() as usize).checked_sub(self.plain.as_ptr() as usize)?;
        let end = start + part.len();
        if end > self.plain.len() {
            return None;
        }
        let at = self.segments.partition_point(|(plain, _)| *plain <= start) - 1;
        let (plain, from) = self.segments[at];
        let segment_end = self.segments.get(at + 1).map_or(self.plain.len(), |s| s.0);
        (end <= segment_end)
            .then(|| raw.get(from + start - plain..from + end - plain))
            .flatten()
    }
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
        assert_eq!(l.text, "step: 20");
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
        // A time of day is a clock without a date, not a launcher's task number.
        let l = one("14:02:11 iteration");
        assert_eq!((l.text.as_ref(), l.rank), ("iteration", None));
        assert_eq!(l.wall_time, Some(14.0 * 3600.0 + 2.0 * 60.0 + 11.0));
        // Other layouts, after a level word, inside a tag with colour codes.
        let l = one("1: INFO    24-10-19 18:47:38.013589 - 0:00:49 - step: 1  loss: 2.1");
        assert_eq!(
            (l.text.as_ref(), l.rank),
            ("- 0:00:49 - step: 1  loss: 2.1", Some(1))
        );
        assert_eq!(
            l.wall_time,
            crate::values::parse_timestamp("2024-10-19 18:47:38.013589")
        );
        let l = one("INFO:2026-03-05 23:25:42,758: step 3 loss 1.2");
        assert_eq!(l.text, "step 3 loss 1.2");
        assert!(l.wall_time.is_some());
        let l = one("[\u{1b}[34m2025-04-26 11:36:52\u{1b}[0m] (step=0007200) Train Loss: 0.1619");
        assert_eq!(l.text, "(step=0007200) Train Loss: 0.1619");
        assert!(l.wall_time.is_some());
        let l = one("[03/09 03:09:27] lb.utils.events INFO:  eta: 0:53:59  iteration: 646/117188");
        assert!(l.wall_time.is_some_and(|t| t < super::stamp::UNDATED));
        assert_eq!(l.text, "eta: 0:53:59  iteration: 646/117188");
        assert_eq!(
            one("INFO:root:Epoch[0] Batch [80]\tSpeed: 4599.27 samples/sec").text,
            "Epoch[0] Batch [80]\tSpeed: 4599.27 samples/sec"
        );
        assert_eq!(
            one("2021-03-26 10:27:24,985 - mmdet - INFO - Epoch [1][50/14659]\tlr: 1.9e-03").text,
            "Epoch [1][50/14659]\tlr: 1.9e-03"
        );
        assert_eq!(
            one("2024-07-25 18:28:41,166 - mindformers[mindformers/core/callback/callback.py:316] - INFO - { Epoch:[  1/ 10]").text,
            "{ Epoch:[  1/ 10]"
        );
        let l = one("2023/06/13 17:31:08 - mmengine - INFO - Epoch(train) [1][ 50/1000]");
        assert_eq!(
            l.wall_time,
            crate::values::parse_timestamp("2023-06-13 17:31:08")
        );
        let l = one("I0706 16:50:30.761657 140110937163584 metric_logger.py:214] completed step: 20, seconds: 0.250");
        assert_eq!(l.text, "completed step: 20, seconds: 0.250");
    }

    #[test]
    fn the_plain_timestamp_reader_gives_chronos_value() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..20_000 {
            let fraction = match next(4) {
                0 => String::new(),
                1 => format!(",{:03}", next(1000)),
                2 => format!(".{:06}", next(1_000_000)),
                _ => format!(".{:09}", next(1_000_000_000)),
            };
            let text = format!(
                "{:04}-{:02}-{:02}{}{:02}:{:02}:{:02}{fraction}",
                1900 + next(300),
                1 + next(12),
                1 + next(31),
                if next(2) == 0 { ' ' } else { 'T' },
                next(24),
                next(60),
                next(60)
            );
            let chrono = crate::values::parse_timestamp(&text);
            match stamp::plain_timestamp(&text) {
                Some(v) => assert_eq!(Some(v), chrono, "{text}"),
                None => assert!(chrono.is_none() || !text.is_char_boundary(19), "{text}"),
            }
        }
        // Found by the console_lines fuzz target: a timestamp's last digits cut by a multi-byte
        // character.
        for text in [
            "2024-01-02 03:04:0\u{fffd} x",
            "2024-01-02 03:04:\u{fffd}",
            "[2024-01-02 03:04:05\u{fffd}]",
        ] {
            let _ = clean(text);
        }
        assert_eq!(clean("2024-01-02 03:04:0\u{fffd}=1")[0].wall_time, None);
        // And a glog prefix whose 256-byte window ends inside a character.
        let _ = clean(&format!("I0706 16:49:36.945926 1 {}", "é".repeat(200)));
        assert_eq!(strip_ansi("a\u{1b}[31mb\u{1b}]0;t\u{7}c\u{1b}"), "abc");
        assert_eq!(strip_ansi("é\u{1b}[1;2mè"), "éè");
    }

    #[test]
    fn a_slice_of_a_cleaned_line_is_found_in_the_raw_line_unless_a_colour_code_cuts_it() {
        let raw = "\u{1b}[32m[titan] 2025-03-01 10:00:00,000 - \u{1b}[31mstep: 20 \u{1b}[1;2mloss: 2.5\u{1b}[39m";
        let mut cleaner = Cleaner::default();
        cleaner.clean(raw);
        let text = cleaner.text(raw, &cleaner.places[0]);
        assert_eq!(text, "- step: 20 loss: 2.5");
        for part in ["step: 20", "loss: 2.5", "20", "2.5"] {
            let at = text.find(part).unwrap();
            assert_eq!(cleaner.raw_of(raw, &text[at..at + part.len()]), Some(part));
        }
        let at = text.find("20 loss").unwrap();
        assert_eq!(cleaner.raw_of(raw, &text[at..at + 7]), None);
        let plain = "step: 20 loss: 2.5";
        cleaner.clean(plain);
        let text = cleaner.text(plain, &cleaner.places[0]);
        assert_eq!(cleaner.raw_of(plain, &text[9..]), Some("loss: 2.5"));
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
