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
pub(super) struct Chosen {
    pub(super) table: Table,
    /// The unit written against each column's values.
    pub(super) units: Vec<(String, String)>,
    pub(super) notes: Vec<String>,
    pub(super) warnings: Vec<String>,
    pub(super) marks: Vec<(usize, Mark)>,
    /// The lines kept for facts, and the family whose training lines among them gave the rows
    /// (`usize::MAX`: none, the rows are a summary's).
    pub(super) fact_lines: FactLines,
    pub(super) chosen: usize,
    /// The line (from 0) each row was read from.
    pub(super) row_lines: Vec<usize>,
}

/// Chooses the family that gives the rows of a log's pass (`merged`; `ends_with_newline` says whether
/// the log's last line is whole).
pub(super) fn choose(
    merged: Merged,
    framework: Option<&Framework>,
    ends_with_newline: bool,
) -> Result<Chosen, String> {
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
    let mut warnings = Vec::new();
    // A last line cut mid-way: the file does not end in a newline and its last training line has
    // fewer values than the family usually has.
    if !ends_with_newline && rows.height() > 0 {
        let last_line = total_lines.saturating_sub(1);
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
    // Repeats of one step in a row (several ranks writing the same line without a tag) count once.
    if rows.repeats > 0 {
        notes.push(format!(
            "{} repeated line(s) of one step counted once",
            rows.repeats
        ));
    }
    if rows.bare > 0 {
        notes.push(format!(
            "{} line(s) with the step key '{}' and no other number not read as steps (such as 'Saving a checkpoint at step 500')",
            rows.bare, family.0
        ));
    }
    if too_long > 0 {
        notes.push(format!(
            "{too_long} line(s) longer than {} MiB not read",
            LONGEST_LINE >> 20
        ));
    }
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
    let restarts = marks.iter().filter(|(_, m)| *m == Mark::Restart).count();
    if restarts > 0 {
        notes.push(format!(
            "{restarts} row(s) after a restart line (such as 'Training starts at step N') start an attempt"
        ));
    }
    let row_lines = rows.lines.clone();
    let (table, text_in_numbers) = rows.table();
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
        fact_lines,
        chosen,
        row_lines,
    })
}
