//! The lines stage: one pass over a log's lines. Each line is cleaned ([`super::clean`]) and read for
//! named values ([`super::pairs`]); a line with a step counter and other numbers is a training line of
//! its *family* (its step key, and whether it is an evaluation's), written to that family's rows
//! ([`super::rows`]), through its skeleton's template where it has one; every other line is kept for
//! the facts reader, and lines that mark a relaunch or a checkpoint are noted.

use std::collections::HashMap;

use super::pairs::{self, Pair, Value};
use super::rows::{column_name, FamilyRows, FastMap};
use super::vocabulary::{normalise, vocabulary, Framework, Role};
use super::{clean, digest, stamp, template};
use crate::goodput::Mark;

/// A candidate training line (with its continuation lines), borrowing from the log's text.
#[derive(Debug)]
pub(super) struct Record<'t> {
    /// Index (from 0) of the line it starts on.
    pub(super) line: usize,
    pub(super) wall_time: Option<f64>,
    pub(super) rank: Option<u32>,
    pub(super) pairs: Vec<Pair<'t>>,
    pub(super) family: (String, bool),
    /// Its numbers other than the step.
    pub(super) numbers: usize,
    /// Whether it carries a time or a rate.
    pub(super) timed: bool,
    /// The digest of its pairs ([`digest`]).
    pub(super) digest: u64,
}

/// What the vocabulary says of each key, worked out once per distinct key rather than once per line.
#[derive(Default)]
pub(super) struct Keys {
    /// Raw key → its normalised form, whether it is a step counter, and whether it carries a time or
    /// a rate.
    pub(super) known: FastMap<String, Known>,
}

pub(super) struct Known {
    pub(super) normal: String,
    pub(super) step: bool,
    pub(super) timed: bool,
}

