//! Turning INPUT arguments into a list of inputs: files, folders (searched recursively for known
//! extensions), glob patterns, and `-` for standard input. Order is deterministic: arguments in the order
//! given, files within a folder or glob sorted by path.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use super::InputFormat;

/// One input to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    /// How reports and the `source_file` column name it: the path as given (or found), `-` for stdin.
    pub display: String,
    /// `None` for standard input.
    pub path: Option<PathBuf>,
    /// Path relative to the argument it came from, for `--out-dir`.
    pub relative: PathBuf,
    /// Files read together with `path` as one log: the other tag exports of one TensorBoard run.
    pub companions: Vec<PathBuf>,
    /// The part of `path` this input is, when a file holds several logs: a run of an MLflow SQLite store.
    pub part: Option<String>,
    /// Found by a folder walk only because its name could be a console log's (`.log`, `.out`, `.txt`): when
    /// no console-log preset matches it, it is skipped and counted, not an error.
    pub optional: bool,
    /// The argument it came from, as given (a folder, a file, a glob's match, `-`): `mfu goodput` reads
    /// the files of one argument as one run.
    pub argument: String,
}

impl Input {
    pub fn stdin() -> Input {
        Input {
            display: "-".into(),
            path: None,
            relative: PathBuf::from("stdin"),
            companions: Vec::new(),
            part: None,
            optional: false,
            argument: "-".into(),
        }
    }

    pub fn file(path: PathBuf, relative: PathBuf) -> Input {
        Input {
            display: path.display().to_string(),
            argument: path.display().to_string(),
            path: Some(path),
            relative,
            companions: Vec::new(),
            part: None,
            optional: false,
        }
    }

    /// The format its name says, if any.
    pub fn format_from_name(&self) -> Option<InputFormat> {
        self.path.as_deref().and_then(InputFormat::from_path)
    }

    /// All of its bytes (standard input is read to the end).
    pub fn read_bytes(&self) -> std::io::Result<Vec<u8>> {
        match &self.path {
            Some(p) => std::fs::read(p),
            None => {
                let mut buf = Vec::new();
                std::io::stdin().lock().read_to_end(&mut buf)?;
                Ok(buf)
            }
        }
    }
}

/// Joins the TensorBoard event files of one folder (one run) into a single input: the first file (in name
/// order, which is time order) stands for the folder, the others are its companions, and the input is
/// shown as the folder.
pub fn group_event_files(inputs: Vec<Input>) -> Vec<Input> {
    let mut out: Vec<Input> = Vec::with_capacity(inputs.len());
    let mut groups: std::collections::HashMap<PathBuf, usize> = Default::default();
    for input in inputs {
        let folder = input.path.as_deref().and_then(|p| {
            let name = p.file_name()?.to_str()?;
            super::shapes::tfevents::is_event_file(name)
                .then(|| p.parent().map(Path::to_path_buf).unwrap_or_default())
        });
        let Some(folder) = folder else {
            out.push(input);
            continue;
        };
        match groups.get(&folder) {
            Some(&i) => out[i]
                .companions
                .push(input.path.expect("event files have paths")),
            None => {
                groups.insert(folder.clone(), out.len());
                let shown = if folder.as_os_str().is_empty() {
                    ".".to_string()
                } else {
                    folder.display().to_string()
                };
                let relative = input
                    .relative
                    .parent()
                    .map(|p| p.join("events"))
                    .unwrap_or_else(|| PathBuf::from("events"));
                out.push(Input {
                    display: shown,
                    relative,
                    ..input
                });
            }
        }
    }
    out
}

/// Whether this input is an MLflow run folder (standing as its `meta.yaml`).
pub fn is_mlflow_input(input: &Input) -> bool {
    input.path.as_deref().is_some_and(|p| {
        p.file_name().is_some_and(|n| n == "meta.yaml")
            && p.parent().is_some_and(super::shapes::mlflow::is_run_folder)
    })
}

/// Whether this input is a DVCLive run folder (standing as its `metrics.json`).
pub fn is_dvclive_input(input: &Input) -> bool {
    input.path.as_deref().is_some_and(|p| {
        p.file_name().is_some_and(|n| n == "metrics.json")
            && p.parent()
                .is_some_and(super::shapes::dvclive::is_run_folder)
    })
}

