//! Bounds-checked reads of a chunk: damaged input is a `DecodeError`,
//! never a panic.

use super::*;
use crate::sale_item::MAX_ID_LEN;

pub(super) struct Reader<'a>(pub(super) &'a [u8]);

impl<'a> Reader<'a> {
    /// The tag and record count a record chunk starts with.
    pub(super) fn record_chunk_start(&mut self) -> Result<(u8, usize), DecodeError> {
        let tag = self.u8()?;
        if ![
            BUYERS_TAG,
            REQUESTS_TAG,
            REFUNDABLE_REQUESTS_TAG,
            GROUPS_TAG,
        ]
        .contains(&tag)
        {
            return Err(DecodeError("unknown chunk"));
        }
        let count = self.u32()? as usize;
        if count == 0 || count > RECORDS_PER_CHUNK {
            return Err(DecodeError("bad record count"));
        }
        Ok((tag, count))
    }

    pub(super) fn take(&mut self, len: usize) -> Result<&'a [u8], DecodeError> {
        let (head, rest) = self
            .0
            .split_at_checked(len)
            .ok_or(DecodeError("truncated chunk"))?;
        self.0 = rest;
        Ok(head)
    }

    pub(super) fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let bytes = self.take(N)?;
        bytes.try_into().map_err(|_| DecodeError("truncated chunk"))
    }

    pub(super) fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(u8::from_le_bytes(self.array()?))
    }

    pub(super) fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub(super) fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    pub(super) fn non_negative(&mut self) -> Result<i64, DecodeError> {
        let value = i64::from_le_bytes(self.array()?);
        if value < 0 {
            return Err(DecodeError("negative counter"));
        }
        Ok(value)
    }

    #[inline(always)]
    pub(super) fn varint(&mut self) -> Result<u64, DecodeError> {
        // Most numbers of a record (units, quantities, request counts, no
        // deadline) fit one byte.
        if let Some((&byte, rest)) = self.0.split_first() {
            if byte < 0x80 {
                self.0 = rest;
                return Ok(u64::from(byte));
            }
        }
        self.long_varint()
    }

    #[inline(never)]
    pub(super) fn long_varint(&mut self) -> Result<u64, DecodeError> {
        let mut value = 0u64;
        for shift in (0..70).step_by(7) {
            let byte = self.u8()?;
            let bits = u64::from(byte & 0x7f);
            // The tenth byte holds the top bit of a u64 and nothing more.
            if shift == 63 && bits > 1 {
                return Err(DecodeError("varint out of range"));
            }
            value |= bits << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(DecodeError("varint out of range"))
    }

    #[inline(always)]
    pub(super) fn non_negative_varint(&mut self) -> Result<i64, DecodeError> {
        i64::try_from(self.varint()?).map_err(|_| DecodeError("negative counter"))
    }

    #[inline]
    pub(super) fn id(&mut self) -> Result<&'a [u8], DecodeError> {
        let len = usize::from(self.u8()?);
        if len == 0 || len > MAX_ID_LEN {
            return Err(DecodeError("bad id length"));
        }
        self.take(len)
    }

    pub(super) fn finish(&self) -> Result<(), DecodeError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(DecodeError("trailing bytes in chunk"))
        }
    }
}
