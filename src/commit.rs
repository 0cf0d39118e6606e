//! Commitments and seeds: the domain-separated SHA-256 constructions of SPEC.md.
//!
//! Every construction hashes a domain tag followed by length-prefixed fields: each field is its
//! byte length as a big-endian `u32`, then its bytes; integers are 8-byte big-endian. This makes the
//! encoding unambiguous (no two field lists hash the same input).

use sha2::{Digest, Sha256};

/// Domain tag of an order commitment (SPEC.md "Order commitment").
pub const ORDER_TAG: &str = "pbem/order-commitment/v1";
/// Domain tag of a host-seed commitment (SPEC.md "Host seed").
pub const HOST_SEED_TAG: &str = "pbem/host-seed-commitment/v1";
/// Domain tag of a step seed (SPEC.md "Step seed").
pub const STEP_SEED_TAG: &str = "pbem/step-seed/v1";
/// The nonce used for a role that sent no orders (NMR) or signed an order with an empty nonce.
pub const NMR_NONCE: [u8; 32] = [0; 32];

/// An incremental hasher for the length-prefixed encoding.
struct Fields(Sha256);

impl Fields {
    fn new(tag: &str) -> Self {
        let mut f = Fields(Sha256::new());
        f.bytes(tag.as_bytes());
        f
    }
    fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.0.update((b.len() as u32).to_be_bytes());
        self.0.update(b);
        self
    }
    fn int(&mut self, n: u64) -> &mut Self {
        self.0.update(n.to_be_bytes());
        self
    }
    fn finish(self) -> [u8; 32] {
        self.0.finalize().into()
    }
}

/// Plain SHA-256 of `bytes`, as 64 lowercase hex digits (used for file hashes in the record chain).
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The commitment to a host seed published before a step opens: `H(tag, game, step, host_seed)`.
pub fn host_seed_commitment(game: &str, step: u64, host_seed: &[u8; 32]) -> [u8; 32] {
    let mut f = Fields::new(HOST_SEED_TAG);
    f.bytes(game.as_bytes()).int(step).bytes(host_seed);
    f.finish()
}

/// The receipt commitment of an order: `H(tag, game, step, role, signed_text)` over the exact
/// normalized signed bytes (the nonce inside them makes it hiding).
pub fn order_commitment(game: &str, step: u64, role: &str, signed_text: &[u8]) -> [u8; 32] {
    let mut f = Fields::new(ORDER_TAG);
    f.bytes(game.as_bytes()).int(step).bytes(role.as_bytes()).bytes(signed_text);
    f.finish()
}

/// The step seed: `H(tag, game, step, host_seed, n, (role_i, nonce_i) for each asked role in sorted
/// order)`, where `n` is the number of roles and an NMR's nonce is [`NMR_NONCE`].
///
/// `nonces` must be sorted by role; the caller passes a `BTreeMap` iterator.
pub fn step_seed<'a>(
    game: &str,
    step: u64,
    host_seed: &[u8; 32],
    nonces: impl ExactSizeIterator<Item = (&'a str, &'a [u8; 32])>,
) -> [u8; 32] {
    let mut f = Fields::new(STEP_SEED_TAG);
    f.bytes(game.as_bytes()).int(step).bytes(host_seed).int(nonces.len() as u64);
    for (role, nonce) in nonces {
        f.bytes(role.as_bytes()).bytes(nonce);
    }
    f.finish()
}

/// Domain tag of a state commitment (SPEC.md "State commitment").
pub const STATE_TAG: &str = "pbem/state-commitment/v1";

/// The commitment to the state after record `index` that the record carries:
/// `H(tag, game, index, state_key, state_bytes)`. The state holds what the rules keep secret
/// (hands, a paused round's plans, standing orders), and a plain hash of it could be matched by
/// guessing those; the game's secret `state_key` makes it hiding until the last record reveals
/// the key.
pub fn state_commitment(game: &str, index: u64, state_key: &[u8; 32], state: &[u8]) -> [u8; 32] {
    let mut f = Fields::new(STATE_TAG);
    f.bytes(game.as_bytes()).int(index).bytes(state_key).bytes(state);
    f.finish()
}

/// Domain tag of a built-in player's seed (SPEC.md "NMR policy").
pub const BOT_SEED_TAG: &str = "pbem/bot-seed/v1";

/// The seed of the built-in player answering for an NMR `role` in step `step`:
/// `H(tag, game, step, step_seed, role)`. It is fixed once the step seed is, so the audit can
/// re-derive the built-in player's orders.
pub fn bot_seed(game: &str, step: u64, step_seed: &[u8; 32], role: &str) -> [u8; 32] {
    let mut f = Fields::new(BOT_SEED_TAG);
    f.bytes(game.as_bytes()).int(step).bytes(step_seed).bytes(role.as_bytes());
    f.finish()
}

/// 32 fresh random bytes from the operating system (host seeds, nonces, keys).
pub fn fresh_32() -> [u8; 32] {
    let mut b = [0u8; 32];
    getrandom::fill(&mut b).expect("operating system randomness");
    b
}

/// Parses 64 hex digits into 32 bytes; `None` if malformed.
pub fn parse_32(hex_text: &str) -> Option<[u8; 32]> {
    let v = hex::decode(hex_text.trim()).ok()?;
    v.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Test vectors published in SPEC.md; changing an encoding breaks every old game's audit.
    #[test]
    fn spec_vectors() {
        let seed = [0x11u8; 32];
        assert_eq!(
            hex::encode(host_seed_commitment("g1", 1, &seed)),
            include_str!("../tests/vectors/host_seed_commitment.txt").trim()
        );
        assert_eq!(
            hex::encode(order_commitment("g1", 1, "union", b"[orders]\n")),
            include_str!("../tests/vectors/order_commitment.txt").trim()
        );
        let n1 = [0x22u8; 32];
        let nonces = [("confederate", &NMR_NONCE), ("union", &n1)];
        assert_eq!(
            hex::encode(step_seed("g1", 1, &seed, nonces.iter().map(|(r, n)| (*r, *n)))),
            include_str!("../tests/vectors/step_seed.txt").trim()
        );
        assert_eq!(
            hex::encode(state_commitment("g1", 3, &[0x33u8; 32], b"{}\n")),
            include_str!("../tests/vectors/state_commitment.txt").trim()
        );
    }

    #[test]
    fn fields_are_unambiguous() {
        assert_ne!(order_commitment("g", 1, "ab", b"c"), order_commitment("g", 1, "a", b"bc"));
    }
}
