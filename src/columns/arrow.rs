//! Field values read straight from an Arrow record batch, for the Python package and the engines: the
//! numeric and text columns a mapping names are read where they lie, without carrying the whole batch into
//! polars first. Any other type of column is carried into polars on its own and read as the command line
//! reads it, so both ways give the same values.
//!
//! Measured (benches/python_enrich.py, 1M rows): carrying every column of a batch into polars and the added
//! columns back took about 30% of `mfu.enrich`'s time; see docs/python.md for the figures.

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::datatypes::{DataType as ArrowType, Float64Type, Int64Type};
use polars::prelude::{PlHashMap, PolarsError, PolarsResult};

use super::{numeric_values, text_numbers, text_values, FieldTable, Numbers, Texts};

fn column<'a>(batch: &'a RecordBatch, name: &str) -> PolarsResult<&'a ArrayRef> {
    batch
        .column_by_name(name)
        .ok_or_else(|| PolarsError::ColumnNotFound(name.to_string().into()))
}

/// One column carried into polars, for the types read there.
fn as_polars(name: &str, array: &ArrayRef) -> PolarsResult<polars::prelude::Column> {
    crate::arrow_bridge::arrow_rs_to_series(name, array)
        .map(polars::prelude::IntoColumn::into_column)
        .map_err(|e| PolarsError::ComputeError(e.to_string().into()))
}

/// Whether two cells hold the same text. Texts of 4 to 32 bytes (device names, precisions, run ids) are
/// compared as two to four overlapping words in line: most cells of a log column equal the one
/// before, and a call to `memcmp` for each cost more than the comparison itself (measured: `memcmp` was 11%
/// of `mfu.enrich`'s time on a 1M-row table).
#[inline]
fn same_text(a: Option<&[u8]>, b: Option<&[u8]>) -> bool {
    #[inline(always)]
    fn word(s: &[u8], at: usize) -> u64 {
        let mut w = [0u8; 8];
        w.copy_from_slice(&s[at..at + 8]);
        u64::from_le_bytes(w)
    }
    let (a, b) = match (a, b) {
        (Some(a), Some(b)) => (a, b),
        (None, None) => return true,
        _ => return false,
    };
    let n = a.len();
    if n != b.len() {
        return false;
    }
    #[inline(always)]
    fn half(s: &[u8], at: usize) -> u32 {
        let mut w = [0u8; 4];
        w.copy_from_slice(&s[at..at + 4]);
        u32::from_le_bytes(w)
    }
    match n {
        4..=7 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        17..=32 => {
            word(a, 0) == word(b, 0)
                && word(a, 8) == word(b, 8)
                && word(a, n - 16) == word(b, n - 16)
                && word(a, n - 8) == word(b, n - 8)
        }
        _ => a == b,
    }
}

/// Rows checked at once for repeating the row before them (see [`Coder::push_array`]).
const REPEAT_WINDOW: usize = 512;

/// Distinct cells remembered besides the last one, so rows that alternate between a few texts (devices
/// interleaved row by row) skip the map too.
const RECENT: usize = 4;

