//! The streaming way of `mfu enrich` into one output file: inputs are enriched in input order and their
//! rows written as they come, so memory holds a block of a large input, or a window of small ones, never
//! the whole.
//!
//! Small inputs are read whole, several at a time in parallel, as the whole-input way reads them. A large
//! JSON Lines or CSV file is cut into blocks of lines ([`crate::read::stream`]), each parsed and enriched on
//! its own: that gives the same rows only when every field is computed from its own row, and when later
//! blocks have the columns and types of the first. So streaming stops, and the run starts again the
//! whole-input way, at the first sign that it would not: a large input with cumulative counters or
//! `--window` (both need the rows before), a block whose columns or types differ from the rows written
//! (see [`Sink`]), a trainer shape that is not a plain table, or any input that fails (its error is then
//! reported by the whole-input way, exactly as without streaming). Nothing is written under the output's
//! name until the end, so starting again leaves no trace.

use std::collections::HashSet;
use std::sync::OnceLock;
use std::time::Instant;

use polars::prelude::DataFrame;
use rayon::prelude::*;

use crate::columns::{ColumnMapping, Field, FieldSource};
use crate::compute::ComputeStats;
use crate::enrich::{enrich_frame, tag_source};
use crate::read::compression::{size_up_to, Size};
use crate::read::console::windows::window_sizes;
use crate::read::memory::{format_size, TABLE_FACTOR};
use crate::read::stream::{block_bytes, parse_block, BlockReader};
use crate::read::{shapes, Input, InputFormat, Shape};
use crate::write::parquet::ROW_GROUP_ROWS;
use crate::write::sink::{Sink, SinkError};
use crate::write::Metadata;

use super::destination::Destination;
use super::job::{InputReport, Outcome, RunOptions};
use super::{timings_wanted, Event, Loaded, Observer, PipelineError, Plan, Seen};

/// One small input, read and enriched whole, with its verbose lines.
type LoadResult = Result<(Loaded, Vec<String>), PipelineError>;

/// Small inputs read in parallel before their rows are written: enough to keep every thread busy.
const WINDOW_INPUTS: usize = 64;

/// Why streaming stopped (the first reason given), for verbose.
pub(super) type StopReason = OnceLock<String>;

