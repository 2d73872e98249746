//! Goodput: where a run's elapsed time went, from the rows its log already holds.
//!
//! A run is its rows in log order, every attempt's included (a relaunch that resumes from a checkpoint
//! logs some steps again). An *attempt* starts where the step counter does not go forward, or where the
//! log says training was launched again (a console log's restart line). A row is
//! *kept* unless a later attempt started at or before its step (the later attempt threw it away and
//! ran it again). Every second from the start of the run's first step to the end of its last is in
//! exactly one bucket:
//!
//! - `productive`: kept rows at their step time, less the start-up excess of an attempt's first row;
//! - `wasted_progress`: rows a later attempt ran again, at their step time (less start-up excess);
//! - `startup`: an attempt's first row's excess over the run's ideal step time (compilation, warm-up);
//! - `pause`: the time between two rows of one attempt beyond the later row's step time (evaluation,
//!   checkpoints, stalls);
//! - `recovery`: from the end of an attempt's last row to the start of the next attempt's first;
//! - `other`: what is left (never negative): where the log's clocks disagree, and after a relaunch W&B
//!   resumed, the time between the relaunch and the first step W&B kept (start-up, or steps run again
//!   that W&B dropped: it keeps no step lower than the current one, and the two cannot be told apart).
//!
//! A run's own clock (W&B's `_runtime`, which a resumed run carries on from where the last process left
//! it) tells a relaunch apart from a pause even where no step is seen twice: the wall clock runs on
//! while no process does, so wall time less run time jumps by the time the run was down.
//!
//! The ideal step time is Google's rule (ml-goodput-measurement): the mean of the per-step times within
//! median + 3 MAD, over every row but attempts' first. A row's wall time is when it was logged, the end
//! of its step(s); a row logged every k steps covers k steps (`span`). docs/goodput.md has the rules
//! side by side with Google's goodput and Meta's effective training time.

use crate::stats::{median_of_sorted, Counted, ExactSum};

/// What a log says happened just before one of its rows (a console log's lines between two step
/// lines).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// Training was launched again (`Training starts at step N`).
    Restart,
    /// An evaluation ran (lines of an evaluation family).
    Evaluation,
    /// A checkpoint was saved (`Saving the checkpoint`).
    Checkpoint,
    /// A launch ran that logged no training step (it died at start-up, found no device, was killed
    /// before its first step). On the row after it, or on a row past the last where none came after.
    LaunchWithoutSteps,
}

/// One row of a run, as the log gives it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Row {
    pub step: Option<f64>,
    /// Seconds since the epoch when the row was logged (the end of its step).
    pub wall_time: Option<f64>,
    /// Seconds a step took.
    pub step_time: Option<f64>,
    /// Steps the row covers (1, or k for a row logged every k steps).
    pub span: f64,
    /// Model FLOPs the row's steps did.
    pub flops: Option<f64>,
    /// The devices' dense peak FLOP/s together (devices x peak per device).
    pub capacity: Option<f64>,
    pub devices: Option<f64>,
    /// The log says training was launched again just before this row (`Training starts at step N`).
    pub restart: bool,
    /// The log says an evaluation ran, or a checkpoint was saved, between the row before and this one;
    /// `None` where the log cannot say (only console logs' lines do).
    pub evaluation: Option<bool>,
    pub checkpoint: Option<bool>,
    /// Seconds the run's processes had run when the row was logged (W&B's `_runtime`), where the log
    /// keeps such a clock across relaunches.
    pub run_clock: Option<f64>,
    /// The row stands for a whole run or launch (a summary's run-mean step time), not for its steps.
    pub summary: bool,
    /// Launches that logged no training step, just before this row (or, on a run's last row, after it).
    pub launches_without_steps: usize,
}

/// Seconds by which wall time less run time must jump between two rows for the run to have been down
/// between them: W&B's `_runtime` is whole seconds in older clients, and no relaunch (a new process,
/// its imports, its devices) takes less.
pub const DOWN_AT_LEAST_S: f64 = 10.0;

/// Where one run's time went. Times in seconds; `None` where the log cannot tell (see `notes`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Goodput {
    pub attempts: usize,
    /// Launches that logged no training step: not attempts (no step of theirs is in any bucket), their
    /// time in the gap around them.
    pub launches_without_steps: usize,
    pub steps_executed: f64,
    pub steps_kept: f64,
    pub steps_redone: f64,
    pub elapsed_s: Option<f64>,
    pub productive_s: Option<f64>,
    pub wasted_progress_s: Option<f64>,
    pub recovery_s: Option<f64>,
    pub startup_s: Option<f64>,
    pub pause_s: Option<f64>,
    /// The pauses the log explains: before a row an evaluation ran before (and no checkpoint), and before
    /// a row a checkpoint was saved before (and no evaluation); `None` where the log cannot say.
    pub pause_evaluation_s: Option<f64>,
    pub pause_checkpoint_s: Option<f64>,
    pub other_s: Option<f64>,
    /// productive / elapsed.
    pub goodput: Option<f64>,
    pub ideal_step_time_s: Option<f64>,
    /// FLOPs of kept rows / (capacity x productive time).
    pub mfu_productive: Option<f64>,
    /// FLOPs of kept rows / (capacity x elapsed time): goodput x mfu_productive.
    pub mfu_effective: Option<f64>,
    /// Devices x (elapsed - productive), in hours.
    pub device_hours_lost: Option<f64>,
    /// Steps slower than median + 3 MAD (attempts' first rows aside), and the time they took beyond the
    /// ideal step time.
    pub straggler_steps: f64,
    pub straggler_s: Option<f64>,
    /// The first step of each attempt after the first (where each relaunch resumed).
    pub attempt_steps: Vec<f64>,
    /// Seconds between relaunches the log's run clock shows and the first row each kept: start-up, or
    /// steps run again that the log does not hold (part of `other_s`).
    pub unseen_s: f64,
    /// What could not be measured, and why; what the log's clocks got wrong.
    pub notes: Vec<String>,
}

