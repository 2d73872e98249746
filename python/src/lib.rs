//! `mfu._mfu`: the Python binding, a thin layer over the `mfu` library.
//!
//! Tables cross as Arrow C streams (the PyCapsule interface: `__arrow_c_stream__` in, a
//! `pyarrow.RecordBatchReader` out), so pyarrow, polars and DuckDB data arrive without a copy and the
//! enriched columns leave without one. Options arrive as a dict of the command line's option names and are
//! read into the library's own `Options`; every error becomes a Python exception with the library's
//! message. The work runs with the GIL released. The friendly signatures live in `mfu/__init__.py`.

use std::path::PathBuf;

use arrow::array::{RecordBatch, RecordBatchIterator, RecordBatchReader};
use arrow::datatypes::SchemaRef;
use arrow::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyList};

use mfu::arrow_bridge::frame_to_record_batch;
use mfu::enrich::{output_metadata, EnrichOptions};
use mfu::flops::{Attention, Recompute};
use mfu::peaks::{cited_in, Dtype, MatchOutcome, Resolver};
use mfu::pipeline::arrow::{
    enrich_record_batch_reporting, enrich_record_batches_whole, output_schema, BatchError,
};
use mfu::pipeline::summary::summarize_runs;
use mfu::pipeline::windowed::Part;
use mfu::pipeline::{Options, PipelineError, Plan, Silent};
use mfu::read::{InputError, ReadError};
use mfu::store::StoreError;

/// mimalloc for everything the module allocates. With the system allocator each call's column buffers
/// (8 MB per column per million rows) went back to the kernel when freed and were faulted in, zeroed, on
/// the next call: page faults were 45% of `mfu.enrich` on a 1M-row table (perf, release wheel), more
/// than the enrichment itself. See docs/python.md for the measurement.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The option names `enrich`, `read` and `summary` accept (the command line's, with `_` for `-`).
const OPTION_NAMES: &[&str] = &[
    "device",
    "dtype",
    "model_dtype",
    "num_devices",
    "flops_per_token",
    "tokens_per_step",
    "samples_per_step",
    "flops_per_sample",
    "seq_len",
    "time_unit",
    "map",
    "override",
    "peaks",
    "peak_flops",
    "model_config",
    "attention",
    "convention",
    "recompute",
    "cumulative",
    "logged_peak_flops",
    "logged_convention",
    "window",
    "metadata",
    "shape",
    "input_format",
    "rows",
    "skip_bad_rows",
    "max_memory",
    "jobs",
    "storage_options",
];

/// A Python exception for a library error: missing files are `FileNotFoundError`, other I/O `OSError`,
/// everything else (bad input, bad options) `ValueError`, each with the message the command line prints.
fn py_error(e: PipelineError) -> PyErr {
    let message = e.to_string();
    match &e {
        PipelineError::Inputs(InputError::Missing(_)) => PyFileNotFoundError::new_err(message),
        PipelineError::Read(ReadError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            PyFileNotFoundError::new_err(message)
        }
        PipelineError::Read(ReadError::Io { .. }) | PipelineError::Io { .. } => {
            PyOSError::new_err(message)
        }
        // Object storage: a missing object is a missing file; access, credentials and an unreachable
        // store are the OS-level errors they are for a file (PermissionError, OSError).
        PipelineError::Store(StoreError::NotFound { .. } | StoreError::NoSuchBucket { .. }) => {
            PyFileNotFoundError::new_err(message)
        }
        PipelineError::Store(
            StoreError::AccessDenied { .. } | StoreError::NoCredentials { .. },
        ) => pyo3::exceptions::PyPermissionError::new_err(message),
        PipelineError::Store(StoreError::Exists { .. }) => {
            pyo3::exceptions::PyFileExistsError::new_err(message)
        }
        PipelineError::Store(
            StoreError::Unreachable { .. }
            | StoreError::Local { .. }
            | StoreError::Interrupted { .. },
        ) => PyOSError::new_err(message),
        _ => PyValueError::new_err(message),
    }
}

