//! A console log read in bounded memory: its first bytes (the *head*) are read as a whole log is, and
//! the choices the evidence made over the head's rows ([`Pinned`]: which clock is the step time, each
//! rate's scope, ...) are held for the rest, read a *window* of rows at a time. Memory holds the head's
//! rows, then one window's, never the whole log's.
//!
//! A row's figures may depend on the rows around it (a clock differenced, the spans of a clock that
//! moves in whole seconds), so a window gives only rows with [`WindowSizes::shared_rows`] rows of its
//! own before and after them: it starts three bands of that many rows before the first row it gives.
//! The first band is only read; the second was given by the window before, and must read the same
//! in both, else a figure reaches further than a band and the reading stops; the third was the
//! window before's last band, read but not given. Where the step time is a covering clock's spans (a
//! clock to the second times a span of 20 s's rows), a window starts its spans where one of the
//! window before ended, so they are the whole log's, and gives no row whose span ends past its rows. So it does wherever the rest of the log would
//! not read to the head's choices: a column, fact, hint or type that the head does not have (a
//! relaunch on other hardware, a key first printed late), a choice the window cannot follow (a clock
//! it lacks). Stopping says why, and the caller reads the log whole instead ([`super::read`]), exactly
//! as without windows.
//!
//! What the rest of a log does not get: its own say in the choices (a log whose later rows would have
//! chosen otherwise reads to its head's), and its say in the evidence's figures in the notes (a median
//! ratio is the head's rows'; the counts of lines read and rows timed and counted are the whole log's).

use std::borrow::Cow;

use super::blocks::{scan_block, scan_until, BlockReader, Merged, BLOCK};
use super::family::{self, Chosen};
use super::reading::{self, Pinned};
use super::rows::{Column, FamilyRows, Table};
use super::vocabulary::{vocabulary, Framework};
use super::{ConsoleRead, Given};
use crate::goodput::Mark;

/// How a log is cut for reading in windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowSizes {
    /// Bytes of the log whose rows decide the reading; a log no longer is read whole.
    pub head_bytes: usize,
    /// Rows a window gives (about: the lines of a block come whole).
    pub window_rows: usize,
    /// Rows a window shares with each neighbour: how far a row's figures may reach.
    pub shared_rows: usize,
    /// Bytes of the blocks of lines the log is scanned in (the head ends at a block's end).
    pub block_bytes: usize,
}

/// The sizes `mfu` reads large console logs with: a head of 64 MiB (about 250,000 lines of a
/// torchtitan log), windows of 256 Ki rows sharing 1,024 rows with each neighbour.
pub const WINDOW_SIZES: WindowSizes = WindowSizes {
    head_bytes: 64 << 20,
    window_rows: 1 << 18,
    shared_rows: 1 << 10,
    block_bytes: BLOCK,
};

/// The sizes large console logs are read with: [`WINDOW_SIZES`], or the `MFU_CONSOLE_WINDOWS`
/// environment variable's `HEAD_BYTES,WINDOW_ROWS,SHARED_ROWS,BLOCK_BYTES` (for tests and experiments:
/// small values read small logs in windows).
pub fn window_sizes() -> WindowSizes {
    let given: Option<Vec<usize>> = std::env::var("MFU_CONSOLE_WINDOWS").ok().and_then(|v| {
        v.split(',')
            .map(|n| n.trim().parse().ok().filter(|n| *n > 0))
            .collect()
    });
    match given.as_deref() {
        Some(&[head_bytes, window_rows, shared_rows, block_bytes]) => WindowSizes {
            head_bytes,
            window_rows,
            shared_rows,
            block_bytes,
        },
        _ => WINDOW_SIZES,
    }
}

/// What reading a log in windows gave.
pub enum Streamed<'s> {
    /// The log is no longer than its head: read whole.
    Whole(Box<ConsoleRead>),
    /// The head's reading, and the rest to come a window at a time.
    Windows(Box<Windows<'s>>),
    /// The log cannot be read in windows (why): read it whole.
    Stopped(String),
}

