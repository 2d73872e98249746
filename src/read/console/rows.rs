//! The rows of a family of training lines as they are read, column by column, and the table they make.

use super::pairs::Value;
use super::stamp::UNDATED;
use super::vocabulary::normalise;

/// The column of the lines' timestamps where they have a date: seconds since the epoch.
pub const WALL_TIME: &str = "wall_time";
/// The column of the lines' timestamps where they have no date (or no year): seconds since the first.
pub const LOG_CLOCK: &str = "log_clock_s";

/// The fast hash map the peak matcher uses too (SipHash took a twentieth of this reader's time on a
/// torchtitan log: its maps of a log's own field names are looked up several times a line).
pub(super) type FastMap<K, V> = polars::prelude::PlHashMap<K, V>;

/// A column as it is built: numbers and words side by side until the end says which it is.
#[derive(Debug, Default, Clone)]
pub(super) struct Building {
    /// [`NONE`] where a row has no number.
    pub(super) numbers: Vec<f64>,
    /// The words, by row: most columns have none, so they are kept apart from the numbers.
    pub(super) words: Vec<(usize, String)>,
    /// The last row written to: a key twice on one line keeps the line's first.
    pub(super) written: Option<usize>,
    pub(super) any_number: bool,
    /// Every number whole (the step counter is an integer column then).
    pub(super) whole: bool,
    /// The unit written against its first number.
    pub(super) unit: String,
    /// Whether an `N/M` value gives its `M` (a framework's `totals`).
    pub(super) total: bool,
    /// The last `M` of an `N/M` value written (an epoch's batches, a run's steps).
    pub(super) last_total: Option<f64>,
}

/// One family's rows as they are read, and what choosing among families and cleaning up after need.
#[derive(Debug, Clone)]
pub(super) struct FamilyRows {
    pub(super) family: (String, bool),
    /// The framework's keys whose `N/M` value gives its `M`.
    pub(super) totals: Vec<String>,
    pub(super) timed: bool,
    /// Rows by rank, all, and those with a number besides the step (which rank the family).
    pub(super) rows_by_rank: FastMap<Option<u32>, (usize, usize)>,
    pub(super) names: Vec<String>,
    pub(super) columns: Vec<Building>,
    pub(super) at: FastMap<String, usize>,
    pub(super) column_of: FastMap<String, usize>,
    pub(super) lines: Vec<usize>,
    pub(super) ranks: Vec<Option<u32>>,
    pub(super) sizes: Vec<usize>,
    /// [`NONE`] where a line has no timestamp.
    pub(super) wall_times: Vec<f64>,
    /// A digest of each rank's previous row: a line repeated verbatim is one step.
    pub(super) previous: FastMap<Option<u32>, u64>,
    /// Each rank's first row and its digest (a block's first row may repeat the block before's last).
    pub(super) first: FastMap<Option<u32>, (usize, u64)>,
    pub(super) repeats: usize,
    /// Lines with the family's step key and no other number, not rows.
    pub(super) bare: usize,
    pub(super) words_among_numbers: usize,
}

impl FamilyRows {
    pub(super) fn new(family: (String, bool), totals: Vec<String>) -> FamilyRows {
        FamilyRows {
            family,
            totals,
            timed: false,
            rows_by_rank: FastMap::default(),
            names: Vec::new(),
            columns: Vec::new(),
            at: FastMap::default(),
            column_of: FastMap::default(),
            lines: Vec::new(),
            ranks: Vec::new(),
            sizes: Vec::new(),
            wall_times: Vec::new(),
            previous: FastMap::default(),
            first: FastMap::default(),
            repeats: 0,
            bare: 0,
            words_among_numbers: 0,
        }
    }

    pub(super) fn height(&self) -> usize {
        self.lines.len()
    }

    /// Starts a row (with `size` values, `numbers` of them numbers besides the step), unless it repeats
    /// the rank's previous row (its `digest`): the row's index then.
    pub(super) fn begin_row(
        &mut self,
        line: usize,
        rank: Option<u32>,
        wall_time: Option<f64>,
        (size, numbers, timed): (usize, usize, bool),
        digest: u64,
    ) -> Option<usize> {
        let counts = self.rows_by_rank.entry(rank).or_default();
        counts.0 += 1;
        counts.1 += usize::from(numbers >= 1);
        if numbers >= 1 {
            self.timed |= timed;
        } else {
            // The step key and no other number (`Saving a full checkpoint at last step, step 12500.`):
            // a message about a step, not a step's row.
            self.bare += 1;
            return None;
        }
        if self.previous.insert(rank, digest) == Some(digest) {
            self.repeats += 1;
            return None;
        }
        let row = self.height();
        self.first.entry(rank).or_insert((row, digest));
        self.lines.push(line);
        self.ranks.push(rank);
        self.sizes.push(size);
        self.wall_times.push(wall_time.unwrap_or(NONE));
        for column in &mut self.columns {
            column.numbers.push(NONE);
        }
        Some(row)
    }