fn batch_error(e: BatchError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// Reads one option value with `FromStr`, naming the option when it does not parse.
fn parsed<T: std::str::FromStr>(name: &str, value: &Bound<PyAny>) -> PyResult<T>
where
    T::Err: std::fmt::Display,
{
    let text: String = value.str()?.extract()?;
    text.parse::<T>()
        .map_err(|e| PyValueError::new_err(format!("{name}={text:?}: {e}")))
}

fn text(value: &Bound<PyAny>) -> PyResult<String> {
    value.str()?.extract()
}

/// One of a fixed set of spellings, naming the choices when the value is none of them.
fn choice<T: Copy>(name: &str, value: &Bound<PyAny>, choices: &[(&str, T)]) -> PyResult<T> {
    let given = text(value)?;
    match choices.iter().find(|(spelling, _)| *spelling == given) {
        Some((_, v)) => Ok(*v),
        None => {
            let names: Vec<&str> = choices.iter().map(|(s, _)| *s).collect();
            Err(PyValueError::new_err(format!(
                "{name}={given:?}: expected one of {}",
                names.join(", ")
            )))
        }
    }
}

fn positive(name: &str, value: &Bound<PyAny>) -> PyResult<f64> {
    let v: f64 = value
        .extract()
        .map_err(|_| PyTypeError::new_err(format!("{name} must be a number")))?;
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(PyValueError::new_err(format!(
            "{name}={v}: must be a positive number"
        )))
    }
}

/// The library's options from a dict of option names (unknown names are a `TypeError`).
fn options_from(dict: Option<&Bound<PyDict>>) -> PyResult<Options> {
    let mut o = Options::default();
    let Some(dict) = dict else { return Ok(o) };
    for (key, value) in dict.iter() {
        let key: String = key.extract()?;
        if value.is_none() {
            continue;
        }
        match key.as_str() {
            "device" => {
                o.device = Some(match value.extract::<Vec<String>>() {
                    // One name per rank: the list form the resolver averages over.
                    Ok(names) if !value.is_instance_of::<pyo3::types::PyString>() => {
                        names.join(";")
                    }
                    _ => value.extract::<String>()?,
                })
            }
            "dtype" => {
                let d: String = value.str()?.extract()?;
                if mfu::peaks::parse_precision(&d).is_none() {
                    return Err(PyValueError::new_err(format!(
                        "dtype={d:?}: unknown precision (fp64, fp32, tf32, bf16, fp16, fp8, int8, fp6, fp4, no, or a spelling such as torch.bfloat16)"
                    )));
                }
                o.dtype = Some(d);
            }
            "model_dtype" => o.model_dtype = Some(parsed::<Dtype>(&key, &value)?),
            "num_devices" => o.num_devices = Some(positive(&key, &value)?),
            "flops_per_token" => o.flops_per_token = Some(positive(&key, &value)?),
            "tokens_per_step" => o.tokens_per_step = Some(positive(&key, &value)?),
            "samples_per_step" => o.samples_per_step = Some(positive(&key, &value)?),
            "flops_per_sample" => o.flops_per_sample = Some(positive(&key, &value)?),
            "seq_len" => o.seq_len = Some(positive(&key, &value)?),
            "peak_flops" => o.peak_flops = Some(positive(&key, &value)?),
            "logged_peak_flops" => o.logged_peak_flops = Some(positive(&key, &value)?),
            "time_unit" => o.time_unit = Some(parsed(&key, &value)?),
            "map" => {
                let map = value
                    .cast::<PyDict>()
                    .map_err(|_| PyTypeError::new_err("map must be a dict {field: column}"))?;
                for (field, column) in map.iter() {
                    let column: String = column.extract()?;
                    o.map.push((parsed(&key, &field)?, column));
                }
            }
            "override" => o.override_columns = value.is_truthy()?,
            "skip_bad_rows" => o.skip_bad_rows = value.is_truthy()?,
            "peaks" => {
                o.peaks = if value.is_instance_of::<pyo3::types::PyString>() {
                    vec![value.extract::<PathBuf>()?]
                } else {
                    value.extract::<Vec<PathBuf>>()?
                }
            }
            "model_config" => o.model_config = Some(value.extract::<PathBuf>()?),
            "storage_options" => {
                let given: std::collections::BTreeMap<String, String> = value.extract()?;
                o.storage = mfu::store::StorageOptions(given.into_iter().collect());
            }
            "metadata" => o.metadata = Some(value.extract::<PathBuf>()?),
            "convention" => o.convention = parsed(&key, &value)?,
            "logged_convention" => o.logged_convention = Some(parsed(&key, &value)?),
            "attention" => {
                o.attention = choice(
                    &key,
                    &value,
                    &[("full", Attention::Full), ("causal", Attention::Causal)],
                )?
            }
            "recompute" => {
                o.recompute = choice(
                    &key,
                    &value,
                    &[("none", Recompute::None), ("full", Recompute::Full)],
                )?
            }
            "cumulative" => {
                let fields: Vec<String> = if value.is_instance_of::<pyo3::types::PyString>() {
                    vec![value.extract()?]
                } else {
                    value.extract()?
                };
                for f in fields {
                    o.cumulative
                        .push(f.parse().map_err(|e| {
                            PyValueError::new_err(format!("cumulative={f:?}: {e}"))
                        })?);
                }
            }
            "window" => {
                let n: usize = value.extract()?;
                if n == 0 {
                    return Err(PyValueError::new_err("window must be at least 1"));
                }
                o.window = Some(n);
            }
            "shape" => o.shape = Some(parsed(&key, &value)?),
            "rows" => o.rows = parsed(&key, &value)?,
            "input_format" => {
                use mfu::read::InputFormat;
                o.input_format = Some(choice(
                    &key,
                    &value,
                    &[
                        ("jsonl", InputFormat::Jsonl),
                        ("csv", InputFormat::Csv),
                        ("tsv", InputFormat::Tsv),
                        ("parquet", InputFormat::Parquet),
                    ],
                )?)
            }
            "max_memory" => {
                o.max_memory = Some(if let Ok(bytes) = value.extract::<u64>() {
                    bytes
                } else {
                    let text: String = value.extract()?;
                    mfu::read::memory::parse_size(&text)
                        .map_err(|e| PyValueError::new_err(format!("max_memory={text:?}: {e}")))?
                })
            }
            "jobs" => o.jobs = Some(value.extract()?),
            other => {
                return Err(PyTypeError::new_err(format!(
                    "unknown option '{other}'; options are: {}",
                    OPTION_NAMES.join(", ")
                )))
            }
        }
    }
    Ok(o)
}

