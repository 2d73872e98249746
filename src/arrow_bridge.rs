//! The arrow-rs interface: enrichment of `RecordBatch`es, for embedding mfu in arrow-rs engines (and, through
//! pyarrow, in Spark or Ray jobs).
//!
//! Polars and arrow-rs meet only here, through the Arrow C Data Interface: each input column crosses into
//! polars without copying, the pipeline runs on the polars frame, and the six added columns cross back. The
//! input columns of the output batch are the caller's own arrays, untouched.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{make_array, Array, ArrayRef, RecordBatch};
use arrow::datatypes::{DataType as ArrowType, Field as ArrowRsField, Schema};
use arrow::ffi::{from_ffi, to_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use polars::prelude::{CompatLevel, DataFrame, IntoColumn, PlSmallStr, Series};

use crate::compute::RESOLVED_DEVICE;
use crate::enrich::{enrich_frame, EnrichError, EnrichOptions};

/// Errors crossing between arrow-rs and polars.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error(transparent)]
    Enrich(#[from] EnrichError),
    #[error("arrow: {0}")]
    Arrow(#[from] arrow::error::ArrowError),
    #[error("polars: {0}")]
    Polars(#[from] polars::prelude::PolarsError),
    #[error("column '{column}' ({dtype}): {reason}")]
    Unwritable {
        column: String,
        dtype: String,
        reason: String,
    },
}

/// Enriches one batch: its columns unchanged and in order (a column whose name an added column takes is
/// renamed `<name>_input`), then the six added columns.
pub fn enrich_record_batch(
    batch: &RecordBatch,
    options: &EnrichOptions,
) -> Result<RecordBatch, BridgeError> {
    let frame = record_batch_to_frame(batch)?;
    let enriched = enrich_frame(frame, options)?;
    let schema = batch.schema();
    let mut fields: Vec<ArrowRsField> = Vec::with_capacity(batch.num_columns() + 8);
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(fields.capacity());
    for (field, array) in schema.fields().iter().zip(batch.columns()) {
        let name = enriched
            .renamed
            .iter()
            .find(|(old, _)| old == field.name())
            .map_or(field.name().as_str(), |(_, new)| new.as_str());
        fields.push(field.as_ref().clone().with_name(name));
        arrays.push(array.clone());
    }
    for name in options.added_columns() {
        let series = enriched
            .frame
            .column(name)?
            .as_materialized_series()
            .rechunk();
        let mut array = series_to_arrow_rs(&series)?;
        if name == RESOLVED_DEVICE {
            // Plain Utf8 is what every Arrow consumer reads.
            array = arrow::compute::cast(&array, &ArrowType::Utf8)?;
        }
        fields.push(ArrowRsField::new(name, array.data_type().clone(), true));
        arrays.push(array);
    }
    let schema = Schema::new_with_metadata(fields, schema.metadata().clone());
    Ok(RecordBatch::try_new(Arc::new(schema), arrays)?)
}

/// Enriches each batch of a stream in turn.
pub fn enrich_record_batches<'a, I>(
    batches: I,
    options: &'a EnrichOptions,
) -> impl Iterator<Item = Result<RecordBatch, BridgeError>> + 'a
where
    I: IntoIterator<Item = RecordBatch>,
    I::IntoIter: 'a,
{
    batches
        .into_iter()
        .map(move |b| enrich_record_batch(&b, options))
}

/// Exports a polars frame as one arrow-rs record batch, without copying the buffers (each column is
/// rechunked first if it is in pieces). Types use Arrow's classic layouts (LargeUtf8, LargeList), which
/// every Parquet and Arrow reader understands. `metadata` becomes the schema's metadata.
pub fn frame_to_record_batch(
    df: &DataFrame,
    metadata: HashMap<String, String>,
) -> Result<RecordBatch, BridgeError> {
    let mut fields = Vec::with_capacity(df.width());
    let mut arrays = Vec::with_capacity(df.width());
    for col in df.columns() {
        let series = col.as_materialized_series().rechunk();
        let array = series_to_arrow_rs(&series)?;
        fields.push(ArrowRsField::new(
            series.name().as_str(),
            array.data_type().clone(),
            true,
        ));
        arrays.push(array);
    }
    let schema = Arc::new(Schema::new_with_metadata(fields, metadata));
    let options = arrow::array::RecordBatchOptions::new().with_row_count(Some(df.height()));
    Ok(RecordBatch::try_new_with_options(schema, arrays, &options)?)
}

/// Imports every column of `batch` into a polars frame, without copying the buffers.
pub fn record_batch_to_frame(batch: &RecordBatch) -> Result<DataFrame, BridgeError> {
    let columns = batch
        .schema()
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(field, array)| arrow_rs_to_series(field.name(), array).map(IntoColumn::into_column))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(DataFrame::new(batch.num_rows(), columns)?)
}

fn arrow_rs_to_series(name: &str, array: &ArrayRef) -> Result<Series, BridgeError> {
    let (ffi_array, ffi_schema) = to_ffi(&array.to_data())?;
    // SAFETY: both crates define these structs as the C Data Interface's `struct ArrowArray` and
    // `struct ArrowSchema` (repr(C), identical layout; transmute checks the sizes). Ownership, and with it
    // the release callback, moves to the polars side, which releases them when dropped.
    let (c_array, c_schema): (
        polars_arrow::ffi::ArrowArray,
        polars_arrow::ffi::ArrowSchema,
    ) = unsafe {
        (
            std::mem::transmute::<FFI_ArrowArray, polars_arrow::ffi::ArrowArray>(ffi_array),
            std::mem::transmute::<FFI_ArrowSchema, polars_arrow::ffi::ArrowSchema>(ffi_schema),
        )
    };
    // SAFETY: the structs were just produced by arrow-rs from a valid array.
    let imported = unsafe {
        let field = polars_arrow::ffi::import_field_from_c(&c_schema)?;
        polars_arrow::ffi::import_array_from_c(c_array, field.dtype().clone())?
    };
    Ok(Series::from_arrow(PlSmallStr::from(name), imported)?)
}

pub(crate) fn series_to_arrow_rs(series: &Series) -> Result<ArrayRef, BridgeError> {
    use polars::prelude::DataType as P;
    match series.dtype() {
        // A column that is null in every row (a log key never filled in): polars' Null arrays carry a
        // buffer that the C Data Interface does not expect, and there is nothing in it to carry.
        P::Null => return Ok(Arc::new(arrow::array::NullArray::new(series.len()))),
        // Arrow has no 128-bit integer; a decimal of scale 0 holds every value of up to 38 digits, which
        // every Parquet reader reads as an exact number.
        P::Int128 | P::UInt128 => {
            let decimal = series
                .strict_cast(&P::Decimal(38, 0))
                .map_err(|_| BridgeError::Unwritable {
                    column: series.name().to_string(),
                    dtype: series.dtype().to_string(),
                    reason: "an integer of more than 38 digits has no Arrow or Parquet number type; write CSV or JSON Lines, which keep its digits".into(),
                })?;
            return series_to_arrow_rs(&decimal);
        }
        _ => {}
    }
    let array = series.to_arrow(0, CompatLevel::oldest());
    let field =
        polars_arrow::datatypes::Field::new(series.name().clone(), array.dtype().clone(), true);
    let c_array = polars_arrow::ffi::export_array_to_c(array);
    let c_schema = polars_arrow::ffi::export_field_to_c(&field);
    // SAFETY: as above, in the other direction; arrow-rs takes ownership and releases them.
    let (ffi_array, ffi_schema): (FFI_ArrowArray, FFI_ArrowSchema) = unsafe {
        (
            std::mem::transmute::<polars_arrow::ffi::ArrowArray, FFI_ArrowArray>(c_array),
            std::mem::transmute::<polars_arrow::ffi::ArrowSchema, FFI_ArrowSchema>(c_schema),
        )
    };
    // SAFETY: produced by polars-arrow's exporter from a valid array.
    let data = unsafe { from_ffi(ffi_array, &ffi_schema)? };
    Ok(make_array(data))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compute::OUTPUT_COLUMNS;
    use crate::peaks::Resolver;
    use arrow::array::{Float64Array, Int64Array, StringArray};

    fn options() -> EnrichOptions {
        EnrichOptions::new(Resolver::builtin())
    }

    fn batch() -> RecordBatch {
        let schema = Schema::new(vec![
            ArrowRsField::new("step", ArrowType::Int64, false),
            ArrowRsField::new("step_time_ms", ArrowType::Float64, true),
            ArrowRsField::new("tokens", ArrowType::Int64, true),
            ArrowRsField::new("world_size", ArrowType::Int64, true),
            ArrowRsField::new("flops_per_token", ArrowType::Float64, true),
            ArrowRsField::new("gpu", ArrowType::Utf8, true),
            ArrowRsField::new("precision", ArrowType::Utf8, true),
        ]);
        RecordBatch::try_new(
            Arc::new(schema),
            vec![
                Arc::new(Int64Array::from(vec![1, 2])),
                Arc::new(Float64Array::from(vec![Some(500.0), None])),
                Arc::new(Int64Array::from(vec![4096, 4096])),
                Arc::new(Int64Array::from(vec![8, 8])),
                Arc::new(Float64Array::from(vec![4.2e10, 4.2e10])),
                Arc::new(StringArray::from(vec![
                    Some("NVIDIA H100 80GB HBM3"),
                    Some("NVIDIA H100 80GB HBM3"),
                ])),
                Arc::new(StringArray::from(vec!["bf16", "bf16"])),
            ],
        )
        .unwrap()
    }

    #[test]
    fn round_trip_keeps_inputs_and_adds_the_contract_columns() {
        let input = batch();
        let out = enrich_record_batch(&input, &options()).unwrap();
        assert_eq!(out.num_rows(), 2);
        for i in 0..input.num_columns() {
            assert_eq!(out.schema().field(i), input.schema().field(i));
            assert_eq!(out.column(i).to_data(), input.column(i).to_data());
        }
        let schema = out.schema();
        let names: Vec<&str> = schema.fields()[7..]
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        assert_eq!(names, OUTPUT_COLUMNS);
        let device = out
            .column(7)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        assert_eq!(device.value(0), "H100 SXM5");
        let mfu = out
            .column(11)
            .as_any()
            .downcast_ref::<Float64Array>()
            .unwrap();
        let want = 4096.0 * 4.2e10 / (8.0 * 0.5) / 989.4e12;
        assert!(
            (mfu.value(0) - want).abs() < 1e-15,
            "{} vs {want}",
            mfu.value(0)
        );
        assert!(mfu.is_null(1), "a missing step time gives null MFU");
        let fwd_bwd = out
            .column(12)
            .as_any()
            .downcast_ref::<Float64Array>()
            .unwrap();
        assert_eq!(fwd_bwd.null_count(), 2);
    }

    #[test]
    fn iterator_form_enriches_each_batch() {
        let opts = options();
        let outs: Vec<_> = enrich_record_batches(vec![batch(), batch()], &opts)
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(outs.len(), 2);
        assert!(outs.iter().all(|b| b.num_columns() == 13));
    }
}