/// Text cells coded by first appearance, across any number of arrays: a cell equal to the one before it,
/// or to one of the few distinct cells before that, skips the map. A string array without nulls is read
/// straight from its offsets and bytes.
struct Coder<'a> {
    index: PlHashMap<Vec<u8>, u32>,
    null_code: Option<u32>,
    values: Vec<Option<String>>,
    codes: Vec<u32>,
    last: Option<(Option<&'a [u8]>, u32)>,
    recent: Vec<(&'a [u8], u32)>,
    next_recent: usize,
}

impl<'a> Coder<'a> {
    fn new(rows: usize) -> Coder<'a> {
        Coder {
            index: PlHashMap::default(),
            null_code: None,
            values: Vec::new(),
            codes: Vec::with_capacity(rows),
            last: None,
            recent: Vec::with_capacity(RECENT),
            next_recent: 0,
        }
    }

    /// The code of `cell`, a new one at its first appearance.
    fn code_of(&mut self, cell: Option<&[u8]>) -> u32 {
        let values = &mut self.values;
        let mut new = |value: Option<String>| {
            values.push(value);
            (values.len() - 1) as u32
        };
        match cell {
            None => *self.null_code.get_or_insert_with(|| new(None)),
            Some(c) => match self.index.get(c) {
                Some(code) => *code,
                None => {
                    // The cells are a string array's, so UTF-8: the lossy conversion changes nothing.
                    let code = new(Some(String::from_utf8_lossy(c).into_owned()));
                    self.index.insert(c.to_vec(), code);
                    code
                }
            },
        }
    }

    /// Codes a cell that lives as long as the coder, and gives its code: a cell equal to the one before,
    /// or to a recent distinct one, skips the map.
    #[inline(always)]
    fn push(&mut self, cell: Option<&'a [u8]>) -> u32 {
        let code = match self.last {
            Some((prev, code)) if same_text(prev, cell) => code,
            _ => {
                let code = self.code_of_recent(cell);
                self.last = Some((cell, code));
                code
            }
        };
        self.codes.push(code);
        code
    }

    /// The code of a cell that differs from the one before: looked for among the recent distinct cells,
    /// then in the map (and remembered as recent).
    #[inline(never)]
    fn code_of_recent(&mut self, cell: Option<&'a [u8]>) -> u32 {
        let Some(c) = cell else {
            return self.code_of(None);
        };
        if let Some((_, code)) = self
            .recent
            .iter()
            .find(|(r, _)| same_text(Some(r), Some(c)))
        {
            return *code;
        }
        let code = self.code_of(Some(c));
        if self.recent.len() < RECENT {
            self.recent.push((c, code));
        } else {
            self.recent[self.next_recent % RECENT] = (c, code);
        }
        self.next_recent += 1;
        code
    }

    /// Codes `rows` more cells of code `code`.
    fn repeat(&mut self, code: u32, rows: usize) {
        self.codes.extend(std::iter::repeat_n(code, rows));
    }

    /// Codes a cell that does not outlive this call.
    fn push_owned(&mut self, cell: Option<&str>) {
        let code = self.code_of(cell.map(str::as_bytes));
        self.last = None;
        self.codes.push(code);
    }

    /// Codes every cell of `array`; false (nothing coded) when it is not a string array.
    fn push_array(&mut self, array: &'a ArrayRef) -> bool {
        fn offsets<'a, O: arrow::array::OffsetSizeTrait>(
            coder: &mut Coder<'a>,
            array: &'a arrow::array::GenericStringArray<O>,
        ) {
            if array.null_count() > 0 {
                array.iter().for_each(|cell| {
                    coder.push(cell.map(str::as_bytes));
                });
                return;
            }
            let data = array.value_data();
            let offsets = array.value_offsets();
            let cell = |row: usize| &data[offsets[row].as_usize()..offsets[row + 1].as_usize()];
            let rows = offsets.len() - 1;
            let mut row = 0;
            while row < rows {
                let first = cell(row);
                let code = coder.push(Some(first));
                row += 1;
                // The rows after it, up to a window of them, that repeat it: each as long as it, and the
                // bytes from it to the window's end repeating with its length as the period (one
                // comparison of the window's bytes where a comparison per row was 18% of `mfu.enrich`'s
                // time on a 1M-row table). A window that does not repeat is coded row by row.
                let len = first.len();
                let window_end = (row + REPEAT_WINDOW).min(rows);
                let same_length = offsets[row..=window_end]
                    .windows(2)
                    .take_while(|w| w[1].as_usize() - w[0].as_usize() == len)
                    .count();
                if same_length == 0 || len == 0 {
                    continue;
                }
                let (start, end) = (
                    offsets[row - 1].as_usize(),
                    offsets[row + same_length].as_usize(),
                );
                if data[start + len..end] == data[start..end - len] {
                    coder.repeat(code, same_length);
                } else {
                    (row..row + same_length).for_each(|r| {
                        coder.push(Some(cell(r)));
                    });
                }
                row += same_length;
            }
        }
        match array.data_type() {
            ArrowType::Utf8 => offsets(self, array.as_string::<i32>()),
            ArrowType::LargeUtf8 => offsets(self, array.as_string::<i64>()),
            ArrowType::Utf8View => array.as_string_view().iter().for_each(|cell| {
                self.push(cell.map(str::as_bytes));
            }),
            _ => return false,
        }
        true
    }

    fn finish(self) -> Texts {
        Texts::Coded {
            codes: self.codes,
            values: self.values,
        }
    }
}

/// Several batches of one schema read as one table (a stream enriched whole, so running totals and windows
/// see every row), without concatenating them.
pub struct Batches<'a>(pub &'a [RecordBatch]);

