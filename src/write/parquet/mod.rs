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
//!
//! arrow-rs lays out the file and encodes integer and other columns; text and Float64 column chunks, most
//! of an enriched table, are encoded by mfu (`text.rs`: dictionary pages; `float.rs`: plain pages), with
//! the statistics and page index arrow-rs would write, at a fraction of its per-value cost.

use std::io::Write;
use std::sync::Arc;

use arrow::array::ArrayRef;
use parquet::arrow::arrow_writer::{compute_leaves, ArrowColumnChunk, ArrowLeafColumn};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use polars::prelude::*;
use rayon::prelude::*;

use super::{Metadata, OutputFormat, TableWriter, WriteError};
use crate::arrow_bridge::{series_to_arrow_rs, BridgeError};

mod chunk;
mod float;
mod footer;
mod rle;
mod text;

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

pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// One row group's columns, as the writer takes them: text and Float64 columns as polars holds them
/// (encoded by `text.rs` and `float.rs`), the others as arrow-rs arrays (encoded by arrow-rs).
pub struct RowGroup {
    columns: Vec<(PlSmallStr, GroupColumn)>,
}

enum GroupColumn {
    Text(StringChunked),
    Float(Float64Chunked),
    Arrow(ArrayRef),
}

impl RowGroup {
    /// `df`'s columns (all of its rows: the caller slices a row group's worth).
    pub fn from_frame(df: &DataFrame) -> Result<RowGroup, BridgeError> {
        let columns = df
            .columns()
            .iter()
            .map(|col| {
                let series = col.as_materialized_series();
                let column = match series.dtype() {
                    DataType::String => GroupColumn::Text(series.str()?.clone()),
                    DataType::Float64 => GroupColumn::Float(series.f64()?.clone()),
                    _ => GroupColumn::Arrow(series_to_arrow_rs(&series.rechunk())?),
                };
                Ok((series.name().clone(), column))
            })
            .collect::<Result<_, BridgeError>>()?;
        Ok(RowGroup { columns })
    }

    /// The Arrow schema of the file: text as LargeUtf8, what polars exports for strings.
    fn schema(&self, metadata: &Metadata) -> arrow::datatypes::SchemaRef {
        let fields: Vec<arrow::datatypes::Field> = self
            .columns
            .iter()
            .map(|(name, column)| {
                let data_type = match column {
                    GroupColumn::Text(_) => arrow::datatypes::DataType::LargeUtf8,
                    GroupColumn::Float(_) => arrow::datatypes::DataType::Float64,
                    GroupColumn::Arrow(array) => array.data_type().clone(),
                };
                arrow::datatypes::Field::new(name.as_str(), data_type, true)
            })
            .collect();
        Arc::new(arrow::datatypes::Schema::new_with_metadata(
            fields,
            metadata
                .iter()
                .cloned()
                .collect::<std::collections::HashMap<_, _>>(),
        ))
    }
}

fn write_frame(
    df: &DataFrame,
    metadata: &Metadata,
    out: &mut (dyn Write + Send),
) -> Result<(), BoxError> {
    let group = |start: usize| {
        let len = ROW_GROUP_ROWS.min(df.height().saturating_sub(start));
        RowGroup::from_frame(&df.slice(start as i64, len))
    };
    let first = group(0)?;
    let mut file = ParquetStream::new(out, &first, metadata)?;
    file.write_row_group(&first)?;
    let mut start = ROW_GROUP_ROWS;
    while start < df.height() {
        file.write_row_group(&group(start)?)?;
        start += ROW_GROUP_ROWS;
    }
    file.finish()?;
    Ok(())
}

/// A Parquet file written one row group at a time, with the schema of the first.
pub struct ParquetStream<W: Write + Send> {
    file: parquet::file::writer::SerializedFileWriter<footer::FooterPatch<W>>,
    factory: parquet::arrow::arrow_writer::ArrowRowGroupWriterFactory,
    schema: arrow::datatypes::SchemaRef,
    properties: Arc<WriterProperties>,
    group: usize,
}

