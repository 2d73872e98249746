//! The `mfu` binary: parse the command line, run one command, turn the outcome into an exit code.
//!
//! Exit codes: 0 success (and a closed pipe), 1 failure or unresolved input, 2 usage error (clap's).

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
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