/// Enriches every input into the one output, or says (`None`, with the reason in `why`) that the
/// whole-input way must do it.
pub(super) fn enrich_streaming(
    pipeline: &Plan,
    args: &RunOptions,
    destination: &Destination,
    metadata: &Metadata,
    observer: &dyn Observer,
    why: &StopReason,
) -> Result<Option<Outcome>, PipelineError> {
    let Some((path, format)) = streamable(pipeline, destination, why) else {
        return Ok(None);
    };
    let inputs = &pipeline.inputs;
    let started = Instant::now();
    let stacked = inputs.len() > 1;
    let mut sink = Sink::create(path, *format, metadata, args.output.force)?;
    let pool = pipeline.pool()?;
    let mut reports: Vec<Result<InputReport, PipelineError>> = Vec::with_capacity(inputs.len());
    let mut verbose: Vec<String> = Vec::new();
    // Each input's decompressed size, up to a block: a larger one streams in blocks.
    let block = block_bytes() as u64;
    let sizes: Vec<Option<u64>> =
        pool.install(|| inputs.par_iter().map(|i| small_size(i, block)).collect());
    let large: Vec<bool> = sizes.iter().map(Option::is_none).collect();
    // A window of small inputs holds at most this many bytes of them (plus one input), so memory stays
    // bounded by blocks, not by how many small files there are.
    let window_bytes = block * pool.current_num_threads().max(2) as u64;
    let done = pool.install(|| -> Result<bool, PipelineError> {
        // Small inputs loaded (read and enriched, in parallel) but not yet written.
        let mut loaded: Vec<(&Input, LoadResult)> = Vec::new();
        let mut next = 0;
        loop {
            // A large input streams on its own once the small ones before it are written.
            if loaded.is_empty() && next < inputs.len() && large[next] {
                let Some((report, lines)) = stream_input(
                    pipeline,
                    args,
                    &inputs[next],
                    &mut sink,
                    stacked,
                    why,
                    observer,
                )?
                else {
                    return Ok(false);
                };
                observer.on(Event::InputDone {
                    rows: report.stats.rows,
                });
                reports.push(Ok(report));
                verbose.extend(lines);
                next += 1;
                continue;
            }
            if loaded.is_empty() && next == inputs.len() {
                return Ok(true);
            }
            // The next window of small inputs loads while the one before is written.
            let mut end = next;
            let mut bytes = 0;
            while end < inputs.len()
                && end - next < WINDOW_INPUTS
                && !large[end]
                && (end == next || bytes < window_bytes)
            {
                bytes += sizes[end].unwrap_or(0);
                end += 1;
            }
            let window = &inputs[next..end];
            let writing = std::mem::take(&mut loaded);
            let (ready, written) = rayon::join(
                || -> Vec<(&Input, LoadResult)> {
                    window
                        .par_iter()
                        .map(|input| (input, pipeline.load_quietly(input, false, observer)))
                        .collect()
                },
                || -> Result<bool, PipelineError> {
                    for (input, result) in writing {
                        let written = write_loaded(
                            input,
                            result,
                            &mut sink,
                            Written {
                                reports: &mut reports,
                                verbose: &mut verbose,
                            },
                            args.strict,
                            stacked,
                            why,
                            observer,
                        )?;
                        if !written {
                            return Ok(false);
                        }
                    }
                    Ok(true)
                },
            );
            if !written? {
                return Ok(false);
            }
            loaded = ready;
            next = end;
        }
    })?;
    if !done {
        return Ok(None);
    }
    if !pushed(sink.finish())? {
        let _ = why.set("the inputs' columns do not fit one table".into());
        return Ok(None);
    }
    if timings_wanted() {
        observer.on(Event::Timing(&format!(
            "streamed {} input(s) {:.3}s",
            inputs.len(),
            started.elapsed().as_secs_f64()
        )));
    }
    for line in verbose {
        observer.on(Event::Verbose(&line));
    }
    Ok(Some(Outcome {
        results: reports,
        wrote: Some(path.display().to_string()),
    }))
}

/// The one output file the inputs stream into, or `None` with the reason in `why` when they must be
/// read whole (standard output, `--out-dir`, a shape, `--line-regex`, stdin, TensorBoard inputs).
fn streamable<'a>(
    pipeline: &Plan,
    destination: &'a Destination,
    why: &StopReason,
) -> Option<(&'a std::path::Path, &'a crate::write::OutputFormat)> {
    let Destination::One {
        path: Some(path),
        format,
    } = destination
    else {
        // Standard output cannot be taken back, --out-dir writes one file per input.
        let _ = why.set(if matches!(destination, Destination::One { .. }) {
            "-o - reads every input whole".into()
        } else {
            "--out-dir reads each input whole".into()
        });
        return None;
    };
    let plain = matches!(
        pipeline.read.shape,
        None | Some(Shape::Table | Shape::Console | Shape::Torchtitan)
    ) && pipeline.read.line_regex.is_none();
    if !plain
        || pipeline
            .inputs
            .iter()
            .any(|i| i.path.is_none() || !i.companions.is_empty() || crate::read::is_event_input(i))
    {
        let _ = why.set(
            "--shape (but console and torchtitan), --line-regex, standard input, TensorBoard event files and tag exports are read whole"
                .into(),
        );
        return None;
    }
    Some((path, format))
}

/// Where the inputs written so far are reported.
struct Written<'a> {
    reports: &'a mut Vec<Result<InputReport, PipelineError>>,
    verbose: &'a mut Vec<String>,
}

