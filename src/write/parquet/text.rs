//! Text column chunks, dictionary-encoded here rather than by arrow-rs.
//!
//! Trainer logs repeat their text: a run name, a device and a dtype hold for thousands of rows. arrow-rs
//! hashes and compares every value to build the dictionary and compares every value twice more for the
//! statistics (about a sixth of a CSV run's instructions, and the Arrow copy it needs another 3%). Here a
//! value is looked up only when it differs from the row before: polars' string views make "the same as
//! the row before" one 16-byte comparison, and otherwise a comparison of the bytes. Indices are kept as
//! runs, which is how Parquet's hybrid encoding stores them, and the statistics are taken from the few
//! distinct values of each page, not from every row.
//!
//! The chunk has what arrow-rs writes for the same column: a PLAIN dictionary page, RLE_DICTIONARY data
//! pages of at most [`PAGE_ROWS`] rows with RLE definition levels, chunk and page
//! statistics (the column index), the offset index, value byte counts and definition-level histograms.
//! When the dictionary would pass arrow-rs's size limit, a value is too long to go into the statistics
//! untruncated, or a page holds only nulls, [`encode_text_chunk`] declines and arrow-rs writes the chunk.

use parquet::basic::{Compression, Encoding};
use parquet::data_type::ByteArray;
use parquet::errors::Result;
use parquet::file::properties::{
    DEFAULT_DICTIONARY_PAGE_SIZE_LIMIT, DEFAULT_STATISTICS_TRUNCATE_LENGTH,
};
use parquet::file::statistics::{Statistics, ValueStatistics};
use parquet::schema::types::ColumnDescPtr;
use polars::prelude::{PlHashMap, StringChunked};
use polars_arrow::array::Array;

use super::chunk::{
    boundary_order, page_with_levels, push_run, ChunkBuilder, EncodedChunk, PageSummary, PAGE_ROWS,
};
use super::rle::{bit_width, encode_runs};

/// The distinct values of a chunk in order of first appearance; a value's key is its position.
#[derive(Default)]
struct Dictionary<'a> {
    values: Vec<&'a [u8]>,
    keys: PlHashMap<&'a [u8], u32>,
    /// Size of the PLAIN-encoded dictionary page (a 4-byte length before each value).
    plain_bytes: usize,
}

/// Values longer than this would be truncated in arrow-rs's statistics; such chunks are left to it.
const MAX_VALUE_BYTES: usize = match DEFAULT_STATISTICS_TRUNCATE_LENGTH {
    Some(n) => n,
    None => usize::MAX,
};

impl<'a> Dictionary<'a> {
    /// The key of `value`, added if new; `None` once the dictionary would pass arrow-rs's limits.
    fn key(&mut self, value: &'a [u8]) -> Option<u32> {
        if let Some(&key) = self.keys.get(value) {
            return Some(key);
        }
        self.plain_bytes += 4 + value.len();
        if value.len() > MAX_VALUE_BYTES || self.plain_bytes > DEFAULT_DICTIONARY_PAGE_SIZE_LIMIT {
            return None;
        }
        let key = self.values.len() as u32;
        self.values.push(value);
        self.keys.insert(value, key);
        Some(key)
    }
}

/// One data page's rows, as runs.
#[derive(Default)]
struct PageRuns {
    rows: u32,
    nulls: u32,
    /// Definition levels: 1 for a value, 0 for a null.
    levels: Vec<(u32, u32)>,
    keys: Vec<(u32, u32)>,
    value_bytes: i64,
}