/// Whether this input is a W&B run's transaction log (`run-<id>.wandb`, or any file that starts `:W&B`),
/// or the `files/wandb-summary.json` of a run folder without one.
pub fn is_wandb_input(input: &Input) -> bool {
    input.path.as_deref().is_some_and(|p| {
        p.file_name()
            .is_some_and(|n| super::shapes::wandb::is_run_log(&n.to_string_lossy()))
            || (p.is_file() && starts_with(p, &super::shapes::wandb::HEADER[..4]))
            || wandb_summary_folder(p).is_some()
    })
}

/// The run folder of a `<run>/files/wandb-summary.json` path when that folder holds no transaction log.
pub fn wandb_summary_folder(path: &Path) -> Option<&Path> {
    let files = path.parent()?;
    let run = files.parent()?;
    (path.file_name()? == super::shapes::wandb::SUMMARY_FILE
        && files.file_name()? == "files"
        && super::shapes::wandb::summary_only_in(run).is_some())
    .then_some(run)
}

/// Whether the file at `path` starts with `magic`.
fn starts_with(path: &Path, magic: &[u8]) -> bool {
    let mut head = vec![0u8; magic.len()];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && head == magic
}

/// [`found`], marked optional when the walk took it only for a console-log name.
fn walked(path: PathBuf, relative: PathBuf, optional: bool) -> Vec<Input> {
    let mut inputs = found(path, relative);
    for input in &mut inputs {
        input.optional = optional;
    }
    inputs
}

/// Extensions a folder walk takes as possible console logs (kept only when a preset reads them).
const CONSOLE_LOG_EXTENSIONS: &[&str] = &["log", "out", "txt"];

/// The inputs of a found file: an MLflow run's `meta.yaml` is shown as its run folder; an MLflow SQLite
/// store is one input per run (each run's columns are mapped on their own, as a run folder's are), shown
/// as `store#run`. A store that cannot be listed stays one input, whose read says why.
fn found(path: PathBuf, relative: PathBuf) -> Vec<Input> {
    let mut input = Input::file(path, relative);
    if is_mlflow_input(&input) || is_wandb_input(&input) || is_dvclive_input(&input) {
        if let Some(folder) = input.path.as_deref().and_then(Path::parent) {
            input.display = folder.display().to_string();
        }
    }
    let runs = input
        .path
        .as_deref()
        .filter(|p| super::shapes::mlflow::is_sqlite(p))
        .and_then(|p| super::shapes::mlflow::sqlite_runs(p).ok())
        .filter(|runs| !runs.is_empty());
    match runs {
        Some(runs) => runs
            .into_iter()
            .map(|run| Input {
                display: format!("{}#{run}", input.display),
                relative: input.relative.with_file_name(&run),
                part: Some(run),
                ..input.clone()
            })
            .collect(),
        None => vec![input],
    }
}

/// Whether this input is a folder's TensorBoard event files.
pub fn is_event_input(input: &Input) -> bool {
    input
        .path
        .as_deref()
        .and_then(|p| p.file_name())
        .is_some_and(|n| super::shapes::tfevents::is_event_file(&n.to_string_lossy()))
}

/// Joins TensorBoard scalar exports of one run (`run-<run>-tag-<tag>.csv` files in one folder) into a
/// single input whose first file stands for the group; the others become its companions, in path order.
pub fn group_tensorboard_tags(inputs: Vec<Input>) -> Vec<Input> {
    let mut out: Vec<Input> = Vec::with_capacity(inputs.len());
    let mut groups: std::collections::HashMap<(PathBuf, String), usize> = Default::default();
    for input in inputs {
        let key = input.path.as_deref().and_then(|p| {
            let name = p.file_name()?.to_str()?;
            let (run, _) = super::shapes::tensorboard::export_run_and_tag(name)?;
            Some((p.parent().map(Path::to_path_buf).unwrap_or_default(), run))
        });
        match key.as_ref().and_then(|k| groups.get(k)) {
            Some(&i) => {
                let companion = input.path.expect("grouped inputs have paths");
                out[i].companions.push(companion);
                out[i].display = format!(
                    "{} (+{} tags)",
                    out[i].path.as_ref().expect("path").display(),
                    out[i].companions.len()
                );
            }
            None => {
                if let Some(k) = key {
                    groups.insert(k, out.len());
                }
                out.push(input);
            }
        }
    }
    out
}

