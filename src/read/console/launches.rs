//! Facts per launch: a log with several launches appended (a job relaunched with `>>`, its banner or
//! configuration printed again, its step counter going back) keeps each launch's facts for that
//! launch's rows. A launch's facts are read from the lines after the previous launch's last training
//! line up to its own last; what a launch does not print again it inherits from the launches before
//! it; the configuration files beside the log and the flags apply to every launch.

use super::candidates::Steps;
use super::facts::ConfigFacts;
use super::scan::{FactLine, FactLines};
use super::vocabulary::{Fact, Framework};
use super::Given;
use crate::columns::{FactValue, RunFact};

/// The facts a log's lines gave so far, kept from window to window of a log read in windows: a window
/// of one launch reads only the lines kept since the window before (a log that prints a line of its
/// own between steps keeps 64 MiB of them, read again by every window before this).
#[derive(Default)]
pub(super) struct FactsSoFar {
    /// The lines read so far (from the first of the lines kept).
    lines: usize,
    /// What they said, before the files beside the log and the flags.
    config: Option<ConfigFacts>,
}

/// The facts of each launch, and each row's launch.
pub(super) struct Launches<'s> {
    pub(super) configs: Vec<ConfigFacts>,
    /// Each row's launch (an index into `configs`): the steps' own.
    pub(super) of_row: &'s [usize],
    /// Whether each launch has rows (a launch may print its configuration and train no step).
    has_rows: Vec<bool>,
    /// Each launch's first line (from 0), for notes.
    pub(super) first_line: Vec<usize>,
    /// The text of the lines of each launch other than training lines (for nvidia-smi tables).
    pub(super) other_text: Vec<String>,
}

