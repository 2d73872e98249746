//! The reading stage: the chosen reading of the rows, from the candidates ([`super::candidates`]) and
//! the evidence ([`super::evidence`]). In order:
//!
//! 1. **The step**: of the counters on the lines, the one that goes back least often; a counter that
//!    restarts every epoch, with the epoch beside it, made global.
//! 2. **Launches and their facts** ([`super::launches`]): each launch's devices, precision, batch and
//!    model from the configuration it printed (or inherited), the files beside the log and the flags.
//! 3. **Clocks**: every way the rows time a step; the evidence's choice among them.
//! 4. **Scopes and counts**: whether each rate is one device's or all devices', and the count a step,
//!    each checked against the step time chosen; a count the log's own rate contradicts is not used.
//! 5. **Hints** for the column stage, the columns made here (`step`, `step_time_s`, `tokens`,
//!    `samples`, a fact that differs by launch), and what `-v` says of each choice.

use std::collections::HashMap;

use super::candidates::{self, Clock, ClockKind, Meaning, Scope, Steps};
use super::evidence::{self, Reference};
use super::family::Chosen;
use super::launches::Launches;
use super::rows::{Table, WALL_TIME};
use super::scan::FACT_BYTES;
use super::vocabulary::{normalise, vocabulary, Fact, Framework, Role};
use super::{ConsoleRead, Given};
use crate::columns::{ColumnHint, FactValue, Field, RunFact, TimeUnit};

/// A per-row derivation and the words that say how it was made.
type Derivation<'a> = (String, Box<dyn Fn(&Table, usize) -> Option<f64> + 'a>);

/// A fact's value at each row (NaN where a row's launch gives none), held once a launch, and how it
/// reads in words: the value where every row has the same, else "each launch's". `None` where no row
/// has one.
struct PerRow<'s> {
    by_launch: Vec<f64>,
    /// Each row's launch.
    of_row: &'s [usize],
    words: String,
}

impl<'s> PerRow<'s> {
    fn of(by_launch: Vec<f64>, launches: &Launches<'s>) -> Option<PerRow<'s>> {
        let mut with_rows = by_launch
            .iter()
            .zip(launches.with_rows())
            .filter_map(|(v, rows)| rows.then_some(*v));
        let mut known = with_rows.clone().filter(|v| v.is_finite());
        let first = known.next()?;
        let words = if with_rows.all(|v| v == first) {
            format!("{first}")
        } else {
            "each launch's".to_string()
        };
        Some(PerRow {
            by_launch,
            of_row: launches.of_row,
            words,
        })
    }

    fn at(&self, row: usize) -> f64 {
        self.by_launch[self.of_row[row]]
    }
}

/// What the reading of a log's rows decided from the evidence over them. A log read in windows
/// ([`super::stream`]) is read to the choices its first rows gave: each window's rows are read as those
/// were, whatever its own rows would say.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Pinned {
    /// The column of the step counter on the lines, if any.
    counter: Option<String>,
    /// Whether each row's epoch came from header lines.
    header_epochs: bool,
    /// How a counter that restarts every epoch was made global.
    global_step: Option<candidates::GlobalStep>,
    /// The position of a printed list that counts, where no counter is named.
    position: Option<String>,
    /// Two rates' scopes told by their ratio, and the device count that ratio gave.
    paired: Vec<(String, Scope)>,
    world_ratio: Option<f64>,
    /// Each covering clock's resolution, by name (a running mean's origin is in its name).
    resolutions: Vec<(String, f64)>,
    /// The clock chosen as the step time, by name, and the covering clock whose values time the rows.
    clock: Option<String>,
    reference: Option<String>,
    /// Each rate column's scope as the evidence decided it.
    scopes: Vec<(String, Scope)>,
    /// The configured counts a step the log's own rate contradicted.
    facts_dropped: Vec<Field>,
    /// The count a step a samples rate was measured over, and the clock that says so.
    steady: Option<(f64, String)>,
    /// The facts an nvidia-smi table printed in the log gave.
    smi_facts: Vec<RunFact>,
}

impl Pinned {
    /// Whether the step time is a covering clock's, each row getting its span's figure.
    pub(super) fn times_by_spans(&self) -> bool {
        self.reference.is_some() && self.clock.is_none()
    }
}

/// A window of a log read in windows, as the reading takes it: the choices of the log's first rows,
/// the log's row the window's first row is, and the facts its lines gave so far.
pub(super) struct Window<'a> {
    pub(super) pinned: &'a Pinned,
    pub(super) first_row: usize,
    pub(super) facts: &'a mut super::launches::FactsSoFar,
    /// The line of the first row a covering clock's spans may start at: where a span of the window
    /// before ended.
    pub(super) spans_from: Option<usize>,
}

/// What a reading gave: the read, its choices, the line of each row, and the lines the spans of the
/// covering clock that times the rows end on (but the last span's, which the rows after may lengthen).
pub(super) struct Reading {
    pub(super) read: ConsoleRead,
    pub(super) pinned: Pinned,
    pub(super) row_lines: Vec<usize>,
    pub(super) span_ends: Vec<usize>,
}

/// Reads the chosen rows' columns and the log's facts into what the column stage takes.
pub(super) fn read(
    chosen: Chosen,
    framework: Option<&'static Framework>,
    beside: &[(String, String)],
    given: Given,
) -> Result<ConsoleRead, String> {
    read_pinned(chosen, framework, beside, given, None).map(|reading| reading.read)
}

