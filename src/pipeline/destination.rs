//! Where an enrich run's rows go: one output (a file, or standard output) or one file per input, decided
//! and checked before any data is read.

use std::path::{Path, PathBuf};

use crate::read::Input;
use crate::write::OutputFormat;

use super::PipelineError;

/// What the user asked for.
#[derive(Debug, Clone, Default)]
pub struct OutputOptions {
    /// One table for every input: a path, or `-` for standard output.
    pub output: Option<String>,
    /// One table per input in this folder, at the input's relative path (when `output` is `None`).
    pub out_dir: Option<PathBuf>,
    /// The format whatever the name says (default: from the name; CSV for standard output, Parquet for
    /// `out_dir`).
    pub format: Option<OutputFormat>,
    /// Replace outputs that exist.
    pub force: bool,
}

/// Where results go.
#[derive(Debug, Clone, PartialEq)]
pub enum Destination {
    /// One table (`path: None`: standard output).
    One {
        path: Option<PathBuf>,
        format: OutputFormat,
    },
    /// One table per input, in input order.
    PerInput {
        dir: PathBuf,
        paths: Vec<PathBuf>,
        format: OutputFormat,
    },
}

impl Destination {
    /// Decides output paths and formats, refuses an output that is also an input or that exists (unless
    /// `force`), and makes the folders of per-input outputs.
    pub fn plan(options: &OutputOptions, inputs: &[Input]) -> Result<Destination, PipelineError> {
        let refuse = |message: String| Err(PipelineError::Output(message));
        let forced = options.format;
        let input_paths: Vec<PathBuf> = inputs
            .iter()
            .filter_map(|i| {
                i.path
                    .as_deref()
                    .and_then(|p| std::fs::canonicalize(p).ok())
            })
            .collect();
        let is_input = |out: &Path| canonical_output(out).is_some_and(|c| input_paths.contains(&c));
        if let Some(out) = &options.output {
            if out == "-" {
                return Ok(Destination::One {
                    path: None,
                    format: forced.unwrap_or(OutputFormat::Csv),
                });
            }
            let path = PathBuf::from(out);
            let Some(format) = forced.or_else(|| OutputFormat::from_path(&path)) else {
                return refuse(format!("{out}: cannot tell the output format from the name; use .parquet, .csv or .jsonl, or give --output-format"));
            };
            if is_input(&path) {
                return refuse(format!(
                    "{out}: the output is also an input; write somewhere else"
                ));
            }
            if !options.force && path.exists() {
                return refuse(format!("{out}: already exists; add --force to replace it"));
            }
            return Ok(Destination::One {
                path: Some(path),
                format,
            });
        }
        let Some(dir) = &options.out_dir else {
            return refuse("no output: give -o OUTPUT or --out-dir DIR".into());
        };
        let format = forced.unwrap_or(OutputFormat::Parquet);
        let mut paths = Vec::with_capacity(inputs.len());
        for input in inputs {
            let path = dir.join(output_relative(&input.relative, format));
            if is_input(&path) {
                return refuse(format!(
                    "{}: the output for {} is that input itself",
                    path.display(),
                    input.display
                ));
            }
            if !options.force && path.exists() {
                return refuse(format!(
                    "{}: already exists; add --force to replace it",
                    path.display()
                ));
            }
            if paths.contains(&path) {
                return refuse(format!(
                    "{}: two inputs would be written to the same output",
                    path.display()
                ));
            }
            paths.push(path);
        }
        for p in &paths {
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent).map_err(|error| PipelineError::CreateDir {
                    path: parent.display().to_string(),
                    error,
                })?;
            }
        }
        Ok(Destination::PerInput {
            dir: dir.clone(),
            paths,
            format,
        })
    }
}

/// `runs/a/log.csv.gz` → `runs/a/log.parquet`.
fn output_relative(relative: &Path, format: OutputFormat) -> PathBuf {
    let name = relative
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "stdin".into());
    let lower = name.to_ascii_lowercase();
    let stem_len = [".gz", ".zst"]
        .iter()
        .find(|s| lower.ends_with(*s))
        .map_or(name.len(), |s| name.len() - s.len());
    let base = &name[..stem_len];
    let stem = Path::new(base)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| base.to_string());
    relative.with_file_name(format!("{stem}.{}", format.extension()))
}

/// The canonical form of an output path that may not exist yet.
fn canonical_output(path: &Path) -> Option<PathBuf> {
    if let Ok(c) = std::fs::canonicalize(path) {
        return Some(c);
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    Some(std::fs::canonicalize(parent).ok()?.join(path.file_name()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_names_swap_the_extension() {
        assert_eq!(
            output_relative(Path::new("a/log.csv.gz"), OutputFormat::Parquet),
            PathBuf::from("a/log.parquet")
        );
        assert_eq!(
            output_relative(Path::new("run.jsonl"), OutputFormat::Csv),
            PathBuf::from("run.csv")
        );
    }
}
