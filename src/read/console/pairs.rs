//! The named values of one console line, whatever its layout.
//!
//! A line is cut into segments at the separators loggers put between fields (`|`, ` - `, `, `, `;`,
//! tabs); each segment is read as a run of words and values: `key: value`, `key=value`, `key value`
//! (`iter 10`, `local batch size 8`), `value key` (`123.45 ms`, `123456 tok/s`), several in a row
//! (`step: 1  loss: 2.3  tps: 6,912`). A Python dict or JSON object printed on the line (`{'loss': 2.1,
//! ...}`) and a tqdm progress bar (`10/200 [00:12<03:40,  1.16s/it]`) are read as what they are.
//! Values carry their decorations: `70,660`, `15.39%`, `5.67s`, `29.11GiB(92.83%)`, `1.2e+03`,
//! `10/100`, `tensor(2.31)`, `[1.2e-05]`; see [`decode`]. Keys, units and words borrow from the line
//! wherever they are written whole in it, so a line is read without allocating per value.

use std::borrow::Cow;

/// A value as a log printed it.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    /// A number, the unit written right after it (`%`, `s`, `ms`, `GiB`, `MODEL_TFLOP/s/GPU`, or ""), and
    /// the total of an `N/M` counter.
    Number {
        value: f64,
        unit: Cow<'a, str>,
        total: Option<f64>,
    },
    /// Anything else (`bf16`, `n/a`, `True`).
    Text(Cow<'a, str>),
}

impl Value<'_> {
    /// The same value, owning its text.
    pub fn into_owned(self) -> Value<'static> {
        match self {
            Value::Number { value, unit, total } => Value::Number {
                value,
                unit: Cow::Owned(unit.into_owned()),
                total,
            },
            Value::Text(t) => Value::Text(Cow::Owned(t.into_owned())),
        }
    }

    /// The unit written against a number ("" for text).
    pub fn unit(&self) -> &str {
        match self {
            Value::Number { unit, .. } => unit,
            Value::Text(_) => "",
        }
    }

    pub fn number(&self) -> Option<f64> {
        match self {
            Value::Number { value, .. } => Some(*value),
            Value::Text(_) => None,
        }
    }
}

/// One named value of a line.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair<'a> {
    pub key: Cow<'a, str>,
    pub value: Value<'a>,
    /// The text of the line a number was read from (`29.11GiB(92.83%)`), where it was one token.
    pub source: Option<&'a str>,
}

impl Pair<'_> {
    /// The same pair, owning its text (to outlive the line it was read from).
    pub fn into_owned(self) -> Pair<'static> {
        Pair {
            key: Cow::Owned(self.key.into_owned()),
            value: self.value.into_owned(),
            source: None,
        }
    }
}

/// A number as a log prints it, and what follows it: `(value, unit, total, rest)`. `None` when `text`
/// does not start with a number. `nan` and `inf` are numbers (not finite ones).
pub fn decode(text: &str) -> Option<(f64, &str, Option<f64>, &str)> {
    let t = text.trim_start();
    for (word, value) in [
        ("-nan", f64::NAN),
        ("nan", f64::NAN),
        ("-inf", f64::NEG_INFINITY),
        ("inf", f64::INFINITY),
    ] {
        if t.as_bytes()
            .get(..word.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(word.as_bytes()))
        {
            let rest = &t[word.len()..];
            if !rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                return Some((value, "", None, rest));
            }
        }
    }
    let (value, used) = leading_number(t)?;
    // `0:53:59`, `12:34`: a duration on a clock (hours, minutes and seconds, or minutes and seconds),
    // in seconds.
    if let Some((seconds, clock_used)) = clock_duration(t) {
        return Some((seconds, "s", None, &t[clock_used..]));
    }
    let mut rest = &t[used..];
    // `10/100`, `10/ 100`: a counter and its total.
    let mut total = None;
    if let Some(after) = rest.strip_prefix('/') {
        let after_spaces = after.trim_start();
        if let Some((n, used)) = leading_number(after_spaces) {
            if after_spaces[used..]
                .chars()
                .next()
                .is_none_or(|c| !c.is_ascii_alphabetic())
            {
                total = Some(n);
                rest = &after_spaces[used..];
            }
        }
    }
    // The unit written against the number: letters, `%`, `/`, `_`, `µ` (and digits after a letter).
    // A rate's unit may start with its `/` (timm's `194.36/s`).
    let rate_unit =
        rest.starts_with('/') && rest[1..].starts_with(|c: char| c.is_alphabetic()) && {
            // Not a key after a `/` between fields (`epoch=0/micro_step=10`).
            let word = rest[1..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '/'))
                .map_or(rest.len(), |e| e + 1);
            !rest[word..].starts_with(['=', ':'])
        };
    let unit_len = rest
        .char_indices()
        .take_while(|(i, c)| {
            c.is_alphabetic()
                || matches!(c, '%' | '_' | 'µ')
                || (*c == '/' && (*i > 0 || rate_unit))
                || (c.is_ascii_digit() && *i > 0)
        })
        .map(|(i, c)| i + c.len_utf8())
        .last()
        .unwrap_or(0);
    let unit = rest[..unit_len].trim_end_matches('/');
    rest = &rest[unit.len()..];
    // `29.11GiB(92.83%)`: a parenthesised note against the value is part of it.
    if rest.starts_with('(') {
        if let Some(close) = rest.find(')') {
            rest = &rest[close + 1..];
        }
    }
    Some((value, unit, total, rest))
}

