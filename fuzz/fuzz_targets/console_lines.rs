//! Any bytes as a console log through the general reader: every line cleaned and read for named values,
//! then the whole log read into rows. No panic; every row holds the family's step as a number, and a
//! derived step time is positive.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mfu::read::console;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for raw in text.lines() {
        for line in console::clean::clean(raw) {
            let _ = console::pairs::pairs(&line.text);
        }
    }
    let _ = console::detect(&text);
    if let Ok(read) = console::read(&mut &data[..], None, &[], console::Given { num_devices: Some(8.0), ..Default::default() }) {
        for row in 0..read.table.height {
            if let Some(t) = read.table.get("step_time_s", row) {
                assert!(t.is_finite() && t > 0.0, "step_time_s {t}");
            }
        }
    }
});