impl FieldTable for Batches<'_> {
    fn height(&self) -> usize {
        self.0.iter().map(RecordBatch::num_rows).sum()
    }

    fn dense(&self, name: &str, scale: f64) -> Option<Numbers> {
        if let [batch] = self.0 {
            return batch.dense(name, scale);
        }
        // Each batch's buffer shared, in pieces, not concatenated.
        let mut starts = Vec::with_capacity(self.0.len());
        let mut pieces = Vec::with_capacity(self.0.len());
        let mut start = 0;
        for batch in self.0.iter().filter(|b| b.num_rows() > 0) {
            starts.push(start);
            pieces.push(batch.dense(name, scale)?);
            start += batch.num_rows();
        }
        Some(Numbers::Pieces { starts, pieces })
    }

    fn numbers(
        &self,
        name: &str,
        scale: f64,
        is_time: bool,
    ) -> PolarsResult<(Vec<Option<f64>>, usize)> {
        let mut values = Vec::with_capacity(self.height());
        let mut bad = 0;
        for batch in self.0 {
            let (v, b) = batch.numbers(name, scale, is_time)?;
            values.extend(v);
            bad += b;
        }
        Ok((values, bad))
    }

    fn texts(&self, name: &str) -> PolarsResult<Texts> {
        // One coder over every batch's cells: codes over the whole stream in one pass. A batch whose
        // column is not a string array is read another way and coded cell by cell.
        let mut coder = Coder::new(self.height());
        for batch in self.0 {
            if !coder.push_array(column(batch, name)?) {
                let texts = batch.texts(name)?;
                for row in 0..batch.num_rows() {
                    coder.push_owned(texts.get(row));
                }
            }
        }
        Ok(coder.finish())
    }
}

impl FieldTable for RecordBatch {
    fn height(&self) -> usize {
        self.num_rows()
    }

    fn dense(&self, name: &str, scale: f64) -> Option<Numbers> {
        let array = self.column_by_name(name)?;
        if array.null_count() > 0 {
            return None;
        }
        let t = array.data_type();
        if !(t.is_integer() || t.is_floating()) {
            return None;
        }
        if *t == ArrowType::Int64 && scale == 1.0 {
            // Shared, and read as floats where they are used: no cast of the whole column.
            return Some(Numbers::DenseInt(
                array.as_primitive::<Int64Type>().values().clone(),
            ));
        }
        let floats = if *t == ArrowType::Float64 {
            array.clone()
        } else {
            arrow::compute::cast(array, &ArrowType::Float64).ok()?
        };
        let floats = floats.as_primitive::<Float64Type>();
        // A Float64 column's values are shared, not copied.
        Some(Numbers::Dense(if scale == 1.0 {
            floats.values().clone()
        } else {
            floats.values().iter().map(|v| v * scale).collect()
        }))
    }

    fn numbers(
        &self,
        name: &str,
        scale: f64,
        is_time: bool,
    ) -> PolarsResult<(Vec<Option<f64>>, usize)> {
        let array = column(self, name)?;
        let floats = |array: &ArrayRef| -> (Vec<Option<f64>>, usize) {
            let floats = array.as_primitive::<Float64Type>();
            let values = match floats.nulls().filter(|n| n.null_count() > 0) {
                None => floats.values().iter().map(|v| Some(v * scale)).collect(),
                Some(nulls) => floats
                    .values()
                    .iter()
                    .zip(nulls.iter())
                    .map(|(v, ok)| ok.then(|| v * scale))
                    .collect(),
            };
            (values, 0)
        };
        match array.data_type() {
            ArrowType::Float64 => Ok(floats(array)),
            t if t.is_integer() || t.is_floating() => {
                let cast = arrow::compute::cast(array, &ArrowType::Float64)
                    .map_err(|e| PolarsError::ComputeError(e.to_string().into()))?;
                Ok(floats(&cast))
            }
            ArrowType::Utf8 => Ok(text_numbers(
                array.as_string::<i32>().iter(),
                scale,
                is_time,
            )),
            ArrowType::LargeUtf8 => Ok(text_numbers(
                array.as_string::<i64>().iter(),
                scale,
                is_time,
            )),
            ArrowType::Utf8View => Ok(text_numbers(array.as_string_view().iter(), scale, is_time)),
            _ => numeric_values(&as_polars(name, array)?, scale, is_time),
        }
    }