/// Encodes `column` (one row group's slice) as a dictionary-encoded chunk of the flat, optional
/// BYTE_ARRAY column `descr`; `None` where arrow-rs should write it instead (see the module doc).
pub fn encode_text_chunk(
    column: &StringChunked,
    descr: ColumnDescPtr,
    codec: Compression,
) -> Result<Option<EncodedChunk>> {
    let mut dictionary = Dictionary::default();
    let mut pages: Vec<PageRuns> = Vec::new();
    let mut page = PageRuns::default();
    for array in column.downcast_iter() {
        let views = array.views();
        let validity = array.validity().filter(|v| v.unset_bits() > 0);
        // The value before, within this array (a view's buffer index means nothing in another array).
        let mut last: Option<(u128, &[u8], u32)> = None;
        let mut i = 0;
        while i < views.len() {
            if page.rows as usize == PAGE_ROWS {
                pages.push(std::mem::take(&mut page));
            }
            // The stretch from row i of nulls, or of values with the same view, within this page.
            let limit = views.len().min(i + PAGE_ROWS - page.rows as usize);
            let bits = views[i].as_u128();
            let valid = validity.is_none_or(|v| v.get_bit(i));
            let mut end = i + 1;
            match validity {
                None => {
                    while end < limit && views[end].as_u128() == bits {
                        end += 1;
                    }
                }
                Some(v) => {
                    while end < limit
                        && v.get_bit(end) == valid
                        && (!valid || views[end].as_u128() == bits)
                    {
                        end += 1;
                    }
                }
            }
            let rows = (end - i) as u32;
            page.rows += rows;
            push_run(&mut page.levels, u32::from(valid), rows);
            if valid {
                let key = match last {
                    Some((last_bits, _, key)) if last_bits == bits => key,
                    _ => {
                        let value = array.value(i).as_bytes();
                        let key = match last {
                            Some((_, last_value, key)) if last_value == value => key,
                            _ => match dictionary.key(value) {
                                Some(key) => key,
                                None => return Ok(None),
                            },
                        };
                        last = Some((bits, value, key));
                        key
                    }
                };
                page.value_bytes += i64::from(views[i].length) * i64::from(rows);
                push_run(&mut page.keys, key, rows);
            } else {
                page.nulls += rows;
            }
            i = end;
        }
    }
    if page.rows > 0 {
        pages.push(page);
    }
    if pages.is_empty() || pages.iter().any(|p| p.nulls == p.rows) {
        return Ok(None);
    }
    write_chunk(&dictionary, &pages, descr, codec).map(Some)
}

/// The smallest and largest values a page's keys point at (byte order, as Parquet orders UTF8).
fn page_min_max<'a>(dictionary: &Dictionary<'a>, page: &PageRuns) -> (&'a [u8], &'a [u8]) {
    let mut values = page
        .keys
        .iter()
        .map(|&(key, _)| dictionary.values[key as usize]);
    let first = values.next().expect("a page with values");
    values.fold((first, first), |(min, max), v| (min.min(v), max.max(v)))
}