/// The ideal step time of `times` (Google's rule: the mean of those within median + 3 MAD) and that
/// bound.
pub fn ideal_step_time(times: &[f64]) -> Option<(f64, f64)> {
    let mut counted = Counted::default();
    times.iter().for_each(|t| counted.push(*t));
    ideal_step_time_of(&counted)
}

/// [`ideal_step_time`] of step times counted by distinct value. The mean is summed exactly (rounded
/// once), so it is the same whatever order the rows came in.
pub fn ideal_step_time_of(times: &Counted) -> Option<(f64, f64)> {
    let sorted = times.sorted();
    let m = median_of_sorted(&sorted, times.len())?;
    let mut deviations = Counted::default();
    for (t, n) in &sorted {
        deviations.push_times((t - m).abs(), *n);
    }
    let mad = deviations.median()?;
    let bound = m + 3.0 * mad;
    let (mut sum, mut within) = (ExactSum::default(), 0u64);
    for (t, n) in sorted.iter().filter(|(t, _)| *t <= bound) {
        sum.add_times(*t, *n);
        within += n;
    }
    Some((sum.value() / within as f64, bound))
}

fn positive(v: Option<f64>) -> Option<f64> {
    v.filter(|v| v.is_finite() && *v > 0.0)
}

/// Seconds the run was down between rows `before` and `now`, where its run clock went on while the wall
/// clock jumped ahead by more than [`DOWN_AT_LEAST_S`]; `None` without a run clock, or where it went
/// back (a new run, not a resumed one).
fn down_before(before: &Row, now: &Row) -> Option<f64> {
    let (w0, w1) = (before.wall_time?, now.wall_time?);
    let (c0, c1) = (before.run_clock?, now.run_clock?);
    let jump = (w1 - c1) - (w0 - c0);
    (c1 >= c0 && jump > DOWN_AT_LEAST_S && jump.is_finite()).then_some(jump)
}

/// Where the time of the run whose rows are `rows` (in log order) went.
pub fn measure(rows: &[Row]) -> Goodput {
    let mut survey = Survey::default();
    rows.iter().for_each(|r| survey.push(r));
    let Some(weights) = survey.finish() else {
        return Goodput::no_rows();
    };
    let mut accounts = Accounts::new(&weights);
    rows.iter().for_each(|r| accounts.push(r));
    accounts.finish()
}

impl Goodput {
    /// The goodput of a run without rows.
    pub fn no_rows() -> Goodput {
        Goodput {
            notes: vec!["no rows".into()],
            ..Goodput::default()
        }
    }
}

/// What goodput must know of a run's rows before it weighs any of them, gathered in one pass over the
/// rows in log order: where each attempt starts (a row whose step does not go forward, a row the log's
/// restart line comes before, a row the run clock says the run was down before), the step times' order
/// statistics, the devices and their peaks. [`measure`] then weighs the same rows again
/// ([`Accounts`]); a console log folded in windows is read twice, its rows held neither time.
#[derive(Debug, Clone)]
pub struct Survey {
    rows: usize,
    before: Option<Row>,
    /// Each attempt's first row and its step.
    starts: Vec<(usize, Option<f64>)>,
    launches_without_steps: usize,
    /// Step times of every row but attempts' first.
    times: Counted,
    devices: Counted,
    capacities: Counted,
    /// Every row has a wall time; any has a step time; every row says whether an evaluation and a
    /// checkpoint came before it.
    timed: bool,
    any_time: bool,
    marked: bool,
}

impl Default for Survey {
    fn default() -> Survey {
        Survey {
            rows: 0,
            before: None,
            starts: Vec::new(),
            launches_without_steps: 0,
            times: Counted::default(),
            devices: Counted::default(),
            capacities: Counted::default(),
            timed: true,
            any_time: false,
            marked: true,
        }
    }
}

impl Survey {
    /// The next row of the run.
    pub fn push(&mut self, r: &Row) {
        let start = match &self.before {
            None => true,
            Some(before) => {
                let back = matches!((before.step, r.step), (Some(b), Some(now)) if now <= b);
                back || r.restart || down_before(before, r).is_some()
            }
        };
        if start {
            self.starts.push((self.rows, r.step));
        } else if let Some(t) = positive(r.step_time) {
            self.times.push(t);
        }
        self.launches_without_steps += r.launches_without_steps;
        if let Some(d) = positive(r.devices) {
            self.devices.push(d);
        }
        if let Some(c) = positive(r.capacity) {
            self.capacities.push(c);
        }
        self.timed &= r.wall_time.is_some_and(f64::is_finite);
        self.any_time |= positive(r.step_time).is_some();
        self.marked &= r.evaluation.is_some() && r.checkpoint.is_some();
        self.before = Some(*r);
        self.rows += 1;
    }

    /// What the rows weigh by; `None` where there were none.
    pub fn finish(self) -> Option<Weights> {
        if self.rows == 0 {
            return None;
        }
        // A row is kept unless a later attempt starts at or before its step.
        let mut later_first = vec![f64::INFINITY; self.starts.len()];
        for a in (0..self.starts.len().saturating_sub(1)).rev() {
            let next = self.starts[a + 1].1.unwrap_or(f64::NEG_INFINITY);
            later_first[a] = later_first[a + 1].min(next);
        }
        Some(Weights {
            rows: self.rows,
            attempt_steps: self.starts[1..].iter().filter_map(|s| s.1).collect(),
            starts: self.starts.into_iter().map(|s| s.0).collect(),
            later_first,
            launches_without_steps: self.launches_without_steps,
            ideal: ideal_step_time_of(&self.times),
            run_devices: self.devices.median(),
            run_capacity: self.capacities.median(),
            one_count: self.devices.all_equal(),
            one_capacity: self.capacities.all_equal(),
            timed: self.timed,
            any_time: self.any_time,
            marked: self.marked,
        })
    }
}

