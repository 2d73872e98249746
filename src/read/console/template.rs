//! The fast path of the general reader: a training line read by the shape of the lines before it.
//!
//! A log's training lines differ from step to step only in their digits (and in the spaces that pad
//! them): `step:  10  loss:  2.3401  tps: 6,912` and `step:  11  loss:  2.3388  tps: 6,917` have one
//! *skeleton*, the line with each run of digits written as one marker byte and each run of spaces as one
//! space. The first line of a skeleton is read by the general path ([`super::pairs::pairs`]), which
//! says where in the line each number was read from; that makes the skeleton's [`Template`]. Every
//! later line with the same skeleton is read through it: the text of each number is found from the
//! positions of its digit runs and decoded by the same tokenizer the general path uses
//! ([`super::pairs::next_token`]), which must read it whole and with the same unit, else the line goes
//! the general way. Digits outside the numbers (in a key such as `loss/2`, a colour code, a word) must
//! be the same as the template's. In debug builds every line read through a template is also read the
//! general way and the two compared, so the tests and the fuzz targets hold the fast path to it.
//!
//! The same templates read raw lines too (`RawTemplate` in `mod.rs`: the line before cleaning, its
//! timestamp's digit runs read as its wall time), and an [`Exemplar`] matches most lines of a skeleton
//! in one masked compare with the line before.
//!
//! Measured on a 256 MiB cut of the torchtitan-style log of `benches/console.sh` (release build, the
//! 2-core machine): `mfu enrich` took 5.97 s with every line read the general way, 1.54 s with
//! templates over cleaned lines and streaming, 0.86 s with raw templates and exemplars
//! (docs/performance.md has each step).

use super::pairs::{next_token, Pair, Token, Value};

/// The skeleton of `text` into `shape` (digit runs as 0xFF, space runs as one space) and the byte
/// ranges of its digit runs into `runs`.
pub fn skeleton(text: &str, shape: &mut Vec<u8>, runs: &mut Vec<(usize, usize)>) {
    shape.clear();
    runs.clear();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            runs.push((start, i));
            shape.push(0xFF);
        } else if c == b' ' {
            while i < b.len() && b[i] == b' ' {
                i += 1;
            }
            shape.push(b' ');
        } else {
            shape.push(c);
            i += 1;
        }
    }
}

/// A skeleton as the parts a line of it is matched against: runs of literal bytes, digits, spaces.
#[derive(Debug, Clone)]
pub struct Shape {
    bytes: Vec<u8>,
    parts: Vec<Part>,
}

#[derive(Debug, Clone, Copy)]
enum Part {
    /// The skeleton's bytes in this range, to be the line's.
    Literal(usize, usize),
    Digits,
    Spaces,
}

impl Shape {
    /// The parts of the skeleton `shape` (made by [`skeleton`]).
    pub fn new(shape: &[u8]) -> Shape {
        let mut parts = Vec::new();
        let mut i = 0;
        while i < shape.len() {
            match shape[i] {
                0xFF => parts.push(Part::Digits),
                b' ' => parts.push(Part::Spaces),
                _ => {
                    let start = i;
                    while i + 1 < shape.len() && !matches!(shape[i + 1], 0xFF | b' ') {
                        i += 1;
                    }
                    parts.push(Part::Literal(start, i + 1));
                }
            }
            i += 1;
        }
        Shape {
            bytes: shape.to_vec(),
            parts,
        }
    }

