//! Reading logs: one module per file format, plus compression and format detection.
//!
//! A format comes from the extension (`.jsonl`, `.ndjson`, `.csv`, `.tsv`, `.parquet`, `.pq`, each optionally
//! followed by `.gz` or `.zst`) or from `--input-format`; a Parquet file is recognised by its magic bytes
//! whatever its name, and gzip or zstd compression by theirs.

pub(crate) mod bytes;
pub mod csv;
pub mod flat_csv;
pub mod flat_json;
pub mod inputs;
pub mod jsonl;
pub(crate) mod number;
pub mod parquet;
pub mod shapes;
pub mod stream;
pub(crate) mod text_column;
pub(crate) mod validity;

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use polars::prelude::DataFrame;

pub use inputs::{expand_inputs, group_tensorboard_tags, Input, InputError};
pub use jsonl::Reject;
pub use shapes::{RowKinds, Shape};

/// A table format mfu reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InputFormat {
    Jsonl,
    Csv,
    Tsv,
    Parquet,
}

impl InputFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            InputFormat::Jsonl => "jsonl",
            InputFormat::Csv => "csv",
            InputFormat::Tsv => "tsv",
            InputFormat::Parquet => "parquet",
        }
    }

    /// The format an extension names (without the dot, lower-case), if any.
    pub fn from_extension(ext: &str) -> Option<InputFormat> {
        match ext {
            "jsonl" | "ndjson" => Some(InputFormat::Jsonl),
            "csv" => Some(InputFormat::Csv),
            "tsv" => Some(InputFormat::Tsv),
            "parquet" | "pq" => Some(InputFormat::Parquet),
            _ => None,
        }
    }

    /// The format of a path from its extension, looking past a `.gz` or `.zst` suffix.
    pub fn from_path(path: &Path) -> Option<InputFormat> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        let name = name
            .strip_suffix(".gz")
            .or_else(|| name.strip_suffix(".zst"))
            .unwrap_or(&name);
        let ext = Path::new(name).extension()?.to_str()?;
        InputFormat::from_extension(ext)
    }
}

impl fmt::Display for InputFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Errors reading one input.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{input}: {source}")]
    Io {
        input: String,
        source: std::io::Error,
    },
    #[error(
        "{input}: cannot tell the format from the name; give --input-format jsonl|csv|tsv|parquet"
    )]
    UnknownFormat { input: String },
    #[error("{input}: {compression} data is corrupt or cut short: {source}")]
    Decompress {
        input: String,
        compression: &'static str,
        source: std::io::Error,
    },
    #[error("{input}: not a valid {shape} log: {message}")]
    Shape {
        input: String,
        shape: Shape,
        message: String,
    },
    #[error(
        "{input}: is a Git LFS pointer, not the data: fetch the file (git lfs pull) and run again"
    )]
    LfsPointer { input: String },
    #[error("{input}: --shape {shape} needs --line-regex with named groups")]
    NeedsLineRegex { input: String, shape: Shape },
    #[error("{input}: not valid {format}: {message}")]
    Parse {
        input: String,
        format: InputFormat,
        message: String,
    },
}

const PARQUET_MAGIC: &[u8] = b"PAR1";
pub(crate) const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];
pub(crate) const ZSTD_MAGIC: &[u8] = &[0x28, 0xb5, 0x2f, 0xfd];

/// Undoes gzip or zstd compression, recognised by magic bytes.
fn decompress(input: &str, bytes: Vec<u8>) -> Result<Vec<u8>, ReadError> {
    let (name, result) = if bytes.starts_with(GZIP_MAGIC) {
        let mut out = Vec::with_capacity(bytes.len() * 4);
        let r = flate2::read::MultiGzDecoder::new(bytes.as_slice()).read_to_end(&mut out);
        ("gzip", r.map(|_| out))
    } else if bytes.starts_with(ZSTD_MAGIC) {
        ("zstd", zstd::stream::decode_all(bytes.as_slice()))
    } else {
        return Ok(bytes);
    };
    result.map_err(|source| ReadError::Decompress {
        input: input.to_string(),
        compression: name,
        source,
    })
}

