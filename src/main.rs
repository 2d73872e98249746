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

/// A reader that went away (`mfu peaks | head`) is not a failure.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
