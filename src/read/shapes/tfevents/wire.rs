//! The bytes of an event file: TFRecord framing, and a protobuf walker over `Event` that borrows what a
//! scalar needs (each value's tag, plugin name, `simple_value` and the tensor's bytes) and skips the rest
//! unread.
//!
//! Why not `prost` (which the tensors still use, and which the tests hold this walker to): decoding an
//! `Event` with prost allocates its summary's values and a `String` per tag, and copies every image,
//! histogram and audio clip it is asked to keep. On `benches/tfevents.sh` (1,000,000 scalars in 250,000
//! events, 25 MB; release, the 2-core machine, 2026-12-07), prost's decoding and the hashing and copying
//! of its tags were the top of the profile, and the read stage (`MFU_TIMINGS=1`) took 0.31-0.34 s; with
//! this walker (on every thread, a window of records at a time) and the rows built as columns in order
//! (`InOrder`), 0.06-0.08 s (docs/performance.md has the whole run).
//!
//! The walker follows protobuf's rules where a writer could differ: fields in any order, unknown fields
//! (of every wire type, groups included) skipped, a field written twice keeping its last value (a repeated
//! `summary` appends its values, as a merge does), a `string` field that is not UTF-8 an error, as is a
//! known field of the wrong wire type. The one difference from prost: a tensor is only decoded when its
//! value is wanted (a scalar or a text), so a malformed tensor of an image makes prost refuse the whole
//! event and the walker keep its other values.

use std::ops::Range;

/// TFRecord's masked CRC-32C.
pub(super) fn masked_crc(bytes: &[u8]) -> u32 {
    let crc = crc32c::crc32c(bytes);
    (crc.rotate_right(15)).wrapping_add(0xa282_ead8)
}

/// The records of one file, framed but not checked: each record's data range and its stored data CRC.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Frames {
    /// (data, the data's stored masked CRC), in order.
    pub records: Vec<(Range<usize>, u32)>,
    /// Where a record cut short at the end starts (in `bytes`).
    pub torn_at: Option<usize>,
}

/// The bytes a record starting at `bytes[0]` takes, its framing included, where its length can be read.
pub(super) fn record_size(bytes: &[u8]) -> Option<usize> {
    let len = u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?);
    usize::try_from(len).ok()?.checked_add(16)
}

/// Splits a TFRecord stream into its records: each is a little-endian u64 length, the masked CRC-32C of
/// those eight bytes, the data, and the masked CRC-32C of the data. A length that fails its CRC is an error
/// at its byte offset in the file (`bytes` start at `base`); a record cut short ends the stream (at the
/// end of a chunk of the file, the next chunk goes on from it). The data CRCs are checked by the caller,
/// in parallel ([`data_is_intact`]).
pub(super) fn frames(bytes: &[u8], base: usize) -> Result<Frames, String> {
    let mut out = Frames::default();
    let mut at = 0;
    while at < bytes.len() {
        let Some(header) = bytes.get(at..at + 12) else {
            out.torn_at = Some(at);
            break;
        };
        let len_bytes = &header[..8];
        let len_crc = u32::from_le_bytes(header[8..12].try_into().expect("four bytes"));
        if masked_crc(len_bytes) != len_crc {
            return Err(format!(
                "byte {}: the record's length fails its CRC (not an event file, or corrupt)",
                base + at
            ));
        }
        let len = u64::from_le_bytes(len_bytes.try_into().expect("eight bytes"));
        let start = at + 12;
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| start.checked_add(l))
            .filter(|e| e.checked_add(4).is_some_and(|e4| e4 <= bytes.len()));
        let Some(end) = end else {
            out.torn_at = Some(at);
            break;
        };
        let data_crc = u32::from_le_bytes(bytes[end..end + 4].try_into().expect("four bytes"));
        out.records.push((start..end, data_crc));
        at = end + 4;
    }
    Ok(out)
}

