//! Writing enriched tables: one module per format behind [`TableWriter`], and atomic file output.
//!
//! A file is written to a temporary file in the destination folder, flushed and synced, then renamed over
//! the destination, so a failure (or a kill) never leaves half a file under the output's name.

pub mod atomic;
pub mod csv;
pub mod jsonl;
pub mod parquet;
pub mod sink;
mod text_values;

use std::fmt;
use std::io::Write;
use std::path::Path;

use polars::prelude::{DataFrame, PolarsError};

/// The table a command writes, for front ends that do not name polars.
pub type Frame = DataFrame;

/// A table format mfu writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutputFormat {
    Parquet,
    Csv,
    Jsonl,
}

impl OutputFormat {
    pub fn extension(self) -> &'static str {
        match self {
            OutputFormat::Parquet => "parquet",
            OutputFormat::Csv => "csv",
            OutputFormat::Jsonl => "jsonl",
        }
    }

    /// The format an output path's extension names.
    pub fn from_path(path: &Path) -> Option<OutputFormat> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "parquet" | "pq" => Some(OutputFormat::Parquet),
            "csv" => Some(OutputFormat::Csv),
            "jsonl" | "ndjson" => Some(OutputFormat::Jsonl),
            _ => None,
        }
    }

    fn writer(self) -> Box<dyn TableWriter> {
        match self {
            OutputFormat::Parquet => Box::new(parquet::ParquetTableWriter),
            OutputFormat::Csv => Box::new(csv::CsvTableWriter),
            OutputFormat::Jsonl => Box::new(jsonl::JsonlTableWriter),
        }
    }
}

impl fmt::Display for OutputFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.extension())
    }
}

/// File-level key-value metadata (Parquet keeps it; the text formats have nowhere to put it).
pub type Metadata = Vec<(String, String)>;

/// Serialises a whole frame in one format.
pub trait TableWriter {
    fn write(
        &self,
        df: &mut DataFrame,
        metadata: &Metadata,
        out: &mut (dyn Write + Send),
    ) -> Result<(), WriteError>;
}

/// Errors writing an output.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: already exists; add --force to replace it")]
    Exists { path: String },
    #[error("cannot encode {format}: {message}")]
    Encode {
        format: OutputFormat,
        message: String,
    },
    /// The output itself failed (a full disk, a reader that went away) while a format's writer was
    /// writing it; [`write_file`] and [`write_stdout`] turn it into [`WriteError::Io`] with the path.
    #[error("cannot write {format}: {source}")]
    Output {
        format: OutputFormat,
        source: std::io::Error,
    },
}

impl WriteError {
    fn encode(format: OutputFormat, e: impl fmt::Display) -> WriteError {
        WriteError::Encode {
            format,
            message: e.to_string(),
        }
    }

    /// A polars writer's error: the output's own I/O failure keeps its kind (so a closed pipe is still
    /// recognised as one), anything else is an encoding failure.
    fn from_polars(format: OutputFormat, e: PolarsError) -> WriteError {
        match e {
            PolarsError::IO { error, .. } => WriteError::Output {
                format,
                source: std::io::Error::new(error.kind(), error.to_string()),
            },
            e => WriteError::encode(format, e),
        }
    }

    /// An [`WriteError::Output`] failure named by the output's path.
    fn at(self, path: &str) -> WriteError {
        match self {
            WriteError::Output { source, .. } => WriteError::Io {
                path: path.to_string(),
                source,
            },
            e => e,
        }
    }
}

/// Writes `df` to `path` atomically (see [`atomic`]). Without `force`, an existing `path` is an error
/// (checked again when the file is named, so a file that appears meanwhile is not overwritten either).
pub fn write_file(
    path: &Path,
    format: OutputFormat,
    df: &mut DataFrame,
    metadata: &Metadata,
    force: bool,
) -> Result<(), WriteError> {
    let shown = path.display().to_string();
    let io = |source| WriteError::Io {
        path: shown.clone(),
        source,
    };
    if !force && path.exists() {
        return Err(WriteError::Exists { path: shown });
    }
    let mut pending = atomic::PendingFile::beside(path).map_err(io)?;
    {
        let mut buffered = std::io::BufWriter::with_capacity(1 << 20, pending.file());
        format
            .writer()
            .write(df, metadata, &mut buffered)
            .map_err(|e| e.at(&shown))?;
        buffered.flush().map_err(io)?;
    }
    pending.publish(path, force).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => WriteError::Exists {
            path: shown.clone(),
        },
        _ => io(e),
    })
}

/// Writes `df` to standard output.
/// [`write_file`] to `path`, else [`write_stdout`].
pub fn write_to(
    path: Option<&Path>,
    format: OutputFormat,
    df: &mut DataFrame,
    metadata: &Metadata,
    force: bool,
) -> Result<(), WriteError> {
    match path {
        Some(path) => write_file(path, format, df, metadata, force),
        None => write_stdout(format, df, metadata),
    }
}

pub fn write_stdout(
    format: OutputFormat,
    df: &mut DataFrame,
    metadata: &Metadata,
) -> Result<(), WriteError> {
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout());
    format
        .writer()
        .write(df, metadata, &mut out)
        .map_err(|e| e.at("-"))?;
    out.flush().map_err(|source| WriteError::Io {
        path: "-".into(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use polars::prelude::*;

    #[test]
    fn formats_from_output_names() {
        assert_eq!(
            OutputFormat::from_path(Path::new("a.parquet")),
            Some(OutputFormat::Parquet)
        );
        assert_eq!(
            OutputFormat::from_path(Path::new("a.CSV")),
            Some(OutputFormat::Csv)
        );
        assert_eq!(
            OutputFormat::from_path(Path::new("a.jsonl")),
            Some(OutputFormat::Jsonl)
        );
        assert_eq!(OutputFormat::from_path(Path::new("a.txt")), None);
    }

    #[test]
    fn atomic_write_refuses_existing_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.csv");
        let mut df = df!("a" => [1i64, 2]).unwrap();
        write_file(&path, OutputFormat::Csv, &mut df, &vec![], false).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a\n1\n2\n");
        let err = write_file(&path, OutputFormat::Csv, &mut df, &vec![], false).unwrap_err();
        assert!(matches!(err, WriteError::Exists { .. }));
        let mut df2 = df!("b" => [3i64]).unwrap();
        write_file(&path, OutputFormat::Csv, &mut df2, &vec![], true).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "b\n3\n");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }
}
