//! Console logs of any trainer, read by one general reader with what frameworks differ in kept as data.
//!
//! Every line is cleaned ([`clean`]: colour codes, rank and launcher tags, a leading timestamp kept as
//! `wall_time`, glued lines split) and read for named values ([`pairs`]). A line with a step counter and
//! other numbers is a training-line candidate; its *family* is its step key and whether it is an
//! evaluation line. The largest training family gives the rows, one column per key as printed
//! (`timing_s/step`, `elapsed time per iteration (ms)`, a unit written against the values added in
//! parentheses: `time (ms)`, `mfu (%)`); the lines of other families are counted and kept out.
//! Indented one-value lines after a step header are that step's (OLMo, Composer).
//!
//! What the keys mean is data ([`vocabulary`], `frameworks.toml`): which column is the step time, the
//! step's tokens, a global or per-device token or sample rate, the framework's own MFU. From that and the
//! configuration printed in or beside the log ([`facts`]) the reader derives what the rows lack: a step
//! time from tokens over a rate (torchtitan's `tps`), tokens from a rate times the step time (llm.c's
//! `tok/s`, DeepSpeed's samples/s), tokens from the global batch and sequence length (Megatron); each
//! derivation is a note for `-v`. The column stage then maps columns by the roles found here (hints),
//! before its own aliases.

pub mod clean;
mod digest;
pub mod facts;
pub mod pairs;
pub mod template;
pub mod vocabulary;

use std::collections::HashMap;

use crate::columns::{ColumnHint, Field, RunFact, TimeUnit};
use crate::goodput::Mark;
use pairs::{Pair, Value};
use vocabulary::{normalise, vocabulary, Fact, Framework, Role};

/// What the reader made of a console log.
#[derive(Debug, Default)]
pub struct ConsoleRead {
    pub table: Table,
    pub notes: Vec<String>,
    pub warnings: Vec<String>,
    pub facts: Vec<RunFact>,
    pub model: Option<crate::flops::ModelConfig>,
    pub hints: Vec<ColumnHint>,
    pub framework: Option<String>,
    /// What the log's other lines say happened before some rows, sorted by row: a relaunch (`Training
    /// starts at step N`), an evaluation (an evaluation family's line), a checkpoint (`Saving the
    /// checkpoint`).
    pub marks: Vec<(usize, Mark)>,
}

/// A candidate training line (with its continuation lines), borrowing from the log's text.
#[derive(Debug)]
struct Record<'t> {
    /// Index (from 0) of the line it starts on.
    line: usize,
    wall_time: Option<f64>,
    rank: Option<u32>,
    pairs: Vec<Pair<'t>>,
    family: (String, bool),
    /// Its numbers other than the step.
    numbers: usize,
    /// Whether it carries a time or a rate.
    timed: bool,
    /// The digest of its pairs ([`digest`]).
    digest: u64,
}

/// What the vocabulary says of each key, worked out once per distinct key rather than once per line.
#[derive(Default)]
struct Keys {
    /// Raw key → its normalised form, whether it is a step counter, and whether it carries a time or
    /// a rate.
    known: FastMap<String, Known>,
}

struct Known {
    normal: String,
    step: bool,
    timed: bool,
}

impl Keys {
    fn of(&mut self, pair: &Pair<'_>, framework: Option<&Framework>) -> &Known {
        if !self.known.contains_key(pair.key.as_ref()) {
            let vocab = vocabulary();
            let normal = normalise(&pair.key);
            let timed = matches!(
                vocab.role(
                    &normalise(&column_name(&pair.key, pair.value.unit())),
                    framework
                ),
                Some(
                    Role::StepTime
                        | Role::Elapsed
                        | Role::TokensPerSecond
                        | Role::TokensPerSecondPerDevice
                        | Role::SamplesPerSecond
                        | Role::SamplesPerSecondPerDevice
                        | Role::StepsPerSecond
                )
            );
            let step = vocab.role(&normal, framework) == Some(Role::Step);
            self.known.insert(
                pair.key.to_string(),
                Known {
                    normal,
                    step,
                    timed,
                },
            );
        }
        &self.known[pair.key.as_ref()]
    }
}

/// Whether `haystack` holds `needle` (ASCII, any case).
fn contains_ignore_case(haystack: &str, needle: &str) -> bool {
    let (h, n) = (haystack.as_bytes(), needle.as_bytes());
    let Some(&first) = n.first() else {
        return true;
    };
    memchr::memchr2_iter(first.to_ascii_lowercase(), first.to_ascii_uppercase(), h).any(|at| {
        h.get(at..at + n.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(n))
    })
}

/// Whether a key (normalised) or the text says the line is an evaluation's.
fn is_evaluation(
    text: &str,
    pairs: &[Pair],
    keys: &mut Keys,
    framework: Option<&Framework>,
) -> bool {
    let head: &str = text.split(['|', ',']).next().unwrap_or("");
    // A field that is only the phase's name: fairseq's `... | INFO | valid | epoch 143 | ...`.
    let phase_field = |field: &str| {
        ["valid", "validation", "eval", "evaluation", "test"]
            .iter()
            .any(|w| field.trim().eq_ignore_ascii_case(w))
    };
    contains_ignore_case(head, "validat")
        || contains_ignore_case(head, "eval")
        || text.split('|').any(phase_field)
        || pairs.iter().any(|p| {
            let k = keys.of(p, framework).normal.as_str();
            k.starts_with("val_")
                || k.starts_with("eval")
                || k.starts_with("validation")
                || k.starts_with("test_")
                || (k.starts_with("val") && k.len() > 3 && !k.as_bytes()[3].is_ascii_alphabetic())
        })
}

/// The step key of a line's pairs: the first numeric pair whose key is a step counter.
fn step_key(pairs: &[Pair], keys: &mut Keys, framework: Option<&Framework>) -> Option<String> {
    pairs.iter().find_map(|p| {
        if !p.value.number().is_some_and(|n| n.is_finite() && n >= 0.0) {
            return None;
        }
        let known = keys.of(p, framework);
        if known.step {
            return Some(known.normal.clone());
        }
        // `validate step: 20`, `eval step 3`: an evaluation's step counter.
        let k = known.normal.as_str();
        let (first, last) = (k.split('_').next()?, k.rsplit('_').next()?);
        (k.contains('_')
            && [
                "val",
                "validate",
                "validation",
                "eval",
                "evaluate",
                "evaluation",
                "test",
            ]
            .contains(&first)
            && vocabulary().role(last, framework) == Some(Role::Step))
        .then(|| last.to_string())
    })
}

/// What makes a cleaned line a training line: its step key (the family's), whether it is an
/// evaluation's (a tag said so, or its text or keys do), its numbers besides the step, and whether it
/// carries a time or a rate; `None` for a line with no step counter.
fn training_line(
    text: &str,
    evaluation_tag: bool,
    pairs: &[Pair<'_>],
    keys: &mut Keys,
    framework: Option<&Framework>,
) -> Option<(String, bool, usize, bool)> {
    let key = step_key(pairs, keys, framework)?;
    let eval = evaluation_tag || is_evaluation(text, pairs, keys, framework);
    let (mut numbers, mut timed) = (0, false);
    for p in pairs {
        let known = keys.of(p, framework);
        numbers += usize::from(p.value.number().is_some() && known.normal != key);
        timed |= known.timed;
    }
    Some((key, eval, numbers, timed))
}

impl<'t> Record<'t> {
    /// Takes an indented one-value line (`text`, its `pair`) after the record's header as the record's.
    fn continue_with(&mut self, pair: Pair<'t>, keys: &mut Keys, framework: Option<&Framework>) {
        let known = keys.of(&pair, framework);
        self.numbers += usize::from(pair.value.number().is_some() && known.normal != self.family.0);
        self.timed |= known.timed;
        self.digest = digest::pair(self.digest, &pair);
        self.pairs.push(pair);
    }
}

/// Scans `text` for candidate training lines, handing each (with its continuation lines) to `found`,
/// which says whether to go on.
fn scan<'t>(
    text: &'t str,
    framework: Option<&Framework>,
    mut found: impl FnMut(Record<'t>) -> bool,
) {
    let mut keys = Keys::default();
    // A header's continuation lines are taken while they follow it directly.
    let mut open: Option<Record<'t>> = None;
    for (index, raw) in text.lines().enumerate() {
        if raw.len() > 1 << 20 {
            if open.take().is_some_and(|r| !found(r)) {
                return;
            }
            continue;
        }
        for line in clean::clean(raw) {
            // A line cleaning left whole is read in place; one it rewrote (colour codes taken out)
            // gives pairs that own their text.
            let separators = framework.map_or(&[][..], |f| f.separators.as_slice());
            let pairs: Vec<Pair<'t>> = match &line.text {
                std::borrow::Cow::Borrowed(t) => pairs::pairs_with(t, separators),
                std::borrow::Cow::Owned(t) => pairs::pairs_with(t, separators)
                    .into_iter()
                    .map(Pair::into_owned)
                    .collect(),
            };
            if let Some((key, eval, numbers, timed)) =
                training_line(&line.text, line.evaluation, &pairs, &mut keys, framework)
            {
                let record = Record {
                    line: index,
                    wall_time: line.wall_time,
                    rank: line.rank,
                    digest: digest::pairs(&pairs),
                    pairs,
                    family: (key, eval),
                    numbers,
                    timed,
                };
                if open.replace(record).is_some_and(|r| !found(r)) {
                    return;
                }
                continue;
            }
            match open.as_mut() {
                Some(record) if line.indented && pairs.len() == 1 => {
                    let pair = pairs.into_iter().next().expect("one pair");
                    record.continue_with(pair, &mut keys, framework);
                }
                _ => {
                    if open.take().is_some_and(|r| !found(r)) {
                        return;
                    }
                }
            }
        }
    }
    if let Some(r) = open {
        found(r);
    }
}

/// The fast hash map the peak matcher uses too (SipHash took a twentieth of this reader's time on a
/// torchtitan log: its maps of a log's own field names are looked up several times a line).
type FastMap<K, V> = polars::prelude::PlHashMap<K, V>;

/// A column as it is built: numbers and words side by side until the end says which it is.
#[derive(Debug, Default)]
struct Building {
    /// [`NONE`] where a row has no number.
    numbers: Vec<f64>,
    /// The words, by row: most columns have none, so they are kept apart from the numbers.
    words: Vec<(usize, String)>,
    /// The last row written to: a key twice on one line keeps the line's first.
    written: Option<usize>,
    any_number: bool,
    /// Every number whole (the step counter is an integer column then).
    whole: bool,
    /// The unit written against its first number.
    unit: String,
    /// Whether an `N/M` value gives its `M` (a framework's `totals`).
    total: bool,
}

/// One family's rows as they are read, and what choosing among families and cleaning up after need.
#[derive(Debug)]
struct FamilyRows {
    family: (String, bool),
    /// The framework's keys whose `N/M` value gives its `M`.
    totals: Vec<String>,
    timed: bool,
    /// Rows by rank, all, and those with a number besides the step (which rank the family).
    rows_by_rank: FastMap<Option<u32>, (usize, usize)>,
    names: Vec<String>,
    columns: Vec<Building>,
    at: FastMap<String, usize>,
    column_of: FastMap<String, usize>,
    lines: Vec<usize>,
    ranks: Vec<Option<u32>>,
    sizes: Vec<usize>,
    /// [`NONE`] where a line has no timestamp.
    wall_times: Vec<f64>,
    /// A digest of each rank's previous row: a line repeated verbatim is one step.
    previous: FastMap<Option<u32>, u64>,
    /// Each rank's first row and its digest (a block's first row may repeat the block before's last).
    first: FastMap<Option<u32>, (usize, u64)>,
    repeats: usize,
    /// Lines with the family's step key and no other number, not rows.
    bare: usize,
    words_among_numbers: usize,
}

