//! Bad input, faults and atomic writes: crashed runs, half-synced buckets and hand-made exports must give
//! a clear message, the right exit code, no silent wrong number, and never half a file.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use predicates::prelude::*;

use crate::util::OkStdout;
use crate::util::{csv_rows, Workdir};

const HEADER: &str = "step,step_time,tokens,num_devices,flops_per_token,device,dtype\n";

fn jsonl_row(step: u32) -> String {
    format!(
        "{{\"step\":{step},\"step_time\":1.0,\"tokens\":1000,\"num_devices\":1,\"flops_per_token\":1e9,\"device\":\"NVIDIA L4\",\"dtype\":\"bf16\"}}\n"
    )
}

#[test]
fn torn_last_line_is_skipped_with_a_warning() {
    let wd = Workdir::new("fault_torn");
    let text = format!("{}{}{{\"step\":3,\"step_ti", jsonl_row(1), jsonl_row(2));
    wd.create("run.jsonl", text);
    wd.mfu()
        .args(["enrich", "run.jsonl", "-o", "out.csv"])
        .assert()
        .success()
        .stderr(predicate::str::contains("run.jsonl: line 3 is cut short"))
        .stderr(predicate::str::contains("1 lines skipped"));
    let out = std::fs::read_to_string(wd.path("out.csv")).unwrap();
    assert_eq!(out.lines().count(), 3, "header and two rows");
}

#[test]
fn malformed_line_names_file_line_and_column_or_is_skipped() {
    let wd = Workdir::new("fault_malformed");
    let text = format!("{}{{\"step\": 2, oops}}\n{}", jsonl_row(1), jsonl_row(3));
    wd.create("run.jsonl", text);
    wd.mfu()
        .args(["enrich", "run.jsonl", "-o", "out.csv"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "run.jsonl: not valid jsonl: line 2, column 13",
        ))
        .stderr(predicate::str::contains("--skip-bad-rows"));
    assert_eq!(wd.listing(), vec!["run.jsonl"]);
    wd.mfu()
        .args([
            "enrich",
            "run.jsonl",
            "-o",
            "out.csv",
            "--skip-bad-rows",
            "--rejects",
            "bad.jsonl",
        ])
        .assert()
        .success()
        .stderr(predicate::str::contains("1 malformed line(s) skipped"));
    assert_eq!(
        std::fs::read_to_string(wd.path("out.csv"))
            .unwrap()
            .lines()
            .count(),
        3
    );
    let reject: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(wd.path("bad.jsonl"))
            .unwrap()
            .trim(),
    )
    .unwrap();
    assert_eq!(reject["file"], "run.jsonl");
    assert_eq!(reject["line"], 2);
    assert_eq!(reject["column"], 13);
    assert_eq!(reject["text"], "{\"step\": 2, oops}");
}

#[test]
fn bad_values_give_null_and_are_counted() {
    let wd = Workdir::new("fault_values");
    wd.create(
        "log.csv",
        format!(
            "{HEADER}1,abc,1000,1,1e9,NVIDIA L4,bf16\n2,NaN,1000,1,1e9,NVIDIA L4,bf16\n3,inf,1000,1,1e9,NVIDIA L4,bf16\n4,0,1000,1,1e9,NVIDIA L4,bf16\n5,-2,1000,1,1e9,NVIDIA L4,bf16\n6,1,-5,1,1e9,NVIDIA L4,bf16\n7,0.001,1000,1,1e9,NVIDIA L4,bf16\n8,1,1000,1,1e9,NVIDIA L4,bf16\n"
        ),
    );
    let out = wd
        .mfu()
        .args(["enrich", "log.csv", "-o", "-"])
        .assert()
        .success()
        .stderr(predicate::str::contains("column 'step_time': 1 cell is not a number"))
        .stderr(predicate::str::contains(
            "5 row(s) with a missing, zero, negative or non-finite step time and 1 with a negative or non-finite count",
        ))
        .stderr(predicate::str::contains("1 rows have MFU above 1, which is impossible"))
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    let mfu: Vec<String> = csv_rows(&text)
        .iter()
        .map(|row| row["mfu_wall_clock"].clone())
        .collect();
    // Nothing infinite or negative comes out; the impossible value is kept (and warned about).
    assert_eq!(&mfu[..6], &["", "", "", "", "", ""]);
    let high: f64 = mfu[6].parse().unwrap();
    assert!((high - 1000.0 * 1e9 / 0.001 / 121e12).abs() < 1e-9);
    assert!(mfu[7].parse::<f64>().unwrap() < 1.0);
}