/// What one leaf column's writer is given: a text or float column for mfu's encoders (arrow-rs writes it
/// if they decline), or a leaf arrow-rs cut from another column.
enum Job<'a> {
    Text(&'a StringChunked),
    Float(&'a Float64Chunked),
    Leaf(ArrowLeafColumn),
}

/// The one leaf of a flat column an mfu encoder declined, for arrow-rs to write.
fn declined_leaf(
    field: &arrow::datatypes::FieldRef,
    column: Series,
) -> Result<ArrowLeafColumn, BoxError> {
    let array = series_to_arrow_rs(&column)?;
    Ok(compute_leaves(field, &array)?
        .pop()
        .ok_or("a flat column without a leaf")?)
}

/// A column chunk, encoded by arrow-rs or by mfu (`text.rs`, `float.rs`).
enum EncodedColumn {
    Arrow(ArrowColumnChunk),
    Own(chunk::EncodedChunk),
}

impl<W: Write + Send> ParquetStream<W> {
    /// Starts a file whose row groups have `first`'s columns; its rows (not written here) are the sample
    /// that decides which number columns zstd compresses.
    pub fn new(out: W, first: &RowGroup, metadata: &Metadata) -> Result<Self, BoxError> {
        let schema = first.schema(metadata);
        // Dictionary encoding pays for text (run names, devices, dtypes repeat); for numbers it hashes
        // every value only to give up on a million distinct floats, and zstd already folds repeats.
        let mut builder = WriterProperties::builder().set_dictionary_enabled(false);
        for (field, (_, column)) in schema.fields().iter().zip(&first.columns) {
            let path = || parquet::schema::types::ColumnPath::from(field.name().as_str());
            match column {
                GroupColumn::Text(_) => {
                    builder = builder.set_column_dictionary_enabled(path(), true);
                }
                GroupColumn::Float(values) => {
                    if !zstd_pays(&float_sample(values)) {
                        builder = builder.set_column_compression(path(), Compression::UNCOMPRESSED);
                    }
                }
                GroupColumn::Arrow(array) => {
                    if array.data_type().is_integer() {
                        builder =
                            builder.set_column_encoding(path(), Encoding::DELTA_BINARY_PACKED);
                    }
                    if !zstd_pays(&fixed_width_sample(array.as_ref())) {
                        builder = builder.set_column_compression(path(), Compression::UNCOMPRESSED);
                    }
                }
            }
        }
        let properties = Arc::new(
            builder
                .set_compression(Compression::ZSTD(ZstdLevel::default()))
                .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
                .set_key_value_metadata(Some(
                    metadata
                        .iter()
                        .map(|(k, v)| KeyValue::new(k.clone(), v.clone()))
                        .collect(),
                ))
                .build(),
        );
        // ArrowWriter sets up the file (schema, ARROW:schema metadata); the row groups are encoded here.
        let (file, factory) = ArrowWriter::try_new(
            footer::FooterPatch::new(out),
            Arc::clone(&schema),
            Some((*properties).clone()),
        )?
        .into_serialized_writer()?;
        Ok(ParquetStream {
            file,
            factory,
            schema,
            properties,
            group: 0,
        })
    }

    /// Writes `group` (of the first group's columns) as one row group, its columns encoded in parallel.
    pub fn write_row_group(&mut self, group: &RowGroup) -> Result<(), BoxError> {
        let mut writers = self.factory.create_column_writers(self.group)?.into_iter();
        // One writer per leaf column, in field order: a text or float column is one leaf, encoded here
        // unless it declines; any other column is cut into its leaves by arrow-rs once, each for its writer.
        let mut jobs = Vec::with_capacity(writers.len());
        let mut leaf = 0;
        for (field, (_, column)) in self.schema.fields().iter().zip(&group.columns) {
            let field_jobs = match column {
                GroupColumn::Text(text) => vec![Job::Text(text)],
                GroupColumn::Float(values) => vec![Job::Float(values)],
                GroupColumn::Arrow(array) => compute_leaves(field, array)?
                    .into_iter()
                    .map(Job::Leaf)
                    .collect(),
            };
            for job in field_jobs {
                let writer = writers.next().ok_or("fewer column writers than leaves")?;
                let descr = self.file.schema_descr().column(leaf);
                jobs.push((field, job, writer, descr));
                leaf += 1;
            }
        }
        let chunks: Vec<EncodedColumn> = jobs
            .into_par_iter()
            .map(|(field, job, mut writer, descr)| -> Result<_, BoxError> {
                let codec = self.properties.compression(descr.path());
                let leaf = match job {
                    Job::Leaf(leaf) => leaf,
                    Job::Text(text) => match text::encode_text_chunk(text, descr, codec)? {
                        Some(chunk) => return Ok(EncodedColumn::Own(chunk)),
                        None => declined_leaf(field, text.rechunk().into_owned().into_series())?,
                    },
                    Job::Float(values) => match float::encode_float_chunk(values, descr, codec)? {
                        Some(chunk) => return Ok(EncodedColumn::Own(chunk)),
                        None => declined_leaf(field, values.rechunk().into_owned().into_series())?,
                    },
                };
                writer.write(&leaf)?;
                Ok(EncodedColumn::Arrow(writer.close()?))
            })
            .collect::<Result<_, _>>()?;
        let mut row_group = self.file.next_row_group()?;
        for chunk in chunks {
            match chunk {
                EncodedColumn::Arrow(chunk) => chunk.append_to_row_group(&mut row_group)?,
                EncodedColumn::Own(chunk) => row_group.append_column(&chunk.bytes, chunk.close)?,
            }
        }
        row_group.close()?;
        self.group += 1;
        Ok(())
    }

    /// Writes the footer (float columns marked type-ordered, see [`footer`]), and gives back the output.
    pub fn finish(self) -> Result<W, BoxError> {
        let leaves = self.file.schema_descr().num_columns();
        Ok(self.file.into_inner()?.finish(leaves)?)
    }
}

/// The share of a sample's bytes zstd must save for a number column to be compressed.
pub const MIN_ZSTD_SAVING: f64 = 0.1;

/// Values sampled from the start of the first row group.
const ZSTD_SAMPLE_VALUES: usize = 1 << 14;

/// Whether zstd (at the level the file uses) saves at least [`MIN_ZSTD_SAVING`] of a number column's
/// bytes, judged on a sample of its first values as Parquet's plain encoding lays them out (`None`: not
/// a fixed-width column, or too few values to judge; such columns are compressed).
fn zstd_pays(sample: &Option<Vec<u8>>) -> bool {
    let Some(sample) = sample else {
        return true;
    };
    match zstd::bulk::compress(sample, ZstdLevel::default().compression_level()) {
        Ok(compressed) => (compressed.len() as f64) < sample.len() as f64 * (1.0 - MIN_ZSTD_SAVING),
        Err(_) => true,
    }
}

/// At least this many values make a sample worth judging.
const MIN_ZSTD_SAMPLE_VALUES: usize = 1024;

/// The first valid values of a fixed-width arrow-rs array, as bytes. Null slots are skipped: what they
/// hold is whatever the reader left there, which differs between ways of reading the same input.
fn fixed_width_sample(array: &dyn arrow::array::Array) -> Option<Vec<u8>> {
    let data = array.to_data();
    let width = data.data_type().primitive_width()?;
    if data.buffers().len() != 1 {
        return None;
    }
    let values = &data.buffers()[0].as_slice()[data.offset() * width..];
    let mut sample = Vec::with_capacity(ZSTD_SAMPLE_VALUES.min(data.len()) * width);
    match data.nulls() {
        None => {
            let len = data.len().min(ZSTD_SAMPLE_VALUES);
            sample.extend_from_slice(&values[..len * width]);
        }
        Some(nulls) => {
            for i in nulls.valid_indices().take(ZSTD_SAMPLE_VALUES) {
                sample.extend_from_slice(&values[i * width..(i + 1) * width]);
            }
        }
    }
    (sample.len() >= MIN_ZSTD_SAMPLE_VALUES * width).then_some(sample)
}

/// The first valid values of a float column (however polars has it in pieces), as bytes; null slots are
/// skipped, as above.
fn float_sample(column: &Float64Chunked) -> Option<Vec<u8>> {
    let mut sample: Vec<f64> = Vec::with_capacity(column.len().min(ZSTD_SAMPLE_VALUES));
    for array in column.downcast_iter() {
        let room = ZSTD_SAMPLE_VALUES - sample.len();
        match array.validity().filter(|v| v.unset_bits() > 0) {
            None => sample.extend_from_slice(&array.values()[..room.min(array.len())]),
            Some(valid) => sample.extend(
                array
                    .values()
                    .iter()
                    .zip(valid.iter())
                    .filter_map(|(v, ok)| ok.then_some(*v))
                    .take(room),
            ),
        }
        if sample.len() == ZSTD_SAMPLE_VALUES {
            break;
        }
    }
    (sample.len() >= MIN_ZSTD_SAMPLE_VALUES).then(|| bytemuck::cast_slice(&sample).to_vec())
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
    fn nested_columns_give_each_leaf_to_its_own_writer() {
        // A struct of two fields is two leaf columns (an int and a string); a list is one. Beside them,
        // text and floats that mfu encodes itself.
        let rows = 3usize;
        let cfg = df!(
            "a" => [1i64, 2, 3],
            "b" => ["x", "y", "z"],
        )
        .unwrap()
        .into_struct("cfg".into())
        .into_series();
        let ranks = Series::new(
            "ranks".into(),
            [
                Series::new("".into(), [0i64, 1]),
                Series::new("".into(), [2i64]),
                Series::new("".into(), [3i64, 4, 5]),
            ],
        );
        let mut df = DataFrame::new(
            rows,
            vec![
                Series::new("run".into(), ["r", "r", "s"]).into_column(),
                cfg.into_column(),
                ranks.into_column(),
                Series::new("t".into(), [0.5f64, 0.25, 1.0]).into_column(),
            ],
        )
        .unwrap();
        let mut bytes = Vec::new();
        ParquetTableWriter
            .write(&mut df, &Vec::new(), &mut bytes)
            .unwrap();
        let batch = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes))
            .unwrap()
            .build()
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        let back = crate::arrow_bridge::record_batch_to_frame(&batch).unwrap();
        for name in ["run", "cfg", "ranks", "t"] {
            let (ours, read) = (df.column(name).unwrap(), back.column(name).unwrap());
            assert_eq!(
                ours.cast(read.dtype()).unwrap().as_materialized_series(),
                read.as_materialized_series(),
                "{name}"
            );
        }
    }

    #[test]
    fn zstd_samples_skip_null_slots() {
        use polars_arrow::array::PrimitiveArray;
        use polars_arrow::bitmap::Bitmap;
        // 20,000 leading nulls, then values: what the null slots hold must not matter.
        let n = 30_000;
        let valid: Vec<bool> = (0..n).map(|i| i >= 20_000).collect();
        let values = |garbage: f64| -> Vec<f64> {
            (0..n)
                .map(|i| {
                    if i >= 20_000 {
                        i as f64 * 0.25
                    } else {
                        garbage * i as f64
                    }
                })
                .collect()
        };
        let column = |garbage: f64| {
            let array = PrimitiveArray::<f64>::new(
                polars_arrow::datatypes::ArrowDataType::Float64,
                values(garbage).into(),
                Some(Bitmap::from(valid.as_slice())),
            );
            Float64Chunked::with_chunk("x".into(), array)
        };
        let (zeros, noise) = (float_sample(&column(0.0)), float_sample(&column(1.7e-3)));
        assert_eq!(zeros, noise);
        let want: Vec<f64> = (20_000..n).map(|i| i as f64 * 0.25).collect();
        assert_eq!(zeros.unwrap(), bytemuck::cast_slice::<f64, u8>(&want));
        // Too few valid values to judge: no sample (the column is compressed).
        let sparse: Vec<bool> = (0..n).map(|i| i % 100 == 0).collect();
        let array = PrimitiveArray::<f64>::new(
            polars_arrow::datatypes::ArrowDataType::Float64,
            values(1.0).into(),
            Some(Bitmap::from(sparse.as_slice())),
        );
        assert_eq!(
            float_sample(&Float64Chunked::with_chunk("x".into(), array)),
            None
        );

        // The same for integer columns written by arrow-rs.
        let ints = |garbage: i64| {
            let data: Vec<Option<i64>> =
                (0..n as i64).map(|i| (i >= 20_000).then_some(i)).collect();
            let array = arrow::array::Int64Array::from(data);
            let (_, mut buffer, nulls) = array.into_parts();
            let mut raw = buffer.to_vec();
            for v in raw.iter_mut().take(20_000) {
                *v = garbage;
            }
            buffer = raw.into();
            arrow::array::Int64Array::new(buffer, nulls)
        };
        let (a, b) = (fixed_width_sample(&ints(0)), fixed_width_sample(&ints(-99)));
        assert_eq!(a, b);
        assert_eq!(a.unwrap().len(), 10_000 * 8);
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
