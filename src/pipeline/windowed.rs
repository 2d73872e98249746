//! A console log larger than a window's head, folded window by window: each window's rows read to the
//! head's choices (`read::console::windows`), enriched, and handed to a command's fold, then let go.
//! What `mfu summary`, `goodput` and `audit` of one such log hold is then their folds (counts, and each
//! median's values by distinct value), not the log's rows: the 1 and 4 GiB bench logs' summaries,
//! goodputs and audits in 165 to 245 MiB (docs/memory.md).
//!
//! A window is given to the fold as a [`Loaded`] of its own rows, its marks numbered from its first
//! row, so the fold reads it as it would read a whole input. Where the windows stop (the rest of the log
//! does not read to the head's choices), or a window's enrichment maps its columns otherwise than the
//! first's, or the fold itself stops ([`Fold::Stop`]), the fold is told nothing more and the log is to
//! be read whole, for a reason `-v` gives: what was folded is then thrown away by the caller.

use std::time::Instant;

use crate::columns::{Field, FieldSource};
use crate::enrich::enrich_frame;
use crate::goodput::Mark;
use crate::read::console::windows::window_sizes;
use crate::read::memory::format_size;
use crate::read::{console_in_windows, is_windowed_console, Held, Input};

use super::{timings_wanted, Event, Loaded, Observer, PipelineError, Plan, Seen};

/// What reading a log in windows said, for the user, as [`Plan::load`] says it of a whole read.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowsRead {
    /// `--verbose` lines (empty without it).
    pub verbose: Vec<String>,
    pub warnings: Vec<String>,
    /// The log's rows.
    pub rows: usize,
}

/// Why a log is read whole rather than folded: `None` where it is no console log read in windows
/// (nothing to say).
pub type Whole = Option<String>;

/// What a command folded of its inputs: its key column names and runs, and what the reading of each
/// log folded in windows said; or why its inputs are to be read whole.
pub type FoldedRuns<R> = Result<((Vec<String>, Vec<R>), Vec<WindowsRead>), Whole>;

/// A fold's answer to a window: go on to the next, or stop, the log to be read whole, for this reason.
pub enum Fold {
    On,
    Stop(String),
}

/// One of a command's inputs in order: read whole (with its display name), or a console log to fold
/// window by window.
pub enum Part<'a> {
    Loaded(String, Box<Loaded>),
    Windows(&'a Input),
}

/// Why a log is read whole where a row's span (the steps it stands for) is its run's most common step
/// gap: the windows know it only once every row is read (`summary::Spans::guesses_hold`).
pub const SPAN_BY_USUAL_GAP: &str =
    "a row's span is its run's most common step gap, known once every row is read";

/// One window, enriched, and the rows of the log before it.
pub struct Window {
    pub loaded: Loaded,
    pub first_row: usize,
}

impl Plan {
    /// Which inputs are console logs read in windows (see [`Plan::parts`]); `None` where none is.
    pub fn windowed_inputs(&self) -> Option<Vec<bool>> {
        let windowed: Vec<bool> = self
            .inputs
            .iter()
            .map(|input| is_windowed_console(input, &self.read))
            .collect();
        windowed.contains(&true).then_some(windowed)
    }

    /// The inputs as a per-run command folds them, in input order: each console log read in windows
    /// (`windowed`, from [`Plan::windowed_inputs`]) to fold, every other input read whole (in parallel,
    /// `reuse` as [`Plan::load_all`] has it), or why it could not be.
    #[allow(clippy::type_complexity)]
    pub fn parts(
        &self,
        windowed: &[bool],
        reuse: bool,
        observer: &dyn Observer,
    ) -> Result<Vec<(&Input, Result<Part<'_>, PipelineError>)>, PipelineError> {
        let loaded = self.for_each_input(|i, input| {
            if windowed.get(i).copied().unwrap_or(false) {
                return Ok(None);
            }
            let loaded = self.load(input, reuse, observer)?;
            observer.on(Event::InputDone {
                rows: loaded.enriched.frame.height(),
            });
            Ok(Some(loaded))
        })?;
        Ok(self
            .inputs
            .iter()
            .zip(loaded)
            .map(|(input, l)| {
                let part = l.map(|l| match l {
                    Some(l) => Part::Loaded(input.display.clone(), Box::new(l)),
                    None => Part::Windows(input),
                });
                (input, part)
            })
            .collect())
    }

