//! The peak table: data, not code.
//!
//! `table.csv` beside this file is embedded at build time. Each row is one device as a framework sees it
//! (one GPU, one MI250X GCD, one TPU TensorCore or megacore chip, one NeuronCore), with its dense peak for
//! each dtype in TFLOP/s, the patterns that name it, and where the figures come from. Users add or replace
//! entries with a file of the same schema (`--peaks FILE`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::pattern::Pattern;
use super::precision::Dtype;

/// The built-in table, as shipped.
pub const BUILTIN_CSV: &str = include_str!("table.csv");

/// FLOP/s, the unit of every peak the library hands out.
pub type FlopsPerSecond = f64;

/// One device entry.
#[derive(Debug, Clone, PartialEq)]
pub struct PeakEntry {
    pub vendor: String,
    /// Canonical name: unique in a table, and what `resolved_device` shows.
    pub name: String,
    pub form_factor: String,
    /// Patterns as written in the table (`h100 pcie|h100`), parsed.
    pub patterns: Vec<Pattern>,
    /// Dense peak per dtype, indexed by [`Dtype::index`]; `None` where the device has no such rate.
    pub peaks: [Option<FlopsPerSecond>; Dtype::ALL.len()],
    pub source: String,
    pub note: String,
}

impl PeakEntry {
    /// Dense peak FLOP/s for `dtype`, or `None` when the device has no published rate for it.
    pub fn peak(&self, dtype: Dtype) -> Option<FlopsPerSecond> {
        self.peaks[dtype.index()]
    }
}

/// Errors reading a peak table.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("cannot read peak table {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{origin}: line {line}: {message}")]
    Row {
        origin: String,
        line: u64,
        message: String,
    },
    #[error("{origin}: duplicate device name '{name}' (lines {first} and {second})")]
    Duplicate {
        origin: String,
        name: String,
        first: u64,
        second: u64,
    },
}

#[derive(Debug, Deserialize)]
struct Row {
    vendor: String,
    name: String,
    form_factor: String,
    patterns: String,
    fp64_tflops: String,
    fp32_tflops: String,
    tf32_tflops: String,
    bf16_tflops: String,
    fp16_tflops: String,
    fp8_tflops: String,
    int8_tflops: String,
    // Added after the first release: a file written without them still reads.
    #[serde(default)]
    fp6_tflops: String,
    #[serde(default)]
    fp4_tflops: String,
    source: String,
    #[serde(default)]
    note: String,
}

/// A parsed table: entries in file order, plus a hash of everything it was built from.
#[derive(Debug, Clone)]
pub struct PeakTable {
    entries: Vec<PeakEntry>,
    sha256: String,
}

/// The embedded table, parsed once per process (parsing and hashing it took about a tenth of a millisecond,
/// paid by every resolver built).
static BUILTIN: LazyLock<PeakTable> = LazyLock::new(|| PeakTable {
    entries: parse_csv(BUILTIN_CSV, "built-in peak table")
        .expect("the embedded peak table is checked by the test suite"),
    sha256: hex_sha256(BUILTIN_CSV.as_bytes()),
});

impl PeakTable {
    /// The embedded table.
    pub fn builtin() -> PeakTable {
        BUILTIN.clone()
    }

    /// Whether this is the embedded table as it is, with no user entries applied.
    pub fn is_builtin(&self) -> bool {
        self.sha256 == BUILTIN.sha256
    }

    /// The built-in table with the entries of each user file applied in order: an entry whose name matches an
    /// existing one (case-insensitively) replaces it in place, any other is added.
    pub fn with_user_files(paths: &[PathBuf]) -> Result<PeakTable, TableError> {
        let mut table = PeakTable::builtin();
        for path in paths {
            table.apply_file(path)?;
        }
        Ok(table)
    }