/// Everything of a Python stream (`__arrow_c_stream__`), as batches and their schema.
fn import_stream(obj: &Bound<PyAny>) -> PyResult<(SchemaRef, Vec<RecordBatch>)> {
    let capsule = obj.call_method0("__arrow_c_stream__").map_err(|_| {
        PyTypeError::new_err(
            "expected Arrow data (an object with __arrow_c_stream__: a pyarrow Table or RecordBatchReader, a polars DataFrame, a DuckDB relation)",
        )
    })?;
    let capsule = capsule.cast::<PyCapsule>()?;
    let pointer = capsule.pointer_checked(Some(c"arrow_array_stream"))?;
    // SAFETY: the capsule holds an ArrowArrayStream (checked by its name); from_raw moves the stream out
    // and marks the capsule's copy released, so the capsule's destructor does not release it again.
    let stream =
        unsafe { FFI_ArrowArrayStream::from_raw(pointer.as_ptr() as *mut FFI_ArrowArrayStream) };
    let reader = RecordBatchStreamReader::try_new(stream)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let schema = reader.schema();
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((schema, batches))
}

/// A `pyarrow.RecordBatchReader` over `batches`, handed over without a copy.
fn export_batches<'py>(
    py: Python<'py>,
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
) -> PyResult<Bound<'py, PyAny>> {
    let reader: Box<dyn RecordBatchReader + Send> = Box::new(RecordBatchIterator::new(
        batches.into_iter().map(Ok),
        schema,
    ));
    let mut stream = FFI_ArrowArrayStream::new(reader);
    // pyarrow moves the stream out of `stream` (leaving it released), so dropping it afterwards is a no-op.
    py.import("pyarrow")?
        .getattr("RecordBatchReader")?
        .call_method1("_import_from_c", (&raw mut stream as usize,))
}

/// The dense peak FLOP/s of one device for a precision, or None when either is unknown.
#[pyfunction]
#[pyo3(signature = (name, dtype, peaks=None))]
fn peak_flops(name: &str, dtype: &str, peaks: Option<Vec<PathBuf>>) -> PyResult<Option<f64>> {
    let resolver = resolver(peaks)?;
    Ok(resolver.resolve(Some(name), Some(dtype)).peak)
}

fn resolver(peaks: Option<Vec<PathBuf>>) -> PyResult<Resolver> {
    let options = Options {
        peaks: peaks.unwrap_or_default(),
        ..Options::default()
    };
    options.resolver().map_err(py_error)
}

