//! The `--key` / `--peer-key` flags of `send` and `recv` (the files `salsify keygen` writes),
//! converted into a [`SecureConfig`].

use std::path::{Path, PathBuf};

#[cfg(unix)]
use std::os::unix::fs::PermissionsExt;

use anyhow::{bail, Context, Result};
use clap::Args;
use salsify_secure::{PrivateKey, PublicKey, SecureConfig};

/// Keys of an encrypted session (`send` and `recv`).
#[derive(Args, Debug, Clone, Default)]
pub struct KeyArgs {
    /// This side's private key file (NAME.key from `salsify keygen`). With --peer-key, every
    /// datagram is encrypted and authenticated (Noise handshake, ChaCha20-Poly1305), and
    /// only the peer holding the matching private key gets through. Without both, the
    /// session is plaintext.
    #[arg(long, requires = "peer_key")]
    pub key: Option<PathBuf>,
    /// The peer's public key file (the other side's NAME.pub from `salsify keygen`).
    #[arg(long, requires = "key")]
    pub peer_key: Option<PathBuf>,
}

impl KeyArgs {
    /// The channel configuration these flags name, if any.
    pub fn secure_config(&self) -> Result<Option<SecureConfig>> {
        let (Some(key), Some(peer)) = (&self.key, &self.peer_key) else {
            return Ok(None);
        };
        let local = read_private(key)?;
        let peer_key = PublicKey::from_text(&read(peer)?)
            .with_context(|| format!("--peer-key '{}'", peer.display()))?;
        if local.public_key() == peer_key {
            bail!(
                "--peer-key '{}' is this side's own public key: give the other side's .pub file",
                peer.display()
            );
        }
        Ok(Some(SecureConfig::new(local, peer_key)))
    }
}

/// A warning for a side without keys (`who`: `salsify send`).
pub fn plaintext_warning(who: &str) -> String {
    format!(
        "{who}: plaintext session: anyone on the path can watch or alter the video, and \
         anyone who can reach the ports can inject datagrams: forged or replayed frames, \
         shown when the real sender has been silent for the receiver's --takeover-after \
         (0.5 s) or sends nothing it can show, and forged feedback that slows the sender \
         (salsify keygen, then --key and --peer-key on both sides, encrypts it)"
    )
}

fn read(path: &Path) -> Result<String> {
    crate::paths::read_text("key file", path)
}

/// Reads a private key file: one that is no private key (a public key given by mistake)
/// is named as such first, then one that others than its owner may read is refused (as ssh
/// does): the key would no longer be private.
fn read_private(path: &Path) -> Result<PrivateKey> {
    let key = PrivateKey::from_text(&read(path)?)
        .with_context(|| format!("--key '{}'", path.display()))?;
    #[cfg(unix)]
    if let Ok(meta) = std::fs::metadata(path) {
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            bail!(
                "private key file '{}' is readable or writable by others (mode {mode:03o}): \
                 run `chmod 600 {}` (or make a new pair with salsify keygen); a key others \
                 can read is not private",
                path.display(),
                path.display()
            );
        }
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use salsify_secure::Keypair;

    /// A private key others can read is refused, as ssh does, naming the fix.
    #[test]
    fn a_private_key_others_can_read_is_refused() {
        let dir = std::env::temp_dir().join(format!("salsify-key-flags-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (Keypair::generate().unwrap(), Keypair::generate().unwrap());
        std::fs::write(dir.join("a.key"), a.private.to_text()).unwrap();
        std::fs::set_permissions(dir.join("a.key"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
        std::fs::write(dir.join("b.pub"), b.public.to_text()).unwrap();
        let args = KeyArgs {
            key: Some(dir.join("a.key")),
            peer_key: Some(dir.join("b.pub")),
        };
        assert!(args.secure_config().unwrap().is_some());
        std::fs::set_permissions(dir.join("a.key"), std::fs::Permissions::from_mode(0o644))
            .unwrap();
        let err = format!("{:#}", args.secure_config().unwrap_err());
        assert!(err.contains("chmod 600") && err.contains("644"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