/// Writes one small input that was read whole into the sink and reports it; `false` (the reason in
/// `why`) when the run must start again the whole-input way: it failed, `--strict` met an unresolved
/// peak, or its columns do not fit the rows written before.
#[allow(clippy::too_many_arguments)]
fn write_loaded(
    input: &Input,
    result: LoadResult,
    sink: &mut Sink,
    written: Written,
    strict: bool,
    stacked: bool,
    why: &StopReason,
    observer: &dyn Observer,
) -> Result<bool, PipelineError> {
    let result = match result {
        // Not a log: counted in the report, nothing written.
        Err(e) if e.is_skip(input) => {
            written.reports.push(Err(e));
            observer.on(Event::InputDone { rows: 0 });
            return Ok(true);
        }
        other => other,
    };
    let Ok((loaded, lines)) = result else {
        let _ = why.set(format!(
            "{} failed; the whole-input way reports it",
            input.display
        ));
        return Ok(false);
    };
    if strict && !loaded.enriched.stats.unresolved.is_empty() {
        let _ = why.set(format!(
            "{}: --strict and an unresolved peak",
            input.display
        ));
        return Ok(false);
    }
    let frame = if stacked {
        tag_source(loaded.enriched.frame, &input.display).map_err(PipelineError::Combine)?
    } else {
        loaded.enriched.frame
    };
    if !pushed(sink.push(frame, stacked))? {
        let _ = why.set(format!(
            "{}: its columns or types differ from the rows written before",
            input.display
        ));
        return Ok(false);
    }
    // Its rows are written: the memory they held is free again.
    drop(loaded.held);
    observer.on(Event::InputDone {
        rows: loaded.enriched.stats.rows,
    });
    written.reports.push(Ok(InputReport {
        stats: loaded.enriched.stats,
        warnings: loaded.warnings,
        rejects: loaded.rejects,
    }));
    written.verbose.extend(lines);
    Ok(true)
}

/// Whether a push or finish went through (`false`: the rows do not fit, stream no further); a failure to
/// write is an error.
fn pushed(result: Result<(), SinkError>) -> Result<bool, PipelineError> {
    match result {
        Ok(()) => Ok(true),
        Err(SinkError::Mismatch(_)) => Ok(false),
        Err(SinkError::Write(e)) => Err(e.into()),
    }
}

/// An input's decompressed size when it is at most a block (read whole), `None` when larger (read in
/// blocks). A compressed input is judged by what it becomes, counted as it is decompressed (up to a
/// block), never by its size on disk. One that cannot be read counts as small: reading it whole reports
/// why.
fn small_size(input: &Input, block: u64) -> Option<u64> {
    let Some(path) = input.path.as_deref() else {
        return Some(0);
    };
    match size_up_to(path, block) {
        Ok(Size::Exactly(n)) => Some(n),
        Ok(Size::Over(_)) => None,
        Err(_) => Some(0),
    }
}

/// Whether rows of a log mapped this way can be computed block by block.
pub(super) fn row_local(mapping: &ColumnMapping, pipeline: &Plan) -> bool {
    pipeline.options.window.is_none()
        && Field::ALL.iter().all(|f| {
            !matches!(
                mapping.source(*f),
                FieldSource::Column {
                    cumulative: true,
                    ..
                }
            )
        })
}

/// Gives the next frame of an input (`Ok(None)` at the end, `Err(())` when streaming must stop), adding
/// the seconds spent reading and parsing to the two counters.
type NextFrame<'a> = dyn FnMut(&mut [f64; 2]) -> Result<Option<DataFrame>, ()> + Send + 'a;

/// Where one input's enriched rows go, and how they are made.
struct Target<'a> {
    pipeline: &'a Plan,
    args: &'a RunOptions,
    input: &'a Input,
    sink: &'a mut Sink,
    stacked: bool,
}

/// What streaming one input gathered, added up over its blocks.
struct Gathered {
    seen: Option<Seen>,
    stats: ComputeStats,
    columns: Option<HashSet<String>>,
    /// Seconds spent enriching (MFU_TIMINGS).
    enrich_s: f64,
    /// Blocks (or slices) read.
    blocks: usize,
    /// The options an input's own facts and hints make (a console log's), else the run's.
    options: Option<crate::enrich::EnrichOptions>,
}