#[test]
fn a_result_that_overflows_is_null_in_every_format() {
    let wd = Workdir::new("fault_overflow");
    // A subnormal step time makes throughput overflow to infinity; a huge count makes the work overflow.
    wd.create(
        "log.csv",
        format!(
            "{HEADER}1,5e-324,1000,1,1e9,NVIDIA L4,bf16\n2,1,1e300,1,1e9,NVIDIA L4,bf16\n3,1,1000,1,1e9,NVIDIA L4,bf16\n"
        ),
    );
    let mut parquet_rows = Vec::new();
    for format in ["csv", "jsonl", "parquet"] {
        let out = format!("out.{format}");
        wd.mfu()
            .args(["enrich", "log.csv", "-o", &out, "--force"])
            .assert()
            .success()
            .stderr(predicate::str::contains(
                "2 row(s) have a derived value too large for a 64-bit float",
            ));
        let bytes = std::fs::read(wd.path(&out)).unwrap();
        match format {
            "csv" => {
                let rows = csv_rows(std::str::from_utf8(&bytes).unwrap());
                for column in [
                    "tokens_per_second",
                    "achieved_flops_per_device",
                    "mfu_wall_clock",
                ] {
                    assert_eq!(rows[0][column], "", "{column}");
                }
                // 1e300 tokens a second is finite; the work per device (x 1e9 FLOPs) is not.
                assert_eq!(rows[1]["tokens_per_second"].parse::<f64>().unwrap(), 1e300);
                assert_eq!(rows[1]["achieved_flops_per_device"], "");
                assert_eq!(rows[1]["mfu_wall_clock"], "");
                assert!(rows[2]["mfu_wall_clock"].parse::<f64>().unwrap() > 0.0);
            }
            "jsonl" => {
                let first: serde_json::Value = serde_json::from_str(
                    std::str::from_utf8(&bytes).unwrap().lines().next().unwrap(),
                )
                .unwrap();
                assert!(first["tokens_per_second"].is_null() && first["mfu_wall_clock"].is_null());
            }
            _ => {
                let reader =
                    parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
                        bytes::Bytes::from(bytes),
                    )
                    .unwrap()
                    .build()
                    .unwrap();
                for batch in reader {
                    let batch = batch.unwrap();
                    let column = batch.column_by_name("tokens_per_second").unwrap();
                    let values = column
                        .as_any()
                        .downcast_ref::<arrow::array::Float64Array>()
                        .unwrap();
                    parquet_rows.extend(values.iter());
                }
            }
        }
    }
    assert_eq!(parquet_rows, [None, Some(1e300), Some(1000.0)]);
}

#[test]
fn broken_files_get_clear_messages_and_no_output() {
    let wd = Workdir::new("fault_files");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(
        format!("{HEADER}1,1,1000,1,1e9,NVIDIA L4,bf16\n")
            .repeat(50)
            .as_bytes(),
    )
    .unwrap();
    let gz = gz.finish().unwrap();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "empty.jsonl",
            Vec::new(),
            "empty.jsonl: table has no columns (empty input)",
        ),
        (
            "lfs.csv",
            b"version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 12345\n".to_vec(),
            "lfs.csv: is a Git LFS pointer, not the data",
        ),
        (
            "cut.csv.gz",
            gz[..gz.len() / 2].to_vec(),
            "cut.csv.gz: gzip data is corrupt or cut short",
        ),
        (
            "binary.jsonl",
            vec![0, 159, 146, 150, 255, 1, 2, 3],
            "binary.jsonl: not valid jsonl: line 1",
        ),
        (
            "ragged.csv",
            format!("{HEADER}1,1,1000,1,1e9,NVIDIA L4,bf16\n2,1,1000\n").into_bytes(),
            "ragged.csv: not valid csv: line 3: 3 fields where the header has 7",
        ),
    ];
    for (name, bytes, message) in &cases {
        wd.create(name, bytes);
        wd.mfu()
            .args(["enrich", name, "-o", "out.csv"])
            .assert()
            .code(1)
            .stderr(predicate::str::contains(*message));
        assert!(!wd.path("out.csv").exists(), "{name}");
    }
    // A Parquet file cut short.
    wd.create("ok.csv", format!("{HEADER}1,1,1000,1,1e9,NVIDIA L4,bf16\n"));
    wd.mfu()
        .args(["enrich", "ok.csv", "-o", "whole.parquet", "-q"])
        .assert()
        .success();
    let whole = std::fs::read(wd.path("whole.parquet")).unwrap();
    wd.create("cut.parquet", &whole[..whole.len() - 20]);
    wd.mfu()
        .args(["enrich", "cut.parquet", "-o", "out.csv"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("cut.parquet: not valid parquet"));
    assert!(!wd.path("out.csv").exists());
}

#[test]
fn header_only_bom_and_crlf_files_read() {
    let wd = Workdir::new("fault_encodings");
    wd.create("header.csv", HEADER);
    wd.mfu()
        .args(["enrich", "header.csv", "-o", "h.csv", "-q"])
        .assert()
        .success();
    assert_eq!(
        std::fs::read_to_string(wd.path("h.csv"))
            .unwrap()
            .lines()
            .count(),
        1
    );
    let crlf = format!("\u{feff}{HEADER}1,2,1000,1,1e9,NVIDIA L4,bf16\n").replace('\n', "\r\n");
    wd.create("crlf.csv", crlf);
    let out = wd
        .mfu()
        .args(["enrich", "crlf.csv", "-o", "-", "-q"])
        .ok_stdout();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.starts_with("step,step_time,"),
        "the BOM is not part of the first name: {text}"
    );
    assert!(
        text.contains(",500.0,"),
        "tokens per second from the CRLF row: {text}"
    );
}

