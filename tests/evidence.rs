//! The evidence rules of the console reader held over generated logs: a run with a known truth (its
//! step times, tokens a step, world size) printed as console lines in each grammar the reader knows,
//! with line timestamps in each layout, and each trap of a naive reading (a running mean printed as the
//! time, the time of an interval of steps, a running total of time, a rate of one device beside the
//! run's, a running mean in brackets beside the step's own figure, milliseconds), read back by `mfu
//! enrich` to the truth's token rate and MFU, and by `mfu goodput` to figures that can be.

use chrono::{Datelike, Timelike};
use proptest::prelude::*;

use crate::util::{csv_rows, Workdir};

/// How the step counter and the figures are written on a line.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Grammar {
    /// `step: 10 | loss: 2.3 | time: 0.51`
    Pipes,
    /// `step=10 loss=2.3 time=0.51`
    KeyValue,
    /// `[metrics] {"step": 10, "loss": 2.3, "time": 0.51}`
    JsonBehindPrefix,
    /// `Epoch [2][40/100]  loss: 2.3, time: 0.51` (the counter restarts every epoch)
    EpochCounter,
    /// `step: 10  loss: 2.3  time: 0.51`
    Spaces,
}

const GRAMMARS: [Grammar; 5] = [
    Grammar::Pipes,
    Grammar::KeyValue,
    Grammar::JsonBehindPrefix,
    Grammar::EpochCounter,
    Grammar::Spaces,
];

/// How each line is stamped.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Stamp {
    None,
    /// `2026-03-05T23:25:42.758Z INFO `
    Iso,
    /// `2026-03-05 23:25:42,758 - trainer - INFO - `
    PythonLogging,
    /// `[03/05 23:25:42 trainer]: ` (no year, to the second)
    NoYear,
    /// `I0305 23:25:42.758123 12345 train.py:88] ` (glog)
    Glog,
    /// `INFO:2026-03-05 23:25:42,758: ` (the level first)
    LevelFirst,
    /// `\x1b[32m[2026-03-05 23:25:42]\x1b[0m ` (colour codes around it, to the second)
    Coloured,
}

const STAMPS: [Stamp; 7] = [
    Stamp::None,
    Stamp::Iso,
    Stamp::PythonLogging,
    Stamp::NoYear,
    Stamp::Glog,
    Stamp::LevelFirst,
    Stamp::Coloured,
];

/// What the line prints for the step's time.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Trap {
    /// The last step's own time, in seconds.
    Honest,
    /// The last step's own time in milliseconds, the unit written after it.
    Milliseconds,
    /// The mean of every step since the launch began (its slow first step included).
    RunningMean,
    /// The time of all the steps since the line before.
    IntervalTotal,
    /// No time, but the seconds since the launch began.
    RunningTotal,
    /// No time, but one device's token rate and the run's, under names that do not say which.
    TwoRates,
    /// The step's own time with the running mean in brackets after it.
    BracketedMean,
}

const TRAPS: [Trap; 7] = [
    Trap::Honest,
    Trap::Milliseconds,
    Trap::RunningMean,
    Trap::IntervalTotal,
    Trap::RunningTotal,
    Trap::TwoRates,
    Trap::BracketedMean,
];

#[derive(Debug, Clone)]
struct Run {
    grammar: Grammar,
    stamp: Stamp,
    trap: Trap,
    lines: usize,
    /// Steps between lines.
    every: u32,
    /// Seconds a step (each within 2% of it).
    step_time: f64,
    /// The first step takes this many times longer (compilation, warm-up).
    warmup: f64,
    tokens_per_step: f64,
    world: u32,
}

/// 2026-03-05 23:25:00 UTC: runs cross midnight, which layouts without a date must unwrap.
const START: i64 = 1_772_753_100;

