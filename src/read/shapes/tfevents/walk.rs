//! Walking a run's event files: a chunk of each file at a time, a window of records decoded on every
//! thread while the one before is handed on, in order, as scalar values.

use std::collections::{BTreeMap, HashMap};

use prost::Message;

use super::{tensor_scalar, wire, TensorProto};

/// What the run knows of a tag, by the order tags were first met.
pub(super) struct TagInfo {
    pub(super) name: String,
    /// The plugin the tag's first value named ("" when none): the metadata is only on a first value.
    pub(super) plugin: String,
    /// Its column among the scalar tags, once it has had a scalar value.
    pub(super) column: Option<usize>,
}

/// Tags by name, with a guess of the next tag from the last event's order: a trainer logs the same tags in
/// the same order at every step, so the guess spares a hash of most tags.
#[derive(Default)]
pub(super) struct Tags {
    pub(super) infos: Vec<TagInfo>,
    pub(super) by_name: HashMap<String, usize>,
    /// The tag that followed each tag last time (`usize::MAX`: none yet); the last entry is for an event's
    /// first value.
    pub(super) next: Vec<usize>,
}

impl Tags {
    /// The tag's index; `previous` is the index of the value before it in its event (`None` for the
    /// first), `plugin` the value's own plugin name, kept when the tag is new.
    fn index(&mut self, previous: Option<usize>, tag: &str, plugin: &str) -> usize {
        let guess = match previous {
            Some(p) => self.next.get(p).copied(),
            None => self.next.last().copied(),
        };
        let index = match guess {
            Some(g) if g < self.infos.len() && self.infos[g].name == tag => g,
            _ => match self.by_name.get(tag) {
                Some(&i) => i,
                None => {
                    self.infos.push(TagInfo {
                        name: tag.to_owned(),
                        plugin: plugin.to_owned(),
                        column: None,
                    });
                    self.by_name.insert(tag.to_owned(), self.infos.len() - 1);
                    self.infos.len() - 1
                }
            },
        };
        // `next` has one entry per tag and a last one for first values.
        if self.next.len() < self.infos.len() + 1 {
            let first = self.next.pop().unwrap_or(usize::MAX);
            self.next.resize(self.infos.len(), usize::MAX);
            self.next.push(first);
        }
        match previous {
            Some(p) => self.next[p] = index,
            None => *self.next.last_mut().expect("one entry for first values") = index,
        }
        index
    }
}

/// The events of one stretch of records, decoded on one thread.
#[derive(Default)]
struct Decoded<'a> {
    /// Each event with a summary: its head and its values' range in `values`.
    events: Vec<(wire::EventHead, std::ops::Range<usize>)>,
    values: Vec<wire::ValueView<'a>>,
    bad_crc: usize,
    undecodable: usize,
}

/// Bytes of an event file read at a time (more where one record is longer): the file is read in chunks,
/// so memory stays bounded by a chunk whatever the file's size (image and histogram events make files of
/// gigabytes).
const CHUNK_BYTES: usize = 16 << 20;
/// Records decoded at a time: the events of a window are held while the window is handed on.
const WINDOW_RECORDS: usize = 1 << 14;
/// Records one thread decodes at a time within a window.
const RECORDS_PER_TASK: usize = 2048;

/// Checks and decodes a window of records on every thread, in order, into `pool` (one entry a task,
/// their buffers kept from window to window).
fn decode<'a>(
    bytes: &'a [u8],
    records: &[(std::ops::Range<usize>, u32)],
    pool: &mut Vec<Decoded<'a>>,
) {
    use rayon::prelude::*;
    let tasks = records.len().div_ceil(RECORDS_PER_TASK);
    pool.truncate(tasks);
    pool.resize_with(tasks, Decoded::default);
    pool.par_iter_mut()
        .zip(records.par_chunks(RECORDS_PER_TASK))
        .for_each(|(out, task)| {
            out.events.clear();
            out.values.clear();
            out.bad_crc = 0;
            out.undecodable = 0;
            let mut previous = 0..0;
            for record in task {
                if !wire::data_is_intact(bytes, record) {
                    out.bad_crc += 1;
                    continue;
                }
                let start = out.values.len();
                match wire::event(&bytes[record.0.clone()], &mut out.values, previous.clone()) {
                    Ok(head) if head.has_summary => {
                        previous = start..out.values.len();
                        out.events.push((head, previous.clone()));
                    }
                    Ok(_) => {}
                    Err(wire::NotAnEvent) => out.undecodable += 1,
                }
            }
        });
}

