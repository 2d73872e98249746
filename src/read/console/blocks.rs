//! A log read in blocks of whole lines, each block scanned by its own thread ([`super::scan`]) and the
//! passes put together in order, as one pass over the whole log would have.

use std::collections::HashMap;

use super::clean;
use super::rows::FamilyRows;
use super::scan::{FactLine, FactLines, Scanner, FACT_BYTES, FACT_LINES_PER_FAMILY, LONGEST_LINE};
use super::vocabulary::Framework;
use crate::goodput::Mark;

/// What the blocks of a log gave, put together in order as one pass over the whole log would have.
#[derive(Default)]
pub(super) struct Merged {
    pub(super) families: Vec<FamilyRows>,
    pub(super) family_lines: Vec<usize>,
    pub(super) by_rank: HashMap<u32, usize>,
    pub(super) facts: FactLines,
    pub(super) lines: usize,
    pub(super) too_long: usize,
    pub(super) mark_lines: Vec<(usize, Mark)>,
}

impl Merged {
    /// Adds the next block's pass.
    pub(super) fn absorb(&mut self, block: Scanner<'_>) {
        let offset = self.lines;
        let lines_before = self.family_lines.clone();
        // Each of the block's families here.
        let mut here = Vec::with_capacity(block.families.len());
        for (family, lines) in block.families.into_iter().zip(block.family_lines) {
            match self.families.iter().position(|f| f.family == family.family) {
                Some(i) => {
                    self.families[i].append(family, offset);
                    self.family_lines[i] += lines;
                    here.push(i);
                }
                None => {
                    let mut family = family;
                    for line in &mut family.lines {
                        *line += offset;
                    }
                    self.families.push(family);
                    self.family_lines.push(lines);
                    here.push(self.families.len() - 1);
                }
            }
        }
        for (rank, n) in block.by_rank {
            *self.by_rank.entry(rank).or_default() += n;
        }
        // The block kept each family's first lines for facts; the whole log keeps its first.
        self.facts.dropped += block.facts.dropped;
        for line in block.facts.lines {
            let families: Vec<(usize, usize)> = line
                .families
                .iter()
                .map(|(f, at)| {
                    (
                        here[*f],
                        lines_before.get(here[*f]).copied().unwrap_or(0) + at,
                    )
                })
                .collect();
            if families.iter().any(|(_, at)| *at >= FACT_LINES_PER_FAMILY) {
                continue;
            }
            if self.facts.bytes + line.raw.len() > FACT_BYTES {
                self.facts.dropped += 1;
                continue;
            }
            self.facts.bytes += line.raw.len();
            self.facts.lines.push(FactLine {
                index: line.index + offset,
                families,
                raw: line.raw,
            });
        }
        self.mark_lines
            .extend(block.mark_lines.iter().map(|(l, m)| (l + offset, *m)));
        self.lines += block.lines;
        self.too_long += block.too_long;
    }
}

impl Merged {
    /// Moves the rows out of every family into a pass of their own, leaving here the families (their
    /// columns, each rank's last row), the lines kept for facts and the count of lines: the head of a
    /// log read in windows is read from the rows taken, while the rest of the log is put together here.
    pub(super) fn take_rows(&mut self) -> Merged {
        Merged {
            families: self
                .families
                .iter_mut()
                .map(FamilyRows::take_rows)
                .collect(),
            family_lines: self.family_lines.clone(),
            by_rank: self.by_rank.clone(),
            facts: self.facts.clone(),
            lines: self.lines,
            too_long: self.too_long,
            mark_lines: std::mem::take(&mut self.mark_lines),
        }
    }
}

/// One pass over a block of whole lines (each ended by `\n`).
pub(super) fn scan_block<'v>(framework: Option<&'v Framework>, block: &[u8]) -> Scanner<'v> {
    let mut scanner = Scanner::new(framework);
    let mut index = 0;
    let mut at = 0;
    while at < block.len() {
        let end = memchr::memchr(b'\n', &block[at..]).map_or(block.len(), |p| at + p);
        let raw = &block[at..end];
        match std::str::from_utf8(raw) {
            Ok(text) => scanner.line(index, text),
            Err(_) => scanner.line(index, &String::from_utf8_lossy(raw)),
        }
        index += 1;
        at = end + 1;
    }
    scanner.close();
    scanner.lines = index;
    scanner
}

