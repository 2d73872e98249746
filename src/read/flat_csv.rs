//! A fast reader for plain delimited logs: a header, then rows of unquoted fields, as trainers and
//! `df.to_csv` write them.
//!
//! Like [`super::flat_json`], it is an accelerator: it answers only where it gives the frame polars gives
//! (with the options [`super::csv`] reads with), and gives up (`None`) on anything else: quotes, carriage
//! returns, blank lines, a row of another width, duplicate or empty header names, text that is not UTF-8,
//! and cells polars reads in ways not copied here (`inf`, `NaN`, `+1.5`, `1.`, integers beyond 64 bits,
//! blanks around a value).
//!
//! Types follow polars' inference: a cell is a boolean (`true`/`false` in any case), a float, an integer or
//! text; an empty cell is null. A column is Int64 if its cells are integers, Float64 if they are integers
//! and floats, Boolean if booleans, and String otherwise (also when it has no values). The types come from
//! the first [`super::csv::INFER_ROWS`] rows unless a later cell does not fit them, in which case polars
//! infers again from every row, and so does this reader.
//!
//! The rows are cut into pieces at line ends and scanned in parallel (cell kinds and number values, and
//! the bounds of text cells), then each column is built in parallel, a chunk per piece.

use std::borrow::Cow;

use bytemuck::allocation::cast_vec;
use polars::prelude::*;
use polars_arrow::array::{BooleanArray, PrimitiveArray};
use polars_arrow::bitmap::Bitmap;
use rayon::prelude::*;

use super::bytes::find_either;
use super::number::{parse_f64, parse_number_at, parse_whole_number, Number};
use super::text_column::TextColumn;

/// Bytes per parallel piece.
const PIECE_BYTES: usize = 2 << 20;

/// Kinds of cell, as bits so a column's kinds are one mask.
const EMPTY: u8 = 0;
const BOOL: u8 = 1;
const INT: u8 = 2;
const FLOAT: u8 = 4;
const TEXT: u8 = 8;

/// Parses a header and rows into a frame, or `None` when polars should read them instead.
pub fn parse(bytes: &[u8], separator: u8, infer_rows: usize) -> Option<DataFrame> {
    let pieces = (bytes.len() / PIECE_BYTES).clamp(1, rayon::current_num_threads().max(1) * 4);
    parse_in_pieces(bytes, separator, infer_rows, pieces)
}

