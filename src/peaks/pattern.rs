//! Device names and table patterns as tokens: how a name is cut (white space and separators, lower-cased)
//! and what a pattern is (whole words, `#` for any number). The matcher ranks entries by these.

use std::fmt;

/// Characters that separate tokens, besides white space.
const SEPARATORS: &[u8] = b"-_[]()/,.:;\"'{}+=*@";

/// [`SEPARATORS`] as a table indexed by ASCII code (a name is cut once per lookup, a character at a time).
const IS_SEPARATOR: [bool; 128] = {
    let mut table = [false; 128];
    let mut i = 0;
    while i < SEPARATORS.len() {
        table[SEPARATORS[i] as usize] = true;
        i += 1;
    }
    table
};

/// Whether `c` separates tokens.
fn is_separator(c: char) -> bool {
    (c.is_ascii() && IS_SEPARATOR[c as usize]) || c.is_whitespace()
}

/// Lower-cases `name` and cuts it into tokens on white space and separators.
pub fn tokenize(name: &str) -> Vec<String> {
    tokens_of(&lowercase(name))
        .into_iter()
        .map(str::to_string)
        .collect()
}

/// `name` lower-cased, in a form whose tokens are `name`'s tokens lower-cased. An ASCII name is lowered
/// whole; any other token by token, since Unicode's lowering looks across a separator (a Greek capital
/// sigma before `.` and a letter is not word-final, before a space it is).
pub(super) fn lowercase(name: &str) -> String {
    if name.is_ascii() {
        name.to_ascii_lowercase()
    } else {
        let tokens: Vec<String> = name
            .split(is_separator)
            .filter(|t| !t.is_empty())
            .map(str::to_lowercase)
            .collect();
        tokens.join(" ")
    }
}

/// The tokens of a name lowered by [`lowercase`] (lowering makes no separators, so they are found again).
pub(super) fn tokens_of(lowered: &str) -> Vec<&str> {
    let mut tokens = Vec::with_capacity(8);
    tokens.extend(lowered.split(is_separator).filter(|t| !t.is_empty()));
    tokens
}

/// The normalised form of a name: its tokens joined by single spaces.
pub fn normalize(name: &str) -> String {
    tokenize(name).join(" ")
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum PatternToken {
    Word(String),
    /// `#`: any token made only of digits (a pod size such as the 8 in `v4-8`).
    Number,
}

/// One pattern of a table entry, such as `h100 pcie` or `v4 #`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    text: String,
    tokens: Vec<PatternToken>,
    /// Written with a leading `!`: the name must be these tokens and nothing else (a bare `v4` is a TPU
    /// environment type; `NeuronCore-v4` is not a TPU).
    whole_name: bool,
}

impl Pattern {
    /// Parses a pattern as written in the table: words separated like a device name; `#` stands for a number;
    /// a leading `!` asks for the whole name.
    pub fn parse(text: &str) -> Result<Pattern, String> {
        let (whole_name, text) = match text.trim_start().strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let tokens: Vec<PatternToken> = text
            .split(is_separator)
            .filter(|t| !t.is_empty())
            .map(|t| {
                if t == "#" {
                    PatternToken::Number
                } else {
                    PatternToken::Word(t.to_lowercase())
                }
            })
            .collect();
        match tokens.first() {
            None => Err(format!("pattern '{text}' has no tokens")),
            Some(PatternToken::Number) => {
                Err(format!("pattern '{text}' must start with a word, not '#'"))
            }
            Some(_) => Ok(Pattern {
                text: format!(
                    "{}{}",
                    if whole_name { "!" } else { "" },
                    tokens
                        .iter()
                        .map(|t| match t {
                            PatternToken::Word(w) => w.as_str(),
                            PatternToken::Number => "#",
                        })
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
                tokens,
                whole_name,
            }),
        }
    }

    /// The pattern in normalised form.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Number of tokens: the pattern's specificity.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    pub(super) fn first_word(&self) -> &str {
        match &self.tokens[0] {
            PatternToken::Word(w) => w,
            PatternToken::Number => unreachable!("parse rejects a leading '#'"),
        }
    }

    pub(super) fn contains_word(&self, word: &str) -> bool {
        self.tokens
            .iter()
            .any(|t| matches!(t, PatternToken::Word(w) if w == word))
    }

    /// Whether all this pattern's tokens occur in `tokens` in order from `start`; `positions` gets where.
    pub(super) fn match_positions(
        &self,
        tokens: &[&str],
        start: usize,
        positions: &mut Vec<usize>,
    ) -> bool {
        positions.clear();
        if self.whole_name && (start != 0 || tokens.len() != self.tokens.len()) {
            return false;
        }
        let mut at = start;
        for pt in &self.tokens {
            let Some(found) = tokens[at..].iter().position(|t| match pt {
                PatternToken::Word(w) => *t == w,
                PatternToken::Number => !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()),
            }) else {
                return false;
            };
            positions.push(at + found);
            at += found + 1;
        }
        true
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenize_splits_on_separators_and_lowercases() {
        assert_eq!(
            tokenize("NVIDIA A100-SXM4-80GB"),
            vec!["nvidia", "a100", "sxm4", "80gb"]
        );
        assert_eq!(
            tokenize("NVIDIA Corporation GH100 [H200 NVL]"),
            vec!["nvidia", "corporation", "gh100", "h200", "nvl"]
        );
        assert_eq!(
            tokenize("AMD Instinct MI250X/MI250"),
            vec!["amd", "instinct", "mi250x", "mi250"]
        );
        assert_eq!(normalize("  a\t_b  (c) "), "a b c");
    }

    #[test]
    fn lowercasing_before_cutting_gives_the_tokens_cutting_first_gives() {
        let cut_then_lower = |name: &str| -> Vec<String> {
            name.split(is_separator)
                .filter(|t| !t.is_empty())
                .map(str::to_lowercase)
                .collect()
        };
        for name in [
            "NVIDIA H100 80GB HBM3",
            "İNTEL GAUDI-2",
            "Straße\u{2003}X1 (ＡＢＣ)",
            "ǅ-Σ/ΣΑΣ_x",
            "ΣΑΣ.x ΟΔΟΣ:Α",
            "\u{0130}\u{0130}.A",
            "  ",
        ] {
            assert_eq!(tokenize(name), cut_then_lower(name), "{name:?}");
        }
    }
}