    /// Folds the console log `input` window by window into `fold` (see the module's doc); `Err` where
    /// it is to be read whole: it is no log read in windows, its windows stop, or `fold` stops (it
    /// cannot fold this log as the whole log reads).
    pub fn fold_windows(
        &self,
        input: &Input,
        observer: &dyn Observer,
        fold: &mut dyn FnMut(Window) -> Result<Fold, PipelineError>,
    ) -> Result<Result<WindowsRead, Whole>, PipelineError> {
        let started = Instant::now();
        let mut windows = match console_in_windows(input, &self.read, window_sizes()) {
            Ok(Some(windows)) => windows,
            Ok(None) => return Ok(Err(None)),
            Err(reason) => {
                return Ok(Err(Some(format!(
                    "it cannot be read in windows ({reason})"
                ))))
            }
        };
        let whole = |why: &str| Ok(Err(Some(why.to_string())));
        let shape = windows.shape;
        let options = self.options.for_input(
            shape.timing_optional(),
            &windows.facts,
            windows.model.as_ref(),
            &windows.hints,
        );
        let mut seen: Option<Seen> = None;
        // Marks by the log's row, given once each; those past the window given go with the next.
        let mut marks: Vec<(usize, Mark)> = Vec::new();
        let mut next = match windows.next_frame() {
            Ok(frame) => frame,
            Err(reason) => return whole(&reason),
        };
        let mut first_row = 0;
        while let Some(frame) = next.take() {
            // The next window is read before this one is folded: the lines between them may mark
            // this window's rows, and after the last one, its last row.
            next = match windows.next_frame() {
                Ok(frame) => frame,
                Err(reason) => return whole(&reason),
            };
            marks.extend(windows.take_marks());
            let rows = frame.height();
            let Ok(enriched) = enrich_frame(frame, &options) else {
                return whole("a window could not be enriched");
            };
            // A running total differenced, or `--window`, needs the rows before each window; a log
            // without a step column numbers its rows from each window's first.
            let stepped = matches!(
                enriched.mapping.source(Field::Step),
                FieldSource::Column { .. }
            );
            if !stepped {
                return whole("it has no step column");
            }
            if !super::stream::row_local(&enriched.mapping, self) {
                return whole("cumulative counters or --window need the rows before each window");
            }
            match seen.as_mut() {
                None => {
                    seen = Some(Seen {
                        how: String::new(),
                        shape,
                        rows: 0,
                        notes: Vec::new(),
                        read_warnings: Vec::new(),
                        mapping: enriched.mapping.clone(),
                        non_numeric: Vec::new(),
                        column_warnings: enriched.column_warnings.clone(),
                        renamed: enriched.renamed.clone(),
                        torn: None,
                        rejects: Vec::new(),
                    })
                }
                // A window mapped otherwise (a column read as another field, a warning the whole
                // log's values would word otherwise) is not the log read whole.
                Some(first)
                    if first.mapping.describe() != enriched.mapping.describe()
                        || first.column_warnings != enriched.column_warnings
                        || first.renamed != enriched.renamed =>
                {
                    return whole("a window maps its columns otherwise than the first");
                }
                Some(_) => {}
            }
            let seen = seen.as_mut().expect("set above");
            seen.rows += rows;
            for (column, cells) in &enriched.non_numeric {
                match seen.non_numeric.iter_mut().find(|(c, _)| c == column) {
                    Some(slot) => slot.1 += cells,
                    None => seen.non_numeric.push((column.clone(), *cells)),
                }
            }
            let end = first_row + rows;
            let last = next.is_none();
            let (mine, later): (Vec<_>, Vec<_>) = std::mem::take(&mut marks)
                .into_iter()
                .partition(|(row, _)| last || *row < end);
            marks = later;
            let window_marks = mine
                .into_iter()
                .map(|(row, mark)| (row.saturating_sub(first_row), mark))
                .collect();
            let folded = fold(Window {
                loaded: Loaded {
                    enriched,
                    held: Held::none(),
                    rejects: Vec::new(),
                    warnings: Vec::new(),
                    marks: Some(window_marks),
                    argument: input.argument.clone(),
                    shape,
                },
                first_row,
            })?;
            if let Fold::Stop(why) = folded {
                return whole(&why);
            }
            first_row = end;
        }
        let Some(mut seen) = seen else {
            return whole("it has no rows");
        };
        let bytes = windows.bytes_read();
        let (notes, warnings) = windows.finish();
        seen.how = format!(
            "read in windows ({}), folded window by window",
            format_size(bytes)
        );
        seen.notes = notes;
        seen.read_warnings = warnings;
        if timings_wanted() {
            observer.on(Event::Timing(&format!(
                "{}: read, enriched and folded in windows {:.3}s",
                input.display,
                started.elapsed().as_secs_f64()
            )));
        }
        Ok(Ok(WindowsRead {
            verbose: self.verbose_lines(input, &seen),
            warnings: self.warnings(input, &seen),
            rows: seen.rows,
        }))
    }
}
