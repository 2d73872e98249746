//! Enrichment of arrow-rs `RecordBatch`es, for embedding mfu in arrow engines (and, through the Python
//! package, in Spark and Ray): each input column crosses into polars without copying
//! ([`crate::arrow_bridge`]), the enrichment runs on the frame, and the added columns cross back. The
//! input columns of the output batch are the caller's own arrays, untouched.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, RecordBatch};
use arrow::datatypes::{DataType as ArrowType, Field as ArrowRsField, Schema, SchemaRef};

use crate::arrow_bridge::{record_batch_to_frame, series_to_arrow_rs, BridgeError};
use crate::compute::{ComputeStats, RESOLVED_DEVICE};
use crate::enrich::{enrich_frame, EnrichError, EnrichOptions, Enriched};
use crate::read::Shape;

use super::enrich::stats_warnings;
use super::{warnings_for, Seen};

/// Why a batch could not be enriched.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error(transparent)]
    Enrich(#[from] EnrichError),
    #[error(transparent)]
    Bridge(#[from] BridgeError),
}

/// One batch enriched, with what the user should know about it.
#[derive(Debug)]
pub struct EnrichedBatch {
    pub batch: RecordBatch,
    /// Non-numeric cells, renamed columns, missing timing, null derived values, unresolved peaks.
    pub warnings: Vec<String>,
    pub stats: ComputeStats,
}

/// [`enrich_record_batch`], with its warnings (each prefixed by `label`) and counts.
pub fn enrich_record_batch_reporting(
    batch: &RecordBatch,
    options: &EnrichOptions,
    label: &str,
) -> Result<EnrichedBatch, BatchError> {
    let frame = record_batch_to_frame(batch)?;
    let enriched = enrich_frame(frame, options)?;
    let seen = Seen {
        how: String::new(),
        shape: Shape::Table,
        rows: enriched.frame.height(),
        notes: Vec::new(),
        read_warnings: Vec::new(),
        mapping: enriched.mapping.clone(),
        non_numeric: enriched.non_numeric.clone(),
        renamed: enriched.renamed.clone(),
        torn: None,
        rejects: Vec::new(),
    };
    let mut warnings = warnings_for(label, &seen, options.logged_peak_flops.is_some());
    warnings.extend(stats_warnings(&enriched.stats));
    let stats = enriched.stats.clone();
    Ok(EnrichedBatch {
        batch: added_columns(batch, enriched, options)?,
        warnings,
        stats,
    })
}

/// Enriches every batch as one table (the batches concatenated first, so running totals and rolling
/// windows see every row, as the command line sees a whole file).
pub fn enrich_record_batches_whole(
    schema: SchemaRef,
    batches: &[RecordBatch],
    options: &EnrichOptions,
    label: &str,
) -> Result<EnrichedBatch, BatchError> {
    let one = arrow::compute::concat_batches(&schema, batches).map_err(BridgeError::from)?;
    enrich_record_batch_reporting(&one, options, label)
}

/// The schema enrichment gives a table of `schema`: its fields (renamed where an added column takes the
/// name) and then the added columns.
pub fn output_schema(schema: SchemaRef, options: &EnrichOptions) -> Result<SchemaRef, BatchError> {
    let empty = RecordBatch::new_empty(schema);
    Ok(enrich_record_batch(&empty, options)?.schema())
}

/// Enriches one batch: its columns unchanged and in order (a column whose name an added column takes is
/// renamed `<name>_input`), then the six added columns.
pub fn enrich_record_batch(
    batch: &RecordBatch,
    options: &EnrichOptions,
) -> Result<RecordBatch, BatchError> {
    let frame = record_batch_to_frame(batch)?;
    let enriched = enrich_frame(frame, options)?;
    added_columns(batch, enriched, options)
}

/// `batch`'s own arrays (renamed where needed) followed by the added columns of `enriched`.
fn added_columns(
    batch: &RecordBatch,
    enriched: Enriched,
    options: &EnrichOptions,
) -> Result<RecordBatch, BatchError> {
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
            .column(name)
            .map_err(EnrichError::from)?
            .as_materialized_series()
            .rechunk();
        let mut array = series_to_arrow_rs(&series)?;
        if name == RESOLVED_DEVICE {
            // Plain Utf8 is what every Arrow consumer reads.
            array = arrow::compute::cast(&array, &ArrowType::Utf8).map_err(BridgeError::from)?;
        }
        fields.push(ArrowRsField::new(name, array.data_type().clone(), true));
        arrays.push(array);
    }
    let schema = Schema::new_with_metadata(fields, schema.metadata().clone());
    Ok(RecordBatch::try_new(Arc::new(schema), arrays).map_err(BridgeError::from)?)
}

/// Enriches each batch of a stream in turn.
pub fn enrich_record_batches<'a, I>(
    batches: I,
    options: &'a EnrichOptions,
) -> impl Iterator<Item = Result<RecordBatch, BatchError>> + 'a
where
    I: IntoIterator<Item = RecordBatch>,
    I::IntoIter: 'a,
{
    batches
        .into_iter()
        .map(move |b| enrich_record_batch(&b, options))
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