/// What a [`Survey`] found, by which [`Accounts`] weighs each row.
#[derive(Debug, Clone)]
pub struct Weights {
    rows: usize,
    /// Each attempt's first row.
    starts: Vec<usize>,
    attempt_steps: Vec<f64>,
    /// Per attempt, the lowest first step of the attempts after it.
    later_first: Vec<f64>,
    launches_without_steps: usize,
    /// The ideal step time and the bound of the steps it is the mean of.
    ideal: Option<(f64, f64)>,
    run_devices: Option<f64>,
    run_capacity: Option<f64>,
    one_count: bool,
    one_capacity: bool,
    timed: bool,
    any_time: bool,
    marked: bool,
}

/// Each row's seconds put in their buckets, in log order: the second pass of [`measure`], the same
/// rows the [`Survey`] saw.
pub struct Accounts<'w> {
    w: &'w Weights,
    row: usize,
    attempt: usize,
    before: Option<Row>,
    steps_executed: f64,
    steps_kept: f64,
    straggler_steps: f64,
    straggler_s: f64,
    productive: f64,
    wasted: f64,
    startup: f64,
    pause: f64,
    recovery: f64,
    evaluating: f64,
    checkpointing: f64,
    unseen: f64,
    productive_device_s: f64,
    productive_capacity_s: f64,
    untimed_firsts: usize,
    backwards: usize,
    resumed: usize,
    kept_flops: f64,
    flops_known: bool,
    /// Rows not weighed: not those the survey saw.
    unsurveyed: usize,
    /// Per attempt: when its first step started, its last row's wall time, whether the run clock says
    /// the run was down before it, and its rows' devices and capacities (each row's own, else the
    /// run's).
    attempts: Vec<AttemptSpan>,
}

struct AttemptSpan {
    start: f64,
    end: f64,
    down_before: bool,
    devices: Counted,
    capacities: Counted,
}

