//! DUMP payloads as RESTORE checks them: the value's bytes, the RDB
//! version, and a CRC-64 the sender computes, so a test (or an attacker)
//! can change a payload and seal it again.

/// Redis's CRC-64 (`crc64.c`): Jones polynomial, reflected in and out,
/// initial value 0, no final xor. DUMP payloads end with it, little-endian.
pub struct Crc64([u64; 256]);

impl Crc64 {
    pub fn new() -> Self {
        // Reflected, so the table is built from the bit-reversed polynomial.
        let poly = 0xad93_d235_94c9_35a9u64.reverse_bits();
        let mut table = [0u64; 256];
        for (byte, entry) in table.iter_mut().enumerate() {
            let mut crc = byte as u64;
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ poly
                } else {
                    crc >> 1
                };
            }
            *entry = crc;
        }
        Crc64(table)
    }

    pub fn checksum(&self, bytes: &[u8]) -> u64 {
        bytes.iter().fold(0u64, |crc, byte| {
            self.0[((crc ^ u64::from(*byte)) & 0xff) as usize] ^ (crc >> 8)
        })
    }
}

impl Default for Crc64 {
    fn default() -> Self {
        Crc64::new()
    }
}

/// `payload` (a DUMP reply) with its checksum computed again, as anyone
/// who changed its bytes can do.
pub fn reseal(payload: &[u8]) -> Vec<u8> {
    let body = &payload[..payload.len().saturating_sub(8)];
    let mut sealed = body.to_vec();
    sealed.extend_from_slice(&Crc64::new().checksum(body).to_le_bytes());
    sealed
}