/// The rest of a log read in windows: [`Windows::next_table`] gives the head's rows, then each
/// window's.
pub struct Windows<'s> {
    /// The head's reading: its notes, warnings, facts, hints and model are the log's.
    pub head: ConsoleRead,
    /// The head's rows given so far; then each window's.
    head_given: bool,
    blocks: BlockReader<'s>,
    framework: Option<&'static Framework>,
    beside: Vec<(String, String)>,
    given: Given,
    sizes: WindowSizes,
    pinned: Pinned,
    /// The head's columns and their kinds: every window's must be the same.
    kinds: Vec<(String, u8)>,
    /// The facts the log's lines gave so far.
    facts: super::launches::FactsSoFar,
    /// The lines the spans of the clock that times the rows ended on, in the window before.
    span_ends: Vec<usize>,
    /// Training lines of the rank kept after the head's, and the family's repeated lines in the head.
    rest_training_lines: usize,
    head_repeats: usize,
    /// The rows given with a number, by column: the counts the notes give.
    filled: std::collections::HashMap<String, usize>,
    /// The pass over the rest: every family's columns (their rows taken as they come), the lines kept
    /// for facts, the count of lines.
    rest: Merged,
    /// The family chosen (its index among the pass's families) and its rank, if one.
    chosen: usize,
    family: (String, bool),
    rank: Option<u32>,
    /// Rows of the chosen family not given yet, after the rows shared with the window before.
    pending: FamilyRows,
    /// Lines that mark what happened before a row (relaunches, checkpoints, evaluations), in order.
    mark_lines: Vec<(usize, Mark)>,
    /// Rows given so far, and the line the next window's given rows start at.
    given_rows: usize,
    /// Rows given from the head.
    head_rows: usize,
    cut: usize,
    /// The rows given last that the next window shares (their lines and figures).
    shared: (Vec<usize>, Table),
    windows: usize,
    warnings: Vec<String>,
    done: bool,
    /// What the lines said happened before the rows given so far (the whole log's rows), in order.
    marks: Vec<(usize, Mark)>,
    /// The step of the last row given, where the head's step counter never went back: a counter
    /// that goes back later (a relaunch, or a counter that restarts each epoch) is evidence the head
    /// did not weigh, so it stops the windows. `None` where the head's went back, or has no steps.
    last_step: Option<f64>,
}

/// Reads the log `source` in windows ([`Streamed`]); `framework` names its framework when known,
/// `beside` are the configuration files kept beside it.
pub fn read_in_windows<'s>(
    source: impl std::io::Read + Send + 's,
    framework: Option<&str>,
    beside: Vec<(String, String)>,
    given: Given,
    sizes: WindowSizes,
) -> Result<Streamed<'s>, String> {
    let vocab = vocabulary();
    let mut blocks = BlockReader::new(source, sizes.block_bytes.max(1));
    let head = blocks.head().map_err(|e| e.to_string())?;
    let framework = framework
        .and_then(|name| vocab.framework(name))
        .or_else(|| vocab.framework_of(head));
    let (mut merged, more) =
        scan_until(&mut blocks, framework, sizes.head_bytes).map_err(|e| e.to_string())?;
    if !more {
        let ends_with_newline = blocks.last == Some(b'\n');
        let chosen = family::choose(merged, framework, ends_with_newline)?;
        return reading::read(chosen, framework, &beside, given)
            .map(|r| Streamed::Whole(Box::new(r)));
    }
    let band = sizes.shared_rows.max(1);
    // The rows each family would share with the first window, kept before the head's are read.
    let mut tails: Vec<FamilyRows> = merged.families.iter().map(|f| f.tail(3 * band)).collect();
    let head_rows = merged.take_rows();
    // What the head's lines say happened before rows the first window shares.
    let mut mark_lines = head_rows.mark_lines.clone();
    for f in head_rows.families.iter().filter(|f| f.family.1) {
        mark_lines.extend(f.lines.iter().map(|l| (*l, Mark::Evaluation)));
    }
    // A head the reader cannot read may still be the start of a log it can.
    let chosen = match family::choose(head_rows, framework, true) {
        Ok(chosen) => chosen,
        Err(why) => return Ok(Streamed::Stopped(format!("its head: {why}"))),
    };
    if chosen.chosen == usize::MAX {
        return Ok(Streamed::Stopped(
            "the rows are a run summary's, not its lines'".into(),
        ));
    }
    let (index, family_key, rank) = (chosen.chosen, chosen.family.clone(), chosen.rank);
    let pending = tails.swap_remove(index);
    drop(tails);
    if pending.height() < 3 * band {
        return Ok(Streamed::Stopped(format!(
            "its head holds fewer than {} rows of its training lines",
            3 * band
        )));
    }
    mark_lines.retain(|(line, _)| *line >= pending.lines[0]);
    // The head's rows up to the line of the first row the window after it gives.
    let cut = pending.lines[2 * band];
    let reading::Reading {
        read: mut head,
        pinned,
        row_lines,
        span_ends,
    } = match reading::read_pinned(chosen, framework, &beside, given, None) {
        Ok(read) => read,
        Err(why) => return Ok(Streamed::Stopped(format!("its head: {why}"))),
    };
    let given_rows = row_lines.partition_point(|l| *l < cut);
    if let Some(why) = spans_reach(&pinned, &span_ends, &row_lines[..given_rows]) {
        return Ok(Streamed::Stopped(why));
    }
    let from = row_lines.partition_point(|l| *l < pending.lines[band]);
    let shared_rows = (
        row_lines[from..given_rows].to_vec(),
        head.table.rows(from..given_rows),
    );
    head.table = head.table.rows(0..given_rows);
    let head_kinds = kinds(&head.table);
    let last_step = match steps_of(&head.table, &head.hints, &family_key.0) {
        Some(steps) => steps
            .iter()
            .filter(|s| !s.is_nan())
            .try_fold(None, |before: Option<f64>, &s| match before {
                Some(b) if s < b => Err(()),
                _ => Ok(Some(s)),
            })
            .unwrap_or(None),
        None => None,
    };
    let head_repeats = merged.families[index].repeats;
    Ok(Streamed::Windows(Box::new(Windows {
        head,
        head_given: false,
        blocks,
        framework,
        beside,
        given,
        sizes,
        pinned,
        kinds: head_kinds,
        facts: Default::default(),
        span_ends,
        rest_training_lines: 0,
        head_repeats,
        filled: std::collections::HashMap::new(),
        rest: merged,
        chosen: index,
        family: family_key,
        rank,
        pending,
        mark_lines,
        given_rows,
        head_rows: given_rows,
        cut,
        shared: shared_rows,
        windows: 0,
        warnings: Vec::new(),
        done: false,
        marks: Vec::new(),
        last_step,
    })))
}

