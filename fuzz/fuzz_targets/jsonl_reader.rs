//! Any bytes as JSON Lines, strict and with bad lines skipped: an error or a frame, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = mfu::read::jsonl::read_checked(data.to_vec(), false);
    if let Ok(r) = mfu::read::jsonl::read_checked(data.to_vec(), true) {
        assert!(r.rejects.iter().all(|x| x.line >= 1));
    }
});
