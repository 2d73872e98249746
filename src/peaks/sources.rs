//! The legend of the source keys the peak table cites (`S_TT`, `S_LI`, ...): what each document is and
//! where it was read. `sources.csv` beside this file is embedded at build time; it is the project's
//! reference legend (`../shared/reference/sources.md`) as data, so `mfu lookup` and `mfu peaks --sources`
//! can name documents instead of codes.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// The legend as shipped.
pub const SOURCES_CSV: &str = include_str!("sources.csv");

/// What kind of document a source is: how far it is from the chip's maker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    /// The vendor's own datasheet, whitepaper, product page or documentation.
    Vendor,
    /// A third party's copy or report of a vendor's figures (a transcription, a press article).
    Secondary,
    /// Another project's table of peaks (a cross-check: such tables copy each other's mistakes).
    Project,
    /// A measured rate, not a peak.
    Measurement,
}

impl SourceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Vendor => "vendor",
            SourceKind::Secondary => "secondary",
            SourceKind::Project => "project",
            SourceKind::Measurement => "measurement",
        }
    }
}

/// One source key.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct Source {
    /// The key as the table cites it (`S_TT`, `V_NV_H100`).
    pub key: String,
    /// What kind of document it is.
    pub kind: SourceKind,
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

/// Whether a word of a source cell is a legend key (`S_TT`, `V_NV_H100`, `Baseten`).
fn is_key(word: &str) -> bool {
    word.starts_with("S_") || word.starts_with("V_")
}

/// The legend's entries for the keys a source cell cites, each once: vendor documents first, then by
/// kind, each kind in the order cited. A key is a whole word: `S_LV2` is not `S_LV`.
pub fn cited_in(source: &str) -> Vec<&'static Source> {
    let mut cited: Vec<&'static Source> = Vec::new();
    let words = source.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
    for word in words.filter(|w| is_key(w)) {
        if let Some(s) = legend().iter().find(|s| s.key == word) {
            if !cited.iter().any(|c| c.key == s.key) {
                cited.push(s);
            }
        }
    }
    cited.sort_by_key(|s| s.kind);
    cited
}

/// The kind of the best document a source cell cites (vendor before secondary before project before
/// measurement); `None` when it cites no legend key (a user's own table, an unkeyed citation).
pub fn source_kind(source: &str) -> Option<SourceKind> {
    cited_in(source).first().map(|s| s.kind)
}

/// Whether an entry's source cites at least one vendor document.
pub fn cites_vendor(source: &str) -> bool {
    source_kind(source) == Some(SourceKind::Vendor)
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
            for word in words.filter(|w| is_key(w)) {
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
        // Vendor documents come first, whatever the order cited; a measurement last.
        let cited = cited_in("S_ZZ#21; S_TT; V_NV_H100 (dense = sparse / 2); S_ST");
        let keys: Vec<&str> = cited.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(keys, ["V_NV_H100", "S_TT", "S_ST", "S_ZZ"]);
        assert!(cites_vendor("S_TT; V_NV_H100"));
        assert!(!cites_vendor("S_TT; S_ST"));
    }
}