impl FamilyRows {
    fn new(family: (String, bool), totals: Vec<String>) -> FamilyRows {
        FamilyRows {
            family,
            totals,
            timed: false,
            rows_by_rank: FastMap::default(),
            names: Vec::new(),
            columns: Vec::new(),
            at: FastMap::default(),
            column_of: FastMap::default(),
            lines: Vec::new(),
            ranks: Vec::new(),
            sizes: Vec::new(),
            wall_times: Vec::new(),
            previous: FastMap::default(),
            first: FastMap::default(),
            repeats: 0,
            bare: 0,
            words_among_numbers: 0,
        }
    }

    fn height(&self) -> usize {
        self.lines.len()
    }

    /// Starts a row (with `size` values, `numbers` of them numbers besides the step), unless it repeats
    /// the rank's previous row (its `digest`): the row's index then.
    fn begin_row(
        &mut self,
        line: usize,
        rank: Option<u32>,
        wall_time: Option<f64>,
        (size, numbers, timed): (usize, usize, bool),
        digest: u64,
    ) -> Option<usize> {
        let counts = self.rows_by_rank.entry(rank).or_default();
        counts.0 += 1;
        counts.1 += usize::from(numbers >= 1);
        if numbers >= 1 {
            self.timed |= timed;
        } else {
            // The step key and no other number (`Saving a full checkpoint at last step, step 12500.`):
            // a message about a step, not a step's row.
            self.bare += 1;
            return None;
        }
        if self.previous.insert(rank, digest) == Some(digest) {
            self.repeats += 1;
            return None;
        }
        let row = self.height();
        self.first.entry(rank).or_insert((row, digest));
        self.lines.push(line);
        self.ranks.push(rank);
        self.sizes.push(size);
        self.wall_times.push(wall_time.unwrap_or(NONE));
        for column in &mut self.columns {
            column.numbers.push(NONE);
        }
        Some(row)
    }

    /// The column of a key (its name with the unit of the key's first number), made at `row` if new.
    fn column(&mut self, key: &str, unit: &str, row: usize) -> usize {
        if let Some(c) = self.column_of.get(key) {
            return *c;
        }
        let name = column_name(key, if scale(unit).is_some() { "" } else { unit });
        let c = match self.at.get(&name) {
            Some(c) => *c,
            None => {
                self.names.push(name.clone());
                let total = self.totals.contains(&normalise(key));
                self.columns.push(Building {
                    numbers: vec![NONE; row + 1],
                    whole: true,
                    total,
                    ..Building::default()
                });
                self.at.insert(name, self.columns.len() - 1);
                self.columns.len() - 1
            }
        };
        self.column_of.insert(key.to_string(), c);
        c
    }

    /// Writes a value at `row` of `column`, unless the row has one there (a key twice on one line: the
    /// first is the line's).
    fn set(
        &mut self,
        row: usize,
        column: usize,
        value: &Value<'_>,
        new: Option<(f64, Option<f64>)>,
    ) {
        let building = &mut self.columns[column];
        if building.written == Some(row) {
            return;
        }
        building.written = Some(row);
        match value {
            Value::Number { value, unit, total } => {
                let (value, total) = new.unwrap_or((*value, *total));
                let value = match total {
                    Some(t) if building.total => t,
                    _ => value,
                };
                let v = value * scale(unit).unwrap_or(1.0);
                if !building.any_number {
                    building.unit = unit.to_string();
                }
                building.any_number = true;
                building.whole = building.whole && v.fract() == 0.0 && v.abs() < 9e15;
                building.numbers[row] = if v.is_finite() { v } else { NONE };
            }
            Value::Text(t) => building.words.push((row, t.to_string())),
        }
    }

    /// Adds a record's row: a column per key.
    fn push(&mut self, record: Record<'_>) {
        let shape = (record.pairs.len(), record.numbers, record.timed);
        let Some(row) = self.begin_row(
            record.line,
            record.rank,
            record.wall_time,
            shape,
            record.digest,
        ) else {
            return;
        };
        for p in &record.pairs {
            let column = self.column(&p.key, p.value.unit(), row);
            self.set(row, column, &p.value, None);
        }
    }

    /// Adds the row of a line read through a template (`columns`: each pair's column here).
    fn push_read(&mut self, read: &FastRecord, template: &TemplateOf) {
        let values = &read.values;
        let shape = (
            template.template.pairs.len(),
            template.numbers,
            template.timed,
        );
        let Some(row) = self.begin_row(read.line, read.rank, read.wall_time, shape, read.digest)
        else {
            return;
        };
        for ((p, column), value) in template
            .template
            .pairs
            .iter()
            .zip(&template.columns)
            .zip(values)
        {
            self.set(row, *column, &p.value, *value);
        }
    }

    /// Adds the rows `later` read from the block after this family's (its lines numbered from
    /// `offset`), as one pass over both blocks would have: a first row repeating this family's last
    /// row of its rank is a repeat, and a key keeps the column it has here.
    fn append(&mut self, mut later: FamilyRows, offset: usize) {
        let mut drop_first = vec![true; later.height()];
        let mut repeats = 0;
        for (rank, (row, digest)) in &later.first {
            if self.previous.get(rank) == Some(digest) {
                drop_first[*row] = false;
                repeats += 1;
            }
        }
        if repeats > 0 {
            later.retain(&drop_first);
        }
        self.repeats += later.repeats + repeats;
        self.bare += later.bare;
        self.words_among_numbers += later.words_among_numbers;
        self.timed |= later.timed;
        for (rank, (all, with_numbers)) in &later.rows_by_rank {
            let counts = self.rows_by_rank.entry(*rank).or_default();
            counts.0 += all;
            counts.1 += with_numbers;
        }
        for (rank, digest) in later.previous.drain() {
            self.previous.insert(rank, digest);
        }
        let (height, added) = (self.height(), later.height());
        // Each of the later block's columns: the one its keys have here, else the one of its name,
        // else a new one.
        let mut target = vec![None; later.columns.len()];
        let mut keys: Vec<(&String, &usize)> = later.column_of.iter().collect();
        keys.sort();
        for (key, column) in &keys {
            if target[**column].is_none() {
                target[**column] = self.column_of.get(*key).copied();
            }
        }
        for (c, name) in later.names.iter().enumerate() {
            if target[c].is_none() {
                target[c] = Some(match self.at.get(name) {
                    Some(here) => *here,
                    None => {
                        self.names.push(name.clone());
                        self.columns.push(Building {
                            numbers: vec![NONE; height],
                            whole: true,
                            total: later.columns[c].total,
                            ..Building::default()
                        });
                        self.at.insert(name.clone(), self.columns.len() - 1);
                        self.columns.len() - 1
                    }
                });
            }
        }
        for (key, column) in keys {
            if let Some(t) = target[*column] {
                self.column_of.entry(key.clone()).or_insert(t);
            }
        }
        let mut filled = vec![false; self.columns.len()];
        for (c, building) in later.columns.into_iter().enumerate() {
            let Some(t) = target[c] else { continue };
            let here = &mut self.columns[t];
            if filled[t] {
                // Two of the later block's columns in one here: the first value of a row wins.
                for (row, value) in building.numbers.into_iter().enumerate() {
                    let cell = &mut here.numbers[height + row];
                    if cell.is_nan() {
                        *cell = value;
                    }
                }
            } else {
                here.numbers.extend(building.numbers);
                filled[t] = true;
            }
            if !here.any_number && building.any_number {
                here.unit = building.unit;
            }
            here.any_number |= building.any_number;
            here.whole &= building.whole;
            here.words
                .extend(building.words.into_iter().map(|(row, w)| (height + row, w)));
            here.written = None;
        }
        for (t, column) in self.columns.iter_mut().enumerate() {
            if !filled[t] {
                column.numbers.resize(height + added, NONE);
            }
        }
        self.lines
            .extend(later.lines.into_iter().map(|l| l + offset));
        self.ranks.extend(later.ranks);
        self.sizes.extend(later.sizes);
        self.wall_times.extend(later.wall_times);
    }

    /// Keeps the rows `keep` says.
    fn retain(&mut self, keep: &[bool]) {
        fn filter<T>(values: &mut Vec<T>, keep: &[bool]) {
            let mut i = 0;
            values.retain(|_| {
                i += 1;
                keep[i - 1]
            });
        }
        filter(&mut self.lines, keep);
        filter(&mut self.ranks, keep);
        filter(&mut self.sizes, keep);
        filter(&mut self.wall_times, keep);
        // A kept row's new place: how many rows are kept before it.
        let mut place = Vec::with_capacity(keep.len());
        let mut kept = 0;
        for k in keep {
            place.push(kept);
            kept += usize::from(*k);
        }
        for column in &mut self.columns {
            filter(&mut column.numbers, keep);
            column.words.retain(|(row, _)| keep[*row]);
            for (row, _) in &mut column.words {
                *row = place[*row];
            }
            column.written = None;
        }
    }

    /// The rows as a table: a column of numbers where any value was one (its words counted), else of
    /// words; the family's step counter as integers when whole; `wall_time` first where lines had one.
    fn table(self) -> (Table, usize) {
        let height = self.height();
        let mut table = Table {
            height,
            ..Table::default()
        };
        let mut words_among_numbers = self.words_among_numbers;
        let with_wall_time = self.wall_times.iter().any(|t| !t.is_nan())
            && !self.names.iter().any(|n| normalise(n) == "wall_time");
        if with_wall_time {
            table.names.push("wall_time".into());
            table.columns.push(Column::Numbers {
                values: self.wall_times,
                integer: false,
            });
        }
        for (name, building) in self.names.into_iter().zip(self.columns) {
            let column = if building.any_number {
                words_among_numbers += building.words.len();
                let integer = building.whole && normalise(&name) == self.family.0;
                Column::Numbers {
                    values: building.numbers,
                    integer,
                }
            } else {
                let mut words = vec![None; height];
                for (row, word) in building.words {
                    words[row] = Some(word);
                }
                Column::Text(words)
            };
            table.names.push(name);
            table.columns.push(column);
        }
        (table, words_among_numbers)
    }
}

/// A template and what it means in the family its lines belong to.
struct TemplateOf {
    template: template::Template,
    /// Its skeleton.
    shape: template::Shape,
    family: usize,
    /// Each pair's column in the family.
    columns: Vec<usize>,
    numbers: usize,
    timed: bool,
    /// What each pair's key adds to a line's digest, and the value of a pair whose value never varies.
    key_digests: Vec<u64>,
    value_digests: Vec<u64>,
    /// Lines of it read through it whose raw line made no raw template: after
    /// [`RAW_TEMPLATE_MISSES`], no more are tried (each try costs a pass over the raw line).
    raw_misses: usize,
}

impl TemplateOf {
    /// The digest of a line read through the template as `values`: [`digest::pairs`] of its pairs.
    fn digest(&self, values: &[template::Read]) -> u64 {
        self.key_digests
            .iter()
            .zip(&self.value_digests)
            .zip(values)
            .fold(0, |h, ((key, constant), value)| {
                let value = value.map_or(*constant, |(v, total)| digest::number(v, total));
                digest::fold(h, *key, value)
            })
    }
}

/// A training line read through a template, its row not yet written (continuation lines may follow).
struct FastRecord {
    template: usize,
    line: usize,
    digest: u64,
    wall_time: Option<f64>,
    rank: Option<u32>,
    values: Vec<template::Read>,
}

/// A template over a raw line as the log holds it, colour codes, tags and timestamp included: a line
/// of its skeleton is read without being cleaned at all. It is made from a line the template of its
/// cleaned text read, and reads as that template would: the same pairs, the same wall time and rank.
/// Every digit run of the raw line outside its numbers and its timestamp (a colour code's, a rank's)
/// must be the template's; its timestamp must have the template's place and widths, and the skeleton
/// of its text without colour codes no other place where a timestamp could be, so that cleaning would
/// cut every line of the skeleton as it cut the template's.
struct RawTemplate {
    shape: template::Shape,
    /// Over the raw line, its pairs those of `of`.
    template: template::Template,
    /// The template of the cleaned line, whose family and columns the values go to.
    of: usize,
    stamp: Option<Stamp>,
    rank: Option<u32>,
    /// The last line it read.
    exemplar: template::Exemplar,
}