/// A duration written on a clock at the start of `t`: `H:MM:SS` or `MM:SS` (each later part two
/// digits, the seconds maybe with a fraction), in seconds, and how many bytes it took.
fn clock_duration(t: &str) -> Option<(f64, usize)> {
    let b = t.as_bytes();
    let hours_end = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if hours_end == 0 || hours_end > 3 {
        return None;
    }
    let two = |at: usize| -> Option<f64> {
        let d = b.get(at..at + 2)?;
        d.iter()
            .all(u8::is_ascii_digit)
            .then(|| f64::from((d[0] - b'0') * 10 + (d[1] - b'0')))
    };
    let mut parts = vec![t[..hours_end].parse::<f64>().ok()?];
    let mut at = hours_end;
    while b.get(at) == Some(&b':') && parts.len() < 3 {
        let part = two(at + 1)?;
        if part >= 60.0 {
            return None;
        }
        parts.push(part);
        at += 3;
    }
    if parts.len() < 2 || b.get(at).is_some_and(|c| c.is_ascii_digit() || *c == b':') {
        return None;
    }
    let mut seconds = parts.iter().fold(0.0, |acc, p| acc * 60.0 + p);
    // A fraction of the seconds: `0:00:01.25`.
    if b.get(at) == Some(&b'.') && b.get(at + 1).is_some_and(u8::is_ascii_digit) {
        let (fraction, used) = leading_number(&t[at..])?;
        seconds += fraction;
        at += used;
    }
    Some((seconds, at))
}

/// The number at the start of `t` (`-1,234.5e+03`; a comma only between groups of three digits), and
/// how many bytes it took.
pub(super) fn leading_number(t: &str) -> Option<(f64, usize)> {
    let b = t.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
        i += 1;
    }
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let mut digits = i - int_start;
    // Thousands groups after one to three digits: `70,660`, `1,234,567` (never `1,23`).
    if (1..=3).contains(&digits) {
        while b.get(i) == Some(&b',')
            && b.len() >= i + 4
            && b[i + 1..i + 4].iter().all(u8::is_ascii_digit)
            && !b.get(i + 4).is_some_and(u8::is_ascii_digit)
        {
            i += 4;
            digits += 3;
        }
    }
    if i < b.len() && b[i] == b'.' {
        let frac_start = i + 1;
        let mut j = frac_start;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > frac_start || digits > 0 {
            digits += j - frac_start;
            i = j;
        }
    }
    if digits == 0 {
        return None;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'-' || b[j] == b'+') {
            j += 1;
        }
        let exp_start = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > exp_start {
            i = j;
        }
    }
    let number = &t[..i];
    let value = if number.contains(',') {
        number.replace(',', "").parse::<f64>()
    } else {
        number.parse::<f64>()
    };
    value.ok().map(|v| (v, i))
}

/// The separators between fields: a segment never spans one. `, ` only with a space after it, so
/// `70,660` stays one number; ` - ` only with spaces both sides, so `-1.5` and `dp-size` stay whole.
fn segments<'l>(line: &'l str, extra: &[String]) -> impl Iterator<Item = &'l str> {
    let mut out = Vec::new();
    let b = line.as_bytes();
    let mut start = 0;
    let mut i = 0;
    let mut depth = 0i32; // inside (...) or [...]: `(ms)`, `[(0.9, 0.95)]` stay whole
    while i < b.len() {
        match b[i] {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth = (depth - 1).max(0),
            _ => {}
        }
        // A framework's own separators first (Marian's ` : `), outside brackets.
        let own = (depth == 0)
            .then(|| extra.iter().find(|s| b[i..].starts_with(s.as_bytes())))
            .flatten()
            .map(String::len);
        let cut = own.or(match b[i] {
            b'|' | b'\t' | b';' => Some(1),
            b',' if depth == 0 && b.get(i + 1).is_some_and(|c| *c == b' ') => Some(2),
            b' ' if b.get(i + 1) == Some(&b'-') && b.get(i + 2) == Some(&b' ') => Some(3),
            _ => None,
        });
        if let Some(width) = cut.filter(|_| depth == 0 || b[i] == b'|') {
            out.push(&line[start..i]);
            i += width;
            start = i;
            depth = 0;
            continue;
        }
        i += 1;
    }
    out.push(&line[start..]);
    out.into_iter()
}

/// A token of a segment.
#[derive(Debug)]
pub(super) enum Token<'a> {
    Word(&'a str),
    /// A number, its unit, the total of an `N/M` counter, and the text it was read from.
    Number(f64, &'a str, Option<f64>, &'a str),
    /// `:` or `=` between a key and its value.
    Is,
    /// A parenthesised group of numbers after values, each the running figure of the value it follows
    /// (timm's `Time: 0.659s,  194.36/s  (2.170s,   58.99/s)`): each number, its unit and its text.
    Group(Vec<(f64, &'a str, &'a str)>),
}

fn tokens(segment: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let mut rest = segment;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == '"' || c == '\'');
        if rest.is_empty() {
            break;
        }
        let (token, after) = next_token(rest);
        out.extend(token);
        rest = after;
    }
    out
}