impl<'w> Accounts<'w> {
    pub fn new(w: &'w Weights) -> Accounts<'w> {
        Accounts {
            w,
            row: 0,
            attempt: 0,
            before: None,
            // As `Iterator::sum` starts.
            steps_executed: -0.0,
            steps_kept: -0.0,
            straggler_steps: 0.0,
            straggler_s: 0.0,
            productive: 0.0,
            wasted: 0.0,
            startup: 0.0,
            pause: 0.0,
            recovery: 0.0,
            evaluating: 0.0,
            checkpointing: 0.0,
            unseen: 0.0,
            productive_device_s: 0.0,
            productive_capacity_s: 0.0,
            untimed_firsts: 0,
            backwards: 0,
            resumed: 0,
            kept_flops: -0.0,
            flops_known: true,
            unsurveyed: 0,
            attempts: Vec::with_capacity(w.starts.len()),
        }
    }

    /// The next row of the run (the rows the survey saw, in the same order). A row the survey did not
    /// see (a log read twice that grew in between), or one without the wall time every row the survey
    /// saw had, is not weighed: [`Accounts::as_surveyed`] then says so.
    pub fn push(&mut self, r: &Row) {
        let w = self.w;
        let i = self.row;
        let before_wall = self.before.as_ref().and_then(|b| b.wall_time);
        let untimed = r.wall_time.is_none() || (i > 0 && before_wall.is_none());
        if i >= w.rows || (w.timed && untimed) {
            self.unsurveyed += 1;
            return;
        }
        let wall = r.wall_time.unwrap_or(f64::NAN);
        if w.starts.get(self.attempt + 1) == Some(&i) {
            self.attempt += 1;
        }
        let first = w.starts.get(self.attempt) == Some(&i);
        let kept = r.step.is_none_or(|s| {
            s < w
                .later_first
                .get(self.attempt)
                .copied()
                .unwrap_or(f64::INFINITY)
        });
        let down = self.before.as_ref().and_then(|b| down_before(b, r));
        let span = if r.span.is_finite() && r.span > 0.0 {
            r.span
        } else {
            1.0
        };
        self.steps_executed += span;
        if kept {
            self.steps_kept += span;
        }
        if let (false, Some((ideal, bound))) = (first, w.ideal) {
            if let Some(t) = positive(r.step_time).filter(|t| *t > bound) {
                self.straggler_steps += span;
                self.straggler_s += (t - ideal) * span;
            }
        }
        // The row's step time (all its steps), and the start-up excess of an attempt's first row.
        let row_time = positive(r.step_time).map(|t| t * span);
        let startup = match (row_time, w.ideal) {
            (Some(t), Some((ideal, _))) if first => (t - ideal * span).max(0.0),
            _ => 0.0,
        };
        let devices = positive(r.devices).or(w.run_devices).unwrap_or(0.0);
        let capacity = positive(r.capacity).or(w.run_capacity).unwrap_or(0.0);
        let step_part = if w.timed {
            let before_wall = || before_wall.unwrap_or(wall);
            if first {
                self.attempts.push(AttemptSpan {
                    start: wall - row_time.unwrap_or(0.0),
                    end: wall,
                    down_before: down.is_some(),
                    devices: Counted::default(),
                    capacities: Counted::default(),
                });
            }
            // The first row starts one.
            if let Some(attempt) = self.attempts.last_mut() {
                attempt.end = wall;
                attempt.devices.push(devices);
                attempt.capacities.push(capacity);
            }
            if let Some(down) = down {
                // The run was down, then ran for the rest of the interval: start-up and any steps
                // run again that the log does not hold, then this row's step(s), counted at the ideal
                // step time (its own, if shorter) because the rest cannot be told apart.
                self.resumed += 1;
                let interval = (wall - before_wall()).max(0.0);
                let downtime = down.min(interval);
                self.recovery += downtime;
                let running = interval - downtime;
                let step = w
                    .ideal
                    .map(|(ideal, _)| ideal * span)
                    .or(row_time)
                    .map_or(0.0, |t| t.min(running));
                self.unseen += running - step;
                step
            } else if first {
                let t = row_time.unwrap_or_else(|| {
                    self.untimed_firsts += 1;
                    0.0
                });
                self.startup += startup;
                t - startup
            } else {
                let interval = wall - before_wall();
                if interval < 0.0 {
                    self.backwards += 1;
                }
                let interval = interval.max(0.0);
                let step = row_time.map_or(interval, |t| t.min(interval));
                // A step time made from these very timestamps differs from the interval by rounding
                // alone (a pause of 6e-14 s): it is the interval.
                let step = if interval - step <= 1e-9 * interval.max(1.0) {
                    interval
                } else {
                    step
                };
                self.pause += interval - step;
                match (r.evaluation, r.checkpoint) {
                    (Some(true), Some(false)) => self.evaluating += interval - step,
                    (Some(false), Some(true)) => self.checkpointing += interval - step,
                    _ => {}
                }
                step
            }
        } else {
            self.startup += startup;
            row_time.unwrap_or(0.0) - startup
        };
        if kept {
            self.productive += step_part;
            self.productive_device_s += devices * step_part;
            self.productive_capacity_s += capacity * step_part;
            self.flops_known &= r.flops.is_some_and(f64::is_finite);
            if let Some(f) = r.flops {
                self.kept_flops += f;
            }
        } else {
            self.wasted += step_part;
        }
        self.before = Some(*r);
        self.row += 1;
    }

    /// Whether the rows weighed are the rows the survey saw, no more, no fewer.
    pub fn as_surveyed(&self) -> bool {
        self.unsurveyed == 0 && self.row == self.w.rows
    }

    /// Where the run's time went.
    pub fn finish(self) -> Goodput {
        let w = self.w;
        let mut out = Goodput {
            attempts: w.starts.len(),
            launches_without_steps: w.launches_without_steps,
            steps_executed: self.steps_executed,
            steps_kept: self.steps_kept,
            steps_redone: self.steps_executed - self.steps_kept,
            ideal_step_time_s: w.ideal.map(|(t, _)| t),
            attempt_steps: w.attempt_steps.clone(),
            ..Goodput::default()
        };
        if w.ideal.is_some() {
            out.straggler_steps = self.straggler_steps;
            out.straggler_s = Some(self.straggler_s);
        }
        let (productive, mut recovery) = (self.productive, self.recovery);
        let (mut elapsed_device_s, mut elapsed_capacity_s) = (0.0, 0.0);
        let mut elapsed = None;
        if w.timed {
            let attempts = &self.attempts;
            let mut overlapping = 0;
            for a in (1..attempts.len()).filter(|a| !attempts[*a].down_before) {
                let gap = attempts[a].start - attempts[a - 1].end;
                if gap < 0.0 {
                    overlapping += 1;
                }
                recovery += gap.max(0.0);
            }
            let total = attempts.last().map_or(0.0, |a| a.end) - attempts[0].start;
            elapsed = Some(total);
            for a in 0..attempts.len() {
                let from = if a == 0 {
                    attempts[0].start
                } else {
                    attempts[a - 1].end
                };
                let stretch = (attempts[a].end - from).max(0.0);
                elapsed_device_s += attempts[a].devices.median().unwrap_or(0.0) * stretch;
                elapsed_capacity_s += attempts[a].capacities.median().unwrap_or(0.0) * stretch;
            }
            let unseen = self.unseen;
            let accounted =
                productive + self.wasted + self.startup + self.pause + recovery + unseen;
            let other = total - accounted;
            if other < -1e-9 * total.abs().max(1.0) || self.backwards > 0 || overlapping > 0 {
                out.notes.push(format!(
                    "the log's clocks disagree ({} row(s) logged before the row above them, {overlapping} attempt(s) starting before the one before ended): {:.3} s counted twice",
                    self.backwards,
                    (-other).max(0.0)
                ));
            }
            out.other_s = Some(other.max(0.0) + unseen);
            out.unseen_s = unseen;
            if self.resumed > 0 {
                out.notes.push(format!(
                    "{} relaunch(es) seen by the run's clock (wall time less run time jumps): {unseen:.3} s from each relaunch to the first row the log kept is start-up or steps run again that the log does not hold (W&B drops a step lower than the current one), not told apart, in other_s; steps_redone counts none of those steps",
                    self.resumed
                ));
            }
            out.pause_s = Some(self.pause);
            if w.marked {
                out.pause_evaluation_s = Some(self.evaluating);
                out.pause_checkpoint_s = Some(self.checkpointing);
            }
            out.recovery_s = Some(recovery);
            if self.untimed_firsts > 0 {
                out.notes.push(format!(
                    "{} attempt(s) start with a row that has no step time: their first step's duration (and start-up) is not measured",
                    self.untimed_firsts
                ));
            }
        } else {
            out.notes.push(
                "no wall time on every row: elapsed time, pauses and recovery between attempts are not measured (productive, wasted and start-up time are the logged step times)"
                    .into(),
            );
        }
        if !w.any_time && !w.timed {
            out.notes
                .push("no step times and no wall times: nothing to measure".into());
            return out;
        }
        if w.ideal.is_none() {
            out.notes.push(if w.any_time {
                "no step times besides attempts' first rows: start-up excess is not measured".into()
            } else {
                "no step times, only wall times: start-up excess is not measured".into()
            });
        }
        out.productive_s = Some(productive);
        out.wasted_progress_s = Some(self.wasted);
        out.startup_s = Some(self.startup);
        out.goodput = elapsed.filter(|e| *e > 0.0).map(|e| productive / e);
        out.elapsed_s = elapsed;

        // MFU over productive and elapsed time, at the run's capacity (devices x peak); where it differs
        // between rows, each row's and each attempt's time at its own.
        if !w.one_capacity {
            out.notes.push(
                "the devices or their peak differ between rows (a relaunch on other devices): MFU weighs each kept row's time by its own capacity, and each attempt's stretch of the elapsed time by its attempt's".into(),
            );
        }
        let kept_flops = self.kept_flops;
        if let Some(capacity) = w
            .run_capacity
            .filter(|_| self.flops_known && out.steps_kept > 0.0)
        {
            if w.one_capacity {
                out.mfu_productive =
                    Some(kept_flops / (capacity * productive)).filter(|m| m.is_finite());
                out.mfu_effective = elapsed
                    .map(|e| kept_flops / (capacity * e))
                    .filter(|m| m.is_finite());
            } else {
                out.mfu_productive =
                    Some(kept_flops / self.productive_capacity_s).filter(|m| m.is_finite());
                out.mfu_effective = elapsed
                    .map(|_| kept_flops / elapsed_capacity_s)
                    .filter(|m| m.is_finite());
            }
        } else if out.steps_kept > 0.0 {
            out.notes.push(
                "MFU not measured: a kept row has no FLOPs or the devices' peak is unknown".into(),
            );
        }
        out.device_hours_lost = match (w.run_devices, elapsed) {
            (Some(n), Some(e)) if w.one_count => Some(n * (e - productive) / 3600.0),
            (Some(_), Some(_)) => Some((elapsed_device_s - self.productive_device_s) / 3600.0),
            _ => None,
        };
        no_impossible_figure(&mut out);
        out
    }
}

/// Leaves empty, with a note naming the evidence that conflicts, every figure that cannot be: a
/// negative time, goodput outside [0, 1] (productive time beyond the elapsed time the steps were
/// inside), negative device-hours lost, MFU above 1. Each is a defect of the reading (clocks of
/// machines that disagree, attempts that overlap in time, a FLOPs count or peak that is wrong), never
/// a figure to print.
fn no_impossible_figure(out: &mut Goodput) {
    // A thousandth of a second a second of rounding is no conflict.
    let slack = |of: f64| 1e-9 * of.abs().max(1.0);
    let elapsed = out.elapsed_s.unwrap_or(0.0);
    let mut notes = Vec::new();
    for (name, value) in [
        ("elapsed_s", &mut out.elapsed_s),
        ("productive_s", &mut out.productive_s),
        ("wasted_progress_s", &mut out.wasted_progress_s),
        ("recovery_s", &mut out.recovery_s),
        ("startup_s", &mut out.startup_s),
        ("pause_s", &mut out.pause_s),
        ("pause_evaluation_s", &mut out.pause_evaluation_s),
        ("pause_checkpoint_s", &mut out.pause_checkpoint_s),
        ("other_s", &mut out.other_s),
        ("ideal_step_time_s", &mut out.ideal_step_time_s),
        ("straggler_s", &mut out.straggler_s),
    ] {
        if let Some(v) = *value {
            if !v.is_finite() || v < -slack(elapsed) {
                notes.push(format!(
                    "{name} {v} s is impossible (a negative or non-finite time): the log's clocks conflict; left empty"
                ));
                *value = None;
            } else if v < 0.0 {
                *value = Some(0.0);
            }
        }
    }
    if let Some(g) = out.goodput {
        if !g.is_finite() || g < 0.0 || g > 1.0 + slack(1.0) {
            notes.push(format!(
                "goodput {g:.6} is outside [0, 1]: {} s productive against {} s elapsed (first step's start to last step's end), so the log's clocks conflict; left empty",
                out.productive_s.map_or("no".into(), |p| format!("{p:.3}")),
                out.elapsed_s.map_or("no".into(), |e| format!("{e:.3}")),
            ));
            out.goodput = None;
            out.mfu_effective = None;
            out.device_hours_lost = None;
        } else if g > 1.0 {
            out.goodput = Some(1.0);
        }
    }
    if out.elapsed_s.is_none() || out.productive_s.is_none() {
        out.goodput = None;
    }
    if let Some(h) = out
        .device_hours_lost
        .filter(|h| !h.is_finite() || *h < -slack(1.0))
    {
        notes.push(format!(
            "device_hours_lost {h:.6} is negative: the productive time exceeds the elapsed time; left empty"
        ));
        out.device_hours_lost = None;
    }
    for (name, value) in [
        ("mfu_productive", &mut out.mfu_productive),
        ("mfu_effective", &mut out.mfu_effective),
    ] {
        if let Some(m) = value.filter(|m| !m.is_finite() || *m < 0.0 || *m > 1.0) {
            notes.push(format!(
                "{name} {m:.4} is impossible (MFU above 1 or negative): the FLOPs count, the device's peak or the productive time is wrong; left empty"
            ));
            *value = None;
        }
    }
    out.notes.extend(notes);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run as a script: each attempt's rows (step, step time) logged back to back from `start`, with
    /// extra seconds after some rows (pauses), a first step `compile` seconds slower, and `down`
    /// seconds between attempts.
    fn timeline(
        attempts: &[(std::ops::RangeInclusive<u32>, f64)],
        step: f64,
        compile: f64,
        pauses: &[(usize, u32, f64)],
    ) -> Vec<Row> {
        let mut rows = Vec::new();
        let mut clock = 1_000_000.0;
        for (a, (steps, down)) in attempts.iter().enumerate() {
            clock += down;
            for (k, s) in steps.clone().enumerate() {
                let t = if k == 0 { step + compile } else { step };
                clock += t;
                rows.push(Row {
                    step: Some(f64::from(s)),
                    wall_time: Some(clock),
                    step_time: Some(t),
                    span: 1.0,
                    flops: Some(100.0 * step),
                    capacity: Some(1000.0),
                    devices: Some(8.0),
                    restart: false,
                    evaluation: Some(false),
                    checkpoint: Some(false),
                    run_clock: None,
                    summary: false,
                    launches_without_steps: 0,
                });
                if let Some((_, _, p)) = pauses.iter().find(|(pa, ps, _)| *pa == a && *ps == s) {
                    clock += p;
                }
            }
        }
        rows
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-6)
    }

