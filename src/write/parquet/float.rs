//! Float64 column chunks, PLAIN-encoded here rather than by arrow-rs.
//!
//! Most of an enriched table is floats (timings, losses, rates, and the added throughput and MFU
//! columns). arrow-rs copies each value into its encoder and takes min and max through a 64-bit integer
//! key per value, which the baseline x86-64 target cannot vectorise: about a tenth of a CSV run's
//! instructions. Here the values go to the page as one copy of polars' buffer, and min, max and the NaN
//! count come from a loop over eight lanes that compiles to packed min/max instructions.
//!
//! The statistics are arrow-rs's: NaN is left out of min and max and counted, -0.0 sorts before +0.0,
//! and the page index has each page's min, max, null and NaN counts. A chunk with a page of nulls or NaN
//! only (no min or max to give) is declined, and arrow-rs writes it.

use parquet::basic::{Compression, Encoding};
use parquet::errors::Result;
use parquet::file::statistics::{Statistics, ValueStatistics};
use parquet::schema::types::ColumnDescPtr;
use polars::prelude::Float64Chunked;

use super::chunk::{
    boundary_order, page_with_levels, push_run, ChunkBuilder, EncodedChunk, PageSummary, PAGE_ROWS,
};

// Parquet's PLAIN doubles are little-endian: the page takes polars' buffer as it is in memory.
const _: () = assert!(cfg!(target_endian = "little"));

/// Smallest and largest non-NaN value and the NaN count of `values`; min is +inf and max -inf when
/// there is no such value. Equal zeros of either sign are told apart by [`settle_zeros`].
fn min_max_nans(values: &[f64]) -> (f64, f64, u64) {
    const LANES: usize = 8;
    let mut mins = [f64::INFINITY; LANES];
    let mut maxs = [f64::NEG_INFINITY; LANES];
    let mut nans = [0u64; LANES];
    let chunks = values.chunks_exact(LANES);
    let rest = chunks.remainder();
    for chunk in chunks {
        for i in 0..LANES {
            let v = chunk[i];
            // A comparison with NaN is false, so NaN never replaces a bound.
            mins[i] = if v < mins[i] { v } else { mins[i] };
            maxs[i] = if v > maxs[i] { v } else { maxs[i] };
            nans[i] += u64::from(v.is_nan());
        }
    }
    for (i, &v) in rest.iter().enumerate() {
        mins[i] = if v < mins[i] { v } else { mins[i] };
        maxs[i] = if v > maxs[i] { v } else { maxs[i] };
        nans[i] += u64::from(v.is_nan());
    }
    let min = mins
        .into_iter()
        .fold(f64::INFINITY, |a, b| if b < a { b } else { a });
    let max = maxs
        .into_iter()
        .fold(f64::NEG_INFINITY, |a, b| if b > a { b } else { a });
    (min, max, nans.into_iter().sum())
}

/// Bounds of zero made exact in IEEE total order (as arrow-rs orders floats): a min of zero is -0.0 if
/// the values hold one, a max of zero is +0.0 if they hold one. Comparisons cannot tell the two apart,
/// so this looks at the bits, and only when a bound is zero.
fn settle_zeros(values: &[&[f64]], min: f64, max: f64) -> (f64, f64) {
    let has = |zero: f64| {
        values
            .iter()
            .any(|s| s.iter().any(|v| v.to_bits() == zero.to_bits()))
    };
    let min = if min == 0.0 {
        if has(-0.0) {
            -0.0
        } else {
            0.0
        }
    } else {
        min
    };
    let max = if max == 0.0 {
        if has(0.0) {
            0.0
        } else {
            -0.0
        }
    } else {
        max
    };
    (min, max)
}

/// One data page being filled: its values stay in polars' buffers until the page is written.
#[derive(Default)]
struct FloatPage<'a> {
    rows: u32,
    nulls: u32,
    levels: Vec<(u32, u32)>,
    values: Vec<&'a [f64]>,
}

impl<'a> FloatPage<'a> {
    fn push_values(&mut self, values: &'a [f64]) {
        self.values.push(values);
        self.rows += values.len() as u32;
        push_run(&mut self.levels, 1, values.len() as u32);
    }

    fn push_nulls(&mut self, count: u32) {
        self.rows += count;
        self.nulls += count;
        push_run(&mut self.levels, 0, count);
    }
}