/// Errors expanding the INPUT arguments.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum InputError {
    #[error("{0}: no such file or folder")]
    Missing(String),
    #[error("{0}: folder holds no logs (looked recursively for .jsonl .ndjson .csv .tsv .parquet .pq, optionally .gz or .zst, trainer_state.json, TensorBoard's events.out.tfevents.*, MLflow run folders and mlflow.db, W&B and DVCLive run folders)")]
    EmptyFolder(String),
    #[error("{0}: pattern matches no file")]
    NoMatch(String),
    #[error("{pattern}: bad glob pattern: {message}")]
    BadPattern { pattern: String, message: String },
    #[error("{path}: cannot list folder: {message}")]
    Unlistable { path: String, message: String },
    #[error("'-' (standard input) may be given only once")]
    StdinTwice,
}

fn is_glob(arg: &str) -> bool {
    arg.contains(['*', '?', '['])
}

/// Expands every argument, in order.
pub fn expand_inputs(args: &[String]) -> Result<Vec<Input>, InputError> {
    let mut inputs = Vec::new();
    let mut saw_stdin = false;
    for arg in args {
        if arg == "-" {
            if saw_stdin {
                return Err(InputError::StdinTwice);
            }
            saw_stdin = true;
            inputs.push(Input::stdin());
            continue;
        }
        let path = Path::new(arg);
        let from = inputs.len();
        if path.is_dir() {
            let files = walk_folder(path)?;
            if files.is_empty() {
                return Err(InputError::EmptyFolder(arg.clone()));
            }
            for (f, optional) in files {
                let relative = f.strip_prefix(path).unwrap_or(&f).to_path_buf();
                inputs.extend(walked(f, relative, optional));
            }
            for input in &mut inputs[from..] {
                input.argument.clone_from(arg);
            }
        } else if path.exists() {
            let name = path
                .file_name()
                .map(PathBuf::from)
                .unwrap_or_else(|| path.to_path_buf());
            inputs.extend(found(path.to_path_buf(), name));
            for input in &mut inputs[from..] {
                input.argument.clone_from(arg);
            }
        } else if is_glob(arg) {
            let paths = glob::glob(arg).map_err(|e| InputError::BadPattern {
                pattern: arg.clone(),
                message: e.to_string(),
            })?;
            let mut matched: Vec<PathBuf> = paths.filter_map(Result::ok).collect();
            matched.sort();
            let base = literal_prefix(arg);
            let mut any = false;
            for m in matched {
                if m.is_dir() {
                    // Each folder a pattern matches is an argument of its own.
                    let from = inputs.len();
                    for (f, optional) in walk_folder(&m)? {
                        let relative = f.strip_prefix(&base).unwrap_or(&f).to_path_buf();
                        inputs.extend(walked(f, relative, optional));
                        any = true;
                    }
                    for input in &mut inputs[from..] {
                        input.argument = m.display().to_string();
                    }
                } else {
                    let relative = m.strip_prefix(&base).unwrap_or(&m).to_path_buf();
                    inputs.extend(found(m, relative));
                    any = true;
                }
            }
            if !any {
                return Err(InputError::NoMatch(arg.clone()));
            }
        } else {
            return Err(InputError::Missing(arg.clone()));
        }
    }
    Ok(inputs)
}

/// The folders of a glob pattern before its first wildcard component.
fn literal_prefix(pattern: &str) -> PathBuf {
    let mut base = PathBuf::new();
    for c in Path::new(pattern).components() {
        match c {
            Component::Normal(s) if is_glob(&s.to_string_lossy()) => break,
            other => base.push(other.as_os_str()),
        }
    }
    if base.as_os_str() == pattern {
        base.pop();
    }
    base
}

