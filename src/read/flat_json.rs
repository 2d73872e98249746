//! A fast reader for the JSON Lines most trainers write: one flat object per line, whose values are numbers,
//! strings, booleans or null.
//!
//! It is an accelerator, not a second JSON reader: anything it does not handle exactly as polars would
//! (nested values, escaped keys, a key twice in a line, a number out of range, a column that holds both text
//! and numbers, a malformed line) makes it give up (`None`), and the caller reads the bytes with polars.
//! Where it answers, the frame is the one polars gives with the schema inferred from every line: columns in
//! order of first appearance, integers as Int64 unless some value of the column is fractional (then Float64),
//! a key missing from a line is null there, a column that is only ever null has the Null type.
//!
//! Lines are parsed in parallel pieces (cut at line ends) into typed column builders; the pieces are then
//! joined, column by column.

use polars::prelude::*;
use polars_arrow::array::MutableBinaryViewArray;
use polars_arrow::bitmap::MutableBitmap;
use rayon::prelude::*;

/// Bytes per parallel piece: small inputs are parsed on the calling thread.
const PIECE_BYTES: usize = 4 << 20;

/// Parses flat JSON Lines into a frame, or `None` when polars should read them instead.
pub fn parse(bytes: &[u8]) -> Option<DataFrame> {
    let text = std::str::from_utf8(bytes).ok()?;
    let pieces: Vec<&str> = super::jsonl::line_ranges(
        bytes,
        (bytes.len() / PIECE_BYTES).clamp(1, rayon::current_num_threads().max(1) * 4),
    )
    .into_iter()
    .map(|range| &text[range])
    .collect();
    let parsed: Vec<Piece> = if pieces.len() == 1 {
        vec![parse_piece(pieces[0])?]
    } else {
        pieces
            .par_iter()
            .map(|p| parse_piece(p))
            .collect::<Option<Vec<_>>>()?
    };
    join(parsed)
}

/// The values of one column in one piece.
enum Values {
    /// Only nulls so far.
    Null,
    Int(Vec<i64>, MutableBitmap),
    Float(Vec<f64>, MutableBitmap),
    Bool(Vec<bool>, MutableBitmap),
    Str(MutableBinaryViewArray<str>),
}

/// The type a column's values have (joined over pieces).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Null,
    Int,
    Float,
    Bool,
    Str,
}

impl Kind {
    /// The type both kinds fit in, where the two readers agree on one.
    fn join(self, other: Kind) -> Option<Kind> {
        match (self, other) {
            (a, b) if a == b => Some(a),
            (Kind::Null, b) => Some(b),
            (a, Kind::Null) => Some(a),
            (Kind::Int, Kind::Float) | (Kind::Float, Kind::Int) => Some(Kind::Float),
            _ => None,
        }
    }
}

/// One column of one piece, as it is filled line by line.
struct ColumnBuilder {
    name: String,
    /// Rows filled so far (values or nulls).
    len: usize,
    values: Values,
}

/// A parsed cell.
enum Cell<'a> {
    Null,
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(&'a str),
    /// A string with escapes, decoded.
    Owned(String),
}

impl ColumnBuilder {
    fn kind(&self) -> Kind {
        match self.values {
            Values::Null => Kind::Null,
            Values::Int(..) => Kind::Int,
            Values::Float(..) => Kind::Float,
            Values::Bool(..) => Kind::Bool,
            Values::Str(_) => Kind::Str,
        }
    }

    /// Fills rows up to `row` with nulls.
    fn pad(&mut self, row: usize) {
        let missing = row - self.len;
        if missing == 0 {
            return;
        }
        match &mut self.values {
            Values::Null => {}
            Values::Int(v, valid) => {
                v.resize(row, 0);
                valid.extend_constant(missing, false);
            }
            Values::Float(v, valid) => {
                v.resize(row, 0.0);
                valid.extend_constant(missing, false);
            }
            Values::Bool(v, valid) => {
                v.resize(row, false);
                valid.extend_constant(missing, false);
            }
            Values::Str(a) => {
                for _ in 0..missing {
                    a.push_null();
                }
            }
        }
        self.len = row;
    }