    #[test]
    fn accounts_weigh_only_the_rows_their_survey_saw() {
        // A log read twice that grew in between: the second pass's extra row is not weighed, and
        // the accounts say they are not the survey's; nor is a row without the wall time every
        // surveyed row had. Neither panics.
        let rows = timeline(&[(1..=20, 0.0), (15..=30, 60.0)], 2.0, 30.0, &[]);
        let mut survey = Survey::default();
        rows.iter().for_each(|r| survey.push(r));
        let weights = survey.finish().expect("rows");
        let mut accounts = Accounts::new(&weights);
        rows.iter().for_each(|r| accounts.push(r));
        assert!(accounts.as_surveyed());
        assert_eq!(accounts.finish(), measure(&rows));
        let mut grown = Accounts::new(&weights);
        rows.iter().chain(rows.last()).for_each(|r| grown.push(r));
        assert!(!grown.as_surveyed());
        let mut untimed = Accounts::new(&weights);
        for (i, r) in rows.iter().enumerate() {
            let mut r = *r;
            if i == 7 {
                r.wall_time = None;
            }
            untimed.push(&r);
        }
        assert!(!untimed.as_surveyed());
        let g = untimed.finish();
        assert!(g.goodput.is_none_or(|g| (0.0..=1.0).contains(&g)), "{g:?}");
    }