impl RawTemplate {
    /// The wall time and numbers of `raw`, a line of the template's skeleton whose digit runs are
    /// `runs` (its literal digits checked unless `literal_checked`); `None` where it cannot read it.
    fn read(
        &self,
        raw: &str,
        runs: &[(usize, usize)],
        values: &mut Vec<template::Read>,
        literal_checked: bool,
    ) -> Option<Option<f64>> {
        let wall_time = match &self.stamp {
            Some(stamp) => Some(stamp.read(raw, runs)?),
            None => None,
        };
        let read = if literal_checked {
            self.template.read_numbers(raw, runs, values)
        } else {
            self.template.read(raw, runs, values)
        };
        read.then_some(wall_time)
    }
}

/// Where a raw line's timestamp is: its first digit run, the bytes before it, each run's width.
struct Stamp {
    first: usize,
    offset: usize,
    widths: Vec<usize>,
}

impl Stamp {
    /// The wall time of a raw line of the template's skeleton (its digit runs `runs`).
    fn read(&self, raw: &str, runs: &[(usize, usize)]) -> Option<f64> {
        let stamp = runs.get(self.first..self.first + self.widths.len())?;
        if stamp[0].0 != self.offset || stamp.iter().zip(&self.widths).any(|(r, w)| r.1 - r.0 != *w)
        {
            return None;
        }
        clean::plain_timestamp(raw.get(self.offset..stamp[stamp.len() - 1].1)?)
    }
}

/// Raw templates kept at most, and at most per skeleton (one per rank that writes it).
const RAW_TEMPLATES: usize = 64;
const RAW_TEMPLATES_PER_SKELETON: usize = 8;
const RAW_TEMPLATE_MISSES: usize = 16;

/// How many places in `skeleton` (made by [`template::skeleton`]) could hold a timestamp
/// (`2024-01-02 03:04:05`, `2024-01-02T03:04:05`): digit runs with its separators between them.
fn timestamp_places(skeleton: &[u8]) -> usize {
    const D: u8 = 0xFF;
    skeleton
        .windows(11)
        .filter(|w| matches!(w, [D, b'-', D, b'-', D, b' ' | b'T', D, b':', D, b':', D]))
        .count()
}

/// The record being read: later indented one-value lines may still be its.
enum Open {
    General(Record<'static>),
    Fast(FastRecord),
}

/// The lines kept for the facts reader: every line that is not a training line, and the first
/// [`FACT_LINES_PER_FAMILY`] of each family (those of the family that gives the rows are left out at the
/// end), up to [`FACT_BYTES`] in all.
#[derive(Default)]
struct FactLines {
    lines: Vec<FactLine>,
    bytes: usize,
    /// Lines not kept once the bytes were spent.
    dropped: usize,
}

/// A line kept for the facts reader: its index, the training lines it holds (each family and the
/// line's place among the family's lines), its text.
struct FactLine {
    index: usize,
    families: Vec<(usize, usize)>,
    raw: Box<str>,
}

const FACT_LINES_PER_FAMILY: usize = 256;
const FACT_BYTES: usize = 64 << 20;

/// One pass over a log's lines: each training line to its family's rows (through its skeleton's
/// template where it has one), the others kept for the facts reader.
struct Scanner<'v> {
    framework: Option<&'v Framework>,
    keys: Keys,
    families: Vec<FamilyRows>,
    /// Each family's lines seen so far (rows, repeats and other ranks' lines alike).
    family_lines: Vec<usize>,
    by_rank: HashMap<u32, usize>,
    templates: Vec<TemplateOf>,
    template_of: FastMap<Vec<u8>, Option<usize>>,
    shape: Vec<u8>,
    runs: Vec<(usize, usize)>,
    /// The template used last.
    last: Option<usize>,
    raw_templates: Vec<RawTemplate>,
    /// The raw templates of each raw skeleton (an empty list: none can be made).
    raw_of: FastMap<Vec<u8>, Vec<usize>>,
    last_raw: Option<usize>,
    /// Lines read through raw templates (the tests check that they are used).
    #[cfg_attr(not(test), allow(dead_code))]
    raw_reads: usize,
    /// Value buffers of rows written, for the next lines read through templates.
    spare: Vec<Vec<template::Read>>,
    open: Option<Open>,
    cleaner: clean::Cleaner,
    training: Vec<(usize, usize)>,
    lines: usize,
    facts: FactLines,
    /// Lines longer than [`LONGEST_LINE`], not read.
    too_long: usize,
    /// Lines that mark a (re)launch of training or a checkpoint (the vocabulary's `restarts` and
    /// `checkpoints`).
    mark_lines: Vec<(usize, Mark)>,
}

/// Lines longer than this are no training lines; they are counted and not read.
const LONGEST_LINE: usize = 1 << 20;

impl<'v> Scanner<'v> {
    fn new(framework: Option<&'v Framework>) -> Self {
        Scanner {
            framework,
            keys: Keys::default(),
            families: Vec::new(),
            family_lines: Vec::new(),
            by_rank: HashMap::new(),
            templates: Vec::new(),
            template_of: FastMap::default(),
            shape: Vec::new(),
            runs: Vec::new(),
            last: None,
            raw_templates: Vec::new(),
            raw_of: FastMap::default(),
            last_raw: None,
            raw_reads: 0,
            spare: Vec::new(),
            open: None,
            cleaner: clean::Cleaner::default(),
            training: Vec::new(),
            lines: 0,
            facts: FactLines::default(),
            too_long: 0,
            mark_lines: Vec::new(),
        }
    }

    /// The index of a family, made if new.
    fn family(&mut self, family: &(String, bool)) -> usize {
        match self.families.iter().position(|f| f.family == *family) {
            Some(i) => i,
            None => {
                let totals = self.framework.map(|f| f.totals.clone()).unwrap_or_default();
                self.families.push(FamilyRows::new(family.clone(), totals));
                self.family_lines.push(0);
                self.families.len() - 1
            }
        }
    }

