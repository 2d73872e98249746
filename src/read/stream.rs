//! Reading a large JSON Lines or CSV input in blocks of whole lines, so that memory does not grow with the
//! file. Each block is parsed on its own ([`parse_block`]); line numbers in errors and rejects stay those of
//! the file. Compressed inputs are decompressed as they are read.

use std::io::{self, Read};
use std::path::Path;

use polars::prelude::DataFrame;

use super::{compression, csv, jsonl, InputFormat, Reject};

/// Bytes of input per block: enough lines to keep both cores busy parsing, few enough that a block and its
/// enriched rows stay small.
pub const BLOCK_BYTES: usize = 16 << 20;

/// Bytes per block: [`BLOCK_BYTES`], or the `MFU_BLOCK_BYTES` environment variable (for tests and
/// experiments: a small value streams small files).
pub fn block_bytes() -> usize {
    std::env::var("MFU_BLOCK_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|b| *b > 0)
        .unwrap_or(BLOCK_BYTES)
}

/// A run of whole lines of the input.
#[derive(Debug)]
pub struct Block {
    /// The lines; for CSV after the first block, the header line comes first so the block parses alone.
    pub bytes: Vec<u8>,
    /// The file's line number of the block's first line of data (its header excluded).
    pub first_line: usize,
    /// Whether this is the input's last block.
    pub last: bool,
}

/// Cuts an input into blocks of whole lines.
pub struct BlockReader {
    reader: Box<dyn Read + Send>,
    format: InputFormat,
    block_bytes: usize,
    /// Bytes read after the last cut.
    carry: Vec<u8>,
    /// The CSV header line (with its newline), once seen.
    header: Option<Vec<u8>>,
    next_line: usize,
    done: bool,
    /// The most bytes one block may grow to when a line is longer than a block.
    max_block_bytes: usize,
}

impl BlockReader {
    /// Opens `path`, undoing gzip or zstd compression (recognised by magic bytes) as it reads.
    pub fn open(path: &Path, format: InputFormat) -> io::Result<BlockReader> {
        let (reader, _) = compression::open(path)?;
        Ok(BlockReader::new(reader, format, block_bytes()))
    }

    pub fn new(
        reader: Box<dyn Read + Send>,
        format: InputFormat,
        block_bytes: usize,
    ) -> BlockReader {
        BlockReader {
            reader,
            format,
            block_bytes: block_bytes.max(1),
            carry: Vec::new(),
            header: None,
            next_line: 1,
            done: false,
            max_block_bytes: usize::MAX,
        }
    }

    /// Stops with an error, rather than growing a block past `bytes`, at a line longer than that (a file
    /// of one huge line is then no cheaper in blocks than whole: the whole-input way, with its memory
    /// budget, takes it).
    pub fn with_max_block_bytes(mut self, bytes: usize) -> BlockReader {
        self.max_block_bytes = bytes.max(self.block_bytes);
        self
    }

    /// The next block, or `None` after the last.
    pub fn next_block(&mut self) -> io::Result<Option<Block>> {
        if self.done {
            return Ok(None);
        }
        // After the first CSV block, the header goes first, so the block parses alone; it is written in
        // before the data rather than copied in front of it afterwards.
        let prefix: &[u8] = match (&self.header, self.format) {
            (_, InputFormat::Jsonl) | (None, _) => &[],
            (Some(header), _) => header,
        };
        let start = prefix.len();
        let mut data = Vec::with_capacity(start + self.block_bytes + self.carry.len());
        data.extend_from_slice(prefix);
        data.append(&mut self.carry);
        let mut cut = None;
        while cut.is_none() {
            let filled = data.len() - start;
            // A line longer than a block doubles the buffer until it ends.
            let want = if filled < self.block_bytes {
                self.block_bytes
            } else if filled >= self.max_block_bytes {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "line {} is longer than {} bytes",
                        self.next_line, self.max_block_bytes
                    ),
                ));
            } else {
                filled.saturating_mul(2).min(self.max_block_bytes)
            };
            // Read into spare capacity (no zeroing); a read may return less than asked.
            let read = (&mut self.reader)
                .take((want - filled) as u64)
                .read_to_end(&mut data)?;
            if read < want - filled {
                self.done = true;
                break;
            }
            cut = self.last_cut(&data[start..]).map(|c| start + c);
        }
        if let (Some(end), false) = (cut, self.done) {
            self.carry = data[end..].to_vec();
            data.truncate(end);
        }
        let lines = memchr::memchr_iter(b'\n', &data[start..]).count();
        let mut first_line = self.next_line;
        self.next_line += lines;
        if self.format != InputFormat::Jsonl && self.header.is_none() {
            // The first block holds the header: its data starts on the next line.
            let end = memchr::memchr(b'\n', &data).map_or(data.len(), |i| i + 1);
            self.header = Some(data[..end].to_vec());
            first_line += 1;
        }
        Ok(Some(Block {
            bytes: data,
            first_line,
            last: self.done,
        }))
    }

    /// Where to cut `data`: after its last newline that ends a record. In CSV a newline inside quotes is
    /// data, so the cut is after the last newline with an even number of quotes before it (a quote inside
    /// a quoted field is written twice, which keeps the count right).
    fn last_cut(&self, data: &[u8]) -> Option<usize> {
        if self.format == InputFormat::Jsonl || memchr::memchr(b'"', data).is_none() {
            return memchr::memrchr(b'\n', data).map(|i| i + 1);
        }
        let mut quotes = 0usize;
        let mut cut = None;
        for i in memchr::memchr2_iter(b'"', b'\n', data) {
            if data[i] == b'"' {
                quotes += 1;
            } else if quotes.is_multiple_of(2) {
                cut = Some(i + 1);
            }
        }
        cut
    }
}