    #[test]
    fn a_crash_a_rollback_a_pause_and_a_compilation_each_in_their_bucket() {
        // Attempt 1 runs steps 1..=130 and dies; its last checkpoint was at 100, so attempt 2 (after 600 s
        // down) runs 101..=250. Each step takes 2 s, each first step 30 s more (compilation); step 50
        // of attempt 1 is followed by a 40 s evaluation.
        let rows = timeline(
            &[(1..=130, 0.0), (101..=250, 600.0)],
            2.0,
            30.0,
            &[(0, 50, 40.0)],
        );
        let g = measure(&rows);
        assert_eq!(g.attempts, 2);
        assert_eq!(g.attempt_steps, [101.0]);
        assert_eq!(
            (g.steps_executed, g.steps_kept, g.steps_redone),
            (280.0, 250.0, 30.0)
        );
        assert!(close(g.ideal_step_time_s, 2.0));
        // Productive: 250 kept steps at 2 s. Wasted: steps 101..=130 of attempt 1, 30 x 2 s.
        assert!(close(g.productive_s, 500.0), "{g:?}");
        assert!(close(g.wasted_progress_s, 60.0));
        assert!(close(g.startup_s, 60.0));
        assert!(close(g.pause_s, 40.0));
        assert!(close(g.recovery_s, 600.0));
        assert!(close(g.other_s, 0.0));
        // Elapsed: 130 x 2 + 30 + 40 (attempt 1) + 600 + 150 x 2 + 30 (attempt 2).
        assert!(close(g.elapsed_s, 1260.0));
        let sum = [
            g.productive_s,
            g.wasted_progress_s,
            g.startup_s,
            g.pause_s,
            g.recovery_s,
            g.other_s,
        ]
        .iter()
        .map(|v| v.unwrap())
        .sum::<f64>();
        assert!((sum - g.elapsed_s.unwrap()).abs() < 1e-6);
        assert!(close(g.goodput, 500.0 / 1260.0));
        // FLOPs: 250 kept steps of 200 at 1000 FLOP/s.
        assert!(close(g.mfu_productive, 250.0 * 200.0 / (1000.0 * 500.0)));
        assert!(close(
            g.mfu_effective,
            g.goodput.unwrap() * g.mfu_productive.unwrap()
        ));
        assert!(close(g.device_hours_lost, 8.0 * 760.0 / 3600.0));
        assert_eq!(g.straggler_steps, 0.0);
        assert!(g.notes.is_empty(), "{:?}", g.notes);
    }

    #[test]
    fn a_run_resumed_twice_from_ever_earlier_checkpoints_keeps_only_what_no_later_attempt_redid() {
        // 1..=60, then 41..=90 (from 40), then 31..=120 (from 30: attempt 2's steps all thrown away too).
        let rows = timeline(
            &[(1..=60, 0.0), (41..=90, 10.0), (31..=120, 20.0)],
            1.0,
            0.0,
            &[],
        );
        let g = measure(&rows);
        assert_eq!(g.attempts, 3);
        assert_eq!(g.steps_kept, 30.0 + 90.0);
        assert_eq!(g.steps_redone, 30.0 + 50.0);
        assert!(close(g.recovery_s, 30.0));
        assert!(close(g.elapsed_s, 200.0 + 30.0));
        assert!(close(g.productive_s, 120.0));
        assert!(close(g.wasted_progress_s, 80.0));
    }

