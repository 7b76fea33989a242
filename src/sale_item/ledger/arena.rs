//! The arena: every id of an item once, in append-only chunks, each record
//! found by a 4-byte handle (chunk number, position), and walked in the
//! order it was written. See the record layouts in `ledger`.

/// Largest arena chunk; positions inside a chunk fit in 16 bits.
pub(super) const MAX_CHUNK: usize = 1 << 16;
pub(super) const FIRST_CHUNK: usize = 256;
/// Chunk numbers fit in the other 16 bits of a handle.
pub(super) const MAX_CHUNKS: usize = 1 << 16;

/// The arena or an index cannot take another record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Full;

#[derive(Clone, Default)]
pub(super) struct Arena {
    pub(super) chunks: Vec<Vec<u8>>,
}

impl Arena {
    /// Appends the record `write` writes, of at most `len` bytes, and
    /// returns its handle. Written in place, field by field: building it
    /// elsewhere first cost a copy of every record a load stores.
    pub(super) fn push(
        &mut self,
        len: usize,
        write: impl FnOnce(&mut Vec<u8>),
    ) -> Result<u32, Full> {
        let fits = self
            .chunks
            .last()
            .is_some_and(|chunk| chunk.len() + len <= chunk.capacity());
        if !fits {
            if self.chunks.len() >= MAX_CHUNKS || len > MAX_CHUNK {
                return Err(Full);
            }
            // Chunks double up to MAX_CHUNK, so a small item stays small.
            let size = (FIRST_CHUNK << self.chunks.len().min(8)).clamp(len, MAX_CHUNK);
            self.chunks.push(Vec::with_capacity(size));
        }
        let number = self.chunks.len() - 1;
        let chunk = self.chunks.last_mut().ok_or(Full)?;
        let position = chunk.len();
        write(chunk);
        debug_assert!(
            chunk.len() - position <= len,
            "a record longer than announced"
        );
        Ok(((number << 16) | position) as u32)
    }

    /// The bytes from the record at `handle` to the end of its chunk.
    pub(super) fn record(&self, handle: u32) -> &[u8] {
        let (number, position) = (handle as usize >> 16, handle as usize & 0xffff);
        self.chunks
            .get(number)
            .and_then(|chunk| chunk.get(position..))
            .unwrap_or(&[])
    }

    pub(super) fn record_mut(&mut self, handle: u32) -> &mut [u8] {
        let (number, position) = (handle as usize >> 16, handle as usize & 0xffff);
        self.chunks
            .get_mut(number)
            .and_then(|chunk| chunk.get_mut(position..))
            .unwrap_or(&mut [])
    }

    /// True if records of `first` and then `second` bytes can be pushed.
    pub(super) fn has_room(&self, first: usize, second: usize) -> bool {
        let spare = self
            .chunks
            .last()
            .map_or(0, |chunk| chunk.capacity() - chunk.len());
        let new_chunks = MAX_CHUNKS.saturating_sub(self.chunks.len());
        // Each record either fits what is left, or opens a fresh chunk.
        match (first + second <= spare, first <= spare) {
            (true, _) => true,
            (false, true) => new_chunks >= 1,
            (false, false) => new_chunks >= 2 || (new_chunks == 1 && first + second <= MAX_CHUNK),
        }
    }

    /// True if records of `bytes` bytes in all fit (see `Ledger::has_room_for`).
    pub(super) fn has_room_for(&self, bytes: usize) -> bool {
        let new_chunks = MAX_CHUNKS.saturating_sub(self.chunks.len());
        new_chunks > (2 * bytes).div_ceil(MAX_CHUNK)
    }

    pub(super) fn allocated(&self) -> usize {
        self.chunks.capacity() * std::mem::size_of::<Vec<u8>>()
            + self.chunks.iter().map(Vec::capacity).sum::<usize>()
    }
}

/// The most bytes a buyer record takes besides its name: the length byte
/// and 8 bytes of units.
pub(super) const BUYER_RECORD_EXTRA: usize = 9;
/// The most bytes a request record takes besides its id: the length byte,
/// the state, the buyer's handle and three varints of up to 10 bytes.
pub(super) const REQUEST_RECORD_EXTRA: usize = 1 + 1 + 4 + 3 * 10;

/// Marks a request record in its length byte, so that the arena can be
/// walked record by record (see `ArenaWalk`).
pub(super) const REQUEST_MARK: u8 = 0x80;

/// The length byte of a record starting with `id`: the length less one
/// (ids are 1 to 128 bytes), with `REQUEST_MARK` on a request record.
pub(super) fn length_byte(id: &[u8], request: bool) -> u8 {
    let len = id.len().saturating_sub(1).min(0x7f) as u8;
    if request {
        len | REQUEST_MARK
    } else {
        len
    }
}

/// The length of the id a length byte announces.
pub(super) fn id_len(length_byte: u8) -> usize {
    usize::from(length_byte & !REQUEST_MARK) + 1
}

/// The id at the start of a record: a length byte, then the bytes.
pub(super) fn leading_id(record: &[u8]) -> &[u8] {
    let len = record.first().map_or(0, |byte| id_len(*byte));
    record.get(1..1 + len).unwrap_or(&[])
}

/// What a record of the arena is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum RecordKind {
    Buyer,
    Request,
}

/// The records of an arena in the order they were written: each chunk from
/// its start, one record after the other.
pub(super) struct ArenaWalk<'a> {
    pub(super) chunks: &'a [Vec<u8>],
    pub(super) number: usize,
    pub(super) position: usize,
}

impl Iterator for ArenaWalk<'_> {
    type Item = (u32, RecordKind);

    fn next(&mut self) -> Option<(u32, RecordKind)> {
        loop {
            let chunk = self.chunks.get(self.number)?;
            let Some(rest) = chunk.get(self.position..).filter(|rest| !rest.is_empty()) else {
                self.number += 1;
                self.position = 0;
                continue;
            };
            let handle = ((self.number << 16) | self.position) as u32;
            let first = rest.first().copied().unwrap_or(0);
            let after_id = 1 + id_len(first);
            if first & REQUEST_MARK == 0 {
                // The name, then the units.
                self.position += after_id + 8;
                return Some((handle, RecordKind::Buyer));
            }
            // State and buyer handle, then three varints.
            let mut tail = rest.get(after_id + 5..).unwrap_or(&[]);
            for _ in 0..3 {
                take_varint(&mut tail);
            }
            self.position = chunk.len() - tail.len();
            return Some((handle, RecordKind::Request));
        }
    }
}

/// Appends `value` as a varint: seven bits a byte, low first; ten bytes
/// hold any u64.
pub fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

pub(super) fn take_varint(input: &mut &[u8]) -> u64 {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let Some((&byte, rest)) = input.split_first() else {
            break;
        };
        *input = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            break;
        }
    }
    value
}