impl Run {
    /// Whether the log holds the evidence to tell the trap from the truth. Without timestamps a
    /// running mean or an interval's time is all the log says of time: nothing can contradict it.
    fn decidable(&self) -> bool {
        !(self.stamp == Stamp::None && matches!(self.trap, Trap::RunningMean | Trap::IntervalTotal))
    }

    /// Seconds step `s` (1-based) took.
    fn seconds(&self, s: u32) -> f64 {
        let jitter = f64::from((s * 7919) % 41) / 1000.0 - 0.02;
        let t = self.step_time * (1.0 + jitter);
        if s == 1 {
            t * self.warmup
        } else {
            t
        }
    }

    fn stamp(&self, at: f64) -> String {
        let secs = at.floor() as i64;
        let nanos = ((at - at.floor()) * 1e9) as u32;
        let t = chrono::DateTime::from_timestamp(secs, nanos).unwrap();
        let ms = t.timestamp_subsec_millis();
        let us = t.timestamp_subsec_micros();
        let (y, mo, d, h, mi, s) = (
            t.year(),
            t.month(),
            t.day(),
            t.hour(),
            t.minute(),
            t.second(),
        );
        match self.stamp {
            Stamp::None => String::new(),
            Stamp::Iso => format!("{y}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{ms:03}Z INFO "),
            Stamp::PythonLogging => {
                format!("{y}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02},{ms:03} - trainer - INFO - ")
            }
            Stamp::NoYear => format!("[{mo:02}/{d:02} {h:02}:{mi:02}:{s:02} trainer]: "),
            Stamp::Glog => {
                format!("I{mo:02}{d:02} {h:02}:{mi:02}:{s:02}.{us:06} 12345 train.py:88] ")
            }
            Stamp::LevelFirst => {
                format!("INFO:{y}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02},{ms:03}: ")
            }
            Stamp::Coloured => {
                format!("\x1b[32m[{y}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}]\x1b[0m ")
            }
        }
    }

    /// The log, and at each line the truth: the token rate over the steps since the line before.
    fn print(&self) -> (String, Vec<f64>) {
        let mut log = String::new();
        let start = START as f64;
        log.push_str(&self.stamp(start - 5.0));
        log.push_str(&format!("Distributed world size: {}\n", self.world));
        let mut clock = start;
        let (mut total, mut truth) = (0.0, Vec::new());
        let mut step = 0;
        // Steps an epoch, for the grammar whose counter restarts every epoch.
        let epoch_steps = 7 * self.every;
        for line in 1..=self.lines {
            let mut interval = 0.0;
            for _ in 0..self.every {
                step += 1;
                let t = self.seconds(step);
                interval += t;
                total += t;
            }
            clock += interval;
            let last = self.seconds(step);
            truth.push(self.tokens_per_step * f64::from(self.every) / interval);
            let mean = total / f64::from(step);
            let loss = 2.0 + 8.0 / (line as f64 + 1.0);
            let mut fields: Vec<(String, String)> = vec![("loss".into(), format!("{loss:.4}"))];
            let spaced = !matches!(self.grammar, Grammar::KeyValue | Grammar::JsonBehindPrefix);
            match self.trap {
                Trap::Honest => fields.push(("time".into(), format!("{last:.4}"))),
                Trap::Milliseconds => {
                    fields.push(("time".into(), format!("{:.2}ms", last * 1000.0)))
                }
                Trap::RunningMean => fields.push(("time".into(), format!("{mean:.4}"))),
                Trap::IntervalTotal => fields.push(("time".into(), format!("{interval:.4}"))),
                Trap::RunningTotal => {
                    fields.push(("elapsed".into(), format!("{:.2}", clock - start)))
                }
                Trap::TwoRates => {
                    let global = self.tokens_per_step / last;
                    let device = global / f64::from(self.world);
                    let (one, all) = if spaced {
                        ("Tokens per second", "Global tokens/sec")
                    } else {
                        ("tokens_per_second", "global_tokens_per_second")
                    };
                    fields.push((one.into(), format!("{device:.1}")));
                    fields.push((all.into(), format!("{global:.1}")));
                }
                Trap::BracketedMean => {
                    fields.push(("time".into(), format!("{last:.4} ({mean:.4})")))
                }
            }
            log.push_str(&self.stamp(clock));
            let pairs = |sep: &str, join: &str| {
                fields
                    .iter()
                    .map(|(k, v)| format!("{k}{sep}{v}"))
                    .collect::<Vec<_>>()
                    .join(join)
            };
            match self.grammar {
                Grammar::Pipes => log.push_str(&format!("step: {step} | {}", pairs(": ", " | "))),
                Grammar::KeyValue => log.push_str(&format!("step={step} {}", pairs("=", " "))),
                Grammar::JsonBehindPrefix => {
                    let body = fields
                        .iter()
                        .map(|(k, v)| format!("\"{k}\": {v}"))
                        .collect::<Vec<_>>()
                        .join(", ");
                    log.push_str(&format!("[metrics] {{\"step\": {step}, {body}}}"))
                }
                Grammar::EpochCounter => {
                    let epoch = (step - 1) / epoch_steps + 1;
                    let within = (step - 1) % epoch_steps + 1;
                    log.push_str(&format!(
                        "Epoch [{epoch}][{within}/{epoch_steps}]  {}",
                        pairs(": ", ", ")
                    ))
                }
                Grammar::Spaces => log.push_str(&format!("step: {step}  {}", pairs(": ", "  "))),
            }
            log.push('\n');
        }
        (log, truth)
    }
}