#[test]
fn unreadable_and_unwritable_paths() {
    let wd = Workdir::new("fault_paths");
    wd.create("ok.csv", format!("{HEADER}1,1,1000,1,1e9,NVIDIA L4,bf16\n"));
    wd.mfu()
        .args(["enrich", "ok.csv", "-o", "no/such/dir/out.csv"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("no/such/dir/out.csv"));
    wd.mfu()
        .args(["enrich", "ok.csv", "-o", "/proc/mfu-out.csv"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("/proc/mfu-out.csv"));
    // Root reads any file, so an unreadable file can only be tested as another user.
    if unsafe { libc::geteuid() } != 0 {
        let path = wd.create("secret.csv", "x");
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o000))
            .unwrap();
        wd.mfu()
            .args(["enrich", "secret.csv", "-o", "out.csv"])
            .assert()
            .code(1)
            .stderr(predicate::str::contains("secret.csv: Permission denied"));
    } else {
        eprintln!("skipped: the unreadable-file check needs a user other than root");
    }
    assert_eq!(wd.listing(), vec!["ok.csv"]);
}

#[test]
fn a_full_disk_leaves_nothing_behind() {
    let wd = Workdir::new("fault_full");
    let mount = wd.path("tiny");
    std::fs::create_dir_all(&mount).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=16k", "tmpfs"])
        .arg(&mount)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("skipped: cannot mount a tmpfs here");
        return;
    }
    let mut text = String::from(HEADER);
    for i in 0..5000 {
        text.push_str(&format!("{i},1,1000,1,1e9,NVIDIA L4,bf16\n"));
    }
    wd.create("big.csv", text);
    let result = wd
        .mfu()
        .args(["enrich", "big.csv", "-o", "tiny/out.csv"])
        .assert()
        .code(1);
    let listing: Vec<_> = std::fs::read_dir(&mount).unwrap().collect();
    let _ = Command::new("umount").arg(&mount).status();
    result.stderr(predicate::str::contains("tiny/out.csv"));
    assert!(
        listing.is_empty(),
        "nothing left on the full disk: {listing:?}"
    );
}

#[test]
fn sigkill_mid_write_leaves_no_partial_output_nor_temporary_file() {
    let wd = Workdir::new("fault_kill");
    let mut text = String::from(HEADER);
    for i in 0..200_000 {
        text.push_str(&format!(
            "{i},{}.5,4096,8,4.2e10,NVIDIA H100 80GB HBM3,bf16\n",
            1 + i % 7
        ));
    }
    wd.create("big.csv", text);
    let binary = assert_cmd::cargo::cargo_bin("mfu");
    for delay_ms in [30u64, 120, 300, 700, 1500] {
        let mut child = Command::new(&binary)
            .current_dir(&wd.root)
            .args(["enrich", "big.csv", "-o", "out.jsonl", "--force", "-q"])
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        let _ = child.kill(); // SIGKILL on Unix
        let _ = child.wait();
        let mut names = wd.listing();
        names.retain(|n| n != "big.csv");
        match names.as_slice() {
            [] => {}
            [only] if only == "out.jsonl" => {
                // If it finished, it is whole: every row of the input is there.
                let lines = std::fs::read_to_string(wd.path("out.jsonl"))
                    .unwrap()
                    .lines()
                    .count();
                assert_eq!(lines, 200_000, "killed after {delay_ms} ms");
            }
            other => panic!("killed after {delay_ms} ms, left {other:?}"),
        }
    }
}

/// A reader that stops early (`mfu peaks | head`) ends the command quietly with success, whichever writer
/// (CSV, JSON, JSON lines) was writing when the pipe closed.
#[test]
fn a_closed_pipe_is_not_an_error() {
    use std::io::Read;
    let wd = Workdir::new("fault_pipe");
    let mut text = String::from(HEADER);
    for i in 0..20_000 {
        text.push_str(&format!("{i},1,1000,1,1e9,NVIDIA L4,bf16\n"));
    }
    wd.create("big.csv", text);
    let names = vec!["NVIDIA H100 80GB HBM3"; 200];
    let commands: Vec<Vec<&str>> = vec![
        vec!["peaks", "--format", "csv"],
        vec!["peaks", "--format", "json"],
        [&["lookup", "--json"][..], &names[..]].concat(),
        vec!["enrich", "big.csv", "-o", "-"],
        vec!["enrich", "big.csv", "-o", "-", "--output-format", "jsonl"],
    ];
    for args in commands {
        let mut child = <Command as assert_cmd::cargo::CommandCargoExt>::cargo_bin("mfu")
            .unwrap()
            .current_dir(wd.path(""))
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = [0u8; 16];
        child.stdout.take().unwrap().read_exact(&mut first).unwrap();
        // The read end is dropped here: the rest of the output meets a closed pipe.
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {:?} {stderr}", out.status);
        assert!(!stderr.contains("Broken pipe"), "{args:?}: {stderr}");
    }
}