/// What `mfu lookup --json` says of one name: name, dtype, device, peak_flops_per_device, source and
/// documents; with no dtype, `peaks` maps every precision with a rate to its FLOP/s.
#[pyfunction]
#[pyo3(signature = (name, dtype=None, peaks=None))]
fn lookup<'py>(
    py: Python<'py>,
    name: &str,
    dtype: Option<&str>,
    peaks: Option<Vec<PathBuf>>,
) -> PyResult<Bound<'py, PyDict>> {
    let resolver = resolver(peaks)?;
    let dtype = dtype
        .map(|d| {
            d.parse::<Dtype>()
                .map_err(|e| PyValueError::new_err(format!("dtype={d:?}: {e}")))
        })
        .transpose()?;
    let entry = match resolver.matcher().find(name) {
        MatchOutcome::Found(f) => Some(&resolver.table().entries()[f.entry]),
        MatchOutcome::NotFound(_) => None,
    };
    let out = PyDict::new(py);
    out.set_item("name", name)?;
    out.set_item("dtype", dtype.map(|d| d.as_str()))?;
    out.set_item("device", entry.map(|e| e.name.as_str()))?;
    out.set_item(
        "peak_flops_per_device",
        dtype.and_then(|d| entry.and_then(|e| e.peak(d))),
    )?;
    out.set_item("source", entry.map(|e| e.source.as_str()))?;
    let documents = PyList::empty(py);
    for doc in entry.map(|e| cited_in(&e.source)).unwrap_or_default() {
        let d = PyDict::new(py);
        d.set_item("key", &doc.key)?;
        d.set_item("what", &doc.what)?;
        d.set_item("where", &doc.location)?;
        d.set_item("kind", doc.kind.as_str())?;
        documents.append(d)?;
    }
    out.set_item("documents", documents)?;
    if dtype.is_none() {
        let all = PyDict::new(py);
        if let Some(e) = entry {
            for d in Dtype::ALL {
                if let Some(p) = e.peak(d) {
                    all.set_item(d.as_str(), p)?;
                }
            }
        }
        out.set_item("peaks", all)?;
    }
    Ok(out)
}

/// Enrichment with one set of options, built once (the peak table parsed once) and used for many
/// batches: what `enrich`, `enrich_batches` and `output_schema` run on.
#[pyclass(frozen)]
struct Enricher {
    options: EnrichOptions,
    strict: bool,
}

#[pymethods]
impl Enricher {
    #[new]
    #[pyo3(signature = (options=None, strict=false))]
    fn new(options: Option<&Bound<PyDict>>, strict: bool) -> PyResult<Enricher> {
        let options = options_from(options)?.enrich_options().map_err(py_error)?;
        Ok(Enricher { options, strict })
    }

    /// Every batch of the stream enriched as one table; gives (a RecordBatchReader, warnings).
    fn enrich_stream<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        label: &str,
    ) -> PyResult<(Bound<'py, PyAny>, Vec<String>)> {
        let (schema, batches) = import_stream(data)?;
        let enriched = py
            .detach(|| enrich_record_batches_whole(schema, &batches, &self.options, label))
            .map_err(batch_error)?;
        self.check_strict(&enriched.stats, label)?;
        Ok((
            export_batches(py, enriched.schema, enriched.batches)?,
            enriched.warnings,
        ))
    }

    /// Each batch of the stream enriched on its own (Spark's mapInArrow); gives (a RecordBatchReader,
    /// warnings).
    fn enrich_each<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        label: &str,
    ) -> PyResult<(Bound<'py, PyAny>, Vec<String>)> {
        let (schema, batches) = import_stream(data)?;
        let (out_schema, out, warnings) = py.detach(|| -> Result<_, PyErr> {
            let mut out = Vec::with_capacity(batches.len());
            let mut warnings = Vec::new();
            for batch in &batches {
                let e = enrich_record_batch_reporting(batch, &self.options, label)
                    .map_err(batch_error)?;
                self.check_strict(&e.stats, label)?;
                warnings.extend(e.warnings);
                out.push(e.batch);
            }
            let out_schema = match out.first() {
                Some(b) => b.schema(),
                None => output_schema(schema, &self.options).map_err(batch_error)?,
            };
            Ok((out_schema, out, warnings))
        })?;
        Ok((export_batches(py, out_schema, out)?, warnings))
    }

    /// The schema enrichment gives a stream of this one (as an empty RecordBatchReader).
    fn output_schema<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (schema, _) = import_stream(data)?;
        let out = output_schema(schema, &self.options).map_err(batch_error)?;
        export_batches(py, out, Vec::new())
    }
}

impl Enricher {
    fn check_strict(&self, stats: &mfu::compute::ComputeStats, label: &str) -> PyResult<()> {
        match stats.unresolved.first() {
            Some((why, rows)) if self.strict => Err(PyValueError::new_err(format!(
                "{label}: strict: {why} for {rows} rows"
            ))),
            _ => Ok(()),
        }
    }
}

/// Files, folders and run folders read and enriched as one table, as `mfu enrich -o` writes it; gives (a
/// RecordBatchReader, warnings).
#[pyfunction]
#[pyo3(signature = (paths, options=None))]
fn read<'py>(
    py: Python<'py>,
    paths: Vec<String>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<(Bound<'py, PyAny>, Vec<String>)> {
    let mut options = options_from(options)?;
    options.inputs = paths;
    let (batch, warnings) = py
        .detach(|| -> Result<_, PipelineError> {
            let plan = Plan::new(&options)?;
            let (frame, warnings) = plan.read_all(&Silent)?;
            let metadata = output_metadata(&plan.options).into_iter().collect();
            Ok((frame_batch(&frame, metadata)?, warnings))
        })
        .map_err(py_error)?;
    table_out(py, batch, warnings)
}