/// A source whose lines longer than [`LONGEST_LINE`] are cut to one byte more than that (the rest of the
/// line dropped as it is read): a block of lines stays bounded whatever the log holds, and the cut line,
/// longer than any training line, is counted where it is read.
pub(super) struct Truncating<'s> {
    pub(super) source: Box<dyn std::io::Read + Send + 's>,
    /// The bytes of the current line seen so far.
    pub(super) line: usize,
}

impl std::io::Read for Truncating<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let n = self.source.read(buf)?;
            if n == 0 {
                return Ok(0);
            }
            let (mut from, mut to) = (0, 0);
            while from < n {
                let (end, newline) = match memchr::memchr(b'\n', &buf[from..n]) {
                    Some(p) => (from + p, true),
                    None => (n, false),
                };
                let keep = (end - from).min((LONGEST_LINE + 1).saturating_sub(self.line));
                if to != from {
                    buf.copy_within(from..from + keep, to);
                }
                to += keep;
                self.line = self.line.saturating_add(end - from);
                if newline {
                    buf[to] = b'\n';
                    to += 1;
                    self.line = 0;
                }
                from = end + usize::from(newline);
            }
            if to > 0 {
                return Ok(to);
            }
            // All of it was the dropped rest of a long line: read on.
        }
    }
}

/// A log read from a source in blocks of whole lines, each of about `size` bytes and ending before a
/// line that starts a record (not indented), so that no record spans two blocks; where a block ends
/// depends on the log alone, not on how the source hands its bytes over.
pub(super) struct BlockReader<'s> {
    pub(super) source: Truncating<'s>,
    pub(super) size: usize,
    pub(super) buffer: Vec<u8>,
    /// Blocks scanned, whose memory the next blocks take (fresh memory costs a page fault a page).
    pub(super) spare: Vec<Vec<u8>>,
    pub(super) eof: bool,
    /// The log's last byte.
    pub(super) last: Option<u8>,
}

/// Bytes read from the source at once.
pub(super) const READ_BYTES: usize = 1 << 20;

/// Bytes of a block of lines, and of the head a framework is told from.
pub(super) const BLOCK: usize = 4 << 20;

impl<'s> BlockReader<'s> {
    pub(super) fn new(source: impl std::io::Read + Send + 's, size: usize) -> Self {
        BlockReader {
            source: Truncating {
                source: Box::new(source),
                line: 0,
            },
            size,
            buffer: Vec::new(),
            spare: Vec::new(),
            eof: false,
            last: None,
        }
    }

    /// Reads up to [`READ_BYTES`] more.
    pub(super) fn fill(&mut self) -> std::io::Result<()> {
        use std::io::Read;
        let filled = self.buffer.len();
        self.buffer.resize(filled + READ_BYTES, 0);
        let n = loop {
            match self.source.read(&mut self.buffer[filled..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.buffer.truncate(filled);
                    return Err(e);
                }
            }
        };
        self.buffer.truncate(filled + n);
        if n == 0 {
            self.eof = true;
        } else {
            self.last = Some(self.buffer[filled + n - 1]);
        }
        Ok(())
    }

    /// The first [`BLOCK`] bytes of the log (less where it is shorter).
    pub(super) fn head(&mut self) -> std::io::Result<&[u8]> {
        while !self.eof && self.buffer.len() < BLOCK {
            self.fill()?;
        }
        Ok(&self.buffer[..self.buffer.len().min(BLOCK)])
    }

