//! Enrichment of arrow-rs `RecordBatch`es, for embedding mfu in arrow engines (and, through the Python
//! package, in Spark and Ray): the fields are read from the batch's own arrays
//! ([`crate::columns::arrow`]), the arithmetic is the command line's ([`crate::compute`]), and the added
//! columns are built as Arrow arrays. The input columns of the output batch are the caller's own arrays,
//! untouched.

use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, RecordBatch, StringArray};
use arrow::datatypes::{Field as ArrowRsField, Schema, SchemaRef};

use crate::arrow_bridge::BridgeError;
use crate::columns::{extract_from, ColumnMapping};
use crate::compute::{compute_values, ComputeStats, ComputedValues, RESOLVED_DEVICE};
use crate::enrich::{plan_columns, EnrichError, EnrichOptions};
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
    let done = enrich(batch, options)?;
    let seen = Seen {
        how: String::new(),
        shape: Shape::Table,
        rows: batch.num_rows(),
        notes: Vec::new(),
        read_warnings: Vec::new(),
        mapping: done.mapping,
        non_numeric: done.non_numeric,
        column_warnings: done.column_warnings,
        renamed: done.renamed,
        torn: None,
        rejects: Vec::new(),
    };
    let mut warnings = warnings_for(label, &seen, options);
    warnings.extend(stats_warnings(&done.stats));
    Ok(EnrichedBatch {
        batch: done.batch,
        warnings,
        stats: done.stats,
    })
}

/// A batch enriched, and what was seen doing it.
struct Done {
    batch: RecordBatch,
    mapping: ColumnMapping,
    non_numeric: Vec<(String, usize)>,
    column_warnings: Vec<String>,
    renamed: Vec<(String, String)>,
    stats: ComputeStats,
}

/// A table's columns mapped, its fields read and the added columns computed.
struct Planned {
    mapping: ColumnMapping,
    renamed: Vec<(String, String)>,
    values: crate::columns::FieldValues,
    computed: ComputedValues,
}

/// Maps `schema`'s columns, reads the fields from `table` (the rows' steps and runs only for a rolling
/// window) and computes the added columns: the one way of both the per-batch and the whole-stream paths.
fn plan_and_compute(
    schema: &SchemaRef,
    table: &dyn crate::columns::FieldTable,
    options: &EnrichOptions,
) -> Result<Planned, BatchError> {
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let numeric: Vec<&str> = schema
        .fields()
        .iter()
        .filter(|f| f.data_type().is_numeric())
        .map(|f| f.name().as_str())
        .collect();
    let (mapping, renamed) = plan_columns(&names, &numeric, options)?;
    let extras = options.extras();
    let mut values = extract_from(
        table,
        &mapping,
        options.columns.model.as_ref(),
        extras.window.is_some(),
    )
    .map_err(EnrichError::from)?;
    crate::compute::read_logged_percentages(&mut values, &options.resolver);
    let computed = compute_values(&values, &options.resolver, extras);
    Ok(Planned {
        mapping,
        renamed,
        values,
        computed,
    })
}

fn enrich(batch: &RecordBatch, options: &EnrichOptions) -> Result<Done, BatchError> {
    let Planned {
        mapping,
        renamed,
        values,
        computed,
    } = plan_and_compute(&batch.schema(), batch, options)?;
    let stats = computed.stats.clone();
    Ok(Done {
        batch: added_columns(batch, &renamed, computed)?,
        mapping,
        non_numeric: values.non_numeric,
        column_warnings: values.column_warnings,
        renamed,
        stats,
    })
}

/// Batches enriched as one table, with what the user should know about them.
#[derive(Debug)]
pub struct EnrichedBatches {
    /// One output batch per input batch, of the same rows.
    pub batches: Vec<RecordBatch>,
    pub schema: SchemaRef,
    pub warnings: Vec<String>,
    pub stats: ComputeStats,
}

