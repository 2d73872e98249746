//! JSON Lines (`.jsonl`, `.ndjson`): one JSON object per line, read with polars.
//!
//! Flat lines (the usual case) go through [`super::flat_json`]; anything else is handed whole to polars. Only when polars refuses it are the lines checked one by
//! one, to say which line and column is wrong: a torn last line (a run killed mid-write) is dropped with a
//! warning; any other bad line is an error, or, with `--skip-bad-rows`, dropped and reported.

use std::io::Cursor;

use super::bytes::line_ranges;

use polars::prelude::*;

/// A line that was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reject {
    /// 1-based line number in the (decompressed) input.
    pub line: usize,
    /// 1-based column of the first bad character, when known.
    pub column: Option<usize>,
    pub reason: String,
    /// The line as it was (cut at 1000 bytes).
    pub text: String,
}

/// The error for a read that met `bad` lines (in file order) without `--skip-bad-rows`: where the first is,
/// why, and how many there are; `unit` names them ("lines", "rows").
pub(crate) fn bad_lines_error(bad: &[Reject], unit: &str) -> String {
    let first = &bad[0];
    let at = match first.column {
        Some(column) => format!("line {}, column {column}", first.line),
        None => format!("line {}", first.line),
    };
    let hint = if bad.len() > 1 {
        format!(
            " ({} bad {unit} in all; --skip-bad-rows skips them)",
            bad.len()
        )
    } else {
        " (--skip-bad-rows skips it)".to_string()
    };
    format!("{at}: {}{hint}", first.reason)
}

/// The outcome of reading JSON Lines.
#[derive(Debug)]
pub struct JsonlRead {
    pub frame: DataFrame,
    /// A torn last line that was dropped.
    pub torn: Option<Reject>,
    /// Bad lines dropped under `skip_bad`.
    pub rejects: Vec<Reject>,
}

/// Parses JSON Lines, as [`read_checked`] without dropping any line but a torn last one.
pub fn read(bytes: Vec<u8>) -> Result<DataFrame, String> {
    read_checked(bytes, false).map(|r| r.frame)
}

/// Lines whose types decide the schema on the fast path.
const INFER_LINES: usize = 10_000;

/// Parses with the schema inferred from the first lines; when a later line disagrees (an integer column
/// that turns fractional, a field that first appears late), again with the schema inferred from every line.
fn parse(bytes: &[u8]) -> PolarsResult<DataFrame> {
    if let Some(df) = super::flat_json::parse(bytes) {
        return Ok(df);
    }
    let read = |lines: Option<std::num::NonZeroUsize>| {
        super::guard::catch_panic(|| {
            JsonReader::new(Cursor::new(bytes))
                .with_json_format(JsonFormat::JsonLines)
                .infer_schema_len(lines)
                .finish()
        })
        .unwrap_or_else(|message| Err(PolarsError::ComputeError(message.into())))
    };
    match read(std::num::NonZeroUsize::new(INFER_LINES)) {
        // polars ignores keys its schema lacks: a key first seen after the sampled lines needs the full pass.
        Ok(df) if !has_unknown_keys(bytes, &df) => Ok(df),
        _ => read(None),
    }
}

/// Whether any line has a top-level key that is not a column of `df`. A cheap scan, not a parser: every
/// `"...":` is taken for a key, so a nested key or a string value that ends in `":` counts too, which only
/// costs a slower full parse. Keys are compared as raw bytes; a key written with escapes also just costs the
/// slow path.
fn has_unknown_keys(bytes: &[u8], df: &DataFrame) -> bool {
    let known: Vec<&[u8]> = df
        .get_column_names()
        .into_iter()
        .map(|c| c.as_str().as_bytes())
        .collect();
    let is_known = |key: &[u8]| known.contains(&key);
    // Scanned in parallel halves of the file, cut at line ends.
    let chunks = line_ranges(bytes, rayon::current_num_threads().max(1) * 2);
    use rayon::prelude::*;
    chunks.into_par_iter().any(|range| {
        let chunk = &bytes[range];
        let mut from = 0;
        while let Some(offset) = chunk[from..].iter().position(|b| *b == b':') {
            let colon = from + offset;
            from = colon + 1;
            let mut end = colon;
            while end > 0 && chunk[end - 1].is_ascii_whitespace() {
                end -= 1;
            }
            if end == 0 || chunk[end - 1] != b'"' {
                continue;
            }
            let close = end - 1;
            let Some(open) = chunk[..close].iter().rposition(|b| *b == b'"') else {
                continue;
            };
            if !is_known(&chunk[open + 1..close]) {
                return true;
            }
        }
        false
    })
}