    fn texts(&self, name: &str) -> PolarsResult<Texts> {
        let array = column(self, name)?;
        let rows = array.len();
        let mut coder = Coder::new(rows);
        Ok(if coder.push_array(array) {
            coder.finish()
        } else {
            Texts::Column(text_values(&as_polars(name, array)?)?)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Coding a string array a window at a time gives the codes and values of coding it cell by cell,
    /// over runs longer and shorter than a window, cells of one length that differ, empty cells, and
    /// several arrays in a row.
    #[test]
    fn coding_by_windows_equals_coding_by_cells() {
        use arrow::array::{LargeStringArray, StringArray};
        use std::sync::Arc;
        let words = [
            "bf16",
            "fp16",
            "",
            "NVIDIA H100 80GB HBM3",
            "NVIDIA H200 80GB HBM3",
            "é✓",
        ];
        let mut state = 0x2545_f491_u64;
        let mut next = move |bound: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % bound as u64) as usize
        };
        for case in 0..60 {
            let mut cells: Vec<&str> = Vec::new();
            while cells.len() < 3000 {
                let word = words[next(words.len())];
                let run = match case % 3 {
                    0 => 1,
                    1 => 1 + next(20),
                    _ => 1 + next(2000),
                };
                cells.extend(std::iter::repeat_n(word, run));
            }
            let split = next(cells.len());
            let arrays: Vec<ArrayRef> = vec![
                Arc::new(StringArray::from(cells[..split].to_vec())),
                Arc::new(LargeStringArray::from(cells[split..].to_vec())),
            ];
            let mut windows = Coder::new(cells.len());
            for array in &arrays {
                assert!(windows.push_array(array));
            }
            let mut one_by_one = Coder::new(cells.len());
            for cell in &cells {
                one_by_one.push_owned(Some(cell));
            }
            match (windows.finish(), one_by_one.finish()) {
                (
                    Texts::Coded { codes, values },
                    Texts::Coded {
                        codes: want_codes,
                        values: want_values,
                    },
                ) => {
                    assert_eq!(codes, want_codes, "case {case}");
                    assert_eq!(values, want_values, "case {case}");
                }
                _ => unreachable!(),
            }
        }
    }

    proptest::proptest! {
        /// The same over arbitrary cells: short texts over a two-letter alphabet (so many share a length
        /// and differ in one byte), in runs of any length, split into two arrays anywhere.
        #[test]
        fn coding_by_windows_equals_coding_by_cells_for_any_cells(
            runs in proptest::collection::vec(("[ab]{0,6}", 1usize..700), 1..40),
            split in 0usize..10_000,
        ) {
            use arrow::array::{LargeStringArray, StringArray};
            use std::sync::Arc;
            let cells: Vec<&str> = runs
                .iter()
                .flat_map(|(text, run)| std::iter::repeat_n(text.as_str(), *run))
                .collect();
            let split = split.min(cells.len());
            let arrays: Vec<ArrayRef> = vec![
                Arc::new(LargeStringArray::from(cells[..split].to_vec())),
                Arc::new(StringArray::from(cells[split..].to_vec())),
            ];
            let mut windows = Coder::new(cells.len());
            for array in &arrays {
                proptest::prop_assert!(windows.push_array(array));
            }
            let mut one_by_one = Coder::new(cells.len());
            cells.iter().for_each(|cell| one_by_one.push_owned(Some(cell)));
            let (Texts::Coded { codes, values }, Texts::Coded { codes: want, values: want_values }) =
                (windows.finish(), one_by_one.finish())
            else {
                unreachable!()
            };
            proptest::prop_assert_eq!(codes, want);
            proptest::prop_assert_eq!(values, want_values);
        }
    }

    #[test]
    fn same_text_agrees_with_equality() {
        let mut texts: Vec<Option<String>> = vec![None];
        // Every length from 0 to 40, and for each a text differing from it in one byte at each place.
        for n in 0..=40usize {
            let base: String = (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
            texts.push(Some(base.clone()));
            for at in 0..n {
                let mut other = base.clone().into_bytes();
                other[at] = b'Z';
                texts.push(Some(String::from_utf8(other).unwrap()));
            }
        }
        texts.push(Some("é✓ünïcode, NVIDIA H100 80GB HBM3".to_string()));
        for a in &texts {
            for b in &texts {
                let (a, b) = (a.as_deref(), b.as_deref());
                assert_eq!(
                    same_text(a.map(str::as_bytes), b.map(str::as_bytes)),
                    a == b,
                    "{a:?} {b:?}"
                );
            }
        }
    }
}
