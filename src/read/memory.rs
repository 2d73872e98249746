//! How much memory the inputs that are read whole may take (`--max-memory`).
//!
//! A large JSON Lines or CSV input streams in blocks and needs no more memory than a few blocks, whatever
//! its size. Everything else is read whole: a trainer's own layout, a Parquet file whose columns arrow-rs
//! cannot hand over batch by batch, standard input, a log whose cumulative counters or `--window` need
//! earlier rows, every input under `-o -` and `--out-dir`, and the inputs of `summary` and `plot`. Those
//! reads draw on one [`MemoryBudget`] shared by the run's threads: each reserves an estimate of what it
//! will take (its decompressed bytes times a factor measured per kind of parser, below) *as it reads*, so
//! a 230 KB zstd file that would become 3 GB is stopped after the budget's worth of bytes with an error
//! naming the file and the limit, rather than the machine running out of memory.
//!
//! The factors are peak resident memory over input bytes, measured with the release binary enriching a
//! 1M-row input read whole to Parquet (`benches/memory.sh`, 2026-12-03): JSON Lines 1.86x and CSV 2.63x
//! their bytes, so tables and text logs count [`TABLE_FACTOR`] = 3; a `trainer_state.json` 12.3x (as HF
//! writes it, indented) and 16.3x (compact), so a JSON document parsed into a tree (HF, Megatron) counts
//! [`DOCUMENT_FACTOR`] = 20; a Parquet file read by polars 8.0x the uncompressed page bytes its footer
//! records, so it counts [`PARQUET_FACTOR`] = 10 of those.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Estimated bytes of memory per decompressed byte of a table or text log read whole.
pub const TABLE_FACTOR: u64 = 3;
/// Estimated bytes of memory per byte of the rows of a console log read in windows and put together
/// ([`polars::prelude::DataFrame::estimated_size`] of the windows' rows): the rows, the columns
/// enrichment adds and what a command keeps of each row. Measured 3.7 (`mfu goodput`) to 4.0
/// (`mfu summary`) peak RSS over the rows' size on the 4 GiB bench log (2026-12-08, docs/memory.md).
pub const STACKED_FACTOR: u64 = 6;
/// Estimated bytes of memory per byte of a JSON document parsed into a tree and then into rows.
pub const DOCUMENT_FACTOR: u64 = 20;
/// Estimated bytes of memory per uncompressed page byte (as its footer records them) of a Parquet file
/// read whole by polars.
pub const PARQUET_FACTOR: u64 = 10;

/// The memory that inputs read whole may hold at once, shared by every thread of a run.
#[derive(Debug)]
pub struct MemoryBudget {
    limit: u64,
    used: AtomicU64,
}

/// A reservation that did not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverBudget {
    /// What was asked for, and what was already held by other reads.
    pub wanted: u64,
    pub held: u64,
    pub limit: u64,
}

impl MemoryBudget {
    pub fn new(limit: u64) -> Arc<MemoryBudget> {
        Arc::new(MemoryBudget {
            limit,
            used: AtomicU64::new(0),
        })
    }

    /// `--max-memory`'s default: half the memory this process may use (the machine's, or its cgroup's
    /// limit when lower), or 4 GiB where neither can be read.
    pub fn default_limit() -> u64 {
        available_memory().map_or(4 << 30, |m| m / 2)
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes reserved now.
    pub fn held(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// Reserves `bytes`, or says why not (nothing is reserved then).
    pub fn reserve(self: &Arc<Self>, bytes: u64) -> Result<Held, OverBudget> {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let after = used.saturating_add(bytes);
            if after > self.limit {
                return Err(OverBudget {
                    wanted: bytes,
                    held: used,
                    limit: self.limit,
                });
            }
            match self
                .used
                .compare_exchange_weak(used, after, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => {
                    return Ok(Held {
                        budget: Some(Arc::clone(self)),
                        bytes,
                    })
                }
                Err(now) => used = now,
            }
        }
    }
}

/// Memory reserved from a [`MemoryBudget`], given back when dropped (when the rows it stands for are
/// written and freed).
#[derive(Debug, Default)]
pub struct Held {
    budget: Option<Arc<MemoryBudget>>,
    bytes: u64,
}

impl Held {
    /// Nothing reserved (reads without a budget).
    pub fn none() -> Held {
        Held::default()
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Adds another reservation to this one.
    pub fn absorb(&mut self, mut other: Held) {
        if self.budget.is_none() {
            self.budget = other.budget.take();
        }
        self.bytes += std::mem::take(&mut other.bytes);
    }

    /// Keeps the reservation until the run ends: for readers that hold every input until they write.
    pub fn keep(mut self) {
        self.budget = None;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(budget) = &self.budget {
            budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
        }
    }
}

/// Bytes of memory this process may use: the machine's total, or the cgroup's limit when lower.
pub fn available_memory() -> Option<u64> {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    });
    // cgroup v2, then v1; "max" or an absurd v1 value means no limit.
    let cgroup = [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ]
    .iter()
    .find_map(|p| std::fs::read_to_string(p).ok()?.trim().parse::<u64>().ok())
    .filter(|&b| b < 1 << 60);
    match (total, cgroup) {
        (Some(t), Some(c)) => Some(t.min(c)),
        (t, c) => t.or(c),
    }
}

/// Parses a size such as `4G`, `512MiB`, `1.5GB` or `1000000` (bytes); K, M, G and T are powers of 1024.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a size such as 4G, 512M or 1000000"))?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => {
            return Err(format!(
                "'{text}': unknown unit '{unit}' (use K, M, G or T)"
            ))
        }
    };
    let bytes = value * scale as f64;
    if !(bytes.is_finite() && bytes >= 1.0 && bytes < u64::MAX as f64) {
        return Err(format!("'{text}' must be a size of at least one byte"));
    }
    Ok(bytes as u64)
}

/// A byte count for people: `3.2 GiB`, `512 MiB`, `900 B`.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else if value < 10.0 {
        format!("{value:.1} {}", UNITS[unit])
    } else {
        format!("{value:.0} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_are_shared_and_given_back() {
        let budget = MemoryBudget::new(100);
        let a = budget.reserve(60).unwrap();
        let err = budget.reserve(41).unwrap_err();
        assert_eq!(
            err,
            OverBudget {
                wanted: 41,
                held: 60,
                limit: 100
            }
        );
        let mut b = budget.reserve(40).unwrap();
        assert_eq!(budget.held(), 100);
        drop(a);
        assert_eq!(budget.held(), 40);
        b.absorb(budget.reserve(10).unwrap());
        assert_eq!((b.bytes(), budget.held()), (50, 50));
        b.keep();
        assert_eq!(budget.held(), 50);
        let none = Held::none();
        drop(none);
        assert_eq!(budget.held(), 50);
    }

    #[test]
    fn sizes_parse_and_print() {
        assert_eq!(parse_size("4G"), Ok(4 << 30));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("1.5 gb"), Ok(3 << 29));
        assert_eq!(parse_size("1000000"), Ok(1_000_000));
        assert!(parse_size("0").is_err());
        assert!(parse_size("4X").is_err());
        assert!(parse_size("G").is_err());
        assert_eq!(format_size(900), "900 B");
        assert_eq!(format_size(3 << 29), "1.5 GiB");
        assert_eq!(format_size(512 << 20), "512 MiB");
    }

    #[test]
    fn the_machine_has_memory() {
        let m = available_memory().expect("Linux reports its memory");
        assert!(m > 64 << 20, "{m}");
        assert!(MemoryBudget::default_limit() <= m);
    }
}