/// The token at the start of `rest` (not empty, white space and quotes taken off), and what follows it.
pub(super) fn next_token(rest: &str) -> (Option<Token<'_>>, &str) {
    let Some(c) = rest.chars().next() else {
        return (None, rest);
    };
    if c == ':' || c == '=' {
        return (Some(Token::Is), &rest[1..]);
    }
    let starts_number = c.is_ascii_digit()
        || ((c == '-' || c == '+' || c == '.')
            && rest[1..].starts_with(|d: char| d.is_ascii_digit() || d == '.'));
    // A timestamp written as a value (`time: 2025-08-20 13:54:19.240802`): seconds since the epoch.
    if c.is_ascii_digit() {
        if let Some((used, value)) = super::stamp::leading(rest) {
            if value >= super::stamp::UNDATED {
                return (
                    Some(Token::Number(value, TIMESTAMP, None, &rest[..used])),
                    &rest[used..],
                );
            }
        }
    }
    if starts_number {
        if let Some((value, unit, total, after)) = decode(rest) {
            let source = &rest[..rest.len() - after.len()];
            return (Some(Token::Number(value, unit, total, source)), after);
        }
    }
    // A bracketed or wrapped number: `[1.2e-05]`, `tensor(2.31)`, `(+nanz)`, a counter with a note
    // inside its bracket (timm's `[  50/10009 (  0%)]`), a range (MXNet's `[100-120]`: its last).
    for open in ["tensor(", "[", "("] {
        if let Some(inner) = rest.strip_prefix(open) {
            if let Some((value, unit, total, after)) = decode(inner) {
                let close = if open == "[" { ']' } else { ')' };
                let mut after = after.trim_start();
                let mut value = value;
                if open == "[" && unit.is_empty() && total.is_none() {
                    if let Some((end, used)) = after
                        .strip_prefix('-')
                        .and_then(|a| leading_number(a).filter(|(_, u)| a[*u..].starts_with(']')))
                    {
                        value = end;
                        after = &after[1 + used..];
                    }
                }
                if open == "[" && after.starts_with('(') {
                    if let Some(note) = after.find(')') {
                        after = after[note + 1..].trim_start();
                    }
                }
                // A time unit written inside the bracket: TensorFlow's `(48.270 sec)`.
                let mut unit = unit;
                if unit.is_empty() {
                    if let Some((word, _)) = after.split_once(close) {
                        if let Some(u) = time_unit_word(word.trim()) {
                            unit = u;
                            after = &after[word.len()..];
                        }
                    }
                }
                if let Some(after) = after.strip_prefix(close) {
                    let source = &rest[..rest.len() - after.len()];
                    return (Some(Token::Number(value, unit, total, source)), after);
                }
            }
        }
    }
    if let Some(group) = number_group(rest) {
        return group;
    }
    // `(step=0007200)`, `[epoch=3]`: a field wrapped in a bracket is the field.
    if let Some(inner) = rest.strip_prefix(['(', '[']) {
        let close = inner.find([')', ']']).unwrap_or(inner.len());
        let head = &inner[..close];
        if inner.starts_with(|c: char| c.is_ascii_alphabetic())
            && head.contains(['=', ':'])
            && !head.contains(' ')
        {
            return (None, inner);
        }
    }
    if let Some(n) = ["nan", "inf", "-nan", "-inf"]
        .iter()
        .find(|w| {
            rest.get(..w.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(w))
                && !rest[w.len()..].starts_with(|d: char| d.is_alphanumeric() || d == '_')
        })
        .map(|w| w.len())
    {
        let (value, _, _, _) = decode(rest).expect("nan and inf decode");
        return (Some(Token::Number(value, "", None, &rest[..n])), &rest[n..]);
    }
    // A word: up to a space, `:` or `=`; a `(...)` group stays whole (`(ms)`, `(TFLOP/s/GPU)`).
    let mut end = 0;
    let mut depth = 0i32;
    for (i, ch) in rest.char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        if depth <= 0 && (ch.is_whitespace() || ch == ':' || ch == '=') && i > 0 {
            break;
        }
        end = i + ch.len_utf8();
        if depth < 0 {
            break;
        }
    }
    let word = rest[..end].trim_matches(|c: char| matches!(c, '"' | '\'' | ',' | '{' | '}'));
    // `Epoch[2]`: a key with its bracketed value glued to it.
    if let Some(open) = word.find('[') {
        let key = &word[..open];
        if open > 0
            && key.chars().all(|c| c.is_alphanumeric() || c == '_')
            && word[open + 1..].starts_with(|c: char| c.is_ascii_digit())
        {
            let at = (word.as_ptr() as usize) - (rest.as_ptr() as usize) + open;
            return (Some(Token::Word(key)), &rest[at..]);
        }
    }
    let word = strip_unmatched(word);
    // `end` is past the first character at least (the loop sets it before it can stop).
    let after = &rest[end..];
    if word.len() >= 2 && word.bytes().all(|b| b == b'.') {
        // Megatron's and DeepSpeed's argument dumps: `seq_length ........ 8192`.
        (Some(Token::Is), after)
    } else if !word.is_empty() {
        (Some(Token::Word(word)), after)
    } else {
        (None, after)
    }
}

/// A parenthesised group of two or more numbers separated by commas, each with its unit, and nothing
/// else: `(2.170s,   58.99/s)`.
fn number_group(rest: &str) -> Option<(Option<Token<'_>>, &str)> {
    let inner = rest.strip_prefix('(')?;
    let close = inner.find(')')?;
    let body = &inner[..close];
    if !body.contains(',') {
        return None;
    }
    let mut numbers = Vec::new();
    for part in body.split(',') {
        let part = part.trim();
        let (value, unit, total, after) = decode(part)?;
        if total.is_some() || !after.trim().is_empty() {
            return None;
        }
        let used = part.len() - after.len();
        numbers.push((value, unit, &part[..used]));
    }
    (numbers.len() >= 2).then(|| (Some(Token::Group(numbers)), &inner[close + 1..]))
}

/// `[step` → `step`, `step]` → `step`, `][batch` → `batch`, `(ms)` kept.
fn strip_unmatched(word: &str) -> &str {
    let mut w = word;
    if !(w.starts_with('[') && w.ends_with(']')) {
        w = w.trim_matches(['[', ']']);
    }
    loop {
        let before = w;
        for (open, close) in [('[', ']'), ('(', ')')] {
            let opens = w.matches(open).count();
            let closes = w.matches(close).count();
            if opens > closes {
                w = w.strip_prefix(open).unwrap_or(w);
            } else if closes > opens {
                w = w.strip_suffix(close).unwrap_or(w);
            }
        }
        if w == before {
            return w;
        }
    }
}

/// Words that never start a key: a log level, a logger's decoration, a leading `Using`.
fn is_noise(word: &str) -> bool {
    matches!(
        word.to_ascii_uppercase().as_str(),
        "INFO" | "WARNING" | "WARN" | "DEBUG" | "ERROR" | "CRITICAL" | "TRACE" | "NOTICE"
            // A sentence's verb: `Using 2 GPUs` names its count `GPUs`.
            | "USING"
            // The dash between a logger's prefix and its message (PaddleNLP's `[INFO] - loss: 0.86`).
            | "-"
    )
}

/// Whether `unit` is a time unit written as a word after a number (`123.45 ms`).
fn time_unit_word(word: &str) -> Option<&'static str> {
    match word.to_ascii_lowercase().as_str() {
        "s" | "sec" | "secs" | "second" | "seconds" => Some("s"),
        "ms" | "msec" | "milliseconds" => Some("ms"),
        "us" | "µs" | "microseconds" => Some("us"),
        _ => None,
    }
}