/// [`read`] with the choices the log's first rows made where `window` is given (a window of a log
/// read in windows), else made here from the evidence: the read, its choices and the line each row was
/// read from.
pub(super) fn read_pinned(
    chosen: Chosen,
    framework: Option<&'static Framework>,
    beside: &[(String, String)],
    given: Given,
    mut window: Option<Window<'_>>,
) -> Result<Reading, String> {
    let pinned = window.as_ref().map(|w| w.pinned);
    let first_row = window.as_ref().map_or(0, |w| w.first_row);
    let vocab = vocabulary();
    let mut record = Pinned::default();
    let Chosen {
        mut table,
        units,
        mut notes,
        mut warnings,
        mut marks,
        fact_lines,
        chosen,
        row_lines,
        ..
    } = chosen;
    // The first row a covering clock's spans may start at.
    let spans_from = window
        .as_ref()
        .and_then(|w| w.spans_from)
        .map_or(0, |line| row_lines.partition_point(|l| *l < line));

    if fact_lines.dropped > 0 {
        notes.push(format!(
            "{} line(s) past the first {} MiB of lines other than training lines not read for facts",
            fact_lines.dropped,
            FACT_BYTES >> 20
        ));
    }

    // Roles of the columns.
    let columns = table.names.clone();
    let role_of = |column: &str| vocab.column_role(column, framework);
    let first = |role: Role| columns.iter().find(|c| role_of(c) == Some(role)).cloned();
    let mut hints = Vec::new();
    // Columns whose values are timestamps (`time: 2025-08-20 13:54:19.240802`): clocks of the wall,
    // never a step's time.
    let stamped: Vec<String> = units
        .iter()
        .filter(|(_, unit)| unit == super::pairs::TIMESTAMP)
        .map(|(column, _)| column.clone())
        .collect();
    // The unit written against a column's values, else the one its name states; worked out once
    // here, not per row.
    let written: HashMap<String, TimeUnit> = units
        .into_iter()
        .filter_map(|(column, unit)| {
            let unit = match unit.as_str() {
                "ms" => TimeUnit::Milliseconds,
                "us" => TimeUnit::Microseconds,
                "m" | "min" | "mins" => TimeUnit::Minutes,
                "h" | "hr" | "hrs" => TimeUnit::Hours,
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
    // A time printed in brackets after the step counter (TensorFlow's `step = 10100 (48.270 sec)`)
    // is a logged time (of the steps since the line before, as evidence will say).
    let bracketed_time = |c: &str| {
        c.split_once(super::pairs::BRACKETED)
            .is_some_and(|(key, unit)| {
                vocab.role(&normalise(key), framework) == Some(Role::Step)
                    && [" (s)", " (ms)", " (us)"].contains(&unit)
            })
    };
    // The figure in brackets after a value (`time 0.2371 (0.2627)`, `185.72/s (108.73/s)`) is its
    // running mean: a clock only as a running total (below), never a step's time or a rate.
    let running_mean = |c: &str| {
        c.split_once(super::pairs::BRACKETED)
            .is_some_and(|(key, _)| columns.iter().any(|other| other == key))
    };
    let columns_of = |role: Role| -> Vec<String> {
        columns
            .iter()
            .filter(|c| {
                (role_of(c) == Some(role) || (role == Role::StepTime && bracketed_time(c)))
                    && !stamped.contains(c)
                    && !running_mean(c)
            })
            .cloned()
            .collect()
    };
    let index = |t: &Table, c: &str| t.index(c).expect("a column of the table");
    let elapsed = first(Role::Elapsed);
    let tokens = first(Role::Tokens);
    let tokens_seen = first(Role::TokensSeen);

    // The rows after which the log says it started again.
    let restarts: Vec<usize> = marks
        .iter()
        .filter(|(_, m)| *m == crate::goodput::Mark::Restart)
        .map(|(row, _)| *row)
        .collect();
    // 1. The step: of the counters on the lines, the one that goes back least often (a global step
    // before an epoch's batch counter); one that restarts every epoch, with the epoch beside it, is
    // made global.
    let goes_back = |c: usize| {
        let v = candidates::values(&table, c);
        v.windows(2).filter(|w| w[1] < w[0]).count()
    };
    // A step counter counts: a column with a fraction in it (fairseq's `update: 5.012`, the epoch's
    // fraction) is none.
    let whole = |t: &Table, c: usize| {
        candidates::values(t, c)
            .iter()
            .all(|v| v.is_nan() || v.fract() == 0.0)
    };
    let mut step_column = match pinned {
        Some(p) => p.counter.as_deref().and_then(|n| table.index(n)),
        None => columns
            .iter()
            .filter(|c| role_of(c) == Some(Role::Step))
            .map(|c| index(&table, c))
            .filter(|&c| whole(&table, c))
            .min_by_key(|&c| goes_back(c)),
    };
    record.counter = step_column.map(|c| table.names[c].clone());
    // An epoch printed on a line of its own before its steps' lines (Keras's `Epoch 4/6`, YOLO's and
    // many loops' headers), where the lines themselves name none: each row's, as a column.
    if !columns
        .iter()
        .any(|c| c.to_ascii_lowercase().contains("epoch"))
    {
        // Pinned, the header lines are read only where the first rows had them.
        let epochs = match pinned {
            Some(p) if p.header_epochs => Some(
                header_epochs(&fact_lines, chosen, &row_lines)
                    .unwrap_or_else(|| vec![None; table.height]),
            ),
            Some(_) => None,
            None => header_epochs(&fact_lines, chosen, &row_lines),
        };
        if let Some(epochs) = epochs {
            record.header_epochs = true;
            let name = free_name(&table, "epoch");
            notes.push(format!(
                "reading: {name}: the epoch printed on a line of its own before each row's lines"
            ));
            table.fill(&name, &|_, row| epochs[row]);
            if let Some(c) = table.index(&name) {
                table.integer_if_whole(c);
            }
        }
    }
    // The counter within an epoch, where the step is made global from it.
    let mut epoch_counter: Option<usize> = None;
    let global = match pinned {
        Some(p) => p.global_step.clone(),
        None => step_column.and_then(|c| candidates::global_step(&table, c)),
    };
    let made_global = global
        .as_ref()
        .zip(step_column)
        .and_then(|(g, c)| Some((g.values(&table, c)?, g.how.clone())));
    record.global_step = global;
    if let Some((values, how)) = made_global {
        epoch_counter = step_column;
        let name = if table.index("step").is_some() {
            free_name(&table, "global_step")
        } else {
            "step".to_string()
        };
        table.fill(&name, &|_, row| Some(values[row]).filter(|v| v.is_finite()));
        notes.push(format!("reading: {name}: {how}"));
        step_column = table.index(&name);
        if let Some(c) = step_column {
            table.integer_if_whole(c);
        }
    }
    // No counter named as one: the position of a printed list that counts (whole numbers that grow
    // from line to line: so-vits-svc's global step among its losses), else each line's place.
    if step_column.is_none() {
        let grows = |c: usize| {
            let v = candidates::values(&table, c);
            let up = v.windows(2).filter(|w| w[1] > w[0]).count();
            (whole(&table, c) && up * 10 >= (v.len().saturating_sub(1)) * 8 && up >= 2)
                .then_some(up)
        };
        step_column = match pinned {
            Some(p) => p.position.as_deref().and_then(|n| table.index(n)),
            None => columns
                .iter()
                .filter(|c| c.starts_with('#'))
                .map(|c| index(&table, c))
                .filter_map(|c| grows(c).map(|up| (c, up)))
                .max_by_key(|(_, up)| *up)
                .map(|(c, _)| c),
        };
        record.position = step_column.map(|c| table.names[c].clone());
        match step_column {
            Some(c) => notes.push(format!(
                "reading: '{}' is the step: the position of the printed list whose whole numbers grow from line to line",
                table.names[c]
            )),
            None => {
                // Lines that each close an epoch (`Epoch: 19, lr: ... - train loss: ... - valid
                // loss: ...`) summarise epochs: no step is timed by them.
                let epochs_a_line = columns
                    .iter()
                    .filter(|c| c.to_ascii_lowercase().contains("epoch"))
                    .any(|c| {
                        let v = candidates::values(&table, index(&table, c));
                        let ones = v.windows(2).filter(|w| w[1] - w[0] == 1.0).count();
                        v.len() >= 2 && ones * 10 >= (v.len() - 1) * 9
                    });
                if epochs_a_line && pinned.is_none() {
                    return Err(format!(
                        "no training steps found in {} launch(es): its {} lines with figures each close an epoch (no line of it times a step)",
                        restarts.len() + 1,
                        table.height
                    ));
                }
                let name = free_name(&table, "step");
                table.fill(&name, &|_, row| Some((first_row + row) as f64 + 1.0));
                notes.push(format!(
                    "reading: no step counter on the lines: {name} is each line's place (a line a step)"
                ));
                step_column = table.index(&name);
                if let Some(c) = step_column {
                    table.integer_if_whole(c);
                }
            }
        }
    }
    if let Some(c) = step_column {
        hints.push(ColumnHint::new(
            Field::Step,
            table.names[c].clone(),
            None,
            false,
        ));
    }
    // An epoch beside a counter that restarts each epoch with no total printed (MXNet's `Epoch[2]
    // Batch [100-120]`): a new epoch, not a new launch.
    let epoch_column = columns
        .iter()
        .position(|c| c.to_ascii_lowercase().contains("epoch"))
        .filter(|c| Some(*c) != step_column && epoch_counter.is_none());
    let steps = Steps::of(&table, step_column, &restarts, epoch_column);

    // 2. Each launch's facts.
    let launches = Launches::read(
        &fact_lines,
        chosen,
        &row_lines,
        &steps,
        framework,
        beside,
        given,
        window.as_mut().map(|w| &mut *w.facts),
    );
    let (mut facts, varying) = launches.run_facts();
    let launch_count = launches.with_rows().iter().filter(|r| **r).count();
    if launch_count > 1 {
        notes.push(format!(
            "reading: {launch_count} launches (lines from {}), each with the facts it printed or inherited",
            launches
                .first_line
                .iter()
                .map(|l| (l + 1).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    // Launches that logged no training step, for `mfu goodput` (counted, not attempts); a window's
    // rows are read for their figures only.
    let idle = match pinned {
        Some(_) => Vec::new(),
        None => super::launches::without_steps(&fact_lines, &row_lines, &steps.launch),
    };
    if !idle.is_empty() {
        notes.push(format!(
            "reading: {} launch(es) logged no training step (from line {})",
            idle.len(),
            idle.iter()
                .map(|l| (l.line + 1).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        marks.extend(
            idle.iter()
                .map(|l| (l.rows_before, crate::goodput::Mark::LaunchWithoutSteps)),
        );
        marks.sort_by_key(|(row, _)| *row);
    }
    // Devices from an nvidia-smi table printed in the log (pinned, the first rows').
    let smi_facts = match pinned {
        Some(p) => p.smi_facts.clone(),
        None => crate::read::shapes::nvidia_smi::facts(&launches.other_text.concat()),
    };
    record.smi_facts.clone_from(&smi_facts);
    for fact in smi_facts {
        if !facts.iter().any(|f| f.field == fact.field)
            && !varying.iter().any(|v| v.field == fact.field)
        {
            facts.push(fact);
        }
    }
    let model = launches
        .configs
        .iter()
        .find_map(|c| c.model())
        .map(|(m, origin)| {
            notes.push(format!(
                "the model's shape printed in the log ({origin}) counts FLOPs per token"
            ));
            m
        });

    // Two rates of one quantity on the lines whose ratio is the device count are one device's and all
    // devices' (`Tokens per second` beside `Global tokens/sec`), whatever their names say; where no
    // device count is printed, the ratio gives it.
    let mut world = PerRow::of(
        launches.per_launch(|c| c.world_size().map(|(w, _)| w)),
        &launches,
    );
    let mut paired: Vec<(usize, Scope)> = Vec::new();
    if let Some(p) = pinned {
        paired.extend(
            p.paired
                .iter()
                .filter_map(|(name, scope)| Some((table.index(name)?, *scope))),
        );
        if let (None, Some(q)) = (&world, p.world_ratio) {
            world = PerRow::of(vec![q; launches.configs.len()], &launches);
            let (small, large) = (&p.paired[0].0, &p.paired[1].0);
            facts.push(RunFact::number(
                Field::NumDevices,
                q,
                format!("the ratio of '{large}' to '{small}'"),
            ));
        }
    }
    // Pinned, the pairs are the first rows' (above); else the rows' ratios tell them.
    let kinds: &[[Role; 2]] = match pinned {
        Some(_) => &[],
        None => &[
            [Role::TokensPerSecond, Role::TokensPerSecondPerDevice],
            [Role::SamplesPerSecond, Role::SamplesPerSecondPerDevice],
        ],
    };
    for kind in kinds {
        let rates: Vec<usize> = columns
            .iter()
            .filter(|c| role_of(c).is_some_and(|r| kind.contains(&r)))
            .map(|c| index(&table, c))
            .collect();
        for (i, &a) in rates.iter().enumerate() {
            for &b in &rates[i + 1..] {
                let (va, vb) = (candidates::values(&table, a), candidates::values(&table, b));
                let Some(ratio) = evidence::compare_rows(&vb, &va) else {
                    continue;
                };
                let (small, large, q) = if ratio.median >= 1.0 {
                    (a, b, ratio.median)
                } else {
                    (b, a, 1.0 / ratio.median)
                };
                let whole = q >= 1.5 && (q - q.round()).abs() <= 0.02 * q;
                let fits = match &world {
                    Some(w) => {
                        let per_row = va.iter().zip(vb.iter()).map(|(x, y)| {
                            if ratio.median >= 1.0 {
                                y / x
                            } else {
                                x / y
                            }
                        });
                        let devices = (0..table.height).map(|r| w.at(r));
                        evidence::compare_pairs(per_row.zip(devices.clone()))
                            .is_some_and(|c| (c.median - 1.0).abs() <= 0.05)
                            && devices.into_iter().any(|d| d > 1.0)
                    }
                    None => whole,
                };
                if fits {
                    paired.push((small, Scope::PerDevice));
                    paired.push((large, Scope::Global));
                    record
                        .paired
                        .push((table.names[small].clone(), Scope::PerDevice));
                    record
                        .paired
                        .push((table.names[large].clone(), Scope::Global));
                    notes.push(format!(
                        "reading: '{}' is one device's rate and '{}' all devices' (their ratio, {q:.2}, is the device count)",
                        table.names[small], table.names[large]
                    ));
                    if world.is_none() {
                        record.world_ratio = Some(q.round());
                        world = PerRow::of(vec![q.round(); launches.configs.len()], &launches);
                        facts.push(RunFact::number(
                            Field::NumDevices,
                            q.round(),
                            format!(
                                "the ratio of '{}' to '{}'",
                                table.names[large], table.names[small]
                            ),
                        ));
                    }
                }
            }
        }
    }
    let seq = PerRow::of(launches.per_launch(|c| c.number(Fact::SeqLen)), &launches);
    let tokens_fact = PerRow::of(
        launches.per_launch(|c| c.tokens_per_step().map(|(t, _)| t)),
        &launches,
    );
    let local_tokens = PerRow::of(
        launches.per_launch(|c| {
            Some(
                c.number(Fact::MicroBatch)?
                    * c.number(Fact::GradAccum).unwrap_or(1.0)
                    * c.number(Fact::SeqLen)?,
            )
        }),
        &launches,
    );
    // The samples a rate of samples counts: the configured batch, else the tokens over the sequence
    // length (a DPO pair is one sample of two sequences, so the batch comes first).
    let samples_fact = PerRow::of(
        launches.per_launch(|c| {
            c.samples_per_step()
                .or_else(|| Some(c.tokens_per_step()?.0 / c.number(Fact::SeqLen)?))
        }),
        &launches,
    );

    // 3. Every clock the rows and facts offer, then the evidence's choice among them. In order of
    // preference: logged times as printed, counts over rates, rates of steps, logged times in their
    // other meanings, running totals.
    let mut clocks: Vec<Clock> = Vec::new();
    let mut meanings: Vec<Clock> = Vec::new();
    for c in columns_of(Role::StepTime) {
        let stated = written.contains_key(&c) || unit_in_name(&c);
        for clock in candidates::logged_clocks(
            &table,
            index(&table, &c),
            time_unit(&c).to_seconds(),
            stated,
            &steps,
        ) {
            if clock.kind == ClockKind::Logged(Meaning::AsPrinted) {
                clocks.push(clock);
            } else {
                meanings.push(clock);
            }
        }
    }
    // Counts over rates, each in the scope the vocabulary claims first, then the other.
    let line_tokens = tokens.as_ref().map(|c| index(&table, c));
    let devices_row = |row: usize| world.as_ref().map_or(f64::NAN, |w| w.at(row));
    let devices_words = world.as_ref().map_or(String::new(), |w| w.words.clone());
    for (role, claimed, unit) in [
        (Role::TokensPerSecond, Scope::Global, "tokens"),
        (Role::TokensPerSecondPerDevice, Scope::PerDevice, "tokens"),
        (Role::SamplesPerSecond, Scope::Global, "samples"),
        (Role::SamplesPerSecondPerDevice, Scope::PerDevice, "samples"),
    ] {
        for r in columns_of(role) {
            let rate = index(&table, &r);
            let rates = candidates::seconds(&table, rate, 1.0);
            let rows = 0..table.height;
            // A rate whose scope its pair decided (their ratio is the device count) is read in that
            // scope only.
            let scopes = match paired.iter().find(|(c, _)| *c == rate) {
                Some((_, decided)) => vec![*decided],
                None => vec![claimed, claimed.other()],
            };
            for scope in scopes {
                let made: Option<(String, Vec<f64>)> = match (unit, scope) {
                    ("tokens", Scope::Global) => match (line_tokens, &tokens_fact) {
                        // The line's own tokens over its own global rate (fairseq's wpb / wps):
                        // both printed to more digits than a rate of steps.
                        (Some(c), _) => Some((
                            format!("'{}' / '{r}'", table.names[c]),
                            candidates::seconds(&table, c, 1.0)
                                .iter()
                                .zip(&rates)
                                .map(|(t, v)| t / v)
                                .collect(),
                        )),
                        (None, Some(t)) => Some((
                            format!("tokens a step ({}) / '{r}'", t.words),
                            rows.clone().map(|row| t.at(row) / rates[row]).collect(),
                        )),
                        _ => None,
                    },
                    ("tokens", Scope::PerDevice) => {
                        match (&local_tokens, line_tokens, &tokens_fact, &world) {
                            (Some(local), None, _, _) => Some((
                                format!("one device's tokens a step (micro-batch x accumulation x sequence = {}) / '{r}' (exact under data parallelism; with tensor, context or pipeline parallelism the device rate is divided by their degree)", local.words),
                                rows.clone().map(|row| local.at(row) / rates[row]).collect(),
                            )),
                            (_, Some(c), _, Some(_)) => Some((
                                format!("'{}' / ('{r}' x {devices_words} devices)", table.names[c]),
                                candidates::seconds(&table, c, 1.0)
                                    .iter()
                                    .enumerate()
                                    .map(|(row, t)| t / (rates[row] * devices_row(row)))
                                    .collect(),
                            )),
                            (_, None, Some(t), Some(_)) => Some((
                                format!("tokens a step ({}) / ('{r}' x {devices_words} devices)", t.words),
                                rows.clone()
                                    .map(|row| t.at(row) / (rates[row] * devices_row(row)))
                                    .collect(),
                            )),
                            _ => None,
                        }
                    }
                    ("samples", Scope::Global) => samples_fact.as_ref().map(|n| {
                        (
                            format!("samples a step ({}) / '{r}'", n.words),
                            rows.clone().map(|row| n.at(row) / rates[row]).collect(),
                        )
                    }),
                    (_, _) => samples_fact.as_ref().zip(world.as_ref()).map(|(n, _)| {
                        (
                            format!(
                                "samples a step ({}) / ('{r}' x {devices_words} devices)",
                                n.words
                            ),
                            rows.clone()
                                .map(|row| n.at(row) / (rates[row] * devices_row(row)))
                                .collect(),
                        )
                    }),
                };
                if let Some((name, values)) = made {
                    clocks.push(Clock {
                        name,
                        kind: ClockKind::CountRate(scope),
                        column: Some(rate),
                        values,
                    });
                }
            }
        }
    }
    // A rate of steps of one device (Composer's `throughput/device/batches_per_sec`, the global rate
    // over the device count) is no clock.
    for c in columns_of(Role::StepsPerSecond) {
        let n = normalise(&c);
        if n.contains("device") || n.contains("gpu") {
            continue;
        }
        let column = index(&table, &c);
        clocks.push(Clock {
            name: format!("1 / '{c}'"),
            kind: ClockKind::StepsRate,
            column: Some(column),
            values: candidates::seconds(&table, column, 1.0)
                .iter()
                .map(|r| 1.0 / r)
                .collect(),
        });
    }
    clocks.append(&mut meanings);
    // Running totals of time: clocks of their own, and references where the lines have no timestamps.
    let mut references: Vec<Reference> = Vec::new();
    // A covering clock's resolution: the first rows' where pinned (a window's rows may happen to
    // print fewer places), else its own values'.
    let resolution_of = |name: &str, own: &dyn Fn() -> f64| -> f64 {
        pinned
            .and_then(|p| p.resolutions.iter().find(|(n, _)| n == name))
            .map_or_else(own, |(_, r)| *r)
    };
    if let Some((c, name)) = candidates::timestamps(&table) {
        let what = if name == WALL_TIME {
            "the line timestamps"
        } else {
            "the line timestamps (no date)"
        };
        let stamps = candidates::values(&table, c);
        let resolution = resolution_of(what, &|| evidence::resolution(&stamps, 1.0));
        references.push(Reference::from_row(
            what.into(),
            stamps.into_owned(),
            resolution,
            &steps,
            spans_from,
        ));
    }
    for c in &stamped {
        let stamps = candidates::values(&table, index(&table, c));
        let name = format!("the timestamps in '{c}'");
        let resolution = resolution_of(&name, &|| evidence::resolution(&stamps, 1.0));
        references.push(Reference::from_row(
            name,
            stamps.into_owned(),
            resolution,
            &steps,
            spans_from,
        ));
    }
    for c in columns_of(Role::Elapsed) {
        let column = index(&table, &c);
        let printed = candidates::values(&table, column);
        let scale = time_unit(&c).to_seconds();
        let resolution =
            resolution_of(&format!("'{c}'"), &|| evidence::resolution(&printed, scale));
        let totals = printed.iter().map(|v| v * scale).collect::<Vec<_>>();
        clocks.push(Clock {
            name: format!("'{c}' differenced"),
            kind: ClockKind::Elapsed,
            column: Some(column),
            values: candidates::differenced(&totals, &steps),
        });
        references.push(Reference::from_row(
            format!("'{c}'"),
            totals,
            resolution,
            &steps,
            spans_from,
        ));
    }
    // A logged time's running figure (`time 0.2371 (0.2627)`, timm's `Time: 0.689s (1.177s)`), read
    // as a mean since its epoch began (or, with no epoch counter, since its launch began) times the
    // steps so far: a running total of time, covering every step, even those the line's own figure
    // (the last step's) leaves out.
    for c in columns_of(Role::StepTime) {
        let key = c.rsplit_once(" (").map_or(c.as_str(), |(k, _)| k);
        let companion = format!("{key}{}", super::pairs::BRACKETED);
        let Some(mean) = columns.iter().find(|n| n.starts_with(&companion)) else {
            continue;
        };
        let printed = candidates::values(&table, index(&table, mean));
        let scale = time_unit(mean).to_seconds();
        let means: Vec<f64> = printed.iter().map(|v| v * scale).collect();
        // Trainers reset the mean every epoch (timm, mmcv) or never: of the two origins, the one
        // whose running total differenced agrees with the line's own figure on the most rows.
        let own = candidates::seconds(&table, index(&table, &c), time_unit(&c).to_seconds());
        // An origin's reading: the steps the mean is over, the running total, the share of rows on
        // which the total differenced agrees with the line's own figure.
        let reading = |counter: Option<usize>| {
            let counts = candidates::counts_so_far(&table, counter, &steps);
            let totals: Vec<f64> = means.iter().zip(&counts).map(|(m, n)| m * n).collect();
            let share = evidence::compare_rows(&candidates::differenced(&totals, &steps), &own)
                .map_or(0.0, |c| c.share());
            (counts, totals, share)
        };
        let since_launch = reading(None);
        // The epoch's origin, the trainers' habit, unless the launch's is borne out on most rows
        // and misses at most half as many (a run whose data loader stalls agrees with neither
        // often; a mean since the launch agrees with the epoch's reading only where the slow first
        // steps have faded from it).
        // Pinned, the first rows' origin.
        let prefix = format!("'{mean}' as a running mean since the ");
        let pinned_since = pinned.and_then(|p| {
            p.resolutions
                .iter()
                .find_map(|(n, _)| n.strip_prefix(&prefix)?.strip_suffix(" began"))
        });
        let (since, (counts, totals, _)) = match (epoch_counter, pinned_since) {
            (Some(counter), Some("epoch")) => ("epoch", reading(Some(counter))),
            (_, Some(_)) => ("launch", since_launch),
            (Some(counter), None) => {
                let since_epoch = reading(Some(counter));
                let (launch, epoch) = (since_launch.2, since_epoch.2);
                if launch >= 0.5 && launch > epoch && (1.0 - launch) * 2.0 <= 1.0 - epoch {
                    ("launch", since_launch)
                } else {
                    ("epoch", since_epoch)
                }
            }
            (None, None) => ("launch", since_launch),
        };
        // A mean's rounding is multiplied by the steps it is over; its total is as fine as its
        // last row's.
        let name = format!("'{mean}' as a running mean since the {since} began");
        let resolution = resolution_of(&name, &|| {
            evidence::resolution(&printed, scale)
                * counts
                    .iter()
                    .copied()
                    .filter(|n| n.is_finite())
                    .fold(1.0, f64::max)
        });
        references.push(Reference::from_row(
            name, totals, resolution, &steps, spans_from,
        ));
    }
    record.resolutions = references
        .iter()
        .map(|r| (r.name.clone(), r.resolution))
        .collect();
    let reference = references.iter().find(|r| !r.spans.is_empty());
    let verdict = match pinned {
        // The first rows' choice, found by name among this window's clocks.
        Some(p) => evidence::TimeVerdict {
            chosen: p
                .clock
                .as_ref()
                .and_then(|n| clocks.iter().position(|c| &c.name == n)),
            reference_values: p
                .reference
                .as_ref()
                .and_then(|n| references.iter().find(|r| &r.name == n))
                .map(|r| r.values(&steps)),
            said: Vec::new(),
            conflict: None,
        },
        None => evidence::step_time(&clocks, reference, &steps),
    };
    record.clock = verdict.chosen.map(|i| clocks[i].name.clone());
    // Where the spans of the covering clock named below end, for the window after (the last span's
    // end left out: rows after it may lengthen it).
    let span_ends_of = |name: &Option<String>| -> Vec<usize> {
        name.as_ref()
            .and_then(|n| references.iter().find(|r| &r.name == n))
            .map(|r| {
                let whole = r.spans.len().saturating_sub(1);
                r.spans[..whole]
                    .iter()
                    .map(|(_, end)| row_lines[*end])
                    .collect()
            })
            .unwrap_or_default()
    };
    record.reference = match pinned {
        Some(p) => p.reference.clone(),
        None => verdict
            .reference_values
            .as_ref()
            .and(reference)
            .map(|r| r.name.clone()),
    };
    let span_ends = span_ends_of(&record.reference);
    for line in &verdict.said {
        notes.push(format!("reading: {line}"));
    }
    if let Some(conflict) = &verdict.conflict {
        warnings.push(conflict.clone());
    }
    let mut derived_time = None;
    // The step time chosen at each row: the reference's, else the chosen clock's (not copied).
    let mut chosen_values: Option<&[f64]> = verdict.reference_values.as_deref();
    match verdict.chosen.map(|i| &clocks[i]) {
        Some(
            clock @ Clock {
                kind: ClockKind::Logged(Meaning::AsPrinted),
                column: Some(c),
                ..
            },
        ) => {
            let name = table.names[*c].clone();
            hints.push(ColumnHint::new(
                Field::StepTime,
                name.clone(),
                Some(time_unit(&name)),
                false,
            ));
            chosen_values = Some(&clock.values);
            derived_time = Some(name);
        }
        Some(
            clock @ Clock {
                kind: ClockKind::Elapsed,
                column: Some(c),
                ..
            },
        ) => {
            let name = table.names[*c].clone();
            hints.push(ColumnHint::new(
                Field::StepTime,
                name,
                Some(time_unit(&table.names[*c])),
                true,
            ));
            chosen_values = Some(&clock.values);
        }
        Some(clock) => chosen_values = Some(&clock.values),
        None => {}
    }
    if derived_time.is_none() && !hints.iter().any(|h| h.field == Field::StepTime) {
        if let Some(values) = chosen_values {
            let name = free_name(&table, "step_time_s");
            let timed = table.fill(&name, &|_, row| Some(values[row]).filter(|v| v.is_finite()));
            notes.push(format!(
                "{name} = the step time chosen: {timed} row(s) timed"
            ));
            hints.push(ColumnHint::new(
                Field::StepTime,
                name.clone(),
                Some(TimeUnit::Seconds),
                false,
            ));
            derived_time = Some(name);
        }
    }

    // 4. The scope of each rate: two rates' ratio where there is one; else the one its name claims
    // where the count a step over it agrees with the step time; the other only where that count is
    // stated outright (a count inferred from a per-device batch could be off by the device count just
    // as the scope would be).
    let samples_rates: Vec<usize> = columns
        .iter()
        .filter(|c| {
            matches!(
                role_of(c),
                Some(Role::SamplesPerSecond | Role::SamplesPerSecondPerDevice)
            )
        })
        .map(|c| index(&table, c))
        .collect();
    let (samples_stated, tokens_stated) = (
        launches.every(|c| c.samples_per_step_stated()),
        line_tokens.is_some() || launches.every(|c| c.tokens_per_step_stated()),
    );
    let stated_count = |column: usize| -> bool {
        if samples_rates.contains(&column) {
            samples_stated
        } else {
            tokens_stated
        }
    };
    // The rates' clocks (a count over the rate, in a scope) that agree with the step time chosen:
    // compared once each, not each time a rate's scope is asked.
    let agreeing: Vec<(Option<usize>, ClockKind)> = match chosen_values {
        Some(values) => clocks
            .iter()
            .filter(|c| {
                matches!(c.kind, ClockKind::CountRate(_))
                    && evidence::compare_rows(&c.values, values).is_some_and(|m| m.agrees())
            })
            .map(|c| (c.column, c.kind))
            .collect(),
        None => Vec::new(),
    };
    let scope_of = |column: usize, claimed: Scope| -> Scope {
        if let Some((_, scope)) = paired.iter().find(|(c, _)| *c == column) {
            return *scope;
        }
        if let Some(p) = pinned {
            let name = &table.names[column];
            return p
                .scopes
                .iter()
                .find(|(n, _)| n == name)
                .map_or(claimed, |(_, scope)| *scope);
        }
        if chosen_values.is_none() {
            return claimed;
        }
        let agrees = |scope: Scope| agreeing.contains(&(Some(column), ClockKind::CountRate(scope)));
        if agrees(claimed) || !(agrees(claimed.other()) && stated_count(column)) {
            claimed
        } else {
            claimed.other()
        }
    };
    let time_column = derived_time.clone();
    // A count a step that a rate of the log and the step time contradict: the median ratio of the
    // count to the rate's count (rate x devices x step time), where it is off by more than the
    // tolerance.
    let contradicted = |table: &Table, count: &PerRow, rate: &(String, Scope)| -> Option<f64> {
        let values = chosen_values?;
        let rates = candidates::values(table, index(table, &rate.0));
        let implied = rates.iter().zip(values).enumerate().map(|(row, (r, t))| {
            let devices = match rate.1 {
                Scope::Global => 1.0,
                Scope::PerDevice => devices_row(row),
            };
            (count.at(row), r * devices * t)
        });
        let c = evidence::compare_pairs(implied)?;
        (!c.agrees()).then_some(c.median)
    };
    // The rate of each kind and its scope, as the evidence decided it: all devices' first.
    let rate_of = |global: Role, per_device: Role| -> Option<(String, Scope)> {
        columns_of(global)
            .into_iter()
            .map(|c| {
                let scope = scope_of(index(&table, &c), Scope::Global);
                (c, scope)
            })
            .chain(columns_of(per_device).into_iter().map(|c| {
                let scope = scope_of(index(&table, &c), Scope::PerDevice);
                (c, scope)
            }))
            .min_by_key(|(_, scope)| *scope != Scope::Global)
    };
    let token_rate = rate_of(Role::TokensPerSecond, Role::TokensPerSecondPerDevice);
    let sample_rate = rate_of(Role::SamplesPerSecond, Role::SamplesPerSecondPerDevice);
    for (c, claimed) in columns_of(Role::TokensPerSecond)
        .into_iter()
        .map(|c| (c, Scope::Global))
        .chain(
            columns_of(Role::TokensPerSecondPerDevice)
                .into_iter()
                .map(|c| (c, Scope::PerDevice)),
        )
        .chain(
            columns_of(Role::SamplesPerSecond)
                .into_iter()
                .map(|c| (c, Scope::Global)),
        )
        .chain(
            columns_of(Role::SamplesPerSecondPerDevice)
                .into_iter()
                .map(|c| (c, Scope::PerDevice)),
        )
    {
        let decided = scope_of(index(&table, &c), claimed);
        record.scopes.push((c.clone(), decided));
        if decided != claimed {
            notes.push(format!(
                "reading: '{c}' is {}, not {} as its name says: the step time bears it out",
                decided.words(),
                claimed.words()
            ));
        }
    }
    // The configured counts a step, unless the log's own rate contradicts them (a flag is the user's
    // word: kept, with a warning).
    let mut tokens_fact_usable = tokens_fact.is_some();
    let mut facts_dropped: Vec<Field> = Vec::new();
    for (count, rate, field, flag, unit) in [
        (
            tokens_fact.as_ref().filter(|_| tokens.is_none()),
            &token_rate,
            Field::Tokens,
            given.tokens_per_step.is_some(),
            "tokens",
        ),
        (
            samples_fact.as_ref(),
            &sample_rate,
            Field::Samples,
            given.samples_per_step.is_some(),
            "samples",
        ),
    ] {
        let (Some(count), Some(rate), None) = (count, rate, pinned) else {
            continue;
        };
        let Some(m) = contradicted(&table, count, rate) else {
            continue;
        };
        // A rate that counts one micro-batch of the ones accumulated into a step (nanochat's tok/sec
        // with gradient accumulation): the count stands, the rate is off by the accumulation.
        let accumulated = launches
            .configs
            .iter()
            .filter_map(|c| c.number(Fact::GradAccum))
            .any(|k| k > 1.0 && (m / k - 1.0).abs() <= evidence::TOLERANCE);
        if accumulated {
            notes.push(format!(
                "reading: '{}' counts one micro-batch of each step's {m:.0} accumulated ones: the {} {unit} a step of the configuration are kept",
                rate.0, count.words
            ));
            continue;
        }
        let said = format!(
            "the {} {unit} a step of the configuration are {m:.2}x what '{}' x the step time counts",
            count.words, rate.0
        );
        if flag {
            warnings.push(format!("{said}: --{unit}-per-step kept as given"));
        } else {
            notes.push(format!("reading: {said}: the rate's count is used"));
            facts_dropped.push(field);
            if field == Field::Tokens {
                tokens_fact_usable = false;
            }
        }
    }
    if let Some(p) = pinned {
        facts_dropped.clone_from(&p.facts_dropped);
        tokens_fact_usable &= !facts_dropped.contains(&Field::Tokens);
    }
    record.facts_dropped.clone_from(&facts_dropped);
    facts.retain(|f| !facts_dropped.contains(&f.field));
    // Facts that differ by launch: a column each, each row its launch's value.
    for v in varying {
        if facts_dropped.contains(&v.field) {
            continue;
        }
        let name = free_name(&table, v.field.name());
        notes.push(format!(
            "reading: {} differs by launch: {}",
            v.field.name(),
            v.said
        ));
        if v.values
            .iter()
            .any(|x| matches!(x, Some(FactValue::Text(_))))
        {
            let words = v
                .values
                .iter()
                .map(|x| match x {
                    Some(FactValue::Text(t)) => Some(t.clone()),
                    Some(FactValue::Number(n)) => Some(n.to_string()),
                    None => None,
                })
                .collect();
            table.fill_text(&name, words);
        } else {
            let numbers: Vec<f64> = v
                .values
                .iter()
                .map(|x| match x {
                    Some(FactValue::Number(n)) => *n,
                    _ => f64::NAN,
                })
                .collect();
            table.fill(&name, &|_, row| {
                Some(numbers[row]).filter(|n| n.is_finite())
            });
        }
        hints.push(ColumnHint::new(v.field, name, None, false));
    }

    // 5. Tokens and samples from the rows where the facts give none.
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
    let seq_row = |row: usize| seq.as_ref().map(|s| s.at(row)).filter(|s| s.is_finite());
    let seq_words = seq.as_ref().map_or(String::new(), |s| s.words.clone());
    if let Some(c) = &tokens {
        hints.push(ColumnHint::new(Field::Tokens, c.clone(), None, false));
    } else if let Some(c) = &tokens_seen {
        hints.push(ColumnHint::new(Field::Tokens, c.clone(), None, true));
    } else if !tokens_fact_usable {
        // Tokens from the rows: the global batch x the sequence length, or a rate x the step time.
        let batch = first(Role::GlobalBatch);
        let made: Option<Derivation<'_>> = if let (Some(b), Some(_)) = (batch, &seq) {
            Some((format!("'{b}' x the sequence length {seq_words}"), {
                let b = index(&table, &b);
                Box::new(move |tb, row| Some(tb.number(b, row)? * seq_row(row)?))
            }))
        } else if let (Some((r, scope)), Some(tc)) = (token_rate.clone(), time_column.clone()) {
            let per_device = scope == Scope::PerDevice;
            (!per_device || world.is_some()).then(|| -> Derivation<'_> {
                let (r, time) = (index(&table, &r), time_of(&table, &tc));
                let how = if per_device {
                    format!("'{}' x {devices_words} devices x '{tc}'", table.names[r])
                } else {
                    format!("'{}' x '{tc}'", table.names[r])
                };
                (
                    how,
                    Box::new(move |tb: &Table, row| {
                        let devices = if per_device { devices_row(row) } else { 1.0 };
                        Some(tb.number(r, row)? * devices * seconds(tb, time, row)?)
                    }),
                )
            })
        } else if let (Some(r), None, Some(e), Some(st)) = (
            first(Role::TokensPerSecond),
            time_column.clone(),
            elapsed.clone(),
            step_column,
        ) {
            // A rate and a running total of time (OpenNMT's `tok/s` and `512 sec`): a step's tokens
            // are the rate over the time since the line before, per step between the two lines.
            let (r, time) = (index(&table, &r), time_of(&table, &e));
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
        } else if let (Some(r), Some(tc), Some(_)) =
            (first(Role::SamplesPerSecond), time_column.clone(), &seq)
        {
            let (r, time) = (index(&table, &r), time_of(&table, &tc));
            Some((
                format!(
                    "'{r}' x the sequence length {seq_words} x '{tc}'",
                    r = table.names[r]
                ),
                Box::new(move |tb, row| {
                    Some(tb.number(r, row)? * seq_row(row)? * seconds(tb, time, row)?)
                }),
            ))
        } else {
            None
        };
        if let Some((how, f)) = made {
            let name = free_name(&table, "tokens");
            let counted = table.fill(&name, &f);
            notes.push(format!("{name} = {how}: {counted} row(s) counted"));
            hints.push(ColumnHint::new(Field::Tokens, name, None, false));
        }
    }
    // Samples: the line's own count (fairseq's `nsentences`), else the configured batch (a fact of the
    // run), else the count a samples rate pairs with, else a samples rate x the step time.
    if let Some(c) = first(Role::Samples) {
        hints.push(ColumnHint::new(Field::Samples, c, None, false));
    }
    let samples_known = facts.iter().any(|f| f.field == Field::Samples)
        || hints.iter().any(|h| h.field == Field::Samples);
    if !samples_known {
        if let (Some((r, scope)), Some(tc)) = (sample_rate.clone(), time_column.clone()) {
            let per_device = scope == Scope::PerDevice;
            let rate_column = index(&table, &r);
            let devices: Vec<f64> = (0..table.height)
                .map(|row| if per_device { devices_row(row) } else { 1.0 })
                .collect();
            let steady = match pinned {
                Some(p) => p.steady.clone(),
                None => steady_count(&table, rate_column, &devices, &clocks),
            };
            record.steady.clone_from(&steady);
            if let Some((count, with)) = steady {
                let name = free_name(&table, "samples");
                table.fill(&name, &|_, _| Some(count));
                notes.push(format!(
                    "reading: {name} = '{r}' x {with} = {count} a step (the same every line: the batch the rate was measured over)"
                ));
                hints.push(ColumnHint::new(Field::Samples, name, None, false));
            } else if !per_device || world.is_some() {
                let (rate, time) = (index(&table, &r), time_of(&table, &tc));
                let name = free_name(&table, "samples");
                let counted = table.fill(&name, &|tb, row| {
                    let devices = if per_device { devices_row(row) } else { 1.0 };
                    Some(tb.number(rate, row)? * devices * seconds(tb, time, row)?)
                });
                notes.push(if per_device {
                    format!(
                        "{name} = '{r}' x {devices_words} devices x '{tc}': {counted} row(s) counted"
                    )
                } else {
                    format!("{name} = '{r}' x '{tc}': {counted} row(s) counted")
                });
                hints.push(ColumnHint::new(Field::Samples, name, None, false));
            }
        }
    }
    // No step time to make a count a step from a rate, or to divide one by: the rate the log measured
    // is the throughput itself, of all devices (one device's times the device count).
    if !hints.iter().any(|h| h.field == Field::StepTime) {
        for (rate, field, unit) in [
            (&token_rate, Field::TokenRate, "tokens"),
            (&sample_rate, Field::SampleRate, "samples"),
        ] {
            let Some((r, scope)) = rate else { continue };
            match scope {
                Scope::Global => {
                    notes.push(format!(
                        "reading: no step time: the throughput is '{r}', {unit} a second of all devices as the log measured them"
                    ));
                    hints.push(ColumnHint::new(field, r.clone(), None, false));
                }
                Scope::PerDevice if world.is_some() => {
                    let column = index(&table, r);
                    let name = free_name(&table, &format!("{unit}_per_second_all_devices"));
                    let counted = table.fill(&name, &|tb, row| {
                        Some(tb.number(column, row)? * devices_row(row))
                            .filter(|v| v.is_finite())
                    });
                    notes.push(format!(
                        "reading: no step time: the throughput is {name} = '{r}' x {devices_words} devices, one device's rate as the log measured it: {counted} row(s)"
                    ));
                    hints.push(ColumnHint::new(field, name, None, false));
                }
                Scope::PerDevice => warnings.push(format!(
                    "'{r}' is one device's {unit} a second and the log has no step time: give --num-devices for the throughput of all devices"
                )),
            }
        }
    }
    if let Some(c) = first(Role::LoggedMfu) {
        hints.push(ColumnHint::new(Field::LoggedMfu, c, None, false));
    }
    // One device's batch printed, the device count not: the samples of a step are a flag away, and the
    // warning says which (Swin prints `BATCH_SIZE: 128` and never its world size).
    let counted = facts
        .iter()
        .any(|f| matches!(f.field, Field::Tokens | Field::Samples))
        || hints.iter().any(|h| {
            matches!(
                h.field,
                Field::Tokens | Field::Samples | Field::TokenRate | Field::SampleRate
            )
        });
    if !counted && given.num_devices.is_none() {
        let batch = launches
            .configs
            .iter()
            .zip(launches.with_rows())
            .filter(|(_, rows)| **rows)
            .find_map(|(c, _)| c.device_batch_without_ranks());
        if let Some((batch, from)) = batch {
            warnings.push(format!(
                "one device's batch is printed ({batch} at {from}) but not the device count: give --num-devices for the samples a step, or --samples-per-step"
            ));
        }
    }
    // Facts the rows give themselves are not facts of the run.
    for field in [Field::Tokens, Field::Samples] {
        if hints.iter().any(|h| h.field == field) {
            facts.retain(|f| f.field != field);
        }
    }
    Ok(Reading {
        read: ConsoleRead {
            table,
            notes,
            warnings,
            facts,
            model,
            hints,
            framework: framework.map(|f| f.name.clone()),
            marks,
        },
        pinned: record,
        row_lines,
        span_ends,
    })
}

/// Whether a column's name states the unit of its values (`_ms`, `(s)`, ` in s`, `_sec`).
fn unit_in_name(name: &str) -> bool {
    let n = normalise(name);
    ["s", "ms", "us", "sec", "secs", "seconds", "msec", "millis"]
        .iter()
        .any(|u| n.ends_with(&format!("_{u}")) || n.contains(&format!("_{u}_")) || n == *u)
}

/// `name`, or `name` with a number after it where the table has a column of that name.
fn free_name(table: &Table, name: &str) -> String {
    (1..)
        .map(|n| {
            if n == 1 {
                name.to_string()
            } else {
                format!("{name}_{n}")
            }
        })
        .find(|n| table.index(n).is_none())
        .expect("some name is free")
}

/// The count a step a rate was measured over, where the rate times one of the logged times (a line's
/// own, as printed) is the same on every line (timm's `185.72/s` x `Time: 0.689s` = 128 images): that
/// count (a whole number where it is within 0.5% of one) and the clock's name. `devices` is each row's
/// factor from the rate's scope to all devices.
fn steady_count(
    table: &Table,
    rate: usize,
    devices: &[f64],
    clocks: &[Clock],
) -> Option<(f64, String)> {
    let rates = candidates::values(table, rate);
    clocks
        .iter()
        .filter(|c| c.kind == ClockKind::Logged(Meaning::AsPrinted))
        .find_map(|clock| {
            let products: Vec<f64> = (0..table.height)
                .map(|row| rates[row] * devices[row] * clock.values[row])
                .filter(|p| p.is_finite() && *p > 0.0)
                .collect();
            if products.len() < 2 {
                return None;
            }
            let median = crate::stats::upper_middle(&mut products.clone())?;
            let within = products
                .iter()
                .filter(|p| ((**p - median) / median).abs() <= 0.005)
                .count();
            (within * 10 >= products.len() * 9).then(|| {
                let whole = median.round();
                let count = if whole > 0.0 && ((median - whole) / median).abs() <= 0.005 {
                    whole
                } else {
                    median
                };
                (count, clock.name.clone())
            })
        })
}

/// Each row's epoch from the lines that print only an epoch (`Epoch 4/6`, `##### Epoch 5 #####`,
/// `Epoch: 3`) before it: the last such line before the row's; `None` where the log has no such lines.
fn header_epochs(
    fact_lines: &super::scan::FactLines,
    chosen: usize,
    row_lines: &[usize],
) -> Option<Vec<Option<f64>>> {
    let mut headers: Vec<(usize, f64)> = Vec::new();
    for line in &fact_lines.lines {
        if line.families.iter().any(|(f, _)| *f == chosen) {
            continue;
        }
        for cleaned in super::clean::clean(&line.raw) {
            let pairs = super::pairs::pairs(&cleaned.text);
            let numbers: Vec<&super::pairs::Pair<'_>> = pairs
                .iter()
                .filter(|p| p.value.number().is_some())
                .collect();
            let words: usize = cleaned
                .text
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| w.chars().any(char::is_alphabetic))
                .count();
            if let [only] = numbers.as_slice() {
                let epoch = normalise(&only.key) == "epoch" && words == 1;
                if let (true, Some(v)) = (epoch, only.value.number()) {
                    if v.fract() == 0.0 && v >= 0.0 {
                        headers.push((line.index, v));
                    }
                }
            }
        }
    }
    if headers.is_empty() {
        return None;
    }
    headers.sort_by_key(|(line, _)| *line);
    let epochs: Vec<Option<f64>> = row_lines
        .iter()
        .map(|line| {
            let at = headers.partition_point(|(h, _)| h < line);
            at.checked_sub(1).map(|i| headers[i].1)
        })
        .collect();
    epochs.iter().any(Option::is_some).then_some(epochs)
}