    /// Sets `row` (the column is padded to it); `None` when the cell's type does not fit the column's.
    fn set(&mut self, row: usize, cell: Cell) -> Option<()> {
        if self.len > row {
            return None; // the key twice in one line
        }
        self.pad(row);
        if matches!(self.values, Values::Null) {
            let nulls = self.len;
            let bitmap = || {
                let mut b = MutableBitmap::with_capacity(nulls + 1024);
                b.extend_constant(nulls, false);
                b
            };
            self.values = match cell {
                Cell::Null => Values::Null,
                Cell::Int(_) => Values::Int(vec![0; nulls], bitmap()),
                Cell::Float(_) => Values::Float(vec![0.0; nulls], bitmap()),
                Cell::Bool(_) => Values::Bool(vec![false; nulls], bitmap()),
                Cell::Str(_) | Cell::Owned(_) => {
                    let mut a = MutableBinaryViewArray::with_capacity(nulls + 1024);
                    for _ in 0..nulls {
                        a.push_null();
                    }
                    Values::Str(a)
                }
            };
        }
        match (&mut self.values, cell) {
            (Values::Null, Cell::Null) => {}
            (Values::Int(v, valid), Cell::Int(x)) => {
                v.push(x);
                valid.push(true);
            }
            (Values::Int(v, valid), Cell::Float(x)) => {
                // A fractional value after integers: the column becomes Float64, as polars makes it.
                let mut floats: Vec<f64> = v.iter().map(|i| *i as f64).collect();
                floats.push(x);
                let mut valid = std::mem::take(valid);
                valid.push(true);
                self.values = Values::Float(floats, valid);
            }
            (Values::Float(v, valid), Cell::Float(x)) => {
                v.push(x);
                valid.push(true);
            }
            (Values::Float(v, valid), Cell::Int(x)) => {
                v.push(x as f64);
                valid.push(true);
            }
            (Values::Bool(v, valid), Cell::Bool(x)) => {
                v.push(x);
                valid.push(true);
            }
            (Values::Str(a), Cell::Str(s)) => a.push_value(s),
            (Values::Str(a), Cell::Owned(s)) => a.push_value(s.as_str()),
            (Values::Int(v, valid), Cell::Null) => {
                v.push(0);
                valid.push(false);
            }
            (Values::Float(v, valid), Cell::Null) => {
                v.push(0.0);
                valid.push(false);
            }
            (Values::Bool(v, valid), Cell::Null) => {
                v.push(false);
                valid.push(false);
            }
            (Values::Str(a), Cell::Null) => a.push_null(),
            _ => return None,
        }
        self.len = row + 1;
        Some(())
    }

    /// The column as a polars column of `kind` (its own kind, or one it widens to).
    fn finish(mut self, rows: usize, kind: Kind) -> Column {
        self.pad(rows);
        let name: PlSmallStr = self.name.as_str().into();
        let validity = |b: MutableBitmap| -> Option<polars_arrow::bitmap::Bitmap> {
            (b.unset_bits() > 0).then(|| b.into())
        };
        let series = match (self.values, kind) {
            (Values::Null, Kind::Null) => Series::full_null(name, rows, &DataType::Null),
            (Values::Null, kind) => Series::full_null(name, rows, &kind.dtype()),
            (Values::Int(v, b), Kind::Float) => {
                let v: Vec<f64> = v.into_iter().map(|i| i as f64).collect();
                Float64Chunked::from_vec_validity(name, v, validity(b)).into_series()
            }
            (Values::Int(v, b), _) => {
                Int64Chunked::from_vec_validity(name, v, validity(b)).into_series()
            }
            (Values::Float(v, b), _) => {
                Float64Chunked::from_vec_validity(name, v, validity(b)).into_series()
            }
            (Values::Bool(v, b), _) => {
                let values: polars_arrow::bitmap::Bitmap = v.into_iter().collect();
                let arr = polars_arrow::array::BooleanArray::new(
                    ArrowDataType::Boolean,
                    values,
                    validity(b),
                );
                BooleanChunked::with_chunk(name, arr).into_series()
            }
            (Values::Str(a), _) => StringChunked::with_chunk(name, a.into()).into_series(),
        };
        series.into_column()
    }
}