/// An event file to read: its name (for messages) and how to open it. A run may be read twice (see
/// `rows::InOrder`), each time from the start.
pub struct EventFile {
    pub name: String,
    open: OpenEvents,
}

/// How to open an event file from its start.
type OpenEvents = Box<dyn Fn() -> std::io::Result<Box<dyn std::io::Read + Send>> + Send + Sync>;

/// Bytes held in memory, shared by every reading of them.
struct SharedBytes(std::sync::Arc<Vec<u8>>);

impl AsRef<[u8]> for SharedBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl EventFile {
    pub fn new(
        name: impl Into<String>,
        open: impl Fn() -> std::io::Result<Box<dyn std::io::Read + Send>> + Send + Sync + 'static,
    ) -> EventFile {
        EventFile {
            name: name.into(),
            open: Box::new(open),
        }
    }

    /// An event file already in memory.
    pub fn from_bytes(name: impl Into<String>, bytes: Vec<u8>) -> EventFile {
        let bytes = std::sync::Arc::new(bytes);
        EventFile::new(name, move || {
            Ok(Box::new(std::io::Cursor::new(SharedBytes(bytes.clone()))))
        })
    }
}

/// Reads from `reader` onto `buf` until it holds `want` bytes; whether the reader ended first.
pub(super) fn fill(
    reader: &mut dyn std::io::Read,
    buf: &mut Vec<u8>,
    want: usize,
) -> std::io::Result<bool> {
    use std::io::Read;
    if buf.len() >= want {
        return Ok(false);
    }
    let missing = (want - buf.len()) as u64;
    // Room for a chunk at once: grown by doubling, the buffer was copied and its new pages faulted in
    // several times a chunk (3% of the 1M-scalar bench, interleaved medians). No more: `want` may be a
    // damaged record's length.
    buf.reserve((want - buf.len()).min(CHUNK_BYTES));
    let read = reader.take(missing).read_to_end(buf)? as u64;
    Ok(read < missing)
}

/// What walking a run's files met besides their scalars.
#[derive(Default)]
pub(super) struct Walk {
    pub(super) tags: Tags,
    /// The scalar tags (their index in `tags`), in the order of their first scalar value: the columns.
    pub(super) tag_order: Vec<usize>,
    /// The last text each text-summary tag wrote (a trainer writes its device name and precision so).
    pub(super) texts: BTreeMap<String, String>,
    pub(super) bad_crc: usize,
    pub(super) undecodable: usize,
    pub(super) warnings: Vec<String>,
}

/// One scalar value, as the walk hands it on.
#[derive(Clone, Copy)]
pub(super) struct Scalar {
    /// The file it came from, in the order given.
    pub(super) file: usize,
    pub(super) step: i64,
    pub(super) wall_time: f64,
    /// Its tag's column (an index into [`Walk::tag_order`]).
    pub(super) column: usize,
    pub(super) value: f64,
}

/// Walks the files' events in order, a chunk of each file at a time, and hands each scalar value to
/// `take`, which may stop the walk. A window of records is decoded on every thread while the one before
/// it is handed on.
pub(super) fn walk(
    files: &[EventFile],
    take: impl FnMut(Scalar) -> std::ops::ControlFlow<()> + Send,
) -> Result<(Walk, std::ops::ControlFlow<()>), String> {
    walk_in_chunks(files, CHUNK_BYTES, take)
}