    #[test]
    fn attempts_that_overlap_in_time_give_no_goodput_above_one() {
        // A relaunch on a machine whose clock is 300 s behind: its rows are logged "before" the first
        // attempt ended, so the steps inside the run take longer than the run itself.
        let mut rows = timeline(&[(1..=100, 0.0), (101..=200, 0.0)], 2.0, 0.0, &[]);
        for row in &mut rows[100..] {
            row.wall_time = row.wall_time.map(|w| w - 300.0);
            row.restart = row.step == Some(101.0);
        }
        let g = measure(&rows);
        assert_eq!(g.attempts, 2);
        assert_eq!(g.goodput, None, "{g:?}");
        assert_eq!(g.device_hours_lost, None);
        assert_eq!(g.mfu_effective, None);
        assert!(
            g.notes.iter().any(|n| n.contains("is outside [0, 1]")),
            "{:?}",
            g.notes
        );
        // MFU above 1 (a FLOPs count 10x too high) is left empty and said.
        let mut rows = timeline(&[(1..=50, 0.0)], 2.0, 0.0, &[]);
        for row in &mut rows {
            row.flops = Some(10.0 * 8.0 * 1000.0 * 2.0);
        }
        let g = measure(&rows);
        assert_eq!(g.mfu_productive, None);
        assert!(close(g.goodput, 1.0), "{g:?}");
        assert!(
            g.notes.iter().any(|n| n.contains("mfu_productive")),
            "{:?}",
            g.notes
        );
    }

    #[test]
    fn the_ideal_step_time_is_googles_rule() {
        // Google's rule: 1, 1, 1, 2, 10: median 1, MAD 0, so the mean of the three 1s.
        assert_eq!(
            ideal_step_time(&[1.0, 10.0, 1.0, 2.0, 1.0]),
            Some((1.0, 1.0))
        );
    }

    #[test]
    fn pauses_the_log_explains_are_told_apart() {
        // A 40 s pause after step 10 with a checkpoint line, 30 s after step 20 with an evaluation, 20 s
        // after step 30 with both, 10 s after step 40 with neither.
        let pauses = [(0, 10, 40.0), (0, 20, 30.0), (0, 30, 20.0), (0, 40, 10.0)];
        let mut rows = timeline(&[(1..=50, 0.0)], 1.0, 0.0, &pauses);
        rows[10].checkpoint = Some(true);
        rows[20].evaluation = Some(true);
        rows[30].checkpoint = Some(true);
        rows[30].evaluation = Some(true);
        let g = measure(&rows);
        assert!(close(g.pause_s, 100.0));
        assert!(close(g.pause_checkpoint_s, 40.0));
        assert!(close(g.pause_evaluation_s, 30.0));
        // A log that cannot say (a table) says nothing.
        for row in &mut rows {
            row.evaluation = None;
        }
        let g = measure(&rows);
        assert_eq!((g.pause_evaluation_s, g.pause_checkpoint_s), (None, None));
        assert!(close(g.pause_s, 100.0));
    }

    #[test]
    fn a_restart_line_starts_an_attempt_where_the_steps_go_on() {
        // Attempt 2 resumes exactly where attempt 1 stopped (step 21 after 20), 100 s later.
        let mut rows = timeline(&[(1..=20, 0.0), (21..=40, 100.0)], 1.0, 9.0, &[]);
        let g = measure(&rows);
        assert_eq!(g.attempts, 1);
        assert!(close(g.pause_s, 100.0) && close(g.recovery_s, 0.0));
        rows[20].restart = true;
        let g = measure(&rows);
        assert_eq!((g.attempts, g.steps_redone), (2, 0.0));
        assert!(close(g.recovery_s, 100.0) && close(g.pause_s, 0.0));
        assert!(close(g.startup_s, 18.0));
    }

    #[test]
    fn a_run_clock_that_carries_on_while_the_wall_clock_jumps_is_a_relaunch() {
        // 1..=20 at 1 s, then 100 s down and 15 s of start-up and steps run again that the log does not
        // hold before step 21; the run clock carries on from step 20's.
        let mut rows = timeline(&[(1..=20, 0.0), (21..=40, 100.0)], 1.0, 0.0, &[]);
        for (i, row) in rows.iter_mut().enumerate() {
            let wall = row.wall_time.unwrap() - 1_000_000.0;
            row.run_clock = Some(if i < 20 { wall } else { wall - 100.0 });
            if i >= 20 {
                row.wall_time = Some(row.wall_time.unwrap() + 15.0);
                row.run_clock = Some(row.run_clock.unwrap() + 15.0);
            }
        }
        let g = measure(&rows);
        assert_eq!((g.attempts, g.attempt_steps.clone()), (2, vec![21.0]));
        assert!(close(g.recovery_s, 100.0), "{g:?}");
        assert!(close(g.other_s, 15.0) && close(Some(g.unseen_s), 15.0));
        assert!(close(g.productive_s, 40.0) && close(g.pause_s, 0.0));
        assert!(close(g.elapsed_s, 155.0));
        // A jump under DOWN_AT_LEAST_S is the clocks' rounding, not a relaunch.
        let mut rows = timeline(&[(1..=20, 0.0), (21..=40, 9.0)], 1.0, 0.0, &[]);
        for row in &mut rows {
            row.run_clock = Some(row.step.unwrap());
        }
        assert_eq!(measure(&rows).attempts, 1);
        // A run clock that starts again is a new process W&B did not resume: no downtime from it.
        let mut rows = timeline(&[(1..=20, 0.0), (11..=30, 50.0)], 1.0, 0.0, &[]);
        for (i, row) in rows.iter_mut().enumerate() {
            row.run_clock = Some(if i < 20 { i } else { i - 20 } as f64 + 1.0);
        }
        let g = measure(&rows);
        assert_eq!(g.attempts, 2);
        assert!(close(g.recovery_s, 50.0) && close(g.other_s, 0.0));
    }