impl Kind {
    fn dtype(self) -> DataType {
        match self {
            Kind::Null => DataType::Null,
            Kind::Int => DataType::Int64,
            Kind::Float => DataType::Float64,
            Kind::Bool => DataType::Boolean,
            Kind::Str => DataType::String,
        }
    }
}

/// One piece of the input, parsed.
struct Piece {
    columns: Vec<ColumnBuilder>,
    rows: usize,
    /// The distinct key sequences of its lines (as column indices), in order of first appearance: they
    /// decide the column order (see [`column_order`]).
    key_orders: Vec<Vec<usize>>,
}

/// Parses one piece (whole lines).
fn parse_piece(text: &str) -> Option<Piece> {
    let b = text.as_bytes();
    let mut columns: Vec<ColumnBuilder> = Vec::new();
    let mut by_name: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    // The columns of the previous line's keys, in order: lines usually repeat their keys in one order.
    let mut previous: Vec<usize> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    let mut key_orders: Vec<Vec<usize>> = Vec::new();
    let mut seen_orders: std::collections::HashSet<Vec<usize>> = std::collections::HashSet::new();
    let mut row = 0;
    let mut i = 0;
    let n = b.len();
    loop {
        // Blank lines and whitespace between lines.
        while i < n && matches!(b[i], b' ' | b'\t' | b'\r' | b'\n') {
            i += 1;
        }
        if i == n {
            break;
        }
        if b[i] != b'{' {
            return None;
        }
        i += 1;
        current.clear();
        i = skip_space(b, i);
        if i < n && b[i] == b'}' {
            return None; // an empty object: leave its row to polars
        }
        loop {
            // Key: usually the one at this position in the previous line.
            if i >= n || b[i] != b'"' {
                return None;
            }
            let key_start = i + 1;
            let k = current.len();
            let expected = previous.get(k).copied().filter(|&c| {
                let name = columns[c].name.as_bytes();
                let end = key_start + name.len();
                end < n && b[end] == b'"' && same_bytes(&b[key_start..end], name)
            });
            let (col, key_end) = match expected {
                Some(c) => (c, key_start + columns[c].name.len()),
                None => {
                    let key_end = string_end(b, key_start);
                    if b.get(key_end) != Some(&b'"') {
                        return None; // an escaped key, or no end
                    }
                    let key = &text[key_start..key_end];
                    let c = match by_name.get(key) {
                        Some(&c) => c,
                        None => {
                            columns.push(ColumnBuilder {
                                name: key.to_string(),
                                len: 0,
                                values: Values::Null,
                            });
                            by_name.insert(key, columns.len() - 1);
                            columns.len() - 1
                        }
                    };
                    (c, key_end)
                }
            };
            i = skip_space(b, key_end + 1);
            if i >= n || b[i] != b':' {
                return None;
            }
            i = skip_space(b, i + 1);
            current.push(col);
            // Value.
            let (cell, next) = parse_value(text, i)?;
            columns[col].set(row, cell)?;
            i = skip_space(b, next);
            match b.get(i) {
                Some(b',') => i = skip_space(b, i + 1),
                Some(b'}') => {
                    i += 1;
                    break;
                }
                _ => return None,
            }
        }
        // Only whitespace may follow the object on its line.
        while i < n && matches!(b[i], b' ' | b'\t' | b'\r') {
            i += 1;
        }
        if i < n && b[i] != b'\n' {
            return None;
        }
        if current != previous && seen_orders.insert(current.clone()) {
            key_orders.push(current.clone());
        }
        std::mem::swap(&mut previous, &mut current);
        row += 1;
    }
    Some(Piece {
        columns,
        rows: row,
        key_orders,
    })
}