/// A finished frame as one record batch, `metadata` on its schema.
fn frame_batch(
    frame: &polars::prelude::DataFrame,
    metadata: std::collections::HashMap<String, String>,
) -> Result<RecordBatch, PipelineError> {
    frame_to_record_batch(frame, metadata).map_err(|e| PipelineError::Output(e.to_string()))
}

/// What `enrich`, `read` and `summary` give Python: (a RecordBatchReader over `batch`, warnings).
fn table_out<'py>(
    py: Python<'py>,
    batch: RecordBatch,
    warnings: Vec<String>,
) -> PyResult<(Bound<'py, PyAny>, Vec<String>)> {
    let schema = batch.schema();
    Ok((export_batches(py, schema, vec![batch])?, warnings))
}

/// Inputs loaded for the per-run functions: each with its name, and the warnings.
type LoadedRuns = (Vec<(String, mfu::pipeline::Loaded)>, Vec<String>);

/// Every input of `plan` read whole, as `mfu summary` and `mfu goodput` read them, with their warnings.
fn load_plan(plan: &Plan) -> Result<LoadedRuns, PipelineError> {
    let mut loaded = Vec::new();
    let mut warnings = Vec::new();
    for (input, l) in plan.inputs.iter().zip(plan.load_all(true, &Silent)?) {
        let l = l?;
        warnings.extend(l.warnings.iter().cloned());
        loaded.push((input.display.clone(), l));
    }
    Ok((loaded, warnings))
}

/// Arrow data loaded as `mfu summary` and `mfu goodput` load a table: enriched first, or taken as
/// enriched.
fn load_data(
    (schema, batches): (arrow::datatypes::SchemaRef, Vec<RecordBatch>),
    options: Options,
) -> Result<LoadedRuns, PipelineError> {
    let enrich = options.enrich_options()?;
    let one = arrow::compute::concat_batches(&schema, &batches)
        .map_err(|e| PipelineError::Output(e.to_string()))?;
    let frame = mfu::arrow_bridge::record_batch_to_frame(&one)
        .map_err(|e| PipelineError::Output(e.to_string()))?;
    let enriched = if mfu::enrich::is_enriched(&frame) {
        let recorded = schema.metadata().get(mfu::enrich::OPTIONS_KEY);
        mfu::enrich::reuse_enriched(frame, &enrich, recorded.map(String::as_str))
    } else {
        mfu::enrich::enrich_frame(frame, &enrich)
    }
    .map_err(|error| PipelineError::Enrich {
        input: "data".into(),
        error,
    })?;
    let loaded = mfu::pipeline::Loaded {
        enriched,
        held: mfu::read::Held::none(),
        rejects: Vec::new(),
        warnings: Vec::new(),
        marks: None,
        argument: "data".into(),
        shape: mfu::read::Shape::Table,
    };
    Ok((vec![("data".to_string(), loaded)], Vec::new()))
}

/// A per-run function's fold of its inputs, the large console logs among them window by window (as
/// `mfu summary`, `goodput` and `audit` fold them): its frame and each log's warnings, or `None` where
/// every input is read whole.
type Folded = Option<(mfu::write::Frame, Vec<Vec<String>>)>;

/// `plan`'s inputs folded by `fold` where any is a console log over 64 MiB: the frame as a batch and
/// each input's warnings in input order; `None` where they are to be read whole.
fn fold_parts(
    plan: &Plan,
    fold: impl FnOnce(&Plan, Vec<Part>) -> Result<Folded, PipelineError>,
) -> Result<Option<(RecordBatch, Vec<String>)>, PipelineError> {
    let Some(windowed) = plan.windowed_inputs() else {
        return Ok(None);
    };
    let mut parts = Vec::new();
    // Each input's warnings in input order: a loaded one's, or its fold's (`None`).
    let mut said: Vec<Option<Vec<String>>> = Vec::new();
    for (_, part) in plan.parts(&windowed, true, &Silent)? {
        let part = part?;
        said.push(match &part {
            Part::Loaded(_, l) => Some(l.warnings.clone()),
            Part::Windows(_) => None,
        });
        parts.push(part);
    }
    let Some((frame, reads)) = fold(plan, parts)? else {
        return Ok(None);
    };
    let mut reads = reads.into_iter();
    let warnings = said
        .into_iter()
        .flat_map(|w| w.or_else(|| reads.next()).unwrap_or_default())
        .collect();
    Ok(Some((frame_batch(&frame, Default::default())?, warnings)))
}