/// One block or slice, enriched.
enum Enriched {
    /// Rows to write.
    Rows(DataFrame),
    /// Nothing to write (a block of blank lines).
    Empty,
    /// Streaming must stop, for this reason.
    Stop(String),
}

impl Gathered {
    /// Enriches one block's (or slice's) rows, ready to write.
    fn enrich(
        &mut self,
        pipeline: &Plan,
        args: &RunOptions,
        input: &Input,
        frame: DataFrame,
        stacked: bool,
    ) -> Result<Enriched, PipelineError> {
        if frame.height() == 0 {
            return Ok(Enriched::Empty);
        }
        let names: HashSet<String> = frame
            .get_column_names()
            .iter()
            .map(|n| n.to_string())
            .collect();
        match &self.columns {
            // Another set of columns could map to other fields: not the rows the whole file gives.
            Some(first) if *first != names => {
                return Ok(Enriched::Stop(format!(
                    "{}: a later block has other columns than the first",
                    input.display
                )))
            }
            Some(_) => {}
            None => self.columns = Some(names),
        }
        let clock = Instant::now();
        let options = self.options.as_ref().unwrap_or(&pipeline.options);
        let Ok(enriched) = enrich_frame(frame, options) else {
            return Ok(Enriched::Stop(format!(
                "{}: a block could not be enriched; the whole-input way reports why",
                input.display
            )));
        };
        self.enrich_s += clock.elapsed().as_secs_f64();
        if !row_local(&enriched.mapping, pipeline) {
            return Ok(Enriched::Stop(format!(
                "{}: cumulative counters or --window need the rows before each block",
                input.display
            )));
        }
        if args.strict && !enriched.stats.unresolved.is_empty() {
            return Ok(Enriched::Stop(format!(
                "{}: --strict and an unresolved peak",
                input.display
            )));
        }
        self.blocks += 1;
        let seen = self.seen.get_or_insert_with(|| Seen {
            how: String::new(),
            shape: Shape::Table,
            rows: 0,
            notes: Vec::new(),
            read_warnings: Vec::new(),
            mapping: enriched.mapping.clone(),
            non_numeric: Vec::new(),
            column_warnings: Vec::new(),
            renamed: enriched.renamed.clone(),
            torn: None,
            rejects: Vec::new(),
        });
        seen.rows += enriched.frame.height();
        for warning in &enriched.column_warnings {
            if !seen.column_warnings.contains(warning) {
                seen.column_warnings.push(warning.clone());
            }
        }
        for (column, cells) in &enriched.non_numeric {
            match seen.non_numeric.iter_mut().find(|(c, _)| c == column) {
                Some(slot) => slot.1 += cells,
                None => seen.non_numeric.push((column.clone(), *cells)),
            }
        }
        self.stats.add(&enriched.stats);
        Ok(Enriched::Rows(if stacked {
            tag_source(enriched.frame, &input.display).map_err(PipelineError::Combine)?
        } else {
            enriched.frame
        }))
    }

