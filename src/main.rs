//! The `mfu` binary: parse the command line, run one command, turn the outcome into an exit code.
//!
//! Exit codes: 0 success (and a closed pipe), 1 failure or unresolved input, 2 usage error (clap's).

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    keep_freed_memory();
    let args = cli::Cli::parse();
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

/// Streaming allocates and frees the same large buffers for every block and row group (column builders,
/// Parquet level and index vectors of a few MiB). glibc serves allocations above 128 KiB to 32 MiB with
/// fresh mmaps and unmaps them when freed, so every block paid for zeroed pages again (a third of the
/// JSONL time went to page faults). Served from the heap and kept there, they are reused.
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; it is called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 64 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
    }
}

/// A reader that went away (`mfu peaks | head`) is not a failure.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