/// Whether a record's data matches its stored CRC.
pub(super) fn data_is_intact(bytes: &[u8], (data, crc): &(Range<usize>, u32)) -> bool {
    masked_crc(&bytes[data.clone()]) == *crc
}

/// One value of an event's summary, borrowed from the record.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(super) struct ValueView<'a> {
    pub tag: &'a str,
    /// `metadata.plugin_data.plugin_name`, "" when the value names none.
    pub plugin: &'a str,
    pub simple_value: Option<f32>,
    /// The encoded `TensorProto`, when the value has one.
    pub tensor: Option<&'a [u8]>,
}

/// An event's step and wall time; its values are pushed onto the caller's vector.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(super) struct EventHead {
    pub wall_time: f64,
    pub step: i64,
    /// Whether the event has a summary at all (a `file_version` or graph event has none).
    pub has_summary: bool,
}

/// Why a record is not an event.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct NotAnEvent;

const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const START_GROUP: u8 = 3;
const END_GROUP: u8 = 4;
const FIXED32: u8 = 5;

/// A cursor over one message's bytes.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn new(bytes: &'a [u8]) -> Cursor<'a> {
        Cursor { bytes, at: 0 }
    }

    fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }

    fn varint(&mut self) -> Result<u64, NotAnEvent> {
        // Keys and short lengths are one byte.
        if let Some(&byte) = self.bytes.get(self.at) {
            if byte < 0x80 {
                self.at += 1;
                return Ok(u64::from(byte));
            }
        }
        let mut value = 0u64;
        for i in 0..10 {
            let byte = *self.bytes.get(self.at).ok_or(NotAnEvent)?;
            self.at += 1;
            // The tenth byte may only hold the last bit of a u64.
            if i == 9 && byte > 1 {
                return Err(NotAnEvent);
            }
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte < 0x80 {
                return Ok(value);
            }
        }
        Err(NotAnEvent)
    }

    /// A field's number and wire type.
    fn key(&mut self) -> Result<(u64, u8), NotAnEvent> {
        let key = self.varint()?;
        let (field, wire) = (key >> 3, (key & 7) as u8);
        if field == 0 || field > u64::from(u32::MAX >> 3) {
            return Err(NotAnEvent);
        }
        Ok((field, wire))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], NotAnEvent> {
        let end = self.at.checked_add(n).ok_or(NotAnEvent)?;
        let out = self.bytes.get(self.at..end).ok_or(NotAnEvent)?;
        self.at = end;
        Ok(out)
    }

    fn len_delimited(&mut self) -> Result<&'a [u8], NotAnEvent> {
        let n = usize::try_from(self.varint()?).map_err(|_| NotAnEvent)?;
        self.take(n)
    }

    fn fixed64(&mut self) -> Result<[u8; 8], NotAnEvent> {
        Ok(self.take(8)?.try_into().expect("eight bytes"))
    }

    fn fixed32(&mut self) -> Result<[u8; 4], NotAnEvent> {
        Ok(self.take(4)?.try_into().expect("four bytes"))
    }

    /// Skips a field of this wire type (a group up to its end, nested groups included).
    fn skip(&mut self, field: u64, wire: u8) -> Result<(), NotAnEvent> {
        match wire {
            VARINT => self.varint().map(drop),
            FIXED64 => self.take(8).map(drop),
            LEN => self.len_delimited().map(drop),
            FIXED32 => self.take(4).map(drop),
            START_GROUP => {
                // Groups open and close by field number; prost allows 100 levels of nesting.
                let mut open = vec![field];
                while let Some(&innermost) = open.last() {
                    let (f, w) = self.key()?;
                    match w {
                        START_GROUP if open.len() < 100 => open.push(f),
                        END_GROUP if f == innermost => {
                            open.pop();
                        }
                        START_GROUP | END_GROUP => return Err(NotAnEvent),
                        _ => self.skip(f, w)?,
                    }
                }
                Ok(())
            }
            _ => Err(NotAnEvent),
        }
    }
}