/// One block, parsed.
#[derive(Debug)]
pub struct ParsedBlock {
    pub frame: DataFrame,
    pub torn: Option<Reject>,
    pub rejects: Vec<Reject>,
}

/// Parses a block as [`super::read_input`] parses a whole file, with the file's line numbers. `fixed` is
/// the schema the rows before fixed: a CSV column that is Float64 there is read as floats here too when
/// the block has a negative zero (an integer-typed block would turn `-0` into 0 and then +0.0, which the
/// whole file, parsed as floats, keeps as -0.0).
pub fn parse_block(
    block: Block,
    format: InputFormat,
    skip_bad: bool,
    fixed: Option<&polars::prelude::Schema>,
) -> Result<ParsedBlock, String> {
    match format {
        InputFormat::Jsonl => jsonl::read_checked_from(block.bytes, skip_bad, block.first_line)
            .map(|r| ParsedBlock {
                frame: r.frame,
                torn: r.torn,
                rejects: r.rejects,
            }),
        InputFormat::Csv | InputFormat::Tsv => {
            let separator = if format == InputFormat::Tsv {
                b'\t'
            } else {
                b','
            };
            // The block's line 2 (after its header) is the file's `first_line`.
            let offset = block.first_line.saturating_sub(2);
            let floats: Vec<polars::prelude::PlSmallStr> = fixed
                .into_iter()
                .flat_map(|s| s.iter())
                .filter(|(_, dtype)| **dtype == polars::prelude::DataType::Float64)
                .map(|(name, _)| name.clone())
                .collect();
            let retype = (!floats.is_empty()
                && csv::has_negative_zero_cell(&block.bytes, separator))
            .then(|| block.bytes.clone());
            let (mut frame, rejects) =
                csv::read_checked_from(block.bytes, separator, skip_bad, offset)?;
            if let Some(bytes) = retype {
                let integral = |name: &polars::prelude::PlSmallStr| {
                    frame.column(name).is_ok_and(|c| c.dtype().is_integer())
                };
                if rejects.is_empty() && floats.iter().any(integral) {
                    frame = csv::parse_with_floats(&bytes, separator, &floats)
                        .map_err(|e| e.to_string())?;
                }
            }
            Ok(ParsedBlock {
                frame,
                torn: None,
                rejects,
            })
        }
        InputFormat::Parquet => Err("Parquet is not read in blocks".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(text: &str, format: InputFormat, size: usize) -> Vec<Block> {
        let mut reader = BlockReader::new(
            Box::new(io::Cursor::new(text.as_bytes().to_vec())),
            format,
            size,
        );
        let mut out = Vec::new();
        while let Some(b) = reader.next_block().unwrap() {
            out.push(b);
        }
        out
    }

    #[test]
    fn jsonl_blocks_end_at_line_ends_and_count_lines() {
        let text = "{\"a\":1}\n{\"a\":22}\n{\"a\":333}\n{\"a\":4}";
        let got = blocks(text, InputFormat::Jsonl, 12);
        let joined: Vec<u8> = got.iter().flat_map(|b| b.bytes.clone()).collect();
        assert_eq!(joined, text.as_bytes());
        assert!(got
            .iter()
            .rev()
            .skip(1)
            .all(|b| b.bytes.ends_with(b"\n") && !b.last));
        assert!(got.last().unwrap().last);
        let firsts: Vec<usize> = got.iter().map(|b| b.first_line).collect();
        assert_eq!(firsts, [1, 2, 3, 4]);
    }

    #[test]
    fn csv_blocks_repeat_the_header_and_keep_quoted_newlines() {
        let text = "a,b\n1,\"x\ny\"\n2,z\n3,w\n";
        let got = blocks(text, InputFormat::Csv, 8);
        assert!(got.iter().all(|b| b.bytes.starts_with(b"a,b\n")));
        let data: Vec<u8> = got.iter().flat_map(|b| b.bytes[4..].to_vec()).collect();
        assert_eq!(data, &text.as_bytes()[4..]);
        let firsts: Vec<usize> = got
            .iter()
            .filter(|b| b.bytes.len() > 4)
            .map(|b| b.first_line)
            .collect();
        assert_eq!(firsts, [2, 4]);
        let frames: Vec<DataFrame> = got
            .into_iter()
            .map(|b| parse_block(b, InputFormat::Csv, false, None).unwrap().frame)
            .filter(|f| f.height() > 0)
            .collect();
        assert_eq!(frames.iter().map(|f| f.height()).sum::<usize>(), 3);
        assert_eq!(
            frames[0].column("b").unwrap().str().unwrap().get(0),
            Some("x\ny")
        );
    }

    #[test]
    fn a_line_longer_than_the_limit_stops_the_reader() {
        let text = format!(
            "{{\"a\":1}}\n{{\"b\":\"{}\"}}\n{{\"a\":3}}\n",
            "x".repeat(100)
        );
        let mut reader = BlockReader::new(
            Box::new(io::Cursor::new(text.clone().into_bytes())),
            InputFormat::Jsonl,
            8,
        )
        .with_max_block_bytes(64);
        let first = reader.next_block().unwrap().unwrap();
        assert_eq!(first.bytes, b"{\"a\":1}\n");
        let err = reader.next_block().unwrap_err().to_string();
        assert_eq!(err, "line 2 is longer than 64 bytes");
        // With room for it, the long line comes whole.
        let mut reader = BlockReader::new(
            Box::new(io::Cursor::new(text.into_bytes())),
            InputFormat::Jsonl,
            8,
        )
        .with_max_block_bytes(256);
        reader.next_block().unwrap();
        let second = reader.next_block().unwrap().unwrap();
        assert_eq!(second.bytes.len(), 109 + 8); // the long line, and the one after it
        assert_eq!(second.first_line, 2);
    }

    #[test]
    fn errors_name_the_files_line() {
        let text = "{\"a\":1}\n{\"a\":2}\n{\"a\" 3}\n{\"a\":4}\n";
        let got = blocks(text, InputFormat::Jsonl, 16);
        let errors: Vec<String> = got
            .into_iter()
            .filter_map(|b| parse_block(b, InputFormat::Jsonl, false, None).err())
            .collect();
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("line 3, column 6:"), "{}", errors[0]);
        let text = "a,b\n1,2\n3,4\n5\n";
        let got = blocks(text, InputFormat::Csv, 8);
        let errors: Vec<String> = got
            .into_iter()
            .filter_map(|b| parse_block(b, InputFormat::Csv, false, None).err())
            .collect();
        assert!(errors[0].starts_with("line 4: 1 fields"), "{errors:?}");
    }
}