    /// Enriches the frames `next` gives (`Ok(None)` at the end, `Err(())` to stop) and writes them into
    /// `sink`, the next frame read while the one before is written. With `enrich_early` a frame is
    /// enriched on the reading side (when reading is cheap, as slicing a Parquet file read whole), else on
    /// the writing side (when parsing is the heavier half). `Ok(false)`: streaming must stop.
    fn run(
        &mut self,
        target: Target<'_>,
        enrich_early: bool,
        write_s: &mut f64,
        read_times: &mut [f64; 2],
        mut next: Box<NextFrame<'_>>,
        why: &StopReason,
    ) -> Result<bool, PipelineError> {
        let Target {
            pipeline,
            args,
            input,
            sink,
            stacked,
        } = target;
        // A frame waiting to be written, enriched or not.
        let mut pending: Option<Enriched> = None;
        loop {
            let (early, late) = if enrich_early {
                (Some(&mut *self), None)
            } else {
                (None, Some(&mut *self))
            };
            let (produced, written) = rayon::join(
                || -> Result<Option<Enriched>, PipelineError> {
                    let Ok(frame) = next(read_times) else {
                        return Ok(Some(Enriched::Stop(format!(
                            "{}: a block could not be read; the whole-input way reports why",
                            input.display
                        ))));
                    };
                    match (frame, early) {
                        (None, _) => Ok(None),
                        (Some(f), Some(state)) => {
                            state.enrich(pipeline, args, input, f, stacked).map(Some)
                        }
                        (Some(f), None) => Ok(Some(Enriched::Rows(f))),
                    }
                },
                || -> Result<bool, PipelineError> {
                    let frame = match (pending.take(), late) {
                        (Some(Enriched::Rows(f)), Some(state)) => {
                            match state.enrich(pipeline, args, input, f, stacked)? {
                                Enriched::Rows(f) => f,
                                Enriched::Empty => return Ok(true),
                                Enriched::Stop(reason) => {
                                    let _ = why.set(reason);
                                    return Ok(false);
                                }
                            }
                        }
                        (Some(Enriched::Rows(f)), None) => f,
                        (Some(Enriched::Stop(reason)), _) => {
                            let _ = why.set(reason);
                            return Ok(false);
                        }
                        (Some(Enriched::Empty), _) | (None, _) => return Ok(true),
                    };
                    let clock = Instant::now();
                    let ok = pushed(sink.push(frame, stacked))?;
                    *write_s += clock.elapsed().as_secs_f64();
                    if !ok {
                        let _ = why.set(format!(
                            "{}: a block's column types differ from the rows written before",
                            input.display
                        ));
                    }
                    Ok(ok)
                },
            );
            if !written? {
                return Ok(false);
            }
            match produced? {
                // The writing side took and wrote the last pending frame in this round.
                None => return Ok(true),
                Some(Enriched::Stop(reason)) => {
                    let _ = why.set(reason);
                    return Ok(false);
                }
                Some(e) => pending = Some(e),
            }
        }
    }
}

/// How a large input was read, for verbose.
enum How {
    /// Parquet decoded batch by batch.
    Batches,
    /// Parquet read whole (this many bytes), then written a row group at a time.
    Slices(u64),
    /// JSON Lines or CSV in blocks of lines.
    Blocks,
    /// A console log of this shape in windows of rows.
    Windows(Shape),
}

/// Whether the input starts like a plain table (not a Git LFS pointer, not a trainer's own layout).
fn plain_table(pipeline: &Plan, path: &std::path::Path, head: &[u8]) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let lfs = head.starts_with(b"version https://git-lfs.github.com/spec/");
    !lfs && (pipeline.read.shape.is_some() || shapes::detect(head, &name).is_none())
}

