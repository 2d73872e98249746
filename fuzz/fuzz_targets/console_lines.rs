//! Any bytes as a console log through the general reader: every line cleaned and read for named values,
//! then the whole log read into rows. No panic; every row holds the family's step as a number, and a
//! derived step time is positive; the log cut into blocks of one line reads as in one block. Built with
//! debug assertions (`cargo fuzz build -a`), every line read through a template is also read the general
//! way and compared.
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
    let given = console::Given { num_devices: Some(8.0), ..Default::default() };
    let whole = console::read(&mut &data[..], None, &[], given);
    let cut = console::read_in_blocks(&mut &data[..], None, &[], given, 1);
    match (&whole, &cut) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.table, b.table);
            assert_eq!(a.notes, b.notes);
            assert_eq!(a.facts, b.facts);
        }
        (Err(a), Err(b)) => assert_eq!(a, b),
        _ => panic!("read whole and in blocks differ: {whole:?} / {cut:?}"),
    }
    // A step time the reader derived (a log may write its own `step_time_s`, zero included).
    if let Some(read) = whole.ok().filter(|r| r.notes.iter().any(|n| n.starts_with("step_time_s = "))) {
        for row in 0..read.table.height {
            if let Some(t) = read.table.get("step_time_s", row) {
                assert!(t.is_finite() && t > 0.0, "step_time_s {t}");
            }
        }
    }
});