/// The named values of `segment`.
fn segment_pairs<'a>(segment: &'a str, out: &mut Vec<Pair<'a>>) {
    let tokens = tokens(segment);
    let mut key: Vec<&'a str> = Vec::new();
    let mut is = false;
    let mut pending_number: Option<(f64, &'a str, Option<f64>, &'a str)> = None;
    let first = out.len();
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            Token::Word(w) => {
                if let Some((value, unit, total, source)) = pending_number.take() {
                    // `3609/130860 iters Epoch: [4] ...`: the value's name is the one word before the
                    // next key.
                    if matches!(tokens.get(i + 1), Some(Token::Word(_)))
                        && matches!(tokens.get(i + 2), Some(Token::Is))
                    {
                        out.push(Pair {
                            key: Cow::Borrowed(w),
                            value: Value::Number {
                                value,
                                unit: Cow::Borrowed(unit),
                                total,
                            },
                            source: Some(source),
                        });
                        i += 1;
                        continue;
                    }
                    // `123.45 ms`, `123456 tok/s`, `45.6% bf16 MFU`: the value before its name, to
                    // the segment's end.
                    let rest: Vec<&str> = tokens[i..]
                        .iter()
                        .filter_map(|t| match t {
                            Token::Word(w) => Some(*w),
                            _ => None,
                        })
                        .collect();
                    if tokens[i..].iter().all(|t| matches!(t, Token::Word(_))) {
                        let (unit, name) = match time_unit_word(rest[0]) {
                            Some(u) if unit.is_empty() && rest.len() == 1 => {
                                (Cow::Borrowed(u), Cow::Owned(format!("time ({u})")))
                            }
                            _ => (Cow::Borrowed(unit), joined(&rest)),
                        };
                        out.push(Pair {
                            key: name,
                            value: Value::Number { value, unit, total },
                            source: Some(source),
                        });
                        return;
                    }
                }
                if is && !key.is_empty() {
                    // `dtype: bf16`: a word as a value.
                    out.push(Pair {
                        key: joined(&key),
                        value: Value::Text(Cow::Borrowed(w)),
                        source: None,
                    });
                    key.clear();
                    is = false;
                } else if key.is_empty() && out.len() == first && is_noise(w) {
                    // a log level before the first key
                } else if !key.is_empty()
                    && out.len() > first
                    && matches!(tokens.get(i.wrapping_sub(1)), Some(Token::Number(..)))
                {
                    key = vec![w];
                } else {
                    // A bare time unit after a value (`iter time: 123.45 ms (step)`) is that value's,
                    // and so is a rate's (`Speed: 4599.27 samples/sec`).
                    if key.is_empty() && out.len() > first {
                        let rate = (w.contains('/')
                            && w.split('/').all(|p| p.chars().any(char::is_alphabetic)))
                        .then_some(*w);
                        if let (
                            Some(u),
                            Some(Pair {
                                value: Value::Number { unit, .. },
                                ..
                            }),
                        ) = (time_unit_word(w).or(rate), out.last_mut())
                        {
                            if unit.is_empty() {
                                *unit = Cow::Borrowed(u);
                                i += 1;
                                continue;
                            }
                        }
                    }
                    if key.len() >= 8 {
                        key.remove(0);
                    }
                    key.push(w);
                }
            }
            Token::Is => {
                if !key.is_empty() {
                    is = true;
                }
            }
            Token::Group(numbers) => {
                if let Some((value, unit, total, source)) = pending_number.take() {
                    out.extend(keyless(value, unit, total, source, out));
                }
                // Each number is the running figure of one of the values just before the group
                // (running figures themselves aside).
                let values: Vec<usize> = (first..out.len())
                    .chain(0..first)
                    .filter(|j| !out[*j].key.ends_with(BRACKETED))
                    .collect();
                let mut values: Vec<usize> = values;
                values.sort_unstable();
                let k = numbers.len().min(values.len());
                let of = values[values.len() - k..].to_vec();
                for (j, (value, unit, source)) in numbers.iter().rev().take(k).rev().enumerate() {
                    let name = format!("{}{BRACKETED}", out[of[j]].key);
                    out.push(Pair {
                        key: Cow::Owned(name),
                        value: Value::Number {
                            value: *value,
                            unit: Cow::Borrowed(unit),
                            total: None,
                        },
                        source: Some(source),
                    });
                }
            }
            Token::Number(value, unit, total, source) => {
                if key.is_empty() {
                    let bracketed = source.starts_with(['[', '(']);
                    if out.len() == first
                        && pending_number.is_none()
                        && !(bracketed && total.is_some() && !out.is_empty())
                    {
                        pending_number = Some((*value, unit, *total, source));
                    } else {
                        if let Some((value, unit, total, source)) = pending_number.take() {
                            out.extend(keyless(value, unit, total, source, out));
                        }
                        out.extend(keyless(*value, unit, *total, source, out));
                    }
                } else {
                    // `epoch=0/micro_step=250`: the `/` between fields is not the key's.
                    let name = match joined(&key) {
                        Cow::Borrowed(k) => match k.trim_start_matches(['/', ',', '.']) {
                            "" => Cow::Borrowed(k),
                            trimmed => Cow::Borrowed(trimmed),
                        },
                        Cow::Owned(k) => match k.trim_start_matches(['/', ',', '.']) {
                            "" => Cow::Owned(k),
                            trimmed => Cow::Owned(trimmed.to_string()),
                        },
                    };
                    out.push(Pair {
                        key: name,
                        value: Value::Number {
                            value: *value,
                            unit: Cow::Borrowed(unit),
                            total: *total,
                        },
                        source: Some(source),
                    });
                    key.clear();
                    is = false;
                }
            }
        }
        i += 1;
    }
    // A rate alone in its segment (`185.72/s`) is named by its unit.
    if let Some((value, unit, total, source)) = pending_number {
        out.extend(keyless(value, unit, total, source, out));
    }
}

