//! Helpers shared by the integration tests: a fresh working folder per test, the binary, and the
//! optional `../shared` folder.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use arrow::array::Array;
use assert_cmd::Command;

/// A fresh, empty folder under the target directory for one test.
pub struct Workdir {
    pub root: PathBuf,
}

static NEXT_ID: AtomicUsize = AtomicUsize::new(0);

impl Workdir {
    pub fn new(name: &str) -> Workdir {
        let id = NEXT_ID.fetch_add(1, Ordering::SeqCst);
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join("it")
            .join(format!("{name}-{}-{id}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        Workdir { root }
    }

    /// Writes `contents` to `name` inside the folder and returns its path.
    pub fn create(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, contents).unwrap();
        path
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// The `mfu` binary, run in this folder.
    pub fn mfu(&self) -> Command {
        let mut cmd = Command::cargo_bin("mfu").unwrap();
        cmd.current_dir(&self.root);
        cmd
    }

    /// Names of the files directly in the folder, sorted.
    pub fn listing(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.root)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

/// The repository's own fixtures folder.
/// The flags of a run every test table can be enriched with: bf16 on 8 H100s at 4.2e10 FLOPs per token.
pub const H100_RUN_FLAGS: [&str; 8] = [
    "--num-devices",
    "8",
    "--flops-per-token",
    "4.2e10",
    "--device",
    "NVIDIA H100 80GB HBM3",
    "--dtype",
    "bf16",
];

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// `../shared` beside the checkout (or `$MFU_SHARED_DIR`), when present.
pub fn shared_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("MFU_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    dir.is_dir().then_some(dir)
}

/// A file under `../shared`, or `None` with a note on stderr so a skipped check is visible.
pub fn shared_file(relative: &str) -> Option<PathBuf> {
    let path = shared_dir().map(|d| d.join(relative));
    match path {
        Some(p) if p.is_file() => Some(p),
        _ => {
            eprintln!("skipped: ../shared/{relative} is not present");
            None
        }
    }
}

/// Relative difference |a - b| / |b|.
pub fn rel_diff(a: f64, b: f64) -> f64 {
    ((a - b) / b).abs()
}

/// Runs a command that must succeed and returns its standard output.
pub trait OkStdout {
    fn ok_stdout(&mut self) -> Vec<u8>;
}

impl OkStdout for Command {
    fn ok_stdout(&mut self) -> Vec<u8> {
        self.assert().success().get_output().stdout.clone()
    }
}

/// A CSV text (mfu's output) as rows of column name → cell.
pub fn csv_rows(text: &str) -> Vec<std::collections::HashMap<String, String>> {
    let mut r = csv::Reader::from_reader(text.as_bytes());
    r.deserialize().map(Result::unwrap).collect()
}

/// The CSV a command that must succeed writes to standard output, as rows.
pub fn ok_csv(command: &mut Command) -> Vec<std::collections::HashMap<String, String>> {
    csv_rows(&String::from_utf8(command.ok_stdout()).unwrap())
}

/// Runs `mfu enrich FILE -o - ARGS...`, which must succeed: the CSV rows (column → cell) and what it
/// said on standard error.
pub fn enrich_ok(
    file: &std::path::Path,
    args: &[&str],
) -> (Vec<std::collections::HashMap<String, String>>, String) {
    let wd = Workdir::new("enrich_ok");
    let out = wd
        .mfu()
        .arg("enrich")
        .arg(file)
        .args(["-o", "-"])
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{}: {err}", file.display());
    (csv_rows(&String::from_utf8(out.stdout).unwrap()), err)
}

/// A row's cell as a number; a failure names the column and what it held.
pub fn number(row: &std::collections::HashMap<String, String>, key: &str) -> f64 {
    row[key]
        .parse()
        .unwrap_or_else(|_| panic!("{key}: '{}'", row[key]))
}

/// A Parquet file read with arrow-rs: the columns (as one batch) and the file's key-value metadata.
pub fn read_parquet(
    path: &std::path::Path,
) -> (
    arrow::array::RecordBatch,
    std::collections::HashMap<String, String>,
) {
    let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        std::fs::File::open(path).unwrap(),
    )
    .unwrap();
    let meta: std::collections::HashMap<String, String> = builder
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .map(|kv| {
            kv.iter()
                .map(|k| (k.key.clone(), k.value.clone().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    let schema = builder.schema().clone();
    // pyarrow shows the Arrow schema's metadata: it must carry the same keys as the footer.
    for key in ["mfu.version", "mfu.peak_table_sha256", "mfu.columns"] {
        assert_eq!(
            schema.metadata().get(key),
            meta.get(key),
            "{key} in the Arrow schema"
        );
    }
    let batches: Vec<arrow::array::RecordBatch> =
        builder.build().unwrap().map(Result::unwrap).collect();
    (
        arrow::compute::concat_batches(&schema, &batches).unwrap(),
        meta,
    )
}

/// A column of a batch as f64 values, nulls as `None`.
pub fn f64s(batch: &arrow::array::RecordBatch, name: &str) -> Vec<Option<f64>> {
    let col = batch
        .column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"));
    let col = arrow::compute::cast(col, &arrow::datatypes::DataType::Float64).unwrap();
    let a = col
        .as_any()
        .downcast_ref::<arrow::array::Float64Array>()
        .unwrap();
    (0..a.len())
        .map(|i| (!a.is_null(i)).then(|| a.value(i)))
        .collect()
}
