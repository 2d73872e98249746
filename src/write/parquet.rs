//! Parquet output, written by arrow-rs: zstd-compressed, with key-value metadata that says how each added
//! column was made. A number column whose values zstd cannot shrink (a sample of the first row group saves
//! under [`MIN_ZSTD_SAVING`] of its bytes: the full-precision floats of timings, losses and the MFU columns
//! themselves) is stored uncompressed, since compressing it costs time and saves next to nothing; Parquet
//! records the codec per column chunk, so every reader handles the mix. Integer columns (steps, token and
//! device counts) are delta-encoded (DELTA_BINARY_PACKED): a counter or a constant packs to a few bits a
//! value before zstd sees it, which shrinks them and spares zstd most of its work. The metadata goes into
//! the Arrow schema (so pyarrow shows it in `schema.metadata`) and into the file footer (so any Parquet
//! reader sees it). Columns of a row group are encoded in parallel (rayon) and appended in schema order, so
//! the bytes do not depend on the number of threads.

use std::io::Write;
use std::sync::Arc;

use arrow::array::RecordBatch;
use parquet::arrow::arrow_writer::{compute_leaves, ArrowColumnChunk};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use polars::prelude::*;
use rayon::prelude::*;

use super::{Metadata, OutputFormat, TableWriter, WriteError};
use crate::arrow_bridge::frame_to_record_batch;

pub struct ParquetTableWriter;

/// Rows per row group: large enough for good compression, small enough that readers can skip, and that
/// only one group's Arrow copy and encoded pages are in memory at a time.
pub const ROW_GROUP_ROWS: usize = 1 << 16;

impl TableWriter for ParquetTableWriter {
    fn write(
        &self,
        df: &mut DataFrame,
        metadata: &Metadata,
        out: &mut (dyn Write + Send),
    ) -> Result<(), WriteError> {
        let encode = |e: &dyn std::fmt::Display| WriteError::encode(OutputFormat::Parquet, e);
        write_frame(df, metadata, out).map_err(|e| encode(&e))
    }
}

/// A row group's rows as an arrow-rs batch.
fn row_group_batch(
    df: &DataFrame,
    start: usize,
    metadata: &Metadata,
) -> Result<RecordBatch, crate::arrow_bridge::BridgeError> {
    let len = ROW_GROUP_ROWS.min(df.height().saturating_sub(start));
    frame_to_record_batch(
        &df.slice(start as i64, len),
        metadata.iter().cloned().collect(),
    )
}

pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn write_frame(
    df: &DataFrame,
    metadata: &Metadata,
    out: &mut (dyn Write + Send),
) -> Result<(), BoxError> {
    let first = row_group_batch(df, 0, metadata)?;
    let mut file = ParquetStream::new(out, &first, metadata)?;
    let rows = df.height();
    let mut start = 0;
    let mut next = Some(first);
    while let Some(slice) = next.take() {
        start += slice.num_rows();
        file.write_row_group(&slice)?;
        if start < rows {
            next = Some(row_group_batch(df, start, metadata)?);
        }
    }
    file.finish()?;
    Ok(())
}

/// A Parquet file written one row group at a time, with the schema of the first.
pub struct ParquetStream<W: Write + Send> {
    file: parquet::file::writer::SerializedFileWriter<W>,
    factory: parquet::arrow::arrow_writer::ArrowRowGroupWriterFactory,
    schema: arrow::datatypes::SchemaRef,
    group: usize,
}

impl<W: Write + Send> ParquetStream<W> {
    /// Starts a file whose row groups have `first`'s schema; its rows (not written here) are the sample
    /// that decides which number columns zstd compresses.
    pub fn new(out: W, first: &RecordBatch, metadata: &Metadata) -> Result<Self, BoxError> {
        let schema = first.schema();
        // Dictionary encoding pays for text (run names, devices, dtypes repeat); for numbers it hashes
        // every value only to give up on a million distinct floats, and zstd already folds repeats.
        let mut builder = WriterProperties::builder().set_dictionary_enabled(false);
        for (field, array) in schema.fields().iter().zip(first.columns()) {
            let path = || parquet::schema::types::ColumnPath::from(field.name().as_str());
            let data_type = field.data_type();
            if matches!(
                data_type,
                arrow::datatypes::DataType::Utf8 | arrow::datatypes::DataType::LargeUtf8
            ) {
                builder = builder.set_column_dictionary_enabled(path(), true);
            }
            if data_type.is_integer() {
                builder = builder.set_column_encoding(path(), Encoding::DELTA_BINARY_PACKED);
            }
            if !zstd_pays(array.as_ref()) {
                builder = builder.set_column_compression(path(), Compression::UNCOMPRESSED);
            }
        }
        let properties = builder
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_key_value_metadata(Some(
                metadata
                    .iter()
                    .map(|(k, v)| KeyValue::new(k.clone(), v.clone()))
                    .collect(),
            ))
            .build();
        // ArrowWriter sets up the file (schema, ARROW:schema metadata); the row groups are encoded here.
        let (file, factory) = ArrowWriter::try_new(out, Arc::clone(&schema), Some(properties))?
            .into_serialized_writer()?;
        Ok(ParquetStream {
            file,
            factory,
            schema,
            group: 0,
        })
    }

