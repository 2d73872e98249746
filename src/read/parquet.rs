//! Parquet, read with polars.

use std::io::Cursor;

use polars::prelude::*;

/// Parses a whole Parquet file.
pub fn read(bytes: Vec<u8>) -> Result<DataFrame, String> {
    super::guard::catch_panic(|| ParquetReader::new(Cursor::new(bytes)).finish())?
        .map_err(|e| e.to_string())
}

/// A whole Parquet file's footer, decoded (`None` when it is not there or cannot be decoded).
fn footer(bytes: &[u8]) -> Option<parquet::file::metadata::ParquetMetaData> {
    let n = bytes.len();
    if n < 12 || !bytes.ends_with(b"PAR1") {
        return None;
    }
    let len = u32::from_le_bytes(bytes[n - 8..n - 4].try_into().ok()?) as usize;
    let start = n.checked_sub(8usize.checked_add(len)?)?;
    parquet::file::metadata::ParquetMetaDataReader::decode_metadata(&bytes[start..n - 8]).ok()
}

/// The bytes of a Parquet file's pages once decompressed (not yet decoded), as its footer records them
/// (`None` when the footer cannot be read; the reader then says why).
pub fn page_bytes(bytes: &[u8]) -> Option<u64> {
    let meta = footer(bytes)?;
    Some(
        meta.row_groups()
            .iter()
            .map(|rg| rg.total_byte_size().max(0) as u64)
            .sum(),
    )
}

/// The value of a key in a Parquet file's key-value metadata (`None` when the footer cannot be read or
/// has no such key).
pub fn key_value(bytes: &[u8], key: &str) -> Option<String> {
    footer(bytes)?
        .file_metadata()
        .key_value_metadata()?
        .iter()
        .find(|kv| kv.key == key)?
        .value
        .clone()
}

/// A Parquet file read in batches by arrow-rs, for streaming: memory holds one batch, not the file. Only
/// for files whose columns are all of plain types (booleans, integers, floats, text), which polars imports
/// as the same types its own reader gives; for anything else [`ArrowBatches::open`] says `None` and the
/// file is read whole by polars.
pub struct ArrowBatches {
    reader: parquet::arrow::arrow_reader::ParquetRecordBatchReader,
}

impl ArrowBatches {
    /// Opens `path` to be read `rows` rows at a time.
    pub fn open(path: &std::path::Path, rows: usize) -> Option<ArrowBatches> {
        use arrow::datatypes::DataType as A;
        let file = std::fs::File::open(path).ok()?;
        let builder =
            parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file).ok()?;
        let plain = builder.schema().fields().iter().all(|f| {
            matches!(
                f.data_type(),
                A::Boolean
                    | A::Int8
                    | A::Int16
                    | A::Int32
                    | A::Int64
                    | A::UInt8
                    | A::UInt16
                    | A::UInt32
                    | A::UInt64
                    | A::Float32
                    | A::Float64
                    | A::Utf8
                    | A::LargeUtf8
                    | A::Utf8View
            )
        });
        if !plain {
            return None;
        }
        Some(ArrowBatches {
            reader: builder.with_batch_size(rows).build().ok()?,
        })
    }

    /// The next batch as a polars frame, or `None` after the last.
    pub fn next_frame(&mut self) -> Result<Option<DataFrame>, String> {
        match super::guard::catch_panic(|| self.reader.next())? {
            None => Ok(None),
            Some(Err(e)) => Err(e.to_string()),
            Some(Ok(batch)) => crate::arrow_bridge::record_batch_to_frame(&batch)
                .map(Some)
                .map_err(|e| e.to_string()),
        }
    }
}
