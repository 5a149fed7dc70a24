//! What the two peers share before they meet: a key from their static-static Diffie-Hellman,
//! which seals what they exchange through the rendezvous and their connectivity checks, and
//! the id they register under.
//!
//! Each side has its own private key and the other's public key (`--key`, `--peer-key`), so
//! both compute X25519(own private, other's public), the same 32 bytes, which nobody else can:
//! the rendezvous, a stranger registering under the same id, anyone on the path can neither
//! read an introduction nor forge one. The id is a hash of the two public keys (in a fixed
//! order), so the two sides find each other without saying who they are.

use blake2::{Blake2s256, Digest};
use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use rand::RngCore;

/// Bytes a sealed message adds: a 24-byte random nonce and a 16-byte tag.
pub const SEAL_OVERHEAD: usize = 24 + 16;

/// The peers' shared key, the id they meet under, and which of the two this side is.
#[derive(Clone)]
pub struct MeetKey {
    cipher: XChaCha20Poly1305,
    id: [u8; 32],
    /// Whether this side's public key sorts before the other's: the two sides differ in it,
    /// so each tells its own messages from the other's (and the lower one starts the
    /// handshake once they have met).
    low: bool,
}

impl std::fmt::Debug for MeetKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MeetKey").field("low", &self.low).finish()
    }
}

impl MeetKey {
    /// From this side's private key and public key and the peer's public key (raw 32 bytes
    /// each).
    pub fn new(private: &[u8; 32], public: &[u8; 32], peer: &[u8; 32]) -> Self {
        let secret = x25519_dalek::StaticSecret::from(*private);
        let shared = secret.diffie_hellman(&x25519_dalek::PublicKey::from(*peer));
        let key = Blake2s256::new()
            .chain_update(b"salsify-meet v1 key")
            .chain_update(shared.as_bytes())
            .finalize();
        let low = public < peer;
        let (a, b) = if low { (public, peer) } else { (peer, public) };
        let id = Blake2s256::new()
            .chain_update(b"salsify-meet v1 id")
            .chain_update(a)
            .chain_update(b)
            .finalize();
        MeetKey {
            cipher: XChaCha20Poly1305::new(&key),
            id: id.into(),
            low,
        }
    }

    /// The id both sides register under.
    pub fn id(&self) -> [u8; 32] {
        self.id
    }

    /// Whether this side's public key sorts first (it starts the handshake).
    pub fn is_low(&self) -> bool {
        self.low
    }

    /// Seals `plain` under a nonce drawn from `rng` (which must never repeat one under this
    /// key: seed it from the OS, see [`crate::MeetConfig::seed`]); a direction byte says
    /// which side wrote it.
    pub fn seal(&self, plain: &[u8], rng: &mut impl RngCore) -> Vec<u8> {
        let mut nonce = [0u8; 24];
        rng.fill_bytes(&mut nonce);
        let mut message = Vec::with_capacity(plain.len() + 1);
        message.push(u8::from(self.low));
        message.extend_from_slice(plain);
        // Panic = bug: encryption of a short buffer cannot fail.
        let sealed = self
            .cipher
            .encrypt(XNonce::from_slice(&nonce), message.as_slice())
            .expect("encryption of a short buffer");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        out
    }

    /// Opens what the *other* side sealed; `None` if forged, altered, or sealed by this side
    /// (a reflection).
    pub fn open(&self, sealed: &[u8]) -> Option<Vec<u8>> {
        if sealed.len() < SEAL_OVERHEAD + 1 {
            return None;
        }
        let (nonce, body) = sealed.split_at(24);
        let mut plain = self.cipher.decrypt(XNonce::from_slice(nonce), body).ok()?;
        let writer_low = plain.first().copied()? == 1;
        if writer_low == self.low {
            return None;
        }
        plain.remove(0);
        Some(plain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rng() -> rand_chacha::ChaCha8Rng {
        rand::SeedableRng::seed_from_u64(1)
    }

    fn pair() -> (MeetKey, MeetKey, MeetKey) {
        let a = x25519_dalek::StaticSecret::from([7u8; 32]);
        let b = x25519_dalek::StaticSecret::from([9u8; 32]);
        let c = x25519_dalek::StaticSecret::from([11u8; 32]);
        let pa = x25519_dalek::PublicKey::from(&a).to_bytes();
        let pb = x25519_dalek::PublicKey::from(&b).to_bytes();
        let pc = x25519_dalek::PublicKey::from(&c).to_bytes();
        (
            MeetKey::new(&a.to_bytes(), &pa, &pb),
            MeetKey::new(&b.to_bytes(), &pb, &pa),
            // A stranger who knows both public keys but has neither private key.
            MeetKey::new(&c.to_bytes(), &pc, &pb),
        )
    }

    #[test]
    fn both_sides_share_the_key_and_the_id_and_differ_in_direction() {
        let (a, b, _) = pair();
        assert_eq!(a.id(), b.id());
        assert_ne!(a.is_low(), b.is_low());
        let sealed = a.seal(b"candidates", &mut rng());
        assert_eq!(b.open(&sealed).as_deref(), Some(&b"candidates"[..]));
        assert_eq!(a.open(&sealed), None, "its own message reflected back");
    }

    #[test]
    fn a_stranger_can_neither_read_nor_forge() {
        let (a, b, stranger) = pair();
        let sealed = a.seal(b"candidates", &mut rng());
        assert_eq!(stranger.open(&sealed), None);
        assert_eq!(b.open(&stranger.seal(b"forged", &mut rng())), None);
        let mut flipped = sealed.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert_eq!(b.open(&flipped), None);
        assert_eq!(b.open(&sealed[..10]), None);
    }
}