/// The pair a number written without a key makes, after the line's pairs `before`: a bracketed
/// counter (`Epoch: [0]  [  10/1251]`) is the line's `batch`; another bracketed number is the running
/// figure of the value before it (`loss: 3.0572 (3.0572)`); a rate is named by its unit (`194.36/s`,
/// `Speed: ... 36126.64 samples/sec` has a key); anything else is no pair.
fn keyless<'a>(
    value: f64,
    unit: &'a str,
    total: Option<f64>,
    source: &'a str,
    before: &[Pair<'a>],
) -> Option<Pair<'a>> {
    let number = |key: Cow<'a, str>| Pair {
        key,
        value: Value::Number {
            value,
            unit: Cow::Borrowed(unit),
            total,
        },
        source: Some(source),
    };
    if source.starts_with(['[', '(']) {
        if total.is_some() {
            let taken = before.iter().any(|p| p.key == COUNTER);
            return (!taken).then(|| number(Cow::Borrowed(COUNTER)));
        }
        let last = before.last()?;
        if last.key.ends_with(BRACKETED) {
            return None;
        }
        return Some(number(Cow::Owned(format!("{}{BRACKETED}", last.key))));
    }
    if unit.contains('/') {
        let name = if unit.starts_with('/') {
            Cow::Owned(format!("rate{unit}"))
        } else {
            Cow::Borrowed(unit)
        };
        return Some(Pair {
            key: name,
            value: Value::Number {
                value,
                unit: Cow::Borrowed(""),
                total,
            },
            source: Some(source),
        });
    }
    None
}

/// The unit of a value that is a timestamp: seconds since the epoch.
pub const TIMESTAMP: &str = "timestamp";

/// The name of a counter written in brackets without a key, after an epoch's (`Epoch: [0]  [
/// 10/1251]`, `Epoch [1][50/14659]`, `Train: [0/300][100/195]`): the batch within the epoch.
pub const COUNTER: &str = "batch";

/// What a running figure printed in brackets after a value is named: the value's key and this.
pub const BRACKETED: &str = " (bracketed)";

/// Words of a key as one: a single word borrowed, several joined with spaces.
fn joined<'a>(words: &[&'a str]) -> Cow<'a, str> {
    match words {
        [one] => Cow::Borrowed(one),
        _ => Cow::Owned(words.join(" ")),
    }
}

/// The pairs of a Python dict or JSON object printed on a line, from `{` to its `}`.
fn dict_pairs<'a>(text: &'a str, out: &mut Vec<Pair<'a>>) -> bool {
    let Some(open) = text.find('{') else {
        return false;
    };
    let inner = &text[open + 1..];
    let close = inner.rfind('}').unwrap_or(inner.len());
    let inner = &inner[..close];
    let mut found = false;
    let mut rest = inner;
    while let Some(q) = rest.find(['\'', '"']) {
        let quote = rest.as_bytes()[q];
        let after = &rest[q + 1..];
        let Some(end) = after.find(quote as char) else {
            break;
        };
        let key = &after[..end];
        let after = after[end + 1..].trim_start();
        let Some(after) = after.strip_prefix(':') else {
            rest = &rest[q + 1 + end + 1..];
            continue;
        };
        let after = after.trim_start();
        // The value runs to the next `, '` / `, "` at depth 0, or the end.
        let mut depth = 0i32;
        let mut stop = after.len();
        let mut in_quote: Option<char> = None;
        for (i, c) in after.char_indices() {
            match (in_quote, c) {
                (Some(q), c) if c == q => in_quote = None,
                (Some(_), _) => {}
                (None, '\'' | '"') => in_quote = Some(c),
                (None, '(' | '[' | '{') => depth += 1,
                (None, ')' | ']' | '}') => depth -= 1,
                (None, ',') if depth <= 0 => {
                    stop = i;
                    break;
                }
                _ => {}
            }
        }
        let raw = after[..stop].trim();
        let (value, source) = match tokens(raw).as_slice() {
            [Token::Number(v, unit, total, source)] => (
                Value::Number {
                    value: *v,
                    unit: Cow::Borrowed(unit),
                    total: *total,
                },
                Some(*source),
            ),
            _ => (
                Value::Text(Cow::Borrowed(raw.trim_matches(['\'', '"']))),
                None,
            ),
        };
        out.push(Pair {
            key: Cow::Borrowed(key),
            value,
            source,
        });
        found = true;
        rest = &after[stop.min(after.len())..];
    }
    found
}

/// A tqdm progress bar: `  5%|▌    | 10/200 [00:12<03:40,  1.16s/it]`: the counter, the elapsed time
/// (seconds) and the rate.
fn progress_bar<'a>(text: &'a str, out: &mut Vec<Pair<'a>>) -> Option<usize> {
    let bracket = text.find(" [")?;
    // A bar whose description says it loads or prepares something (`Loading checkpoint shards:
    // 100%|...| 2/2`, `Map: ...`) counts files or examples, not steps: it is no pairs at all.
    let description = text[..bracket].trim_start();
    // The description begins with a whole word of the list: `Map:` and `Map (num_proc=2):`, not
    // `Mapping`.
    let begins = |b: &str| {
        description.strip_prefix(b).is_some_and(|rest| {
            b.ends_with(' ') || !rest.starts_with(|c: char| c.is_alphanumeric())
        })
    };
    if super::vocabulary::vocabulary()
        .setup_bars
        .iter()
        .any(|b| begins(b))
        && description.contains('|')
    {
        return Some(text.len());
    }
    let inner = &text[bracket + 2..];
    let close = inner.find(']')?;
    let inside = &inner[..close];
    let (elapsed, rest) = inside.split_once('<')?;
    let seconds = clock_seconds(elapsed.trim())?;
    let counter = text[..bracket].rsplit(['|', ' ']).next()?;
    let (n, m) = counter.split_once('/')?;
    let n: f64 = n.trim().parse().ok()?;
    let m: Option<f64> = m.trim().parse().ok();
    out.push(Pair {
        key: "progress".into(),
        value: Value::Number {
            value: n,
            unit: Cow::Borrowed(""),
            total: m,
        },
        source: None,
    });
    out.push(Pair {
        key: "progress elapsed".into(),
        value: Value::Number {
            value: seconds,
            unit: "s".into(),
            total: None,
        },
        source: None,
    });
    // Lightning's bar (NeMo 1.x) puts its logged metrics after the rate, inside the brackets:
    // `[06:19<07:13, reduced_train_loss=11.50, global_step=5.000, train_step_timing in s=49.50]`.
    for piece in rest.split(',').skip(1) {
        if piece.contains('=') {
            segment_pairs(piece, out);
        }
    }
    if let Some((_, rate)) = rest.split_once(',') {
        let rate = rate.split(',').next().unwrap_or(rate).trim();
        if let Some(r) = rate.strip_suffix("s/it") {
            if let Ok(v) = r.trim().parse::<f64>() {
                out.push(Pair {
                    key: "progress s/it".into(),
                    value: Value::Number {
                        value: v,
                        unit: "s".into(),
                        total: None,
                    },
                    source: None,
                });
            }
        } else if let Some(r) = rate.strip_suffix("it/s") {
            if let Ok(v) = r.trim().parse::<f64>() {
                out.push(Pair {
                    key: "progress it/s".into(),
                    value: Value::Number {
                        value: v,
                        unit: Cow::Borrowed(""),
                        total: None,
                    },
                    source: None,
                });
            }
        }
    }
    Some(bracket + 2 + close + 1)
}

