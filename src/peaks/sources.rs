//! The legend of the source keys the peak table cites (`S_TT`, `S_LI`, ...): what each document is and
//! where it was read. `sources.csv` beside this file is embedded at build time; it is the project's
//! reference legend (`../shared/reference/sources.md`) as data, so `mfu lookup` and `mfu peaks --sources`
//! can name documents instead of codes.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// The legend as shipped.
pub const SOURCES_CSV: &str = include_str!("sources.csv");

/// One source key.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct Source {
    /// The key as the table cites it (`S_TT`).
    pub key: String,
    /// What the document is.
    pub what: String,
    /// Where it was read (repository and path at a commit, a documentation site, issue threads).
    #[serde(rename = "where")]
    pub location: String,
}

/// Every key of the legend, in its order.
pub fn legend() -> &'static [Source] {
    static LEGEND: OnceLock<Vec<Source>> = OnceLock::new();
    LEGEND.get_or_init(|| {
        csv::Reader::from_reader(SOURCES_CSV.as_bytes())
            .deserialize()
            .collect::<Result<_, _>>()
            .expect("the embedded legend is checked by the test suite")
    })
}

/// The legend's entries for the keys a source cell cites, each once, in the order cited. A key is a whole
/// word: `S_LV2` is not `S_LV`.
pub fn cited_in(source: &str) -> Vec<&'static Source> {
    let mut cited: Vec<&'static Source> = Vec::new();
    let words = source.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
    for word in words.filter(|w| w.starts_with("S_")) {
        if let Some(s) = legend().iter().find(|s| s.key == word) {
            if !cited.iter().any(|c| c.key == s.key) {
                cited.push(s);
            }
        }
    }
    cited
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peaks::PeakTable;

    #[test]
    fn every_key_the_table_cites_is_in_the_legend() {
        assert!(legend().len() >= 17);
        for entry in PeakTable::builtin().entries() {
            let words = entry
                .source
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
            for word in words.filter(|w| w.starts_with("S_")) {
                assert!(
                    legend().iter().any(|s| s.key == word),
                    "{}: '{word}' is not in sources.csv",
                    entry.name
                );
            }
        }
    }

    #[test]
    fn keys_are_whole_words_and_cited_once() {
        let cited = cited_in("S_LV2 (LLM-Viewer); S_LV; S_LV ('tpu v3')");
        let keys: Vec<&str> = cited.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(keys, ["S_LV2", "S_LV"]);
        assert!(cited[1].what.contains("Levanter"), "{:?}", cited[1]);
        assert!(cited_in("derived: chip/2").is_empty());
    }
}
