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

use crate::stats::median;

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
    let mut sorted = times.to_vec();
    let m = median(&mut sorted)?;
    let mut deviations: Vec<f64> = times.iter().map(|t| (t - m).abs()).collect();
    let mad = median(&mut deviations)?;
    let bound = m + 3.0 * mad;
    let within: Vec<f64> = times.iter().copied().filter(|t| *t <= bound).collect();
    Some((within.iter().sum::<f64>() / within.len() as f64, bound))
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
    let mut out = Goodput::default();
    if rows.is_empty() {
        out.notes.push("no rows".into());
        return out;
    }
    // Attempts: a row whose step does not go forward starts one, and so does a row the log's restart
    // line comes before (a relaunch that resumes where the last attempt stopped goes forward).
    let mut starts = vec![0];
    // Seconds the run was down just before a row, where its run clock says so.
    let mut down = vec![None; rows.len()];
    for i in 1..rows.len() {
        let back =
            matches!((rows[i - 1].step, rows[i].step), (Some(before), Some(now)) if now <= before);
        down[i] = down_before(&rows[i - 1], &rows[i]);
        if back || rows[i].restart || down[i].is_some() {
            starts.push(i);
        }
    }
    out.attempts = starts.len();
    out.launches_without_steps = rows.iter().map(|r| r.launches_without_steps).sum();
    out.attempt_steps = starts[1..].iter().filter_map(|&i| rows[i].step).collect();
    // Each row's attempt, and whether it is its attempt's first.
    let mut attempt = vec![0usize; rows.len()];
    let mut first = vec![false; rows.len()];
    for (a, &start) in starts.iter().enumerate() {
        first[start] = true;
        let end = starts.get(a + 1).copied().unwrap_or(rows.len());
        attempt[start..end].fill(a);
    }
    // A row is kept unless a later attempt starts at or before its step.
    let mut later_first = vec![f64::INFINITY; starts.len()];
    for a in (0..starts.len().saturating_sub(1)).rev() {
        let next = rows[starts[a + 1]].step.unwrap_or(f64::NEG_INFINITY);
        later_first[a] = later_first[a + 1].min(next);
    }
    let kept: Vec<bool> = (0..rows.len())
        .map(|i| rows[i].step.is_none_or(|s| s < later_first[attempt[i]]))
        .collect();
    let span = |i: usize| {
        if rows[i].span.is_finite() && rows[i].span > 0.0 {
            rows[i].span
        } else {
            1.0
        }
    };
    out.steps_executed = (0..rows.len()).map(span).sum();
    out.steps_kept = (0..rows.len()).filter(|i| kept[*i]).map(span).sum();
    out.steps_redone = out.steps_executed - out.steps_kept;

    // The ideal step time, from every row but attempts' first.
    let times: Vec<f64> = (0..rows.len())
        .filter(|i| !first[*i])
        .filter_map(|i| positive(rows[i].step_time))
        .collect();
    let ideal = ideal_step_time(&times);
    out.ideal_step_time_s = ideal.map(|(t, _)| t);
    if let Some((ideal, bound)) = ideal {
        let mut added = 0.0;
        for i in (0..rows.len()).filter(|i| !first[*i]) {
            if let Some(t) = positive(rows[i].step_time).filter(|t| *t > bound) {
                out.straggler_steps += span(i);
                added += (t - ideal) * span(i);
            }
        }
        out.straggler_s = Some(added);
    }

    // Each row's step time (all its steps), and the start-up excess of an attempt's first row.
    let row_time = |i: usize| positive(rows[i].step_time).map(|t| t * span(i));
    let startup_of = |i: usize| match (row_time(i), ideal) {
        (Some(t), Some((ideal, _))) if first[i] => (t - ideal * span(i)).max(0.0),
        _ => 0.0,
    };
    let timed = rows.iter().all(|r| r.wall_time.is_some_and(f64::is_finite));
    // Devices and capacity per row: a relaunch may run on other devices (4 GPUs, then 8). Where they
    // differ, device-hours and MFU weigh each row's and each attempt's time by its own.
    let mut devices: Vec<f64> = rows.iter().filter_map(|r| positive(r.devices)).collect();
    let run_devices = median(&mut devices);
    let mut capacities: Vec<f64> = rows.iter().filter_map(|r| positive(r.capacity)).collect();
    let run_capacity = median(&mut capacities);
    let devices_of = |i: usize| positive(rows[i].devices).or(run_devices).unwrap_or(0.0);
    let capacity_of = |i: usize| positive(rows[i].capacity).or(run_capacity).unwrap_or(0.0);
    // Device-seconds and FLOP/s-seconds of the kept rows' steps, and of each attempt's stretch of the
    // elapsed time (from the attempt before's end to its own).
    let (mut productive_device_s, mut productive_capacity_s) = (0.0, 0.0);
    let (mut elapsed_device_s, mut elapsed_capacity_s) = (0.0, 0.0);
    let (mut productive, mut wasted, mut startup) = (0.0, 0.0, 0.0);
    let mut untimed_firsts = 0;
    let (mut pause, mut recovery, mut elapsed) = (0.0, 0.0, None);
    if timed {
        let wall = |i: usize| rows[i].wall_time.expect("timed");
        let mut backwards = 0;
        let (mut evaluating, mut checkpointing) = (0.0, 0.0);
        let mut unseen = 0.0;
        for (i, &kept) in kept.iter().enumerate() {
            let step_part = if let Some(down) = down[i] {
                // The run was down, then ran for the rest of the interval: start-up and any steps
                // run again that the log does not hold, then this row's step(s), counted at the ideal
                // step time (its own, if shorter) because the rest cannot be told apart.
                let interval = (wall(i) - wall(i - 1)).max(0.0);
                let downtime = down.min(interval);
                recovery += downtime;
                let running = interval - downtime;
                let step = ideal
                    .map(|(ideal, _)| ideal * span(i))
                    .or_else(|| row_time(i))
                    .map_or(0.0, |t| t.min(running));
                unseen += running - step;
                step
            } else if first[i] {
                let t = row_time(i).unwrap_or_else(|| {
                    untimed_firsts += 1;
                    0.0
                });
                let excess = startup_of(i);
                startup += excess;
                t - excess
            } else {
                let interval = wall(i) - wall(i - 1);
                if interval < 0.0 {
                    backwards += 1;
                }
                let interval = interval.max(0.0);
                let step = row_time(i).map_or(interval, |t| t.min(interval));
                // A step time made from these very timestamps differs from the interval by rounding
                // alone (a pause of 6e-14 s): it is the interval.
                let step = if interval - step <= 1e-9 * interval.max(1.0) {
                    interval
                } else {
                    step
                };
                pause += interval - step;
                match (rows[i].evaluation, rows[i].checkpoint) {
                    (Some(true), Some(false)) => evaluating += interval - step,
                    (Some(false), Some(true)) => checkpointing += interval - step,
                    _ => {}
                }
                step
            };
            if kept {
                productive += step_part;
                productive_device_s += devices_of(i) * step_part;
                productive_capacity_s += capacity_of(i) * step_part;
            } else {
                wasted += step_part;
            }
        }
        let start_of = |a: usize| wall(starts[a]) - row_time(starts[a]).unwrap_or(0.0);
        let end_of = |a: usize| {
            let last = starts.get(a + 1).map_or(rows.len(), |s| *s) - 1;
            wall(last)
        };
        let mut overlapping = 0;
        for a in (1..starts.len()).filter(|a| down[starts[*a]].is_none()) {
            let gap = start_of(a) - end_of(a - 1);
            if gap < 0.0 {
                overlapping += 1;
            }
            recovery += gap.max(0.0);
        }
        let total = end_of(starts.len() - 1) - start_of(0);
        elapsed = Some(total);
        for a in 0..starts.len() {
            let from = if a == 0 { start_of(0) } else { end_of(a - 1) };
            let stretch = (end_of(a) - from).max(0.0);
            let attempt_rows = starts[a]..starts.get(a + 1).copied().unwrap_or(rows.len());
            let mut d: Vec<f64> = attempt_rows.clone().map(devices_of).collect();
            let mut c: Vec<f64> = attempt_rows.map(capacity_of).collect();
            elapsed_device_s += median(&mut d).unwrap_or(0.0) * stretch;
            elapsed_capacity_s += median(&mut c).unwrap_or(0.0) * stretch;
        }
        let accounted = productive + wasted + startup + pause + recovery + unseen;
        let other = total - accounted;
        if other < -1e-9 * total.abs().max(1.0) || backwards > 0 || overlapping > 0 {
            out.notes.push(format!(
                "the log's clocks disagree ({backwards} row(s) logged before the row above them, {overlapping} attempt(s) starting before the one before ended): {:.3} s counted twice",
                (-other).max(0.0)
            ));
        }
        out.other_s = Some(other.max(0.0) + unseen);
        out.unseen_s = unseen;
        let resumed = down.iter().filter(|d| d.is_some()).count();
        if resumed > 0 {
            out.notes.push(format!(
                "{resumed} relaunch(es) seen by the run's clock (wall time less run time jumps): {unseen:.3} s from each relaunch to the first row the log kept is start-up or steps run again that the log does not hold (W&B drops a step lower than the current one), not told apart, in other_s; steps_redone counts none of those steps"
            ));
        }
        out.pause_s = Some(pause);
        if rows
            .iter()
            .all(|r| r.evaluation.is_some() && r.checkpoint.is_some())
        {
            out.pause_evaluation_s = Some(evaluating);
            out.pause_checkpoint_s = Some(checkpointing);
        }
        out.recovery_s = Some(recovery);
        if untimed_firsts > 0 {
            out.notes.push(format!(
                "{untimed_firsts} attempt(s) start with a row that has no step time: their first step's duration (and start-up) is not measured"
            ));
        }
    } else {
        for (i, &kept) in kept.iter().enumerate() {
            let excess = startup_of(i);
            startup += excess;
            let t = row_time(i).unwrap_or(0.0) - excess;
            if kept {
                productive += t;
                productive_device_s += devices_of(i) * t;
                productive_capacity_s += capacity_of(i) * t;
            } else {
                wasted += t;
            }
        }
        out.notes.push(
            "no wall time on every row: elapsed time, pauses and recovery between attempts are not measured (productive, wasted and start-up time are the logged step times)"
                .into(),
        );
    }
    let any_time = rows.iter().any(|r| positive(r.step_time).is_some());
    if !any_time && !timed {
        out.notes
            .push("no step times and no wall times: nothing to measure".into());
        return out;
    }
    if ideal.is_none() {
        out.notes.push(if any_time {
            "no step times besides attempts' first rows: start-up excess is not measured".into()
        } else {
            "no step times, only wall times: start-up excess is not measured".into()
        });
    }
    out.productive_s = Some(productive);
    out.wasted_progress_s = Some(wasted);
    out.startup_s = Some(startup);
    out.goodput = elapsed.filter(|e| *e > 0.0).map(|e| productive / e);
    out.elapsed_s = elapsed;

    // MFU over productive and elapsed time, at the run's capacity (devices x peak); where it differs
    // between rows, each row's and each attempt's time at its own.
    let all_equal = |v: &[f64]| v.iter().all(|x| Some(x) == v.first());
    let (one_capacity, one_count) = (all_equal(&capacities), all_equal(&devices));
    if !one_capacity {
        out.notes.push(
            "the devices or their peak differ between rows (a relaunch on other devices): MFU weighs each kept row's time by its own capacity, and each attempt's stretch of the elapsed time by its attempt's".into(),
        );
    }
    let kept_rows = || (0..rows.len()).filter(|i| kept[*i]);
    let flops_known = kept_rows().all(|i| rows[i].flops.is_some_and(f64::is_finite));
    let kept_flops: f64 = kept_rows().filter_map(|i| rows[i].flops).sum();
    if let Some(capacity) = run_capacity.filter(|_| flops_known && out.steps_kept > 0.0) {
        if one_capacity {
            out.mfu_productive =
                Some(kept_flops / (capacity * productive)).filter(|m| m.is_finite());
            out.mfu_effective = elapsed
                .map(|e| kept_flops / (capacity * e))
                .filter(|m| m.is_finite());
        } else {
            out.mfu_productive = Some(kept_flops / productive_capacity_s).filter(|m| m.is_finite());
            out.mfu_effective = elapsed
                .map(|_| kept_flops / elapsed_capacity_s)
                .filter(|m| m.is_finite());
        }
    } else if out.steps_kept > 0.0 {
        out.notes.push(
            "MFU not measured: a kept row has no FLOPs or the devices' peak is unknown".into(),
        );
    }
    out.device_hours_lost = match (run_devices, elapsed) {
        (Some(n), Some(e)) if one_count => Some(n * (e - productive) / 3600.0),
        (Some(_), Some(_)) => Some((elapsed_device_s - productive_device_s) / 3600.0),
        _ => None,
    };
    no_impossible_figure(&mut out);
    out
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