/// What the per-run functions share: the inputs (files or Arrow data) loaded without the GIL, `runs`
/// made of them into a frame, and the frame handed to Python with the loading's warnings. Files of
/// which any is a console log over 64 MiB are first offered to `fold`: such a log is folded window by
/// window, its rows never held at once. The plan of the files is made once (a URL's object is fetched
/// once), whether they are folded or read whole.
fn per_run_table<'py>(
    py: Python<'py>,
    paths: Option<Vec<String>>,
    data: Option<&Bound<'py, PyAny>>,
    mut options: Options,
    what: &str,
    fold: impl FnOnce(&Plan, Vec<Part>) -> Result<Folded, PipelineError> + Send,
    runs: impl FnOnce(&[(String, mfu::pipeline::Loaded)]) -> Result<mfu::write::Frame, PipelineError>
        + Send,
) -> PyResult<(Bound<'py, PyAny>, Vec<String>)> {
    let imported = data.map(import_stream).transpose()?;
    let (batch, warnings) = py
        .detach(|| -> Result<_, PipelineError> {
            let (loaded, warnings) = match (paths, imported) {
                (Some(paths), None) => {
                    options.inputs = paths;
                    let plan = Plan::new(&options)?;
                    if let Some(folded) = fold_parts(&plan, fold)? {
                        return Ok(folded);
                    }
                    load_plan(&plan)?
                }
                (None, Some(data)) => load_data(data, options)?,
                _ => {
                    return Err(PipelineError::Output(format!(
                        "{what} takes either paths or data"
                    )))
                }
            };
            let frame = runs(&loaded)?;
            Ok((frame_batch(&frame, Default::default())?, warnings))
        })
        .map_err(py_error)?;
    table_out(py, batch, warnings)
}

/// One row per run over files (`paths`) or Arrow data (`data`, enriched first or taken as enriched);
/// gives (a RecordBatchReader, warnings).
#[pyfunction]
#[pyo3(signature = (paths=None, data=None, by=Vec::new(), skip_steps=0, options=None))]
fn summary<'py>(
    py: Python<'py>,
    paths: Option<Vec<String>>,
    data: Option<&Bound<'py, PyAny>>,
    by: Vec<String>,
    skip_steps: u64,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<(Bound<'py, PyAny>, Vec<String>)> {
    let options = options_from(options)?;
    let logged_peak_flops = options.logged_peak_flops;
    let skip_steps = skip_steps as f64;
    let fold = |plan: &Plan, parts: Vec<Part>| -> Result<Folded, PipelineError> {
        let folded = mfu::pipeline::summary::summary_parts(
            plan,
            parts,
            &Silent,
            &by,
            skip_steps,
            logged_peak_flops,
        )?;
        folded
            .ok()
            .map(|((keys, runs), reads)| {
                let frame = mfu::summary::to_frame(&keys, &runs).map_err(PipelineError::Combine)?;
                Ok((frame, reads.into_iter().map(|r| r.warnings).collect()))
            })
            .transpose()
    };
    per_run_table(py, paths, data, options, "summary", fold, |loaded| {
        let (keys, runs) = summarize_runs(loaded, &by, skip_steps, logged_peak_flops)?;
        mfu::summary::to_frame(&keys, &runs).map_err(PipelineError::Combine)
    })
}

/// Where each run's time went, over files (`paths`) or Arrow data (`data`): the columns of `mfu
/// goodput`; gives (a RecordBatchReader, warnings).
#[pyfunction]
#[pyo3(signature = (paths=None, data=None, by=Vec::new(), options=None))]
fn goodput<'py>(
    py: Python<'py>,
    paths: Option<Vec<String>>,
    data: Option<&Bound<'py, PyAny>>,
    by: Vec<String>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<(Bound<'py, PyAny>, Vec<String>)> {
    let mut options = options_from(options)?;
    // A run's time needs only its steps and times, as on the command line.
    options.optional_fields = true;
    options.every_attempt = true;
    let fold = |plan: &Plan, parts: Vec<Part>| -> Result<Folded, PipelineError> {
        let folded = mfu::pipeline::goodput::goodput_parts(plan, parts, &Silent, &by)?;
        folded
            .ok()
            .map(|((keys, runs), reads)| {
                let frame = mfu::pipeline::goodput::to_frame(&keys, &runs)
                    .map_err(PipelineError::Combine)?;
                Ok((frame, reads.into_iter().map(|r| r.warnings).collect()))
            })
            .transpose()
    };
    per_run_table(py, paths, data, options, "goodput", fold, |loaded| {
        let (keys, runs) = mfu::pipeline::goodput::goodput_runs(loaded, &by)?;
        mfu::pipeline::goodput::to_frame(&keys, &runs).map_err(PipelineError::Combine)
    })
}