impl Keys {
    pub(super) fn of(&mut self, pair: &Pair<'_>, framework: Option<&Framework>) -> &Known {
        if !self.known.contains_key(pair.key.as_ref()) {
            let vocab = vocabulary();
            let normal = normalise(&pair.key);
            let timed = matches!(
                vocab.column_role(&column_name(&pair.key, pair.value.unit()), framework),
                Some(
                    Role::StepTime
                        | Role::Elapsed
                        | Role::TokensPerSecond
                        | Role::TokensPerSecondPerDevice
                        | Role::SamplesPerSecond
                        | Role::SamplesPerSecondPerDevice
                        | Role::StepsPerSecond
                )
            ) || pair
                .key
                .strip_suffix(super::pairs::BRACKETED)
                .is_some_and(|key| {
                    // TensorFlow's `step = 10100 (48.270 sec)`: the steps' time after the counter.
                    vocab.role(&normalise(key), framework) == Some(Role::Step)
                        && matches!(pair.value.unit(), "s" | "ms" | "us")
                });
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
pub(super) fn contains_ignore_case(haystack: &str, needle: &str) -> bool {
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
pub(super) fn is_evaluation(
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
    if contains_ignore_case(head, "validat")
        || contains_ignore_case(head, "eval")
        || text.split('|').any(phase_field)
    {
        return true;
    }
    // By its keys: an evaluation's where at least half its named figures are an evaluation's (a
    // training line that ends with the epoch's validation figures, as Keras prints its last bar's,
    // stays a training line).
    let (mut evaluation, mut figures) = (0usize, 0usize);
    for p in pairs {
        let known = keys.of(p, framework);
        if known.step || p.value.number().is_none() {
            continue;
        }
        let k = known.normal.as_str();
        figures += 1;
        evaluation += usize::from(
            k.starts_with("val_")
                || k.starts_with("eval")
                || k.starts_with("validation")
                || k.starts_with("test_")
                || (k.starts_with("val") && k.len() > 3 && !k.as_bytes()[3].is_ascii_alphabetic()),
        );
    }
    evaluation > 0 && evaluation * 2 >= figures
}

/// The step key of a line's pairs: the first numeric pair whose key is a step counter.
pub(super) fn step_key(
    pairs: &[Pair],
    keys: &mut Keys,
    framework: Option<&Framework>,
) -> Option<String> {
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
pub(super) fn training_line(
    text: &str,
    evaluation_tag: bool,
    pairs: &[Pair<'_>],
    keys: &mut Keys,
    framework: Option<&Framework>,
) -> Option<(String, bool, usize, bool)> {
    let key = match step_key(pairs, keys, framework) {
        Some(key) => key,
        None => stepless(pairs, keys, framework)?,
    };
    let eval = evaluation_tag || is_evaluation(text, pairs, keys, framework);
    let (mut numbers, mut timed) = (0, false);
    for p in pairs {
        let known = keys.of(p, framework);
        numbers += usize::from(p.value.number().is_some() && known.normal != key);
        timed |= known.timed;
    }
    Some((key, eval, numbers, timed))
}

/// The family of a line with no step counter that is still a training line: a printed list of numbers
/// (`[2.68, 2.84, 63.6, 0, 0.0001]`, its positions named `#1`, `#2`, ...), whose step is the position
/// that counts ([`POSITIONS`]); or named figures one of which is a loss, whose step is its line's place
/// in the family ([`STEPLESS`]).
fn stepless(pairs: &[Pair<'_>], keys: &mut Keys, framework: Option<&Framework>) -> Option<String> {
    let numbers = pairs.iter().filter(|p| p.value.number().is_some()).count();
    if numbers >= 3 && pairs.iter().all(|p| p.key.starts_with('#')) {
        return Some(POSITIONS.to_string());
    }
    let loss = pairs
        .iter()
        .any(|p| p.value.number().is_some() && keys.of(p, framework).normal.contains("loss"));
    (numbers >= 2 && loss).then(|| STEPLESS.to_string())
}

/// The family of printed lists of numbers.
pub(super) const POSITIONS: &str = "#";
/// The family of training lines with no step counter.
pub(super) const STEPLESS: &str = "";

impl<'t> Record<'t> {
    /// Takes an indented one-value line (`text`, its `pair`) after the record's header as the record's.
    pub(super) fn continue_with(
        &mut self,
        pair: Pair<'t>,
        keys: &mut Keys,
        framework: Option<&Framework>,
    ) {
        let known = keys.of(&pair, framework);
        self.numbers += usize::from(pair.value.number().is_some() && known.normal != self.family.0);
        self.timed |= known.timed;
        self.digest = digest::pair(self.digest, &pair);
        self.pairs.push(pair);
    }
}

/// Scans `text` for candidate training lines, handing each (with its continuation lines) to `found`,
/// which says whether to go on.
pub(super) fn scan<'t>(
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

/// A template and what it means in the family its lines belong to.
pub(super) struct TemplateOf {
    pub(super) template: template::Template,
    /// Its skeleton.
    pub(super) shape: template::Shape,
    pub(super) family: usize,
    /// Each pair's column in the family.
    pub(super) columns: Vec<usize>,
    pub(super) numbers: usize,
    pub(super) timed: bool,
    /// What each pair's key adds to a line's digest, and the value of a pair whose value never varies.
    pub(super) key_digests: Vec<u64>,
    pub(super) value_digests: Vec<u64>,
    /// Lines of it read through it whose raw line made no raw template: after
    /// [`RAW_TEMPLATE_MISSES`], no more are tried (each try costs a pass over the raw line).
    pub(super) raw_misses: usize,
}

impl TemplateOf {
    /// The digest of a line read through the template as `values`: [`digest::pairs`] of its pairs.
    pub(super) fn digest(&self, values: &[template::Read]) -> u64 {
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
pub(super) struct FastRecord {
    pub(super) template: usize,
    pub(super) line: usize,
    pub(super) digest: u64,
    pub(super) wall_time: Option<f64>,
    pub(super) rank: Option<u32>,
    pub(super) values: Vec<template::Read>,
}

/// A template over a raw line as the log holds it, colour codes, tags and timestamp included: a line
/// of its skeleton is read without being cleaned at all. It is made from a line the template of its
/// cleaned text read, and reads as that template would: the same pairs, the same wall time and rank.
/// Every digit run of the raw line outside its numbers and its timestamp (a colour code's, a rank's)
/// must be the template's; its timestamp must have the template's place and widths, and the skeleton
/// of its text without colour codes no other place where a timestamp could be, so that cleaning would
/// cut every line of the skeleton as it cut the template's.
pub(super) struct RawTemplate {
    pub(super) shape: template::Shape,
    /// Over the raw line, its pairs those of `of`.
    pub(super) template: template::Template,
    /// The template of the cleaned line, whose family and columns the values go to.
    pub(super) of: usize,
    pub(super) stamp: Option<Stamp>,
    pub(super) rank: Option<u32>,
    /// The last line it read.
    pub(super) exemplar: template::Exemplar,
}

impl RawTemplate {
    /// The wall time and numbers of `raw`, a line of the template's skeleton whose digit runs are
    /// `runs` (its literal digits checked unless `literal_checked`); `None` where it cannot read it.
    pub(super) fn read(
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
pub(super) struct Stamp {
    pub(super) first: usize,
    pub(super) offset: usize,
    pub(super) widths: Vec<usize>,
}

impl Stamp {
    /// The wall time of a raw line of the template's skeleton (its digit runs `runs`).
    pub(super) fn read(&self, raw: &str, runs: &[(usize, usize)]) -> Option<f64> {
        let stamp = runs.get(self.first..self.first + self.widths.len())?;
        if stamp[0].0 != self.offset || stamp.iter().zip(&self.widths).any(|(r, w)| r.1 - r.0 != *w)
        {
            return None;
        }
        stamp::plain_timestamp(raw.get(self.offset..stamp[stamp.len() - 1].1)?)
    }
}

/// Raw templates kept at most, and at most per skeleton (one per rank that writes it).
pub(super) const RAW_TEMPLATES: usize = 64;
pub(super) const RAW_TEMPLATES_PER_SKELETON: usize = 8;
pub(super) const RAW_TEMPLATE_MISSES: usize = 16;

/// How many places in `skeleton` (made by [`template::skeleton`]) could hold a timestamp
/// (`2024-01-02 03:04:05`, `2024-01-02T03:04:05`): digit runs with its separators between them.
pub(super) fn timestamp_places(skeleton: &[u8]) -> usize {
    const D: u8 = 0xFF;
    skeleton
        .windows(11)
        .filter(|w| matches!(w, [D, b'-', D, b'-', D, b' ' | b'T', D, b':', D, b':', D]))
        .count()
}

/// The record being read: later indented one-value lines may still be its.
pub(super) enum Open {
    General(Record<'static>),
    Fast(FastRecord),
}

/// The lines kept for the facts reader: every line that is not a training line, and the first
/// [`FACT_LINES_PER_FAMILY`] of each family (those of the family that gives the rows are left out at the
/// end), up to [`FACT_BYTES`] in all.
#[derive(Default, Clone)]
pub(super) struct FactLines {
    pub(super) lines: Vec<FactLine>,
    pub(super) bytes: usize,
    /// Lines not kept once the bytes were spent.
    pub(super) dropped: usize,
}

/// A line kept for the facts reader: its index, the training lines it holds (each family and the
/// line's place among the family's lines), its text.
#[derive(Clone)]
pub(super) struct FactLine {
    pub(super) index: usize,
    pub(super) families: Vec<(usize, usize)>,
    pub(super) raw: Box<str>,
}

pub(super) const FACT_LINES_PER_FAMILY: usize = 256;
pub(super) const FACT_BYTES: usize = 64 << 20;

/// One pass over a log's lines: each training line to its family's rows (through its skeleton's
/// template where it has one), the others kept for the facts reader.
pub(super) struct Scanner<'v> {
    pub(super) framework: Option<&'v Framework>,
    pub(super) keys: Keys,
    pub(super) families: Vec<FamilyRows>,
    /// Each family's lines seen so far (rows, repeats and other ranks' lines alike).
    pub(super) family_lines: Vec<usize>,
    pub(super) by_rank: HashMap<u32, usize>,
    pub(super) templates: Vec<TemplateOf>,
    pub(super) template_of: FastMap<Vec<u8>, Option<usize>>,
    pub(super) shape: Vec<u8>,
    pub(super) runs: Vec<(usize, usize)>,
    /// The template used last.
    pub(super) last: Option<usize>,
    pub(super) raw_templates: Vec<RawTemplate>,
    /// The raw templates of each raw skeleton (an empty list: none can be made).
    pub(super) raw_of: FastMap<Vec<u8>, Vec<usize>>,
    pub(super) last_raw: Option<usize>,
    /// Lines read through raw templates (the tests check that they are used).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(super) raw_reads: usize,
    /// Value buffers of rows written, for the next lines read through templates.
    pub(super) spare: Vec<Vec<template::Read>>,
    pub(super) open: Option<Open>,
    pub(super) cleaner: clean::Cleaner,
    pub(super) training: Vec<(usize, usize)>,
    pub(super) lines: usize,
    pub(super) facts: FactLines,
    /// Lines longer than [`LONGEST_LINE`], not read.
    pub(super) too_long: usize,
    /// Lines that mark a (re)launch of training or a checkpoint (the vocabulary's `restarts` and
    /// `checkpoints`).
    pub(super) mark_lines: Vec<(usize, Mark)>,
}

/// Lines longer than this are no training lines; they are counted and not read.
pub(super) const LONGEST_LINE: usize = 1 << 20;

impl<'v> Scanner<'v> {
    pub(super) fn new(framework: Option<&'v Framework>) -> Self {
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
    pub(super) fn family(&mut self, family: &(String, bool)) -> usize {
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
    pub(super) fn separators(&self) -> &'v [String] {
        self.framework.map_or(&[], |f| f.separators.as_slice())
    }

    /// Writes the open record's row.
    pub(super) fn close(&mut self) {
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
    pub(super) fn count(&mut self, family: usize, rank: Option<u32>) -> usize {
        if let Some(rank) = rank {
            *self.by_rank.entry(rank).or_default() += 1;
        }
        self.family_lines[family] += 1;
        self.family_lines[family] - 1
    }

    pub(super) fn keep_for_facts(&mut self, index: usize, families: &[(usize, usize)], raw: &str) {
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
    pub(super) fn line(&mut self, index: usize, raw: &str) {
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
    pub(super) fn raw_fast(&mut self, index: usize, raw: &str) -> Option<(usize, usize)> {
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
    pub(super) fn learn_raw(
        &mut self,
        raw: &str,
        cleaner: &clean::Cleaner,
        text: &str,
        place: &clean::Place,
    ) {
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
    pub(super) fn raw_template(
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
                let offset = stamp::find_timestamp(raw, 0)?;
                let first = self.runs.iter().position(|r| r.0 == offset)?;
                let (used, value) = stamp::leading_iso(&raw[offset..])?;
                let last = self.runs.iter().position(|r| r.1 == offset + used)?;
                if value.to_bits() != wall_time.to_bits()
                    || !(first + 5..=first + 6).contains(&last)
                    || stamp::plain_timestamp(&raw[offset..offset + used]).map(f64::to_bits)
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
    pub(super) fn assert_read_as_general(&self, text: &str, of: usize, values: &[template::Read]) {
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
    pub(super) fn fast(
        &mut self,
        index: usize,
        text: &str,
        line: &clean::Place,
    ) -> Option<(usize, usize)> {
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
    pub(super) fn learn(
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

/// Writing a training line's row: here, beside the records and templates it reads from, so that the
/// rows know nothing of how lines are read.
impl FamilyRows {
    /// Adds a record's row: a column per key.
    pub(super) fn push(&mut self, record: Record<'_>) {
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
    pub(super) fn push_read(&mut self, read: &FastRecord, template: &TemplateOf) {
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
}
