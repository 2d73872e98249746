//! The families stage: of the families of training lines a pass found, the one that gives the rows
//! (lines that carry a time or a rate first, then the most lines), one rank's lines of it, and what
//! the other families and the log's other lines say happened before some rows (evaluations,
//! relaunches, checkpoints). HF Trainer's console, whose only family is its progress bar, is read by
//! its run summary instead ([`super::summary`]).

use super::blocks::Merged;
use super::rows::{FamilyRows, Table};
use super::scan::{FactLines, LONGEST_LINE};
use super::summary::{run_summary, summary_row};
use super::vocabulary::Framework;
use crate::goodput::Mark;

/// The rows of the family chosen, and what the reading stage needs besides them.
pub(super) struct Chosen<'f> {
    pub(super) table: Table,
    /// The unit written against each column's values.
    pub(super) units: Vec<(String, String)>,
    pub(super) notes: Vec<String>,
    pub(super) warnings: Vec<String>,
    pub(super) marks: Vec<(usize, Mark)>,
    /// The lines kept for facts, and the family whose training lines among them gave the rows
    /// (`usize::MAX`: none, the rows are a summary's).
    pub(super) fact_lines: std::borrow::Cow<'f, FactLines>,
    pub(super) chosen: usize,
    /// The line (from 0) each row was read from.
    pub(super) row_lines: Vec<usize>,
    /// The family chosen, and the rank whose lines are its rows (`None`: every line's).
    pub(super) family: (String, bool),
    pub(super) rank: Option<u32>,
}

