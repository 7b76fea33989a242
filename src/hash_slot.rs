//! Redis Cluster's hash slot of a key: CRC16 (XMODEM) of the key, or of its
//! hash tag `{...}` when it has a non-empty one, modulo 16384. An item and
//! its order stream must share a slot, so that one command may touch both
//! on any cluster node.

pub const SLOTS: u16 = 16384;

fn crc16(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0u16, |crc, byte| {
        (0..8).fold(crc ^ (u16::from(*byte) << 8), |crc, _| {
            if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            }
        })
    })
}

/// The part of `key` that decides its slot.
fn hashed_part(key: &[u8]) -> &[u8] {
    let Some(open) = key.iter().position(|b| *b == b'{') else {
        return key;
    };
    let rest = key.get(open + 1..).unwrap_or(&[]);
    match rest.iter().position(|b| *b == b'}') {
        Some(close) if close > 0 => rest.get(..close).unwrap_or(key),
        _ => key,
    }
}

pub fn key_slot(key: &[u8]) -> u16 {
    crc16(hashed_part(key)) % SLOTS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc16_matches_the_cluster_specification() {
        assert_eq!(crc16(b"123456789"), 0x31C3);
    }

    #[test]
    fn slots_match_redis_cluster_keyslot() {
        // Values from CLUSTER KEYSLOT on a real cluster.
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"sku:1"), key_slot(b"sku:1"));
        assert_eq!(
            key_slot(b"{user1000}.following"),
            key_slot(b"{user1000}.followers")
        );
        assert_eq!(key_slot(b"{sku:1}"), key_slot(b"{sku:1}:orders"));
    }

    #[test]
    fn only_a_non_empty_first_hash_tag_counts() {
        assert_eq!(key_slot(b"foo{}{bar}"), crc16(b"foo{}{bar}") % SLOTS);
        assert_eq!(key_slot(b"foo{{bar}}zap"), key_slot(b"{bar"));
        assert_eq!(key_slot(b"foo{bar}{zap}"), key_slot(b"bar"));
        assert_eq!(key_slot(b"{"), crc16(b"{") % SLOTS);
    }
}