impl Windows<'_> {
    /// The next rows: the head's, then each window's; `Ok(None)` at the end; `Err` (why) where the
    /// rest of the log does not read to the head's choices.
    pub fn next_table(&mut self) -> Result<Option<Table>, String> {
        let table = if !self.head_given {
            self.head_given = true;
            // A mark on a row the head does not give is the window's that gives that row.
            let given = self.head_rows;
            self.marks
                .extend(self.head.marks.iter().filter(|(row, _)| *row < given));
            std::mem::take(&mut self.head.table)
        } else if self.done {
            return Ok(None);
        } else {
            let band = self.sizes.shared_rows.max(1);
            let ended = self.gather(self.sizes.window_rows + 3 * band)?;
            self.window(ended)?
        };
        for (name, column) in table.names.iter().zip(&table.columns) {
            let n = match column {
                Column::Numbers { values, .. } => values.iter().filter(|v| !v.is_nan()).count(),
                Column::Text(words) => words.iter().filter(|w| w.is_some()).count(),
            };
            *self.filled.entry(name.clone()).or_default() += n;
        }
        Ok(Some(table))
    }

    /// Scans blocks until the rows pending are `rows` or the log ends (`true`).
    fn gather(&mut self, rows: usize) -> Result<bool, String> {
        use rayon::prelude::*;
        let threads = rayon::current_num_threads().max(1);
        while self.pending.height() < rows {
            let mut batch = Vec::with_capacity(threads);
            while batch.len() < threads {
                match self.blocks.next_block().map_err(|e| e.to_string())? {
                    Some(b) => batch.push(b),
                    None => break,
                }
            }
            if batch.is_empty() {
                return Ok(true);
            }
            let framework = self.framework;
            let scanned: Vec<_> = batch
                .par_iter()
                .map(|block| scan_block(framework, block))
                .collect();
            for scanner in scanned {
                self.rest.absorb(scanner);
                self.take_rows();
            }
            for block in batch {
                self.blocks.give_back(block);
            }
        }
        Ok(false)
    }

    /// Moves the rows the pass put together into the pending rows (the chosen family's) and the mark
    /// lines (evaluation families' lines), leaving the families' columns.
    fn take_rows(&mut self) {
        for (i, f) in self.rest.families.iter_mut().enumerate() {
            let rows = f.take_rows();
            if i == self.chosen {
                let rank = self.rank;
                self.rest_training_lines += rows
                    .ranks
                    .iter()
                    .filter(|r| rank.is_none() || r.is_none() || **r == rank)
                    .count();
                self.pending.append(rows, 0);
            } else if f.family.1 {
                self.mark_lines
                    .extend(rows.lines.iter().map(|l| (*l, Mark::Evaluation)));
            }
        }
        self.mark_lines.append(&mut self.rest.mark_lines);
    }

    /// Reads the pending rows to the head's choices and gives those after the shared ones (all, at the
    /// log's end).
    fn window(&mut self, ended: bool) -> Result<Table, String> {
        let band = self.sizes.shared_rows.max(1);
        let next = if ended {
            None
        } else {
            Some(self.pending.tail(3 * band))
        };
        let replacement = next.clone().unwrap_or_else(|| self.pending.tail(0));
        let mut rows = std::mem::replace(&mut self.pending, replacement);
        if let Some(rank) = self.rank {
            let keep: Vec<bool> = rows
                .ranks
                .iter()
                .map(|r| r.is_none_or(|r| r == rank))
                .collect();
            rows.retain(&keep);
        }
        let first_line = rows.lines.first().copied().unwrap_or(usize::MAX);
        self.mark_lines.sort_by_key(|(line, _)| *line);
        let marks: Vec<(usize, Mark)> = self
            .mark_lines
            .iter()
            .filter(|(line, _)| *line >= first_line)
            .copied()
            .collect();
        if let Some(next) = &next {
            let keep_from = next.lines.first().copied().unwrap_or(usize::MAX);
            self.mark_lines.retain(|(line, _)| *line >= keep_from);
        }
        let last_line =
            (ended && self.blocks.last != Some(b'\n')).then(|| self.rest.lines.saturating_sub(1));
        let finished = family::finish(rows, &self.family.0, &marks, last_line);
        let before = finished.row_lines.partition_point(|l| *l < self.cut);
        let chosen = Chosen {
            table: finished.table,
            units: finished.units,
            notes: Vec::new(),
            warnings: finished.warnings,
            marks: finished.marks,
            fact_lines: Cow::Borrowed(&self.rest.facts),
            chosen: self.chosen,
            row_lines: finished.row_lines,
            family: self.family.clone(),
            rank: self.rank,
        };
        let first_row = self.given_rows.checked_sub(before).ok_or_else(|| {
            "a window shares more rows with the one before than that one gave".to_string()
        })?;
        // The covering clock's spans start where one of the window before ended, at or after this
        // window's first row: the whole log's spans from there on.
        let spans_from = self.span_ends.iter().copied().find(|l| *l >= first_line);
        if self.pinned.times_by_spans() && spans_from.is_none() {
            return Err(format!(
                "the spans of the clock that times the steps are longer than the {band} rows a window reads before those it gives"
            ));
        }
        let reading::Reading {
            read,
            pinned,
            row_lines,
            span_ends,
        } = reading::read_pinned(
            chosen,
            self.framework,
            &self.beside,
            self.given,
            Some(reading::Window {
                pinned: &self.pinned,
                first_row,
                facts: &mut self.facts,
                spans_from,
            }),
        )?;
        self.span_ends = span_ends;
        self.windows += 1;
        self.check(&read, &pinned)?;
        // The second band read as the window before gave it.
        let (lines, table) = &self.shared;
        let start = lines
            .first()
            .map_or(before, |first| row_lines.partition_point(|l| l < first));
        if row_lines[start..before] != lines[..] || !same_rows(&read.table, start..before, table) {
            return Err(format!(
                "a row's figures depend on rows further than the {band} rows a window reads before and after those it gives (rows from line {})",
                lines.first().map_or(0, |l| l + 1)
            ));
        }
        let cut = match &next {
            Some(next) if next.height() > 2 * band => next.lines[2 * band],
            _ => usize::MAX,
        };
        let to = row_lines.partition_point(|l| *l < cut);
        if next.is_some() {
            if let Some(why) = spans_reach(&self.pinned, &self.span_ends, &row_lines[before..to]) {
                return Err(why);
            }
        }
        let from = match &next {
            Some(next) if next.height() > band => {
                row_lines.partition_point(|l| *l < next.lines[band])
            }
            _ => to,
        }
        .clamp(before, to);
        if let Some(mut last) = self.last_step {
            if let Some(steps) = steps_of(&read.table, &read.hints, &self.family.0) {
                for &step in steps[before..to].iter().filter(|s| !s.is_nan()) {
                    if step < last {
                        return Err(format!(
                            "the step counter goes back ({last} to {step}) after the head's rows, whose counter never did (a relaunch, or a counter that starts again each epoch): evidence the head's reading did not weigh"
                        ));
                    }
                    last = step;
                }
                self.last_step = Some(last);
            }
        }
        self.shared = (row_lines[from..to].to_vec(), read.table.rows(from..to));
        // The marks on the rows given (and, at the log's end, those after its last row), counted
        // among the whole log's rows.
        let first_given = self.given_rows;
        self.marks.extend(
            read.marks
                .iter()
                .filter(|(row, _)| *row >= before && (*row < to || next.is_none()))
                .map(|(row, mark)| (first_given + row - before, *mark)),
        );
        self.given_rows += to - before;
        self.cut = cut;
        for w in read.warnings {
            if !self.head.warnings.contains(&w) && !self.warnings.contains(&w) {
                self.warnings.push(w);
            }
        }
        self.done = next.is_none();
        Ok(read.table.rows(before..to))
    }

    /// Whether a window read to the head's choices made what the head made: the same columns of the
    /// same kinds, hints, facts and model, and the same choices.
    fn check(&self, read: &ConsoleRead, pinned: &Pinned) -> Result<(), String> {
        let head = &self.head;
        let differs = if kinds(&read.table) != self.kinds {
            Some("its columns")
        } else if read.hints != head.hints {
            Some("the columns that give each field")
        } else if read.facts != head.facts {
            Some("its facts")
        } else if read.model != head.model {
            Some("the model")
        } else if *pinned != self.pinned {
            Some("the evidence's choices")
        } else {
            None
        };
        match differs {
            Some(what) => Err(format!(
                "the rows after line {} differ from the head's in {what} (a relaunch, or a key printed late)",
                self.cut.min(self.rest.lines)
            )),
            None => Ok(()),
        }
    }

    /// What the lines said happened before the rows given so far, by their row among the whole log's
    /// (sorted): as reading the log whole gives them ([`ConsoleRead::marks`]). Taken: each is given once.
    pub fn take_marks(&mut self) -> Vec<(usize, Mark)> {
        std::mem::take(&mut self.marks)
    }

    /// The notes and warnings of the log once every window is read: the head's, a note on the
    /// windows, and the windows' own warnings.
    pub fn finish(self) -> (Vec<String>, Vec<String>) {
        let mut notes = self.head.notes;
        let training_lines = self.rest_training_lines
            + self.rest.families[self.chosen]
                .repeats
                .saturating_sub(self.head_repeats);
        for note in &mut notes {
            if let Some(whole) =
                whole_log_counts(note, &self.filled, training_lines, self.rest.lines)
            {
                *note = whole;
            }
        }
        notes.push(format!(
            "read in windows: the rows of the log's first {} chose the reading ({} rows given from them), and {} window(s) of up to {} rows read the other {} rows to it; the lines read and the rows timed and counted above are the whole log's, the other counts and figures the first rows'",
            crate::read::memory::format_size(self.sizes.head_bytes as u64),
            self.head_rows,
            self.windows,
            self.sizes.window_rows,
            self.given_rows - self.head_rows
        ));
        let mut warnings = self.head.warnings;
        warnings.extend(self.warnings);
        (notes, warnings)
    }
}

