//! The device matcher and the precision reader on the spellings frameworks print.
//! Run: cargo bench --bench matcher

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use mfu::peaks::{parse_precision, MatchOutcome, Matcher, PeakTable, Resolver};

const NAMES: &[&str] = &[
    "NVIDIA H100 80GB HBM3",
    "NVIDIA A100-SXM4-80GB",
    "NVIDIA GeForce RTX 4090",
    "NVIDIA L40S",
    "Tesla V100-SXM2-16GB",
    "AMD Instinct MI300X",
    "AMD Instinct MI250X/MI250",
    "TPU v5 lite",
    "NVIDIA Corporation GH100 [H200 NVL]",
    "NVIDIA GeForce RTX 5090 Laptop GPU",
    "Acme Tensor Engine X9",
    "GAUDI2",
];

const SPELLINGS: &[&str] = &[
    "bf16",
    "torch.bfloat16",
    "bf16-mixed",
    "16-mixed",
    "32-true",
    "fp8",
    "float16",
    "no",
    "tf32",
    "amp_bf16",
    "bogus",
];

fn matcher(c: &mut Criterion) {
    let table = PeakTable::builtin();
    let matcher = Matcher::new(&table);
    let mut group = c.benchmark_group("matcher");
    group.throughput(Throughput::Elements(NAMES.len() as u64));
    group.bench_function("find", |b| {
        b.iter(|| {
            for name in NAMES {
                let found = matches!(matcher.find(black_box(name)), MatchOutcome::Found(_));
                black_box(found);
            }
        })
    });
    let resolver = Resolver::builtin();
    group.bench_function("resolve_with_dtype", |b| {
        b.iter(|| {
            for name in NAMES {
                black_box(resolver.resolve(Some(black_box(name)), Some("bf16-mixed")));
            }
        })
    });
    group.finish();

    let mut group = c.benchmark_group("precision");
    group.throughput(Throughput::Elements(SPELLINGS.len() as u64));
    group.bench_function("parse_precision", |b| {
        b.iter(|| {
            for s in SPELLINGS {
                black_box(parse_precision(black_box(s)));
            }
        })
    });
    group.finish();
}

criterion_group!(benches, matcher);
criterion_main!(benches);