fn run() -> impl Strategy<Value = Run> {
    (
        0..GRAMMARS.len(),
        0..STAMPS.len(),
        0..TRAPS.len(),
        40usize..60,
        prop::sample::select(vec![1u32, 5, 10]),
        0.5f64..4.0,
        5.0f64..30.0,
        prop::sample::select(vec![4096.0, 65536.0, 524288.0]),
        prop::sample::select(vec![1u32, 2, 4, 8]),
    )
        .prop_map(
            |(g, s, t, lines, every, step_time, warmup, tokens_per_step, world)| {
                let trap = TRAPS[t];
                // An interval's time is a step's where every line is one step.
                let every = if trap == Trap::IntervalTotal {
                    every.max(5)
                } else {
                    every
                };
                // A bracketed running mean is written by the grammars with spaces.
                let grammar = GRAMMARS[g];
                let trap = if trap == Trap::BracketedMean
                    && matches!(grammar, Grammar::KeyValue | Grammar::JsonBehindPrefix)
                {
                    Trap::Honest
                } else {
                    trap
                };
                // A clock to the second times spans of 20 s: the run lasts long enough for a few.
                let stamp = STAMPS[s];
                let coarse = matches!(stamp, Stamp::NoYear | Stamp::Coloured);
                let step_time = if coarse {
                    step_time.max(150.0 / (lines as f64 * f64::from(every)))
                } else {
                    step_time
                };
                Run {
                    grammar,
                    stamp,
                    trap,
                    lines,
                    every,
                    step_time,
                    warmup,
                    tokens_per_step,
                    world,
                }
            },
        )
}