/// [`parse`], with the rows cut into about `pieces` pieces.
fn parse_in_pieces(
    bytes: &[u8],
    separator: u8,
    infer_rows: usize,
    pieces: usize,
) -> Option<DataFrame> {
    let header_end = memchr::memchr(b'\n', bytes).unwrap_or(bytes.len());
    let body_start = (header_end + 1).min(bytes.len());
    let body = &bytes[body_start..];
    let pieces = super::bytes::line_ranges(body, pieces);
    // No quotes, no carriage returns, and UTF-8: checked piece by piece in parallel. Pieces end after a
    // newline, so where the header and every piece are valid UTF-8 the whole is.
    let clean =
        |b: &[u8]| memchr::memchr2(b'"', b'\r', b).is_none() && std::str::from_utf8(b).is_ok();
    if !clean(&bytes[..body_start]) || !pieces.par_iter().all(|p| clean(&body[p.clone()])) {
        return None;
    }
    // SAFETY: the header and the pieces, which cover the rest, were just checked to be valid UTF-8, and
    // each ends on a newline (a character boundary).
    let text = unsafe { std::str::from_utf8_unchecked(bytes) };
    let names: Vec<&str> = text[..header_end].split(separator as char).collect();
    if names.iter().any(|n| n.is_empty())
        || (1..names.len()).any(|i| names[..i].contains(&names[i]))
    {
        return None;
    }
    let width = names.len();
    let scanned: Vec<Scan> = pieces
        .into_par_iter()
        .map(|p| {
            let (from, to) = (body_start + p.start, body_start + p.end);
            scan(text, from, to, separator, width, infer_rows)
        })
        .collect::<Option<_>>()?;
    let rows: usize = scanned.iter().map(|s| s.place.rows).sum();
    if rows == 0 {
        return None;
    }
    // Kinds over the first `infer_rows` rows, and over all.
    let mut head = vec![EMPTY; width];
    let mut all = vec![EMPTY; width];
    let mut seen_rows = 0;
    for s in &scanned {
        for (c, column) in s.columns.iter().enumerate() {
            all[c] |= column.kinds;
        }
        if seen_rows < infer_rows {
            let take = (infer_rows - seen_rows).min(s.place.rows);
            for r in 0..take {
                for (c, kinds) in head.iter_mut().enumerate() {
                    *kinds |= s.head_kinds[r * width + c];
                }
            }
        }
        seen_rows += s.place.rows;
    }
    // polars reads with the types of the first rows; if any cell does not fit, it infers every column
    // again from all rows.
    let first: Vec<DataType> = head.iter().map(|k| column_type(*k)).collect();
    let types: Vec<DataType> = if first.iter().zip(&all).all(|(t, k)| fits(t, *k)) {
        first
    } else {
        all.iter().map(|k| column_type(*k)).collect()
    };
    // Piece by piece to column by column, so each column's buffers can move into its chunks.
    let places: Vec<Place> = scanned.iter().map(|s| s.place).collect();
    let mut by_column: Vec<Vec<ColumnScan>> = (0..width)
        .map(|_| Vec::with_capacity(scanned.len()))
        .collect();
    for s in scanned {
        for (parts, column) in by_column.iter_mut().zip(s.columns) {
            parts.push(column);
        }
    }
    let cells = Cells {
        text,
        separator,
        places: &places,
    };
    let columns: Vec<Column> = by_column
        .into_par_iter()
        .enumerate()
        .map(|(c, parts)| convert(&cells, c, parts, names[c], &types[c]))
        .collect::<Option<_>>()?;
    DataFrame::new(rows, columns).ok()
}

/// The type polars gives a column whose cells have these kinds.
fn column_type(kinds: u8) -> DataType {
    match kinds {
        INT => DataType::Int64,
        FLOAT => DataType::Float64,
        k if k == INT | FLOAT => DataType::Float64,
        BOOL => DataType::Boolean,
        _ => DataType::String,
    }
}

/// Whether cells of these kinds can all be read as `dtype`.
fn fits(dtype: &DataType, kinds: u8) -> bool {
    match dtype {
        DataType::Int64 => kinds & !INT == 0,
        DataType::Float64 => kinds & !(INT | FLOAT) == 0,
        DataType::Boolean => kinds & !BOOL == 0,
        _ => true,
    }
}

/// One piece's rows, column by column.
struct Scan {
    place: Place,
    columns: Vec<ColumnScan>,
    /// The kind of each cell of the piece's first `infer_rows` rows, row by row (the first rows of the
    /// input decide the types).
    head_kinds: Vec<u8>,
}

/// Where a piece's rows are: byte offsets into the whole input, and how many rows.
#[derive(Clone, Copy)]
struct Place {
    from: usize,
    to: usize,
    rows: usize,
}

/// One column of a piece.
struct ColumnScan {
    /// The kinds seen.
    kinds: u8,
    /// Whether a cell is empty (null).
    has_empty: bool,
    /// Each cell's value when it is a number or boolean: i64 for integers, f64 bits for floats. A column
    /// of one number kind becomes its chunk of the frame without a copy.
    values: Vec<u64>,
    /// Each cell's start and end (byte offsets into the whole input), kept only once the piece shows text
    /// or an empty cell in the column (the cells before are found again then). Number columns, most of a
    /// log, skip it; the rare one that needs its text later ([`Cells::bounds`]) finds it again.
    bounds: Option<Vec<(u32, u32)>>,
    /// The cells as text, built during the scan when the piece's first cell in the column is text (so
    /// the column is String whatever the other rows hold); then `values` and `bounds` stay empty.
    text: Option<TextColumn>,
}