/// Streams one large input into `sink`: its report and --verbose lines, or `None` to stop streaming.
fn stream_input(
    pipeline: &Plan,
    args: &RunOptions,
    input: &Input,
    sink: &mut Sink,
    stacked: bool,
    why: &StopReason,
    observer: &dyn Observer,
) -> Result<Option<(InputReport, Vec<String>)>, PipelineError> {
    let path = input.path.as_deref().expect("streamed inputs are files");
    let started = Instant::now();
    let mut gathered = Gathered {
        seen: None,
        stats: Default::default(),
        columns: None,
        enrich_s: 0.0,
        blocks: 0,
        options: None,
    };
    let mut read_times = [0.0; 2];
    let mut torn = None;
    let mut rejects = Vec::new();
    let mut write_s = 0.0;
    // A console log larger than its head: read in windows, to the choices its head's rows give.
    let console = match crate::read::console_in_windows(input, &pipeline.read, window_sizes()) {
        Ok(console) => console,
        Err(reason) => {
            let _ = why.set(format!(
                "{}: cannot be read in windows ({reason}); the whole-input way reads it",
                input.display
            ));
            return Ok(None);
        }
    };
    if console.is_none()
        && matches!(
            pipeline.read.shape,
            Some(Shape::Console | Shape::Torchtitan)
        )
    {
        let _ = why.set(format!(
            "{}: a console log no longer than a window's head, read whole",
            input.display
        ));
        return Ok(None);
    }
    // What the windows said once read: their notes and warnings.
    let said: std::sync::Mutex<Option<(Vec<String>, Vec<String>)>> = std::sync::Mutex::new(None);
    let parquet = console.is_none()
        && std::fs::File::open(path)
            .and_then(|mut f| {
                let mut magic = [0u8; 4];
                std::io::Read::read_exact(&mut f, &mut magic).map(|_| magic == *b"PAR1")
            })
            .unwrap_or(false);
    let format = pipeline.read.format.or(input.format_from_name());
    let batches = if parquet {
        crate::read::parquet::ArrowBatches::open(path, ROW_GROUP_ROWS)
    } else {
        None
    };
    // Where the frames come from, and on which side of the overlap they are enriched (see Gathered::run).
    let how;
    let (enrich_early, next): (bool, Box<NextFrame<'_>>) = if let Some(console) = console {
        how = How::Windows(console.shape);
        gathered.options = Some(pipeline.options.for_input(
            console.shape.timing_optional(),
            &console.facts,
            console.model.as_ref(),
            &console.hints,
        ));
        let mut console = Some(console);
        let said = &said;
        // Scanning the lines is the heavier half: each window is enriched on the writing side.
        let next = move |times: &mut [f64; 2]| -> Result<Option<DataFrame>, ()> {
            let Some(windows) = console.as_mut() else {
                return Ok(None);
            };
            let clock = Instant::now();
            let frame = windows.next_frame();
            times[1] += clock.elapsed().as_secs_f64();
            match frame {
                Ok(Some(frame)) => Ok(Some(frame)),
                Ok(None) => {
                    let done = console.take().expect("windows");
                    *said.lock().expect("not poisoned") = Some(done.finish());
                    Ok(None)
                }
                Err(reason) => {
                    let _ = why.set(format!(
                        "{}: {reason}; the whole-input way reads it",
                        input.display
                    ));
                    Err(())
                }
            }
        };
        (false, Box::new(next))
    } else if let Some(mut batches) = batches {
        how = How::Batches;
        // Parquet of plain columns: each batch decoded and enriched while the one before is written.
        let next = move |times: &mut [f64; 2]| {
            let clock = Instant::now();
            let frame = batches.next_frame().map_err(|_| ());
            times[1] += clock.elapsed().as_secs_f64();
            frame
        };
        (true, Box::new(next))
    } else if parquet || format == Some(InputFormat::Parquet) {
        // Other Parquet is read whole by polars (it is compact, and columnar), then enriched and written a
        // row group at a time.
        let read = match crate::read::read_input(input, &pipeline.read) {
            Ok(read) => read,
            Err(e) => {
                let _ = why.set(format!("{e}"));
                return Ok(None);
            }
        };
        how = How::Slices(read.bytes);
        let mut start = 0;
        let slices = move |_: &mut [f64; 2]| -> Result<Option<DataFrame>, ()> {
            if start >= read.frame.height() {
                return Ok(None);
            }
            let slice = read.frame.slice(start as i64, ROW_GROUP_ROWS);
            start += slice.height();
            Ok(Some(slice))
        };
        (true, Box::new(slices))
    } else {
        let unreadable = || {
            format!(
                "{}: cannot be read in blocks; the whole-input way reports why",
                input.display
            )
        };
        let Some(format) = format else {
            let _ = why.set(unreadable());
            return Ok(None);
        };
        let Ok(reader) = BlockReader::open(path, format) else {
            let _ = why.set(unreadable());
            return Ok(None);
        };
        // A line that outgrows what a whole read may take stops streaming: the whole-input way then
        // refuses the input with the budget's error.
        let mut reader = match &pipeline.read.budget {
            Some(b) => reader.with_max_block_bytes(
                usize::try_from(b.limit() / TABLE_FACTOR).unwrap_or(usize::MAX),
            ),
            None => reader,
        };
        // The first block's first bytes decide whether this is a plain table at all.
        let Ok(first) = reader.next_block() else {
            let _ = why.set(unreadable());
            return Ok(None);
        };
        let head = first
            .as_ref()
            .map_or(&[][..], |b| &b.bytes[..b.bytes.len().min(64 * 1024)]);
        if !plain_table(pipeline, path, head) {
            let _ = why.set(format!(
                "{}: a trainer's own layout, read whole",
                input.display
            ));
            return Ok(None);
        }
        how = How::Blocks;
        let mut first = first;
        let skip_bad = pipeline.read.skip_bad_rows;
        let (torn, rejects) = (&mut torn, &mut rejects);
        // The column types the first block with rows fixed: later blocks are read to them.
        let mut fixed: Option<polars::prelude::Schema> = None;
        // JSONL and CSV: parsing is the heavier half, so blocks are enriched on the writing side.
        let blocks = move |times: &mut [f64; 2]| -> Result<Option<DataFrame>, ()> {
            let clock = Instant::now();
            let block = match first.take() {
                Some(block) => Some(block),
                None => reader.next_block().map_err(|_| ())?,
            };
            times[0] += clock.elapsed().as_secs_f64();
            let Some(block) = block else { return Ok(None) };
            let clock = Instant::now();
            let parsed = parse_block(block, format, skip_bad, fixed.as_ref()).map_err(|_| ())?;
            times[1] += clock.elapsed().as_secs_f64();
            if fixed.is_none() && parsed.frame.height() > 0 {
                fixed = Some(parsed.frame.schema().as_ref().clone());
            }
            *torn = torn.take().or(parsed.torn);
            rejects.extend(parsed.rejects);
            Ok(Some(parsed.frame))
        };
        (false, Box::new(blocks))
    };
    let streamed = gathered.run(
        Target {
            pipeline,
            args,
            input,
            sink,
            stacked,
        },
        enrich_early,
        &mut write_s,
        &mut read_times,
        next,
        why,
    )?;
    if !streamed {
        return Ok(None);
    }
    let Some(mut seen) = gathered.seen else {
        let _ = why.set(format!("{}: no rows", input.display));
        return Ok(None); // no rows: the whole-input way says what it makes of that
    };
    seen.how = match how {
        How::Batches => format!(
            "streamed, {} batches of up to {ROW_GROUP_ROWS} rows",
            gathered.blocks
        ),
        How::Slices(bytes) => format!(
            "read whole ({} of Parquet), written {} row groups at a time",
            format_size(bytes),
            gathered.blocks
        ),
        How::Blocks => format!(
            "streamed, {} blocks of up to {}",
            gathered.blocks,
            format_size(block_bytes() as u64)
        ),
        How::Windows(shape) => {
            seen.shape = shape;
            if let Some((notes, warnings)) = said.lock().expect("not poisoned").take() {
                seen.notes = notes;
                seen.read_warnings = warnings;
            }
            format!("read in windows ({} of them)", gathered.blocks)
        }
    };
    if timings_wanted() {
        let [read, parse] = read_times;
        let (enrich, write) = (gathered.enrich_s, write_s);
        observer.on(Event::Timing(&format!(
            "{}: streamed {:.3}s (read {read:.3}s, parse {parse:.3}s, enrich {enrich:.3}s, write {write:.3}s)",
            input.display,
            started.elapsed().as_secs_f64()
        )));
    }
    seen.torn = torn;
    seen.rejects = rejects;
    let verbose = pipeline.verbose_lines(input, &seen);
    let warnings = pipeline.warnings(input, &seen);
    let rejects = seen.rejects.into_iter().chain(seen.torn).collect(); // in line order
    Ok(Some((
        InputReport {
            stats: gathered.stats,
            warnings,
            rejects,
        },
        verbose,
    )))
}
