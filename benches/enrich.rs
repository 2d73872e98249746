//! The enrich core on an in-memory frame (no file reading or writing): column mapping, one peak resolution
//! per distinct pair, and the arithmetic; and the fast JSONL and CSV readers on in-memory text shaped like
//! gen_logs.py's logs.
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

/// `rows` lines of a gen_logs.py-shaped log, as JSON Lines and as CSV.
fn log_text(rows: usize) -> (String, String) {
    let mut jsonl = String::new();
    let mut csv = String::from("run_id,step,timestamp,loss,learning_rate,step_time_s,fwd_bwd_time_s,tokens,num_devices,device_name,dtype,flops_per_token\n");
    for i in 0..rows {
        let t = 250.0 + (i % 97) as f64 * 0.731_234_567_891;
        let fields = (
            format!("run-7-{:05}", i / 5000),
            i % 5000 + 1,
            1_700_000_000.0 + i as f64 * 263.430_569_729_094_2,
            10.0 / (1.0 + (i % 5000) as f64).sqrt() + 0.001_150_236_729_847,
            t,
            t * 0.755_151_517,
            DEVICES[(i / 5000) % 4],
        );
        jsonl.push_str(&format!(
            "{{\"run_id\":\"{}\",\"step\":{},\"timestamp\":{:?},\"loss\":{:?},\"learning_rate\":0.0003,\"step_time_s\":{:?},\"fwd_bwd_time_s\":{:?},\"tokens\":524288,\"num_devices\":16,\"device_name\":\"{}\",\"dtype\":\"bf16\",\"flops_per_token\":90884901888.0}}\n",
            fields.0, fields.1, fields.2, fields.3, fields.4, fields.5, fields.6
        ));
        csv.push_str(&format!(
            "{},{},{:?},{:?},0.0003,{:?},{:?},524288,16,{},bf16,90884901888.0\n",
            fields.0, fields.1, fields.2, fields.3, fields.4, fields.5, fields.6
        ));
    }
    (jsonl, csv)
}

fn readers(c: &mut Criterion) {
    let (jsonl, csv) = log_text(100_000);
    let mut group = c.benchmark_group("read");
    group.throughput(Throughput::Bytes(jsonl.len() as u64));
    group.bench_function("flat_json_100000_lines", |b| {
        b.iter(|| {
            black_box(
                mfu::read::flat_json::parse(jsonl.as_bytes())
                    .unwrap()
                    .height(),
            )
        })
    });
    group.throughput(Throughput::Bytes(csv.len() as u64));
    group.bench_function("flat_csv_100000_rows", |b| {
        b.iter(|| {
            black_box(
                mfu::read::flat_csv::parse(csv.as_bytes(), b',', 10_000)
                    .unwrap()
                    .height(),
            )
        })
    });
    group.finish();
}

criterion_group!(benches, enrich, readers);
criterion_main!(benches);