/// Chooses the family that gives the rows of a log's pass (`merged`; `ends_with_newline` says whether
/// the log's last line is whole).
pub(super) fn choose(
    merged: Merged,
    framework: Option<&Framework>,
    ends_with_newline: bool,
) -> Result<Chosen<'static>, String> {
    let Merged {
        mut families,
        by_rank,
        facts: fact_lines,
        lines: total_lines,
        too_long,
        mark_lines,
        ..
    } = merged;
    // One rank's lines: the rank that wrote the most of them (Megatron logs from its last rank).
    let rank = (by_rank.len() > 1).then(|| {
        by_rank
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map(|(rank, _)| *rank)
            .expect("not empty")
    });
    let kept = |r: &Option<u32>| rank.is_none() || r.is_none() || *r == rank;
    let other_ranks: usize = by_rank
        .iter()
        .filter(|(r, _)| rank.is_some_and(|k| **r != k))
        .map(|(_, n)| n)
        .sum();
    // Families by how they rank: lines that carry a time or a rate first, then the most lines (with
    // a number besides the step, of the rank kept), then the first seen.
    let count = |f: &FamilyRows, counted: bool| -> usize {
        f.rows_by_rank
            .iter()
            .filter(|(r, _)| kept(r))
            .map(|(_, (all, with_numbers))| if counted { *with_numbers } else { *all })
            .sum()
    };
    let mut best: Option<usize> = None;
    let mut summary_note: Option<String> = None;
    // A family with no step counter ranks below every family with one; a progress bar's family (its
    // counter, elapsed time and smoothed rate) below any other family that carries a time or a rate:
    // a bar beside a trainer's metric lines is their clock, not their rows.
    let rank_of = |f: &FamilyRows| {
        (
            f.family.0 != super::scan::STEPLESS,
            f.timed,
            f.family.0 != "progress",
            count(f, true),
        )
    };
    for (i, f) in families.iter().enumerate() {
        if f.family.1 || count(f, true) == 0 {
            continue;
        }
        if best.is_none_or(|b| rank_of(f) > rank_of(&families[b])) {
            best = Some(i);
        }
    }
    // HF Trainer's console: its loss dicts carry no step, and a tqdm bar's family (its smoothed `s/it`)
    // is no step time; its summary line gives the run's mean instead, as one row.
    let tqdm_only = best.is_none_or(|b| {
        families[b].family.0 == "progress" || families[b].family.0 == super::scan::STEPLESS
    });
    if let Some((line, summary)) = tqdm_only.then(|| run_summary(&fact_lines.lines)).flatten() {
        let progress = families.iter().find(|f| f.family.0 == "progress");
        if let Some(rows) = summary_row(line, &summary, progress) {
            let discarded = best.map(|b| count(&families[b], false)).unwrap_or(0);
            families.clear();
            families.push(rows);
            best = Some(0);
            summary_note = Some(format!(
                "one row for the whole run from its summary (line {}): step_time_s = train_runtime / the steps{}",
                line + 1,
                if discarded > 0 {
                    format!("; {discarded} progress-bar line(s) not used (their s/it is smoothed)")
                } else {
                    String::new()
                }
            ));
        }
    }
    let Some(best) = best else {
        return Err(if families.iter().all(|f| count(f, true) == 0) {
            "no line with a step counter and named numbers (such as 'step: 10  loss: 2.1  step_time: 0.5'); give --line-regex with named groups".into()
        } else {
            "only evaluation lines have a step counter: nothing to read as training steps".into()
        });
    };
    let no_summary_note = (tqdm_only && summary_note.is_none()).then(|| {
        "no run summary (train_runtime) in the log: the rows are the progress bar's, whose s/it is a smoothed rate, not each step's own time".to_string()
    });
    // The summary's row is no line's: every other line is read for facts.
    let chosen = if summary_note.is_some() {
        usize::MAX
    } else {
        best
    };
    let mut rows = families.swap_remove(best);
    let family = rows.family.clone();
    // Evaluation lines, for the pauses they explain (`mfu goodput`).
    let mut mark_lines = mark_lines;
    for f in families.iter().filter(|f| f.family.1) {
        mark_lines.extend(f.lines.iter().map(|l| (*l, Mark::Evaluation)));
    }
    mark_lines.sort_unstable_by_key(|(line, _)| *line);
    let kept_out: usize = families.iter().map(|f| count(f, false)).sum();
    let evaluation: usize = families
        .iter()
        .filter(|f| f.family.1)
        .map(|f| count(f, false))
        .sum();
    drop(families);
    if rank.is_some() {
        let keep: Vec<bool> = rows.ranks.iter().map(kept).collect();
        rows.retain(&keep);
    }
    let mut notes = vec![format!(
        "general console reader{}: {} training line(s) with step key '{}' of {total_lines} line(s)",
        framework
            .map(|f| format!(" (framework: {})", f.name))
            .unwrap_or_default(),
        rows.height() + rows.repeats,
        family.0
    )];
    if let Some(f) = framework.and_then(|f| f.notes.as_ref()) {
        notes.push(f.clone());
    }
    notes.extend(summary_note);
    notes.extend(no_summary_note);
    if kept_out > 0 {
        notes.push(format!(
            "{kept_out} line(s) of other families kept out of the rows ({evaluation} evaluation)"
        ));
    }
    if other_ranks > 0 {
        notes.push(format!(
            "{other_ranks} training line(s) of other ranks left out (one rank's lines are the run's)"
        ));
    }
    let (repeats, bare) = (rows.repeats, rows.bare);
    let last_line = (!ends_with_newline).then(|| total_lines.saturating_sub(1));
    let Finished {
        table,
        units,
        marks,
        row_lines,
        warnings,
        again,
        text_in_numbers,
    } = finish(rows, &family.0, &mark_lines, last_line);
    if again > 0 {
        notes.push(format!(
            "{again} line(s) of a step already read, with no time between (other ranks' lines without a rank tag, or a progress bar drawn again), left out: a step is one row"
        ));
    }
    // Repeats of one step in a row (several ranks writing the same line without a tag) count once.
    if repeats > 0 {
        notes.push(format!(
            "{repeats} repeated line(s) of one step counted once"
        ));
    }
    if bare > 0 {
        notes.push(format!(
            "{bare} line(s) with the step key '{}' and no other number not read as steps (such as 'Saving a checkpoint at step 500')",
            family.0
        ));
    }
    if too_long > 0 {
        notes.push(format!(
            "{too_long} line(s) longer than {} MiB not read",
            LONGEST_LINE >> 20
        ));
    }
    let restarts = marks.iter().filter(|(_, m)| *m == Mark::Restart).count();
    if restarts > 0 {
        notes.push(format!(
            "{restarts} row(s) after a restart line (such as 'Training starts at step N') start an attempt"
        ));
    }
    if text_in_numbers > 0 {
        notes.push(format!(
            "{text_in_numbers} value(s) that are words in columns of numbers (such as 'n/a') read as empty"
        ));
    }
    Ok(Chosen {
        table,
        units,
        notes,
        warnings,
        marks,
        fact_lines: std::borrow::Cow::Owned(fact_lines),
        chosen,
        row_lines,
        family,
        rank,
    })
}

/// A family's rows made a table, and what they say besides.
pub(super) struct Finished {
    pub(super) table: Table,
    pub(super) units: Vec<(String, String)>,
    pub(super) marks: Vec<(usize, Mark)>,
    pub(super) row_lines: Vec<usize>,
    pub(super) warnings: Vec<String>,
    /// Rows left out as lines of a step already read.
    pub(super) again: usize,
    /// Words read as empty in columns of numbers.
    pub(super) text_in_numbers: usize,
}