    /// The framework's own field separators.
    fn separators(&self) -> &'v [String] {
        self.framework.map_or(&[], |f| f.separators.as_slice())
    }

    /// Writes the open record's row.
    fn close(&mut self) {
        match self.open.take() {
            Some(Open::General(record)) => {
                let family = self.family(&record.family);
                self.families[family].push(record);
            }
            Some(Open::Fast(read)) => {
                let template = &self.templates[read.template];
                self.families[template.family].push_read(&read, template);
                self.spare.push(read.values);
            }
            None => {}
        }
    }

    /// Counts a training line of `family` and `rank`: its place among the family's lines.
    fn count(&mut self, family: usize, rank: Option<u32>) -> usize {
        if let Some(rank) = rank {
            *self.by_rank.entry(rank).or_default() += 1;
        }
        self.family_lines[family] += 1;
        self.family_lines[family] - 1
    }

    fn keep_for_facts(&mut self, index: usize, families: &[(usize, usize)], raw: &str) {
        if raw.len() > 64 * 1024 || families.iter().any(|(_, at)| *at >= FACT_LINES_PER_FAMILY) {
            return;
        }
        if self.facts.bytes + raw.len() > FACT_BYTES {
            self.facts.dropped += 1;
            return;
        }
        self.facts.bytes += raw.len();
        self.facts.lines.push(FactLine {
            index,
            families: families.to_vec(),
            raw: raw.into(),
        });
    }

    /// Reads the line at `index` (from 0).
    fn line(&mut self, index: usize, raw: &str) {
        self.lines = index + 1;
        if raw.len() > LONGEST_LINE {
            self.too_long += 1;
            self.close();
            return;
        }
        // The training lines the raw line holds (family, place in it), for the facts reader.
        let mut training = std::mem::take(&mut self.training);
        training.clear();
        if let Some(counted) = self.raw_fast(index, raw) {
            training.push(counted);
            self.keep_for_facts(index, &training, raw);
            self.training = training;
            return;
        }
        let mut cleaner = std::mem::take(&mut self.cleaner);
        cleaner.clean(raw);
        for line in &cleaner.places {
            let text = cleaner.text(raw, line);
            if let Some(counted) = self.fast(index, text, line) {
                training.push(counted);
                if cleaner.one_line(raw) {
                    self.learn_raw(raw, &cleaner, text, line);
                }
                continue;
            }
            let pairs = pairs::pairs_with(text, self.separators());
            if let Some((key, eval, numbers, timed)) = training_line(
                text,
                line.evaluation,
                &pairs,
                &mut self.keys,
                self.framework,
            ) {
                let family = self.family(&(key, eval));
                training.push((family, self.count(family, line.rank)));
                self.close();
                self.learn(text, &pairs, family, numbers, timed);
                let record = Record {
                    line: index,
                    wall_time: line.wall_time,
                    rank: line.rank,
                    digest: digest::pairs(&pairs),
                    pairs: pairs.into_iter().map(Pair::into_owned).collect(),
                    family: self.families[family].family.clone(),
                    numbers,
                    timed,
                };
                self.open = Some(Open::General(record));
                continue;
            }
            match self.open.take() {
                Some(open) if line.indented && pairs.len() == 1 => {
                    let mut record = match open {
                        Open::General(record) => record,
                        Open::Fast(read) => {
                            let template = &self.templates[read.template];
                            Record {
                                line: read.line,
                                wall_time: read.wall_time,
                                rank: read.rank,
                                pairs: template.template.pairs_of(&read.values),
                                family: self.families[template.family].family.clone(),
                                numbers: template.numbers,
                                timed: template.timed,
                                digest: read.digest,
                            }
                        }
                    };
                    let pair = pairs.into_iter().next().expect("one pair").into_owned();
                    record.continue_with(pair, &mut self.keys, self.framework);
                    self.open = Some(Open::General(record));
                }
                open => {
                    self.open = open;
                    self.close();
                }
            }
        }
        self.cleaner = cleaner;
        if training.is_empty() {
            let vocab = vocabulary();
            let holds = |texts: &[String]| {
                texts
                    .iter()
                    .any(|m| memchr::memmem::find(raw.as_bytes(), m.as_bytes()).is_some())
            };
            if holds(&vocab.restarts) {
                self.mark_lines.push((index, Mark::Restart));
            } else if holds(&vocab.checkpoints) {
                self.mark_lines.push((index, Mark::Checkpoint));
            }
        }
        self.keep_for_facts(index, &training, raw);
        self.training = training;
    }

    /// Reads a raw line through a raw template (see [`RawTemplate`]): its family and its place among
    /// the family's lines, or `None` where no raw template reads it.
    fn raw_fast(&mut self, index: usize, raw: &str) -> Option<(usize, usize)> {
        if self.raw_templates.is_empty() {
            return None;
        }
        let mut values = self.spare.pop().unwrap_or_default();
        // The last raw template used, by its exemplar, then by its skeleton; then those of the line's
        // skeleton.
        let last = self.last_raw;
        let mut found = last.and_then(|t| {
            let raw_template = &mut self.raw_templates[t];
            let exemplar = &raw_template.exemplar;
            if exemplar.matches(raw) {
                return Some((
                    t,
                    raw_template.read(raw, exemplar.runs(), &mut values, true)?,
                ));
            }
            if !raw_template.shape.matches(raw, &mut self.runs) {
                return None;
            }
            let wall_time = raw_template.read(raw, &self.runs, &mut values, false)?;
            let RawTemplate {
                template, exemplar, ..
            } = raw_template;
            exemplar.set(raw, &self.runs, |r| !template.is_literal(r));
            Some((t, wall_time))
        });
        if found.is_none() {
            template::skeleton(raw, &mut self.shape, &mut self.runs);
            let mut candidates = [usize::MAX; RAW_TEMPLATES_PER_SKELETON];
            for (c, t) in candidates
                .iter_mut()
                .zip(self.raw_of.get(self.shape.as_slice()).into_iter().flatten())
            {
                *c = *t;
            }
            found = candidates
                .into_iter()
                .filter(|t| *t != usize::MAX && Some(*t) != last)
                .find_map(|t| {
                    let raw_template = &self.raw_templates[t];
                    let wall_time = raw_template.read(raw, &self.runs, &mut values, false)?;
                    Some((t, wall_time))
                });
        }
        let Some((at, wall_time)) = found else {
            self.spare.push(values);
            return None;
        };
        self.last_raw = Some(at);
        self.raw_reads += 1;
        let (of, rank) = (self.raw_templates[at].of, self.raw_templates[at].rank);
        #[cfg(debug_assertions)]
        {
            let mut cleaner = clean::Cleaner::default();
            cleaner.clean(raw);
            assert!(
                cleaner.one_line(raw),
                "a raw template read {raw:?}, which is not one line"
            );
            let place = cleaner.places[0];
            let text = cleaner.text(raw, &place);
            assert!(
                place.wall_time.map(f64::to_bits) == wall_time.map(f64::to_bits)
                    && place.rank == rank
                    && !place.evaluation,
                "a raw template read {raw:?} at {wall_time:?} of rank {rank:?}: cleaning gives {place:?}"
            );
            self.assert_read_as_general(text, of, &values);
        }
        let family = self.templates[of].family;
        let place = self.count(family, rank);
        self.close();
        self.open = Some(Open::Fast(FastRecord {
            template: of,
            line: index,
            digest: self.templates[of].digest(&values),
            wall_time,
            rank,
            values,
        }));
        Some((family, place))
    }

    /// Makes the raw template of `raw`, one line that cleaned to `text` at `place` and that the last
    /// template used has just read, where it can be made (see [`RawTemplate`]).
    fn learn_raw(&mut self, raw: &str, cleaner: &clean::Cleaner, text: &str, place: &clean::Place) {
        let Some(of) = self.last else { return };
        if self.raw_templates.len() >= RAW_TEMPLATES
            || place.evaluation
            || place.indented
            || self.templates[of].raw_misses >= RAW_TEMPLATE_MISSES
        {
            return;
        }
        template::skeleton(raw, &mut self.shape, &mut self.runs);
        let made = match self.raw_of.get(self.shape.as_slice()) {
            Some(t) if t.is_empty() || t.len() >= RAW_TEMPLATES_PER_SKELETON => None,
            _ => self.raw_template(raw, cleaner, text, place, of),
        };
        // Where the first line of a skeleton cannot make one, its list stays empty: no line of it is
        // tried again.
        let list = self.raw_of.entry(self.shape.clone()).or_default();
        match made {
            Some(raw_template) => {
                list.push(self.raw_templates.len());
                self.raw_templates.push(raw_template);
            }
            None => self.templates[of].raw_misses += 1,
        }
    }

    /// The raw template of a line (its skeleton and digit runs in `self.shape` and `self.runs`).
    fn raw_template(
        &self,
        raw: &str,
        cleaner: &clean::Cleaner,
        text: &str,
        place: &clean::Place,
        of: usize,
    ) -> Option<RawTemplate> {
        // The line's pairs, each number's text found in the raw line.
        let mut pairs = Vec::new();
        for pair in pairs::pairs_with(text, self.separators()) {
            let source = match pair.source {
                Some(source) => Some(cleaner.raw_of(raw, source)?),
                None => None,
            };
            pairs.push(Pair {
                source,
                ..pair.into_owned()
            });
        }
        let mut made = template::Template::new(raw, &self.runs, &pairs)?;
        // The same keys and kinds of value in one order (each line's numbers are its own).
        let cleaned = &self.templates[of].template.pairs;
        let alike = |a: &Pair<'_>, b: &Pair<'_>| {
            a.key == b.key
                && match (&a.value, &b.value) {
                    (Value::Number { unit: u, .. }, Value::Number { unit: v, .. }) => u == v,
                    (a, b) => a == b,
                }
        };
        if made.pairs.len() != cleaned.len()
            || !made.pairs.iter().zip(cleaned).all(|(a, b)| alike(a, b))
        {
            return None;
        }
        // The timestamp: where cleaning found the line's wall time, and the only place for one.
        let mut plain_shape = Vec::new();
        template::skeleton(cleaner.plain(raw), &mut plain_shape, &mut Vec::new());
        let places = timestamp_places(&plain_shape);
        let stamp = match place.wall_time {
            None if places == 0 => None,
            Some(wall_time) if places == 1 => {
                let offset = clean::find_timestamp(raw, 0)?;
                let first = self.runs.iter().position(|r| r.0 == offset)?;
                let (used, value) = clean::leading_timestamp(&raw[offset..])?;
                let last = self.runs.iter().position(|r| r.1 == offset + used)?;
                if value.to_bits() != wall_time.to_bits()
                    || !(first + 5..=first + 6).contains(&last)
                    || clean::plain_timestamp(&raw[offset..offset + used]).map(f64::to_bits)
                        != Some(value.to_bits())
                    || !made.free(first..last + 1)
                {
                    return None;
                }
                Some(Stamp {
                    first,
                    offset,
                    widths: self.runs[first..=last].iter().map(|r| r.1 - r.0).collect(),
                })
            }
            _ => return None,
        };
        let mut exemplar = template::Exemplar::default();
        exemplar.set(raw, &self.runs, |r| !made.is_literal(r));
        Some(RawTemplate {
            shape: template::Shape::new(&self.shape),
            template: made,
            of,
            stamp,
            rank: place.rank,
            exemplar,
        })
    }

    /// Debug builds: that `values`, read through template `of`, are what the general path reads from
    /// the cleaned line `text`.
    #[cfg(debug_assertions)]
    fn assert_read_as_general(&self, text: &str, of: usize, values: &[template::Read]) {
        let general: Vec<Pair<'static>> = pairs::pairs_with(text, self.separators())
            .into_iter()
            .map(Pair::into_owned)
            .collect();
        let read = self.templates[of].template.pairs_of(values);
        let same = general.len() == read.len()
            && general.iter().zip(&read).all(|(g, r)| {
                g.key == r.key
                    && match (&g.value, &r.value) {
                        (
                            Value::Number {
                                value: a,
                                unit: u,
                                total: t,
                            },
                            Value::Number {
                                value: b,
                                unit: v,
                                total: w,
                            },
                        ) => {
                            (a == b || (a.is_nan() && b.is_nan()))
                                && u == v
                                && t.map(f64::to_bits) == w.map(f64::to_bits)
                        }
                        (a, b) => a == b,
                    }
            });
        assert!(
            same,
            "a template read {text:?} otherwise than the general path: {read:?} against {general:?}"
        );
    }

    /// Reads a cleaned line through its skeleton's template: its family and its place among the
    /// family's lines, or `None` where it has no template or the template cannot read it.
    fn fast(&mut self, index: usize, text: &str, line: &clean::Place) -> Option<(usize, usize)> {
        // A line a tag calls an evaluation's is read the general way (its text may be a training
        // line's).
        if line.evaluation {
            return None;
        }
        // The last template used first, then the one of the line's skeleton.
        let at = match self
            .last
            .filter(|t| self.templates[*t].shape.matches(text, &mut self.runs))
        {
            Some(t) => t,
            None => {
                template::skeleton(text, &mut self.shape, &mut self.runs);
                (*self.template_of.get(self.shape.as_slice())?)?
            }
        };
        self.last = Some(at);
        let mut values = self.spare.pop().unwrap_or_default();
        if !self.templates[at]
            .template
            .read(text, &self.runs, &mut values)
        {
            self.spare.push(values);
            return None;
        }
        #[cfg(debug_assertions)]
        self.assert_read_as_general(text, at, &values);
        let family = self.templates[at].family;
        let place = self.count(family, line.rank);
        self.close();
        self.open = Some(Open::Fast(FastRecord {
            template: at,
            line: index,
            digest: self.templates[at].digest(&values),
            wall_time: line.wall_time,
            rank: line.rank,
            values,
        }));
        Some((family, place))
    }

    /// Makes the template of a training line's skeleton (read the general way) once its family has
    /// a few lines, so that a line seen once costs no template.
    fn learn(
        &mut self,
        text: &str,
        pairs: &[Pair<'_>],
        family: usize,
        numbers: usize,
        timed: bool,
    ) {
        // A line with no number besides its step is no row (see FamilyRows::begin_row): its columns
        // are not made either.
        if self.family_lines[family] < 2 || numbers == 0 {
            return;
        }
        template::skeleton(text, &mut self.shape, &mut self.runs);
        if self.template_of.contains_key(self.shape.as_slice()) || self.template_of.len() >= 4096 {
            return;
        }
        let Some(template) = template::Template::new(text, &self.runs, pairs) else {
            self.template_of.insert(self.shape.clone(), None);
            return;
        };
        // Each pair's column: made where new, as the general path makes them.
        let rows = &mut self.families[family];
        let row = rows.height();
        let columns = template
            .pairs
            .iter()
            .map(|p| {
                let c = rows.column(&p.key, p.value.unit(), row);
                // A column made here has no row yet: the next row starts it.
                if rows.columns[c].numbers.len() > row {
                    rows.columns[c].numbers.truncate(row);
                }
                c
            })
            .collect();
        let key_digests = template.pairs.iter().map(digest::key).collect();
        let value_digests = template
            .pairs
            .iter()
            .map(|p| digest::value(&p.value))
            .collect();
        self.templates.push(TemplateOf {
            raw_misses: 0,
            key_digests,
            value_digests,
            template,
            shape: template::Shape::new(&self.shape),
            family,
            columns,
            numbers,
            timed,
        });
        self.template_of
            .insert(self.shape.clone(), Some(self.templates.len() - 1));
    }
}

/// The keys of HF Trainer's end-of-training summary (`{'train_runtime': 537.17, 'train_samples_per_second':
/// 14.89, 'train_steps_per_second': 0.931, ...}`): its runtime and its rate of optimizer steps.
const SUMMARY_RUNTIME: &str = "train_runtime";
const SUMMARY_STEPS_RATE: &str = "train_steps_per_second";

/// The last line kept for facts that is a run's summary (a positive runtime and steps rate), and its
/// pairs.
fn run_summary(lines: &[FactLine]) -> Option<(usize, Vec<Pair<'static>>)> {
    lines.iter().rev().find_map(|line| {
        if !line.raw.contains(SUMMARY_RUNTIME) || !line.raw.contains(SUMMARY_STEPS_RATE) {
            return None;
        }
        let pairs: Vec<Pair<'static>> = clean::clean(&line.raw)
            .iter()
            .flat_map(|l| {
                pairs::pairs(&l.text)
                    .into_iter()
                    .map(Pair::into_owned)
                    .collect::<Vec<_>>()
            })
            .collect();
        let positive = |key: &str| {
            pairs
                .iter()
                .find(|p| p.key == key)
                .and_then(|p| p.value.number())
                .is_some_and(|v| v.is_finite() && v > 0.0)
        };
        (positive(SUMMARY_RUNTIME) && positive(SUMMARY_STEPS_RATE)).then_some((line.index, pairs))
    })
}

/// The one row a run's summary gives: its steps (the progress bar's last count where one was printed,
/// else the runtime x the rounded steps rate), the mean step time over them, and the summary's values.
fn summary_row(
    line: usize,
    summary: &[Pair<'static>],
    progress: Option<&FamilyRows>,
) -> Option<FamilyRows> {
    let number = |key: &str| summary.iter().find(|p| p.key == key)?.value.number();
    let runtime = number(SUMMARY_RUNTIME)?;
    let counted = progress.and_then(|rows| {
        let column = rows.columns.get(*rows.at.get("progress")?)?;
        column.numbers.iter().rev().find(|v| !v.is_nan()).copied()
    });
    let steps = counted
        .filter(|n| *n >= 1.0)
        .unwrap_or_else(|| (runtime * number(SUMMARY_STEPS_RATE).unwrap_or(0.0)).round());
    if !(steps >= 1.0 && steps.is_finite()) {
        return None;
    }
    let number_pair = |key: &str, value: f64, unit: &'static str| Pair {
        key: key.to_string().into(),
        value: Value::Number {
            value,
            unit: unit.into(),
            total: None,
        },
        source: None,
    };
    let mut pairs = vec![
        number_pair("step", steps, ""),
        number_pair("step_time_s", runtime / steps, ""),
    ];
    pairs.extend(summary.iter().cloned());
    let mut rows = FamilyRows::new(("step".into(), false), Vec::new());
    rows.push(Record {
        line,
        wall_time: None,
        rank: None,
        numbers: pairs.len() - 1,
        timed: true,
        digest: digest::pairs(&pairs),
        family: ("step".into(), false),
        pairs,
    });
    Some(rows)
}

