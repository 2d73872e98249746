//! An output written batch by batch, as enriched rows come, so that a large input is never held whole.
//!
//! The first batch with rows fixes the schema. Each later batch must fit it: the same columns (or, when
//! stacking several inputs, a subset, the rest null), of the same types, or integers where the schema
//! has floats (cast, as reading the whole input would have typed them). A batch that does not fit is a
//! [`SinkError::Mismatch`]: the caller drops the sink (nothing appears under the output's name) and writes
//! the output the whole-input way. Parquet row groups hold [`ROW_GROUP_ROWS`] rows, as when a whole frame
//! is written, so both ways give the same bytes.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use polars::prelude::*;

use super::atomic::PendingFile;
use super::parquet::{BoxError, ParquetStream, RowGroup, ROW_GROUP_ROWS};
use super::{Metadata, OutputFormat, WriteError};

/// Why a batch could not be written.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error(transparent)]
    Write(#[from] WriteError),
    /// The batch does not fit the schema of the batches before it.
    #[error("{0}")]
    Mismatch(String),
}

enum Writer {
    Text(BufWriter<File>),
    /// The file starts with the first row group, whose rows decide the column codecs.
    Parquet(ParquetOut),
}

/// A Parquet output before and after its first row group.
enum ParquetOut {
    /// The file, not yet begun (`None` only while it is being begun).
    Waiting(Option<BufWriter<File>>),
    Started(Box<ParquetStream<BufWriter<File>>>),
}

impl ParquetOut {
    /// The stream, begun with `first` (the first row group) if it has not been.
    fn started(
        &mut self,
        first: &RowGroup,
        metadata: &Metadata,
    ) -> Result<&mut ParquetStream<BufWriter<File>>, BoxError> {
        if let ParquetOut::Waiting(out) = self {
            let out = out.take().ok_or("the Parquet output failed to begin")?;
            *self = ParquetOut::Started(Box::new(ParquetStream::new(out, first, metadata)?));
        }
        match self {
            ParquetOut::Started(stream) => Ok(stream),
            ParquetOut::Waiting(_) => unreachable!("begun above"),
        }
    }
}

/// An output file being written batch by batch.
pub struct Sink {
    path: PathBuf,
    format: OutputFormat,
    metadata: Metadata,
    force: bool,
    pending: PendingFile,
    writer: Option<Writer>,
    schema: Vec<(PlSmallStr, DataType)>,
    /// Parquet rows waiting for a full row group.
    buffered: Vec<DataFrame>,
    buffered_rows: usize,
    rows: usize,
}

impl Sink {
    /// Starts `path` (not visible until [`Sink::finish`]). Without `force`, an existing `path` is an error.
    pub fn create(
        path: &Path,
        format: OutputFormat,
        metadata: &Metadata,
        force: bool,
    ) -> Result<Sink, WriteError> {
        let shown = path.display().to_string();
        if !force && path.exists() {
            return Err(WriteError::Exists { path: shown });
        }
        let pending = PendingFile::beside(path).map_err(|source| WriteError::Io {
            path: shown,
            source,
        })?;
        Ok(Sink {
            path: path.to_path_buf(),
            format,
            metadata: metadata.clone(),
            force,
            pending,
            writer: None,
            schema: Vec::new(),
            buffered: Vec::new(),
            buffered_rows: 0,
            rows: 0,
        })
    }

    fn io(&self, source: std::io::Error) -> WriteError {
        WriteError::Io {
            path: self.path.display().to_string(),
            source,
        }
    }

    /// Appends `df`'s rows. With `fill_missing`, a column of the schema that `df` lacks is null in its
    /// rows (stacking inputs); without, it is a mismatch (blocks of one input).
    pub fn push(&mut self, df: DataFrame, fill_missing: bool) -> Result<(), SinkError> {
        if df.height() == 0 {
            return Ok(());
        }
        let df = if self.writer.is_none() {
            self.start(&df)?;
            df
        } else {
            self.conform(df, fill_missing)?
        };
        let first = self.rows == 0;
        self.rows += df.height();
        match self.writer.as_mut().expect("started") {
            Writer::Text(out) => {
                let mut df = df;
                let written = match self.format {
                    OutputFormat::Csv => super::csv::write_csv(&mut df, out, first),
                    _ => super::jsonl::write_jsonl(&mut df, out),
                };
                written?;
                self.pending.start_writeback();
            }
            Writer::Parquet(_) => {
                self.buffered_rows += df.height();
                self.buffered.push(df);
                if self.buffered_rows >= ROW_GROUP_ROWS {
                    self.write_row_groups(false)?;
                }
            }
        }
        Ok(())
    }

