//! Static X25519 key pairs and their text files (`salsify keygen` writes them, `--key` and
//! `--peer-key` read them).
//!
//! ```text
//! NAME.key   # Salsify private key ...        NAME.pub   # Salsify public key ...
//!            private-key = <64 hex digits>               public-key = <64 hex digits>
//! ```
//!
//! Lines starting with `#` and blank lines are ignored. A private key file holds only the
//! private key; its public half is derived from it.

use snow::params::DHChoice;
use snow::resolvers::{CryptoResolver, DefaultResolver};

/// Bytes of an X25519 key.
pub const KEY_LEN: usize = 32;

const PRIVATE_FIELD: &str = "private-key";
const PUBLIC_FIELD: &str = "public-key";

/// Why a key (or key file's text) is unusable; the message says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// No `private-key = ...` / `public-key = ...` line.
    #[error("no '{field} = ...' line: not a Salsify {expected} file{hint}")]
    Missing {
        /// The field looked for, as the file spells it (`private-key`).
        field: &'static str,
        /// What it holds (`private key`).
        expected: &'static str,
        /// A hint when the other kind of key was given.
        hint: &'static str,
    },
    /// The value is not 64 hex digits.
    #[error("the {0} is not 64 hexadecimal digits")]
    BadHex(&'static str),
    /// The platform has no X25519 or random source.
    #[error("the crypto library is unavailable: {0}")]
    Crypto(String),
}

/// A private X25519 key. Its `Debug` never shows the key.
#[derive(Clone, PartialEq, Eq)]
pub struct PrivateKey([u8; KEY_LEN]);

/// A public X25519 key.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PublicKey(pub [u8; KEY_LEN]);

/// A private key and its public half.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keypair {
    /// The private key (`--key`).
    pub private: PrivateKey,
    /// The public key (the peer's `--peer-key`).
    pub public: PublicKey,
}

impl std::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PrivateKey(<secret>)")
    }
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({})", self.fingerprint())
    }
}

impl Keypair {
    /// A fresh key pair from the operating system's random source.
    pub fn generate() -> Result<Keypair, KeyError> {
        let mut dh = curve()?;
        let mut rng = DefaultResolver
            .resolve_rng()
            .ok_or_else(|| KeyError::Crypto("no random source".into()))?;
        dh.generate(&mut *rng)
            .map_err(|e| KeyError::Crypto(e.to_string()))?;
        let mut private = [0u8; KEY_LEN];
        private.copy_from_slice(dh.privkey());
        Ok(Keypair::from_private(PrivateKey(private)))
    }

    /// The pair of `private`.
    pub fn from_private(private: PrivateKey) -> Keypair {
        let public = private.public_key();
        Keypair { private, public }
    }
}

impl PrivateKey {
    /// The key's raw bytes (for the handshake).
    pub fn as_bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }

    /// Its public half.
    pub fn public_key(&self) -> PublicKey {
        // Panic = bug: snow's default resolver always has Curve25519.
        let mut dh = curve().expect("snow's default resolver has X25519");
        dh.set(&self.0);
        let mut public = [0u8; KEY_LEN];
        public.copy_from_slice(dh.pubkey());
        PublicKey(public)
    }

    /// The text of a private key file.
    pub fn to_text(&self) -> String {
        format!(
            "# Salsify private key: keep it secret. Give it to `salsify send/recv --key`;\n\
             # the peer gets the matching .pub file (--peer-key).\n{PRIVATE_FIELD} = {}\n",
            hex(&self.0)
        )
    }

    /// Parses a private key file's text.
    pub fn from_text(text: &str) -> Result<PrivateKey, KeyError> {
        match field(text, PRIVATE_FIELD) {
            Some(value) => Ok(PrivateKey(unhex(value, "private key")?)),
            None => Err(KeyError::Missing {
                field: PRIVATE_FIELD,
                expected: "private key",
                hint: match field(text, PUBLIC_FIELD) {
                    Some(_) => " (it is a public key: --key takes the .key file)",
                    None => "",
                },
            }),
        }
    }
}

impl PublicKey {
    /// The text of a public key file.
    pub fn to_text(&self) -> String {
        format!(
            "# Salsify public key {}: give it to the peer's `--peer-key`.\n{PUBLIC_FIELD} = {}\n",
            self.fingerprint(),
            hex(&self.0)
        )
    }

    /// Parses a public key file's text.
    pub fn from_text(text: &str) -> Result<PublicKey, KeyError> {
        match field(text, PUBLIC_FIELD) {
            Some(value) => Ok(PublicKey(unhex(value, "public key")?)),
            None => Err(KeyError::Missing {
                field: PUBLIC_FIELD,
                expected: "public key",
                hint: match field(text, PRIVATE_FIELD) {
                    Some(_) => " (it is a private key: --peer-key takes the peer's .pub file)",
                    None => "",
                },
            }),
        }
    }

    /// A short name for logs: the first 8 hex digits.
    pub fn fingerprint(&self) -> String {
        hex(&self.0[..4])
    }
}

fn curve() -> Result<Box<dyn snow::types::Dh>, KeyError> {
    DefaultResolver
        .resolve_dh(&DHChoice::Curve25519)
        .ok_or_else(|| KeyError::Crypto("no X25519".into()))
}

/// The value of the `name = value` line of `text`.
fn field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == name).then(|| v.trim())
        })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str, what: &'static str) -> Result<[u8; KEY_LEN], KeyError> {
    let bytes = text.as_bytes();
    if bytes.len() != 2 * KEY_LEN || !bytes.iter().all(u8::is_ascii_hexdigit) {
        return Err(KeyError::BadHex(what));
    }
    let mut out = [0u8; KEY_LEN];
    for (i, pair) in bytes.chunks(2).enumerate() {
        // Panic = bug: checked above that these are hex digits.
        let s = std::str::from_utf8(pair).expect("ASCII");
        out[i] = u8::from_str_radix(s, 16).expect("hex digits");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_files_round_trip_and_the_public_half_is_derived() {
        let pair = Keypair::generate().unwrap();
        let private = PrivateKey::from_text(&pair.private.to_text()).unwrap();
        assert_eq!(private, pair.private);
        assert_eq!(private.public_key(), pair.public);
        let public = PublicKey::from_text(&pair.public.to_text()).unwrap();
        assert_eq!(public, pair.public);
        assert_ne!(Keypair::generate().unwrap().public, pair.public);
        assert!(!format!("{:?}", pair.private).contains(&hex(pair.private.as_bytes())));
    }

    #[test]
    fn the_wrong_file_is_a_clear_error() {
        let pair = Keypair::generate().unwrap();
        let err = PrivateKey::from_text(&pair.public.to_text()).unwrap_err();
        assert!(err.to_string().contains("it is a public key"), "{err}");
        let err = PublicKey::from_text(&pair.private.to_text()).unwrap_err();
        assert!(err.to_string().contains("it is a private key"), "{err}");
        assert_eq!(
            PublicKey::from_text("public-key = 12zz").unwrap_err(),
            KeyError::BadHex("public key")
        );
        assert!(PublicKey::from_text("").is_err());
    }

    /// The missing line is named as the file spells it (`private-key = `), so the message
    /// matches what the user sees in a good key file.
    #[test]
    fn a_missing_line_is_named_as_the_file_spells_it() {
        let err = PrivateKey::from_text("hello").unwrap_err().to_string();
        assert!(err.contains("'private-key = ...'"), "{err}");
        let err = PublicKey::from_text("hello").unwrap_err().to_string();
        assert!(err.contains("'public-key = ...'"), "{err}");
    }
}
