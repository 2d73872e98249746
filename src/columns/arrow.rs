//! Field values read straight from an Arrow record batch, for the Python package and the engines: the
//! numeric and text columns a mapping names are read where they lie, without carrying the whole batch into
//! polars first. Any other type of column is carried into polars on its own and read as the command line
//! reads it, so both ways give the same values.
//!
//! Measured (benches/python_enrich.py, 1M rows): carrying every column of a batch into polars and the added
//! columns back took about 30% of `mfu.enrich`'s time; see docs/python.md for the figures.

use std::collections::HashMap;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::datatypes::{DataType as ArrowType, Float64Type, Int64Type};
use polars::prelude::{PolarsError, PolarsResult};

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
fn same_text(a: Option<&str>, b: Option<&str>) -> bool {
    #[inline(always)]
    fn word(s: &[u8], at: usize) -> u64 {
        let mut w = [0u8; 8];
        w.copy_from_slice(&s[at..at + 8]);
        u64::from_le_bytes(w)
    }
    let (a, b) = match (a, b) {
        (Some(a), Some(b)) => (a.as_bytes(), b.as_bytes()),
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

/// Texts coded by first appearance; a row equal to the row before it skips the map.
fn coded<'a>(cells: impl Iterator<Item = Option<&'a str>>, rows: usize) -> Texts {
    let mut index: HashMap<Option<&str>, u32> = HashMap::new();
    let mut values: Vec<Option<String>> = Vec::new();
    let mut codes = Vec::with_capacity(rows);
    let mut last: Option<(Option<&str>, u32)> = None;
    for cell in cells {
        let code = match last {
            Some((prev, code)) if same_text(prev, cell) => code,
            _ => {
                let code = *index.entry(cell).or_insert_with(|| {
                    values.push(cell.map(str::to_string));
                    (values.len() - 1) as u32
                });
                last = Some((cell, code));
                code
            }
        };
        codes.push(code);
    }
    Texts::Coded { codes, values }
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
        let parts = self
            .0
            .iter()
            .map(|b| b.texts(name).map(|t| (t, b.num_rows())))
            .collect::<PolarsResult<Vec<_>>>()?;
        if let [(only, _)] = parts.as_slice() {
            if matches!(only, Texts::Coded { .. }) {
                return Ok(parts.into_iter().next().expect("one part").0);
            }
        }
        // Each batch's codes mapped to codes over all batches (by first appearance), so no text is
        // compared again; a batch read another way is coded cell by cell.
        let mut index: HashMap<Option<String>, u32> = HashMap::new();
        let mut values: Vec<Option<String>> = Vec::new();
        let mut codes = Vec::with_capacity(self.height());
        let mut global = |value: Option<&str>| -> u32 {
            let key = value.map(str::to_string);
            *index.entry(key.clone()).or_insert_with(|| {
                values.push(key);
                (values.len() - 1) as u32
            })
        };
        for (texts, rows) in &parts {
            match texts {
                Texts::Coded {
                    codes: local,
                    values: names,
                } => {
                    let map: Vec<u32> = names.iter().map(|v| global(v.as_deref())).collect();
                    codes.extend(local.iter().map(|c| map[*c as usize]));
                }
                other => codes.extend((0..*rows).map(|row| global(other.get(row)))),
            }
        }
        Ok(Texts::Coded { codes, values })
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
        Ok(match array.data_type() {
            ArrowType::Utf8 => coded(array.as_string::<i32>().iter(), rows),
            ArrowType::LargeUtf8 => coded(array.as_string::<i64>().iter(), rows),
            ArrowType::Utf8View => coded(array.as_string_view().iter(), rows),
            _ => Texts::Column(text_values(&as_polars(name, array)?)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                assert_eq!(same_text(a, b), a == b, "{a:?} {b:?}");
            }
        }
    }
}