    /// Whether `text` has this skeleton; if so its digit runs are in `runs`. One pass with no hashing
    /// or copying: most lines have the skeleton of the line before them.
    pub fn matches(&self, text: &str, runs: &mut Vec<(usize, usize)>) -> bool {
        runs.clear();
        let b = text.as_bytes();
        let mut i = 0;
        for part in &self.parts {
            match *part {
                Part::Literal(from, to) => {
                    let literal = &self.bytes[from..to];
                    let Some(here) = b.get(i..i + literal.len()) else {
                        return false;
                    };
                    // Byte by byte: most literals are a few bytes (`: `, `GiB(`), too short for a
                    // call to memcmp to pay.
                    if here.iter().zip(literal).any(|(x, y)| x != y) {
                        return false;
                    }
                    i += literal.len();
                }
                Part::Digits => {
                    let start = i;
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                    if i == start {
                        return false;
                    }
                    runs.push((start, i));
                }
                Part::Spaces => {
                    let start = i;
                    while i < b.len() && b[i] == b' ' {
                        i += 1;
                    }
                    if i == start {
                        return false;
                    }
                }
            }
        }
        i == b.len()
    }
}

/// The last line a template read, kept to match the next one quickly: a line of the same length whose
/// bytes are the exemplar's everywhere but in the digits of its numbers, and digits there, has the
/// exemplar's skeleton and its digit runs at the same places (runs are maximal, and each varying run
/// is bounded by bytes that are the exemplar's, which are no digits), and the template's literal
/// digits. One pass of a few instructions a byte, which the compiler vectorises, instead of
/// [`Shape::matches`]'s branch per part: most lines of a log are the width of the line before.
#[derive(Debug, Default)]
pub struct Exemplar {
    bytes: Vec<u8>,
    /// 0xFF where a line's byte must be the exemplar's, 0 in the digits of a number.
    fixed: Vec<u8>,
    runs: Vec<(usize, usize)>,
}

impl Exemplar {
    /// Keeps `text` (its digit runs `runs`, those that vary from line to line as `varies` says).
    pub fn set(&mut self, text: &str, runs: &[(usize, usize)], varies: impl Fn(usize) -> bool) {
        self.bytes.clear();
        self.bytes.extend_from_slice(text.as_bytes());
        self.fixed.clear();
        self.fixed.resize(text.len(), 0xFF);
        for (r, &(a, b)) in runs.iter().enumerate() {
            if varies(r) {
                self.fixed[a..b].fill(0);
            }
        }
        self.runs.clear();
        self.runs.extend_from_slice(runs);
    }

    /// Whether `text` is the exemplar but for the digits of its numbers (and so has its digit runs).
    pub fn matches(&self, text: &str) -> bool {
        let b = text.as_bytes();
        if b.len() != self.bytes.len() || b.is_empty() {
            return false;
        }
        let (mut differ, mut not_digit) = (0u8, 0u8);
        for ((x, e), f) in b.iter().zip(&self.bytes).zip(&self.fixed) {
            differ |= (x ^ e) & f;
            not_digit |= u8::from(x.wrapping_sub(b'0') > 9) & !f;
        }
        differ == 0 && not_digit == 0
    }

    /// The digit runs of the exemplar, and of a line that [`Exemplar::matches`] it.
    pub fn runs(&self) -> &[(usize, usize)] {
        &self.runs
    }
}

/// A number read through a template: its value and the total of an `N/M` counter (`None` for a pair
/// whose value never varies).
pub type Read = Option<(f64, Option<f64>)>;

/// Where a varying number is in a line of the template's skeleton, and what its token must be.
#[derive(Debug)]
struct Slot {
    /// Its first and last digit runs.
    first: usize,
    last: usize,
    /// The bytes of its text before its first run and after its last (`[`, `-`; `GiB(`, `%)`).
    before: usize,
    after: usize,
    /// The unit its token carries (before a unit word after it, such as `ms`, is applied).
    unit: Box<str>,
    total: bool,
    finite: bool,
    /// A plain number (`12`, `-0.25`, `70,660`, `35.13` of `35.13GiB`): read from its runs directly.
    plain: Option<Plain>,
}

/// Powers of ten exactly representable as `f64`.
const POWERS_OF_TEN: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// How a plain number is written: its integer part in `groups` digit runs (`70,660` is two, joined by
/// thousands commas), maybe a fraction run, maybe a minus sign.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Plain {
    groups: usize,
    fraction: bool,
    negative: bool,
}

