//! Parquet output, written by arrow-rs: zstd-compressed, with key-value metadata that says how each added
//! column was made. The metadata goes into the Arrow schema (so pyarrow shows it in `schema.metadata`) and
//! into the file footer (so any Parquet reader sees it).

use std::io::Write;

use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use polars::prelude::*;

use super::{Metadata, OutputFormat, TableWriter, WriteError};
use crate::arrow_bridge::frame_to_record_batch;

pub struct ParquetTableWriter;

/// Rows per row group: large enough for good compression, small enough that readers can skip.
const ROW_GROUP_ROWS: usize = 1 << 20;

impl TableWriter for ParquetTableWriter {
    fn write(
        &self,
        df: &mut DataFrame,
        metadata: &Metadata,
        out: &mut (dyn Write + Send),
    ) -> Result<(), WriteError> {
        let encode = |e: &dyn std::fmt::Display| WriteError::encode(OutputFormat::Parquet, e);
        let batch = frame_to_record_batch(df, metadata.iter().cloned().collect())
            .map_err(|e| encode(&e))?;
        let properties = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_key_value_metadata(Some(
                metadata
                    .iter()
                    .map(|(k, v)| KeyValue::new(k.clone(), v.clone()))
                    .collect(),
            ))
            .build();
        let mut writer =
            ArrowWriter::try_new(out, batch.schema(), Some(properties)).map_err(|e| encode(&e))?;
        writer.write(&batch).map_err(|e| encode(&e))?;
        writer.close().map_err(|e| encode(&e))?;
        Ok(())
    }
}
