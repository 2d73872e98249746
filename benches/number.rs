//! The fast readers' number parser (src/read/number.rs) side by side with the maintained crate that
//! could replace it (`fast-float2`) and the standard library, on numbers as trainers print them: Python's
//! shortest round-trip floats (17 significant digits), short decimals, integers and exponents, as in
//! gen_logs.py's logs. All three give the same bits (checked before timing).
//! Run: cargo bench --bench number

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};

fn corpus() -> Vec<String> {
    let mut out = Vec::new();
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    for i in 0..20_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let f = (x >> 11) as f64 / (1u64 << 53) as f64;
        out.push(match i % 6 {
            0 => format!("{}", 1.7e9 + f * 1e6),    // timestamps
            1 => format!("{}", 10.0 * f),           // losses, 16-17 digits
            2 => format!("{}", (f * 1e6) as u64),   // counters
            3 => format!("{:.4}", f * 3.0),         // rounded
            4 => format!("{:e}", f * 1e-4),         // learning rates
            _ => format!("{}", 9.0e10 * (1.0 + f)), // FLOPs per token
        });
    }
    out
}

fn numbers(c: &mut Criterion) {
    let corpus = corpus();
    for s in &corpus {
        let ours = mfu::read::bench_parse_f64(s).unwrap();
        let theirs: f64 = fast_float2::parse(s).unwrap();
        let std: f64 = s.parse().unwrap();
        assert_eq!(ours.to_bits(), theirs.to_bits(), "{s}");
        assert_eq!(ours.to_bits(), std.to_bits(), "{s}");
    }
    let mut group = c.benchmark_group("parse_f64");
    group.throughput(Throughput::Elements(corpus.len() as u64));
    group.bench_function("mfu", |b| {
        b.iter(|| {
            corpus
                .iter()
                .map(|s| mfu::read::bench_parse_f64(black_box(s)).unwrap())
                .sum::<f64>()
        })
    });
    group.bench_function("fast_float2", |b| {
        b.iter(|| {
            corpus
                .iter()
                .map(|s| fast_float2::parse::<f64, _>(black_box(s)).unwrap())
                .sum::<f64>()
        })
    });
    group.bench_function("std", |b| {
        b.iter(|| {
            corpus
                .iter()
                .map(|s| black_box(s).parse::<f64>().unwrap())
                .sum::<f64>()
        })
    });
    group.finish();
}

criterion_group!(benches, numbers);
criterion_main!(benches);
