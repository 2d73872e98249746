//! Any bytes as configuration printed in or beside a log (YAML, dicts, Namespace(...), argument dumps,
//! command lines): no panic, and every fact it gives is a positive finite number or a precision mfu
//! names.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mfu::columns::FactValue;
use mfu::read::console::facts::ConfigFacts;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut facts = ConfigFacts::default();
    facts.read_text(&text, "line", &|_| false);
    for fact in facts.run_facts() {
        match &fact.value {
            FactValue::Number(n) => assert!(n.is_finite() && *n > 0.0, "{fact:?}"),
            FactValue::Text(t) => assert!(!t.is_empty(), "{fact:?}"),
        }
    }
    let _ = facts.model();
});