/// The MFU or TFLOP/s each run's framework logged beside mfu's, over files (`paths`) or Arrow data
/// (`data`): the columns of `mfu audit`; gives (a RecordBatchReader, warnings).
#[pyfunction]
#[pyo3(signature = (paths=None, data=None, by=Vec::new(), options=None))]
fn audit<'py>(
    py: Python<'py>,
    paths: Option<Vec<String>>,
    data: Option<&Bound<'py, PyAny>>,
    by: Vec<String>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<(Bound<'py, PyAny>, Vec<String>)> {
    let mut options = options_from(options)?;
    // A figure is audited without a FLOPs count (the peak half), as on the command line.
    options.optional_fields = true;
    let logged_peak_flops = options.logged_peak_flops;
    let fold = |plan: &Plan, parts: Vec<Part>| -> Result<Folded, PipelineError> {
        let folded =
            mfu::pipeline::audit::audit_parts(plan, parts, &Silent, &by, logged_peak_flops, false)?;
        folded
            .ok()
            .map(|((keys, runs), reads)| {
                let frame =
                    mfu::pipeline::audit::to_frame(&keys, &runs).map_err(PipelineError::Combine)?;
                Ok((frame, reads.into_iter().map(|r| r.warnings).collect()))
            })
            .transpose()
    };
    per_run_table(py, paths, data, options, "audit", fold, |loaded| {
        let (keys, runs) = mfu::pipeline::audit::audit_runs(loaded, &by, logged_peak_flops, false)?;
        mfu::pipeline::audit::to_frame(&keys, &runs).map_err(PipelineError::Combine)
    })
}

/// (canonical device, peak FLOP/s, why it is null, what to do about it), as `resolve` gives them.
type Resolution = (Option<String>, Option<f64>, Option<String>, Option<String>);

/// How a device (or a list of ranks' devices) and a precision resolve, for a meter: (canonical device or
/// None, dense peak FLOP/s or None, why the peak is null or None, what to do about it or None). `peaks`,
/// `peak_flops` and `model_dtype` are `mfu enrich`'s options.
#[pyfunction]
#[pyo3(signature = (device, dtype, peaks=None, peak_flops=None, model_dtype=None))]
fn resolve(
    device: Option<&Bound<PyAny>>,
    dtype: Option<&str>,
    peaks: Option<Vec<PathBuf>>,
    peak_flops: Option<f64>,
    model_dtype: Option<&str>,
) -> PyResult<Resolution> {
    let device = match device {
        None => None,
        Some(d) if d.is_none() => None,
        Some(d) if d.is_instance_of::<pyo3::types::PyString>() => Some(d.extract::<String>()?),
        // One name per rank: the list form the resolver averages over.
        Some(d) => Some(d.extract::<Vec<String>>()?.join(";")),
    };
    let model_dtype = model_dtype
        .map(|d| {
            d.parse::<Dtype>()
                .map_err(|e| PyValueError::new_err(format!("model_dtype={d:?}: {e}")))
        })
        .transpose()?;
    if let Some(p) = peak_flops {
        if !(p.is_finite() && p > 0.0) {
            return Err(PyValueError::new_err(format!(
                "peak_flops={p}: must be a positive number"
            )));
        }
    }
    let options = Options {
        peaks: peaks.unwrap_or_default(),
        peak_flops,
        model_dtype,
        ..Options::default()
    };
    let resolved = options
        .resolver()
        .map_err(py_error)?
        .resolve(device.as_deref(), dtype);
    let why = resolved.unresolved.as_ref();
    Ok((
        resolved.device,
        resolved.peak,
        why.map(|w| w.to_string()),
        why.map(|w| w.hint().to_string()),
    ))
}

/// One step's metrics by the library's per-step arithmetic (`mfu::compute::step_metrics`, the row loop of
/// `mfu enrich`): (tokens/s, achieved FLOP/s per device, MFU wall-clock, MFU fwd+bwd), each None where
/// `mfu enrich` would give null.
#[pyfunction]
#[pyo3(signature = (step_time, tokens, num_devices, flops_per_token, peak=None, fwd_bwd_time=None))]
fn step_metrics(
    step_time: Option<f64>,
    tokens: Option<f64>,
    num_devices: Option<f64>,
    flops_per_token: Option<f64>,
    peak: Option<f64>,
    fwd_bwd_time: Option<f64>,
) -> (Option<f64>, Option<f64>, Option<f64>, Option<f64>) {
    let m = mfu::compute::step_metrics(&mfu::compute::StepInputs {
        step_time,
        fwd_bwd_time,
        tokens,
        num_devices,
        flops_per_token,
        peak,
    });
    (
        m.tokens_per_second,
        m.achieved_flops_per_device,
        m.mfu_wall_clock,
        m.mfu_fwd_bwd,
    )
}