/// Enriches every batch as one table (running totals and rolling windows see every row, as the command
/// line sees a whole file), without concatenating them: the fields are read across the batches, computed
/// once, and each output batch is an input batch's own arrays with its slice of the added columns.
pub fn enrich_record_batches_whole(
    schema: SchemaRef,
    batches: &[RecordBatch],
    options: &EnrichOptions,
    label: &str,
) -> Result<EnrichedBatches, BatchError> {
    let Planned {
        mapping,
        renamed,
        values,
        computed,
    } = plan_and_compute(&schema, &crate::columns::arrow::Batches(batches), options)?;
    let stats = computed.stats.clone();
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let seen = Seen {
        how: String::new(),
        shape: Shape::Table,
        rows,
        notes: Vec::new(),
        read_warnings: Vec::new(),
        mapping,
        non_numeric: values.non_numeric,
        column_warnings: values.column_warnings,
        renamed,
        torn: None,
        rejects: Vec::new(),
    };
    let mut warnings = warnings_for(label, &seen, options);
    warnings.extend(stats_warnings(&stats));
    let empty = RecordBatch::new_empty(schema.clone());
    let added = added_arrays(computed)?;
    let out_schema = output_schema_of(&empty, &seen.renamed, &added);
    let mut out = Vec::with_capacity(batches.len());
    let mut offset = 0;
    for batch in batches {
        let n = batch.num_rows();
        let mut arrays: Vec<ArrayRef> = batch.columns().to_vec();
        arrays.extend(added.iter().map(|(_, a)| a.slice(offset, n)));
        offset += n;
        out.push(RecordBatch::try_new(out_schema.clone(), arrays).map_err(BridgeError::from)?);
    }
    Ok(EnrichedBatches {
        batches: out,
        schema: out_schema,
        warnings,
        stats,
    })
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
    Ok(enrich(batch, options)?.batch)
}

/// `batch`'s own arrays (renamed where needed) followed by the added columns.
fn added_columns(
    batch: &RecordBatch,
    renamed: &[(String, String)],
    computed: ComputedValues,
) -> Result<RecordBatch, BatchError> {
    let added = added_arrays(computed)?;
    let schema = output_schema_of(batch, renamed, &added);
    let mut arrays: Vec<ArrayRef> = batch.columns().to_vec();
    arrays.extend(added.into_iter().map(|(_, a)| a));
    Ok(RecordBatch::try_new(schema, arrays).map_err(BridgeError::from)?)
}