fn write_chunk(
    dictionary: &Dictionary,
    pages: &[PageRuns],
    descr: ColumnDescPtr,
    codec: Compression,
) -> Result<EncodedChunk> {
    let mut chunk = ChunkBuilder::new(&descr, codec);
    let mut plain = Vec::with_capacity(dictionary.plain_bytes);
    for value in &dictionary.values {
        plain.extend_from_slice(&(value.len() as u32).to_le_bytes());
        plain.extend_from_slice(value);
    }
    let distinct = dictionary.values.len() as u32;
    chunk.dictionary_page(plain, distinct)?;

    let width = bit_width(distinct.saturating_sub(1));
    let mut bounds = Vec::with_capacity(pages.len());
    for page in pages {
        let mut body = page_with_levels(&page.levels, 64);
        body.push(width);
        encode_runs(&page.keys, width, &mut body);
        let (min, max) = page_min_max(dictionary, page);
        bounds.push((min, max));
        let summary = PageSummary {
            rows: page.rows,
            nulls: page.nulls,
            min: min.to_vec(),
            max: max.to_vec(),
            nans: None,
            value_bytes: Some(page.value_bytes),
        };
        chunk.data_page(body, Encoding::RLE_DICTIONARY, summary)?;
    }
    let min = bounds.iter().map(|b| b.0).min().expect("at least one page");
    let max = bounds.iter().map(|b| b.1).max().expect("at least one page");
    let statistics = Statistics::ByteArray(ValueStatistics::new(
        Some(ByteArray::from(min.to_vec())),
        Some(ByteArray::from(max.to_vec())),
        None,
        Some(chunk.counts().0),
        false,
    ));
    chunk.finish(descr, statistics, boundary_order(&bounds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write::parquet::chunk::testing::{arrow_rs_file, descriptor, our_file, read_column};
    use bytes::Bytes;
    use parquet::file::metadata::ParquetMetaData;
    use parquet::file::page_index::column_index::ColumnIndexMetaData;
    use polars::prelude::*;
    use std::sync::Arc;

    /// Rows as trainer logs have them: long runs of a few values, some longer than a view's inline 12
    /// bytes, non-ASCII, empty strings and nulls; in two arrays, so views of different buffers meet.
    fn column(rows: usize) -> StringChunked {
        let names = [
            "run-a",
            "NVIDIA H100 80GB HBM3",
            "",
            "Gaudi2 — HL-225",
            "run-b",
        ];
        let value = |i: usize| match (i / 7) % 11 {
            3 => None,
            k => Some(names[(k + i / 5000) % names.len()]),
        };
        let half = rows / 2;
        let mut first: StringChunked = (0..half).map(value).collect();
        first.rename("text".into());
        let second: StringChunked = (half..rows).map(value).collect();
        first.append(&second).unwrap();
        assert_eq!(first.chunks().len(), 2);
        first
    }

    /// Column 0 of row group 0: its values, its chunk statistics as text, and its file metadata.
    fn read_back(file: Bytes) -> (Vec<Option<String>>, String, Arc<ParquetMetaData>) {
        let (batches, statistics, metadata) = read_column(file);
        let mut values = Vec::new();
        for array in batches {
            let text = array
                .as_any()
                .downcast_ref::<arrow::array::LargeStringArray>()
                .unwrap();
            values.extend(text.iter().map(|v| v.map(str::to_string)));
        }
        (values, statistics, metadata)
    }

    #[test]
    fn chunks_read_back_as_arrow_rs_writes_them() {
        let rows = 50_000;
        let text = column(rows);
        let df = DataFrame::new(rows, vec![text.clone().into_column()]).unwrap();
        let encoded = encode_text_chunk(&text, descriptor(&df), Compression::UNCOMPRESSED)
            .unwrap()
            .expect("dictionary-encoded here");
        assert_eq!(encoded.close.rows_written, rows as u64);
        assert_eq!(encoded.bytes.len() as u64, encoded.close.bytes_written);

        let (values, statistics, metadata) = read_back(our_file(&df));
        let (want_values, want_statistics, _) = read_back(arrow_rs_file(&df));
        assert_eq!(values, want_values);
        assert_eq!(statistics, want_statistics);
        let chunk = metadata.row_group(0).column(0);
        assert!(chunk.encodings().any(|e| e == Encoding::RLE_DICTIONARY));
        assert_eq!(
            chunk.definition_level_histogram().unwrap().values().len(),
            2
        );

        // Pages of 20,000 rows, each with the smallest and largest of its own values and its nulls.
        let page_index = metadata.page_index_for_row_group(0);
        let first_rows: Vec<i64> = page_index
            .offset_index(0)
            .unwrap()
            .page_locations()
            .iter()
            .map(|p| p.first_row_index)
            .collect();
        assert_eq!(first_rows, [0, 20_000, 40_000]);
        let ColumnIndexMetaData::BYTE_ARRAY(index) = page_index.column_index(0).unwrap() else {
            panic!("a byte array column index")
        };
        for (page, rows) in values.chunks(20_000).enumerate() {
            let present: Vec<&[u8]> = rows.iter().flatten().map(|v| v.as_bytes()).collect();
            let nulls = (rows.len() - present.len()) as i64;
            assert_eq!(index.min_value(page), present.iter().min().copied());
            assert_eq!(index.max_value(page), present.iter().max().copied());
            assert_eq!(index.null_count(page), Some(nulls));
            assert_eq!(
                index.definition_level_histogram(page),
                Some(&[nulls, rows.len() as i64 - nulls][..])
            );
        }
    }

    #[test]
    fn chunks_past_the_limits_are_left_to_arrow_rs_and_still_read_back() {
        let long = "x".repeat(MAX_VALUE_BYTES + 1);
        let cases: Vec<(&str, StringChunked)> = vec![
            (
                "a value longer than the statistics keep",
                ["a", long.as_str(), "a"].iter().map(|v| Some(*v)).collect(),
            ),
            (
                "a page of nulls only",
                (0..20_001).map(|i| (i >= 20_000).then_some("a")).collect(),
            ),
            (
                "a dictionary past 1 MiB",
                (0..60_000)
                    .map(|i| Some(format!("value-{i:020}")))
                    .collect(),
            ),
        ];
        for (why, text) in cases {
            let df = DataFrame::new(text.len(), vec![text.clone().into_column()]).unwrap();
            let encoded = encode_text_chunk(&text, descriptor(&df), Compression::UNCOMPRESSED);
            assert!(encoded.unwrap().is_none(), "{why}");
            let (values, _, _) = read_back(our_file(&df));
            let want: Vec<Option<String>> = text.iter().map(|v| v.map(str::to_string)).collect();
            assert_eq!(values, want, "{why}");
        }
    }
}
