//! Column chunks assembled page by page, for the columns mfu encodes itself ([`super::text`],
//! [`super::float`]): page headers through arrow-rs's page writer, and the metadata arrow-rs would record
//! for the same chunk (sizes, offsets, encodings, page encoding counts, definition-level histograms, the
//! column index and the offset index). Offsets are relative to the start of the chunk's bytes; the row
//! group writer moves them when it appends the chunk.

use bytes::Bytes;
use parquet::basic::{BoundaryOrder, Compression, Encoding, EncodingMask, PageType};
use parquet::column::page::{CompressedPage, Page, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::{
    ColumnChunkMetaData, ColumnIndexBuilder, LevelHistogram, OffsetIndexBuilder, PageEncodingStats,
};
use parquet::file::properties::DEFAULT_DATA_PAGE_ROW_COUNT_LIMIT;
use parquet::file::statistics::Statistics;
use parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

use super::rle::encode_runs;

/// Rows per data page: arrow-rs's default limit, so pages break where readers of its files expect.
pub const PAGE_ROWS: usize = DEFAULT_DATA_PAGE_ROW_COUNT_LIMIT;

/// A column chunk ready to be appended to a row group: its bytes, and its metadata with offsets relative
/// to the start of those bytes.
pub struct EncodedChunk {
    pub bytes: Bytes,
    pub close: ColumnCloseResult,
}

/// Adds `count` repeats of `value` to `runs` (value, count).
pub fn push_run(runs: &mut Vec<(u32, u32)>, value: u32, count: u32) {
    match runs.last_mut() {
        Some((last, n)) if *last == value => *n += count,
        _ => runs.push((value, count)),
    }
}

/// A data page's values, described for the page indexes.
pub struct PageSummary {
    pub rows: u32,
    pub nulls: u32,
    /// Smallest and largest value, in the column's plain encoding.
    pub min: Vec<u8>,
    pub max: Vec<u8>,
    /// NaN count, for floating-point columns.
    pub nans: Option<i64>,
    /// Bytes of the values themselves, for byte-array columns.
    pub value_bytes: Option<i64>,
}

/// Starts a data page body: the definition levels (1 for a value, 0 for a null) as Parquet's v1 data
/// pages hold them, a 4-byte length then the hybrid encoding. The caller appends the values.
pub fn page_with_levels(levels: &[(u32, u32)], values_capacity: usize) -> Vec<u8> {
    let mut buf = Vec::with_capacity(16 + values_capacity);
    buf.extend_from_slice(&[0; 4]);
    encode_runs(levels, 1, &mut buf);
    let levels_len = (buf.len() - 4) as u32;
    buf[..4].copy_from_slice(&levels_len.to_le_bytes());
    buf
}

pub struct ChunkBuilder {
    sink: TrackedWrite<Vec<u8>>,
    codec: Compression,
    compressed_size: i64,
    uncompressed_size: i64,
    dictionary_page_offset: Option<i64>,
    data_page_offset: Option<i64>,
    data_pages: i32,
    rows: i64,
    nulls: i64,
    nans: Option<i64>,
    value_bytes: Option<i64>,
    levels: Option<LevelHistogram>,
    column_index: ColumnIndexBuilder,
    offset_index: OffsetIndexBuilder,
}

/// `buf` compressed by zstd at `level` with the thread's context, kept from page to page: a new
/// context per page (`zstd::bulk::compress`) took a twentieth of writing a console log's rows, most of
/// it allocating and clearing the context's tables. The bytes are those of a new context.
fn compress(buf: &[u8], level: i32) -> std::io::Result<Vec<u8>> {
    thread_local! {
        static COMPRESSOR: std::cell::RefCell<Option<(i32, zstd::bulk::Compressor<'static>)>> =
            const { std::cell::RefCell::new(None) };
    }
    COMPRESSOR.with(|kept| {
        let mut kept = kept.borrow_mut();
        let compressor = match &mut *kept {
            Some((at, compressor)) if *at == level => compressor,
            slot => &mut slot.insert((level, zstd::bulk::Compressor::new(level)?)).1,
        };
        compressor.compress(buf)
    })
}

impl ChunkBuilder {
    pub fn new(descr: &ColumnDescPtr, codec: Compression) -> ChunkBuilder {
        ChunkBuilder {
            sink: TrackedWrite::new(Vec::new()),
            codec,
            compressed_size: 0,
            uncompressed_size: 0,
            dictionary_page_offset: None,
            data_page_offset: None,
            data_pages: 0,
            rows: 0,
            nulls: 0,
            nans: None,
            value_bytes: None,
            levels: LevelHistogram::try_new(1),
            column_index: ColumnIndexBuilder::new(descr.physical_type()),
            offset_index: OffsetIndexBuilder::new(),
        }
    }

    fn write(&mut self, buf: Vec<u8>, page: impl FnOnce(Bytes) -> Page) -> Result<i64> {
        let uncompressed = buf.len();
        let buf = match self.codec {
            Compression::UNCOMPRESSED => buf,
            Compression::ZSTD(level) => compress(&buf, level.compression_level())
                .map_err(|e| ParquetError::External(Box::new(e)))?,
            other => return Err(ParquetError::NYI(format!("chunks compressed with {other}"))),
        };
        let page = CompressedPage::new(page(Bytes::from(buf)), uncompressed);
        let spec = SerializedPageWriter::new(&mut self.sink).write_page(page)?;
        self.compressed_size += spec.compressed_size as i64;
        self.uncompressed_size += spec.uncompressed_size as i64;
        Ok(spec.offset as i64)
    }

    /// Writes the dictionary page (PLAIN-encoded values); it must come first.
    pub fn dictionary_page(&mut self, plain: Vec<u8>, values: u32) -> Result<()> {
        let offset = self.write(plain, |buf| Page::DictionaryPage {
            buf,
            num_values: values,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        })?;
        self.dictionary_page_offset = Some(offset);
        Ok(())
    }

    /// Writes a v1 data page: `body` from [`page_with_levels`] with the values after the levels.
    pub fn data_page(
        &mut self,
        body: Vec<u8>,
        encoding: Encoding,
        page: PageSummary,
    ) -> Result<()> {
        let before = self.compressed_size;
        let offset = self.write(body, |buf| Page::DataPage {
            buf,
            num_values: page.rows,
            encoding,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        })?;
        self.data_page_offset.get_or_insert(offset);
        self.data_pages += 1;
        self.offset_index
            .append_offset_and_size(offset, (self.compressed_size - before) as i32);
        self.offset_index.append_row_count(i64::from(page.rows));
        self.offset_index
            .append_unencoded_byte_array_data_bytes(page.value_bytes);
        let mut levels = LevelHistogram::try_new(1);
        if let Some(h) = levels.as_mut() {
            h.increment_by(0, i64::from(page.nulls));
            h.increment_by(1, i64::from(page.rows - page.nulls));
        }
        let nulls = i64::from(page.nulls);
        self.column_index
            .append(false, page.min, page.max, nulls, page.nans);
        self.column_index.append_histograms(&None, &levels);
        if let (Some(chunk), Some(page)) = (self.levels.as_mut(), levels.as_ref()) {
            chunk.add(page);
        }
        self.rows += i64::from(page.rows);
        self.nulls += nulls;
        if let Some(n) = page.nans {
            *self.nans.get_or_insert(0) += n;
        }
        if let Some(n) = page.value_bytes {
            *self.value_bytes.get_or_insert(0) += n;
        }
        Ok(())
    }

    /// Null count and NaN count (for floating-point columns) of the pages written.
    pub fn counts(&self) -> (u64, Option<u64>) {
        (self.nulls as u64, self.nans.map(|n| n as u64))
    }

    /// Completes the chunk: `statistics` for the chunk, `boundary_order` of the pages' min and max.
    pub fn finish(
        mut self,
        descr: ColumnDescPtr,
        statistics: Statistics,
        boundary_order: BoundaryOrder,
    ) -> Result<EncodedChunk> {
        let data_encoding = if self.dictionary_page_offset.is_some() {
            Encoding::RLE_DICTIONARY
        } else {
            Encoding::PLAIN
        };
        let mut encoding_stats = Vec::with_capacity(2);
        if self.dictionary_page_offset.is_some() {
            encoding_stats.push(PageEncodingStats {
                page_type: PageType::DICTIONARY_PAGE,
                encoding: Encoding::PLAIN,
                count: 1,
            });
        }
        encoding_stats.push(PageEncodingStats {
            page_type: PageType::DATA_PAGE,
            encoding: data_encoding,
            count: self.data_pages,
        });
        let encodings = [Encoding::PLAIN, Encoding::RLE, data_encoding];
        let metadata = ColumnChunkMetaData::builder(descr)
            .set_compression(self.codec)
            .set_encodings_mask(EncodingMask::new_from_encodings(encodings.iter()))
            .set_page_encoding_stats(encoding_stats)
            .set_total_compressed_size(self.compressed_size)
            .set_total_uncompressed_size(self.uncompressed_size)
            .set_num_values(self.rows)
            .set_data_page_offset(self.data_page_offset.unwrap_or(0))
            .set_dictionary_page_offset(self.dictionary_page_offset)
            .set_statistics(statistics)
            .set_unencoded_byte_array_data_bytes(self.value_bytes)
            .set_definition_level_histogram(self.levels.take())
            .build()?;
        self.column_index.set_boundary_order(boundary_order);
        let bytes_written = self.sink.bytes_written() as u64;
        Ok(EncodedChunk {
            bytes: Bytes::from(self.sink.into_inner()?),
            close: ColumnCloseResult {
                bytes_written,
                rows_written: self.rows as u64,
                metadata,
                bloom_filter: None,
                column_index: Some(self.column_index.build()?),
                offset_index: Some(self.offset_index.build()),
            },
        })
    }
}

/// Whether pages' (min, max) pairs, in page order, rise or fall (arrow-rs's rule: equal pages rise).
pub fn boundary_order<T: PartialOrd>(pages: &[(T, T)]) -> BoundaryOrder {
    let pairs = || pages.windows(2).map(|w| (&w[0], &w[1]));
    if pairs().all(|(a, b)| a.0 <= b.0 && a.1 <= b.1) {
        BoundaryOrder::ASCENDING
    } else if pairs().all(|(a, b)| b.0 <= a.0 && b.1 <= a.1) {
        BoundaryOrder::DESCENDING
    } else {
        BoundaryOrder::UNORDERED
    }
}

#[cfg(test)]
mod compress_tests {
    #[test]
    fn a_kept_context_compresses_as_a_new_one() {
        let pages: Vec<Vec<u8>> = (0..6u32)
            .map(|p| {
                (0..50_000u32)
                    .flat_map(|i| ((i * (p + 3)) % 977).to_le_bytes())
                    .collect()
            })
            .collect();
        for level in [3, 1, 3] {
            for page in &pages {
                assert_eq!(
                    super::compress(page, level).unwrap(),
                    zstd::bulk::compress(page, level).unwrap()
                );
            }
        }
    }
}

/// Files written by mfu and by arrow-rs alone, read back, for the encoders' tests.
#[cfg(test)]
pub mod testing {
    use std::sync::Arc;

    use arrow::array::ArrayRef;
    use bytes::Bytes;
    use parquet::arrow::arrow_reader::{ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
    use parquet::arrow::ArrowWriter;
    use parquet::basic::Compression;
    use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData};
    use parquet::file::properties::WriterProperties;
    use parquet::schema::types::ColumnDescPtr;
    use polars::prelude::DataFrame;

    use crate::write::parquet::ParquetTableWriter;
    use crate::write::TableWriter;

    /// The file arrow-rs writes for `df` on its own (zstd, dictionaries on, its defaults otherwise).
    pub fn arrow_rs_file(df: &DataFrame) -> Bytes {
        let batch = crate::arrow_bridge::frame_to_record_batch(df, Default::default()).unwrap();
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(Default::default()))
            .build();
        let mut out = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut out, batch.schema(), Some(props)).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        Bytes::from(out)
    }

    /// The file mfu writes for `df`.
    pub fn our_file(df: &DataFrame) -> Bytes {
        let mut out = Vec::new();
        ParquetTableWriter
            .write(&mut df.clone(), &Vec::new(), &mut out)
            .unwrap();
        Bytes::from(out)
    }

    /// The Parquet descriptor of `df`'s first column, as mfu's files have it.
    pub fn descriptor(df: &DataFrame) -> ColumnDescPtr {
        let reader = ParquetRecordBatchReaderBuilder::try_new(our_file(df)).unwrap();
        reader.metadata().file_metadata().schema_descr().column(0)
    }

    /// Column 0: its arrays as read, the statistics of its first chunk as text (min, max, null count,
    /// NaN count, value bytes), and the file metadata with the page index.
    pub fn read_column(file: Bytes) -> (Vec<ArrayRef>, String, Arc<ParquetMetaData>) {
        let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Required);
        let builder = ParquetRecordBatchReaderBuilder::try_new_with_options(file, options).unwrap();
        let metadata = builder.metadata().clone();
        let chunk = metadata.row_group(0).column(0);
        let statistics = chunk.statistics().unwrap();
        let statistics = format!(
            "{:?} {:?} {:?} {:?} {:?}",
            statistics.min_bytes_opt(),
            statistics.max_bytes_opt(),
            statistics.null_count_opt(),
            statistics.nan_count_opt(),
            chunk.unencoded_byte_array_data_bytes(),
        );
        let arrays = builder
            .build()
            .unwrap()
            .map(|batch| batch.unwrap().column(0).clone())
            .collect();
        (arrays, statistics, metadata)
    }
}
