//! Compressed inputs: which compression a file uses (from its magic bytes, whatever its name) and a reader
//! that undoes it as it reads. Every place that reads an input goes through here, so a compression added
//! later is recognised by the size probe, the block reader and the whole-input reader alike.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

/// A compression mfu undoes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    Gzip,
    Zstd,
}

const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];
const ZSTD_MAGIC: &[u8] = &[0x28, 0xb5, 0x2f, 0xfd];

impl Compression {
    /// The compression whose magic bytes start `head`, if any.
    pub fn sniff(head: &[u8]) -> Option<Compression> {
        if head.starts_with(GZIP_MAGIC) {
            Some(Compression::Gzip)
        } else if head.starts_with(ZSTD_MAGIC) {
            Some(Compression::Zstd)
        } else {
            None
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
        }
    }

    /// A reader of `compressed`'s decompressed bytes. Concatenated gzip members are read as one stream, as
    /// `gzip -d` does.
    pub fn decoder<'a, R: BufRead + Send + 'a>(
        self,
        compressed: R,
    ) -> io::Result<Box<dyn Read + Send + 'a>> {
        Ok(match self {
            Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(compressed)),
            Compression::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(compressed)?),
        })
    }
}

/// A file's bytes, decompressed as they are read, with the compression found (if any).
pub fn open(path: &Path) -> io::Result<(Box<dyn Read + Send>, Option<Compression>)> {
    let mut file = BufReader::with_capacity(1 << 16, File::open(path)?);
    let compression = Compression::sniff(file.fill_buf()?);
    let reader = match compression {
        Some(c) => c.decoder(file)?,
        None => Box::new(file),
    };
    Ok((reader, compression))
}

/// How many bytes a file holds once decompressed, counted up to a cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// All of it: this many bytes.
    Exactly(u64),
    /// More than the cap.
    Over(u64),
}

/// Counts `path`'s decompressed bytes, stopping once they pass `cap`: an uncompressed file's size comes
/// from the file system, a compressed file is decompressed (and its bytes thrown away) up to `cap + 1`.
/// This is what decides whether an input is small enough to read whole, so a file that compresses a
/// thousand to one is judged by what it becomes, not by what it takes on disk.
pub fn size_up_to(path: &Path, cap: u64) -> io::Result<Size> {
    let counted = match plain_len(path)? {
        Some(len) => len,
        None => {
            let (reader, _) = open(path)?;
            io::copy(&mut reader.take(cap.saturating_add(1)), &mut io::sink())?
        }
    };
    Ok(if counted > cap {
        Size::Over(cap)
    } else {
        Size::Exactly(counted)
    })
}

/// The length of the file at `path` where it is not compressed; `None` where it is. Only the magic
/// bytes are read to tell: deciding for two thousand small files reads no more of them.
pub fn plain_len(path: &Path) -> io::Result<Option<u64>> {
    let mut file = File::open(path)?;
    let mut head = [0u8; 4];
    let mut got = 0;
    while got < head.len() {
        match file.read(&mut head[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(match Compression::sniff(&head[..got]) {
        None => Some(file.metadata()?.len()),
        Some(_) => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(data).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn sniffs_magic_bytes_not_names() {
        assert_eq!(Compression::sniff(&gzip(b"x")), Some(Compression::Gzip));
        let z = zstd::stream::encode_all(&b"x"[..], 3).unwrap();
        assert_eq!(Compression::sniff(&z), Some(Compression::Zstd));
        assert_eq!(Compression::sniff(b"{\"a\":1}"), None);
        assert_eq!(Compression::sniff(&[0x1f]), None);
    }

    #[test]
    fn sizes_count_decompressed_bytes_up_to_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        // 1 MB of one repeated line compresses to about a kilobyte: its size on disk says nothing.
        let text = b"{\"step_time\":0.5,\"tokens\":1024}\n".repeat(32_768);
        let plain = dir.path().join("log.jsonl");
        let gz = dir.path().join("log.jsonl.gz");
        let zst = dir.path().join("log.dat");
        std::fs::write(&plain, &text).unwrap();
        std::fs::write(&gz, gzip(&text)).unwrap();
        std::fs::write(&zst, zstd::stream::encode_all(&text[..], 19).unwrap()).unwrap();
        assert!(std::fs::metadata(&gz).unwrap().len() < 20_000);
        let n = text.len() as u64;
        for path in [&plain, &gz, &zst] {
            assert_eq!(size_up_to(path, n).unwrap(), Size::Exactly(n), "{path:?}");
            assert_eq!(
                size_up_to(path, n - 1).unwrap(),
                Size::Over(n - 1),
                "{path:?}"
            );
            assert_eq!(
                size_up_to(path, 4096).unwrap(),
                Size::Over(4096),
                "{path:?}"
            );
        }
        // Files shorter than any magic number.
        for short in [&b""[..], b"a\n", b"\x1f"] {
            let path = dir.path().join("short");
            std::fs::write(&path, short).unwrap();
            let n = short.len() as u64;
            assert_eq!(size_up_to(&path, 10).unwrap(), Size::Exactly(n));
        }
        let (mut reader, compression) = open(&zst).unwrap();
        assert_eq!(compression, Some(Compression::Zstd));
        let mut back = Vec::new();
        reader.read_to_end(&mut back).unwrap();
        assert_eq!(back, text);
    }
}
