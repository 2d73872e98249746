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
use rayon::prelude::*;

use super::bytes::find_either;
use super::number::{parse_number_at, Number};
use super::text_column::TextColumn;
use super::validity::Validity;

/// Bytes per parallel piece: small inputs are parsed on the calling thread.
const PIECE_BYTES: usize = 4 << 20;

/// Parses flat JSON Lines into a frame, or `None` when polars should read them instead.
pub fn parse(bytes: &[u8]) -> Option<DataFrame> {
    let text = std::str::from_utf8(bytes).ok()?;
    let pieces: Vec<&str> = super::bytes::line_ranges(
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
    Int(Vec<i64>, Validity),
    Float(Vec<f64>, Validity),
    Bool(Vec<bool>, Validity),
    Str(TextColumn),
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
    #[inline]
    fn pad(&mut self, row: usize) {
        if self.len < row {
            self.pad_missing(row);
        }
    }

    /// [`ColumnBuilder::pad`] where rows are missing (a key absent from some lines).
    #[cold]
    fn pad_missing(&mut self, row: usize) {
        let missing = row - self.len;
        match &mut self.values {
            Values::Null => {}
            Values::Int(v, valid) => {
                valid.extend_nulls(v.len(), missing);
                v.resize(row, 0);
            }
            Values::Float(v, valid) => {
                valid.extend_nulls(v.len(), missing);
                v.resize(row, 0.0);
            }
            Values::Bool(v, valid) => {
                valid.extend_nulls(v.len(), missing);
                v.resize(row, false);
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
            let validity = || {
                let mut valid = Validity::default();
                valid.extend_nulls(0, nulls);
                valid
            };
            self.values = match cell {
                Cell::Null => Values::Null,
                Cell::Int(_) => Values::Int(vec![0; nulls], validity()),
                Cell::Float(_) => Values::Float(vec![0.0; nulls], validity()),
                Cell::Bool(_) => Values::Bool(vec![false; nulls], validity()),
                Cell::Str(_) | Cell::Owned(_) => {
                    let mut a = TextColumn::with_capacity(nulls + 1024);
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
                valid.push_valid();
            }
            (Values::Int(v, valid), Cell::Float(x)) => {
                // A fractional value after integers: the column becomes Float64, as polars makes it.
                let mut floats: Vec<f64> = v.iter().map(|i| *i as f64).collect();
                floats.push(x);
                let mut valid = std::mem::take(valid);
                valid.push_valid();
                self.values = Values::Float(floats, valid);
            }
            (Values::Float(v, valid), Cell::Float(x)) => {
                v.push(x);
                valid.push_valid();
            }
            (Values::Float(v, valid), Cell::Int(x)) => {
                v.push(x as f64);
                valid.push_valid();
            }
            (Values::Bool(v, valid), Cell::Bool(x)) => {
                v.push(x);
                valid.push_valid();
            }
            (Values::Str(a), Cell::Str(s)) => a.push_value(s),
            (Values::Str(a), Cell::Owned(s)) => a.push_value(s.as_str()),
            (Values::Int(v, valid), Cell::Null) => {
                valid.push_null(v.len());
                v.push(0);
            }
            (Values::Float(v, valid), Cell::Null) => {
                valid.push_null(v.len());
                v.push(0.0);
            }
            (Values::Bool(v, valid), Cell::Null) => {
                valid.push_null(v.len());
                v.push(false);
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
        let validity = Validity::finish;
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
            (Values::Str(a), _) => StringChunked::with_chunk(name, a.finish()).into_series(),
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

/// The position of the first `"` or `\\` at or after `from` (`b.len()` if none).
#[inline]
fn string_end(b: &[u8], from: usize) -> usize {
    find_either(b, from, b.len(), b'"', b'\\')
}

/// Byte equality for short keys, without a call into the C library: eight bytes at a time, the last
/// word overlapping the one before (four for keys of four to seven bytes).
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word =
        |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().expect("eight bytes"));
    let half = |s: &[u8], i: usize| u32::from_le_bytes(s[i..i + 4].try_into().expect("four bytes"));
    match n {
        0..=3 => a.iter().zip(b).all(|(x, y)| x == y),
        4..=7 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        _ => {
            let mut i = 0;
            while i + 8 < n {
                if word(a, i) != word(b, i) {
                    return false;
                }
                i += 8;
            }
            word(a, n - 8) == word(b, n - 8)
        }
    }
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
        b'-' | b'0'..=b'9' => {
            let (number, end) = parse_number_at(text, i)?;
            Some((
                match number {
                    Number::Int(v) => Cell::Int(v),
                    Number::Float(v) => Cell::Float(v),
                },
                end,
            ))
        }
        _ => None,
    }
}

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

    #[test]
    fn same_bytes_compares_every_length() {
        let text = b"abcdefghijklmnopqrstuvwxyz0123456789";
        for n in 0..text.len() {
            let a = &text[..n];
            let copy = a.to_vec();
            assert!(same_bytes(a, &copy));
            assert!(!same_bytes(a, &text[..n + 1]));
            for at in 0..n {
                let mut other = a.to_vec();
                other[at] ^= 1;
                assert!(!same_bytes(a, &other), "{n} {at}");
            }
        }
    }

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
