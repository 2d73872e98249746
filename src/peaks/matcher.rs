//! Device-name matching: word-bounded, most specific first, and able to say why.
//!
//! Substring matching is how trainers hand out wrong denominators ("RTX A1000" → A100, "L40S" → L4,
//! "GH200" → H20). Here a name is cut into whole tokens, and a pattern matches only when all its tokens
//! appear in the name, in order, as whole tokens. Among the entries that match, the one whose pattern has
//! the most tokens wins (`h100 pcie` beats `h100`); a tie between two entries is ambiguous and resolves to
//! nothing. A name that carries a cut-down qualifier (Laptop, Max-Q, "D", lite, Ti, SUPER, MIG) only
//! matches a pattern that names that qualifier too, so a laptop or export part never gets the desktop
//! part's value. A name that carries a product-line marker ("PRO", as in NVIDIA's RTX PRO Blackwell line)
//! only matches a pattern that carries it too, so "RTX PRO 4000 Blackwell SFF" is not the "RTX 4000 SFF"
//! Ada card whose tokens it contains.

// A fast hasher for the few short words looked up per name (SipHash was a tenth of a lookup).
use polars::prelude::PlHashMap;

use super::pattern::{lowercase, tokenize, tokens_of, Pattern};
use super::table::PeakTable;

/// Tokens that turn a product into a weaker variant. A name with one of these only matches a pattern that
/// contains it.
pub const CUT_DOWN_QUALIFIERS: &[&str] = &[
    "laptop", "mobile", "q", "d", "lite", "ti", "super", "mig", "maxq",
];

/// Tokens that name a separate product line. A name with one of these only matches a pattern that contains
/// it; unlike a cut-down qualifier it is not a weaker variant of anything, so a miss is plainly unmatched.
pub const LINE_MARKERS: &[&str] = &["pro"];

/// A successful match and why it won.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// Index of the entry in the table.
    pub entry: usize,
    /// The winning pattern, normalised.
    pub pattern: String,
    /// The name tokens it matched.
    pub matched_tokens: Vec<String>,
    /// Less specific entries that also matched, with their best pattern: what the winner beat.
    pub outranked: Vec<(usize, String)>,
}

/// Why a name resolved to nothing.
#[derive(Debug, Clone, PartialEq)]
pub enum NoMatch {
    /// The name is empty or only separators.
    Empty,
    /// No pattern matched ([`Matcher::suggest`] gives the closest entries by spelling).
    Unmatched,
    /// An entry matched, but the name names a cut-down variant (`qualifier`) that the entry is not.
    CutDown { qualifier: String, entry: usize },
    /// Two or more entries matched equally specifically.
    Ambiguous { entries: Vec<usize> },
}

/// The outcome of matching one device name.
#[derive(Debug, Clone, PartialEq)]
pub enum MatchOutcome {
    Found(Found),
    NotFound(NoMatch),
}

/// Matches names against one table. Build once, then match many names.
#[derive(Debug, Clone)]
pub struct Matcher {
    /// (entry index, pattern), grouped by the pattern's first word.
    by_first_word: PlHashMap<String, Vec<(usize, Pattern)>>,
    /// Every (entry, pattern), for suggestions.
    all: Vec<(usize, Pattern)>,
}

impl Matcher {
    pub fn new(table: &PeakTable) -> Matcher {
        let mut by_first_word: PlHashMap<String, Vec<(usize, Pattern)>> = PlHashMap::default();
        let mut all = Vec::new();
        for (i, entry) in table.entries().iter().enumerate() {
            for p in &entry.patterns {
                by_first_word
                    .entry(p.first_word().to_string())
                    .or_default()
                    .push((i, p.clone()));
                all.push((i, p.clone()));
            }
        }
        Matcher { by_first_word, all }
    }

