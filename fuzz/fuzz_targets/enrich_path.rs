//! Any bytes through the whole `enrich` path, as the command line runs it: the bytes are a file (its
//! extension chosen by the first byte: a table format, a trainer layout's name, a console log, an MLflow
//! store, a W&B run log), read, mapped, enriched and written to every output format. Errors are fine; a panic is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mfu::pipeline::destination::OutputOptions;
use mfu::pipeline::job::RunOptions;
use mfu::pipeline::{enrich, Options, Plan, Silent};

const NAMES: &[&str] = &[
    "log.jsonl",
    "log.csv",
    "log.tsv",
    "log.parquet",
    "trainer_state.json",
    "trainer_log.jsonl",
    "metrics.csv",
    "slurm.out",
    "mlflow.db",
    "events.out.tfevents.1",
    "log.jsonl.gz",
    "log.csv.zst",
    "run-x.wandb",
    "torchtitan.log",
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, bytes)) = data.split_first() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary folder");
    let input = dir.path().join(NAMES[pick as usize % NAMES.len()]);
    std::fs::write(&input, bytes).expect("the input written");
    for out in ["out.csv", "out.jsonl", "out.parquet"] {
        let Ok(plan) = Plan::new(&Options {
            inputs: vec![input.display().to_string()],
            device: Some("NVIDIA H100 80GB HBM3".into()),
            dtype: Some("bf16".into()),
            flops_per_token: Some(1e10),
            jobs: Some(1),
            max_memory: Some(256 << 20),
            ..Options::default()
        }) else {
            return;
        };
        let run = RunOptions {
            output: OutputOptions {
                output: Some(dir.path().join(out).display().to_string()),
                force: true,
                ..OutputOptions::default()
            },
            ..RunOptions::default()
        };
        let _ = enrich::run(&plan, &run, &Silent);
    }
});