/// Scans `text[from..to]` (whole lines); `None` on a line polars should judge.
fn scan(
    text: &str,
    from: usize,
    to: usize,
    separator: u8,
    width: usize,
    infer_rows: usize,
) -> Option<Scan> {
    if to > u32::MAX as usize {
        return None;
    }
    let bytes = text.as_bytes();
    let estimate = (to - from) / (8 * width) + 1;
    let mut columns: Vec<ColumnScan> = (0..width)
        .map(|_| ColumnScan {
            kinds: EMPTY,
            has_empty: false,
            values: Vec::with_capacity(estimate),
            bounds: None,
            text: None,
        })
        .collect();
    let mut head_kinds = Vec::new();
    let mut rows = 0;
    let mut i = from;
    while i < to {
        if bytes[i] == b'\n' {
            return None; // a blank line
        }
        let mut column = 0;
        loop {
            if column == width {
                return None;
            }
            let start = i;
            // Most cells are numbers in JSON's grammar: reading one finds the cell's end on the way.
            // `i == to`: the input ends just after a separator, so this last cell is empty.
            let number = match bytes[..to].get(i) {
                Some(b'-' | b'0'..=b'9') => parse_number_at(text, i).filter(|&(_, end)| {
                    end >= to || bytes[end] == separator || bytes[end] == b'\n'
                }),
                _ => None,
            };
            let (kind, value) = match number {
                Some((number, end)) => {
                    i = end;
                    number_cell(number)
                }
                None => {
                    i = find_either(bytes, i, to, separator, b'\n');
                    cell_value(&text[start..i])?
                }
            };
            let col = &mut columns[column];
            col.kinds |= kind;
            if rows == 0 && kind == TEXT {
                // Text in any row makes the column String: its cells go into views while their bytes
                // are still in cache, rather than in a second pass over the piece.
                col.text = Some(TextColumn::with_capacity(estimate));
            }
            if let Some(values) = &mut col.text {
                if start == i {
                    values.push_null();
                } else {
                    values.push_value(&text[start..i]);
                }
            } else {
                col.values.push(value);
                if kind == EMPTY || kind == TEXT {
                    col.has_empty |= kind == EMPTY;
                    if col.bounds.is_none() {
                        col.bounds = Some(cell_bounds(bytes, from, to, rows, separator, column));
                    }
                }
                if let Some(bounds) = &mut col.bounds {
                    bounds.push((start as u32, i as u32));
                }
            }
            if rows < infer_rows {
                head_kinds.push(kind);
            }
            column += 1;
            if i >= to || bytes[i] == b'\n' {
                break;
            }
            i += 1; // the separator
        }
        if column != width {
            return None;
        }
        rows += 1;
        i += 1; // the newline
    }
    Some(Scan {
        place: Place { from, to, rows },
        columns,
        head_kinds,
    })
}

/// The start and end of cell `column` in each of the `rows` lines from `from` (lines already scanned,
/// so each has the cell).
fn cell_bounds(
    bytes: &[u8],
    from: usize,
    to: usize,
    rows: usize,
    separator: u8,
    column: usize,
) -> Vec<(u32, u32)> {
    let mut bounds = Vec::with_capacity(rows);
    let mut i = from;
    for _ in 0..rows {
        for _ in 0..column {
            i = find_either(bytes, i, to, separator, b'\n') + 1;
        }
        let end = find_either(bytes, i, to, separator, b'\n');
        bounds.push((i as u32, end as u32));
        i = end;
        if i < to && bytes[i] != b'\n' {
            i += memchr::memchr(b'\n', &bytes[i..to]).map_or(to - i, |n| n);
        }
        i += 1;
    }
    bounds
}

/// A number cell's kind and value (see [`ColumnScan::values`]).
#[inline]
fn number_cell(number: Number) -> (u8, u64) {
    match number {
        Number::Int(v) => (INT, v as u64),
        Number::Float(v) => (FLOAT, v.to_bits()),
    }
}