/// [`walk`], reading `chunk` bytes at a time.
pub(super) fn walk_in_chunks(
    files: &[EventFile],
    chunk: usize,
    mut take: impl FnMut(Scalar) -> std::ops::ControlFlow<()> + Send,
) -> Result<(Walk, std::ops::ControlFlow<()>), String> {
    use std::ops::ControlFlow;
    let mut w = Walk::default();
    for (file, EventFile { name, open }) in files.iter().enumerate() {
        let mut reader = open().map_err(|e| format!("{name}: {e}"))?;
        let mut buf: Vec<u8> = Vec::new();
        // The file offset of buf[0], and the bytes the next chunk must hold at least (a record longer
        // than a chunk).
        let (mut base, mut need) = (0usize, 0usize);
        loop {
            let ended = fill(&mut reader, &mut buf, chunk.max(need))
                .map_err(|e| format!("{name}: byte {}: {e}", base + buf.len()))?;
            let frames = wire::frames(&buf, base).map_err(|e| format!("{name}: {e}"))?;
            let windows: Vec<_> = frames.records.chunks(WINDOW_RECORDS).collect();
            let (mut current, mut next) = (Vec::new(), Vec::new());
            if let Some(first) = windows.first() {
                decode(&buf, first, &mut current);
            }
            for k in 0..windows.len() {
                let (flow, ()) = rayon::join(
                    || w.hand_on(&current, file, &mut take),
                    || {
                        if let Some(window) = windows.get(k + 1) {
                            decode(&buf, window, &mut next);
                        }
                    },
                );
                if flow.is_break() {
                    return Ok((w, ControlFlow::Break(())));
                }
                std::mem::swap(&mut current, &mut next);
            }
            drop((current, next));
            let done = frames.torn_at.unwrap_or(buf.len());
            if ended {
                if let Some(at) = frames.torn_at {
                    w.warnings.push(format!(
                        "{name}: the record at byte {} is cut short (a run killed mid-write?): skipped",
                        base + at
                    ));
                }
                break;
            }
            // At least a byte more than is left, so every chunk gets on (a length too large for memory,
            // whose CRC holds, reads to the end and is a record cut short).
            need = (buf.len() - done + 1).max(wire::record_size(&buf[done..]).unwrap_or(12));
            buf.drain(..done);
            base += done;
        }
    }
    Ok((w, ControlFlow::Continue(())))
}

impl Walk {
    /// The column of the scalar tag called `name`, if the run has one.
    pub(super) fn column_named(&self, name: &str) -> Option<usize> {
        self.tag_order
            .iter()
            .position(|t| self.tags.infos[*t].name == name)
    }

    /// Hands the scalar values of a decoded window on to `take`, keeping the tags and texts met.
    fn hand_on(
        &mut self,
        window: &[Decoded<'_>],
        file: usize,
        take: &mut impl FnMut(Scalar) -> std::ops::ControlFlow<()>,
    ) -> std::ops::ControlFlow<()> {
        use std::ops::ControlFlow;
        for decoded in window {
            self.bad_crc += decoded.bad_crc;
            self.undecodable += decoded.undecodable;
            for (event, range) in &decoded.events {
                let mut previous = None;
                let mut broken_tensor = false;
                for value in &decoded.values[range.clone()] {
                    let tag = self.tags.index(previous, value.tag, value.plugin);
                    previous = Some(tag);
                    let plugin = self.tags.infos[tag].plugin.as_str();
                    if plugin == "text" {
                        match value.tensor.map(TensorProto::decode) {
                            Some(Ok(t)) => {
                                if let Some(text) = t.string_val.first() {
                                    self.texts.insert(
                                        value.tag.to_string(),
                                        String::from_utf8_lossy(text).into_owned(),
                                    );
                                }
                            }
                            Some(Err(_)) => broken_tensor = true,
                            None => {}
                        }
                        continue;
                    }
                    if !(plugin.is_empty() || plugin == "scalars") {
                        continue;
                    }
                    let v = match (value.simple_value, value.tensor) {
                        (Some(v), _) => v as f64,
                        (None, Some(t)) => match TensorProto::decode(t) {
                            Ok(t) => match tensor_scalar(&t) {
                                Some(v) => v,
                                None => continue,
                            },
                            Err(_) => {
                                broken_tensor = true;
                                continue;
                            }
                        },
                        (None, None) => continue,
                    };
                    let column = match self.tags.infos[tag].column {
                        Some(c) => c,
                        None => {
                            self.tag_order.push(tag);
                            self.tags.infos[tag].column = Some(self.tag_order.len() - 1);
                            self.tag_order.len() - 1
                        }
                    };
                    let scalar = Scalar {
                        file,
                        step: event.step,
                        wall_time: event.wall_time,
                        column,
                        value: v,
                    };
                    if take(scalar).is_break() {
                        return ControlFlow::Break(());
                    }
                }
                self.undecodable += usize::from(broken_tensor);
            }
        }
        ControlFlow::Continue(())
    }
}