/// An input's bytes, decompressed.
fn load_bytes(input: &Input) -> Result<Vec<u8>, ReadError> {
    let raw = input.read_bytes().map_err(|source| ReadError::Io {
        input: input.display.clone(),
        source,
    })?;
    decompress(&input.display, raw)
}

/// How to read inputs, shared by every input of a run.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// `--input-format`: the table format whatever the name says.
    pub format: Option<InputFormat>,
    /// `--shape`: the log layout whatever the content suggests.
    pub shape: Option<Shape>,
    /// `--rows`: which kinds of row to keep where a log mixes them.
    pub rows: RowKinds,
    /// `--line-regex`: named groups that turn a text log's lines into rows.
    pub line_regex: Option<regex::Regex>,
    /// `--skip-bad-rows`: drop malformed JSONL lines and ragged CSV rows instead of failing.
    pub skip_bad_rows: bool,
}

/// One input as a frame, with the shape it was read as and what was inferred on the way.
#[derive(Debug)]
pub struct ReadOutcome {
    pub frame: DataFrame,
    pub shape: Shape,
    pub notes: Vec<String>,
    /// A torn last line (a run killed mid-write), dropped.
    pub torn: Option<Reject>,
    /// Malformed lines or rows dropped under `--skip-bad-rows`.
    pub rejects: Vec<Reject>,
}

/// Reads an input's bytes (decompressed), recognises its shape, and parses it into a frame.
pub fn read_input(input: &Input, options: &ReadOptions) -> Result<ReadOutcome, ReadError> {
    let bytes = load_bytes(input)?;
    if bytes.starts_with(b"version https://git-lfs.github.com/spec/") {
        return Err(ReadError::LfsPointer {
            input: input.display.clone(),
        });
    }
    let file_name = input
        .path
        .as_deref()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let shape = if bytes.starts_with(PARQUET_MAGIC) {
        Shape::Table
    } else if let Some(s) = options.shape {
        s
    } else if options.line_regex.is_some() {
        Shape::Text
    } else {
        shapes::detect(&bytes, &file_name).unwrap_or(Shape::Table)
    };
    if !input.companions.is_empty() && shape != Shape::TensorBoard {
        return Err(ReadError::Shape {
            input: input.display.clone(),
            shape: Shape::TensorBoard,
            message: "named like a TensorBoard tag export (run-<run>-tag-<tag>.csv) but its header is not Wall time,Step,Value; give --shape table to read such files one by one".into(),
        });
    }
    let shape_error = |message: String| ReadError::Shape {
        input: input.display.clone(),
        shape,
        message,
    };
    let shaped = match shape {
        Shape::Table => {
            let (frame, torn, rejects) =
                read_table(input, options.format, bytes, options.skip_bad_rows)?;
            return Ok(ReadOutcome {
                frame,
                shape,
                notes: Vec::new(),
                torn,
                rejects,
            });
        }
        Shape::HfTrainerState => shapes::hf::read(&bytes, options.rows),
        Shape::LlamaFactory => shapes::llamafactory::read(&bytes),
        Shape::Lightning => shapes::lightning::read(&bytes),
        Shape::TensorBoard if !input.companions.is_empty() => {
            let mut frames = vec![
                shapes::tensorboard::read(bytes, &file_name)
                    .map_err(shape_error)?
                    .frame,
            ];
            for path in &input.companions {
                let bytes = load_bytes(&Input::file(path.clone(), PathBuf::new()))?;
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                frames.push(
                    shapes::tensorboard::read(bytes, &name)
                        .map_err(shape_error)?
                        .frame,
                );
            }
            shapes::tensorboard::combine(frames).map(|frame| shapes::ShapedFrame {
                frame,
                notes: vec![format!(
                    "{} TensorBoard tag exports of one run combined by step",
                    input.companions.len() + 1
                )],
            })
        }
        Shape::TensorBoard => shapes::tensorboard::read(bytes, &file_name),
        Shape::Megatron => shapes::megatron::read(&bytes),
        Shape::Text | Shape::ModdedNanogpt | Shape::Nanogpt => {
            let preset = match shape {
                Shape::ModdedNanogpt => Some(shapes::text::MODDED_NANOGPT),
                Shape::Nanogpt => Some(shapes::text::NANOGPT),
                _ => None,
            };
            let line = match (&options.line_regex, preset) {
                (Some(re), _) => re.clone(),
                (None, Some(p)) => shapes::text::compile(p).expect("presets compile"),
                (None, None) => {
                    return Err(ReadError::NeedsLineRegex {
                        input: input.display.clone(),
                        shape,
                    })
                }
            };
            shapes::text::read(&bytes, &line)
        }
    }
    .map_err(shape_error)?;
    Ok(ReadOutcome {
        frame: shaped.frame,
        shape,
        notes: shaped.notes,
        torn: None,
        rejects: Vec::new(),
    })
}

