//! `salsify keygen` and the `--key` / `--peer-key` flags of `send` and `recv`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use salsify_secure::{Keypair, PrivateKey, PublicKey, SecureConfig};

/// Flags of `salsify keygen`.
#[derive(Args, Debug, Clone)]
pub struct KeygenArgs {
    /// Write the private key to NAME.key (readable by its owner only) and the public key to
    /// NAME.pub.
    #[arg(long, short, default_value = "salsify")]
    pub out: PathBuf,
    /// Overwrite existing key files.
    #[arg(long)]
    pub force: bool,
}

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
        let local = PrivateKey::from_text(&read(key)?)
            .with_context(|| format!("--key '{}'", key.display()))?;
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
        "{who}: plaintext session: anyone on the path can watch or inject video \
         (salsify keygen, then --key and --peer-key on both sides, encrypts it)"
    )
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path)
        .with_context(|| format!("cannot read key file '{}'", path.display()))
}

/// Runs `salsify keygen`.
pub fn run(args: &KeygenArgs) -> Result<()> {
    let pair = Keypair::generate().context("cannot generate a key pair")?;
    let with = |ext: &str| {
        let mut name = args.out.clone().into_os_string();
        name.push(ext);
        PathBuf::from(name)
    };
    let (private, public) = (with(".key"), with(".pub"));
    write(&private, &pair.private.to_text(), true, args.force)?;
    write(&public, &pair.public.to_text(), false, args.force)?;
    println!(
        "wrote {} (private: keep it, give it to --key) and {} (public key {}: give it to the \
         peer's --peer-key)",
        private.display(),
        public.display(),
        pair.public.fingerprint()
    );
    println!(
        "e.g. salsify keygen -o recv; salsify keygen -o send; then\n  \
         salsify recv --listen ADDR --key recv.key --peer-key send.pub\n  \
         salsify send --to ADDR --key send.key --peer-key recv.pub"
    );
    Ok(())
}

fn write(path: &Path, text: &str, secret: bool, force: bool) -> Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    #[cfg(unix)]
    if secret {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).with_context(|| match path.exists() {
        true => format!("'{}' exists (--force overwrites it)", path.display()),
        false => format!("cannot create '{}'", path.display()),
    })?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("cannot write '{}'", path.display()))
}