/// The position of the first `"` or `\\` at or after `from` (`b.len()` if none). Strings in logs are
/// short, so a plain loop beats setting up a vector search.
#[inline]
fn string_end(b: &[u8], from: usize) -> usize {
    let mut j = from;
    while j < b.len() && b[j] != b'"' && b[j] != b'\\' {
        j += 1;
    }
    j
}

/// Byte equality for short keys, without a call into the C library.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// Skips spaces inside a line (a newline inside an object is left to polars).
#[inline]
fn skip_space(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\r') {
        i += 1;
    }
    i
}

/// Parses the scalar value at `i`; `None` for anything else.
#[inline]
fn parse_value(text: &str, i: usize) -> Option<(Cell<'_>, usize)> {
    let b = text.as_bytes();
    match *b.get(i)? {
        b'"' => {
            let start = i + 1;
            let end = string_end(b, start);
            if end >= b.len() {
                return None;
            }
            if b[end] == b'"' {
                return Some((Cell::Str(&text[start..end]), end + 1));
            }
            // Escapes: find the closing quote, then let serde_json decode the string.
            let mut j = end;
            loop {
                match *b.get(j)? {
                    b'\\' => j += 2,
                    b'"' => break,
                    b'\n' => return None,
                    _ => j += 1,
                }
            }
            let decoded: String = serde_json::from_str(&text[i..=j]).ok()?;
            Some((Cell::Owned(decoded), j + 1))
        }
        b't' if b[i..].starts_with(b"true") => Some((Cell::Bool(true), i + 4)),
        b'f' if b[i..].starts_with(b"false") => Some((Cell::Bool(false), i + 5)),
        b'n' if b[i..].starts_with(b"null") => Some((Cell::Null, i + 4)),
        b'-' | b'0'..=b'9' => parse_number(text, i),
        _ => None,
    }
}

/// A number in JSON's grammar.
pub(crate) enum Number {
    Int(i64),
    Float(f64),
}

/// `text`, all of it, as a number in JSON's grammar (an integer that fits i64, or a finite float read
/// exactly as the standard parser reads it); `None` for anything else.
#[inline]
pub(crate) fn parse_whole_number(text: &str) -> Option<Number> {
    match parse_number(text, 0)? {
        (Cell::Float(v), end) if end == text.len() => Some(Number::Float(v)),
        (Cell::Int(v), end) if end == text.len() => Some(Number::Int(v)),
        _ => None,
    }
}

/// The value of a decimal number written in JSON's grammar (the whole of `text`), exactly as the standard
/// parser reads it; `None` for anything else.
pub(crate) fn parse_f64(text: &str) -> Option<f64> {
    match parse_whole_number(text)? {
        // "-0" is an integer 0 to JSON, but negative zero as a float.
        Number::Int(0) if text.starts_with('-') => Some(-0.0),
        Number::Int(v) => Some(v as f64),
        Number::Float(v) => Some(v),
    }
}

/// A JSON number (strict grammar): an integer that fits i64, or a finite float.
#[inline]
fn parse_number(text: &str, start: usize) -> Option<(Cell<'_>, usize)> {
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
    let mut significant = 0;
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i = eat_digits(b, i, &mut mantissa, &mut significant),
        _ => return None,
    }
    let int_digits = i - digits_start;
    let mut exponent: i64 = 0;
    let mut fractional = false;
    if i < n && b[i] == b'.' {
        i += 1;
        let from = i;
        i = eat_digits(b, i, &mut mantissa, &mut significant);
        if i == from {
            return None;
        }
        exponent -= (i - from) as i64;
        fractional = true;
    }
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
            return Some((Cell::Int(if negative { -v } else { v }), i));
        }
        return Some((Cell::Int(text[start..i].parse().ok()?), i));
    }
    // Clinger's fast path: a mantissa below 2^53 times or over a power of ten up to 10^22 is exact in
    // f64, so one multiplication or division rounds correctly; otherwise the standard parser decides.
    if significant <= 19 && mantissa <= 1 << 53 && (-22..=22).contains(&exponent) {
        let m = mantissa as f64;
        let v = if exponent < 0 {
            m / POWERS_OF_TEN[(-exponent) as usize]
        } else {
            m * POWERS_OF_TEN[exponent as usize]
        };
        return Some((Cell::Float(if negative { -v } else { v }), i));
    }
    let v: f64 = text[start..i].parse().ok()?;
    v.is_finite().then_some((Cell::Float(v), i))
}