/// FLOPs per token (forward and backward) of a model from its config (JSON text: a Transformers
/// `config.json` or `model.config.to_json_string()`) at sequence length `seq_len`, by `mfu flops`'
/// convention or, with `convention`, another framework's (`mfu flops --compare`): (FLOPs per token,
/// hardware FLOPs per token, model type).
#[pyfunction]
#[pyo3(signature = (config_json, seq_len, attention="full", recompute="none", origin="model_config", convention="mfu"))]
fn flops_per_token(
    config_json: &str,
    seq_len: u64,
    attention: &str,
    recompute: &str,
    origin: &str,
    convention: &str,
) -> PyResult<(f64, f64, String)> {
    let (attention, recompute, convention) = counting(attention, recompute, convention)?;
    let config = mfu::flops::ModelConfig::from_json(config_json, origin)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let b = mfu::flops::flops_per_token(&config, seq_len, attention, recompute)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    if convention != mfu::conventions::Convention::Mfu {
        let terms = mfu::conventions::count(
            convention,
            &config,
            seq_len,
            &mfu::conventions::ConventionOptions::default(),
        )
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let hardware = terms.total() * b.hardware_flops_per_token / b.flops_per_token;
        return Ok((terms.total(), hardware, b.model_type));
    }
    Ok((b.flops_per_token, b.hardware_flops_per_token, b.model_type))
}

/// How FLOPs are counted, read from their names: a `ValueError` naming the argument and the accepted
/// values for a name mfu does not know.
fn counting(
    attention: &str,
    recompute: &str,
    convention: &str,
) -> PyResult<(Attention, Recompute, mfu::conventions::Convention)> {
    let convention: mfu::conventions::Convention = convention
        .parse()
        .map_err(|e: String| PyValueError::new_err(format!("convention: {e}")))?;
    let attention = match attention {
        "full" => Attention::Full,
        "causal" => Attention::Causal,
        other => {
            return Err(PyValueError::new_err(format!(
                "attention={other:?}: expected one of full, causal"
            )))
        }
    };
    let recompute = match recompute {
        "none" => Recompute::None,
        "full" => Recompute::Full,
        other => {
            return Err(PyValueError::new_err(format!(
                "recompute={other:?}: expected one of none, full"
            )))
        }
    };
    Ok((attention, recompute, convention))
}

/// Checks the names of how FLOPs are counted (`attention`, `recompute`, `convention`) before anything
/// is counted: a `ValueError` naming the argument and the accepted values.
#[pyfunction]
#[pyo3(signature = (attention="full", recompute="none", convention="mfu"))]
fn check_counting(attention: &str, recompute: &str, convention: &str) -> PyResult<()> {
    counting(attention, recompute, convention).map(|_| ())
}

/// The dtype a precision spelling means (`bf16` for `torch.bfloat16` or `bf16-mixed`), `no` for
/// Accelerate's "no" (the model's own dtype), or None when mfu does not know the spelling.
#[pyfunction]
fn precision(spelling: &str) -> Option<&'static str> {
    match mfu::peaks::parse_precision(spelling)? {
        mfu::peaks::Precision::Known(d) => Some(d.as_str()),
        mfu::peaks::Precision::ModelDtype => Some("no"),
    }
}

#[pymodule]
fn _mfu(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(peak_flops, m)?)?;
    m.add_function(wrap_pyfunction!(lookup, m)?)?;
    m.add_function(wrap_pyfunction!(read, m)?)?;
    m.add_function(wrap_pyfunction!(summary, m)?)?;
    m.add_function(wrap_pyfunction!(goodput, m)?)?;
    m.add_function(wrap_pyfunction!(audit, m)?)?;
    m.add_function(wrap_pyfunction!(resolve, m)?)?;
    m.add_function(wrap_pyfunction!(step_metrics, m)?)?;
    m.add_function(wrap_pyfunction!(flops_per_token, m)?)?;
    m.add_function(wrap_pyfunction!(check_counting, m)?)?;
    m.add_function(wrap_pyfunction!(precision, m)?)?;
    m.add_class::<Enricher>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("OPTION_NAMES", OPTION_NAMES.to_vec())?;
    Ok(())
}