/// The kind polars' inference gives a cell, and its value when a number or boolean (see
/// [`Scan::values`]); `None` for the forms left to polars.
#[inline]
fn cell_value(cell_text: &str) -> Option<(u8, u64)> {
    let cell = cell_text.as_bytes();
    let Some(&first) = cell.first() else {
        return Some((EMPTY, 0));
    };
    // polars' parsers and inference treat surrounding blanks in ways not copied here.
    let last = cell[cell.len() - 1];
    if matches!(first, b' ' | b'\t') || matches!(last, b' ' | b'\t') {
        return None;
    }
    if first.is_ascii_digit() || first == b'-' {
        // Most numbers are in JSON's grammar, which polars reads as integers or floats alike: one pass.
        if let Some(number) = parse_whole_number(cell_text) {
            return Some(number_cell(number));
        }
    }
    if first.is_ascii_digit() || first == b'-' || first == b'.' {
        let negative = first == b'-';
        let body = if negative { &cell[1..] } else { cell };
        if !body.is_empty() && body.len() <= 18 && body.iter().all(u8::is_ascii_digit) {
            let v = body.iter().fold(0i64, |v, d| v * 10 + (d - b'0') as i64);
            return Some((INT, (if negative { -v } else { v }) as u64));
        }
        if !body.is_empty() && body.iter().all(u8::is_ascii_digit) {
            // Longer integers: polars reads those beyond i64 as Int128, left to it.
            let v: i64 = cell_text.parse().ok()?;
            return Some((INT, v as u64));
        }
        return match float_form(body) {
            Form::Decimal => {
                let v = parse_f64(cell_text).or_else(|| cell_text.parse().ok())?;
                Some((FLOAT, v.to_bits()))
            }
            Form::Other => None,
            Form::NotFloat => Some((TEXT, 0)),
        };
    }
    if first == b'+' {
        return match float_form(&cell[1..]) {
            Form::NotFloat => Some((TEXT, 0)),
            _ => None,
        };
    }
    if cell.len() == 4 && cell.eq_ignore_ascii_case(b"true") {
        return Some((BOOL, 1));
    }
    if cell.len() == 5 && cell.eq_ignore_ascii_case(b"false") {
        return Some((BOOL, 0));
    }
    if cell.len() == 3 && (cell == b"inf" || cell == b"NaN") {
        return None;
    }
    Some((TEXT, 0))
}

/// How a cell (without its sign) stands to polars' float pattern
/// `(\d*\.\d+)([eE][-+]?\d+)?|inf|NaN|\d+[eE][-+]?\d+|\d+\.`.
enum Form {
    /// A float this reader converts: digits, a point and digits, or digits and an exponent.
    Decimal,
    /// A float to polars that is left to it (`inf`, `NaN`, `5.`).
    Other,
    NotFloat,
}

#[inline]
fn float_form(b: &[u8]) -> Form {
    if b.len() == 3 && (b == b"inf" || b == b"NaN") {
        return Form::Other;
    }
    let n = b.len();
    let mut i = 0;
    while i < n && b[i].is_ascii_digit() {
        i += 1;
    }
    let int = i;
    let mut decimal = false;
    if i < n && b[i] == b'.' {
        i += 1;
        let from = i;
        while i < n && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == from {
            return if int > 0 && i == n {
                Form::Other // "5."
            } else {
                Form::NotFloat
            };
        }
        decimal = true;
    } else if int == 0 {
        return Form::NotFloat;
    }
    if i < n && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < n && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let from = i;
        while i < n && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == from {
            return Form::NotFloat;
        }
        decimal = true;
    }
    if i == n && decimal {
        Form::Decimal
    } else {
        Form::NotFloat
    }
}

/// The input text, for the cells a column needs again.
struct Cells<'a> {
    text: &'a str,
    separator: u8,
    places: &'a [Place],
}

impl Cells<'_> {
    /// The bounds of column `c`'s cells in piece `piece`: kept by the scan, or found again.
    fn bounds<'b>(&self, piece: usize, c: usize, part: &'b ColumnScan) -> Cow<'b, [(u32, u32)]> {
        match &part.bounds {
            Some(bounds) => Cow::Borrowed(bounds),
            None => {
                let p = self.places[piece];
                let bytes = self.text.as_bytes();
                Cow::Owned(cell_bounds(bytes, p.from, p.to, p.rows, self.separator, c))
            }
        }
    }

    /// Nulls where a piece's cells are empty (no bitmap when none is).
    fn validity(&self, piece: usize, c: usize, part: &ColumnScan) -> Option<Bitmap> {
        part.has_empty.then(|| {
            let bounds = self.bounds(piece, c, part);
            bounds.iter().map(|&(a, b)| a != b).collect()
        })
    }
}