    /// Where the next block ends: after the last newline at or before `size` that a line follows
    /// whose fields, once cleaned, are not indented (so it closes any record open before it), else the
    /// first such newline after `size`; `None` until the buffer holds one.
    pub(super) fn cut(&self) -> Option<usize> {
        let b = &self.buffer;
        let starts_record = |at: usize| {
            let Some(end) = b
                .get(at..)
                .and_then(|rest| memchr::memchr(b'\n', rest))
                .map(|p| at + p)
            else {
                return false; // the line is not whole yet
            };
            let raw = String::from_utf8_lossy(&b[at..end]);
            let mut cleaner = clean::Cleaner::default();
            cleaner.clean(&raw);
            cleaner.places.first().is_some_and(|p| !p.indented)
        };
        let limit = self.size.min(b.len());
        let mut end = limit;
        while let Some(p) = memchr::memrchr(b'\n', &b[..end]) {
            if starts_record(p + 1) {
                return Some(p + 1);
            }
            end = p;
        }
        let mut from = limit;
        while let Some(p) = memchr::memchr(b'\n', &b[from..]).map(|p| from + p) {
            if starts_record(p + 1) {
                return Some(p + 1);
            }
            from = p + 1;
        }
        None
    }

    /// Takes back a block that has been scanned.
    pub(super) fn give_back(&mut self, block: Vec<u8>) {
        if self.spare.len() < 8 {
            self.spare.push(block);
        }
    }

    /// The next block, `None` at the end of the log.
    pub(super) fn next_block(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        loop {
            if self.buffer.len() > self.size {
                if let Some(cut) = self.cut() {
                    let mut rest = self.spare.pop().unwrap_or_default();
                    rest.clear();
                    rest.reserve(self.size.min(BLOCK) + 2 * READ_BYTES);
                    rest.extend_from_slice(&self.buffer[cut..]);
                    let mut block = std::mem::replace(&mut self.buffer, rest);
                    block.truncate(cut);
                    return Ok(Some(block));
                }
            }
            if self.eof {
                return Ok((!self.buffer.is_empty()).then(|| std::mem::take(&mut self.buffer)));
            }
            self.fill()?;
        }
    }
}

/// Scans every block of `blocks` and puts the passes together in order.
pub(super) fn scan_all(
    blocks: &mut BlockReader<'_>,
    framework: Option<&Framework>,
) -> std::io::Result<Merged> {
    scan_until(blocks, framework, usize::MAX).map(|(merged, _)| merged)
}

/// Scans the blocks of `blocks` until at least `limit` bytes of them are scanned, and puts the passes
/// together in order: the pass, and whether blocks are left.
pub(super) fn scan_until(
    blocks: &mut BlockReader<'_>,
    framework: Option<&Framework>,
    limit: usize,
) -> std::io::Result<(Merged, bool)> {
    // One pass: every training line goes to its family's rows, the others to the facts reader. The
    // log's blocks are read by as many threads as there are and put together in order, as one pass
    // would have: the same rows whatever the thread count. A batch of blocks is scanned while the
    // next is read from the source and the one before put together, so memory stays bounded and
    // neither core waits on the other.
    use rayon::prelude::*;
    let threads = rayon::current_num_threads().max(1);
    let mut read = 0usize;
    let mut next_batch = |blocks: &mut BlockReader<'_>| -> std::io::Result<Vec<Vec<u8>>> {
        let mut batch = Vec::with_capacity(threads);
        while batch.len() < threads && read < limit {
            match blocks.next_block()? {
                Some(b) => {
                    read += b.len();
                    batch.push(b)
                }
                None => break,
            }
        }
        Ok(batch)
    };
    let mut merged = Merged::default();
    let mut batch = next_batch(blocks)?;
    let mut scanned: Vec<Scanner<'_>> = Vec::new();
    while !batch.is_empty() || !scanned.is_empty() {
        let previous = std::mem::take(&mut scanned);
        let current = std::mem::take(&mut batch);
        let (next, (now, ())) = rayon::join(
            || next_batch(blocks),
            || {
                rayon::join(
                    || {
                        current
                            .par_iter()
                            .map(|block| scan_block(framework, block))
                            .collect::<Vec<_>>()
                    },
                    || {
                        for scanner in previous {
                            merged.absorb(scanner);
                        }
                    },
                )
            },
        );
        batch = next?;
        scanned = now;
        for block in current {
            blocks.give_back(block);
        }
    }
    let more = read >= limit && !(blocks.eof && blocks.buffer.is_empty());
    Ok((merged, more))
}