impl<'s> Launches<'s> {
    /// Reads the facts of each launch of `steps` (the rows' launches; `row_lines` each row's line) from
    /// the lines kept for facts, but for the training lines of family `chosen`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn read(
        fact_lines: &FactLines,
        chosen: usize,
        row_lines: &[usize],
        steps: &'s Steps,
        framework: Option<&'static Framework>,
        beside: &[(String, String)],
        given: Given,
        so_far: Option<&mut FactsSoFar>,
    ) -> Launches<'s> {
        let count = steps.launch.iter().max().map_or(1, |m| m + 1);
        // The last line of each launch's rows: a line up to it (and after the launch before's last)
        // is the launch's.
        let mut last_line = vec![0usize; count];
        for (row, launch) in steps.launch.iter().enumerate() {
            last_line[*launch] = last_line[*launch].max(row_lines[row]);
        }
        for k in 1..count {
            last_line[k] = last_line[k].max(last_line[k - 1]);
        }
        let launch_of_line = |line: usize| {
            last_line
                .partition_point(|last| *last < line)
                .min(count - 1)
        };
        let mut region = vec![ConfigFacts::of(framework); count];
        let mut other_text = vec![String::new(); count];
        // One launch in a window of a log read in windows: every line is its, so the lines read for
        // the windows before stand (their text is not kept: nvidia-smi tables are the head's).
        let (from, so_far) = match so_far {
            Some(so_far) if count == 1 => {
                if let Some(config) = so_far.config.take() {
                    region[0] = config;
                }
                (so_far.lines.min(fact_lines.lines.len()), Some(so_far))
            }
            _ => (0, None),
        };
        for FactLine {
            index,
            families,
            raw,
        } in &fact_lines.lines[from..]
        {
            if families.iter().any(|(f, _)| *f == chosen) {
                continue;
            }
            let k = launch_of_line(*index);
            region[k].read_line(raw, &format!("line {}", index + 1));
            if so_far.is_none() {
                other_text[k].push_str(raw);
                other_text[k].push('\n');
            }
        }
        if let Some(so_far) = so_far {
            so_far.lines = fact_lines.lines.len();
            so_far.config = Some(region[0].clone());
        }
        let mut configs: Vec<ConfigFacts> = Vec::with_capacity(count);
        for mut config in region {
            if let Some(earlier) = configs.last() {
                config.inherit(earlier);
            }
            configs.push(config);
        }
        for config in &mut configs {
            for (name, body) in beside {
                config.read_text(body, &format!("{name} line"), &|_| false);
            }
            for (value, fact, flag) in [
                (given.num_devices, Fact::WorldSize, "--num-devices"),
                (given.seq_len, Fact::SeqLen, "--seq-len"),
                (
                    given.tokens_per_step,
                    Fact::TokensPerStep,
                    "--tokens-per-step",
                ),
                (
                    given.samples_per_step,
                    Fact::GlobalBatch,
                    "--samples-per-step",
                ),
            ] {
                if let Some(n) = value {
                    config.set_flag(fact, n, flag);
                }
            }
        }
        let mut first_line = vec![0usize; count];
        for k in 1..count {
            first_line[k] = last_line[k - 1] + 1;
        }
        let mut has_rows = vec![false; configs.len()];
        for k in &steps.launch {
            has_rows[*k] = true;
        }
        Launches {
            configs,
            of_row: &steps.launch,
            has_rows,
            first_line,
            other_text,
        }
    }

    /// Whether every launch with rows says so: once a launch, not once a row (a fact's lookup hashes
    /// its name, and a log has millions of rows).
    pub(super) fn every(&self, says: impl Fn(&ConfigFacts) -> bool) -> bool {
        self.configs
            .iter()
            .zip(self.with_rows())
            .all(|(config, rows)| !rows || says(config))
    }

    /// Whether each launch has rows (a launch may print its configuration and train no step).
    pub(super) fn with_rows(&self) -> &[bool] {
        &self.has_rows
    }

    /// The value each launch gives (NaN where it gives none), a row's being its launch's.
    pub(super) fn per_launch(&self, value: impl Fn(&ConfigFacts) -> Option<f64>) -> Vec<f64> {
        self.configs
            .iter()
            .map(|c| value(c).unwrap_or(f64::NAN))
            .collect()
    }

    /// The run facts of every launch: each field the launches agree on once (the first launch's, with
    /// its origin), and the fields they differ on with each row's value, for columns of their own.
    pub(super) fn run_facts(&self) -> (Vec<RunFact>, Vec<Varying>) {
        let mut launches: Vec<usize> = (self.with_rows().iter().enumerate())
            .filter_map(|(k, rows)| rows.then_some(k))
            .collect();
        if launches.is_empty() {
            launches.push(0);
        }
        let all: Vec<Vec<RunFact>> = self.configs.iter().map(ConfigFacts::run_facts).collect();
        let mut same = Vec::new();
        let mut varying = Vec::new();
        let mut fields: Vec<crate::columns::Field> = Vec::new();
        for k in &launches {
            for f in &all[*k] {
                if !fields.contains(&f.field) {
                    fields.push(f.field);
                }
            }
        }
        for field in fields {
            let of = |k: usize| all[k].iter().find(|f| f.field == field);
            let first = launches
                .iter()
                .find_map(|k| of(*k))
                .expect("a launch has it");
            let agree = launches
                .iter()
                .all(|k| of(*k).is_some_and(|f| f.value == first.value));
            if agree {
                same.push(first.clone());
                continue;
            }
            let values: Vec<Option<FactValue>> = self
                .of_row
                .iter()
                .map(|k| of(*k).map(|f| f.value.clone()))
                .collect();
            let said: Vec<String> = launches
                .iter()
                .map(|k| match of(*k) {
                    Some(f) => format!("{} ({})", f.value, f.origin),
                    None => "none".to_string(),
                })
                .collect();
            varying.push(Varying {
                field,
                values,
                said: said.join(", "),
            });
        }
        (same, varying)
    }
}

/// A fact whose launches differ: each row's value, and what each launch said.
pub(super) struct Varying {
    pub(super) field: crate::columns::Field,
    pub(super) values: Vec<Option<FactValue>>,
    pub(super) said: String,
}

/// A launch that logged no training step: its first line (from 0), and the rows logged before it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct LaunchWithoutSteps {
    pub(super) line: usize,
    pub(super) rows_before: usize,
}

