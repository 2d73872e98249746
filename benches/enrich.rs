//! The enrich core on an in-memory frame (no file reading or writing): column mapping, one peak resolution
//! per distinct pair, and the arithmetic.
//! Run: cargo bench --bench enrich

use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use mfu::enrich::{enrich_frame, EnrichOptions};
use mfu::peaks::Resolver;
use polars::prelude::*;

const DEVICES: [&str; 4] = [
    "NVIDIA H100 80GB HBM3",
    "NVIDIA A100-SXM4-80GB",
    "AMD Instinct MI300X",
    "Acme Tensor Engine X9",
];

/// `rows` steps over 100 runs, shaped like gen_logs.py's output.
fn frame(rows: usize) -> DataFrame {
    let per_run = rows / 100;
    let run: Vec<String> = (0..rows)
        .map(|i| format!("run-{:05}", i / per_run))
        .collect();
    let step: Vec<i64> = (0..rows).map(|i| (i % per_run) as i64 + 1).collect();
    let step_time: Vec<f64> = (0..rows).map(|i| 1.0 + (i % 17) as f64 * 0.01).collect();
    let fwd_bwd: Vec<f64> = step_time.iter().map(|t| t * 0.85).collect();
    let tokens: Vec<i64> = vec![131_072; rows];
    let devices: Vec<i64> = (0..rows).map(|i| [8, 16, 64][(i / per_run) % 3]).collect();
    let device: Vec<&str> = (0..rows).map(|i| DEVICES[(i / per_run) % 4]).collect();
    let dtype: Vec<&str> = (0..rows)
        .map(|i| ["bf16", "fp16"][(i / per_run) % 2])
        .collect();
    let fpt: Vec<f64> = vec![4.2e10; rows];
    df!(
        "run_id" => run, "step" => step, "step_time_s" => step_time, "fwd_bwd_time_s" => fwd_bwd,
        "tokens" => tokens, "num_devices" => devices, "device_name" => device, "dtype" => dtype,
        "flops_per_token" => fpt,
    )
    .unwrap()
}

fn enrich(c: &mut Criterion) {
    let options = EnrichOptions::new(Resolver::builtin());
    let mut group = c.benchmark_group("enrich_frame");
    for rows in [10_000usize, 200_000] {
        let input = frame(rows);
        group.throughput(Throughput::Elements(rows as u64));
        group.bench_function(format!("{rows}_rows"), |b| {
            b.iter_batched(
                || input.clone(),
                |df| black_box(enrich_frame(df, &options).unwrap().frame.height()),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, enrich);
criterion_main!(benches);