    /// Matches one device name (not a list: split lists first).
    pub fn find(&self, name: &str) -> MatchOutcome {
        let lowered = lowercase(name);
        let tokens = tokens_of(&lowered);
        if tokens.is_empty() {
            return MatchOutcome::NotFound(NoMatch::Empty);
        }
        let qualifiers: Vec<&str> = tokens
            .iter()
            .copied()
            .filter(|t| CUT_DOWN_QUALIFIERS.contains(t))
            .collect();
        let markers: Vec<&str> = tokens
            .iter()
            .copied()
            .filter(|t| LINE_MARKERS.contains(t))
            .collect();

        // Best pattern per entry: (entry, pattern, the token it matched from). Lookups are the hot path of
        // `mfu lookup` and of every new (device, dtype) pair, so the loop allocates nothing per candidate.
        let mut best: Vec<(usize, &Pattern, usize)> = Vec::with_capacity(4);
        let mut positions = Vec::with_capacity(8);
        let mut cut_down: Option<(&str, usize, usize)> = None;
        for (start, token) in tokens.iter().enumerate() {
            let Some(candidates) = self.by_first_word.get(*token) else {
                continue;
            };
            for (entry, pattern) in candidates {
                if !pattern.match_positions(&tokens, start, &mut positions) {
                    continue;
                }
                if markers.iter().any(|m| !pattern.contains_word(m)) {
                    continue;
                }
                if let Some(q) = qualifiers.iter().find(|q| !pattern.contains_word(q)) {
                    if cut_down
                        .as_ref()
                        .is_none_or(|(_, _, len)| pattern.len() > *len)
                    {
                        cut_down = Some((q, *entry, pattern.len()));
                    }
                    continue;
                }
                match best.iter_mut().find(|(e, _, _)| e == entry) {
                    Some(slot) if slot.1.len() >= pattern.len() => {}
                    Some(slot) => *slot = (*entry, pattern, start),
                    None => best.push((*entry, pattern, start)),
                }
            }
        }
        // A pattern that names the qualifier beats any generic one that was rejected for it; when none does,
        // the cut-down variant stays unknown.
        if best.is_empty() {
            return MatchOutcome::NotFound(match cut_down {
                Some((qualifier, entry, _)) => NoMatch::CutDown {
                    qualifier: qualifier.to_string(),
                    entry,
                },
                None => NoMatch::Unmatched,
            });
        }
        best.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
        let top_len = best[0].1.len();
        if best.get(1).is_some_and(|b| b.1.len() == top_len) {
            let tied = best.iter().filter(|(_, p, _)| p.len() == top_len);
            return MatchOutcome::NotFound(NoMatch::Ambiguous {
                entries: tied.map(|(e, _, _)| *e).collect(),
            });
        }
        let (entry, pattern, start) = best[0];
        pattern.match_positions(&tokens, start, &mut positions);
        MatchOutcome::Found(Found {
            entry,
            pattern: pattern.as_str().to_string(),
            matched_tokens: positions.iter().map(|&i| tokens[i].to_string()).collect(),
            outranked: best[1..]
                .iter()
                .map(|(e, p, _)| (*e, p.as_str().to_string()))
                .collect(),
        })
    }

    /// Up to three entries whose patterns are spelled closest to some run of the name's tokens: what a
    /// person probably meant by a name that matched nothing. Only asked for when explaining, since it
    /// compares the name with every pattern.
    pub fn suggest(&self, name: &str) -> Vec<usize> {
        let tokens = tokenize(name);
        let mut scored: Vec<(usize, usize)> = Vec::new();
        for (entry, pattern) in &self.all {
            let n = pattern.len();
            if n > tokens.len() {
                continue;
            }
            let limit = if pattern.as_str().len() <= 4 { 1 } else { 2 };
            let distance = tokens
                .windows(n)
                .map(|w| levenshtein(&w.join(" "), pattern.as_str()))
                .min()
                .unwrap_or(usize::MAX);
            if distance <= limit {
                match scored.iter_mut().find(|(e, _)| e == entry) {
                    Some(slot) => slot.1 = slot.1.min(distance),
                    None => scored.push((*entry, distance)),
                }
            }
        }
        scored.sort_by_key(|&(e, d)| (d, e));
        scored.into_iter().take(3).map(|(e, _)| e).collect()
    }
}