/// Keras's progress bar: `  1/285 [..........] - ETA: 1:46 - loss: 4.1062` and `285/285 [=====] - 13s
/// 46ms/step - loss: ...`: the counter as `progress`; how much of the line it took.
fn keras_bar<'a>(text: &'a str, out: &mut Vec<Pair<'a>>) -> Option<usize> {
    let start = text.len() - text.trim_start().len();
    let rest = &text[start..];
    let (value, unit, total, after) = decode(rest)?;
    let total = total?;
    if !unit.is_empty() {
        return None;
    }
    let bar = after.strip_prefix(" [")?;
    let close = bar.find(']')?;
    if close == 0
        || !bar[..close]
            .bytes()
            .all(|b| matches!(b, b'=' | b'>' | b'.'))
    {
        return None;
    }
    let source = &rest[..rest.len() - after.len()];
    out.push(Pair {
        key: "progress".into(),
        value: Value::Number {
            value,
            unit: Cow::Borrowed(""),
            total: Some(total),
        },
        source: Some(source),
    });
    Some(text.len() - bar[close + 1..].len())
}

/// `01:02:03` or `02:03` in seconds.
fn clock_seconds(text: &str) -> Option<f64> {
    let mut seconds = 0.0;
    let mut parts = 0;
    for part in text.split(':') {
        seconds = seconds * 60.0 + part.parse::<f64>().ok()?;
        parts += 1;
    }
    (2..=3).contains(&parts).then_some(seconds)
}

/// The named values of a cleaned line (see [`super::clean`]), in the order written.
pub fn pairs(line: &str) -> Vec<Pair<'_>> {
    pairs_with(line, &[])
}

/// [`pairs`] with a framework's own field separators besides the usual ones.
pub fn pairs_with<'l>(line: &'l str, separators: &[String]) -> Vec<Pair<'l>> {
    let mut out = Vec::new();
    let mut text = line;
    if let Some(used) = progress_bar(text, &mut out) {
        text = &text[used..];
    } else if let Some(used) = keras_bar(text, &mut out) {
        text = &text[used..];
    }
    if let Some(open) = unquoted_brace(text) {
        let before = &text[..open];
        let mut dict = Vec::new();
        if dict_pairs(&text[open..], &mut dict) {
            for segment in segments(before, separators) {
                segment_pairs(segment, &mut out);
            }
            out.extend(dict);
            return out;
        }
    }
    for segment in segments(text, separators) {
        if !list_pairs(segment, &mut out) {
            segment_pairs(segment, &mut out);
        }
    }
    out
}

/// A printed list of three or more numbers and nothing else (`[2.68, 2.84, 63.6, 0, 0.0001]`): its
/// positions as pairs `#1`, `#2`, ...
fn list_pairs<'a>(segment: &'a str, out: &mut Vec<Pair<'a>>) -> bool {
    let Some(inner) = segment
        .trim()
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
    else {
        return false;
    };
    let mut items = Vec::new();
    for item in inner.split(',') {
        let item = item.trim();
        match decode(item) {
            Some((value, "", None, "")) => items.push((value, item)),
            _ => return false,
        }
    }
    if items.len() < 3 {
        return false;
    }
    let first = out.iter().filter(|p| p.key.starts_with('#')).count();
    for (k, (value, source)) in items.into_iter().enumerate() {
        out.push(Pair {
            key: Cow::Owned(format!("#{}", first + k + 1)),
            value: Value::Number {
                value,
                unit: Cow::Borrowed(""),
                total: None,
            },
            source: Some(source),
        });
    }
    true
}

/// Whether `c` opens a quoted value after `before`: only where a value can start (after `=`, `:`, a
/// bracket, a comma or a space, or at the start of the text, given as a space), so an apostrophe inside
/// a word (`it's`) does not.
pub(super) fn opens_quote(before: char, c: char) -> bool {
    (c == '\'' || c == '"') && "=:([{, ".contains(before)
}

