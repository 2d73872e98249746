//! Polars and arrow-rs meet only here, through the Arrow C Data Interface: a column crosses either way
//! without copying its buffers. The Parquet writer exports frames this way, the Parquet reader imports
//! batches, and [`crate::pipeline::arrow`] enriches arrow-rs batches with it.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{make_array, Array, ArrayRef, RecordBatch};
use arrow::datatypes::{Field as ArrowRsField, Schema};
use arrow::ffi::{from_ffi, to_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use polars::prelude::{CompatLevel, DataFrame, IntoColumn, PlSmallStr, Series};

/// Errors crossing between arrow-rs and polars.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
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

pub(crate) fn arrow_rs_to_series(name: &str, array: &ArrayRef) -> Result<Series, BridgeError> {
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