/// Whether `text` holds a family of training lines this reader takes: three lines (or one, with four
/// numbers besides its step) with a step counter and at least two other numbers; if so, the framework
/// its markers name.
pub fn detect(text: &str) -> Option<Option<&'static Framework>> {
    let framework = vocabulary().framework_of(head(text).as_bytes());
    let mut counts: HashMap<(String, bool), usize> = HashMap::new();
    let (mut seen, mut rich) = (0, false);
    scan(text, framework, |r| {
        seen += 1;
        if !r.family.1 && r.numbers >= 2 {
            rich |= r.numbers >= 4;
            *counts.entry(r.family).or_default() += 1;
        }
        seen < 64
    });
    let summary = text
        .lines()
        .any(|l| l.contains(SUMMARY_RUNTIME) && l.contains(SUMMARY_STEPS_RATE));
    (counts.values().any(|n| *n >= 3) || rich || summary).then_some(framework)
}

/// The part of a log searched for framework markers.
fn head(text: &str) -> &str {
    let mut end = text.len().min(4 << 20);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A column name for a key and the unit written against its values.
fn column_name(key: &str, unit: &str) -> String {
    let n = normalise(key);
    let states_unit = ["_ms", "_s", "_us", "_sec", "_pct", "_percent"]
        .iter()
        .any(|u| n.ends_with(u))
        || key.contains('%');
    match unit {
        "s" | "ms" | "us" | "%" if !states_unit && !key.ends_with(&format!("({unit})")) => {
            format!("{key} ({unit})")
        }
        _ => key.to_string(),
    }
}

/// A per-row derivation and the words that say how it was made.
type Derivation<'a> = (String, Box<dyn Fn(&Table, usize) -> Option<f64> + 'a>);

/// A column of the rows read.
#[derive(Debug, Clone)]
pub enum Column {
    /// Numbers, finite or [`NONE`] (where a line lacks the key or wrote `nan`); `integer` for the step
    /// counter when every value is whole.
    Numbers { values: Vec<f64>, integer: bool },
    /// Words (`bf16`, `n/a`) of a key that never holds a number.
    Text(Vec<Option<String>>),
}

/// The rows read, column by column in the order first seen.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Table {
    pub names: Vec<String>,
    pub columns: Vec<Column>,
    pub height: usize,
}

impl Table {
    pub fn index(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// The number in column `column` at `row`.
    pub fn number(&self, column: usize, row: usize) -> Option<f64> {
        match &self.columns[column] {
            Column::Numbers { values, .. } => Some(values[row]).filter(|v| !v.is_nan()),
            Column::Text(_) => None,
        }
    }

    /// The number of the column named `name` at `row` (tests and callers that know names).
    pub fn get(&self, name: &str, row: usize) -> Option<f64> {
        self.number(self.index(name)?, row)
    }

    /// Adds the column `name`, its value at each row worked out from the row (null where it cannot
    /// be); returns how many rows got one.
    fn fill(&mut self, name: &str, value: &dyn Fn(&Table, usize) -> Option<f64>) -> usize {
        let values: Vec<f64> = (0..self.height)
            .map(|row| value(self, row).filter(|v| v.is_finite()).unwrap_or(NONE))
            .collect();
        let filled = values.iter().filter(|v| !v.is_nan()).count();
        self.names.push(name.to_string());
        self.columns.push(Column::Numbers {
            values,
            integer: false,
        });
        filled
    }

    /// The table as a frame: numbers as Float64 (the step as Int64), words as String. A column of
    /// numbers becomes the frame's without a copy, [`NONE`] as null.
    pub fn into_frame(self) -> Result<polars::prelude::DataFrame, String> {
        use polars::prelude::{Float64Chunked, IntoColumn, IntoSeries, NamedFrom, Series};
        let height = self.height;
        let columns = self
            .names
            .into_iter()
            .zip(self.columns)
            .map(|(name, column)| {
                match column {
                    Column::Numbers {
                        values,
                        integer: true,
                    } => Series::new(
                        name.into(),
                        values
                            .iter()
                            .map(|v| (!v.is_nan()).then_some(*v as i64))
                            .collect::<Vec<Option<i64>>>(),
                    ),
                    Column::Numbers { values, .. } => {
                        let valid: polars_arrow::bitmap::Bitmap =
                            values.iter().map(|v| !v.is_nan()).collect();
                        let valid = (valid.unset_bits() > 0).then_some(valid);
                        Float64Chunked::from_vec_validity(name.into(), values, valid).into_series()
                    }
                    Column::Text(values) => Series::new(name.into(), values),
                }
                .into_column()
            })
            .collect();
        polars::prelude::DataFrame::new(height, columns).map_err(|e| e.to_string())
    }
}

/// Where a column of numbers has none: NaN, as no number read is kept unless finite.
const NONE: f64 = f64::NAN;

impl PartialEq for Column {
    /// Numbers compare bit for bit ([`NONE`] equals itself).
    fn eq(&self, other: &Column) -> bool {
        match (self, other) {
            (
                Column::Numbers { values, integer },
                Column::Numbers {
                    values: v,
                    integer: i,
                },
            ) => {
                integer == i
                    && values.len() == v.len()
                    && values
                        .iter()
                        .zip(v)
                        .all(|(a, b)| a.to_bits() == b.to_bits())
            }
            (Column::Text(a), Column::Text(b)) => a == b,
            _ => false,
        }
    }
}

/// `43.2K` → 43,200 (nanotron's counts).
fn scale(unit: &str) -> Option<f64> {
    match unit {
        "K" | "k" => Some(1e3),
        "M" => Some(1e6),
        "G" | "B" => Some(1e9),
        "T" => Some(1e12),
        _ => None,
    }
}

/// What the blocks of a log gave, put together in order as one pass over the whole log would have.
#[derive(Default)]
struct Merged {
    families: Vec<FamilyRows>,
    family_lines: Vec<usize>,
    by_rank: HashMap<u32, usize>,
    facts: FactLines,
    lines: usize,
    too_long: usize,
    mark_lines: Vec<(usize, Mark)>,
}

impl Merged {
    /// Adds the next block's pass.
    fn absorb(&mut self, block: Scanner<'_>) {
        let offset = self.lines;
        let lines_before = self.family_lines.clone();
        // Each of the block's families here.
        let mut here = Vec::with_capacity(block.families.len());
        for (family, lines) in block.families.into_iter().zip(block.family_lines) {
            match self.families.iter().position(|f| f.family == family.family) {
                Some(i) => {
                    self.families[i].append(family, offset);
                    self.family_lines[i] += lines;
                    here.push(i);
                }
                None => {
                    let mut family = family;
                    for line in &mut family.lines {
                        *line += offset;
                    }
                    self.families.push(family);
                    self.family_lines.push(lines);
                    here.push(self.families.len() - 1);
                }
            }
        }
        for (rank, n) in block.by_rank {
            *self.by_rank.entry(rank).or_default() += n;
        }
        // The block kept each family's first lines for facts; the whole log keeps its first.
        self.facts.dropped += block.facts.dropped;
        for line in block.facts.lines {
            let families: Vec<(usize, usize)> = line
                .families
                .iter()
                .map(|(f, at)| {
                    (
                        here[*f],
                        lines_before.get(here[*f]).copied().unwrap_or(0) + at,
                    )
                })
                .collect();
            if families.iter().any(|(_, at)| *at >= FACT_LINES_PER_FAMILY) {
                continue;
            }
            if self.facts.bytes + line.raw.len() > FACT_BYTES {
                self.facts.dropped += 1;
                continue;
            }
            self.facts.bytes += line.raw.len();
            self.facts.lines.push(FactLine {
                index: line.index + offset,
                families,
                raw: line.raw,
            });
        }
        self.mark_lines
            .extend(block.mark_lines.iter().map(|(l, m)| (l + offset, *m)));
        self.lines += block.lines;
        self.too_long += block.too_long;
    }
}

/// One pass over a block of whole lines (each ended by `\n`).
fn scan_block<'v>(framework: Option<&'v Framework>, block: &[u8]) -> Scanner<'v> {
    let mut scanner = Scanner::new(framework);
    let mut index = 0;
    let mut at = 0;
    while at < block.len() {
        let end = memchr::memchr(b'\n', &block[at..]).map_or(block.len(), |p| at + p);
        let raw = &block[at..end];
        match std::str::from_utf8(raw) {
            Ok(text) => scanner.line(index, text),
            Err(_) => scanner.line(index, &String::from_utf8_lossy(raw)),
        }
        index += 1;
        at = end + 1;
    }
    scanner.close();
    scanner.lines = index;
    scanner
}

/// A source whose lines longer than [`LONGEST_LINE`] are cut to one byte more than that (the rest of the
/// line dropped as it is read): a block of lines stays bounded whatever the log holds, and the cut line,
/// longer than any training line, is counted where it is read.
struct Truncating<'s> {
    source: &'s mut (dyn std::io::Read + Send),
    /// The bytes of the current line seen so far.
    line: usize,
}

impl std::io::Read for Truncating<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let n = self.source.read(buf)?;
            if n == 0 {
                return Ok(0);
            }
            let (mut from, mut to) = (0, 0);
            while from < n {
                let (end, newline) = match memchr::memchr(b'\n', &buf[from..n]) {
                    Some(p) => (from + p, true),
                    None => (n, false),
                };
                let keep = (end - from).min((LONGEST_LINE + 1).saturating_sub(self.line));
                if to != from {
                    buf.copy_within(from..from + keep, to);
                }
                to += keep;
                self.line = self.line.saturating_add(end - from);
                if newline {
                    buf[to] = b'\n';
                    to += 1;
                    self.line = 0;
                }
                from = end + usize::from(newline);
            }
            if to > 0 {
                return Ok(to);
            }
            // All of it was the dropped rest of a long line: read on.
        }
    }
}

/// A log read from a source in blocks of whole lines, each of about `size` bytes and ending before a
/// line that starts a record (not indented), so that no record spans two blocks; where a block ends
/// depends on the log alone, not on how the source hands its bytes over.
struct BlockReader<'s> {
    source: Truncating<'s>,
    size: usize,
    buffer: Vec<u8>,
    /// Blocks scanned, whose memory the next blocks take (fresh memory costs a page fault a page).
    spare: Vec<Vec<u8>>,
    eof: bool,
    /// The log's last byte.
    last: Option<u8>,
}

/// Bytes read from the source at once.
const READ_BYTES: usize = 1 << 20;

/// Bytes of a block of lines, and of the head a framework is told from.
const BLOCK: usize = 4 << 20;

impl<'s> BlockReader<'s> {
    fn new(source: &'s mut (dyn std::io::Read + Send), size: usize) -> Self {
        BlockReader {
            source: Truncating { source, line: 0 },
            size,
            buffer: Vec::new(),
            spare: Vec::new(),
            eof: false,
            last: None,
        }
    }

    /// Reads up to [`READ_BYTES`] more.
    fn fill(&mut self) -> std::io::Result<()> {
        use std::io::Read;
        let filled = self.buffer.len();
        self.buffer.resize(filled + READ_BYTES, 0);
        let n = loop {
            match self.source.read(&mut self.buffer[filled..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.buffer.truncate(filled);
                    return Err(e);
                }
            }
        };
        self.buffer.truncate(filled + n);
        if n == 0 {
            self.eof = true;
        } else {
            self.last = Some(self.buffer[filled + n - 1]);
        }
        Ok(())
    }