impl Plain {
    /// The digit runs it is written in.
    fn runs(&self) -> usize {
        self.groups + usize::from(self.fraction)
    }
}

/// Whether the number read from `text` at the digit runs from `first` is plain: its digits (an integer
/// part, maybe in thousands groups, and maybe a fraction) are all it is, with no exponent or total, so
/// that it can be read from its runs.
fn plain_number(text: &str, runs: &[(usize, usize)], first: usize, before: usize) -> Option<Plain> {
    let bytes = text.as_bytes();
    let (a, b) = runs[first];
    // `.5` is a fraction whose integer part is not written: not plain.
    if a > 0 && bytes[a - 1] == b'.' {
        return None;
    }
    // A sign is the number's only inside its text (`-1.5`, not the `-` of `step-10`).
    let signed = before > 0 && matches!(bytes[a - 1], b'-' | b'+');
    let negative = signed && bytes[a - 1] == b'-';
    let start = a - usize::from(signed);
    let (_, used) = super::pairs::leading_number(&text[start..])?;
    let end = start + used;
    // Thousands groups: `,` and three digits, after one to three.
    let (mut groups, mut integer_end) = (1, b);
    if b - a <= 3 {
        while let Some(&(c, d)) = runs.get(first + groups) {
            if !(c == integer_end + 1 && bytes[integer_end] == b',' && d - c == 3) {
                break;
            }
            groups += 1;
            integer_end = d;
        }
    }
    let fraction = runs
        .get(first + groups)
        .is_some_and(|&(c, d)| c == integer_end + 1 && bytes[integer_end] == b'.' && end == d);
    if !(fraction || end == integer_end) || text[end..].starts_with([',', '.', 'e', 'E']) {
        return None;
    }
    Some(Plain {
        groups,
        fraction,
        negative,
    })
}

/// The value of a plain number from its runs: the integer of its digits over the power of ten of its
/// fraction, both exact in `f64` up to 15 digits, so one correctly rounded division gives what
/// `str::parse` gives; `None` for longer numbers, and for thousands groups the tokenizer would not read
/// as one (a first group of more than three digits, a later one of other than three).
fn plain_value(text: &[u8], runs: &[(usize, usize)], first: usize, plain: Plain) -> Option<f64> {
    let integer = &runs[first..first + plain.groups];
    if plain.groups > 1
        && (integer[0].1 - integer[0].0 > 3 || integer[1..].iter().any(|(a, b)| b - a != 3))
    {
        return None;
    }
    let fraction = if plain.fraction {
        runs[first + plain.groups]
    } else {
        (0, 0)
    };
    let digits: usize = integer.iter().map(|(a, b)| b - a).sum::<usize>() + fraction.1 - fraction.0;
    if digits > 15 {
        return None;
    }
    let mut m: u64 = 0;
    for &(a, b) in integer.iter().chain(std::iter::once(&fraction)) {
        for &digit in &text[a..b] {
            m = m * 10 + u64::from(digit - b'0');
        }
    }
    let value = m as f64 / POWERS_OF_TEN[fraction.1 - fraction.0];
    Some(if plain.negative { -value } else { value })
}

/// How the lines of one skeleton are read.
#[derive(Debug)]
pub struct Template {
    /// The pairs of the line that made it; a number that varies has a slot.
    pub pairs: Vec<Pair<'static>>,
    slots: Vec<Option<Slot>>,
    /// Digit runs that are not part of a number, and their text.
    literal: Vec<(usize, Box<str>)>,
}