fn utf8(bytes: &[u8]) -> Result<&str, NotAnEvent> {
    std::str::from_utf8(bytes).map_err(|_| NotAnEvent)
}

/// Walks one record's `Event`: its step and wall time, and its summary's values pushed onto `values`
/// (left as they were when the record is not an event). `previous` is where the event before's values
/// are in `values`: a value whose tag is the one at its place in the event before takes that tag, already
/// checked to be UTF-8 (a trainer logs the same tags in the same order at every step).
pub(super) fn event<'a>(
    record: &'a [u8],
    values: &mut Vec<ValueView<'a>>,
    previous: Range<usize>,
) -> Result<EventHead, NotAnEvent> {
    let before = values.len();
    let head = walk_event(record, values, previous);
    if head.is_err() {
        values.truncate(before);
    }
    head
}

fn walk_event<'a>(
    record: &'a [u8],
    values: &mut Vec<ValueView<'a>>,
    previous: Range<usize>,
) -> Result<EventHead, NotAnEvent> {
    let mut head = EventHead::default();
    let mut c = Cursor::new(record);
    while !c.done() {
        match c.key()? {
            (1, FIXED64) => head.wall_time = f64::from_le_bytes(c.fixed64()?),
            (2, VARINT) => head.step = c.varint()? as i64,
            (5, LEN) => {
                head.has_summary = true;
                summary(c.len_delimited()?, values, previous.clone())?;
            }
            (1 | 2 | 5, _) => return Err(NotAnEvent),
            (field, wire) => c.skip(field, wire)?,
        }
    }
    Ok(head)
}

fn summary<'a>(
    bytes: &'a [u8],
    values: &mut Vec<ValueView<'a>>,
    previous: Range<usize>,
) -> Result<(), NotAnEvent> {
    let mut c = Cursor::new(bytes);
    let mut place = previous.start;
    while !c.done() {
        match c.key()? {
            (1, LEN) => {
                let known = (place < previous.end).then(|| values[place].tag);
                place += 1;
                values.push(value(c.len_delimited()?, known)?);
            }
            (1, _) => return Err(NotAnEvent),
            (field, wire) => c.skip(field, wire)?,
        }
    }
    Ok(())
}

fn value<'a>(bytes: &'a [u8], known: Option<&'a str>) -> Result<ValueView<'a>, NotAnEvent> {
    let mut out = ValueView::default();
    let mut c = Cursor::new(bytes);
    while !c.done() {
        match c.key()? {
            (1, LEN) => {
                let tag = c.len_delimited()?;
                out.tag = match known {
                    Some(k) if k.as_bytes() == tag => k,
                    _ => utf8(tag)?,
                };
            }
            (2, FIXED32) => out.simple_value = Some(f32::from_le_bytes(c.fixed32()?)),
            (8, LEN) => out.tensor = Some(c.len_delimited()?),
            (9, LEN) => {
                if let Some(name) = plugin_of_metadata(c.len_delimited()?)? {
                    out.plugin = name;
                }
            }
            (1 | 2 | 8 | 9, _) => return Err(NotAnEvent),
            (field, wire) => c.skip(field, wire)?,
        }
    }
    Ok(out)
}

/// `SummaryMetadata.plugin_data.plugin_name`, the last one written.
fn plugin_of_metadata(bytes: &[u8]) -> Result<Option<&str>, NotAnEvent> {
    let mut name = None;
    let mut c = Cursor::new(bytes);
    while !c.done() {
        match c.key()? {
            (1, LEN) => {
                let mut p = Cursor::new(c.len_delimited()?);
                while !p.done() {
                    match p.key()? {
                        (1, LEN) => name = Some(utf8(p.len_delimited()?)?),
                        (1, _) => return Err(NotAnEvent),
                        (field, wire) => p.skip(field, wire)?,
                    }
                }
            }
            (1, _) => return Err(NotAnEvent),
            (field, wire) => c.skip(field, wire)?,
        }
    }
    Ok(name)
}