    fn start(&mut self, first: &DataFrame) -> Result<(), SinkError> {
        self.schema = first
            .columns()
            .iter()
            .map(|c| (c.name().clone(), c.dtype().clone()))
            .collect();
        let file = self.pending.file().try_clone().map_err(|e| self.io(e))?;
        let out = BufWriter::with_capacity(1 << 20, file);
        self.writer = Some(match self.format {
            OutputFormat::Parquet => Writer::Parquet(ParquetOut::Waiting(Some(out))),
            _ => Writer::Text(out),
        });
        Ok(())
    }

    /// `df` with the schema's columns, in its order and types.
    fn conform(&self, df: DataFrame, fill_missing: bool) -> Result<DataFrame, SinkError> {
        let mismatch = |why: String| Err(SinkError::Mismatch(why));
        if let Some(extra) = df
            .get_column_names()
            .into_iter()
            .find(|n| !self.schema.iter().any(|(s, _)| s == *n))
        {
            return mismatch(format!("column '{extra}' is not in the rows before"));
        }
        let height = df.height();
        let mut columns = Vec::with_capacity(self.schema.len());
        for (name, dtype) in &self.schema {
            let col = match df.column(name.as_str()) {
                Ok(c) if c.dtype() == dtype => c.clone(),
                Ok(c) if c.dtype() == &DataType::Null => {
                    Column::full_null(name.clone(), height, dtype)
                }
                Ok(c) if dtype == &DataType::Float64 && c.dtype().is_primitive_numeric() => c
                    .cast(dtype)
                    .map_err(|e| SinkError::Mismatch(e.to_string()))?,
                Ok(c) => {
                    return mismatch(format!(
                        "column '{name}' is {} here and {dtype} before",
                        c.dtype()
                    ))
                }
                Err(_) if fill_missing => Column::full_null(name.clone(), height, dtype),
                Err(_) => return mismatch(format!("column '{name}' is missing")),
            };
            columns.push(col);
        }
        DataFrame::new(height, columns).map_err(|e| SinkError::Mismatch(e.to_string()))
    }

    /// Writes the buffered rows as full row groups (and, at the end, the rest as a last one).
    fn write_row_groups(&mut self, all: bool) -> Result<(), WriteError> {
        let encode = |e: &dyn std::fmt::Display| WriteError::encode(OutputFormat::Parquet, e);
        let mut parts = std::mem::take(&mut self.buffered).into_iter();
        let mut rows = match parts.next() {
            Some(first) => first,
            None => return Ok(()),
        };
        for part in parts {
            rows.vstack_mut_owned(part).map_err(|e| encode(&e))?;
        }
        let Some(Writer::Parquet(file)) = self.writer.as_mut() else {
            unreachable!("row groups are Parquet's")
        };
        let mut start = 0;
        while rows.height() - start >= ROW_GROUP_ROWS || (all && start < rows.height()) {
            let len = ROW_GROUP_ROWS.min(rows.height() - start);
            let group =
                RowGroup::from_frame(&rows.slice(start as i64, len)).map_err(|e| encode(&e))?;
            file.started(&group, &self.metadata)
                .and_then(|stream| stream.write_row_group(&group))
                .map_err(|e| encode(&e))?;
            self.pending.start_writeback();
            start += len;
        }
        self.buffered_rows = rows.height() - start;
        if self.buffered_rows > 0 {
            self.buffered
                .push(rows.slice(start as i64, self.buffered_rows));
        }
        Ok(())
    }

    /// Completes the file and gives it its name. A sink that received no rows is a mismatch: the
    /// whole-input way writes empty outputs.
    pub fn finish(mut self) -> Result<(), SinkError> {
        if self.rows == 0 {
            return Err(SinkError::Mismatch("no rows".into()));
        }
        if matches!(self.writer, Some(Writer::Parquet(_))) {
            self.write_row_groups(true)?;
        }
        let flushed = match self.writer.take().expect("rows were written") {
            Writer::Text(mut out) => out.flush(),
            Writer::Parquet(ParquetOut::Waiting(_)) => unreachable!("rows were written"),
            Writer::Parquet(ParquetOut::Started(file)) => file
                .finish()
                .map_err(|e| WriteError::encode(OutputFormat::Parquet, e))?
                .flush(),
        };
        flushed.map_err(|e| self.io(e))?;
        let shown = self.path.display().to_string();
        let (path, force) = (self.path.clone(), self.force);
        self.pending
            .publish(&path, force)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => WriteError::Exists { path: shown },
                _ => WriteError::Io {
                    path: shown,
                    source: e,
                },
            })?;
        Ok(())
    }
}
