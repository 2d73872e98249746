//! Any text as a precision spelling: reading it must not panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = mfu::peaks::parse_precision(&text);
    let _ = text.parse::<mfu::peaks::Dtype>();
});