    /// Writes `batch` (of the first batch's schema) as one row group, its columns encoded in parallel.
    pub fn write_row_group(&mut self, batch: &RecordBatch) -> Result<(), BoxError> {
        let writers = self.factory.create_column_writers(self.group)?;
        // One writer per leaf column; leaves come from the fields in order.
        let mut leaves = Vec::with_capacity(writers.len());
        for (field, array) in self.schema.fields().iter().zip(batch.columns()) {
            leaves.extend(compute_leaves(field, array)?);
        }
        let chunks: Vec<ArrowColumnChunk> = writers
            .into_par_iter()
            .zip(leaves.into_par_iter())
            .map(|(mut writer, leaf)| {
                writer.write(&leaf)?;
                writer.close()
            })
            .collect::<parquet::errors::Result<_>>()?;
        let mut row_group = self.file.next_row_group()?;
        for chunk in chunks {
            chunk.append_to_row_group(&mut row_group)?;
        }
        row_group.close()?;
        self.group += 1;
        Ok(())
    }

    /// Writes the footer, and gives back the output.
    pub fn finish(self) -> Result<W, BoxError> {
        Ok(self.file.into_inner()?)
    }
}

/// The share of a sample's bytes zstd must save for a number column to be compressed.
pub const MIN_ZSTD_SAVING: f64 = 0.1;

/// Values sampled from the start of the first row group.
const ZSTD_SAMPLE_VALUES: usize = 1 << 14;

/// Whether zstd (at the level the file uses) saves at least [`MIN_ZSTD_SAVING`] of a fixed-width number
/// column's bytes, judged on its first values as Parquet's plain encoding lays them out. Other columns,
/// and samples too small to judge, are compressed.
fn zstd_pays(array: &dyn arrow::array::Array) -> bool {
    let data = array.to_data();
    let Some(width) = data.data_type().primitive_width() else {
        return true;
    };
    let len = data.len().min(ZSTD_SAMPLE_VALUES);
    if len < 1024 || data.buffers().len() != 1 {
        return true;
    }
    let start = data.offset() * width;
    let sample = &data.buffers()[0].as_slice()[start..start + len * width];
    match zstd::bulk::compress(sample, ZstdLevel::default().compression_level()) {
        Ok(compressed) => (compressed.len() as f64) < sample.len() as f64 * (1.0 - MIN_ZSTD_SAVING),
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    #[test]
    fn round_trip_with_metadata_and_empty_frames() {
        for rows in [0usize, 3] {
            let mut df = df!(
                "a" => (0..rows as i64).collect::<Vec<_>>(),
                "b" => (0..rows).map(|i| format!("x{i}")).collect::<Vec<_>>(),
            )
            .unwrap();
            let meta = vec![("k".to_string(), "v".to_string())];
            let mut bytes = Vec::new();
            ParquetTableWriter
                .write(&mut df, &meta, &mut bytes)
                .unwrap();
            let mut file = tempfile::tempfile().unwrap();
            file.write_all(&bytes).unwrap();
            let reader = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
            assert_eq!(
                reader.schema().metadata().get("k").map(String::as_str),
                Some("v")
            );
            let total: usize = reader.build().unwrap().map(|b| b.unwrap().num_rows()).sum();
            assert_eq!(total, rows);
        }
    }

    #[test]
    fn number_columns_zstd_cannot_shrink_are_stored_uncompressed() {
        let rows = 20_000usize;
        // Full-precision floats (as timings and MFU are) against a repeated value and a counter.
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let noisy: Vec<f64> = (0..rows)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 11) as f64 / (1u64 << 53) as f64 * 300.0
            })
            .collect();
        let mut df = df!(
            "step_time_s" => noisy.clone(),
            "peak" => vec![989e12; rows],
            "step" => (0..rows as i64).collect::<Vec<_>>(),
        )
        .unwrap();
        let mut bytes = Vec::new();
        ParquetTableWriter
            .write(&mut df, &Vec::new(), &mut bytes)
            .unwrap();
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&bytes).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
        let group = reader.metadata().row_group(0);
        let codecs: Vec<Compression> = group.columns().iter().map(|c| c.compression()).collect();
        assert_eq!(
            codecs,
            vec![
                Compression::UNCOMPRESSED,
                Compression::ZSTD(ZstdLevel::default()),
                Compression::ZSTD(ZstdLevel::default()),
            ]
        );
        // The counter is delta-encoded, the floats are not.
        let delta = |c: usize| {
            group
                .column(c)
                .encodings()
                .any(|e| e == Encoding::DELTA_BINARY_PACKED)
        };
        assert!(delta(2) && !delta(0) && !delta(1));
        let batch = reader.build().unwrap().next().unwrap().unwrap();
        let read = batch
            .column(0)
            .as_any()
            .downcast_ref::<arrow::array::Float64Array>()
            .unwrap();
        // Batches are read a thousand rows or so at a time; the first holds the first rows.
        assert!(!read.is_empty() && read.values()[..] == noisy[..read.len()]);
    }
}