/// Reads the digits from `i` into `mantissa` (wrapping once past 19 significant digits, which
/// `significant` counts, leading zeros not included); returns where they end. Eight digits at a time where
/// it can (the SWAR method of fast_float: check and convert eight ASCII digits in a few word operations).
#[inline]
fn eat_digits(b: &[u8], mut i: usize, mantissa: &mut u64, significant: &mut u32) -> usize {
    while let Some(chunk) = b.get(i..i + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        // Every byte in '0'..='9': no byte above 0x39 (adding 0x46 sets bit 7) or below 0x30.
        let all_digits = (word.wrapping_add(0x4646_4646_4646_4646)
            | word.wrapping_sub(0x3030_3030_3030_3030))
            & 0x8080_8080_8080_8080
            == 0;
        if !all_digits {
            break;
        }
        let mut v = word - 0x3030_3030_3030_3030;
        v = v.wrapping_mul(10) + (v >> 8);
        let v = ((v & 0x0000_00FF_0000_00FF).wrapping_mul(0x000F_4240_0000_0064)
            + ((v >> 16) & 0x0000_00FF_0000_00FF).wrapping_mul(0x0000_2710_0000_0001))
            >> 32;
        if *mantissa != 0 {
            *significant += 8;
        } else if v != 0 {
            *significant += v.ilog10() + 1;
        }
        *mantissa = mantissa.wrapping_mul(100_000_000).wrapping_add(v);
        i += 8;
    }
    while i < b.len() && b[i].is_ascii_digit() {
        let d = b[i];
        if *mantissa != 0 || d != b'0' {
            *significant += 1;
        }
        *mantissa = mantissa.wrapping_mul(10).wrapping_add((d - b'0') as u64);
        i += 1;
    }
    i
}

/// 10^0 ..= 10^22, each exact in f64.
const POWERS_OF_TEN: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The column order polars gives a file whose lines have these distinct key sequences (in order of first
/// appearance): it folds them left to right, each time keeping the longer sequence (the one so far on a
/// tie) and appending the other's new keys. So `{"a"}` then `{"c","b"}` gives c, b, a.
fn column_order<'a>(key_orders: impl IntoIterator<Item = Vec<&'a str>>) -> Vec<&'a str> {
    let mut order: Vec<&str> = Vec::new();
    for keys in key_orders {
        let (mut base, other) = if keys.len() > order.len() {
            (keys, std::mem::take(&mut order))
        } else {
            (std::mem::take(&mut order), keys)
        };
        for k in other {
            if !base.contains(&k) {
                base.push(k);
            }
        }
        order = base;
    }
    order
}

