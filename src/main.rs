//! The `mfu` binary: parse the command line, run one command, turn the outcome into an exit code.
//!
//! Exit codes: 0 success (and a closed pipe), 1 failure or unresolved input, 2 usage error (clap's).

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    if matches!(args.command, cli::Command::Enrich(_)) {
        tune_allocator();
    }
    match cli::run(args) {
        Ok(code) => code,
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            eprintln!("mfu: {err:#}");
            ExitCode::from(1)
        }
    }
}

/// glibc's allocator gives each allocation over a threshold (128 KiB, rising to at most 32 MiB as such
/// blocks are freed) its own `mmap`, and hands memory back to the system past a trim threshold: mfu's
/// columns and read buffers are such blocks, each first touched page by page and given back when freed,
/// so the next one faults its pages in again. Kept in the heap below 64 MiB and trimmed past 128 MiB, they
/// are reused. Measured side by side (2026-12-08, release, 2 cores; docs/performance.md): `mfu enrich`
/// of the event-file bench's 1M scalars 21,052 -> 13,274 page faults, 82-124 -> 69-101 ms (14-25% less
/// in each interleaved pair), peak RSS 73 -> 75 MiB (the images run 34 -> 48 MiB); 1M-row tables within
/// noise. Only `mfu enrich`, which streams: the commands that
/// hold every row (`summary`, `goodput`, ...) took 9-21% more peak memory for 5-12% less time, and keep
/// glibc's defaults. `MFU_MALLOC=system` leaves the defaults for `enrich` too (to compare). The Python
/// package leaves its host process's allocator alone.
fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MFU_MALLOC").is_none_or(|v| v != "system") {
        // SAFETY: mallopt only sets the allocator's parameters; it is called before any thread starts.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 64 << 20);
            libc::mallopt(libc::M_TRIM_THRESHOLD, 128 << 20);
        }
    }
}

/// A reader that went away (`mfu peaks | head`) is not a failure. The csv and serde_json writers keep the
/// I/O error inside their own error instead of giving it as a `source()`, so they are asked directly.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    use std::io::ErrorKind::BrokenPipe;
    err.chain().any(|cause| {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return io.kind() == BrokenPipe;
        }
        if let Some(e) = cause.downcast_ref::<csv::Error>() {
            return matches!(e.kind(), csv::ErrorKind::Io(io) if io.kind() == BrokenPipe);
        }
        if let Some(e) = cause.downcast_ref::<serde_json::Error>() {
            return e.io_error_kind() == Some(BrokenPipe);
        }
        false
    })
}