/// Every file with a known log extension under `folder`, sorted by path, each with whether it was taken
/// only as a possible console log (`.log`, `.out`, `.txt`). An MLflow run folder is one input (its
/// `meta.yaml`), not searched further (its artifacts are not logs). A folder of only possible console
/// logs counts as holding logs; those that no preset reads are skipped later, with a count.
fn walk_folder(folder: &Path) -> Result<Vec<(PathBuf, bool)>, InputError> {
    let mut found = Vec::new();
    let mut stack = vec![folder.to_path_buf()];
    let root = folder
        .canonicalize()
        .unwrap_or_else(|_| folder.to_path_buf());
    while let Some(dir) = stack.pop() {
        if super::shapes::mlflow::is_run_folder(&dir) {
            found.push((dir.join("meta.yaml"), false));
            continue;
        }
        if super::shapes::dvclive::is_run_folder(&dir) {
            found.push((dir.join("metrics.json"), false));
            continue;
        }
        if let Some(log) = super::shapes::wandb::run_log_in(&dir) {
            // A W&B run folder is its log; its files/ and logs/ are the run's artifacts, not logs.
            found.push((log, false));
            continue;
        }
        if let Some(summary) = super::shapes::wandb::summary_only_in(&dir) {
            // A W&B run folder without its log (files/ as people commit them): its summary.
            found.push((summary, false));
            continue;
        }
        let entries = std::fs::read_dir(&dir).map_err(|e| InputError::Unlistable {
            path: dir.display().to_string(),
            message: e.to_string(),
        })?;
        for entry in entries {
            let entry = entry.map_err(|e| InputError::Unlistable {
                path: dir.display().to_string(),
                message: e.to_string(),
            })?;
            let p = entry.path();
            // A link to something inside this walk (wandb's `latest-run` and `debug.log`) is reached
            // by the walk itself, or left out on purpose (a run folder's own files).
            if entry.file_type().is_ok_and(|t| t.is_symlink())
                && p.canonicalize()
                    .is_ok_and(|target| target.starts_with(&root))
            {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else if InputFormat::from_path(&p).is_some()
                || p.file_name().is_some_and(|n| {
                    n == "trainer_state.json"
                        || n == "mlflow.db"
                        || super::shapes::tfevents::is_event_file(&n.to_string_lossy())
                })
            {
                found.push((p, false));
            } else if p
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| CONSOLE_LOG_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
            {
                found.push((p, true));
            }
        }
    }
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_prefix_stops_at_wildcards() {
        assert_eq!(literal_prefix("runs/*/log.jsonl"), PathBuf::from("runs"));
        assert_eq!(literal_prefix("*.csv"), PathBuf::from(""));
        assert_eq!(literal_prefix("/a/b/x?.csv"), PathBuf::from("/a/b"));
    }

    #[test]
    fn folders_globs_and_errors() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("runs/b")).unwrap();
        std::fs::create_dir_all(root.join("runs/a")).unwrap();
        std::fs::write(root.join("runs/b/log.jsonl"), "{}").unwrap();
        std::fs::write(root.join("runs/a/log.csv.gz"), "x").unwrap();
        std::fs::write(root.join("runs/a/notes.txt"), "x").unwrap();
        std::fs::create_dir_all(root.join("empty")).unwrap();

        let folder = root.join("runs").display().to_string();
        let inputs = expand_inputs(std::slice::from_ref(&folder)).unwrap();
        let rel: Vec<_> = inputs.iter().map(|i| i.relative.clone()).collect();
        assert_eq!(
            rel,
            vec![
                PathBuf::from("a/log.csv.gz"),
                PathBuf::from("a/notes.txt"),
                PathBuf::from("b/log.jsonl")
            ]
        );
        // The .txt is taken only as a possible console log: skipped later if no preset reads it.
        let optional: Vec<bool> = inputs.iter().map(|i| i.optional).collect();
        assert_eq!(optional, [false, true, false]);

        let pattern = format!("{}/runs/*/log.*", root.display());
        let inputs = expand_inputs(&[pattern]).unwrap();
        assert_eq!(inputs.len(), 2);
        assert_eq!(inputs[0].relative, PathBuf::from("a/log.csv.gz"));
        // A file the pattern names is taken whatever its extension: the user asked for it.
        let pattern = format!("{}/runs/a/*", root.display());
        let named = expand_inputs(&[pattern]).unwrap();
        assert_eq!(named.len(), 2);
        assert!(named.iter().all(|i| !i.optional));

        let missing = root.join("nope.jsonl").display().to_string();
        assert_eq!(
            expand_inputs(std::slice::from_ref(&missing)),
            Err(InputError::Missing(missing))
        );
        let empty = root.join("empty").display().to_string();
        assert_eq!(
            expand_inputs(std::slice::from_ref(&empty)),
            Err(InputError::EmptyFolder(empty))
        );
        let nomatch = format!("{}/zzz*.csv", root.display());
        assert_eq!(
            expand_inputs(std::slice::from_ref(&nomatch)),
            Err(InputError::NoMatch(nomatch))
        );
        assert_eq!(
            expand_inputs(&["-".into(), "-".into()]),
            Err(InputError::StdinTwice)
        );
    }
}
