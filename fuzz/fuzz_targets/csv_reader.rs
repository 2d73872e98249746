//! Any bytes as CSV, strict and with ragged rows skipped: an error or a frame, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = mfu::read::csv::read_checked(data.to_vec(), b',', false);
    let _ = mfu::read::csv::read_checked(data.to_vec(), b',', true);
});
