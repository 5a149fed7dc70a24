//! Arbitrary text as a key file (`--key`, `--peer-key`): parsing must never panic, and a
//! key that parses must print back to text that parses to the same key.
#![no_main]

use libfuzzer_sys::fuzz_target;
use salsify_secure::{PrivateKey, PublicKey};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(key) = PrivateKey::from_text(&text) {
        let again = PrivateKey::from_text(&key.to_text()).expect("a printed key parses");
        assert!(again == key);
        let _ = key.public_key().fingerprint();
    }
    if let Ok(key) = PublicKey::from_text(&text) {
        let again = PublicKey::from_text(&key.to_text()).expect("a printed key parses");
        assert!(again == key);
    }
});