/// The offset of `part` in `text`, where `part` is a slice of it.
fn offset_in(text: &str, part: &str) -> Option<usize> {
    let start = (part.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    (start + part.len() <= text.len()).then_some(start)
}

impl Template {
    /// The template of `text` (a cleaned line whose skeleton's digit runs are `runs`) from the pairs the
    /// general path read from it; `None` where a number's text cannot be found again from its runs.
    pub fn new(text: &str, runs: &[(usize, usize)], pairs: &[Pair<'_>]) -> Option<Template> {
        let mut covered = vec![false; runs.len()];
        let mut slots = Vec::with_capacity(pairs.len());
        for pair in pairs {
            let (Value::Number { value, total, .. }, Some(source)) = (&pair.value, pair.source)
            else {
                slots.push(None);
                continue;
            };
            let start = offset_in(text, source)?;
            let end = start + source.len();
            if runs
                .iter()
                .any(|&(a, b)| (a < start && start < b) || (a < end && end < b))
            {
                return None;
            }
            let inside: Vec<usize> = (0..runs.len())
                .filter(|&r| runs[r].0 >= start && runs[r].1 <= end)
                .collect();
            let (Some(&first), Some(&last)) = (inside.first(), inside.last()) else {
                slots.push(None); // `nan`: no digits, the same in every line of the skeleton
                continue;
            };
            let (head, tail) = (&text[start..runs[first].0], &text[runs[last].1..end]);
            if head.contains(' ') || tail.contains(' ') {
                return None;
            }
            let Some(Token::Number(_, unit, _, read)) = next_token(source).0 else {
                return None;
            };
            if read.len() != source.len() {
                return None;
            }
            covered[first..=last].fill(true);
            slots.push(Some(Slot {
                first,
                last,
                before: head.len(),
                after: tail.len(),
                unit: unit.into(),
                total: total.is_some(),
                finite: value.is_finite(),
                // Plain only where its runs give the value the tokenizer read, bit for bit, and
                // every other digit of its text is in the note after its unit, which the tokenizer
                // passes over (`(92.83%)` of `29.11GiB(92.83%)`): a digit in its unit (`2fp4`) is
                // text that must be read.
                plain: plain_number(text, runs, first, head.len()).filter(|plain| {
                    let number_end = runs[first + plain.runs() - 1].1;
                    let unit_end = number_end + unit.len();
                    let in_note = |r: &(usize, usize)| {
                        text[number_end..].starts_with(unit)
                            && text.as_bytes().get(unit_end) == Some(&b'(')
                            && r.0 > unit_end
                    };
                    runs[first + plain.runs()..=last].iter().all(in_note)
                        && total.is_none()
                        && plain_value(text.as_bytes(), runs, first, *plain)
                            .is_some_and(|v| v.to_bits() == value.to_bits())
                }),
            }));
        }
        let literal = (0..runs.len())
            .filter(|r| !covered[*r])
            .map(|r| (r, text[runs[r].0..runs[r].1].into()))
            .collect();
        Some(Template {
            pairs: pairs.iter().cloned().map(Pair::into_owned).collect(),
            slots,
            literal,
        })
    }

    /// Lets the digit runs `runs` vary (a raw line's timestamp): false, and nothing changed, unless
    /// each of them is outside every number.
    pub fn free(&mut self, runs: std::ops::Range<usize>) -> bool {
        let free = self
            .literal
            .iter()
            .filter(|(r, _)| runs.contains(r))
            .count();
        if free != runs.len() {
            return false;
        }
        self.literal.retain(|(r, _)| !runs.contains(r));
        true
    }

    /// The numbers of `text` (a line of this template's skeleton, its digit runs `runs`), pair by pair
    /// (`None` for a pair whose value never varies), into `values`; false where the line must be read
    /// the general way.
    pub fn read(&self, text: &str, runs: &[(usize, usize)], values: &mut Vec<Read>) -> bool {
        for (r, digits) in &self.literal {
            if text.get(runs[*r].0..runs[*r].1) != Some(digits) {
                return false;
            }
        }
        self.read_numbers(text, runs, values)
    }

    /// Whether digit run `run` is outside every number (and so the same in every line it reads).
    pub fn is_literal(&self, run: usize) -> bool {
        self.literal.iter().any(|(r, _)| *r == run)
    }

    /// [`Template::read`] of a line whose literal digits are known to be the template's (one that
    /// matched an [`Exemplar`] of it).
    pub fn read_numbers(
        &self,
        text: &str,
        runs: &[(usize, usize)],
        values: &mut Vec<Read>,
    ) -> bool {
        values.clear();
        for slot in &self.slots {
            let Some(slot) = slot else {
                values.push(None);
                continue;
            };
            if let Some(value) = slot
                .plain
                .and_then(|plain| plain_value(text.as_bytes(), runs, slot.first, plain))
            {
                values.push(Some((value, None)));
                continue;
            }
            let Some(start) = runs[slot.first].0.checked_sub(slot.before) else {
                return false;
            };
            let Some(word) = text.get(start..runs[slot.last].1 + slot.after) else {
                return false;
            };
            match next_token(word).0 {
                Some(Token::Number(value, unit, total, read))
                    if read.len() == word.len()
                        && unit.as_bytes().iter().eq(slot.unit.as_bytes())
                        && total.is_some() == slot.total
                        && value.is_finite() == slot.finite =>
                {
                    values.push(Some((value, total)));
                }
                _ => return false,
            }
        }
        true
    }

    /// The pairs of a line read through the template, from its `values`.
    pub fn pairs_of(&self, values: &[Read]) -> Vec<Pair<'static>> {
        self.pairs
            .iter()
            .zip(values)
            .map(|(pair, value)| {
                let mut pair = pair.clone();
                if let (
                    Value::Number {
                        value: v, total, ..
                    },
                    Some((new, new_total)),
                ) = (&mut pair.value, value)
                {
                    *v = *new;
                    *total = *new_total;
                }
                pair
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_through(first: &str, next: &str) -> Option<Vec<Pair<'static>>> {
        let (mut shape, mut runs) = (Vec::new(), Vec::new());
        skeleton(first, &mut shape, &mut runs);
        let template = Template::new(first, &runs, &super::super::pairs::pairs(first))?;
        let first_shape = shape.clone();
        skeleton(next, &mut shape, &mut runs);
        assert_eq!(shape, first_shape, "one skeleton");
        let mut matched = Vec::new();
        assert!(Shape::new(&first_shape).matches(next, &mut matched));
        assert_eq!(matched, runs);
        let mut values = Vec::new();
        template
            .read(next, &runs, &mut values)
            .then(|| template.pairs_of(&values))
    }

    fn general(line: &str) -> Vec<Pair<'static>> {
        super::super::pairs::pairs(line)
            .into_iter()
            .map(Pair::into_owned)
            .collect()
    }

    #[test]
    fn a_line_of_one_skeleton_reads_as_the_general_path_reads_it() {
        for (first, next) in [
            (
                "step:  10  loss:  2.3401  memory: 29.11GiB(92.83%)  tps: 6,912  mfu: 15.39%",
                "step: 123  loss: 12.3388  memory: 9.1GiB(2.8%)  tps: 16,917  mfu: 5.4%",
            ),
            (
                "iteration       10/     100 | elapsed time per iteration (ms): 1234.5 | lr: 1.2E-05 |",
                "iteration      110/     100 | elapsed time per iteration (ms): 99.5 | lr: 3.4E-05 |",
            ),
            (
                "{'loss': 2.1, 'grad_norm': [0.5], 'step': 3}",
                "{'loss': 12.75, 'grad_norm': [10.25], 'step': 30}",
            ),
            ("step 10 | 123.45 ms | 456 tok/s", "step 11 | 3.4 ms | 4567 tok/s"),
            ("step=1 loss/2=0.5 lr=-1.5e-3", "step=2 loss/2=0.25 lr=-2.5e-3"),
            // A fraction with no integer part (found by the console_lines fuzz target).
            ("step: 1 loss: .1111lit", "step: 2 loss: .1911lit"),
        ] {
            assert_eq!(read_through(first, next), Some(general(next)), "{next}");
        }
    }

    #[test]
    fn a_line_the_template_cannot_read_whole_goes_the_general_way() {
        // The key's digit differs; a comma that is no longer a thousands separator.
        assert_eq!(read_through("step=1 loss/2=0.5", "step=1 loss/3=0.5"), None);
        assert_eq!(
            read_through("step: 1 tps: 70,660", "step: 1 tps: 70,66"),
            None
        );
        // A first group too long to be one: the tokenizer reads 1170 and stops.
        assert_eq!(
            read_through("step: 1 tps: 70,660", "step: 1 tps: 1170,660"),
            None
        );
        // A note after the unit is passed over, a number in it not read: the note's digits are free.
        assert_eq!(
            read_through("step: 1 mem: 2.5GiB(9.5%)", "step: 2 mem: 3.5GiB(19.25%)"),
            Some(general("step: 2 mem: 3.5GiB(19.25%)"))
        );
        // A unit with a digit: the number's own runs are not all its text (found by the
        // console_lines fuzz target).
        assert_eq!(read_through("step: 1 it 2fp4/", "step: 1 it 2fp8/"), None);
    }

    #[test]
    fn a_plain_number_reads_as_str_parse_reads_it() {
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..200_000 {
            let int_len = (next() % 8 + 1) as usize;
            let frac_len = (next() % 8) as usize;
            let digits = |n: usize, r: u64| -> String {
                (0..n)
                    .map(|i| char::from(b'0' + ((r >> (i * 4)) % 10) as u8))
                    .collect()
            };
            let mut int = digits(int_len, next());
            // Thousands groups, the way `{:,}` writes them.
            if next() % 3 == 0 {
                let (head, tail) = int.split_at(int.len() % 3);
                let mut grouped = head.to_string();
                for group in tail.as_bytes().chunks(3) {
                    if !grouped.is_empty() {
                        grouped.push(',');
                    }
                    grouped.push_str(std::str::from_utf8(group).unwrap());
                }
                int = grouped;
            }
            let text = if frac_len > 0 {
                format!("x -{int}.{}s", digits(frac_len, next()))
            } else {
                format!("x -{int}s")
            };
            let mut runs = Vec::new();
            skeleton(&text, &mut Vec::new(), &mut runs);
            let plain = plain_number(&text, &runs, 0, 1).expect("plain");
            let expected: f64 = text[2..text.len() - 1].replace(',', "").parse().unwrap();
            let (token, _) = super::super::pairs::leading_number(&text[2..]).unwrap();
            assert_eq!(token.to_bits(), expected.to_bits(), "{text}");
            let got = plain_value(text.as_bytes(), &runs, 0, plain).unwrap();
            assert_eq!(got.to_bits(), expected.to_bits(), "{text}");
        }
        // Sixteen digits and more go the general way.
        let text = "x 1234567890.123456";
        let mut runs = Vec::new();
        skeleton(text, &mut Vec::new(), &mut runs);
        let plain = plain_number(text, &runs, 0, 0).expect("plain");
        assert_eq!(plain_value(text.as_bytes(), &runs, 0, plain), None);
        // Exponents, and commas that are no thousands groups, are not plain.
        for text in ["x 1234,567", "x 1,23", "x 1.5e3", "x 12.5.3"] {
            let mut runs = Vec::new();
            skeleton(text, &mut Vec::new(), &mut runs);
            assert_eq!(plain_number(text, &runs, 0, 0), None, "{text}");
        }
    }

    #[test]
    fn a_line_of_another_skeleton_does_not_match() {
        let (mut shape, mut runs) = (Vec::new(), Vec::new());
        skeleton("step: 10  loss: 2.5", &mut shape, &mut runs);
        for other in [
            "step: 10  loss: 2.5x",
            "step: 10 loss: 2",
            "step:10  loss: 2.5",
            "step: 10  loss: 2.5 ",
        ] {
            let mut matched = Vec::new();
            let mut own = Vec::new();
            skeleton(other, &mut own, &mut Vec::new());
            assert_eq!(
                Shape::new(&shape).matches(other, &mut matched),
                own == shape,
                "{other}"
            );
        }
        assert!(Shape::new(&shape).matches("step: 123  loss: 0.25", &mut runs));
    }
}
