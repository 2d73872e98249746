//! Inputs and outputs in object storage: an S3-compatible server (moto's server mode, started by each
//! test on 127.0.0.1 and stopped when it ends) holding the fixtures, read and written through s3://
//! URLs, compared with the same files read from disk; and the faults: a missing key or bucket, wrong
//! credentials, a connection cut in the middle of a download or an upload. Skipped, with a message, where
//! moto is not installed (`.ci/run` installs it).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command as Process, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::util::{fixtures, OkStdout, Workdir, H100_RUN_FLAGS};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/s3_server.py")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A moto server of this test's own; stopped when dropped.
struct S3Server {
    child: Child,
    endpoint: String,
}

impl S3Server {
    /// `None` (after saying why) where moto's server mode cannot run here.
    fn start(auth: bool) -> Option<S3Server> {
        let probe = Process::new("python3")
            .args(["-c", "import moto.server, boto3, flask"])
            .status();
        if !probe.is_ok_and(|s| s.success()) {
            eprintln!("skipped: moto[server] is not installed (pip install 'moto[server]')");
            return None;
        }
        let port = free_port();
        let mut command = Process::new("python3");
        command
            .arg(script())
            .args(["serve", &port.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if auth {
            command.arg("--auth");
        }
        let mut child = command.spawn().unwrap();
        let mut ready = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut ready)
            .unwrap();
        assert_eq!(ready.trim(), "ready", "the S3 server did not start");
        Some(S3Server {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
        })
    }

    /// Uploads a folder's files under `bucket/prefix`.
    fn put(&self, bucket: &str, prefix: &str, folder: &Path) {
        let out = Process::new("python3")
            .arg(script())
            .args(["put", &self.endpoint, bucket, prefix])
            .arg(folder)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The keys under `bucket/prefix` with their sizes, and `UPLOAD key` for uploads left open.
    fn ls(&self, bucket: &str, prefix: &str) -> Vec<String> {
        let out = Process::new("python3")
            .arg(script())
            .args(["ls", &self.endpoint, bucket, prefix])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// `mfu` in `wd`, configured for this server (the environment of an S3-compatible store).
    fn mfu(&self, wd: &Workdir) -> assert_cmd::Command {
        self.mfu_at(wd, &self.endpoint)
    }

    fn mfu_at(&self, wd: &Workdir, endpoint: &str) -> assert_cmd::Command {
        let mut cmd = wd.mfu();
        cmd.env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_DEFAULT_REGION", "us-east-1")
            .env("AWS_ENDPOINT_URL", endpoint)
            .env("AWS_ALLOW_HTTP", "true")
            .env("MFU_STORE_RETRIES", "1")
            .env("MFU_STORE_RETRY_TIMEOUT_S", "5")
            .env("HOME", &wd.root);
        cmd
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        drop(self.child.stdin.take()); // the server stops when its input closes
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A TCP relay in front of the server that cuts every connection once `limit` bytes have gone one way:
/// downloads (server to client) or uploads (client to server). Requests and responses under the limit
/// pass untouched.
struct CuttingProxy {
    endpoint: String,
    stop: Arc<AtomicBool>,
}

impl CuttingProxy {
    fn start(to: &str, limit: usize, uploads: bool) -> CuttingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let target = to.trim_start_matches("http://").to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        listener.set_nonblocking(true).unwrap();
        std::thread::spawn(move || {
            while !stopping.load(Ordering::SeqCst) {
                let Ok((client, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                client.set_nonblocking(false).unwrap();
                let Ok(server) = TcpStream::connect(&target) else {
                    continue;
                };
                let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let cut = |from: TcpStream, to: TcpStream, limit: Option<usize>| {
                    std::thread::spawn(move || relay(from, to, limit))
                };
                cut(client, s2, uploads.then_some(limit));
                cut(server, c2, (!uploads).then_some(limit));
            }
        });
        CuttingProxy { endpoint, stop }
    }
}

impl Drop for CuttingProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Copies `from` to `to` until either closes, or `limit` bytes have passed; then closes both.
fn relay(mut from: TcpStream, mut to: TcpStream, limit: Option<usize>) {
    let mut buffer = [0u8; 16 * 1024];
    let mut passed = 0usize;
    loop {
        let n = match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let n = match limit {
            Some(limit) if passed + n > limit => {
                let _ = to.write_all(&buffer[..limit - passed]);
                break;
            }
            _ => n,
        };
        if to.write_all(&buffer[..n]).is_err() {
            break;
        }
        passed += n;
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

/// `mfu enrich INPUT -o - FLAGS` as text, with `root` in names replaced by `as_`.
fn enrich_text(cmd: &mut assert_cmd::Command, input: &str, flags: &[&str]) -> String {
    let out = cmd
        .args(["enrich", input, "-o", "-", "-q"])
        .args(flags)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).unwrap()
}

const CONSTANT_FLAGS: [&str; 3] = ["--tokens-per-step", "4096", "--override"];

#[test]
fn every_input_kind_reads_from_s3_as_from_disk() {
    let Some(s3) = S3Server::start(false) else {
        return;
    };
    let wd = Workdir::new("remote_kinds");
    s3.put("logs", "fixtures", &fixtures());
    let flags = [&H100_RUN_FLAGS[..], &CONSTANT_FLAGS[..]].concat();
    let local_root = fixtures().display().to_string();
    // The whole tree: tables, trainer states, console logs, TensorBoard, MLflow (file store and SQLite),
    // W&B (logs and files only), DVCLive, ms-swift and OLMo run folders.
    let remote = enrich_text(&mut s3.mfu(&wd), "s3://logs/fixtures", &flags);
    let local = enrich_text(&mut wd.mfu(), &local_root, &flags);
    assert!(remote.lines().count() > 1000, "{}", remote.lines().count());
    assert_eq!(remote.replace("s3://logs/fixtures", &local_root), local);
    // One object, and one run folder.
    for (url, path) in [
        ("s3://logs/fixtures/runs.jsonl", "runs.jsonl"),
        (
            "s3://logs/fixtures/tensorboard/runs/tbx/",
            "tensorboard/runs/tbx",
        ),
        (
            "s3://logs/fixtures/ms_swift/v0-20260425-045155/logging.jsonl",
            "ms_swift/v0-20260425-045155/logging.jsonl",
        ),
    ] {
        let remote = enrich_text(&mut s3.mfu(&wd), url, &flags);
        let local = enrich_text(
            &mut wd.mfu(),
            &fixtures().join(path).display().to_string(),
            &flags,
        );
        assert_eq!(remote, local, "{url}");
    }
    // A file read from its URL finds what a reader opens beside it (ms-swift's args.json: bf16 and 8
    // devices without flags).
    let out = s3
        .mfu(&wd)
        .args([
            "enrich",
            "s3://logs/fixtures/ms_swift/v0-20260425-045155/logging.jsonl",
        ])
        .args([
            "-o",
            "-",
            "-v",
            "--device",
            "NVIDIA H100 80GB HBM3",
            "--flops-per-token",
            "1e10",
        ])
        .assert()
        .success()
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8(out).unwrap();
    assert!(err.contains("num_devices=8 from"), "{err}");
    assert!(err.contains("args.json (global_world_size)"), "{err}");
    assert!(
        !err.contains("/tmp/mfu-remote"),
        "no local staging path is shown: {err}"
    );
}

#[test]
fn output_urls_round_trip() {
    let Some(s3) = S3Server::start(false) else {
        return;
    };
    let wd = Workdir::new("remote_output");
    s3.put("out", "", &wd.root); // the bucket
    let input = fixtures().join("runs.jsonl").display().to_string();
    s3.mfu(&wd)
        .args([
            "enrich",
            &input,
            "-o",
            "s3://out/enriched/runs.parquet",
            "-q",
        ])
        .assert()
        .success();
    // The object is there whole: its summary equals the summary of the same file written locally.
    wd.mfu()
        .args(["enrich", &input, "-o", "runs.parquet", "-q"])
        .assert()
        .success();
    let remote = s3
        .mfu(&wd)
        .args([
            "summary",
            "s3://out/enriched/runs.parquet",
            "--format",
            "csv",
        ])
        .ok_stdout();
    let local = wd
        .mfu()
        .args(["summary", "runs.parquet", "--format", "csv"])
        .ok_stdout();
    assert_eq!(remote, local);
    let local_bytes = std::fs::read(wd.path("runs.parquet")).unwrap();
    let listed = s3.ls("out", "enriched/");
    assert_eq!(
        listed,
        [format!("enriched/runs.parquet {}", local_bytes.len())]
    );
    // An existing object is refused without --force, replaced with it.
    let refused = s3
        .mfu(&wd)
        .args([
            "enrich",
            &input,
            "-o",
            "s3://out/enriched/runs.parquet",
            "-q",
        ])
        .assert()
        .failure()
        .get_output()
        .stderr
        .clone();
    assert!(String::from_utf8_lossy(&refused)
        .contains("s3://out/enriched/runs.parquet: already exists; add --force to replace it"));
    s3.mfu(&wd)
        .args([
            "enrich",
            &input,
            "-o",
            "s3://out/enriched/runs.parquet",
            "-q",
            "--force",
        ])
        .assert()
        .success();
    // summary and plot write to URLs too.
    s3.mfu(&wd)
        .args([
            "summary",
            "s3://out/enriched/runs.parquet",
            "-o",
            "s3://out/summary.csv",
        ])
        .assert()
        .success();
    s3.mfu(&wd)
        .args([
            "plot",
            "s3://out/enriched/runs.parquet",
            "-o",
            "s3://out/mfu.svg",
        ])
        .assert()
        .success();
    let listed = s3.ls("out", "");
    assert!(
        listed.iter().any(|l| l.starts_with("summary.csv ")),
        "{listed:?}"
    );
    assert!(
        listed.iter().any(|l| l.starts_with("mfu.svg ")),
        "{listed:?}"
    );
}

#[test]
fn a_prefix_of_200_small_logs() {
    let Some(s3) = S3Server::start(false) else {
        return;
    };
    let wd = Workdir::new("remote_many");
    for run in 0..200 {
        let mut text = String::new();
        for step in 1..=5 {
            text.push_str(&format!(
                "{{\"step\": {step}, \"step_time\": {}, \"tokens\": 65536}}\n",
                1.0 + (run % 7) as f64 * 0.1 + step as f64 * 0.01
            ));
        }
        wd.create(&format!("logs/run-{run:03}/log.jsonl"), text);
    }
    s3.put("many", "logs", &wd.path("logs"));
    let remote = enrich_text(&mut s3.mfu(&wd), "s3://many/logs/", &H100_RUN_FLAGS);
    let local = enrich_text(&mut wd.mfu(), "logs", &H100_RUN_FLAGS);
    assert_eq!(remote.lines().count(), 1 + 200 * 5);
    assert_eq!(remote.replace("s3://many/logs/", "logs/"), local);
}

#[test]
fn missing_keys_buckets_and_cut_connections_are_clear_errors() {
    let Some(s3) = S3Server::start(false) else {
        return;
    };
    let wd = Workdir::new("remote_faults");
    let big = wd.create("big/log.jsonl", {
        let mut text = String::new();
        for step in 1..=40_000 {
            text.push_str(&format!(
                "{{\"step\": {step}, \"step_time\": 1.5, \"tokens\": 65536}}\n"
            ));
        }
        text
    });
    s3.put("faults", "data", &wd.path("big"));
    let error = |cmd: &mut assert_cmd::Command| {
        let out = cmd.assert().failure().get_output().stderr.clone();
        String::from_utf8(out).unwrap()
    };
    let err = error(
        s3.mfu(&wd)
            .args(["enrich", "s3://faults/data/nothing.jsonl", "-o", "-"]),
    );
    assert!(
        err.contains("s3://faults/data/nothing.jsonl: no such object or prefix"),
        "{err}"
    );
    let err = error(
        s3.mfu(&wd)
            .args(["enrich", "s3://no-such-bucket/x.jsonl", "-o", "-"]),
    );
    assert!(
        err.contains("s3://no-such-bucket/x.jsonl: no such bucket"),
        "{err}"
    );
    // The connection cut in the middle of the object: a clear error, and the destination untouched.
    let destination = wd.create("kept.csv", "the output of an earlier run\n");
    let proxy = CuttingProxy::start(&s3.endpoint, 100_000, false);
    let err = error(
        s3.mfu_at(&wd, &proxy.endpoint)
            .args([
                "enrich",
                "s3://faults/data/log.jsonl",
                "-o",
                "kept.csv",
                "--force",
            ])
            .args(H100_RUN_FLAGS),
    );
    assert!(err.contains("s3://faults/data/log.jsonl"), "{err}");
    assert!(
        err.contains("could not be reached") || err.contains("error"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&destination).unwrap(),
        "the output of an earlier run\n"
    );
    drop(proxy);
    // An upload cut in the middle: no object at the destination, no upload left open.
    let proxy = CuttingProxy::start(&s3.endpoint, 200_000, true);
    let err = error(
        s3.mfu_at(&wd, &proxy.endpoint)
            .arg("enrich")
            .arg(&big)
            .args(["-o", "s3://faults/out/big.csv"])
            .args(H100_RUN_FLAGS),
    );
    assert!(err.contains("s3://faults/out/big.csv"), "{err}");
    drop(proxy);
    assert_eq!(s3.ls("faults", "out/"), Vec::<String>::new());
}

#[test]
fn wrong_credentials_are_refused_clearly() {
    let Some(s3) = S3Server::start(true) else {
        return;
    };
    let wd = Workdir::new("remote_auth");
    let out = Process::new("python3")
        .arg(script())
        .args(["user", &s3.endpoint])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let (key, secret) = text.trim().split_once(' ').unwrap();
    s3.put("auth", "", &wd.root); // the bucket, the last request the server lets through unchecked
    let with = |key: &str, secret: &str| {
        let mut cmd = s3.mfu(&wd);
        cmd.env("AWS_ACCESS_KEY_ID", key)
            .env("AWS_SECRET_ACCESS_KEY", secret);
        cmd
    };
    // The user's own key writes and reads.
    let input = fixtures().join("runs.jsonl").display().to_string();
    with(key, secret)
        .args(["enrich", &input, "-o", "s3://auth/runs.csv", "-q"])
        .assert()
        .success();
    let out = with("AKIAWRONGWRONGWRONG", "nope")
        .args(["enrich", "s3://auth/runs.csv", "-o", "-"])
        .assert()
        .failure()
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8(out).unwrap();
    assert!(err.contains("s3://auth/runs.csv: access denied"), "{err}");
    assert!(!err.contains("nope"), "no secret in messages: {err}");
}

/// A file on a plain web server: refused over http:// unless allowed, then read as from disk.
#[test]
fn http_files_when_plain_http_is_allowed() {
    let port = free_port();
    let mut server = Process::new("python3")
        .args([
            "-m",
            "http.server",
            "--bind",
            "127.0.0.1",
            &port.to_string(),
            "--directory",
        ])
        .arg(fixtures())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let wd = Workdir::new("remote_http");
    let url = format!("http://127.0.0.1:{port}/runs.jsonl");
    let refused = wd
        .mfu()
        .args(["enrich", &url, "-o", "-"])
        .env_remove("MFU_ALLOW_HTTP")
        .assert()
        .failure()
        .get_output()
        .stderr
        .clone();
    assert!(String::from_utf8_lossy(&refused).contains("plain HTTP is refused unless allowed"));
    let remote = enrich_text(wd.mfu().env("MFU_ALLOW_HTTP", "true"), &url, &[]);
    let local = enrich_text(
        &mut wd.mfu(),
        &fixtures().join("runs.jsonl").display().to_string(),
        &[],
    );
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(remote, local);
}