/// The rows of the family chosen (one rank's already) as a table: a last line cut mid-way left out
/// (`last_line`: the log's last line, where it does not end in a newline), the lines of a step read
/// again left out, and what the marked lines (`mark_lines`, in order) say happened before each row.
pub(super) fn finish(
    mut rows: FamilyRows,
    step_key: &str,
    mark_lines: &[(usize, Mark)],
    last_line: Option<usize>,
) -> Finished {
    let mut warnings = Vec::new();
    // A last line cut mid-way: the file does not end in a newline and its last training line has
    // fewer values than the family usually has.
    if let (Some(last_line), true) = (last_line, rows.height() > 0) {
        let last = rows.height() - 1;
        let mut sizes = rows.sizes.clone();
        sizes.sort_unstable();
        let usual = sizes[sizes.len() / 2];
        if rows.lines[last] == last_line && rows.sizes[last] < usual {
            warnings.push(format!(
                "the last line ({}) is cut mid-way ({} of {usual} values): left out",
                last_line + 1,
                rows.sizes[last]
            ));
            let mut keep = vec![true; rows.height()];
            keep[last] = false;
            rows.retain(&keep);
        }
    }
    let again = lines_of_a_step_read_again(&mut rows, step_key);
    // The unit written against each column's values, for the columns that are times.
    let units: Vec<(String, String)> = rows
        .names
        .iter()
        .zip(&rows.columns)
        .map(|(n, c)| (n.clone(), c.unit.clone()))
        .collect();
    // The rows a marked line comes before: one after a row, before the next (each kind once a row).
    let mut marks: Vec<(usize, Mark)> = Vec::new();
    let mut pending = mark_lines.iter().peekable();
    for (row, line) in rows.lines.iter().enumerate() {
        while let Some((_, mark)) = pending.next_if(|(m, _)| m < line) {
            if row > 0 && !marks.contains(&(row, *mark)) {
                marks.push((row, *mark));
            }
        }
    }
    let row_lines = rows.lines.clone();
    let (table, text_in_numbers) = rows.table();
    Finished {
        table,
        units,
        marks,
        row_lines,
        warnings,
        again,
        text_in_numbers,
    }
}

/// Leaves out the rows that give again a step the row before gave, with no time between them: several
/// ranks printing their own values of one step without a rank tag (MLPerf's Mask R-CNN: eight lines of
/// `iter: 50`, one of them timestamped), or a progress bar drawn again after a block of other lines at
/// the same elapsed time. No time between is: line timestamps under a second apart where both rows have
/// one, else the same elapsed time where a column counts it, else at most two other lines between (a
/// relaunch prints more before its first step). Of each
/// such run of rows, the first with a timestamp is kept (else the first). A step printed again after
/// time passed is a relaunch that redid it, and stays. Gives the rows left out.
fn lines_of_a_step_read_again(rows: &mut FamilyRows, step_key: &str) -> usize {
    let Some(&step) = rows.column_of.get(step_key) else {
        return 0;
    };
    let n = rows.height();
    let elapsed: Vec<usize> = (0..rows.names.len())
        .filter(|&c| c != step && rows.names[c].to_ascii_lowercase().contains("elapsed"))
        .collect();
    let stamped = |r: usize| !rows.wall_times[r].is_nan();
    let no_time_between = |a: usize, b: usize| {
        if stamped(a) && stamped(b) {
            return (rows.wall_times[b] - rows.wall_times[a]).abs() < 1.0;
        }
        let clock = elapsed.iter().find(|&&c| {
            !rows.columns[c].numbers[a].is_nan() && !rows.columns[c].numbers[b].is_nan()
        });
        match clock {
            Some(&c) => rows.columns[c].numbers[a] == rows.columns[c].numbers[b],
            // A relaunch prints its banner, configuration and start-up lines before its first step;
            // rank lines and a repeat of one (counted once above) come within a line or two.
            None => rows.lines[b] <= rows.lines[a] + 3,
        }
    };
    let steps = &rows.columns[step].numbers;
    let mut keep = vec![true; n];
    let mut start = 0;
    while start < n {
        // The run of rows from `start` that give its step again, each with no time since the one before.
        let mut end = start + 1;
        while end < n
            && !steps[start].is_nan()
            && steps[end] == steps[start]
            && no_time_between(end - 1, end)
        {
            end += 1;
        }
        if end - start > 1 {
            let chosen = (start..end).find(|&r| stamped(r)).unwrap_or(start);
            for (r, k) in keep.iter_mut().enumerate().take(end).skip(start) {
                *k = r == chosen;
            }
        }
        start = end;
    }
    let left_out = keep.iter().filter(|k| !**k).count();
    if left_out > 0 {
        rows.retain(&keep);
    }
    left_out
}