    /// The column of a key (its name with the unit of the key's first number), made at `row` if new.
    pub(super) fn column(&mut self, key: &str, unit: &str, row: usize) -> usize {
        if let Some(c) = self.column_of.get(key) {
            return *c;
        }
        let name = column_name(key, if scale(unit).is_some() { "" } else { unit });
        let c = match self.at.get(&name) {
            Some(c) => *c,
            None => {
                self.names.push(name.clone());
                let total = self.totals.contains(&normalise(key));
                self.columns.push(Building {
                    numbers: vec![NONE; row + 1],
                    whole: true,
                    total,
                    ..Building::default()
                });
                self.at.insert(name, self.columns.len() - 1);
                self.columns.len() - 1
            }
        };
        self.column_of.insert(key.to_string(), c);
        c
    }

    /// Writes a value at `row` of `column`, unless the row has one there (a key twice on one line: the
    /// first is the line's).
    pub(super) fn set(
        &mut self,
        row: usize,
        column: usize,
        value: &Value<'_>,
        new: Option<(f64, Option<f64>)>,
    ) {
        let building = &mut self.columns[column];
        if building.written == Some(row) {
            return;
        }
        building.written = Some(row);
        match value {
            Value::Number { value, unit, total } => {
                let (value, total) = new.unwrap_or((*value, *total));
                if total.is_some() {
                    building.last_total = total;
                }
                let value = match total {
                    Some(t) if building.total => t,
                    _ => value,
                };
                let v = value * scale(unit).unwrap_or(1.0);
                if !building.any_number {
                    building.unit = unit.to_string();
                }
                building.any_number = true;
                building.whole = building.whole && v.fract() == 0.0 && v.abs() < 9e15;
                building.numbers[row] = if v.is_finite() { v } else { NONE };
            }
            Value::Text(t) => building.words.push((row, t.to_string())),
        }
    }

    /// Adds the rows `later` read from the block after this family's (its lines numbered from
    /// `offset`), as one pass over both blocks would have: a first row repeating this family's last
    /// row of its rank is a repeat, and a key keeps the column it has here.
    pub(super) fn append(&mut self, mut later: FamilyRows, offset: usize) {
        let mut drop_first = vec![true; later.height()];
        let mut repeats = 0;
        for (rank, (row, digest)) in &later.first {
            if self.previous.get(rank) == Some(digest) {
                drop_first[*row] = false;
                repeats += 1;
            }
        }
        if repeats > 0 {
            later.retain(&drop_first);
        }
        self.repeats += later.repeats + repeats;
        self.bare += later.bare;
        self.words_among_numbers += later.words_among_numbers;
        self.timed |= later.timed;
        for (rank, (all, with_numbers)) in &later.rows_by_rank {
            let counts = self.rows_by_rank.entry(*rank).or_default();
            counts.0 += all;
            counts.1 += with_numbers;
        }
        for (rank, digest) in later.previous.drain() {
            self.previous.insert(rank, digest);
        }
        let (height, added) = (self.height(), later.height());
        // Each of the later block's columns: the one its keys have here, else the one of its name,
        // else a new one.
        let mut target = vec![None; later.columns.len()];
        let mut keys: Vec<(&String, &usize)> = later.column_of.iter().collect();
        keys.sort();
        for (key, column) in &keys {
            if target[**column].is_none() {
                target[**column] = self.column_of.get(*key).copied();
            }
        }
        for (c, name) in later.names.iter().enumerate() {
            if target[c].is_none() {
                target[c] = Some(match self.at.get(name) {
                    Some(here) => *here,
                    None => {
                        self.names.push(name.clone());
                        self.columns.push(Building {
                            numbers: vec![NONE; height],
                            whole: true,
                            total: later.columns[c].total,
                            ..Building::default()
                        });
                        self.at.insert(name.clone(), self.columns.len() - 1);
                        self.columns.len() - 1
                    }
                });
            }
        }
        for (key, column) in keys {
            if let Some(t) = target[*column] {
                self.column_of.entry(key.clone()).or_insert(t);
            }
        }
        let mut filled = vec![false; self.columns.len()];
        for (c, building) in later.columns.into_iter().enumerate() {
            let Some(t) = target[c] else { continue };
            let here = &mut self.columns[t];
            if filled[t] {
                // Two of the later block's columns in one here: the first value of a row wins.
                for (row, value) in building.numbers.into_iter().enumerate() {
                    let cell = &mut here.numbers[height + row];
                    if cell.is_nan() {
                        *cell = value;
                    }
                }
            } else {
                here.numbers.extend(building.numbers);
                filled[t] = true;
            }
            if !here.any_number && building.any_number {
                here.unit = building.unit;
            }
            here.any_number |= building.any_number;
            if building.last_total.is_some() {
                here.last_total = building.last_total;
            }
            here.whole &= building.whole;
            here.words
                .extend(building.words.into_iter().map(|(row, w)| (height + row, w)));
            here.written = None;
        }
        for (t, column) in self.columns.iter_mut().enumerate() {
            if !filled[t] {
                column.numbers.resize(height + added, NONE);
            }
        }
        self.lines
            .extend(later.lines.into_iter().map(|l| l + offset));
        self.ranks.extend(later.ranks);
        self.sizes.extend(later.sizes);
        self.wall_times.extend(later.wall_times);
    }