/// The schema of `batch` enriched: its fields (renamed where needed), then the added columns.
fn output_schema_of(
    batch: &RecordBatch,
    renamed: &[(String, String)],
    added: &[(&'static str, ArrayRef)],
) -> SchemaRef {
    let schema = batch.schema();
    let mut fields: Vec<ArrowRsField> = Vec::with_capacity(batch.num_columns() + added.len());
    for field in schema.fields() {
        let name = renamed
            .iter()
            .find(|(old, _)| old == field.name())
            .map_or(field.name().as_str(), |(_, new)| new.as_str());
        fields.push(field.as_ref().clone().with_name(name));
    }
    for (name, array) in added {
        fields.push(ArrowRsField::new(*name, array.data_type().clone(), true));
    }
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// The added columns as Arrow arrays: the resolved device as plain Utf8 (which every Arrow consumer
/// reads), the numbers as Float64.
fn added_arrays(computed: ComputedValues) -> Result<Vec<(&'static str, ArrayRef)>, BatchError> {
    let rows = computed.runs.rows();
    let mut added: Vec<(&'static str, ArrayRef)> =
        vec![(RESOLVED_DEVICE, resolved_devices(&computed)?)];
    for (name, floats) in computed.numbers {
        // The row loop left the validity as a bitmap with its count of nulls: no pass over the rows here.
        let (values, bits, nulls) = floats.into_parts();
        let nulls = (nulls > 0).then(|| {
            arrow::buffer::NullBuffer::new(arrow::buffer::BooleanBuffer::new(bits.into(), 0, rows))
        });
        added.push((
            name,
            Arc::new(Float64Array::new(values.into(), nulls)) as ArrayRef,
        ));
    }
    Ok(added)
}

/// The `resolved_device` column: each row its pair's entry name, the bytes laid end to end with no
/// builder in between (the per-row builder was 6% of `mfu.enrich`'s time on a 1M-row table).
fn resolved_devices(computed: &ComputedValues) -> Result<ArrayRef, BatchError> {
    let names: Vec<Option<&[u8]>> = computed
        .pairs
        .iter()
        .map(|p| p.device.as_deref().map(str::as_bytes))
        .collect();
    let runs = &computed.runs;
    let bytes: usize = runs
        .iter()
        .map(|(rows, pair)| rows.len() * names[pair as usize].map_or(0, <[u8]>::len))
        .sum();
    if i32::try_from(bytes).is_err() {
        return Err(BridgeError::Unwritable {
            column: RESOLVED_DEVICE.to_string(),
            dtype: "Utf8".to_string(),
            reason: format!(
                "{bytes} bytes of device names in one batch is past Utf8's 2 GiB: enrich smaller batches"
            ),
        }
        .into());
    }
    let mut data: Vec<u8> = Vec::with_capacity(bytes);
    let mut offsets: Vec<i32> = Vec::with_capacity(runs.rows() + 1);
    offsets.push(0);
    // A run's names are laid down by doubling what is already there: a few large copies rather than one
    // small copy per row.
    for (rows, pair) in runs.iter() {
        let name = names[pair as usize].unwrap_or_default();
        let start = data.len();
        // At most `bytes`, checked above.
        let (from, step) = (start as i32, name.len() as i32);
        offsets.extend((1..=rows.len() as i32).map(|k| from + k * step));
        if name.is_empty() {
            continue;
        }
        data.extend_from_slice(name);
        let total = name.len() * rows.len();
        while data.len() - start < total {
            let have = data.len() - start;
            data.extend_from_within(start..start + have.min(total - have));
        }
    }
    let nulls = names.iter().any(Option::is_none).then(|| {
        let mut valid = arrow::array::BooleanBufferBuilder::new(runs.rows());
        for (rows, pair) in runs.iter() {
            valid.append_n(rows.len(), names[pair as usize].is_some());
        }
        arrow::buffer::NullBuffer::new(valid.finish())
    });
    let offsets = arrow::buffer::OffsetBuffer::new(offsets.into());
    // SAFETY: the offsets start at 0 and never decrease, the last is the data's length, there is one per
    // row and one more, and each value is a whole `str` copied as it is, so valid UTF-8 cut at character
    // boundaries: all `StringArray::try_new` would check (in a pass over every byte).
    let array = unsafe { StringArray::new_unchecked(offsets, data.into(), nulls) };
    Ok(Arc::new(array))
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
    use crate::compute::{PairRuns, OUTPUT_COLUMNS};
    use crate::peaks::Resolver;
    use arrow::array::{Array, Float64Array, Int64Array, StringArray};
    use arrow::datatypes::DataType as ArrowType;

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
    fn resolved_devices_lays_runs_of_names_and_nulls() {
        let resolved = |device: Option<&str>| crate::peaks::Resolved {
            device: device.map(str::to_string),
            peak: None,
            unresolved: None,
        };
        let pairs = vec![
            resolved(Some("H100 SXM5")),
            resolved(None),
            resolved(Some("A100 SXM4;H100 SXM5")),
        ];
        // Runs of 1, 3, 7 and 64 rows, nulls between, and a pair coming back.
        let mut row_pair = vec![0u32];
        row_pair.extend([1; 3]);
        row_pair.extend([2; 7]);
        row_pair.extend([0; 64]);
        row_pair.extend([1, 2, 0]);
        let want: StringArray = row_pair
            .iter()
            .map(|p| pairs[*p as usize].device.clone())
            .collect();
        let computed = ComputedValues {
            pairs,
            runs: PairRuns::from_rows(&row_pair),
            numbers: Vec::new(),
            stats: ComputeStats::default(),
        };
        let got = resolved_devices(&computed).unwrap();
        let got = got.as_any().downcast_ref::<StringArray>().unwrap();
        got.to_data().validate_full().unwrap();
        assert_eq!(got, &want);
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

    /// The added columns the polars way (the whole batch carried into a frame, as before this module
    /// read batches directly), as Arrow arrays.
    fn through_polars(batch: &RecordBatch, options: &EnrichOptions) -> Vec<ArrayRef> {
        let frame = crate::arrow_bridge::record_batch_to_frame(batch).unwrap();
        let enriched = crate::enrich::enrich_frame(frame, options).unwrap();
        options
            .added_columns(&enriched.mapping)
            .iter()
            .map(|name| {
                let series = enriched
                    .frame
                    .column(name)
                    .unwrap()
                    .as_materialized_series()
                    .rechunk();
                let array = crate::arrow_bridge::series_to_arrow_rs(&series).unwrap();
                if *name == RESOLVED_DEVICE {
                    arrow::compute::cast(&array, &ArrowType::Utf8).unwrap()
                } else {
                    array
                }
            })
            .collect()
    }

    #[test]
    fn direct_reading_equals_the_polars_way_over_column_types() {
        use arrow::array::{
            Decimal128Array, DictionaryArray, Float32Array, LargeStringArray, StringViewArray,
            UInt32Array,
        };
        use arrow::datatypes::Int32Type;
        let n = 9;
        let schema = Schema::new(vec![
            ArrowRsField::new("run_id", ArrowType::Utf8, true),
            ArrowRsField::new("step", ArrowType::Int64, true),
            ArrowRsField::new("elapsed_time", ArrowType::Utf8, true),
            ArrowRsField::new("fwd_bwd_time_ms", ArrowType::LargeUtf8, true),
            ArrowRsField::new("tokens", ArrowType::UInt32, true),
            ArrowRsField::new("world_size", ArrowType::Float32, true),
            ArrowRsField::new("flops_per_token", ArrowType::Decimal128(20, 0), true),
            ArrowRsField::new(
                "gpu",
                ArrowType::Dictionary(Box::new(ArrowType::Int32), Box::new(ArrowType::Utf8)),
                true,
            ),
            ArrowRsField::new("precision", ArrowType::Utf8View, true),
            ArrowRsField::new("mfu(%)", ArrowType::Float64, true),
            ArrowRsField::new("tokens_per_second", ArrowType::Float64, true),
        ]);
        let gpus: DictionaryArray<Int32Type> = vec![
            Some("NVIDIA H100 80GB HBM3"),
            Some("NVIDIA H100 80GB HBM3"),
            None,
            Some("NVIDIA A100-SXM4-80GB"),
            Some("NVIDIA A100-SXM4-80GB"),
            Some("Acme X9"),
            Some("NVIDIA H100 80GB HBM3;NVIDIA A100-SXM4-80GB"),
            Some("NVIDIA H100 80GB HBM3"),
            Some("NVIDIA H100 80GB HBM3"),
        ]
        .into_iter()
        .collect();
        let batch = RecordBatch::try_new(
            Arc::new(schema),
            vec![
                Arc::new(StringArray::from(vec![
                    "a", "a", "a", "b", "b", "b", "a", "c", "c",
                ])),
                Arc::new(Int64Array::from(vec![
                    Some(1),
                    Some(2),
                    Some(3),
                    Some(1),
                    Some(3),
                    None,
                    Some(4),
                    Some(1),
                    Some(2),
                ])),
                Arc::new(StringArray::from(vec![
                    Some("1.0"),
                    Some("2.5"),
                    Some("0:00:04"),
                    Some("10s"),
                    Some("12"),
                    Some("nope"),
                    Some("5e-324"),
                    None,
                    Some("1 day, 0:00:00"),
                ])),
                Arc::new(LargeStringArray::from(vec![
                    Some("800ms"),
                    Some("1,200"),
                    Some("nan"),
                    Some("-5"),
                    Some("1.5 s"),
                    Some("x"),
                    Some("0"),
                    Some("900"),
                    None,
                ])),
                Arc::new(UInt32Array::from(vec![
                    Some(4096),
                    Some(4096),
                    Some(8192),
                    None,
                    Some(1),
                    Some(0),
                    Some(u32::MAX),
                    Some(4096),
                    Some(4096),
                ])),
                Arc::new(Float32Array::from(vec![
                    Some(8.0),
                    Some(8.0),
                    Some(0.0),
                    Some(-1.0),
                    Some(f32::NAN),
                    Some(2.5),
                    Some(8.0),
                    None,
                    Some(16.0),
                ])),
                Arc::new(
                    Decimal128Array::from(vec![Some(42_000_000_000i128); n])
                        .with_precision_and_scale(20, 0)
                        .unwrap(),
                ),
                Arc::new(gpus),
                Arc::new(StringViewArray::from(vec![
                    Some("bf16"),
                    Some("torch.bfloat16"),
                    Some("fp8"),
                    None,
                    Some("16-mixed"),
                    Some("fp32"),
                    Some("bf16"),
                    Some("int4"),
                    Some("tf32"),
                ])),
                Arc::new(Float64Array::from(vec![Some(40.0); n])),
                Arc::new(Float64Array::from(vec![Some(1.0); n])),
            ],
        )
        .unwrap();
        let mut options = options();
        options.logged_peak_flops = Some(312e12);
        options.window = Some(2);
        options.recompute = crate::flops::Recompute::Full;
        options.columns.time_unit = None;
        let direct = enrich_record_batch(&batch, &options).unwrap();
        let want = through_polars(&batch, &options);
        let added = direct.num_columns() - batch.num_columns();
        assert_eq!(added, want.len());
        assert_eq!(
            direct.schema().field(batch.num_columns() - 1).name(),
            "tokens_per_second_input"
        );
        for (k, want) in want.iter().enumerate() {
            let got = direct.column(batch.num_columns() + k);
            assert_eq!(got.data_type(), want.data_type(), "column {k}");
            assert_eq!(
                got.to_data(),
                want.to_data(),
                "column {k}: {got:?} vs {want:?}"
            );
        }
        let reported = enrich_record_batch_reporting(&batch, &options, "t").unwrap();
        let frame = crate::arrow_bridge::record_batch_to_frame(&batch).unwrap();
        let enriched = crate::enrich::enrich_frame(frame, &options).unwrap();
        assert_eq!(reported.stats, enriched.stats);
    }

    #[test]
    fn a_stream_enriched_whole_equals_its_batches_concatenated() {
        // A running total (elapsed_time) and a rolling window across batch boundaries.
        let schema = Arc::new(Schema::new(vec![
            ArrowRsField::new("run_id", ArrowType::Utf8, true),
            ArrowRsField::new("step", ArrowType::Int64, true),
            ArrowRsField::new("elapsed_time", ArrowType::Float64, true),
            ArrowRsField::new("gpu", ArrowType::Utf8, true),
        ]));
        let part = |runs: Vec<&str>, steps: Vec<i64>, elapsed: Vec<f64>| {
            let n = runs.len();
            RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(StringArray::from(runs)),
                    Arc::new(Int64Array::from(steps)),
                    Arc::new(Float64Array::from(elapsed)),
                    Arc::new(StringArray::from(vec!["NVIDIA H100 80GB HBM3"; n])),
                ],
            )
            .unwrap()
        };
        let batches = vec![
            part(vec!["a", "a"], vec![1, 2], vec![1.0, 2.0]),
            part(vec!["a", "b", "b"], vec![4, 1, 2], vec![5.0, 1.0, 3.5]),
            part(vec![], vec![], vec![]),
            part(vec!["a"], vec![5], vec![6.5]),
        ];
        let mut options = options();
        options.columns.constants.tokens_per_step = Some(4096.0);
        options.columns.constants.num_devices = Some(8.0);
        options.columns.constants.flops_per_token = Some(1e10);
        options.columns.constants.dtype = Some("bf16".into());
        options.window = Some(2);
        let whole = enrich_record_batches_whole(schema.clone(), &batches, &options, "t").unwrap();
        assert_eq!(whole.batches.len(), 4);
        let rows: Vec<usize> = whole.batches.iter().map(|b| b.num_rows()).collect();
        assert_eq!(rows, [2, 3, 0, 1]);
        let joined = arrow::compute::concat_batches(&whole.schema, &whole.batches).unwrap();
        let one = arrow::compute::concat_batches(&schema, &batches).unwrap();
        let want = enrich_record_batch(&one, &options).unwrap();
        assert_eq!(joined, want);
        // Step 4 of run a is 3 s after step 2, over 2 steps: 1.5 s a step.
        let tps = joined
            .column_by_name("tokens_per_second")
            .unwrap()
            .as_any()
            .downcast_ref::<Float64Array>()
            .unwrap()
            .clone();
        assert_eq!(tps.value(2), 4096.0 / 1.5);
        assert!(tps.is_null(0) && tps.is_null(3));
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