/// Joins the pieces: columns in polars' order, each of the type all its pieces fit.
fn join(pieces: Vec<Piece>) -> Option<DataFrame> {
    let rows: usize = pieces.iter().map(|p| p.rows).sum();
    if rows == 0 {
        return None;
    }
    let mut seen: std::collections::HashSet<Vec<&str>> = std::collections::HashSet::new();
    let key_orders = pieces.iter().flat_map(|p| {
        p.key_orders.iter().map(|o| {
            o.iter()
                .map(|&c| p.columns[c].name.as_str())
                .collect::<Vec<_>>()
        })
    });
    let distinct: Vec<Vec<&str>> = key_orders.filter(|o| seen.insert(o.clone())).collect();
    let names: Vec<String> = column_order(distinct)
        .into_iter()
        .map(str::to_string)
        .collect();
    let index: std::collections::HashMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(g, n)| (n.as_str(), g))
        .collect();
    let mut kinds: Vec<Kind> = vec![Kind::Null; names.len()];
    for piece in &pieces {
        for col in &piece.columns {
            let g = index[col.name.as_str()];
            kinds[g] = kinds[g].join(col.kind())?;
        }
    }
    let index: std::collections::HashMap<String, usize> =
        index.into_iter().map(|(n, g)| (n.to_string(), g)).collect();
    if pieces.len() == 1 {
        let piece = pieces.into_iter().next().expect("one piece");
        let mut slots: Vec<Option<Column>> = (0..names.len()).map(|_| None).collect();
        for col in piece.columns {
            let g = index[&col.name];
            slots[g] = Some(col.finish(piece.rows, kinds[g]));
        }
        return DataFrame::new(rows, slots.into_iter().collect::<Option<Vec<_>>>()?).ok();
    }
    // Each piece's columns, placed by global index (a piece may lack some).
    let mut parts: Vec<Vec<Option<Column>>> = Vec::with_capacity(pieces.len());
    let mut heights = Vec::with_capacity(pieces.len());
    for piece in pieces {
        let mut slots: Vec<Option<Column>> = (0..names.len()).map(|_| None).collect();
        for col in piece.columns {
            let g = index[&col.name];
            slots[g] = Some(col.finish(piece.rows, kinds[g]));
        }
        heights.push(piece.rows);
        parts.push(slots);
    }
    let columns: Vec<Column> = (0..names.len())
        .into_par_iter()
        .map(|g| {
            let dtype = kinds[g].dtype();
            let mut joined: Option<Series> = None;
            for (slots, &h) in parts.iter().zip(&heights) {
                let part = match &slots[g] {
                    Some(c) => c.as_materialized_series().clone(),
                    None => Series::full_null(names[g].as_str().into(), h, &dtype),
                };
                match &mut joined {
                    None => joined = Some(part),
                    Some(s) => {
                        s.append(&part).ok()?;
                    }
                }
            }
            Some(joined?.rechunk().into_column())
        })
        .collect::<Option<_>>()?;
    DataFrame::new(rows, columns).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn polars_read(bytes: &[u8]) -> DataFrame {
        JsonReader::new(std::io::Cursor::new(bytes))
            .with_json_format(JsonFormat::JsonLines)
            .infer_schema_len(None)
            .finish()
            .unwrap()
    }

    fn assert_same(ours: &DataFrame, theirs: &DataFrame) {
        assert_eq!(ours.schema(), theirs.schema());
        assert!(ours.equals_missing(theirs), "{ours}\n{theirs}");
    }

    #[test]
    fn flat_lines_read_as_polars_reads_them() {
        let text = concat!(
            "{\"run\":\"a\",\"step\":1,\"t\":0.5,\"ok\":true,\"n\":null}\n",
            "{\"step\":2, \"run\" : \"b\\\"q\\u00e9\", \"t\":2,\"late\":-3e2}\r\n",
            "\n",
            "{\"run\":\"c\",\"step\":-0,\"t\":1e-3,\"ok\":false}",
        );
        let ours = parse(text.as_bytes()).unwrap();
        let theirs = polars_read(text.as_bytes());
        assert_same(&ours, &theirs);
        // polars' order: the longest key sequence first (see column_order).
        assert_eq!(
            ours.get_column_names(),
            ["run", "step", "t", "ok", "n", "late"]
        );
        let reordered = parse(b"{\"a\":1}\n{\"c\":1,\"b\":2}\n{\"d\":1}\n").unwrap();
        assert_eq!(reordered.get_column_names(), ["c", "b", "a", "d"]);
        assert_eq!(ours.column("t").unwrap().dtype(), &DataType::Float64);
        assert_eq!(ours.column("step").unwrap().dtype(), &DataType::Int64);
        assert_eq!(ours.column("n").unwrap().dtype(), &DataType::Null);
        assert_eq!(
            ours.column("run").unwrap().str().unwrap().get(1),
            Some("b\"qé")
        );
    }

    #[test]
    fn what_polars_must_read_is_left_to_it() {
        for text in [
            "{\"a\":[1,2]}\n",
            "{\"a\":{\"b\":1}}\n",
            "{\"a\":1,\"a\":2}\n",
            "{\"a\":1}\n{\"a\":\"x\"}\n",
            "{\"a\":01}\n",
            "{\"a\":1.}\n",
            "{\"a\":NaN}\n",
            "{\"a\":99999999999999999999}\n",
            "{\"a\":1} {\"a\":2}\n",
            "{\"a\":1\n",
            "[1]\n",
            "{}\n",
            "{\"a\\u0062\":1}\n",
            "",
        ] {
            assert!(parse(text.as_bytes()).is_none(), "{text:?}");
        }
    }

    #[test]
    fn pieces_join_in_order_with_widened_types() {
        // Big enough for several pieces: an integer column turns fractional and a key appears late.
        let mut text = String::new();
        let rows = 3 * PIECE_BYTES / 30;
        for i in 0..rows {
            if i == rows - 1 {
                text.push_str(&format!("{{\"i\":{i}.5,\"s\":\"x{i}\",\"z\":true}}\n"));
            } else {
                text.push_str(&format!("{{\"i\":{i},\"s\":\"x{i}\"}}\n"));
            }
        }
        let ours = parse(text.as_bytes()).unwrap();
        assert_same(&ours, &polars_read(text.as_bytes()));
        assert_eq!(ours.height(), rows);
        assert_eq!(ours.column("i").unwrap().dtype(), &DataType::Float64);
        assert_eq!(ours.column("z").unwrap().null_count(), rows - 1);
    }

    #[test]
    fn numbers_parse_to_the_same_bits_as_the_standard_parser() {
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..200_000 {
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
                    match parse_number(&text, 0) {
                        Some((Cell::Float(got), end)) => {
                            assert_eq!(end, text.len(), "{text}");
                            assert_eq!(got.to_bits(), want.to_bits(), "{text}");
                        }
                        Some((Cell::Int(got), _)) => assert_eq!(got as f64, want, "{text}"),
                        _ => panic!("{text} not read"),
                    }
                }
            }
        }
    }

    /// A value of the JSON type each key holds (or null).
    fn value(key: usize) -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let v: BoxedStrategy<String> = match key {
            0 => any::<i64>().prop_map(|i| i.to_string()).boxed(),
            1 => prop_oneof![
                any::<f64>()
                    .prop_filter("finite", |f| f.is_finite())
                    .prop_map(|f| format!("{f:?}")),
                any::<f64>()
                    .prop_filter("finite", |f| f.is_finite())
                    .prop_map(|f| format!("{f:e}")),
                (-1000i64..1000).prop_map(|i| i.to_string()),
            ]
            .boxed(),
            2 => any::<String>()
                .prop_map(|s| serde_json::to_string(&s).unwrap())
                .boxed(),
            _ => any::<bool>().prop_map(|b| b.to_string()).boxed(),
        };
        prop_oneof![4 => v, 1 => Just("null".to_string())]
    }

    use proptest::strategy::Strategy as _;

    proptest::proptest! {
        #[test]
        fn random_flat_lines_match_polars(
            lines in proptest::collection::vec(
                proptest::collection::vec((0usize..4, proptest::bool::ANY), 1..5)
                    .prop_flat_map(|keys| {
                        let values: Vec<_> = keys.iter().map(|(k, _)| value(*k)).collect();
                        (proptest::strategy::Just(keys), values)
                    }),
                1..40,
            )
        ) {
            use std::fmt::Write;
            let names = ["int", "float", "text", "flag"];
            let mut text = String::new();
            for (keys, values) in &lines {
                let mut seen = Vec::new();
                let mut fields = Vec::new();
                for ((k, spaced), v) in keys.iter().zip(values) {
                    if seen.contains(k) { continue; }
                    seen.push(*k);
                    fields.push(if *spaced { format!("\"{}\" : {v}", names[*k]) } else { format!("\"{}\":{v}", names[*k]) });
                }
                writeln!(text, "{{{}}}", fields.join(",")).unwrap();
            }
            let ours = parse(text.as_bytes());
            proptest::prop_assert!(ours.is_some(), "gave up on {text}");
            assert_same(&ours.unwrap(), &polars_read(text.as_bytes()));
        }
    }
}