    /// The first [`BLOCK`] bytes of the log (less where it is shorter).
    fn head(&mut self) -> std::io::Result<&[u8]> {
        while !self.eof && self.buffer.len() < BLOCK {
            self.fill()?;
        }
        Ok(&self.buffer[..self.buffer.len().min(BLOCK)])
    }

    /// Where the next block ends: after the last newline at or before `size` that a line follows
    /// whose fields, once cleaned, are not indented (so it closes any record open before it), else the
    /// first such newline after `size`; `None` until the buffer holds one.
    fn cut(&self) -> Option<usize> {
        let b = &self.buffer;
        let starts_record = |at: usize| {
            let Some(end) = b
                .get(at..)
                .and_then(|rest| memchr::memchr(b'\n', rest))
                .map(|p| at + p)
            else {
                return false; // the line is not whole yet
            };
            let raw = String::from_utf8_lossy(&b[at..end]);
            let mut cleaner = clean::Cleaner::default();
            cleaner.clean(&raw);
            cleaner.places.first().is_some_and(|p| !p.indented)
        };
        let limit = self.size.min(b.len());
        let mut end = limit;
        while let Some(p) = memchr::memrchr(b'\n', &b[..end]) {
            if starts_record(p + 1) {
                return Some(p + 1);
            }
            end = p;
        }
        let mut from = limit;
        while let Some(p) = memchr::memchr(b'\n', &b[from..]).map(|p| from + p) {
            if starts_record(p + 1) {
                return Some(p + 1);
            }
            from = p + 1;
        }
        None
    }

    /// Takes back a block that has been scanned.
    fn give_back(&mut self, block: Vec<u8>) {
        if self.spare.len() < 8 {
            self.spare.push(block);
        }
    }

    /// The next block, `None` at the end of the log.
    fn next_block(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        loop {
            if self.buffer.len() > self.size {
                if let Some(cut) = self.cut() {
                    let mut rest = self.spare.pop().unwrap_or_default();
                    rest.clear();
                    rest.reserve(self.size.min(BLOCK) + 2 * READ_BYTES);
                    rest.extend_from_slice(&self.buffer[cut..]);
                    let mut block = std::mem::replace(&mut self.buffer, rest);
                    block.truncate(cut);
                    return Ok(Some(block));
                }
            }
            if self.eof {
                return Ok((!self.buffer.is_empty()).then(|| std::mem::take(&mut self.buffer)));
            }
            self.fill()?;
        }
    }
}

/// What the user gave by flag that the reader's derivations use too (a per-device rate into a step
/// time needs the device count): each wins over what the log says.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Given {
    pub num_devices: Option<f64>,
    pub seq_len: Option<f64>,
    pub tokens_per_step: Option<f64>,
}

/// Reads a console log from `source` as it streams; `framework` names its framework when known
/// (`--shape`), else its markers say; `beside` are the configuration files kept beside it (name, text).
pub fn read(
    source: &mut (dyn std::io::Read + Send),
    framework: Option<&str>,
    beside: &[(String, String)],
    given: Given,
) -> Result<ConsoleRead, String> {
    read_in_blocks(source, framework, beside, given, BLOCK)
}

