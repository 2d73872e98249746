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

mod blocks;
mod candidates;
pub mod clean;
mod digest;
mod evidence;
pub mod facts;
mod family;
mod launches;
pub mod pairs;
mod reading;
mod rows;
mod scan;
pub mod stamp;
mod summary;
pub mod template;
pub mod vocabulary;
pub mod windows;

use std::collections::HashMap;

use crate::columns::{ColumnHint, RunFact};
use crate::goodput::Mark;
use blocks::{BlockReader, BLOCK};
pub use rows::Column;
use rows::Table;
use scan::scan;
use summary::{SUMMARY_RUNTIME, SUMMARY_STEPS_RATE};
use vocabulary::{vocabulary, Framework};

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

/// Whether `text` holds a family of training lines this reader takes: three lines (or one, with four
/// numbers besides its step) with a step counter and at least two other numbers; if so, the framework
/// its markers name.
pub fn detect(text: &str) -> Option<Option<&'static Framework>> {
    let framework = vocabulary().framework_of(head(text).as_bytes());
    let mut counts: HashMap<(String, bool), usize> = HashMap::new();
    let (mut seen, mut rich, mut families) = (0, false, false);
    scan(text, framework, |r| {
        seen += 1;
        if !r.family.1 && r.numbers >= 2 {
            rich |= r.numbers >= 4;
            let n = counts.entry(r.family).or_default();
            *n += 1;
            families |= *n >= 3;
        }
        // Logs often start with the script's source or a long configuration, whose lines may
        // look like steps: far enough to reach the training lines, and no further once they show.
        seen < 4096 && !(families || rich)
    });
    let summary = || {
        text.lines()
            .any(|l| l.contains(SUMMARY_RUNTIME) && l.contains(SUMMARY_STEPS_RATE))
    };
    (families || rich || summary()).then_some(framework)
}

/// Whether `bytes` are the console log of a training run with no training step in it (see
/// [`detect`]: no family of step lines): its launches (the times its first line is printed) and how it
/// ends where it ends in an error. `None` for text that does not look like a training log.
pub fn no_steps(bytes: &[u8]) -> Option<(usize, String)> {
    let head = &bytes[..bytes.len().min(16 << 20)];
    if head.contains(&0) {
        return None;
    }
    let text = String::from_utf8_lossy(head);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.len() < 3 {
        return None;
    }
    // A training run's log: a framework's marker, or lines stamped with times, or the words of one.
    let stamped = lines
        .iter()
        .filter(|l| clean::clean(l).iter().any(|c| c.wall_time.is_some()))
        .count();
    let lower = text.to_ascii_lowercase();
    let words = ["train", "epoch", "cuda", "gpu", "batch", "torch"]
        .iter()
        .filter(|w| lower.contains(*w))
        .count();
    if vocabulary().framework_of(head).is_none() && stamped < 3 && words < 2 {
        return None;
    }
    // Each launch prints the log's first line again (its command, banner or configuration).
    let first = |l: &str| {
        clean::clean(l)
            .into_iter()
            .next()
            .map(|c| c.text.into_owned())
            .unwrap_or_default()
    };
    // The first line that is not part of a traceback.
    let banner = lines
        .iter()
        .find(|l| {
            !l.starts_with(char::is_whitespace) && !l.contains("Traceback") && !l.contains("Error")
        })
        .map_or(String::new(), |l| first(l));
    let banners = lines
        .iter()
        .filter(|l| !banner.is_empty() && first(l) == banner)
        .count();
    // A launch that crashed leaves a traceback; where stamped lines follow one, another launch began.
    let (mut relaunched, mut in_traceback) = (0usize, false);
    for l in &lines {
        if l.contains("Traceback (most recent call last)") {
            in_traceback = true;
        } else if in_traceback && clean::clean(l).iter().any(|c| c.wall_time.is_some()) {
            in_traceback = false;
            relaunched += 1;
        }
    }
    let launches = banners.max(relaunched + 1);
    // The error it ends in: an out-of-memory error where there is one, else the last error that
    // says something after its name.
    let tail: Vec<&&str> = lines.iter().rev().take(400).collect();
    let says = |l: &str| {
        l.split_once("Error:")
            .is_some_and(|(_, after)| !after.trim().is_empty())
            || l.contains("Killed")
    };
    let ending = tail
        .iter()
        .find(|l| l.contains("OutOfMemory") || l.contains("out of memory"))
        .or_else(|| tail.iter().find(|l| says(l)))
        .map(|l| {
            format!(
                ": it ends in '{}'",
                l.trim().chars().take(160).collect::<String>()
            )
        })
        .unwrap_or_default();
    Some((launches, ending))
}

/// The part of a log searched for framework markers.
fn head(text: &str) -> &str {
    let mut end = text.len().min(4 << 20);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// What the user gave by flag that the reader's derivations use too (a per-device rate into a step
/// time needs the device count): each wins over what the log says.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Given {
    pub num_devices: Option<f64>,
    pub seq_len: Option<f64>,
    pub tokens_per_step: Option<f64>,
    pub samples_per_step: Option<f64>,
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
    let merged = blocks::scan_all(&mut blocks, framework).map_err(|e| e.to_string())?;
    let ends_with_newline = blocks.last == Some(b'\n');
    let chosen = family::choose(merged, framework, ends_with_newline)?;
    reading::read(chosen, framework, beside, given)
}

#[cfg(test)]
pub(super) mod tests {
    use super::blocks::scan_block;
    use super::scan::LONGEST_LINE;
    use super::*;
    use crate::columns::Field;

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
[rank0]:[titan] 2026-04-18 22:16:26,756 - root - INFO - \u{1b}[31mstep: 101  \u{1b}[32mloss:  7.9  \u{1b}[38;2;54;234;195mmemory: 29.11GiB(92.83%)  \u{1b}[34mtps: 70,000  \u{1b}[36mtflops: 48.15  \u{1b}[35mmfu: 15.43%\u{1b}[39m\n\
[rank0]:[titan] 2026-04-18 22:16:26,800 - root - INFO - validate step: 101  loss: 7.0  memory: 1.00GiB(1.00%)  tps: 5\n";
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
    pub(super) const LAYOUTS: [&str; 7] = [
        "colon-spaces",
        "equals-dashes",
        "megatron-bars",
        "key-value-commas",
        "python-dict",
        "json",
        "timestamped-equals-commas",
    ];

    pub(super) fn print_line(layout: &str, step: u32, pairs: &[(String, f64)]) -> String {
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

    /// The real logs of tests/data/logs, in order of name.
    pub(super) fn corpus_logs() -> Vec<std::path::PathBuf> {
        let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/logs");
        let mut logs: Vec<_> = std::fs::read_dir(&folder)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .collect();
        logs.sort();
        logs
    }

    #[test]
    fn the_corpus_reads_the_same_in_blocks_of_any_size() {
        // Each real log of tests/data/logs in one block, and cut into blocks of one line and of 4 KiB,
        // read apart and put together: the same rows, notes, warnings and facts.
        let logs = corpus_logs();
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