/// Column `c` (its `parts`, one per piece) as a polars column of `dtype`, a chunk per piece. Number
/// columns hand their values over without a copy.
fn convert(
    cells: &Cells,
    c: usize,
    parts: Vec<ColumnScan>,
    name: &str,
    dtype: &DataType,
) -> Option<Column> {
    let name: PlSmallStr = name.into();
    let bytes = cells.text.as_bytes();
    let series = match dtype {
        DataType::Int64 => {
            let chunks = parts.into_iter().enumerate().map(|(piece, part)| {
                let validity = cells.validity(piece, c, &part);
                let values: Vec<i64> = cast_vec(part.values);
                PrimitiveArray::new(ArrowDataType::Int64, values.into(), validity)
            });
            Int64Chunked::from_chunk_iter(name, chunks).into_series()
        }
        DataType::Float64 => {
            let chunks = parts.into_iter().enumerate().map(|(piece, part)| {
                let validity = cells.validity(piece, c, &part);
                let values: Vec<f64> = if part.kinds & INT == 0 {
                    cast_vec(part.values)
                } else {
                    // Integers among the floats: an integer cell (`-?\d+`) holds an i64, a float cell
                    // (which has a point or an exponent) f64 bits.
                    let bounds = cells.bounds(piece, c, &part);
                    part.values
                        .iter()
                        .zip(bounds.iter())
                        .map(|(v, &(a, b))| {
                            let cell = &bytes[a as usize..b as usize];
                            let is_int = !cell.is_empty()
                                && !cell.iter().any(|d| matches!(d, b'.' | b'e' | b'E'));
                            if !is_int {
                                f64::from_bits(*v)
                            } else if *v == 0 && cell[0] == b'-' {
                                -0.0 // "-0" read as a float is negative zero
                            } else {
                                *v as i64 as f64
                            }
                        })
                        .collect()
                };
                PrimitiveArray::new(ArrowDataType::Float64, values.into(), validity)
            });
            Float64Chunked::from_chunk_iter(name, chunks).into_series()
        }
        DataType::Boolean => {
            let chunks = parts.into_iter().enumerate().map(|(piece, part)| {
                let values: Bitmap = part.values.iter().map(|v| *v == 1).collect();
                let validity = cells.validity(piece, c, &part);
                BooleanArray::new(ArrowDataType::Boolean, values, validity)
            });
            BooleanChunked::from_chunk_iter(name, chunks).into_series()
        }
        _ => {
            let chunks = parts.into_iter().enumerate().map(|(piece, part)| {
                if let Some(values) = part.text {
                    return values.finish();
                }
                let bounds = cells.bounds(piece, c, &part);
                let mut values = TextColumn::with_capacity(bounds.len());
                for &(a, b) in bounds.iter() {
                    if a == b {
                        values.push_null();
                    } else {
                        values.push_value(&cells.text[a as usize..b as usize]);
                    }
                }
                values.finish()
            });
            StringChunked::from_chunk_iter(name, chunks).into_series()
        }
    };
    Some(series.into_column())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy;

    fn polars_read(bytes: &[u8], infer: Option<usize>) -> PolarsResult<DataFrame> {
        CsvReadOptions::default()
            .with_has_header(true)
            .with_infer_schema_length(infer)
            .into_reader_with_file_handle(std::io::Cursor::new(bytes))
            .finish()
    }

    /// What mfu's CSV reader gets from polars: types from the first rows, or from all when that fails.
    fn polars_like_mfu(bytes: &[u8], infer: usize) -> DataFrame {
        polars_read(bytes, Some(infer))
            .or_else(|_| polars_read(bytes, None))
            .unwrap()
    }

    fn assert_same(ours: &DataFrame, theirs: &DataFrame) {
        assert_eq!(ours.schema(), theirs.schema());
        assert!(ours.equals_missing(theirs), "{ours}\n{theirs}");
    }

    #[test]
    fn an_input_ending_just_after_a_separator_has_an_empty_last_cell() {
        // Found by the csv_reader fuzz target: the scan read one byte past the end.
        let found = b">(/,)\n\x0e,";
        let _ = crate::read::csv::read_checked(found.to_vec(), b',', false);
        let _ = crate::read::csv::read_checked(found.to_vec(), b',', true);
        for text in ["a,b\n1,", "a,b\nx,", "a,b\n1,2\n3,"] {
            if let Some(ours) = parse(text.as_bytes(), b',', 10_000) {
                assert_same(&ours, &polars_like_mfu(text.as_bytes(), 10_000));
            }
        }
        let ours = parse(b"a,b\n1,", b',', 10_000).unwrap();
        assert_eq!(ours.column("b").unwrap().null_count(), 1);
    }

    #[test]
    fn plain_rows_read_as_polars_reads_them() {
        let text = "run,step,t,ok,empty,mixed,big\na,1,0.5,true,,1,9223372036854775807\nb,2,,FALSE,,2.5e3,-5\nc,-3,.25,false,,x,0\n";
        let ours = parse(text.as_bytes(), b',', 10_000).unwrap();
        assert_same(&ours, &polars_like_mfu(text.as_bytes(), 10_000));
        assert_eq!(ours.column("t").unwrap().dtype(), &DataType::Float64);
        assert_eq!(ours.column("mixed").unwrap().dtype(), &DataType::String);
        assert_eq!(ours.column("empty").unwrap().dtype(), &DataType::String);
    }

    #[test]
    fn types_come_from_the_first_rows_unless_a_later_cell_does_not_fit() {
        // Column b is empty in the first rows, integers later: polars would keep the text type it inferred,
        // but column a turns fractional, so it infers every column again from all rows.
        let mut text = String::from("a,b\n");
        for i in 0..20 {
            if i < 10 {
                text.push_str(&format!("{i},\n"));
            } else {
                text.push_str(&format!("{i}.5,{i}\n"));
            }
        }
        let ours = parse(text.as_bytes(), b',', 10).unwrap();
        assert_same(&ours, &polars_like_mfu(text.as_bytes(), 10));
        assert_eq!(ours.column("a").unwrap().dtype(), &DataType::Float64);
        assert_eq!(ours.column("b").unwrap().dtype(), &DataType::Int64);
        // With a fitting, b keeps the text type of its empty first rows.
        let mut text = String::from("a,b\n");
        for i in 0..20 {
            let b = if i < 10 { String::new() } else { i.to_string() };
            text.push_str(&format!("{i},{b}\n"));
        }
        let ours = parse(text.as_bytes(), b',', 10).unwrap();
        assert_same(&ours, &polars_like_mfu(text.as_bytes(), 10));
        assert_eq!(ours.column("b").unwrap().dtype(), &DataType::String);
    }

    #[test]
    fn text_columns_built_during_the_scan_keep_every_cell_as_written() {
        // `run` starts with text in every piece, then holds numbers, blanks and booleans, which a String
        // column keeps as written (blanks as nulls); `dev` has long names that repeat.
        let mut text = String::from("run,dev,x\n");
        for i in 0..60 {
            let run = match i % 6 {
                0 => format!("run-{i}"),
                1 => format!("{i}"),
                2 => String::new(),
                3 => "TRUE".to_string(),
                4 => format!("{i}.5e3"),
                _ => "-7".to_string(),
            };
            let dev = if i % 20 < 10 {
                "NVIDIA H100 80GB HBM3"
            } else {
                "NVIDIA A100-SXM4-80GB"
            };
            text.push_str(&format!("{run},{dev},{i}\n"));
        }
        for pieces in [1, 3, 10] {
            let ours = parse_in_pieces(text.as_bytes(), b',', 100, pieces).unwrap();
            assert_same(&ours, &polars_like_mfu(text.as_bytes(), 100));
            let run = ours.column("run").unwrap().str().unwrap();
            assert_eq!(run.get(1), Some("1"));
            assert_eq!(run.get(2), None);
            assert_eq!(run.get(4), Some("4.5e3"));
            assert_eq!(
                ours.column("dev").unwrap().str().unwrap().get(59),
                Some("NVIDIA A100-SXM4-80GB")
            );
        }
    }

    #[test]
    fn cells_a_column_needs_again_are_found_in_pieces_that_did_not_keep_them() {
        // Piece by piece: `a` is numbers, then text; `b` integers (one "-0"), then floats; `c` has a
        // blank late in a number column, so the cells before it are found again.
        let mut text = String::from("a,b,c\n");
        for i in 0..40 {
            let a = if i < 30 {
                i.to_string()
            } else {
                format!("x{i}")
            };
            let b = match i {
                3 => "-0".to_string(),
                i if i < 30 => i.to_string(),
                i => format!("{i}.25"),
            };
            let c = if i == 25 {
                String::new()
            } else {
                format!("{i}.5")
            };
            text.push_str(&format!("{a},{b},{c}\n"));
        }
        for pieces in [1, 2, 4, 9] {
            let ours = parse_in_pieces(text.as_bytes(), b',', 100, pieces).unwrap();
            assert_same(&ours, &polars_like_mfu(text.as_bytes(), 100));
            let b = ours.column("b").unwrap().f64().unwrap();
            assert!(b.get(3).unwrap().is_sign_negative(), "-0 is negative zero");
            assert_eq!(ours.column("c").unwrap().null_count(), 1);
        }
        assert_eq!(
            cell_bounds(b"1,22,3\n4,,6\n", 0, 12, 2, b',', 1),
            vec![(2, 4), (9, 9)]
        );
    }

    #[test]
    fn what_polars_must_read_is_left_to_it() {
        for text in [
            "a,b\n\"x\",1\n",
            "a,b\r\n1,2\r\n",
            "a,b\n1,2\n\n3,4\n",
            "a,b\n1\n",
            "a,b\n1,2,3\n",
            "a,a\n1,2\n",
            "a,\n1,2\n",
            "a\ninf\n",
            "a\nNaN\n",
            "a\n+1.5\n",
            "a\n5.\n",
            "a\n99999999999999999999\n",
        ] {
            assert!(parse(text.as_bytes(), b',', 100).is_none(), "{text:?}");
        }
        // A quote, a carriage return or bytes that are not UTF-8 in any piece, or in the header.
        let rows: String = (0..50).map(|i| format!("r{i},{i}\n")).collect();
        for bad in [&b"x\"y"[..], b"x\ry", b"x\xffy"] {
            for (at_header, pieces) in [(false, 1), (false, 4), (true, 4)] {
                let mut text = b"a,b\n".to_vec();
                text.extend_from_slice(rows.as_bytes());
                let row = [bad, b",1\n"].concat();
                if at_header {
                    text.splice(0..1, bad.iter().copied());
                } else {
                    text.extend_from_slice(&row);
                }
                assert!(
                    parse_in_pieces(&text, b',', 100, pieces).is_none(),
                    "{bad:?}"
                );
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn random_rows_match_polars(
            cells in proptest::collection::vec(
                proptest::collection::vec(
                    proptest::prop_oneof![
                        proptest::strategy::Just(String::new()),
                        (-1000i64..1000).prop_map(|i| i.to_string()),
                        proptest::num::f64::NORMAL.prop_map(|f| format!("{f:?}")),
                        proptest::num::f64::NORMAL.prop_map(|f| format!("{f:e}")),
                        proptest::bool::ANY.prop_map(|b| if b { "True".into() } else { "false".into() }),
                        "[a-z ]{1,6}".prop_filter("left to polars", |t| t != "inf"),
                        "[-+.eE0-9]{1,5}",
                    ],
                    3,
                ),
                1..30,
            ),
            infer in 1usize..30,
        ) {
            let mut text = String::from("x,y,z\n");
            for row in &cells {
                text.push_str(&row.join(","));
                text.push('\n');
            }
            // Cells of the forms left to polars make the reader give up; every other file is read.
            let left = cells.iter().flatten().any(|c| cell_value(c).is_none());
            // One piece, and a piece every few rows (cells of a kind in one piece and not another).
            for pieces in [1, 7] {
                match parse_in_pieces(text.as_bytes(), b',', infer, pieces) {
                    Some(ours) => assert_same(&ours, &polars_like_mfu(text.as_bytes(), infer)),
                    None => assert!(left, "gave up on {text:?}"),
                }
            }
        }
    }
}
