//! Any bytes as a device name and precision: resolving must not panic, and a peak is never infinite,
//! negative or zero.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mfu::peaks::Resolver;

fuzz_target!(|data: &[u8]| {
    static RESOLVER: OnceLock<Resolver> = OnceLock::new();
    let resolver = RESOLVER.get_or_init(Resolver::builtin);
    let text = String::from_utf8_lossy(data);
    let (device, dtype) = text.split_once('\t').unwrap_or((&text, "bf16"));
    let r = resolver.resolve(Some(device), Some(dtype));
    if let Some(p) = r.peak {
        assert!(p.is_finite() && p > 0.0);
        assert!(r.device.is_some());
    }
});