/// JSON Lines read line by line with serde_json, for valid input polars' reader refuses: one column per
/// top-level key in first-seen order; a key whose values are all booleans is Boolean, all integers Int64,
/// all numbers Float64, else String, where a nested object or array is its JSON text (as a flat line's
/// nested value is) and a number or boolean among strings its JSON text too. Slower than polars by far,
/// and only taken when polars gave up.
pub fn frame_from_values(bytes: &[u8]) -> Result<DataFrame, String> {
    use serde_json::Value;
    let mut keys: Vec<String> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut cells: Vec<Vec<Option<Value>>> = Vec::new();
    let mut rows = 0usize;
    for raw in bytes.split(|b| *b == b'\n') {
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Value::Object(object) =
            serde_json::from_slice::<Value>(raw).map_err(|e| e.to_string())?
        else {
            return Err("a line is not a JSON object".into());
        };
        for (key, value) in object {
            let at = *index.entry(key.clone()).or_insert_with(|| {
                keys.push(key);
                cells.push(Vec::new());
                cells.len() - 1
            });
            cells[at].resize(rows, None);
            cells[at].push((!value.is_null()).then_some(value));
        }
        rows += 1;
    }
    let columns: Vec<Column> = keys
        .iter()
        .zip(cells.iter_mut())
        .map(|(key, values)| {
            values.resize(rows, None);
            let present = || values.iter().flatten();
            let name: PlSmallStr = key.as_str().into();
            if present().all(Value::is_boolean) {
                Column::new(
                    name,
                    values
                        .iter()
                        .map(|v| v.as_ref().and_then(Value::as_bool))
                        .collect::<Vec<_>>(),
                )
            } else if present().all(Value::is_i64) {
                Column::new(
                    name,
                    values
                        .iter()
                        .map(|v| v.as_ref().and_then(Value::as_i64))
                        .collect::<Vec<_>>(),
                )
            } else if present().all(Value::is_number) {
                Column::new(
                    name,
                    values
                        .iter()
                        .map(|v| v.as_ref().and_then(Value::as_f64))
                        .collect::<Vec<_>>(),
                )
            } else {
                let text = |v: &Value| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                Column::new(
                    name,
                    values
                        .iter()
                        .map(|v| v.as_ref().map(text))
                        .collect::<Vec<_>>(),
                )
            }
        })
        .collect();
    DataFrame::new(rows, columns).map_err(|e| e.to_string())
}

/// Parses JSON Lines. A field that first appears late, or is an integer early and a float later, is read
/// correctly (see [`parse`]). With `skip_bad`, malformed lines are dropped and
/// returned instead of failing the read.
pub fn read_checked(bytes: Vec<u8>, skip_bad: bool) -> Result<JsonlRead, String> {
    read_checked_from(bytes, skip_bad, 1)
}

