//! CSV and TSV, read with polars: a header row, then one row per record.
//!
//! Plain rows go through [`super::flat_csv`]. Otherwise, as for JSON Lines, polars reads the file; only when it refuses are the records checked one by one, so a
//! ragged row is reported by line (or, with `--skip-bad-rows`, dropped and reported).

use std::io::Cursor;

use polars::prelude::*;

use super::jsonl::Reject;

/// Rows whose types decide the schema on the fast path.
pub(crate) const INFER_ROWS: usize = 10_000;

/// Parses with types inferred from the first rows; when a later row disagrees (an integer column that
/// turns fractional), again with types inferred from every row.
fn parse(bytes: &[u8], separator: u8) -> PolarsResult<DataFrame> {
    match polars_csv(bytes, separator, Some(INFER_ROWS), None) {
        Ok(df) => Ok(df),
        Err(_) => polars_csv(bytes, separator, None, None),
    }
}

/// Parses with the named columns read as Float64 whatever their cells look like: for a block of a
/// streamed file whose float column holds only integers there, so that `-0` stays -0.0, as it is when the
/// whole file is read (a float column parses `-0` as a float; an integer column as 0).
pub fn parse_with_floats(
    bytes: &[u8],
    separator: u8,
    floats: &[PlSmallStr],
) -> PolarsResult<DataFrame> {
    let schema: Schema = floats
        .iter()
        .map(|name| Field::new(name.clone(), DataType::Float64))
        .collect();
    polars_csv(bytes, separator, Some(INFER_ROWS), Some(Arc::new(schema)))
}

/// polars' CSV reader with a header, types inferred from `infer_rows` rows (all when `None`) except the
/// columns `overwrite` types; behind the panic guard.
fn polars_csv(
    bytes: &[u8],
    separator: u8,
    infer_rows: Option<usize>,
    overwrite: Option<SchemaRef>,
) -> PolarsResult<DataFrame> {
    super::guard::catch_panic(|| {
        CsvReadOptions::default()
            .with_has_header(true)
            .with_infer_schema_length(infer_rows)
            .with_schema_overwrite(overwrite)
            .with_parse_options(CsvParseOptions::default().with_separator(separator))
            .into_reader_with_file_handle(Cursor::new(bytes))
            .finish()
    })
    .unwrap_or_else(|message| Err(PolarsError::ComputeError(message.into())))
}

/// Whether some cell of `bytes` is a negative integer zero (`-0`, `-00`).
pub(crate) fn has_negative_zero_cell(bytes: &[u8], separator: u8) -> bool {
    memchr::memmem::find_iter(bytes, b"-0").any(|at| {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let starts = matches!(before, None | Some(b'\n')) || before == Some(separator);
        let end = bytes[at + 1..]
            .iter()
            .position(|b| *b != b'0')
            .map_or(bytes.len(), |i| at + 1 + i);
        let ends =
            end == bytes.len() || matches!(bytes[end], b'\n' | b'\r') || bytes[end] == separator;
        starts && ends
    })
}

/// Whether every line has as many fields as the header. Files with quotes go through the csv crate, which
/// knows that a quoted separator or newline is data; plain files are checked by counting separators.
fn uniform_field_counts(bytes: &[u8], separator: u8) -> bool {
    if bytes.contains(&b'"') {
        let mut reader = csv::ReaderBuilder::new()
            .delimiter(separator)
            .flexible(true)
            .from_reader(bytes);
        let width = match reader.headers() {
            Ok(h) => h.len(),
            Err(_) => return false,
        };
        let mut record = csv::ByteRecord::new();
        loop {
            match reader.read_byte_record(&mut record) {
                Ok(true) if record.len() == width => {}
                Ok(true) | Err(_) => return false,
                Ok(false) => return true,
            }
        }
    }
    let mut lines = bytes
        .split(|b| *b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.is_empty());
    let Some(header) = lines.next() else {
        return true;
    };
    let count = |l: &[u8]| l.iter().filter(|b| **b == separator).count();
    let width = count(header);
    lines.all(|l| count(l) == width)
}

/// Parses delimited text with a header. Types are inferred from every row, so a column that is integral
/// early and fractional later is read as floats rather than failing.
pub fn read(bytes: Vec<u8>, separator: u8) -> Result<DataFrame, String> {
    read_checked(bytes, separator, false).map(|(df, _)| df)
}

/// [`read`], dropping (and returning) rows whose field count differs from the header's when `skip_bad`.
pub fn read_checked(
    bytes: Vec<u8>,
    separator: u8,
    skip_bad: bool,
) -> Result<(DataFrame, Vec<Reject>), String> {
    read_checked_from(bytes, separator, skip_bad, 0)
}

