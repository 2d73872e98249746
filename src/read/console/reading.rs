//! The reading stage: what the columns of the chosen rows mean (the vocabulary's roles), what the
//! configuration printed in or beside the log says ([`super::facts`]), and from them what the rows
//! lack (a step time from tokens over a rate, tokens from a batch or a rate), as hints for the column
//! stage.

use std::collections::HashMap;

use super::family::Chosen;
use super::rows::Table;
use super::scan::{FactLine, FACT_BYTES};
use super::vocabulary::{normalise, vocabulary, Fact, Framework, Role};
use super::{facts, ConsoleRead, Given};
use crate::columns::{ColumnHint, Field, TimeUnit};

/// A per-row derivation and the words that say how it was made.
type Derivation<'a> = (String, Box<dyn Fn(&Table, usize) -> Option<f64> + 'a>);

/// Reads the chosen rows' columns and the log's facts into what the column stage takes.
pub(super) fn read(
    chosen: Chosen,
    framework: Option<&'static Framework>,
    beside: &[(String, String)],
    given: Given,
) -> Result<ConsoleRead, String> {
    let vocab = vocabulary();
    let Chosen {
        mut table,
        units,
        mut notes,
        warnings,
        marks,
        fact_lines,
        chosen,
    } = chosen;
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