/// The steps of `table`'s rows (NaN where a row has none): the column the hints
/// give the step, else the family's step key's.
fn steps_of<'t>(
    table: &'t Table,
    hints: &[crate::columns::ColumnHint],
    step_key: &str,
) -> Option<&'t [f64]> {
    let name = hints
        .iter()
        .find(|h| h.field == crate::columns::Field::Step)
        .map_or(step_key, |h| h.column.as_str());
    let at = table.names.iter().position(|n| n == name)?;
    match &table.columns[at] {
        Column::Numbers { values, .. } => Some(values),
        Column::Text(_) => None,
    }
}

/// Why the rows `given` (their lines) cannot be given, where the step time is a covering clock's spans
/// and the last of them ends after the last span that ended in the rows read (`span_ends`): its figure
/// would change with the rows after.
fn spans_reach(pinned: &Pinned, span_ends: &[usize], given: &[usize]) -> Option<String> {
    let last = given.last()?;
    (pinned.times_by_spans() && span_ends.last().is_none_or(|end| end < last)).then(|| {
        format!(
            "the spans of the clock that times the steps reach past the rows a window reads after those it gives (line {})",
            last + 1
        )
    })
}

/// A note of the head's reading with its counts of lines and rows made the whole log's: the training
/// lines (`training_lines` more than the head's) of the log's `lines`, and the rows a column made by
/// the reading has a value in (`filled`). `None` for a note that gives neither.
fn whole_log_counts(
    note: &str,
    filled: &std::collections::HashMap<String, usize>,
    training_lines: usize,
    lines: usize,
) -> Option<String> {
    const TRAINING: &str = " training line(s) with step key ";
    if note.starts_with("general console reader") {
        let t = note.find(TRAINING)?;
        let from = note[..t].rfind(": ")? + 2;
        let head: usize = note[from..t].parse().ok()?;
        let of = note.rfind(" of ")?;
        note.ends_with(" line(s)").then(|| {
            format!(
                "{}{}{} of {lines} line(s)",
                &note[..from],
                head + training_lines,
                &note[t..of]
            )
        })
    } else {
        // `step_time_s = the step time chosen: 302542 row(s) timed`, `tokens = ...: N row(s)
        // counted`, `... the throughput is NAME = ...: N row(s)`.
        let named = note
            .strip_prefix("reading: no step time: the throughput is ")
            .unwrap_or(note);
        let name = named.split(" = ").next()?;
        let n = filled.get(name)?;
        let (before, count) = note.rsplit_once(": ")?;
        let (digits, rest) = count.split_once(' ')?;
        let counted = digits.bytes().all(|b| b.is_ascii_digit())
            && ["row(s)", "row(s) timed", "row(s) counted"].contains(&rest);
        counted.then(|| format!("{before}: {n} {rest}"))
    }
}

