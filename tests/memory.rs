//! Memory: whether an input streams is decided by what it decompresses to, and whatever is read whole
//! draws on one `--max-memory` budget, failing with a clear error rather than exhausting the machine.

use std::io::Write;

use mfu::read::memory::{format_size, TABLE_FACTOR};

use crate::util::{OkStdout, Workdir};

/// A log of `rows` near-identical lines: the shape of a long run's repetitive log, which compresses a
/// hundred to one or better.
fn repetitive_log(rows: usize) -> String {
    let mut text = String::new();
    for s in 0..rows {
        text.push_str(&format!(
            "{{\"step\":{s},\"step_time_s\":2.9,\"tokens\":131072,\"num_devices\":8,\"device_name\":\"NVIDIA H100 80GB HBM3\",\"dtype\":\"bf16\",\"flops_per_token\":4.2e10,\"loss\":2.25}}\n"
        ));
    }
    text
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(data).unwrap();
    gz.finish().unwrap()
}

const BLOCK: usize = 64 << 10;

/// Runs `mfu enrich` with 64 KiB blocks; its stderr.
fn enrich(wd: &Workdir, args: &[&str]) -> (bool, Vec<u8>, String) {
    let out = wd
        .mfu()
        .env("MFU_BLOCK_BYTES", BLOCK.to_string())
        .arg("enrich")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_compressed_log_streams_by_what_it_decompresses_to() {
    let wd = Workdir::new("memory_compressed_streams");
    let text = repetitive_log(6000);
    assert!(text.len() > 10 * BLOCK);
    wd.create("log.jsonl", &text);
    let zst = zstd::stream::encode_all(text.as_bytes(), 19).unwrap();
    let gz = gzip(text.as_bytes());
    // On disk both are far below a block even counted eight to one, as the old rule counted them.
    assert!(
        zst.len() * 8 < BLOCK && gz.len() * 8 < BLOCK * 4,
        "{} {}",
        zst.len(),
        gz.len()
    );
    wd.create("log.jsonl.zst", &zst);
    wd.create("log.jsonl.gz", &gz);

    // Streaming holds a few blocks, so it needs no more than a budget far below what the whole log
    // takes (the whole-input way below is refused with the same budget).
    let budget = ["--max-memory", "1M"];
    let (ok, _, stderr) = enrich(&wd, &["log.jsonl", "-o", "plain.parquet", "-v"]);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "streamed, {} blocks of up to 64 KiB",
            text.len().div_ceil(BLOCK)
        )),
        "{stderr}"
    );
    let plain = std::fs::read(wd.path("plain.parquet")).unwrap();
    for input in ["log.jsonl.zst", "log.jsonl.gz"] {
        let out = format!("{input}.parquet");
        let (ok, _, stderr) = enrich(&wd, &[input, "-o", &out, "-v", budget[0], budget[1]]);
        assert!(ok, "{stderr}");
        assert!(
            stderr.contains(&format!("{input}: table log, 6000 rows, streamed,")),
            "{stderr}"
        );
        assert_eq!(std::fs::read(wd.path(&out)).unwrap(), plain, "{input}");
    }

    // A member of a folder is judged the same way.
    wd.create("in/log.jsonl.zst", &zst);
    let (ok, _, stderr) = enrich(&wd, &["in", "-o", "folder.parquet", "-v"]);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("in/log.jsonl.zst: table log, 6000 rows, streamed,"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(wd.path("folder.parquet")).unwrap(), plain);

    // The same bytes as the whole-input way, given the memory it needs.
    let whole = wd
        .mfu()
        .args([
            "enrich",
            "log.jsonl.zst",
            "-o",
            "-",
            "--output-format",
            "parquet",
            "-q",
            "-v",
        ])
        .ok_stdout();
    assert_eq!(whole, plain);
    let (ok, stdout, stderr) = enrich(
        &wd,
        &[
            "log.jsonl.zst",
            "-o",
            "-",
            "--output-format",
            "parquet",
            budget[0],
            budget[1],
        ],
    );
    assert!(!ok && stdout.is_empty());
    assert!(
        stderr.contains("log.jsonl.zst: too large to read whole: more than")
            && stderr.contains("beyond --max-memory 1.0 MiB"),
        "{stderr}"
    );
}

#[test]
fn small_inputs_say_they_were_read_whole() {
    let wd = Workdir::new("memory_small_whole");
    let text = repetitive_log(20);
    wd.create("small.jsonl.gz", gzip(text.as_bytes()));
    let (ok, _, stderr) = enrich(&wd, &["small.jsonl.gz", "-o", "out.csv", "-v"]);
    assert!(ok, "{stderr}");
    let want = format!(
        "small.jsonl.gz: table log, 20 rows, read whole ({});",
        format_size(text.len() as u64)
    );
    assert!(stderr.contains(&want), "{stderr}");
}