/// Edit distance between two strings, by characters.
fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(above + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name_of(table: &PeakTable, outcome: &MatchOutcome) -> Option<String> {
        match outcome {
            MatchOutcome::Found(f) => Some(table.entries()[f.entry].name.clone()),
            MatchOutcome::NotFound(_) => None,
        }
    }

    #[test]
    fn specific_beats_general_and_tokens_are_whole() {
        let t = PeakTable::builtin();
        let m = Matcher::new(&t);
        let cases = [
            ("NVIDIA GB200", "GB200"),
            ("NVIDIA B200", "B200"),
            ("NVIDIA GH200 480GB", "GH200"),
            ("NVIDIA H200", "H200 SXM"),
            ("NVIDIA H20", "H20"),
            ("NVIDIA L40S", "L40S"),
            ("NVIDIA L40", "L40"),
            ("NVIDIA L4", "L4"),
            ("NVIDIA H100 NVL", "H100 NVL"),
            ("NVIDIA H100 PCIe", "H100 PCIe"),
            ("NVIDIA H100 80GB HBM3", "H100 SXM5"),
            ("AMD Instinct MI300A", "Instinct MI300A"),
            ("AMD Instinct MI300X", "Instinct MI300X"),
            ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada Generation"),
            ("NVIDIA RTX A6000", "RTX A6000"),
            ("Quadro RTX 6000", "Quadro RTX 6000"),
            ("NVIDIA A10G", "A10G"),
            ("NVIDIA A10", "A10"),
            ("NVIDIA A100-PCIE-40GB", "A100 PCIe"),
            ("NVIDIA Corporation GH100 [H200 NVL]", "H200 NVL"),
            ("TPU v5 lite", "TPU v5e"),
            ("TPU v5", "TPU v5p"),
            ("v5litepod-8", "TPU v5e"),
            ("v4-32", "TPU v4"),
            ("AMD Instinct MI250X/MI250", "Instinct MI250X (GCD)"),
        ];
        for (raw, want) in cases {
            assert_eq!(name_of(&t, &m.find(raw)).as_deref(), Some(want), "{raw}");
        }
    }

    #[test]
    fn cut_down_and_uninformative_names_resolve_to_nothing() {
        let t = PeakTable::builtin();
        let m = Matcher::new(&t);
        for raw in [
            "NVIDIA GeForce RTX 5090 D",
            "NVIDIA GeForce RTX 5090 Laptop GPU",
            "NVIDIA A100-SXM4-80GB MIG 3g.40gb",
            "TPU v4 lite",
            "NVIDIA Graphics Device",
            "AMD Radeon Graphics",
            "NEURON",
            "NVIDIA RTX A1000 Laptop GPU",
            "",
            " - ",
        ] {
            assert_eq!(name_of(&t, &m.find(raw)), None, "{raw}");
        }
        match m.find("NVIDIA GeForce RTX 5090 D") {
            MatchOutcome::NotFound(NoMatch::CutDown { qualifier, entry }) => {
                assert_eq!(qualifier, "d");
                assert_eq!(t.entries()[entry].name, "GeForce RTX 5090");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn explains_the_win_and_suggests_near_misses() {
        let t = PeakTable::builtin();
        let m = Matcher::new(&t);
        match m.find("NVIDIA H100 PCIe") {
            MatchOutcome::Found(f) => {
                assert_eq!(f.pattern, "h100 pcie");
                assert_eq!(f.matched_tokens, vec!["h100", "pcie"]);
                assert_eq!(f.outranked.len(), 1);
                assert_eq!(t.entries()[f.outranked[0].0].name, "H100 SXM5");
            }
            other => panic!("{other:?}"),
        }
        match m.find("NVIDIA H1000") {
            MatchOutcome::NotFound(NoMatch::Unmatched) => {
                let names: Vec<_> = m
                    .suggest("NVIDIA H1000")
                    .iter()
                    .map(|&i| t.entries()[i].name.as_str())
                    .collect();
                assert!(names.contains(&"H100 SXM5"), "{names:?}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ties_between_entries_are_ambiguous() {
        let mut t = PeakTable::builtin();
        t.apply_csv(
            "vendor,name,form_factor,patterns,fp64_tflops,fp32_tflops,tf32_tflops,bf16_tflops,fp16_tflops,fp8_tflops,int8_tflops,source,note\nAcme,Twin,card,h100,,,,1,,,,s,\n",
            "twin.csv",
        )
        .unwrap();
        let m = Matcher::new(&t);
        assert!(matches!(
            m.find("NVIDIA H100"),
            MatchOutcome::NotFound(NoMatch::Ambiguous { .. })
        ));
    }

    #[test]
    fn pattern_parse_rejects_empty_and_leading_number() {
        assert!(Pattern::parse("  ").is_err());
        assert!(Pattern::parse("# x").is_err());
        assert_eq!(Pattern::parse("V4-#").unwrap().as_str(), "v4 #");
    }

    #[test]
    fn levenshtein_counts_edits() {
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(levenshtein("", "abc"), 3);
        assert_eq!(levenshtein("a100", "a1000"), 1);
    }
}