    /// Applies one user file (see [`PeakTable::with_user_files`]).
    pub fn apply_file(&mut self, path: &Path) -> Result<(), TableError> {
        let text = std::fs::read_to_string(path).map_err(|source| TableError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        self.apply_csv(&text, &path.display().to_string())
    }

    /// Applies user entries given as CSV text; `origin` names them in errors.
    pub fn apply_csv(&mut self, text: &str, origin: &str) -> Result<(), TableError> {
        let user = parse_csv(text, origin)?;
        for entry in user {
            match self
                .entries
                .iter()
                .position(|e| e.name.eq_ignore_ascii_case(&entry.name))
            {
                Some(i) => self.entries[i] = entry,
                None => self.entries.push(entry),
            }
        }
        let mut hasher = Sha256::new();
        hasher.update(self.sha256.as_bytes());
        hasher.update(text.as_bytes());
        self.sha256 = hex(&hasher.finalize());
        Ok(())
    }

    pub fn entries(&self) -> &[PeakEntry] {
        &self.entries
    }

    /// SHA-256 of the built-in table chained with each user file applied, in hex: identifies the figures an
    /// output was computed with.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// The entry with this canonical name (case-insensitive).
    pub fn get(&self, name: &str) -> Option<&PeakEntry> {
        self.entries
            .iter()
            .find(|e| e.name.eq_ignore_ascii_case(name))
    }
}

fn parse_csv(text: &str, origin: &str) -> Result<Vec<PeakEntry>, TableError> {
    let mut reader = csv::ReaderBuilder::new()
        .comment(Some(b'#'))
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let row_error = |line: u64, message: String| TableError::Row {
        origin: origin.to_string(),
        line,
        message,
    };
    let mut entries = Vec::new();
    let mut seen: HashMap<String, u64> = HashMap::new();
    let headers = reader
        .headers()
        .map_err(|e| row_error(1, csv_message(&e)))?
        .clone();
    let mut record = csv::StringRecord::new();
    loop {
        let more = reader
            .read_record(&mut record)
            .map_err(|e| row_error(e.position().map_or(0, |p| p.line()), csv_message(&e)))?;
        if !more {
            break;
        }
        let line = record.position().map_or(0, |p| p.line());
        let row: Row = record
            .deserialize(Some(&headers))
            .map_err(|e| row_error(line, csv_message(&e)))?;
        let name = row.name.trim().to_string();
        if name.is_empty() {
            return Err(row_error(line, "column 'name' is empty".into()));
        }
        if let Some(&first) = seen.get(&name.to_ascii_lowercase()) {
            return Err(TableError::Duplicate {
                origin: origin.to_string(),
                name,
                first,
                second: line,
            });
        }
        seen.insert(name.to_ascii_lowercase(), line);
        let patterns = row
            .patterns
            .split('|')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(Pattern::parse)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|m| row_error(line, format!("column 'patterns': {m}")))?;
        if patterns.is_empty() {
            return Err(row_error(
                line,
                format!("column 'patterns' is empty for '{name}'"),
            ));
        }
        let cells = [
            &row.fp64_tflops,
            &row.fp32_tflops,
            &row.tf32_tflops,
            &row.bf16_tflops,
            &row.fp16_tflops,
            &row.fp8_tflops,
            &row.int8_tflops,
            &row.fp6_tflops,
            &row.fp4_tflops,
        ];
        let mut peaks = [None; Dtype::ALL.len()];
        for (dtype, cell) in Dtype::ALL.iter().zip(cells) {
            let cell = cell.trim();
            if cell.is_empty() {
                continue;
            }
            let tflops: f64 = cell.parse().map_err(|_| {
                row_error(
                    line,
                    format!("column '{dtype}_tflops': '{cell}' is not a number"),
                )
            })?;
            if !(tflops.is_finite() && tflops > 0.0) {
                return Err(row_error(
                    line,
                    format!("column '{dtype}_tflops': '{cell}' must be a positive number"),
                ));
            }
            peaks[dtype.index()] = Some(tflops * 1e12);
        }
        entries.push(PeakEntry {
            vendor: row.vendor,
            name,
            form_factor: row.form_factor,
            patterns,
            peaks,
            source: row.source,
            note: row.note,
        });
    }
    Ok(entries)
}

fn csv_message(e: &csv::Error) -> String {
    match e.kind() {
        csv::ErrorKind::Deserialize { err, .. } => match err.field() {
            Some(i) => format!("column {}: {}", i + 1, err.kind()),
            None => err.kind().to_string(),
        },
        _ => e.to_string(),
    }
}

fn hex_sha256(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "vendor,name,form_factor,patterns,fp64_tflops,fp32_tflops,tf32_tflops,bf16_tflops,fp16_tflops,fp8_tflops,int8_tflops,source,note\n";

    #[test]
    fn builtin_parses_with_unique_names() {
        let t = PeakTable::builtin();
        assert!(t.entries().len() >= 57, "{}", t.entries().len());
        let h100 = t.get("H100 SXM5").unwrap();
        assert_eq!(h100.peak(Dtype::Bf16), Some(989.4e12));
        assert_eq!(t.get("T4").unwrap().peak(Dtype::Bf16), None);
        assert_eq!(t.sha256().len(), 64);
    }

    #[test]
    fn user_rows_replace_by_name_and_add() {
        let mut t = PeakTable::builtin();
        let n = t.entries().len();
        let before = t.sha256().to_string();
        let text = format!(
            "{HEADER}NVIDIA,h100 sxm5,SXM5,h100,,,,900,,,,my bench,\nAcme,X9,card,x9,,,,100,,,,vendor sheet,\n"
        );
        t.apply_csv(&text, "mine.csv").unwrap();
        assert_eq!(t.entries().len(), n + 1);
        assert_eq!(t.get("H100 SXM5").unwrap().peak(Dtype::Bf16), Some(900e12));
        assert_eq!(t.get("X9").unwrap().source, "vendor sheet");
        assert_ne!(t.sha256(), before);
    }

    #[test]
    fn bad_rows_name_origin_line_and_column() {
        let mut t = PeakTable::builtin();
        let text = format!("{HEADER}Acme,X9,card,x9,,,,fast,,,,s,\n");
        let err = t.apply_csv(&text, "mine.csv").unwrap_err().to_string();
        assert!(err.contains("mine.csv: line 2"), "{err}");
        assert!(err.contains("bf16_tflops"), "{err}");

        let text = format!("{HEADER}Acme,X9,card,x9,,,,1,,,,s,\nAcme,x9,card,x9,,,,1,,,,s,\n");
        let err = t.apply_csv(&text, "mine.csv").unwrap_err().to_string();
        assert!(err.contains("duplicate device name 'x9'"), "{err}");

        let text = format!("{HEADER}Acme,X9,card,,,,,1,,,,s,\n");
        let err = t.apply_csv(&text, "mine.csv").unwrap_err().to_string();
        assert!(err.contains("'patterns' is empty"), "{err}");

        let text = format!("{HEADER}Acme,X9,card,x9,,,,-3,,,,s,\n");
        let err = t.apply_csv(&text, "mine.csv").unwrap_err().to_string();
        assert!(err.contains("positive"), "{err}");
    }
}