/// Launches that logged no training step (a launch that died at start-up, found no device, or was
/// killed before its first step), told by the line each launch prints first: the log's first line with
/// a word in it (its banner, command or configuration, its timestamp aside), printed again where each
/// later launch starts. A stretch from one such line to the next (or to the end) without a training line
/// of its own (a line or two of the launch before, printed late, aside) that shows the launch ended is a
/// launch without steps. Copies of the line that follow one another closely are one launch's (every rank
/// printing the banner): fewer than three lines apart, or less than a second apart where both have a
/// timestamp. `row_lines` is each row's line, in order, and `launch_of_row` each row's launch by its steps
/// and restart lines.
pub(super) fn without_steps(
    fact_lines: &FactLines,
    row_lines: &[usize],
    launch_of_row: &[usize],
) -> Vec<LaunchWithoutSteps> {
    let first_row_line = row_lines.first().copied().unwrap_or(usize::MAX);
    // The text of a line with its timestamp and tags taken off, and its wall time.
    let banner_of = |raw: &str| {
        super::clean::clean(raw)
            .into_iter()
            .next()
            .map(|c| (c.text.trim().to_string(), c.wall_time))
    };
    // The first line with a word in it (not a rule of `=`), unless it is part of a traceback or an
    // error (a launch's own first line is not).
    let Some(first) = fact_lines
        .lines
        .iter()
        .take_while(|l| l.index < first_row_line)
        .find(|l| l.raw.chars().filter(char::is_ascii_alphanumeric).count() >= 3)
    else {
        return Vec::new();
    };
    if first.raw.starts_with(char::is_whitespace)
        || first.raw.contains("Traceback")
        || first.raw.contains("Error")
    {
        return Vec::new();
    }
    let Some((banner, _)) = banner_of(&first.raw) else {
        return Vec::new();
    };
    if banner.chars().filter(char::is_ascii_alphanumeric).count() < 3 {
        return Vec::new();
    }
    let mut starts: Vec<(usize, Option<f64>)> = Vec::new();
    for line in &fact_lines.lines {
        // A cheap test before cleaning the line.
        if !line.raw.contains(banner.as_str()) {
            continue;
        }
        let Some((text, wall)) = banner_of(&line.raw) else {
            continue;
        };
        if text != banner {
            continue;
        }
        let close = starts.last().is_some_and(|(at, before)| {
            line.index < at + 3
                || matches!((before, wall), (Some(b), Some(w)) if (w - b).abs() < 1.0)
        });
        if !close {
            starts.push((line.index, wall));
        }
    }
    // A stretch of the log with no training line is a launch only where the log shows it ended: an
    // error or a kill in it, or the log silent for a while before the next launch (a launch that hung or
    // was killed without a word). Else the line is printed again for another reason: by the launcher and
    // then by each worker it starts, or after the run (a shell prompt, a closing banner).
    let lines = &fact_lines.lines;
    let at = |line: usize| lines.partition_point(|l| l.index < line);
    let wall = |l: &FactLine| banner_of(&l.raw).and_then(|(_, w)| w);
    let mut out = Vec::new();
    for (k, (line, _)) in starts.iter().enumerate() {
        let end = starts.get(k + 1).map_or(usize::MAX, |(next, _)| *next);
        let rows_before = row_lines.partition_point(|l| l < line);
        let rows_in = row_lines.partition_point(|l| *l < end) - rows_before;
        // A line or two of the launch before, printed late (its process still running while the next
        // launch starts: the same launch by its steps, no restart between), is not this launch's.
        let late = rows_in <= 2
            && rows_before > 0
            && (rows_before..rows_before + rows_in)
                .all(|r| launch_of_row.get(r) == launch_of_row.get(rows_before - 1));
        if rows_in > 0 && !late {
            continue;
        }
        let region = &lines[at(*line)..at(end)];
        let failed = region
            .iter()
            .any(|l| ENDINGS.iter().any(|word| l.raw.contains(word)));
        let silent = end != usize::MAX && {
            let last = region.iter().rev().find_map(wall);
            let next = lines[at(end)..].iter().take(16).find_map(wall);
            matches!((last, next), (Some(a), Some(b)) if b - a >= SILENT_BEFORE_RELAUNCH_S)
        };
        if failed || silent {
            // After the launch before's late lines, if any.
            out.push(LaunchWithoutSteps {
                line: *line,
                rows_before: rows_before + rows_in,
            });
        }
    }
    out
}

/// Words of a line that tells a launch ended badly.
const ENDINGS: [&str; 7] = [
    "Traceback",
    "Error",
    "Killed",
    "SIGTERM",
    "SIGKILL",
    "exitcode",
    "Aborted",
];

/// Seconds the log is silent before a launch's line is printed again, after a stretch with no training
/// line, for that stretch to be a launch that hung or was killed without a word (a retry wrapper waits
/// 30 s; a launcher's workers print the line it printed within seconds).
const SILENT_BEFORE_RELAUNCH_S: f64 = 30.0;