/// A plain table, with a dropped torn last line and the rows skipped as malformed.
type TableRead = (DataFrame, Option<Reject>, Vec<Reject>);

/// Parses a plain table in the format its magic bytes, `forced` or its name says.
fn read_table(
    input: &Input,
    forced: Option<InputFormat>,
    bytes: Vec<u8>,
    skip_bad: bool,
) -> Result<TableRead, ReadError> {
    let format = if bytes.starts_with(PARQUET_MAGIC) {
        InputFormat::Parquet
    } else {
        match forced.or(input.format_from_name()) {
            Some(f) => f,
            None => {
                return Err(ReadError::UnknownFormat {
                    input: input.display.clone(),
                })
            }
        }
    };
    let parse_error = |message: String| ReadError::Parse {
        input: input.display.clone(),
        format,
        message,
    };
    match format {
        InputFormat::Jsonl => jsonl::read_checked(bytes, skip_bad)
            .map(|r| (r.frame, r.torn, r.rejects))
            .map_err(parse_error),
        InputFormat::Csv | InputFormat::Tsv => {
            let separator = if format == InputFormat::Tsv {
                b'\t'
            } else {
                b','
            };
            csv::read_checked(bytes, separator, skip_bad)
                .map(|(df, rejects)| (df, None, rejects))
                .map_err(parse_error)
        }
        InputFormat::Parquet => parquet::read(bytes)
            .map(|df| (df, None, Vec::new()))
            .map_err(parse_error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_from_names() {
        for (name, want) in [
            ("a.jsonl", Some(InputFormat::Jsonl)),
            ("a.NDJSON", Some(InputFormat::Jsonl)),
            ("dir/a.csv.gz", Some(InputFormat::Csv)),
            ("a.tsv.zst", Some(InputFormat::Tsv)),
            ("a.pq", Some(InputFormat::Parquet)),
            ("a.parquet", Some(InputFormat::Parquet)),
            ("a.txt", None),
            ("a.gz", None),
            ("noext", None),
        ] {
            assert_eq!(InputFormat::from_path(Path::new(name)), want, "{name}");
        }
    }

    #[test]
    fn decompress_passes_plain_bytes_and_reports_truncation() {
        assert_eq!(decompress("x", b"abc".to_vec()).unwrap(), b"abc");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, b"hello world, hello world").unwrap();
        let full = gz.finish().unwrap();
        assert_eq!(
            decompress("x", full.clone()).unwrap(),
            b"hello world, hello world"
        );
        let cut = full[..full.len() - 6].to_vec();
        let err = decompress("x.gz", cut).unwrap_err().to_string();
        assert!(
            err.starts_with("x.gz: gzip data is corrupt or cut short"),
            "{err}"
        );
        let z = zstd::stream::encode_all(&b"zstd bytes"[..], 3).unwrap();
        assert_eq!(decompress("x", z).unwrap(), b"zstd bytes");
    }
}