/// Where the line's first dict opens: a `{` that is not inside a quoted value (fairseq's
/// `eval_bleu_args='{"iter_decode_max_iter": 0}', fp16=True` is a string, and the pairs after it are
/// the line's).
fn unquoted_brace(text: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    let mut previous = ' ';
    for (i, c) in text.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if opens_quote(previous, c) => quote = Some(c),
            None if c == '{' => return Some(i),
            None => {}
        }
        previous = c;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys_values(line: &str) -> Vec<(String, Option<f64>, String)> {
        pairs(line)
            .into_iter()
            .map(|p| match p.value {
                Value::Number { value, unit, .. } => {
                    (p.key.into_owned(), Some(value), unit.into_owned())
                }
                Value::Text(t) => (p.key.into_owned(), None, t.into_owned()),
            })
            .collect()
    }

    fn kv(k: &str, v: f64, u: &str) -> (String, Option<f64>, String) {
        (k.to_string(), Some(v), u.to_string())
    }

    #[test]
    fn a_brace_inside_a_quoted_value_is_no_dict() {
        assert_eq!(unquoted_brace(r#"a='{"x": 1}', b=2 {'loss': 1}"#), Some(18));
        assert_eq!(unquoted_brace("it's {'loss': 1}"), Some(5));
        assert_eq!(unquoted_brace("a='{'"), None);
        // The pairs after a quoted dict are the line's.
        let keys: Vec<String> = keys_values(r#"args='{"x": 1}', fp16=True, world_size=8"#)
            .into_iter()
            .map(|(k, ..)| k)
            .collect();
        assert!(keys.contains(&"world_size".to_string()), "{keys:?}");
    }

    #[test]
    fn decorated_values() {
        assert_eq!(decode("70,660"), Some((70660.0, "", None, "")));
        assert_eq!(decode("15.39%"), Some((15.39, "%", None, "")));
        assert_eq!(decode("5.67s"), Some((5.67, "s", None, "")));
        assert_eq!(decode("29.11GiB(92.83%)"), Some((29.11, "GiB", None, "")));
        assert_eq!(
            decode("1190.8MODEL_TFLOP/s/GPU"),
            Some((1190.8, "MODEL_TFLOP/s/GPU", None, ""))
        );
        assert_eq!(decode("1.2e+03"), Some((1200.0, "", None, "")));
        assert_eq!(decode("10/  100 |"), Some((10.0, "", Some(100.0), " |")));
        assert_eq!(decode("1,23"), Some((1.0, "", None, ",23")));
        assert!(decode("abc").is_none());
        assert!(decode("nan").unwrap().0.is_nan());
        assert!(decode("nanz").is_none());
    }

    #[test]
    fn layouts() {
        assert_eq!(
            keys_values(
                "step: 20  loss:  7.1234  memory: 35.12GiB(44.36%)  tps: 6,912  mfu: 32.93%"
            ),
            vec![
                kv("step", 20.0, ""),
                kv("loss", 7.1234, ""),
                kv("memory", 35.12, "GiB"),
                kv("tps", 6912.0, ""),
                kv("mfu", 32.93, "%")
            ]
        );
        assert_eq!(
            keys_values("step:1 - actor/entropy:0.5 - timing_s/step:45.6 - perf/mfu/actor:0.12"),
            vec![
                kv("step", 1.0, ""),
                kv("actor/entropy", 0.5, ""),
                kv("timing_s/step", 45.6, ""),
                kv("perf/mfu/actor", 0.12, "")
            ]
        );
        assert_eq!(
            keys_values(" iteration       10/     100 | consumed samples:          640 | elapsed time per iteration (ms): 1234.5 | lm loss: 1.234567E+01 |"),
            vec![
                kv("iteration", 10.0, ""),
                kv("consumed samples", 640.0, ""),
                kv("elapsed time per iteration (ms)", 1234.5, ""),
                kv("lm loss", 12.34567, "")
            ]
        );
        assert_eq!(
            keys_values("iter 10: loss 4.2100, time 120.50ms, mfu 30.12%"),
            vec![
                kv("iter", 10.0, ""),
                kv("loss", 4.21, ""),
                kv("time", 120.5, "ms"),
                kv("mfu", 30.12, "%")
            ]
        );
        assert_eq!(
            keys_values("step    1/19560 | loss 11.0 (+nanz)| norm 1.2 | 123.45 ms | 45.6% bf16 MFU | 123456 tok/s"),
            vec![
                kv("step", 1.0, ""),
                kv("loss", 11.0, ""),
                kv("norm", 1.2, ""),
                kv("time (ms)", 123.45, "ms"),
                kv("bf16 MFU", 45.6, "%"),
                kv("tok/s", 123456.0, "")
            ]
        );
        assert_eq!(
            keys_values("Epoch 1 | iter 10 step 5 | loss train: 2.345, val: n/a | iter time: 123.45 ms (step)"),
            vec![
                kv("Epoch", 1.0, ""),
                kv("iter", 10.0, ""),
                kv("step", 5.0, ""),
                kv("loss train", 2.345, ""),
                ("val".into(), None, "n/a".into()),
                kv("iter time", 123.45, "ms")
            ]
        );
        assert_eq!(
            keys_values("Training starts at step 1, with local batch size 8, global batch size 64, sequence length 2048"),
            vec![
                kv("Training starts at step", 1.0, ""),
                kv("with local batch size", 8.0, ""),
                kv("global batch size", 64.0, ""),
                kv("sequence length", 2048.0, "")
            ]
        );
        assert_eq!(
            keys_values("completed step: 10, seconds: 1.234, TFLOP/s/device: 123.4, Tokens/s/device: 4567.8, loss: 2.345"),
            vec![
                kv("completed step", 10.0, ""),
                kv("seconds", 1.234, ""),
                kv("TFLOP/s/device", 123.4, ""),
                kv("Tokens/s/device", 4567.8, ""),
                kv("loss", 2.345, "")
            ]
        );
        assert_eq!(
            keys_values("step=10, skipped=0, lr=[1.2e-05], mom=[(0.9, 0.95)]"),
            vec![
                kv("step", 10.0, ""),
                kv("skipped", 0.0, ""),
                kv("lr", 1.2e-05, ""),
                ("mom".into(), None, "[(0.9, 0.95)]".into()),
            ]
        );
    }

    fn keys(line: &str) -> Vec<(String, Option<f64>)> {
        keys_values(line)
            .into_iter()
            .map(|(k, v, _)| (k, v))
            .collect()
    }

    #[test]
    fn epochs_counters_and_running_figures_in_brackets() {
        // torchvision's MetricLogger (DeiT, DINO, MAE): the counter after the epoch, the running
        // figure after each value.
        let k = keys("Epoch: [0]  [  10/1251]  eta: 1:26:30  lr: 0.000010  loss: 2.7759 (2.7459)  time: 4.1824  data: 0.1293  max mem: 58204");
        assert_eq!(k[0], ("Epoch".into(), Some(0.0)));
        assert_eq!(k[1], ("batch".into(), Some(10.0)));
        assert!(k.contains(&("loss".into(), Some(2.7759))));
        assert!(k.contains(&("loss (bracketed)".into(), Some(2.7459))));
        assert!(k.contains(&("time".into(), Some(4.1824))));
        assert!(k.contains(&("max mem".into(), Some(58204.0))));
        // timm: a note inside the counter's bracket, a rate with no name, a group of running figures.
        let k = keys("Train: 1 [5000/10009 ( 50%)]  Loss:  6.562404 (6.6660)  Time: 0.689s,  185.72/s  (1.177s,  108.73/s)  LR: 1.000e-04  Data: 0.020 (0.480)");
        assert_eq!(k[0], ("Train".into(), Some(1.0)));
        assert_eq!(k[1], ("batch".into(), Some(5000.0)));
        for want in [
            ("Loss (bracketed)", 6.666),
            ("Time", 0.689),
            ("rate/s", 185.72),
            ("Time (bracketed)", 1.177),
            ("rate/s (bracketed)", 108.73),
            ("Data (bracketed)", 0.48),
        ] {
            assert!(
                k.contains(&(want.0.into(), Some(want.1))),
                "{want:?} in {k:?}"
            );
        }
        // MMCV, Swin, MXNet, PaddleDetection, MindFormers, MiniMind, DiT.
        let k = keys("Epoch [2][500/14659]\tlr: 2.000e-02, eta: 1 day, 20:56:45, time: 0.850, data_time: 0.203");
        assert_eq!(
            &k[..2],
            &[("Epoch".into(), Some(2.0)), ("batch".into(), Some(500.0))]
        );
        let k = keys("Train: [0/300][100/195]\teta 0:00:24 lr 0.000007\t wd 0.0500\ttime 0.2371 (0.2627)\tloss 6.9 (7.0)");
        assert_eq!(
            &k[..2],
            &[("Train".into(), Some(0.0)), ("batch".into(), Some(100.0))]
        );
        assert!(
            k.contains(&("time (bracketed)".into(), Some(0.2627))),
            "{k:?}"
        );
        let k = keys("Epoch[2] Batch [100-120]\tSpeed: 36126.64 samples/sec\taccuracy=nan");
        assert_eq!(
            &k[..3],
            &[
                ("Epoch".into(), Some(2.0)),
                ("Batch".into(), Some(120.0)),
                ("Speed".into(), Some(36126.64))
            ]
        );
        let k = keys("3609/130860 iters Epoch: [4] [   700/727] learning_rate: 0.000100 loss_class: 0.725972");
        assert_eq!(
            &k[..3],
            &[
                ("iters".into(), Some(3609.0)),
                ("Epoch".into(), Some(4.0)),
                ("batch".into(), Some(700.0))
            ]
        );
        let k = keys("{ Epoch:[  1/ 10], step:[    6/ 1625], loss: 1.332, per_step_time: 1472ms, lr: 9.2e-08");
        assert_eq!(
            &k[..3],
            &[
                ("Epoch".into(), Some(1.0)),
                ("step".into(), Some(6.0)),
                ("loss".into(), Some(1.332))
            ]
        );
        let k =
            keys("Epoch:[1/1](2160/4292), loss: 0.5431, dpo_loss: 0.5431, epoch_time: 3.000min");
        assert_eq!(
            &k[..2],
            &[("Epoch".into(), Some(1.0)), ("batch".into(), Some(2160.0))]
        );
        let k = keys("(step=0007200) Train Loss: 0.1619, Train Steps/Sec: 1.45");
        assert_eq!(
            k,
            [
                ("step".into(), Some(7200.0)),
                ("Train Loss".into(), Some(0.1619)),
                ("Train Steps/Sec".into(), Some(1.45))
            ]
        );
    }

    #[test]
    fn dicts_and_progress_bars() {
        assert_eq!(
            keys_values(" 5%|▌    | 10/200 [00:12<03:40,  1.16s/it]{'loss': 2.1234, 'grad_norm': tensor(1.5), 'learning_rate': 5e-05, 'epoch': 0.1}"),
            vec![
                kv("progress", 10.0, ""),
                kv("progress elapsed", 12.0, "s"),
                kv("progress s/it", 1.16, "s"),
                kv("loss", 2.1234, ""),
                kv("grad_norm", 1.5, ""),
                kv("learning_rate", 5e-05, ""),
                kv("epoch", 0.1, "")
            ]
        );
        assert_eq!(
            keys_values(r#"{"step": 3, "name": "x, y", "loss": 1.5}"#),
            vec![
                kv("step", 3.0, ""),
                ("name".into(), None, "x, y".into()),
                kv("loss", 1.5, "")
            ]
        );
        // Lightning's bar (NeMo 1.x) with its metrics inside the brackets, after the rate.
        assert_eq!(
            keys_values("Epoch 0: :  47%|####      | 7/15 [06:19<07:13, 2.5s/it, reduced_train_loss=11.50, global_step=5.000, train_step_timing in s=49.50]"),
            vec![
                kv("progress", 7.0, ""),
                kv("progress elapsed", 379.0, "s"),
                kv("reduced_train_loss", 11.5, ""),
                kv("global_step", 5.0, ""),
                kv("train_step_timing in s", 49.5, ""),
                kv("progress s/it", 2.5, "s"),
            ]
        );
        // A bar of a training phase whose name begins like a set-up word is still a bar.
        assert_eq!(
            keys_values("Mapping: 10%|#   | 10/100 [00:10<01:30,  1.00s/it]")[0],
            kv("progress", 10.0, "")
        );
        // A bar that loads shards is no pairs at all.
        assert!(keys_values(
            "Loading checkpoint shards: 100%|##########| 2/2 [00:03<00:00,  1.62s/it]"
        )
        .is_empty());
    }
}