/// H100 SXM's dense BF16 peak, FLOP/s.
const PEAK: f64 = 989.4e12;
/// The MFU every generated run has, by its FLOPs a token.
const MFU: f64 = 0.4;

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        // The cases that failed once run first, from beside this file (proptest looks for a lib.rs
        // to place them, which an integration test has not).
        failure_persistence: Some(Box::new(proptest::test_runner::FileFailurePersistence::Direct("tests/evidence.proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn generated_logs_read_to_their_truth_whatever_the_grammar_stamp_or_trap(run in run()) {
        prop_assume!(run.decidable());
        let (log, truth) = run.print();
        let wd = Workdir::new("evidence");
        let path = wd.create("train.log", &log);
        let flops_per_token = MFU * PEAK * f64::from(run.world) * run.step_time / run.tokens_per_step;
        let mut flags: Vec<String> = vec![
            "--device".into(), "NVIDIA H100 80GB HBM3".into(), "--dtype".into(), "bf16".into(),
            "--flops-per-token".into(), flops_per_token.to_string(),
        ];
        // The run's rates need no count of tokens a step where the lines are stamped (the count is
        // the rate times the step time the stamps give); elsewhere the count is given, and the rate
        // to check it against is the one of the two that is the run's.
        if run.trap != Trap::TwoRates || run.stamp == Stamp::None {
            flags.push("--tokens-per-step".into());
            flags.push(run.tokens_per_step.to_string());
        }
        let out = wd.mfu().arg("enrich").arg(&path).args(["-o", "-", "--quiet"]).args(&flags)
            .output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        prop_assert!(out.status.success(), "{run:?}\n{err}\n{log}");
        let rows = csv_rows(&String::from_utf8(out.stdout).unwrap());
        prop_assert_eq!(rows.len(), run.lines, "{:?}\n{}", run, log);
        // A step within 2% of its mean, the figures rounded as printed; a clock to the second times
        // spans of at least 20 s, each to within 1 s.
        let tolerance = if matches!(run.stamp, Stamp::NoYear | Stamp::Coloured) { 0.08 } else { 0.03 };
        for (line, (row, want)) in rows.iter().zip(&truth).enumerate() {
            let get = |c: &str| row.get(c).and_then(|v| v.parse::<f64>().ok());
            // No impossible number, on any row.
            if let Some(m) = get("mfu_wall_clock") {
                prop_assert!((0.0..=1.0).contains(&m), "{run:?} row {line}: MFU {m}\n{log}");
            }
            // The first two lines hold the slow first step (and, for a clock to the second, the
            // span before it).
            if line < 2 {
                continue;
            }
            let rate = get("tokens_per_second");
            prop_assert!(
                rate.is_some_and(|r| ((r - want) / want).abs() <= tolerance),
                "{run:?} row {line}: tokens/s {rate:?}, truth {want}\n{log}"
            );
            let mfu = get("mfu_wall_clock");
            let mfu_truth = MFU * want * run.step_time / run.tokens_per_step;
            prop_assert!(
                mfu.is_some_and(|m| ((m - mfu_truth) / mfu_truth).abs() <= tolerance),
                "{run:?} row {line}: MFU {mfu:?}, truth {mfu_truth}"
            );
        }
        // Goodput from the same log: every figure one that can be.
        let out = wd.mfu().arg("goodput").arg(&path).args(["--format", "csv", "--quiet"]).args(&flags)
            .output().unwrap();
        prop_assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let rows = csv_rows(&String::from_utf8(out.stdout).unwrap());
        prop_assert_eq!(rows.len(), 1);
        let get = |c: &str| rows[0].get(c).and_then(|v| v.parse::<f64>().ok());
        for bucket in ["elapsed_s", "productive_s", "startup_s", "pause_s", "other_s", "recovery_s",
            "wasted_progress_s", "device_hours_lost"] {
            if let Some(v) = get(bucket) {
                prop_assert!(v >= 0.0, "{run:?}: {bucket} {v}");
            }
        }
        for fraction in ["goodput", "mfu_productive", "mfu_effective"] {
            if let Some(v) = get(fraction) {
                prop_assert!((0.0..=1.0).contains(&v), "{run:?}: {fraction} {v}");
            }
        }
        if run.stamp != Stamp::None {
            // With timestamps the run's time is measured: all but the slow first step is productive.
            let goodput = get("goodput");
            prop_assert!(goodput.is_some_and(|g| g > 0.5), "{run:?}: goodput {goodput:?} {:?}", rows[0].get("notes"));
        }
    }
}