/// [`read`] with the log cut into blocks of about `block` bytes (the tests and the `console_lines` fuzz
/// target cut small ones, to hold the blocks' merge to one pass).
#[doc(hidden)]
pub fn read_in_blocks(
    source: &mut (dyn std::io::Read + Send),
    framework: Option<&str>,
    beside: &[(String, String)],
    given: Given,
    block: usize,
) -> Result<ConsoleRead, String> {
    let vocab = vocabulary();
    let mut blocks = BlockReader::new(source, block);
    let head = blocks.head().map_err(|e| e.to_string())?;
    let framework = framework
        .and_then(|name| vocab.framework(name))
        .or_else(|| vocab.framework_of(head));
    // One pass: every training line goes to its family's rows, the others to the facts reader. The
    // log's blocks are read by as many threads as there are and put together in order, as one pass
    // would have: the same rows whatever the thread count. A batch of blocks is scanned while the
    // next is read from the source and the one before put together, so memory stays bounded and
    // neither core waits on the other.
    use rayon::prelude::*;
    let threads = rayon::current_num_threads().max(1);
    let next_batch = |blocks: &mut BlockReader<'_>| -> std::io::Result<Vec<Vec<u8>>> {
        let mut batch = Vec::with_capacity(threads);
        while batch.len() < threads {
            match blocks.next_block()? {
                Some(b) => batch.push(b),
                None => break,
            }
        }
        Ok(batch)
    };
    let mut merged = Merged::default();
    let mut batch = next_batch(&mut blocks).map_err(|e| e.to_string())?;
    let mut scanned: Vec<Scanner<'_>> = Vec::new();
    while !batch.is_empty() || !scanned.is_empty() {
        let previous = std::mem::take(&mut scanned);
        let current = std::mem::take(&mut batch);
        let (read, (now, ())) = rayon::join(
            || next_batch(&mut blocks),
            || {
                rayon::join(
                    || {
                        current
                            .par_iter()
                            .map(|block| scan_block(framework, block))
                            .collect::<Vec<_>>()
                    },
                    || {
                        for scanner in previous {
                            merged.absorb(scanner);
                        }
                    },
                )
            },
        );
        batch = read.map_err(|e| e.to_string())?;
        scanned = now;
        for block in current {
            blocks.give_back(block);
        }
    }
    let ends_with_newline = blocks.last == Some(b'\n');
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
    for (i, f) in families.iter().enumerate() {
        let rank_of = (f.timed, count(f, true));
        if f.family.1 || rank_of.1 == 0 {
            continue;
        }
        if best.is_none_or(|b| rank_of > (families[b].timed, count(&families[b], true))) {
            best = Some(i);
        }
    }
    // HF Trainer's console: its loss dicts carry no step, and a tqdm bar's family (its smoothed `s/it`)
    // is no step time; its summary line gives the run's mean instead, as one row.
    let tqdm_only = best.is_none_or(|b| families[b].family.0 == "progress");
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
    let (mut table, text_in_numbers) = rows.table();
    if text_in_numbers > 0 {
        notes.push(format!(
            "{text_in_numbers} value(s) that are words in columns of numbers (such as 'n/a') read as empty"
        ));
    }

    // What the printed configuration says.
    let mut config = facts::ConfigFacts::of(framework);
    // Every line but the training lines that give the rows.
    let mut other_text = String::new();
    for FactLine {
        index,
        families: training,
        raw,
    } in &fact_lines.lines
    {
        if !training.iter().any(|(f, _)| *f == chosen) {
            config.read_line(raw, &format!("line {}", index + 1));
            other_text.push_str(raw);
            other_text.push('\n');
        }
    }
    if fact_lines.dropped > 0 {
        notes.push(format!(
            "{} line(s) past the first {} MiB of lines other than training lines not read for facts",
            fact_lines.dropped,
            FACT_BYTES >> 20
        ));
    }
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
    ] {
        if let Some(n) = value {
            config.set_flag(fact, n, flag);
        }
    }
    let mut facts = config.run_facts();
    // Devices from an nvidia-smi table printed in the log.
    for fact in crate::read::shapes::nvidia_smi::facts(&other_text) {
        if !facts.iter().any(|f| f.field == fact.field) {
            facts.push(fact);
        }
    }
    let model = config.model().map(|(m, origin)| {
        notes.push(format!(
            "the model's shape printed in the log ({origin}) counts FLOPs per token"
        ));
        m
    });

    // Roles of the columns, then what they give.
    let columns = table.names.clone();
    let role_of = |column: &str| vocab.role(&normalise(column), framework);
    let first = |role: Role| columns.iter().find(|c| role_of(c) == Some(role)).cloned();
    let mut hints = Vec::new();
    if let Some(c) = first(Role::Step) {
        hints.push(ColumnHint::new(Field::Step, c, None, false));
    }
    let step_time = first(Role::StepTime);
    let elapsed = first(Role::Elapsed);
    let tokens = first(Role::Tokens);
    let tokens_seen = first(Role::TokensSeen);
    // The unit written against a column's values, else the one its name states; worked out once
    // here, not per row.
    let written: HashMap<String, TimeUnit> = units
        .into_iter()
        .filter_map(|(column, unit)| {
            let unit = match unit.as_str() {
                "ms" => TimeUnit::Milliseconds,
                "us" => TimeUnit::Microseconds,
                _ => return None,
            };
            Some((column, unit))
        })
        .collect();
    let time_unit = |c: &str| {
        written
            .get(c)
            .copied()
            .unwrap_or_else(|| TimeUnit::from_column_name(c))
    };
    // The seconds of a time column at a row: its index and its unit, looked up once.
    let time_of = |t: &Table, c: &str| {
        (
            t.index(c).expect("a column of the table"),
            time_unit(c).to_seconds(),
        )
    };
    let seconds = |t: &Table, (column, scale): (usize, f64), row: usize| {
        t.number(column, row)
            .map(|v| v * scale)
            .filter(|s| s.is_finite() && *s > 0.0)
    };
    let positive =
        |t: &Table, column: usize, row: usize| t.number(column, row).filter(|v| *v > 0.0);
    let index = |t: &Table, c: &str| t.index(c).expect("a column of the table");
    let world = config.world_size().map(|(w, _)| w);
    let seq = config.number(Fact::SeqLen);
    let tokens_fact = config.tokens_per_step();
    let local_tokens = match (config.number(Fact::MicroBatch), seq) {
        (Some(m), Some(s)) => Some(m * config.number(Fact::GradAccum).unwrap_or(1.0) * s),
        _ => None,
    };
    let mut derived_time = None;
    if step_time.is_none() {
        let global_tokens = tokens_fact.as_ref().map(|(t, _)| *t);
        let derivation: Option<Derivation<'_>> = if let (Some(r), Some(c)) =
            (first(Role::TokensPerSecond), tokens.as_ref())
        {
            // The line's own tokens over its own global rate (fairseq's wpb / wps): both printed to
            // more digits than a rate of steps (its ups, to 2 decimals).
            Some((format!("'{c}' / '{r}'"), {
                let (c, r) = (index(&table, c), index(&table, &r));
                Box::new(move |tb, row| Some(positive(tb, c, row)? / positive(tb, r, row)?))
            }))
        } else if let (Some(r), Some(t)) = (first(Role::TokensPerSecond), global_tokens) {
            Some((format!("tokens a step ({t}) / '{r}'"), {
                let r = index(&table, &r);
                Box::new(move |tb, row| positive(tb, r, row).map(|v| t / v))
            }))
        } else if let (Some(r), Some(local)) = (first(Role::TokensPerSecondPerDevice), local_tokens)
        {
            Some((
                    format!("one device's tokens a step (micro-batch x accumulation x sequence = {local}) / '{r}' (exact under data parallelism; with tensor, context or pipeline parallelism the device rate is divided by their degree)"),
                    { let r = index(&table, &r); Box::new(move |tb, row| positive(tb, r, row).map(|v| local / v)) },
                ))
        } else if let (Some(r), Some(t), Some(w)) =
            (first(Role::TokensPerSecondPerDevice), global_tokens, world)
        {
            Some((format!("tokens a step ({t}) / ('{r}' x {w} devices)"), {
                let r = index(&table, &r);
                Box::new(move |tb, row| positive(tb, r, row).map(|v| t / (v * w)))
            }))
        } else if let (Some(r), Some(samples)) = (
            first(Role::SamplesPerSecond),
            // The samples a rate of samples counts: the configured batch, else the tokens over the
            // sequence length (a DPO pair is one sample of two sequences, so the batch comes first).
            config
                .samples_per_step()
                .or_else(|| Some(global_tokens? / seq?)),
        ) {
            Some((format!("samples a step ({samples}) / '{r}'"), {
                let r = index(&table, &r);
                Box::new(move |tb, row| positive(tb, r, row).map(|v| samples / v))
            }))
        } else if let Some(r) = first(Role::StepsPerSecond) {
            Some((format!("1 / '{r}'"), {
                let r = index(&table, &r);
                Box::new(move |tb, row| positive(tb, r, row).map(|v| 1.0 / v))
            }))
        } else {
            None
        };
        if let Some((how, f)) = derivation {
            let timed = table.fill("step_time_s", &f);
            notes.push(format!("step_time_s = {how}: {timed} row(s) timed"));
            derived_time = Some("step_time_s".to_string());
        }
    }
    match (&step_time, &derived_time, &elapsed) {
        (Some(c), _, _) => hints.push(ColumnHint::new(
            Field::StepTime,
            c.clone(),
            Some(time_unit(c)),
            false,
        )),
        (None, Some(c), _) => hints.push(ColumnHint::new(
            Field::StepTime,
            c.clone(),
            Some(TimeUnit::Seconds),
            false,
        )),
        (None, None, Some(c)) => hints.push(ColumnHint::new(
            Field::StepTime,
            c.clone(),
            Some(time_unit(c)),
            true,
        )),
        _ => {}
    }
    let time_column = step_time.clone().or(derived_time.clone());
    if let Some(c) = &tokens {
        hints.push(ColumnHint::new(Field::Tokens, c.clone(), None, false));
    } else if let Some(c) = &tokens_seen {
        hints.push(ColumnHint::new(Field::Tokens, c.clone(), None, true));
    } else if tokens_fact.is_none() {
        // Tokens from the rows: the global batch x the sequence length, or a rate x the step time.
        let batch = first(Role::GlobalBatch);
        let made: Option<Derivation<'_>> = if let (Some(b), Some(s)) = (batch, seq) {
            Some((format!("'{b}' x the sequence length {s}"), {
                let b = index(&table, &b);
                Box::new(move |tb, row| tb.number(b, row).map(|v| v * s))
            }))
        } else if let (Some(r), Some(tc)) = (first(Role::TokensPerSecond), time_column.clone()) {
            let (r, time) = (index(&table, &r), time_of(&table, &tc));
            Some((
                format!("'{r}' x '{tc}'", r = table.names[r]),
                Box::new(move |tb, row| Some(tb.number(r, row)? * seconds(tb, time, row)?)),
            ))
        } else if let (Some(r), Some(tc), Some(w)) = (
            first(Role::TokensPerSecondPerDevice),
            time_column.clone(),
            world,
        ) {
            let (r, time) = (index(&table, &r), time_of(&table, &tc));
            Some((
                format!("'{r}' x {w} devices x '{tc}'", r = table.names[r]),
                Box::new(move |tb, row| Some(tb.number(r, row)? * w * seconds(tb, time, row)?)),
            ))
        } else if let (Some(r), None, Some(e), Some(st)) = (
            first(Role::TokensPerSecond),
            time_column.clone(),
            elapsed.clone(),
            first(Role::Step),
        ) {
            // A rate and a running total of time (OpenNMT's `tok/s` and `512 sec`): a step's tokens
            // are the rate over the time since the line before, per step between the two lines.
            let (r, time, st) = (index(&table, &r), time_of(&table, &e), index(&table, &st));
            Some((
                format!(
                    "'{r}' x the time a step since the line before ('{e}' and '{st}' differenced)",
                    r = table.names[r],
                    st = table.names[st]
                ),
                Box::new(move |tb, row| {
                    let before = row.checked_sub(1)?;
                    let seconds = (tb.number(time.0, row)? - tb.number(time.0, before)?) * time.1;
                    let steps = tb.number(st, row)? - tb.number(st, before)?;
                    (seconds > 0.0 && steps > 0.0).then_some(())?;
                    Some(tb.number(r, row)? * seconds / steps)
                }),
            ))
        } else if let (Some(r), Some(tc), Some(s)) =
            (first(Role::SamplesPerSecond), time_column.clone(), seq)
        {
            let (r, time) = (index(&table, &r), time_of(&table, &tc));
            Some((
                format!(
                    "'{r}' x the sequence length {s} x '{tc}'",
                    r = table.names[r]
                ),
                Box::new(move |tb, row| Some(tb.number(r, row)? * s * seconds(tb, time, row)?)),
            ))
        } else {
            None
        };
        if let Some((how, f)) = made {
            let counted = table.fill("tokens", &f);
            notes.push(format!("tokens = {how}: {counted} row(s) counted"));
            hints.push(ColumnHint::new(Field::Tokens, "tokens".into(), None, false));
        }
    }
    if let Some(c) = first(Role::LoggedMfu) {
        hints.push(ColumnHint::new(Field::LoggedMfu, c, None, false));
    }
    // Facts the rows give themselves are not facts of the run.
    if hints.iter().any(|h| h.field == Field::Tokens) {
        facts.retain(|f| f.field != Field::Tokens);
    }
    Ok(ConsoleRead {
        table,
        notes,
        warnings,
        facts,
        model,
        hints,
        framework: framework.map(|f| f.name.clone()),
        marks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(read: &ConsoleRead, name: &str) -> Vec<Option<f64>> {
        (0..read.table.height)
            .map(|row| read.table.get(name, row))
            .collect()
    }

    #[test]
    fn a_line_with_no_number_besides_its_step_makes_no_row_nor_column_however_the_log_is_cut() {
        // Found by the console_lines fuzz target: the third line of a family, with its step and a word
        // only, made a template and so an empty column when read whole, and none in blocks of a line.
        let log: &[u8] =
            b"/\n\xb6\x0b1\x07\xff\x0b/it_ 21#\x0b\xef/\n\xb6it\x00\x00/\x0b0\x0b\x0b1:\x82\n";
        let whole = read_in_blocks(&mut &log[..], None, &[], Given::default(), usize::MAX);
        let cut = read_in_blocks(&mut &log[..], None, &[], Given::default(), 1);
        match (whole, cut) {
            (Ok(a), Ok(b)) => assert_eq!(a.table, b.table),
            (Err(a), Err(b)) => assert_eq!(a, b),
            (a, b) => panic!("{a:?} / {b:?}"),
        }
        let log =
            "step: 1 loss: 2.0\nstep: 2 loss: 1.9\nsaving at step: 2 now\nstep: 3 loss: 1.8\n\
                   saving at step: 3 now\nsaving at step: 3 now\nstep: 4 loss: 1.7\n";
        let read =
            read_in_blocks(&mut log.as_bytes(), None, &[], Given::default(), usize::MAX).unwrap();
        assert_eq!(read.table.height, 4);
        assert_eq!(read.table.names, ["step", "loss"]);
    }

    #[test]
    fn raw_lines_of_a_known_skeleton_are_read_without_cleaning_as_cleaning_would_read_them() {
        // Two ranks taking turns, colour codes, a step counter and a rate that change width, a
        // timestamp that moves (`[rank10]`), lines of other skeletons between them. Debug builds also
        // read every line the general way and compare (Scanner::raw_fast); here the values are
        // checked against what was printed, and most lines must have gone the raw way.
        let mut log = String::new();
        let mut printed = Vec::new();
        for step in 1..=1500u32 {
            for rank in [0u32, 10] {
                let (loss, tps) = (f64::from(step % 97) / 8.0, 900 + step * 7);
                let tps_text = if tps >= 1000 {
                    format!("{},{:03}", tps / 1000, tps % 1000)
                } else {
                    tps.to_string()
                };
                log.push_str(&format!(
                    "[rank{rank}]:[titan] 2026-04-18 22:{:02}:{:02},{:03} - root - INFO - \u{1b}[31mstep: {step:>3}  \u{1b}[38;2;180;60;0mloss: {loss:7.4}  tps: {tps_text}\u{1b}[39m\n",
                    step / 60 % 60,
                    step % 60,
                    step % 1000,
                ));
                if rank == 0 {
                    printed.push((step, loss, tps));
                }
            }
            if step % 100 == 0 {
                log.push_str(&format!("[rank0]:[titan] 2026-04-18 22:00:00,000 - root - INFO - saved checkpoint {step}\n"));
            }
        }
        let scanner = scan_block(None, log.as_bytes());
        assert!(
            scanner.raw_reads > 2_900,
            "{} lines read raw",
            scanner.raw_reads
        );
        let read =
            read_in_blocks(&mut log.as_bytes(), None, &[], Given::default(), usize::MAX).unwrap();
        assert_eq!(read.table.height, 1500);
        for (row, (step, loss, tps)) in printed.iter().enumerate() {
            assert_eq!(read.table.get("step", row), Some(f64::from(*step)));
            assert_eq!(read.table.get("loss", row), Some(*loss));
            assert_eq!(read.table.get("tps", row), Some(f64::from(*tps)));
            let wall = crate::values::parse_timestamp(&format!(
                "2026-04-18 22:{:02}:{:02}.{:03}",
                step / 60 % 60,
                step % 60,
                step % 1000
            ));
            assert_eq!(read.table.get("wall_time", row), wall, "row {row}");
        }
    }

    #[test]
    fn torchtitan_of_2026_times_steps_from_tps_with_accumulation() {
        let log = "[rank0]:[titan] 2026-04-18 22:15:35,952 - root - INFO - CUDA capacity: NVIDIA GeForce RTX 5090 with 31.36GiB memory\n\
[rank0]:[titan] 2026-04-18 22:15:36,647 - root - INFO - Trainer is initialized with local batch size 8, global batch size 16, gradient accumulation steps 2, sequence length 2048, total steps 20000 (warmup 500)\n\
[rank0]:[titan] 2026-04-18 22:15:36,647 - root - INFO - Training starts at step 1\n\
[rank0]:[titan] 2026-04-18 22:16:26,294 - root - INFO - \u{1b}[31mstep: 100  \u{1b}[32mloss:  7.99030  \u{1b}[38;2;54;234;195mmemory: 29.11GiB(92.83%)  \u{1b}[34mtps: 70,848  \u{1b}[36mtflops: 48.15  \u{1b}[35mmfu: 15.43%\u{1b}[39m\n\
[rank0]:[titan] 2026-04-18 22:16:27,294 - root - INFO - \u{1b}[31mstep: 101  \u{1b}[32mloss:  7.9  \u{1b}[38;2;54;234;195mmemory: 29.11GiB(92.83%)  \u{1b}[34mtps: 70,000  \u{1b}[36mtflops: 48.15  \u{1b}[35mmfu: 15.43%\u{1b}[39m\n\
[rank0]:[titan] 2026-04-18 22:16:27,400 - root - INFO - validate step: 101  loss: 7.0  memory: 1.00GiB(1.00%)  tps: 5\n";
        assert!(detect(log).is_some());
        let r = read(&mut log.as_bytes(), None, &[], Given::default()).unwrap();
        assert_eq!(r.framework.as_deref(), Some("torchtitan"));
        assert_eq!(r.table.height, 2);
        // 8 sequences x 2 micro-batches x 2048 tokens / 70,848 tokens per second.
        let t = column(&r, "step_time_s");
        assert!((t[0].unwrap() - 8.0 * 2.0 * 2048.0 / 70848.0).abs() < 1e-12);
        assert_eq!(column(&r, "mfu (%)"), vec![Some(15.43), Some(15.43)]);
        let tokens = r.facts.iter().find(|f| f.field == Field::Tokens).unwrap();
        assert_eq!(
            tokens.value,
            crate::columns::FactValue::Number(16.0 * 2048.0)
        );
        let device = r
            .facts
            .iter()
            .find(|f| f.field == Field::DeviceName)
            .unwrap();
        assert_eq!(
            device.value,
            crate::columns::FactValue::Text("NVIDIA GeForce RTX 5090".into())
        );
        assert!(
            r.notes.iter().any(|n| n.contains("1 evaluation")),
            "{:?}",
            r.notes
        );
    }

    #[test]
    fn records_of_header_and_indented_lines() {
        let log = "[epoch=1][batch=3/5]:\n\t Train time/token: 14750088\n\t Train throughput/tokens_per_sec: 10347.9543\n\t Train loss/train/total: 1.5\n[epoch=1][batch=4/5]:\n\t Train time/token: 14760088\n\t Train throughput/tokens_per_sec: 10340.0\n\t Train loss/train/total: 1.4\n";
        let r = read(&mut log.as_bytes(), None, &[], Given::default()).unwrap();
        assert_eq!(r.table.height, 2);
        assert_eq!(
            column(&r, "Train throughput/tokens_per_sec")[1],
            Some(10340.0)
        );
    }

    /// The layouts the reader takes, each printing one line of `(key, value)` pairs after the step.
    const LAYOUTS: [&str; 7] = [
        "colon-spaces",
        "equals-dashes",
        "megatron-bars",
        "key-value-commas",
        "python-dict",
        "json",
        "timestamped-equals-commas",
    ];

    fn print_line(layout: &str, step: u32, pairs: &[(String, f64)]) -> String {
        let join = |f: &dyn Fn(&(String, f64)) -> String, sep: &str| {
            pairs.iter().map(f).collect::<Vec<_>>().join(sep)
        };
        match layout {
            "colon-spaces" => format!(
                "step: {step}  {}",
                join(&|(k, v)| format!("{k}:  {v}"), "  ")
            ),
            "equals-dashes" => format!(
                "step={step} - {}",
                join(&|(k, v)| format!("{k}={v}"), " - ")
            ),
            "megatron-bars" => format!(
                " iteration {step}/ 1000 | {} |",
                join(&|(k, v)| format!("{k}: {v}"), " | ")
            ),
            "key-value-commas" => {
                format!("step {step}, {}", join(&|(k, v)| format!("{k} {v}"), ", "))
            }
            "python-dict" => format!(
                "{{'step': {step}, {}}}",
                join(&|(k, v)| format!("'{k}': {v}"), ", ")
            ),
            "json" => format!(
                "{{\"step\": {step}, {}}}",
                join(&|(k, v)| format!("\"{k}\": {v}"), ", ")
            ),
            _ => format!(
                "[2025-01-02 03:04:{:02}] INFO step={step}, {}",
                step % 60,
                join(&|(k, v)| format!("{k}={v}"), ", ")
            ),
        }
    }

    /// A source that hands over at most `.1` bytes a read, as a pipe may.
    struct Trickle<'a>(&'a [u8], usize);

    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.1.min(buf.len()).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn the_corpus_reads_the_same_in_blocks_of_any_size() {
        // Each real log of tests/data/logs in one block, and cut into blocks of one line and of 4 KiB,
        // read apart and put together: the same rows, notes, warnings and facts.
        let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/logs");
        let mut logs: Vec<_> = std::fs::read_dir(&folder)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .collect();
        logs.sort();
        assert!(logs.len() >= 30);
        for log in logs {
            let bytes = std::fs::read(&log).unwrap();
            let whole = read_in_blocks(&mut &bytes[..], None, &[], Given::default(), usize::MAX);
            for block in [1, 4096] {
                let cut = read_in_blocks(&mut &bytes[..], None, &[], Given::default(), block);
                match (&whole, &cut) {
                    (Ok(a), Ok(b)) => {
                        assert_eq!(a.table, b.table, "{} in blocks of {block}", log.display());
                        assert_eq!(a.notes, b.notes, "{} in blocks of {block}", log.display());
                        assert_eq!(
                            a.warnings,
                            b.warnings,
                            "{} in blocks of {block}",
                            log.display()
                        );
                        assert_eq!(a.facts, b.facts, "{} in blocks of {block}", log.display());
                        assert_eq!(a.hints, b.hints, "{} in blocks of {block}", log.display());
                    }
                    (Err(a), Err(b)) => assert_eq!(a, b),
                    _ => panic!("{}: one way read, the other not", log.display()),
                }
            }
        }
    }

    #[test]
    fn a_block_never_ends_between_a_record_and_its_tagged_indented_lines() {
        // A continuation line is indented once its tags are off (`[tag] \tlr: 3`): the blocks must
        // not cut before it (found by the console_lines fuzz target, whose input is the second case).
        let log =
            "step: 1 loss: 2\n[tag] \tlr: 3\nstep: 2 loss: 1\n[tag] \tlr: 4\nstep: 3 loss: 0.5\n";
        let whole = read(&mut log.as_bytes(), None, &[], Given::default()).unwrap();
        assert_eq!(column(&whole, "lr"), vec![Some(3.0), Some(4.0), None]);
        let found: &[u8] = b"\x32\xb0\x0a\x5b\x32\x5f\xaf\xaf\xaf\x00\xd3\x89\x0a\x31\x31\x6c\x69\x84\x74\xb0\x0a\x5b\x32\x5f\xaf\xaf\xaf\x00\x00\x01\x23\x00\x00\x25\x39\x3a\x3a\xaf\x33\xdc\x57\x33\x20\x20\x33\x5d\x0a\x5b\x32\x5f\xaf\xaf\xaf\x00\x00\x00\x23\x00\x00\x25\x39\x3a\x3a\xaf\x33\xdc\x33\x20\x20\x33\x5d\x20\x09\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x0a\x5b\x32\x3d\x3d\x3d\x3a\x33\xd3\xdc\x33\x20\x20\x33\x5d\x20\x09\x0a\x5b\x32\x3d\x3d\x3d\x3a\x33\xd3\x89\x0a\x31\x31\x31\x27\xff\xff\x00\xff\xff\x5f\x00\x00\x00\x69\x74\x5f\x20\x0a\x5b\x32\x5f\xaf\xaf\xaf\x00\x00\x00\x23\x00\x00\x25\x39\x3a\x3a\xaf\x33\xdc\x33\x20\x20\x33\x5d\x20\x09\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x9e\x00\x7c\x31\x07\xfe\x0a\x2f\xc5\xc5\xff\x7c\x5d\x27\xff\xff\x00\xff\xff\x00\xff\xff\x00\x7c";
        for input in [log.as_bytes(), found] {
            let whole = read(&mut &input[..], None, &[], Given::default());
            let cut = read_in_blocks(&mut &input[..], None, &[], Given::default(), 1);
            match (whole, cut) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a.table, b.table);
                    assert_eq!(a.notes, b.notes);
                }
                (Err(a), Err(b)) => assert_eq!(a, b),
                (a, b) => panic!("{a:?} / {b:?}"),
            }
        }
    }

    #[test]
    fn lines_longer_than_a_mebibyte_are_counted_not_read_however_the_source_hands_them_over() {
        let step = |i: u32| format!("step: {i}  loss: 2.5  step_time: 0.5s\r\n");
        let mut log = String::new();
        for i in 1..=3 {
            log.push_str(&step(i));
        }
        log.push_str(&"x".repeat(LONGEST_LINE + 5));
        log.push('\n');
        for i in 4..=6 {
            log.push_str(&step(i));
        }
        log.push_str("step: 7  loss: 2.5"); // cut: no newline, fewer values
        let whole = read(&mut log.as_bytes(), None, &[], Given::default()).unwrap();
        for chunk in [1000, 4096, (1 << 20) + 3] {
            let trickled = read(
                &mut Trickle(log.as_bytes(), chunk),
                None,
                &[],
                Given::default(),
            )
            .unwrap();
            assert_eq!(trickled.table, whole.table, "{chunk}");
            assert_eq!(trickled.notes, whole.notes, "{chunk}");
            assert_eq!(trickled.warnings, whole.warnings, "{chunk}");
        }
        assert_eq!(
            column(&whole, "step"),
            (1..=6).map(|i| Some(f64::from(i))).collect::<Vec<_>>()
        );
        assert!(
            whole
                .notes
                .iter()
                .any(|n| n == "1 line(s) longer than 1 MiB not read"),
            "{:?}",
            whole.notes
        );
        assert!(
            whole
                .warnings
                .iter()
                .any(|w| w.contains("the last line (8) is cut")),
            "{:?}",
            whole.warnings
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]
        /// Any table printed as console lines, in each layout, reads back to the same columns and values.
        #[test]
        fn a_table_printed_in_any_layout_reads_back(
            layout in 0..LAYOUTS.len(),
            keys in proptest::collection::btree_set("k[a-z]{1,6}(_[a-z]{1,5})?", 1..6),
            values in proptest::collection::vec(
                proptest::collection::vec(-1e6f64..1e6, 6),
                3..12,
            ),
        ) {
            let keys: Vec<String> = keys.into_iter().collect();
            let layout = LAYOUTS[layout];
            let mut log = String::from("noise before the run\n");
            for (i, row) in values.iter().enumerate() {
                let pairs: Vec<(String, f64)> =
                    keys.iter().cloned().zip(row.iter().copied()).collect();
                log.push_str(&print_line(layout, i as u32 + 1, &pairs));
                log.push('\n');
            }
            let read = read(&mut log.as_bytes(), None, &[], Given::default()).unwrap();
            // A source that hands over a few bytes at a time reads the same, and so does the log cut
            // into blocks of a few lines, read apart and put together.
            let trickled = super::read(&mut Trickle(log.as_bytes(), 7), None, &[], Given::default()).unwrap();
            proptest::prop_assert_eq!(&trickled.table, &read.table);
            proptest::prop_assert_eq!(&trickled.notes, &read.notes);
            for block in [1, 100] {
                let blocks = read_in_blocks(&mut log.as_bytes(), None, &[], Given::default(), block).unwrap();
                proptest::prop_assert_eq!(&blocks.table, &read.table);
                proptest::prop_assert_eq!(&blocks.notes, &read.notes);
                proptest::prop_assert_eq!(&blocks.facts, &read.facts);
            }
            proptest::prop_assert_eq!(read.table.height, values.len(), "{}", layout);
            let step = if layout == "megatron-bars" { "iteration" } else { "step" };
            for (i, row) in values.iter().enumerate() {
                let got = |name: &str| read.table.get(name, i);
                proptest::prop_assert_eq!(got(step), Some(i as f64 + 1.0));
                for (k, v) in keys.iter().zip(row) {
                    proptest::prop_assert_eq!(got(k), Some(*v), "{} {}", layout, k);
                }
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]
        /// Any bytes, and any mix of log-like fragments, through every stage: no panic (the fuzz targets
        /// console_lines and console_facts do the same for longer).
        #[test]
        fn any_bytes_read_without_panic(
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..400),
            fragments in proptest::collection::vec(
                proptest::sample::select(vec![
                    "step", ": ", "=", " | ", " - ", ", ", "{'", "': ", "}", "[", "]", "(", ")",
                    "1,234", "5.6ms", "nan", "-inf", "1e+03", "29.1GiB(9%)", "\n", "\r", "\u{1b}[31m",
                    "[rank0]:", "2024-01-02 03:04:05,678 ", "2024-01-02 03:04:0", "--bf16", "world_size", "seq_len 8",
                    "é", "█", "/", "10/100", "tensor(", "..... ", "Namespace(a=1, ",
                ]),
                0..60,
            ),
        ) {
            let text: String = fragments.concat();
            for input in [bytes.as_slice(), text.as_bytes()] {
                let lossy = String::from_utf8_lossy(input);
                for raw in lossy.lines() {
                    for line in clean::clean(raw) {
                        let _ = pairs::pairs(&line.text);
                    }
                }
                let _ = detect(&lossy);
                let _ = read(&mut &input[..], None, &[], Given { num_devices: Some(4.0), ..Given::default() });
                let mut config = facts::ConfigFacts::default();
                config.read_text(&lossy, "line", &|_| false);
                let _ = (config.run_facts(), config.model());
            }
        }
    }

    #[test]
    fn a_cut_last_line_is_reported() {
        let log = "step: 1 loss: 2.0 step_time: 0.5 tokens: 100\nstep: 2 loss: 1.9 step_time: 0.5 tokens: 100\nstep: 3 loss: 1.8 step_ti";
        let r = read(&mut log.as_bytes(), None, &[], Given::default()).unwrap();
        assert_eq!(r.table.height, 2);
        assert!(r.warnings[0].contains("cut mid-way"), "{:?}", r.warnings);
    }
}