    /// The family's columns (names, keys, units) with the rows `rows` of this one, or with none.
    fn with_rows(&self, rows: Option<std::ops::Range<usize>>) -> FamilyRows {
        let rows = rows.unwrap_or(0..0);
        let start = rows.start;
        FamilyRows {
            family: self.family.clone(),
            totals: self.totals.clone(),
            timed: self.timed,
            rows_by_rank: FastMap::default(),
            names: self.names.clone(),
            columns: self
                .columns
                .iter()
                .map(|c| Building {
                    numbers: c.numbers[rows.clone()].to_vec(),
                    words: c
                        .words
                        .iter()
                        .filter(|(row, _)| rows.contains(row))
                        .map(|(row, w)| (row - start, w.clone()))
                        .collect(),
                    written: None,
                    any_number: c.any_number,
                    whole: c.whole,
                    unit: c.unit.clone(),
                    total: c.total,
                    last_total: c.last_total,
                })
                .collect(),
            at: self.at.clone(),
            column_of: self.column_of.clone(),
            lines: self.lines[rows.clone()].to_vec(),
            ranks: self.ranks[rows.clone()].to_vec(),
            sizes: self.sizes[rows.clone()].to_vec(),
            wall_times: self.wall_times[rows].to_vec(),
            previous: self.previous.clone(),
            first: FastMap::default(),
            repeats: 0,
            bare: 0,
            words_among_numbers: 0,
        }
    }

    /// A copy of the last `n` rows (all, where there are fewer), with the family's columns: the rows a
    /// window of a log read in windows shares with the next.
    pub(super) fn tail(&self, n: usize) -> FamilyRows {
        let height = self.height();
        self.with_rows(Some(height.saturating_sub(n)..height))
    }

    /// Moves the rows out, leaving the family's columns and each rank's last row (what the next rows
    /// are checked against) here: a log read in windows keeps its families while their rows go.
    pub(super) fn take_rows(&mut self) -> FamilyRows {
        let mut taken = self.with_rows(None);
        taken.rows_by_rank.clone_from(&self.rows_by_rank);
        (taken.repeats, taken.bare) = (self.repeats, self.bare);
        taken.words_among_numbers = self.words_among_numbers;
        taken.lines = std::mem::take(&mut self.lines);
        taken.ranks = std::mem::take(&mut self.ranks);
        taken.sizes = std::mem::take(&mut self.sizes);
        taken.wall_times = std::mem::take(&mut self.wall_times);
        for (mine, theirs) in self.columns.iter_mut().zip(&mut taken.columns) {
            theirs.numbers = std::mem::take(&mut mine.numbers);
            theirs.words = std::mem::take(&mut mine.words);
            mine.written = None;
        }
        taken
    }

