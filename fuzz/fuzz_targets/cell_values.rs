//! Any text as a numeric cell or a duration: no panic, and a duration is finite and not negative.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = mfu::values::parse_cell(&text);
    if let Some(seconds) = mfu::values::parse_duration(&text) {
        assert!(seconds.is_finite() && seconds >= 0.0, "{text:?} -> {seconds}");
    }
});