/// [`read_checked`] for lines that start at line `first_line` of their file (a block of a larger input):
/// line numbers in errors and rejects are the file's.
pub fn read_checked_from(
    bytes: Vec<u8>,
    skip_bad: bool,
    first_line: usize,
) -> Result<JsonlRead, String> {
    let bytes = match bytes.strip_prefix(b"\xef\xbb\xbf") {
        Some(rest) => rest.to_vec(),
        None => bytes,
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(JsonlRead {
            frame: DataFrame::empty(),
            torn: None,
            rejects: Vec::new(),
        });
    }
    // A frame with no columns from bytes that are not blank means polars skipped what it could not read
    // (binary data): check the lines as for an error.
    let polars_error = match parse(&bytes) {
        Ok(frame) if frame.width() > 0 => {
            return Ok(JsonlRead {
                frame,
                torn: None,
                rejects: Vec::new(),
            })
        }
        Ok(_) => "no JSON object found".to_string(),
        Err(e) => e.to_string(),
    };
    // Find the bad lines.
    let mut bad: Vec<Reject> = Vec::new();
    let mut last_content_line = 0;
    for (i, raw) in bytes.split(|b| *b == b'\n').enumerate() {
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        last_content_line = i + first_line;
        let reject = |column: Option<usize>, reason: String| Reject {
            line: i + first_line,
            column,
            reason,
            text: String::from_utf8_lossy(&raw[..raw.len().min(1000)]).into_owned(),
        };
        match serde_json::from_slice::<serde_json::Value>(raw) {
            Ok(v) if v.is_object() => {}
            Ok(_) => bad.push(reject(Some(1), "not a JSON object".into())),
            Err(e) => {
                let reason = e.to_string();
                let reason = reason
                    .split(" at line ")
                    .next()
                    .unwrap_or(&reason)
                    .to_string();
                bad.push(reject(Some(e.column()), reason));
            }
        }
    }
    if bad.is_empty() {
        // Every line is a JSON object, so the file is valid, whatever polars' reader made of it (a key
        // that is an object on one line and a number on the next, a key twice in a nested object).
        return frame_from_values(&bytes)
            .map(|frame| JsonlRead {
                frame,
                torn: None,
                rejects: Vec::new(),
            })
            .map_err(|e| format!("{polars_error}; read line by line: {e}"));
    }
    // Only a last line that follows good lines is torn; a file that is all bad is just bad.
    let ends_with_newline = bytes.ends_with(b"\n");
    let torn = match bad.last() {
        Some(r) if r.line == last_content_line && !ends_with_newline && r.line > 1 => bad.pop(),
        _ => None,
    };
    if !bad.is_empty() && !skip_bad {
        // Every JSONL reject carries its column.
        return Err(bad_lines_error(&bad, "lines"));
    }
    let dropped: Vec<usize> = bad.iter().chain(torn.iter()).map(|r| r.line).collect();
    let mut kept = Vec::with_capacity(bytes.len());
    for (i, raw) in bytes.split(|b| *b == b'\n').enumerate() {
        if !dropped.contains(&(i + first_line)) {
            kept.extend_from_slice(raw);
            kept.push(b'\n');
        }
    }
    let frame = if kept.iter().all(u8::is_ascii_whitespace) {
        DataFrame::empty()
    } else {
        parse(&kept).map_err(|e| e.to_string())?
    };
    Ok(JsonlRead {
        frame,
        torn,
        rejects: bad,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn valid_json_that_polars_refuses_is_read_line_by_line() {
        // A key that is an object on one line and a number on the next; a key twice in a nested object.
        let text = "{\"step\": 1, \"cfg\": {\"a\": 1, \"a\": 2}, \"ok\": true, \"x\": 5e-324}\n{\"step\": 2, \"cfg\": 5, \"ok\": null, \"x\": 2}\n";
        let frame = super::read(text.as_bytes().to_vec()).unwrap();
        assert_eq!(frame.height(), 2);
        let step = frame.column("step").unwrap().i64().unwrap().clone();
        assert_eq!(step.iter().collect::<Vec<_>>(), [Some(1), Some(2)]);
        let cfg = frame.column("cfg").unwrap().str().unwrap();
        assert_eq!(
            cfg.iter().collect::<Vec<_>>(),
            [Some("{\"a\":2}"), Some("5")]
        );
        let ok = frame.column("ok").unwrap().bool().unwrap();
        assert_eq!(ok.iter().collect::<Vec<_>>(), [Some(true), None]);
        let x = frame.column("x").unwrap().f64().unwrap();
        assert_eq!(x.iter().collect::<Vec<_>>(), [Some(5e-324), Some(2.0)]);
    }

    /// Where polars reads a file, the line-by-line reading gives the same frame.
    #[test]
    fn line_by_line_agrees_with_polars() {
        let text = "{\"step\": 1, \"t\": 1.5, \"name\": \"a\", \"ok\": false}\n{\"step\": 2, \"t\": 2, \"name\": null, \"late\": 3}\n";
        let polars = super::read(text.as_bytes().to_vec()).unwrap();
        let ours = super::frame_from_values(text.as_bytes()).unwrap();
        assert!(polars.equals_missing(&ours), "{polars}\n{ours}");
    }

    use super::*;

    #[test]
    fn torn_last_line_is_dropped_with_its_line_number() {
        let r = read_checked(b"{\"a\":1}\n{\"a\":2}\n{\"a\":".to_vec(), false).unwrap();
        assert_eq!(r.frame.height(), 2);
        assert_eq!(r.torn.unwrap().line, 3);
    }

    #[test]
    fn a_bad_line_elsewhere_names_line_and_column() {
        let err = read_checked(b"{\"a\":1}\n{\"a\" 2}\n{\"a\":3}\n".to_vec(), false).unwrap_err();
        assert!(err.starts_with("line 2, column 6:"), "{err}");
        let r = read_checked(b"{\"a\":1}\n{\"a\" 2}\n[1]\n{\"a\":3}\n".to_vec(), true).unwrap();
        assert_eq!(r.frame.height(), 2);
        let lines: Vec<usize> = r.rejects.iter().map(|x| x.line).collect();
        assert_eq!(lines, [2, 3]);
        assert_eq!(r.rejects[1].reason, "not a JSON object");
    }

    #[test]
    fn binary_data_is_an_error_at_line_one() {
        let err = read_checked(vec![0, 159, 146, 150, 255, 1, 2, 3], false).unwrap_err();
        assert!(err.starts_with("line 1, column 1:"), "{err}");
    }

    #[test]
    fn late_type_changes_and_late_fields_are_read() {
        let mut text = String::new();
        for i in 0..(INFER_LINES + 5) {
            text.push_str(&format!("{{\"a\":{i}}}\n"));
        }
        text.push_str("{\"a\":1.5,\"b\":\"late\"}\n");
        let df = read_checked(text.into_bytes(), false).unwrap().frame;
        assert_eq!(df.height(), INFER_LINES + 6);
        let a = df.column("a").unwrap().cast(&DataType::Float64).unwrap();
        assert_eq!(a.f64().unwrap().get(INFER_LINES + 5), Some(1.5));
        assert_eq!(
            df.column("b").unwrap().str().unwrap().get(INFER_LINES + 5),
            Some("late")
        );
    }

    #[test]
    fn a_key_first_seen_after_the_sample_is_kept() {
        let mut text = String::new();
        for i in 0..(INFER_LINES + 5) {
            text.push_str(&format!("{{\"a\":{i},\"t\":\"0:00:{:02}\"}}\n", i % 60));
        }
        text.push_str("{\"a\":1, \"late key\" : \"here\"}\n");
        let df = read_checked(text.into_bytes(), false).unwrap().frame;
        assert_eq!(df.get_column_names(), ["a", "t", "late key"]);
        assert_eq!(
            df.column("late key")
                .unwrap()
                .str()
                .unwrap()
                .get(INFER_LINES + 5),
            Some("here")
        );
    }

    #[test]
    fn bom_and_crlf_are_fine() {
        let r = read_checked(b"\xef\xbb\xbf{\"a\":1}\r\n{\"a\":2}\r\n".to_vec(), false).unwrap();
        assert_eq!(r.frame.height(), 2);
    }
}