#[test]
fn inputs_read_whole_share_one_budget() {
    let wd = Workdir::new("memory_shared_budget");
    let text = repetitive_log(2000); // about 300 KB: 0.9 MB of budget each
    let (size, need) = (text.len() as u64, text.len() as u64 * TABLE_FACTOR);
    assert!((500_000..1_000_000).contains(&need), "{need}");
    wd.create("in/a.jsonl", &text);
    wd.create("in/b.jsonl", &text);
    // One output holds both inputs until it is written: 1.5 MiB is room for one, not two.
    let (ok, _, stderr) = enrich(&wd, &["in", "-o", "-", "--max-memory", "1.5M", "-j", "1"]);
    assert!(!ok, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "in/b.jsonl: too large to read whole: {} of input would take about {} of memory, with {} already held by other inputs read whole, beyond --max-memory 1.5 MiB",
            format_size(size),
            format_size(need),
            format_size(need)
        )),
        "{stderr}"
    );
    assert!(stderr.contains("1 of 2 inputs enriched"), "{stderr}");
    // --out-dir writes each input before the next is read (one thread): the budget is given back.
    let (ok, _, stderr) = enrich(
        &wd,
        &["in", "--out-dir", "out", "--max-memory", "1.5M", "-j", "1"],
    );
    assert!(ok, "{stderr}");
    assert!(wd.path("out/a.parquet").is_file() && wd.path("out/b.parquet").is_file());
    // summary and plot read whole too, under the same flag.
    let out = wd
        .mfu()
        .args(["summary", "in", "--max-memory", "1.5M", "-j", "1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("too large to read whole"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wd.mfu()
        .args(["summary", "in", "--max-memory", "4M", "-j", "1"])
        .assert()
        .success();
}

#[test]
fn standard_input_is_read_within_the_budget() {
    let wd = Workdir::new("memory_stdin");
    let text = repetitive_log(6000);
    let out = wd
        .mfu()
        .args([
            "enrich",
            "-",
            "--input-format",
            "jsonl",
            "-o",
            "-",
            "--max-memory",
            "1M",
        ])
        .write_stdin(gzip(text.as_bytes()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("mfu: error: -: too large to read whole"),
        "{stderr}"
    );
    let rows = wd
        .mfu()
        .args([
            "enrich",
            "-",
            "--input-format",
            "jsonl",
            "-o",
            "-",
            "--max-memory",
            "64M",
        ])
        .write_stdin(gzip(text.as_bytes()))
        .ok_stdout();
    assert_eq!(rows.iter().filter(|b| **b == b'\n').count(), 6001);
}

#[test]
fn a_line_longer_than_the_budget_allows_is_refused_not_grown() {
    let wd = Workdir::new("memory_long_line");
    let with_note = |rows| repetitive_log(rows).replace("}\n", ",\"note\":\"\"}\n");
    let mut text = with_note(1000);
    // One line of 2 MB (a run that logged a whole tensor as text).
    text.push_str(&format!(
        "{{\"step\":1000,\"step_time_s\":2.9,\"tokens\":131072,\"num_devices\":8,\"device_name\":\"NVIDIA H100 80GB HBM3\",\"dtype\":\"bf16\",\"flops_per_token\":4.2e10,\"loss\":2.25,\"note\":\"{}\"}}\n",
        "x".repeat(2_000_000)
    ));
    text.push_str(&with_note(10));
    wd.create("long.jsonl", &text);
    let size = text.len() as u64;
    let (ok, _, stderr) = enrich(
        &wd,
        &[
            "long.jsonl",
            "-o",
            "out.parquet",
            "--max-memory",
            "3M",
            "-v",
        ],
    );
    assert!(!ok);
    assert!(
        stderr.contains("long.jsonl: a block could not be read"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "long.jsonl: too large to read whole: {} of input would take about {} of memory, beyond --max-memory 3.0 MiB",
            format_size(size),
            format_size(size * TABLE_FACTOR)
        )),
        "{stderr}"
    );
    assert!(!wd.path("out.parquet").exists());
    // With room for the line, it is read, in blocks.
    let (ok, _, stderr) = enrich(
        &wd,
        &[
            "long.jsonl",
            "-o",
            "out.parquet",
            "--max-memory",
            "64M",
            "-v",
        ],
    );
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("long.jsonl: table log, 1011 rows, streamed,"),
        "{stderr}"
    );
}

#[test]
fn max_memory_takes_sizes_and_refuses_nonsense() {
    let wd = Workdir::new("memory_flag");
    wd.create("a.jsonl", repetitive_log(3));
    for bad in ["0", "lots", "4X"] {
        wd.mfu()
            .args(["enrich", "a.jsonl", "-o", "-", "--max-memory", bad])
            .assert()
            .code(2);
    }
    wd.mfu()
        .args(["enrich", "a.jsonl", "-o", "-", "--max-memory", "512MiB"])
        .assert()
        .success();
}
