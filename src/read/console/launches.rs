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
    pub(super) fn read(
        fact_lines: &FactLines,
        chosen: usize,
        row_lines: &[usize],
        steps: &'s Steps,
        framework: Option<&'static Framework>,
        beside: &[(String, String)],
        given: Given,
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
        for FactLine {
            index,
            families,
            raw,
        } in &fact_lines.lines
        {
            if families.iter().any(|(f, _)| *f == chosen) {
                continue;
            }
            let k = launch_of_line(*index);
            region[k].read_line(raw, &format!("line {}", index + 1));
            other_text[k].push_str(raw);
            other_text[k].push('\n');
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