/// Encodes `column` (one row group's slice) as a PLAIN chunk of the flat, optional DOUBLE column
/// `descr`; `None` where arrow-rs should write it instead (see the module doc).
pub fn encode_float_chunk(
    column: &Float64Chunked,
    descr: ColumnDescPtr,
    codec: Compression,
) -> Result<Option<EncodedChunk>> {
    let mut pages = Vec::new();
    let mut page = FloatPage::default();
    for array in column.downcast_iter() {
        let values = array.values().as_slice();
        let validity = array.validity().filter(|v| v.unset_bits() > 0);
        let mut i = 0;
        while i < values.len() {
            if page.rows as usize == PAGE_ROWS {
                pages.push(std::mem::take(&mut page));
            }
            let limit = values.len().min(i + PAGE_ROWS - page.rows as usize);
            let end = match validity {
                None => {
                    page.push_values(&values[i..limit]);
                    limit
                }
                Some(v) => {
                    // The stretch from row i that is all values or all nulls.
                    let valid = v.get_bit(i);
                    let mut end = i + 1;
                    while end < limit && v.get_bit(end) == valid {
                        end += 1;
                    }
                    if valid {
                        page.push_values(&values[i..end]);
                    } else {
                        page.push_nulls((end - i) as u32);
                    }
                    end
                }
            };
            i = end;
        }
    }
    if page.rows > 0 {
        pages.push(page);
    }
    if pages.is_empty() {
        return Ok(None);
    }

    let mut summaries = Vec::with_capacity(pages.len());
    for page in &pages {
        let (mut min, mut max, mut nans) = (f64::INFINITY, f64::NEG_INFINITY, 0);
        for values in &page.values {
            let (lo, hi, n) = min_max_nans(values);
            min = if lo < min { lo } else { min };
            max = if hi > max { hi } else { max };
            nans += n;
        }
        if nans == u64::from(page.rows - page.nulls) {
            return Ok(None);
        }
        let (min, max) = settle_zeros(&page.values, min, max);
        summaries.push((min, max, nans));
    }

    let mut chunk = ChunkBuilder::new(&descr, codec);
    for (page, &(min, max, nans)) in pages.iter().zip(&summaries) {
        let mut body = page_with_levels(&page.levels, (page.rows - page.nulls) as usize * 8);
        for values in &page.values {
            body.extend_from_slice(bytemuck::cast_slice(values));
        }
        let summary = PageSummary {
            rows: page.rows,
            nulls: page.nulls,
            min: min.to_le_bytes().to_vec(),
            max: max.to_le_bytes().to_vec(),
            nans: Some(nans as i64),
            value_bytes: None,
        };
        chunk.data_page(body, Encoding::PLAIN, summary)?;
    }
    let total = |a: f64, b: f64| a.total_cmp(&b);
    let min = summaries.iter().map(|s| s.0).min_by(|a, b| total(*a, *b));
    let max = summaries.iter().map(|s| s.1).max_by(|a, b| total(*a, *b));
    let (nulls, nans) = chunk.counts();
    let statistics = Statistics::Double(
        ValueStatistics::new(min, max, None, Some(nulls), false)
            .with_nan_count(nans)
            .with_backwards_compatible_min_max(true),
    );
    let bounds: Vec<(f64, f64)> = summaries.iter().map(|s| (s.0, s.1)).collect();
    chunk
        .finish(descr, statistics, boundary_order(&bounds))
        .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write::parquet::chunk::testing::{arrow_rs_file, descriptor, our_file, read_column};
    use arrow::array::Float64Array;
    use parquet::file::page_index::column_index::ColumnIndexMetaData;
    use polars::prelude::*;

    fn frame(column: &Float64Chunked) -> DataFrame {
        DataFrame::new(column.len(), vec![column.clone().into_column()]).unwrap()
    }

    /// Values read back, as bits (so NaN and the sign of zero count).
    fn bits_of(arrays: &[arrow::array::ArrayRef]) -> Vec<Option<u64>> {
        arrays
            .iter()
            .flat_map(|a| {
                let a = a.as_any().downcast_ref::<Float64Array>().unwrap();
                a.iter().map(|v| v.map(f64::to_bits)).collect::<Vec<_>>()
            })
            .collect()
    }

    /// A column in two arrays: a timing-like noisy float, with nulls, NaN, zeros of both signs and
    /// infinities sprinkled in.
    fn column(rows: usize) -> Float64Chunked {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut value = move |i: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            match i % 997 {
                5 => None,
                6 => Some(f64::NAN),
                7 => Some(-0.0),
                8 => Some(0.0),
                9 if i > 30_000 => Some(f64::NEG_INFINITY),
                _ => Some((state >> 11) as f64 / (1u64 << 53) as f64 * 300.0 - 20.0),
            }
        };
        let half = rows / 2;
        let mut first: Float64Chunked = (0..half).map(&mut value).collect();
        first.rename("x".into());
        let second: Float64Chunked = (half..rows).map(&mut value).collect();
        first.append(&second).unwrap();
        first
    }

    #[test]
    fn min_max_and_nans_agree_with_total_order() {
        let cases: Vec<Vec<f64>> = vec![
            vec![
                1.0,
                f64::NAN,
                -3.5,
                2.0,
                f64::NAN,
                7.25,
                -0.5,
                0.1,
                9.0,
                -4.0,
                3.0,
            ],
            vec![0.0, -0.0, 0.0],
            vec![-0.0, 5.0],
            vec![0.0, -5.0],
            vec![f64::INFINITY, f64::NAN],
            vec![f64::NEG_INFINITY; 3],
        ];
        for values in cases {
            let (min, max, nans) = min_max_nans(&values);
            let (min, max) = settle_zeros(&[&values], min, max);
            let present: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
            let want_min = present.iter().copied().min_by(f64::total_cmp).unwrap();
            let want_max = present.iter().copied().max_by(f64::total_cmp).unwrap();
            assert_eq!(min.to_bits(), want_min.to_bits(), "{values:?}");
            assert_eq!(max.to_bits(), want_max.to_bits(), "{values:?}");
            assert_eq!(nans as usize, values.len() - present.len());
        }
    }

    #[test]
    fn chunks_read_back_as_arrow_rs_writes_them() {
        let rows = 50_000;
        let values = column(rows);
        assert_eq!(values.chunks().len(), 2);
        let df = frame(&values);
        let encoded = encode_float_chunk(&values, descriptor(&df), Compression::UNCOMPRESSED)
            .unwrap()
            .expect("encoded here");
        assert_eq!(encoded.close.rows_written, rows as u64);

        let (ours, statistics, metadata) = read_column(our_file(&df));
        let (theirs, want_statistics, _) = read_column(arrow_rs_file(&df));
        let read = bits_of(&ours);
        assert_eq!(read, bits_of(&theirs));
        let written: Vec<Option<u64>> = values.iter().map(|v| v.map(f64::to_bits)).collect();
        assert_eq!(read, written);
        assert_eq!(statistics, want_statistics);
        let nans = values.iter().flatten().filter(|v| v.is_nan()).count();
        assert!(
            nans > 0 && statistics.contains(&format!("Some({nans}) None")),
            "{statistics}"
        );

        let page_index = metadata.page_index_for_row_group(0);
        let ColumnIndexMetaData::DOUBLE(index) = page_index.column_index(0).unwrap() else {
            panic!("a double column index")
        };
        for (page, rows) in written.chunks(PAGE_ROWS).enumerate() {
            let present: Vec<f64> = rows.iter().flatten().map(|b| f64::from_bits(*b)).collect();
            let numbers: Vec<f64> = present.iter().copied().filter(|v| !v.is_nan()).collect();
            let min = numbers.iter().copied().min_by(f64::total_cmp).unwrap();
            let max = numbers.iter().copied().max_by(f64::total_cmp).unwrap();
            assert_eq!(
                index.min_value(page).map(|v| v.to_bits()),
                Some(min.to_bits())
            );
            assert_eq!(
                index.max_value(page).map(|v| v.to_bits()),
                Some(max.to_bits())
            );
            assert_eq!(
                index.null_count(page),
                Some((rows.len() - present.len()) as i64)
            );
            assert_eq!(
                index.nan_count(page),
                Some((present.len() - numbers.len()) as i64)
            );
        }
    }

    #[test]
    fn pages_without_a_number_are_left_to_arrow_rs_and_still_read_back() {
        let cases: Vec<(&str, Float64Chunked)> = vec![
            (
                "a page of NaN",
                (0..20_010)
                    .map(|i| Some(if i < 20_000 { f64::NAN } else { 1.0 }))
                    .collect(),
            ),
            (
                "a page of nulls",
                (0..20_010).map(|i| (i >= 20_000).then_some(1.0)).collect(),
            ),
        ];
        for (why, values) in cases {
            let df = frame(&values);
            let encoded = encode_float_chunk(&values, descriptor(&df), Compression::UNCOMPRESSED);
            assert!(encoded.unwrap().is_none(), "{why}");
            let (read, _, _) = read_column(our_file(&df));
            let written: Vec<Option<u64>> = values.iter().map(|v| v.map(f64::to_bits)).collect();
            assert_eq!(bits_of(&read), written, "{why}");
        }
    }
}