    /// Keeps the rows `keep` says.
    pub(super) fn retain(&mut self, keep: &[bool]) {
        fn filter<T>(values: &mut Vec<T>, keep: &[bool]) {
            let mut i = 0;
            values.retain(|_| {
                i += 1;
                keep[i - 1]
            });
        }
        filter(&mut self.lines, keep);
        filter(&mut self.ranks, keep);
        filter(&mut self.sizes, keep);
        filter(&mut self.wall_times, keep);
        // A kept row's new place: how many rows are kept before it.
        let mut place = Vec::with_capacity(keep.len());
        let mut kept = 0;
        for k in keep {
            place.push(kept);
            kept += usize::from(*k);
        }
        for column in &mut self.columns {
            filter(&mut column.numbers, keep);
            column.words.retain(|(row, _)| keep[*row]);
            for (row, _) in &mut column.words {
                *row = place[*row];
            }
            column.written = None;
        }
    }

    /// The rows as a table: a column of numbers where any value was one (its words counted), else of
    /// words; the family's step counter as integers when whole; `wall_time` first where lines had one.
    pub(super) fn table(self) -> (Table, usize) {
        let height = self.height();
        let mut table = Table {
            height,
            ..Table::default()
        };
        let mut words_among_numbers = self.words_among_numbers;
        // The lines' timestamps: a date's in `wall_time` (seconds since the epoch), else a clock
        // without a date (glog's, `[04/17 09:42:26]`, a time of day) in `log_clock_s`, seconds since
        // the first of them.
        let dated = self.wall_times.iter().any(|t| *t >= UNDATED);
        let mut clock = self.wall_times;
        let name = if dated {
            for t in &mut clock {
                if *t < UNDATED {
                    *t = NONE;
                }
            }
            WALL_TIME
        } else {
            super::stamp::unwrap_undated(&mut clock);
            LOG_CLOCK
        };
        if clock.iter().any(|t| !t.is_nan()) && !self.names.iter().any(|n| normalise(n) == name) {
            table.names.push(name.into());
            table.columns.push(Column::Numbers {
                values: clock,
                integer: false,
            });
        }
        for (name, building) in self.names.into_iter().zip(self.columns) {
            if let Some(total) = building.last_total {
                table.totals.push((table.columns.len(), total));
            }
            let column = if building.any_number {
                words_among_numbers += building.words.len();
                let integer = building.whole && normalise(&name) == self.family.0;
                Column::Numbers {
                    values: building.numbers,
                    integer,
                }
            } else {
                let mut words = vec![None; height];
                for (row, word) in building.words {
                    words[row] = Some(word);
                }
                Column::Text(words)
            };
            table.names.push(name);
            table.columns.push(column);
        }
        (table, words_among_numbers)
    }
}

/// A column name for a key and the unit written against its values.
pub(super) fn column_name(key: &str, unit: &str) -> String {
    let n = normalise(key);
    let states_unit = ["_ms", "_s", "_us", "_sec", "_pct", "_percent"]
        .iter()
        .any(|u| n.ends_with(u))
        || key.contains('%');
    // A rate's unit names what the value counts (`Speed: 4599.27 samples/sec`).
    let rate = unit.contains('/')
        && unit
            .split('/')
            .all(|part| part.chars().any(char::is_alphabetic))
        && !key.contains(unit);
    match unit {
        "s" | "ms" | "us" | "%" if !states_unit && !key.ends_with(&format!("({unit})")) => {
            format!("{key} ({unit})")
        }
        _ if rate => format!("{key} ({unit})"),
        _ => key.to_string(),
    }
}

/// A column of the rows read.
#[derive(Debug, Clone)]
pub enum Column {
    /// Numbers, finite or [`NONE`] (where a line lacks the key or wrote `nan`); `integer` for the step
    /// counter when every value is whole.
    Numbers { values: Vec<f64>, integer: bool },
    /// Words (`bf16`, `n/a`) of a key that never holds a number.
    Text(Vec<Option<String>>),
}

/// The rows read, column by column in the order first seen.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Table {
    pub names: Vec<String>,
    pub columns: Vec<Column>,
    pub height: usize,
    /// The last `M` written against the values of a column as `N/M` (its index, the `M`).
    pub totals: Vec<(usize, f64)>,
}

