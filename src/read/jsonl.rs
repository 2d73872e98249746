//! JSON Lines (`.jsonl`, `.ndjson`): one JSON object per line, read with polars.
//!
//! The fast path hands the whole file to polars. Only when polars refuses it are the lines checked one by
//! one, to say which line and column is wrong: a torn last line (a run killed mid-write) is dropped with a
//! warning; any other bad line is an error, or, with `--skip-bad-rows`, dropped and reported.

use std::io::Cursor;

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

fn parse(bytes: Vec<u8>) -> PolarsResult<DataFrame> {
    JsonReader::new(Cursor::new(bytes))
        .with_json_format(JsonFormat::JsonLines)
        .infer_schema_len(None)
        .finish()
}

/// Parses JSON Lines. The schema is inferred from every line, so a field that first appears late, or is an
/// integer early and a float later, is read correctly. With `skip_bad`, malformed lines are dropped and
/// returned instead of failing the read.
pub fn read_checked(bytes: Vec<u8>, skip_bad: bool) -> Result<JsonlRead, String> {
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
    let polars_error = match parse(bytes.clone()) {
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
        last_content_line = i + 1;
        let reject = |column: Option<usize>, reason: String| Reject {
            line: i + 1,
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
        return Err(polars_error);
    }
    // Only a last line that follows good lines is torn; a file that is all bad is just bad.
    let ends_with_newline = bytes.ends_with(b"\n");
    let torn = match bad.last() {
        Some(r) if r.line == last_content_line && !ends_with_newline && r.line > 1 => bad.pop(),
        _ => None,
    };
    if !bad.is_empty() && !skip_bad {
        let first = &bad[0];
        return Err(format!(
            "line {}, column {}: {}{}",
            first.line,
            first.column.unwrap_or(1),
            first.reason,
            if bad.len() > 1 {
                format!(
                    " ({} bad lines in all; --skip-bad-rows skips them)",
                    bad.len()
                )
            } else {
                " (--skip-bad-rows skips it)".to_string()
            }
        ));
    }
    let dropped: Vec<usize> = bad.iter().chain(torn.iter()).map(|r| r.line).collect();
    let mut kept = Vec::with_capacity(bytes.len());
    for (i, raw) in bytes.split(|b| *b == b'\n').enumerate() {
        if !dropped.contains(&(i + 1)) {
            kept.extend_from_slice(raw);
            kept.push(b'\n');
        }
    }
    let frame = if kept.iter().all(u8::is_ascii_whitespace) {
        DataFrame::empty()
    } else {
        parse(kept).map_err(|e| e.to_string())?
    };
    Ok(JsonlRead {
        frame,
        torn,
        rejects: bad,
    })
}

#[cfg(test)]
mod tests {
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
    fn bom_and_crlf_are_fine() {
        let r = read_checked(b"\xef\xbb\xbf{\"a\":1}\r\n{\"a\":2}\r\n".to_vec(), false).unwrap();
        assert_eq!(r.frame.height(), 2);
    }
}