/// [`read_checked`] for a block of a larger file, with its header first: `line_offset` is added to line
/// numbers in errors and rejects so they are the file's.
pub fn read_checked_from(
    bytes: Vec<u8>,
    separator: u8,
    skip_bad: bool,
    line_offset: usize,
) -> Result<(DataFrame, Vec<Reject>), String> {
    let bytes = match bytes.strip_prefix(b"\xef\xbb\xbf") {
        Some(rest) => rest.to_vec(),
        None => bytes,
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok((DataFrame::empty(), Vec::new()));
    }
    // Plain rows (the usual case) need neither polars nor the width check below.
    if let Some(df) = super::flat_csv::parse(&bytes, separator, INFER_ROWS) {
        return Ok((df, Vec::new()));
    }
    // polars fills a short row with nulls rather than failing: a ragged file is caught here first.
    let polars_error = if uniform_field_counts(&bytes, separator) {
        match parse(&bytes, separator) {
            Ok(df) => return Ok((df, Vec::new())),
            Err(e) => e.to_string(),
        }
    } else {
        "rows of different lengths".to_string()
    };
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(separator)
        .flexible(true)
        .from_reader(bytes.as_slice());
    let width = match reader.headers() {
        Ok(h) => h.len(),
        Err(e) => return Err(format!("line 1: {e}")),
    };
    let mut bad = Vec::new();
    let mut good = csv::WriterBuilder::new()
        .delimiter(separator)
        .from_writer(Vec::new());
    good.write_record(reader.headers().map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    for record in reader.byte_records() {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line() as usize + line_offset);
                bad.push(Reject {
                    line,
                    column: None,
                    reason: e.to_string(),
                    text: String::new(),
                });
                continue;
            }
        };
        let line = record
            .position()
            .map_or(0, |p| p.line() as usize + line_offset);
        if record.len() != width {
            bad.push(Reject {
                line,
                column: None,
                reason: format!("{} fields where the header has {width}", record.len()),
                text: String::from_utf8_lossy(
                    &record.as_slice()[..record.as_slice().len().min(1000)],
                )
                .into_owned(),
            });
            continue;
        }
        good.write_byte_record(&record).map_err(|e| e.to_string())?;
    }
    if bad.is_empty() {
        return Err(polars_error);
    }
    if !skip_bad {
        return Err(super::jsonl::bad_lines_error(&bad, "rows"));
    }
    let kept = good.into_inner().map_err(|e| e.to_string())?;
    let df = parse(&kept, separator).map_err(|e| e.to_string())?;
    Ok((df, bad))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_zero_cells_are_found() {
        for (text, want) in [
            ("a,b\n1,-0\n", true),
            ("a,b\n-0,1\n", true),
            ("a,b\n1,-00\r\n", true),
            ("a\n-0", true),
            ("a,b\n1,-0.5\n", false),
            ("a,b\n1,-01\n", false),
            ("a,b\nx-0,1\n", false),
            ("a,b\n1,0\n", false),
        ] {
            assert_eq!(
                has_negative_zero_cell(text.as_bytes(), b','),
                want,
                "{text:?}"
            );
        }
        assert!(has_negative_zero_cell(b"a\tb\n1\t-0\n", b'\t'));
    }

    #[test]
    fn ragged_rows_are_named_or_skipped() {
        let text = b"a,b\n1,2\n3\n4,5,6\n7,8\n".to_vec();
        let err = read_checked(text.clone(), b',', false).unwrap_err();
        assert!(
            err.starts_with("line 3: 1 fields where the header has 2"),
            "{err}"
        );
        let (df, bad) = read_checked(text, b',', true).unwrap();
        assert_eq!(df.height(), 2);
        assert_eq!(bad.iter().map(|r| r.line).collect::<Vec<_>>(), [3, 4]);
    }

    #[test]
    fn a_late_fractional_value_is_read() {
        let mut text = String::from("a\n");
        for i in 0..(INFER_ROWS + 5) {
            text.push_str(&format!("{i}\n"));
        }
        text.push_str("2.5\n");
        let (df, _) = read_checked(text.into_bytes(), b',', false).unwrap();
        let a = df.column("a").unwrap().cast(&DataType::Float64).unwrap();
        assert_eq!(a.f64().unwrap().get(INFER_ROWS + 5), Some(2.5));
    }

    #[test]
    fn bom_crlf_and_header_only() {
        let (df, _) = read_checked(b"\xef\xbb\xbfa,b\r\n1,2\r\n".to_vec(), b',', false).unwrap();
        assert_eq!(df.get_column_names(), ["a", "b"]);
        assert_eq!(df.height(), 1);
        let (df, _) = read_checked(b"a,b\n".to_vec(), b',', false).unwrap();
        assert_eq!((df.width(), df.height()), (2, 0));
    }
}