impl Table {
    pub fn index(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// The number in column `column` at `row`.
    pub fn number(&self, column: usize, row: usize) -> Option<f64> {
        match &self.columns[column] {
            Column::Numbers { values, .. } => Some(values[row]).filter(|v| !v.is_nan()),
            Column::Text(_) => None,
        }
    }

    /// Rows `rows` of the table.
    pub(super) fn rows(&self, rows: std::ops::Range<usize>) -> Table {
        Table {
            names: self.names.clone(),
            columns: self
                .columns
                .iter()
                .map(|c| match c {
                    Column::Numbers { values, integer } => Column::Numbers {
                        values: values[rows.clone()].to_vec(),
                        integer: *integer,
                    },
                    Column::Text(words) => Column::Text(words[rows.clone()].to_vec()),
                })
                .collect(),
            height: rows.len(),
            totals: self.totals.clone(),
        }
    }

    /// The number of the column named `name` at `row` (tests and callers that know names).
    pub fn get(&self, name: &str, row: usize) -> Option<f64> {
        self.number(self.index(name)?, row)
    }

    /// Adds the column `name`, its value at each row worked out from the row (null where it cannot
    /// be); returns how many rows got one.
    pub(super) fn fill(
        &mut self,
        name: &str,
        value: &dyn Fn(&Table, usize) -> Option<f64>,
    ) -> usize {
        let values: Vec<f64> = (0..self.height)
            .map(|row| value(self, row).filter(|v| v.is_finite()).unwrap_or(NONE))
            .collect();
        let filled = values.iter().filter(|v| !v.is_nan()).count();
        self.names.push(name.to_string());
        self.columns.push(Column::Numbers {
            values,
            integer: false,
        });
        filled
    }

    /// Adds the column `name` of words (null where a row has none).
    pub(super) fn fill_text(&mut self, name: &str, values: Vec<Option<String>>) {
        self.names.push(name.to_string());
        self.columns.push(Column::Text(values));
    }

    /// Makes column `c` an integer column where every value of it is whole (a step made here).
    pub(super) fn integer_if_whole(&mut self, c: usize) {
        if let Column::Numbers { values, integer } = &mut self.columns[c] {
            *integer = values
                .iter()
                .all(|v| v.is_nan() || (v.fract() == 0.0 && v.abs() < 9e15));
        }
    }

    /// The table as a frame: numbers as Float64 (the step as Int64), words as String. A column of
    /// numbers becomes the frame's without a copy, [`NONE`] as null.
    pub fn into_frame(self) -> Result<polars::prelude::DataFrame, String> {
        use polars::prelude::{Float64Chunked, IntoColumn, IntoSeries, NamedFrom, Series};
        let height = self.height;
        let columns = self
            .names
            .into_iter()
            .zip(self.columns)
            .map(|(name, column)| {
                match column {
                    Column::Numbers {
                        values,
                        integer: true,
                    } => Series::new(
                        name.into(),
                        values
                            .iter()
                            .map(|v| (!v.is_nan()).then_some(*v as i64))
                            .collect::<Vec<Option<i64>>>(),
                    ),
                    Column::Numbers { values, .. } => {
                        let valid: polars_arrow::bitmap::Bitmap =
                            values.iter().map(|v| !v.is_nan()).collect();
                        let valid = (valid.unset_bits() > 0).then_some(valid);
                        Float64Chunked::from_vec_validity(name.into(), values, valid).into_series()
                    }
                    Column::Text(values) => Series::new(name.into(), values),
                }
                .into_column()
            })
            .collect();
        polars::prelude::DataFrame::new(height, columns).map_err(|e| e.to_string())
    }
}

/// Where a column of numbers has none: NaN, as no number read is kept unless finite.
pub(super) const NONE: f64 = f64::NAN;

impl PartialEq for Column {
    /// Numbers compare bit for bit ([`NONE`] equals itself).
    fn eq(&self, other: &Column) -> bool {
        match (self, other) {
            (
                Column::Numbers { values, integer },
                Column::Numbers {
                    values: v,
                    integer: i,
                },
            ) => {
                integer == i
                    && values.len() == v.len()
                    && values
                        .iter()
                        .zip(v)
                        .all(|(a, b)| a.to_bits() == b.to_bits())
            }
            (Column::Text(a), Column::Text(b)) => a == b,
            _ => false,
        }
    }
}

/// `43.2K` → 43,200 (nanotron's counts).
pub(super) fn scale(unit: &str) -> Option<f64> {
    match unit {
        "K" | "k" => Some(1e3),
        "M" => Some(1e6),
        "G" | "B" => Some(1e9),
        "T" => Some(1e12),
        _ => None,
    }
}