/// Each column's name and kind: whole numbers, numbers, words.
fn kinds(t: &Table) -> Vec<(String, u8)> {
    t.names
        .iter()
        .zip(&t.columns)
        .map(|(n, c)| {
            let kind = match c {
                Column::Numbers { integer: true, .. } => 0,
                Column::Numbers { .. } => 1,
                Column::Text(_) => 2,
            };
            (n.clone(), kind)
        })
        .collect()
}

/// Whether rows `rows` of `a` are `b`'s rows, bit for bit.
fn same_rows(a: &Table, rows: std::ops::Range<usize>, b: &Table) -> bool {
    rows.len() == b.height && a.names == b.names && a.rows(rows) == *b
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tables one after another.
    fn concat(tables: Vec<Table>) -> Table {
        let mut all = Table::default();
        for t in tables {
            if all.names.is_empty() {
                all = t;
                continue;
            }
            assert_eq!(all.names, t.names);
            for (a, b) in all.columns.iter_mut().zip(t.columns) {
                match (a, b) {
                    (Column::Numbers { values, .. }, Column::Numbers { values: more, .. }) => {
                        values.extend(more)
                    }
                    (Column::Text(words), Column::Text(more)) => words.extend(more),
                    _ => panic!("a column changed kind"),
                }
            }
            all.height += t.height;
        }
        all
    }

    /// The log read in windows of `sizes`: the tables put together, notes and warnings; `Err` where
    /// the windows stopped (why).
    fn windowed(log: &[u8], sizes: WindowSizes) -> Result<ConsoleRead, String> {
        match read_in_windows(log, None, Vec::new(), Given::default(), sizes)? {
            Streamed::Whole(read) => Ok(*read),
            Streamed::Stopped(why) => Err(why),
            Streamed::Windows(mut windows) => {
                let mut tables = Vec::new();
                while let Some(t) = windows.next_table()? {
                    tables.push(t);
                }
                let (facts, hints) = (windows.head.facts.clone(), windows.head.hints.clone());
                let marks = windows.take_marks();
                let (notes, warnings) = windows.finish();
                Ok(ConsoleRead {
                    table: concat(tables),
                    notes,
                    warnings,
                    facts,
                    hints,
                    marks,
                    ..ConsoleRead::default()
                })
            }
        }
    }

    const SMALL: WindowSizes = WindowSizes {
        head_bytes: 4096,
        window_rows: 40,
        shared_rows: 6,
        block_bytes: 1000,
    };

    /// A torchtitan log of `steps` steps, its lines timestamped to the millisecond a little over a
    /// second apart, with a checkpoint line every 100 steps.
    fn torchtitan(steps: u32) -> String {
        let mut log = String::from("[rank0]:[titan] 2026-04-18 22:15:35,952 - root - INFO - CUDA capacity: NVIDIA H100 80GB HBM3 with 79.11GiB memory\n[rank0]:[titan] 2026-04-18 22:15:36,647 - root - INFO - Trainer is initialized with local batch size 8, global batch size 64, gradient accumulation steps 1, sequence length 2048, total steps 100000 (warmup 500)\n");
        for step in 1..=steps {
            let ms = u64::from(step) * 1013 + u64::from(step % 7) * 31;
            log.push_str(&format!(
                "[rank0]:[titan] 2026-04-18 {:02}:{:02}:{:02},{:03} - root - INFO - step: {step:>5}  loss: {:7.4}  memory: 35.13GiB(44.36%)  tps: {}  tflops: 325.77  mfu: 32.94%\n",
                ms / 3_600_000 % 24,
                ms / 60_000 % 60,
                ms / 1000 % 60,
                ms % 1000,
                3.0 - f64::from(step) * 1e-3,
                6000 + step % 900,
            ));
            if step % 100 == 0 {
                log.push_str(
                    "[rank0]:[titan] 2026-04-18 00:00:00,000 - root - INFO - Saving the checkpoint (or staging if async is enabled).\n",
                );
            }
        }
        log
    }

    #[test]
    fn a_log_read_in_windows_reads_as_it_reads_whole() {
        let log = torchtitan(1200);
        let whole = super::super::read(&mut log.as_bytes(), None, &[], Given::default()).unwrap();
        for sizes in [
            SMALL,
            WindowSizes {
                window_rows: 1,
                ..SMALL
            },
            WindowSizes {
                head_bytes: 60_000,
                window_rows: 333,
                shared_rows: 25,
                block_bytes: 7000,
            },
        ] {
            let windowed = windowed(log.as_bytes(), sizes).unwrap();
            assert_eq!(windowed.table.height, 1200, "{sizes:?}");
            assert_eq!(windowed.table, whole.table, "{sizes:?}");
            // The checkpoints after every 100th step, on the rows after them (none after the last).
            assert_eq!(whole.marks.len(), 11);
            assert_eq!(windowed.marks, whole.marks, "{sizes:?}");
            assert_eq!(windowed.hints, whole.hints);
            assert_eq!(windowed.facts, whole.facts);
            assert!(
                windowed
                    .notes
                    .last()
                    .unwrap()
                    .starts_with("read in windows"),
                "{:?}",
                windowed.notes
            );
        }
        // A log no longer than its head is read whole.
        let short = windowed(
            log.as_bytes(),
            WindowSizes {
                head_bytes: 1 << 30,
                ..SMALL
            },
        )
        .unwrap();
        assert_eq!(short.table, whole.table);
        assert_eq!(short.notes, whole.notes);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 32, ..Default::default() })]
        /// Any table printed as console lines, in each layout, reads in windows of any size to the
        /// rows it reads whole, wherever its head chooses as the whole log does.
        #[test]
        fn a_table_printed_in_any_layout_reads_in_windows_as_whole(
            layout in 0..super::super::tests::LAYOUTS.len(),
            keys in proptest::collection::btree_set("k[a-z]{1,6}(_[a-z]{1,5})?", 1..5),
            seed in 0u64..1000,
            rows in 60usize..400,
            window in 1usize..50,
            band in 1usize..8,
        ) {
            let keys: Vec<String> = keys.into_iter().collect();
            let layout = super::super::tests::LAYOUTS[layout];
            let mut log = String::from("noise before the run\n");
            for i in 0..rows {
                let pairs: Vec<(String, f64)> = keys
                    .iter()
                    .enumerate()
                    .map(|(k, key)| {
                        let x = (seed + (i * 31 + k * 7) as u64) % 1000;
                        (key.clone(), x as f64 / 8.0 - 50.0)
                    })
                    .collect();
                log.push_str(&super::super::tests::print_line(layout, i as u32 + 1, &pairs));
                log.push('\n');
            }
            let whole = super::super::read(&mut log.as_bytes(), None, &[], Given::default()).unwrap();
            let sizes = WindowSizes {
                head_bytes: log.len() / 2,
                window_rows: window,
                shared_rows: band,
                block_bytes: 200,
            };
            // Where the head chooses as the whole log does (a clock to the second needs 20 s of
            // lines before it times a step), the same rows.
            match windowed(log.as_bytes(), sizes) {
                Ok(read) if read.hints == whole.hints => {
                    proptest::prop_assert_eq!(&read.table, &whole.table, "{}", layout);
                    proptest::prop_assert_eq!(&read.marks, &whole.marks, "{}", layout);
                }
                Ok(_) => {}
                // The windows stop only for a head too short, or (a clock to the second timing
                // spans of 20 lines) for bands narrower than a span.
                Err(why) => proptest::prop_assert!(
                    why.contains("fewer than")
                        || (layout == "timestamped-equals-commas"
                            && (why.contains("depend on rows further") || why.contains("spans of the clock"))),
                    "{}: {}",
                    layout,
                    why
                ),
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 128, ..Default::default() })]
        /// Any lines, in windows of any size: no panic, and where the windows read to the end, as many
        /// rows as steps were printed at most.
        #[test]
        fn any_lines_read_in_windows_without_panic(
            lines in proptest::collection::vec(
                proptest::sample::select(vec![
                    "step: 7 loss: 2.5 time: 0.5s", "step: 3 loss: 2.5", "step=9 lr=3e-4 tps=1,200",
                    "[2024-01-02 03:04:05,678] step 1, loss 2", "Epoch 3/9", "world_size: 8",
                    "Traceback (most recent call last):", "\u{1b}[31mstep: 5 mfu: 40%\u{1b}[0m",
                    "[rank1]: step: 2 loss: 1", "iteration 4/ 100 | elapsed time per iteration (ms): 500.0 |",
                    "", "x\u{ff}\u{fe}", "{'loss': 1.0, 'step': 4}", "step: nan loss: inf",
                ]),
                0..300,
            ),
            head in 1usize..3000,
            window in 1usize..40,
            band in 1usize..6,
            block in 1usize..400,
        ) {
            let log = lines.join("\n");
            let sizes = WindowSizes { head_bytes: head, window_rows: window, shared_rows: band, block_bytes: block };
            let streamed = read_in_windows(log.as_bytes(), None, Vec::new(), Given::default(), sizes);
            if let Ok(Streamed::Windows(mut windows)) = streamed {
                let mut rows = 0;
                while let Ok(Some(t)) = windows.next_table() {
                    rows += t.height;
                }
                proptest::prop_assert!(rows <= lines.len());
                let _ = windows.finish();
            }
        }
    }

    #[test]
    fn a_clock_to_the_second_times_spans_of_many_rows_alike_in_windows() {
        // Lines a little over a second apart, stamped to the second: each row's step time is its span
        // of 20 s's (docs/shapes.md). The windows start their spans where the window before ended
        // one, so the spans are the whole log's; bands narrower than a span stop the windows.
        let mut log = String::new();
        for step in 1..=3000u32 {
            let s = u64::from(step) * 1100 / 1000 + u64::from(step % 3);
            log.push_str(&format!(
                "[2025-01-02 {:02}:{:02}:{:02}] INFO step={step}, loss={:.4}, lr=0.0003\n",
                s / 3600 % 24,
                s / 60 % 60,
                s % 60,
                3.0 - f64::from(step) * 1e-4
            ));
        }
        let whole = super::super::read(&mut log.as_bytes(), None, &[], Given::default()).unwrap();
        assert!(
            whole
                .notes
                .iter()
                .any(|n| n.contains("over spans of at least")),
            "{:?}",
            whole.notes
        );
        let wide = WindowSizes {
            head_bytes: 40_000,
            window_rows: 97,
            shared_rows: 40,
            block_bytes: 3000,
        };
        let read = windowed(log.as_bytes(), wide).unwrap();
        assert_eq!(read.table, whole.table);
        let narrow = WindowSizes {
            shared_rows: 5,
            ..wide
        };
        let why = windowed(log.as_bytes(), narrow).unwrap_err();
        assert!(why.contains("spans of the clock"), "{why}");
    }

    #[test]
    fn a_relaunch_on_other_devices_after_the_head_stops_the_windows() {
        let mut log = torchtitan(400);
        let relaunch = torchtitan(300).replace("H100 80GB HBM3", "A100-SXM4-40GB");
        log.push_str(&relaunch);
        let why = windowed(log.as_bytes(), SMALL).unwrap_err();
        assert!(why.contains("differ from the head's"), "{why}");
    }

    #[test]
    fn the_corpus_reads_in_windows_as_whole_where_its_head_chooses_as_the_whole_log() {
        // Each real log of tests/data/logs cut into small windows: where the head's rows give the
        // choices the whole log gives (the same hints and facts), the same rows; else the windows stop
        // or read to the head's choices, and say so.
        let (mut same, mut stopped) = (0, 0);
        for log in super::super::tests::corpus_logs() {
            let bytes = std::fs::read(&log).unwrap();
            let Ok(whole) = super::super::read(&mut &bytes[..], None, &[], Given::default()) else {
                continue;
            };
            let sizes = WindowSizes {
                head_bytes: bytes.len() / 2,
                window_rows: 16,
                shared_rows: 4,
                block_bytes: 512,
            };
            let streamed =
                read_in_windows(&bytes[..], None, Vec::new(), Given::default(), sizes).unwrap();
            let mut windows = match streamed {
                Streamed::Windows(w) => w,
                Streamed::Stopped(why) => {
                    eprintln!("stopped {}: {why}", log.display());
                    stopped += 1;
                    continue;
                }
                Streamed::Whole(_) => continue,
            };
            let chose_alike = windows.head.hints == whole.hints
                && windows.head.facts == whole.facts
                && windows.head.table.names == whole.table.names;
            let mut tables = Vec::new();
            let read = loop {
                match windows.next_table() {
                    Ok(Some(t)) => tables.push(t),
                    Ok(None) => break Ok(()),
                    Err(why) => break Err(why),
                }
            };
            match read {
                Err(why) => {
                    eprintln!("stopped {}: {why}", log.display());
                    stopped += 1
                }
                Ok(()) if chose_alike => {
                    assert_eq!(concat(tables), whole.table, "{}", log.display());
                    assert_eq!(windows.take_marks(), whole.marks, "{}", log.display());
                    same += 1;
                }
                Ok(()) => {}
            }
        }
        eprintln!("windows: {same} logs read alike, {stopped} stopped");
        assert!(same >= 20, "{same} logs read alike, {stopped} stopped");
    }
}
