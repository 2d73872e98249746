//! What an enrich run is asked to do, and what each input gave: shared by the streaming and the
//! whole-input ways of running it.

use std::path::PathBuf;

use crate::compute::ComputeStats;
use crate::read::Reject;

use super::destination::OutputOptions;
use super::PipelineError;

/// What an enrich run is asked to do beyond reading: where to write, and what counts as failure.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub output: OutputOptions,
    /// A row whose peak cannot be resolved fails its input.
    pub strict: bool,
    /// Stop at the first input that fails, and write nothing.
    pub fail_fast: bool,
    /// Write each line or row that was not read, with its file, line and reason, here as JSON Lines.
    pub rejects: Option<PathBuf>,
}

/// What happened to one input that was enriched.
pub(crate) struct InputReport {
    pub stats: ComputeStats,
    pub warnings: Vec<String>,
    pub rejects: Vec<Reject>,
}

/// What each input gave, in input order, and the output written.
pub(crate) struct Outcome {
    pub results: Vec<Result<InputReport, PipelineError>>,
    pub wrote: Option<String>,
}