    #[test]
    fn stragglers_are_counted_with_the_time_they_added() {
        let mut rows = timeline(&[(1..=100, 0.0)], 1.0, 0.0, &[]);
        // Steps 20 and 70 took 6 s (their rows logged 5 s late).
        for (i, row) in rows.iter_mut().enumerate() {
            let late = (i >= 19) as u8 as f64 * 5.0 + (i >= 69) as u8 as f64 * 5.0;
            row.wall_time = Some(row.wall_time.unwrap() + late);
            if i == 19 || i == 69 {
                row.step_time = Some(6.0);
            }
        }
        let g = measure(&rows);
        assert_eq!(g.straggler_steps, 2.0);
        assert!(close(g.ideal_step_time_s, 1.0));
        assert!(close(g.straggler_s, 10.0));
        assert!(close(g.productive_s, 110.0));
        assert!(close(g.pause_s, 0.0));
    }

    #[test]
    fn what_the_log_cannot_tell_is_said_not_guessed() {
        let mut rows = timeline(&[(1..=20, 0.0), (11..=30, 5.0)], 1.0, 0.0, &[]);
        for row in &mut rows {
            row.wall_time = None;
        }
        let g = measure(&rows);
        assert_eq!(g.elapsed_s, None);
        assert_eq!(g.goodput, None);
        assert_eq!(g.recovery_s, None);
        assert!(close(g.productive_s, 30.0));
        assert!(close(g.wasted_progress_s, 10.0));
        assert!(
            g.notes.iter().any(|n| n.contains("no wall time")),
            "{:?}",
            g.notes
        );
        // No peak: no MFU, said so.
        let mut rows = timeline(&[(1..=20, 0.0)], 1.0, 0.0, &[]);
        rows[3].capacity = None;
        rows[4].flops = None;
        let g = measure(&rows);
        assert_eq!(g.mfu_productive, None);
        assert!(g.notes.iter().any(|n| n.contains("MFU not measured")));
        assert_eq!(measure(&[]).attempts, 0);
    }

    #[test]
    fn rows_logged_every_k_steps_cover_k_steps() {
        // One row every 10 steps of 0.5 s; attempt 2 resumes from step 50 after attempt 1 reached 80.
        let mut rows = Vec::new();
        let mut clock = 0.0;
        for (a, steps) in [(10..=80).step_by(10), (60..=120).step_by(10)]
            .into_iter()
            .enumerate()
        {
            clock += a as f64 * 100.0;
            for s in steps {
                clock += 5.0;
                rows.push(Row {
                    step: Some(f64::from(s)),
                    wall_time: Some(clock),
                    step_time: Some(0.5),
                    span: 10.0,
                    ..Row::default()
                });
            }
        }
        let g = measure(&rows);
        assert_eq!(g.attempts, 2);
        assert_eq!(g.steps_executed, 150.0);
        assert_eq!(g.steps_redone, 30.0);
        assert!(close(g.productive_s, 60.0));
        assert!(close(g.wasted_progress_s, 15.0));
        assert!(close(g.recovery_s, 100.0));
        assert!(close(g.elapsed_s, 175.0));
    }
    /// A relaunch on twice the devices: device-hours and MFU weigh each attempt's time by its own count,
    /// not the run's median.
    #[test]
    fn a_relaunch_on_other_devices_weighs_each_attempt_by_its_own() {
        // Attempt 1: 4 devices, steps 1-3 at 10 s from t=0 (first step from 0 to 10). Down 100 s. Attempt
        // 2: 8 devices, steps 1-5 at 5 s (its first from 130 to 135). Capacity 100 FLOP/s a device; each
        // step does 40% of its capacity's work.
        let mut rows = Vec::new();
        for (devices, steps, step_time, start) in [(4.0, 3, 10.0, 0.0), (8.0, 5, 5.0, 130.0)] {
            for k in 1..=steps {
                rows.push(Row {
                    step: Some(f64::from(k)),
                    wall_time: Some(start + step_time * f64::from(k)),
                    step_time: Some(step_time),
                    span: 1.0,
                    flops: Some(0.4 * 100.0 * devices * step_time),
                    capacity: Some(100.0 * devices),
                    devices: Some(devices),
                    ..Row::default()
                });
            }
        }
        let g = measure(&rows);
        assert_eq!(g.attempts, 2);
        // Elapsed 0 to 155; productive the second attempt's five steps of 5 s (the ideal step time, the
        // mean of 10, 10, 5, 5, 5, 5, is longer than its first step: no start-up excess).
        assert_eq!(g.elapsed_s, Some(155.0));
        assert_eq!(g.productive_s, Some(25.0));
        // Device-seconds: attempt 1's stretch (0 to 30) at 4, attempt 2's (30 to 155) at 8: 120 +
        // 1,000 = 1,120; productive 8 x 25 = 200. Lost: 920 device-seconds.
        assert!(
            (g.device_hours_lost.unwrap() - 920.0 / 3600.0).abs() < 1e-12,
            "{g:?}"
        );
        // MFU: the kept rows did 0.4 x 800 x 25 FLOPs over 800 x 25 FLOP/s-seconds: 40% while
        // productive; over the elapsed time, 8,000 / (400 x 30 + 800 x 125) = 8,000 / 112,000.
        assert!((g.mfu_productive.unwrap() - 0.4).abs() < 1e-12, "{g:?}");
        assert!(
            (g.mfu_effective.unwrap() - 8_000.0 / 112_000.0).abs() < 1e-12,
            "{g:?}"
        );
        assert!(
            g.notes.iter().any(|n| n.contains("differ between rows")),
            "{:?}",
            g.notes
        );
    }
}
