//! `salsify keygen`: a key pair for encrypted sessions (`send` and `recv` read it with
//! `--key` / `--peer-key`: the flags module's `keys`).

use std::io::Write;
use std::path::{Path, PathBuf};

#[cfg(unix)]
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};

use anyhow::{bail, Context, Result};
use clap::Args;
use salsify_secure::Keypair;

/// Flags of `salsify keygen`.
#[derive(Args, Debug, Clone)]
pub struct KeygenArgs {
    /// Write the private key to NAME.key (readable by its owner only) and the public key to
    /// NAME.pub.
    #[arg(long, short, default_value = "salsify")]
    pub out: PathBuf,
    /// Replace existing key files (each atomically: a symbolic link there is replaced, never
    /// followed).
    #[arg(long)]
    pub force: bool,
    /// Quiet: print nothing when the keys are written (errors are still printed).
    #[arg(long, short)]
    pub quiet: bool,
}

/// Runs `salsify keygen`.
pub fn run(args: &KeygenArgs) -> Result<()> {
    let with = |ext: &str| {
        let mut name = args.out.clone().into_os_string();
        name.push(ext);
        PathBuf::from(name)
    };
    let (private, public) = (with(".key"), with(".pub"));
    // Both names checked before anything is written, so a refusal leaves nothing behind.
    for path in [&private, &public] {
        check_target(path, args.force)?;
    }
    let pair = Keypair::generate().context("cannot generate a key pair")?;
    // The public key first: should the private one then fail, no secret is left behind.
    write(&public, &pair.public.to_text(), 0o644, args.force)?;
    if let Err(e) = write(&private, &pair.private.to_text(), 0o600, args.force) {
        let _ = std::fs::remove_file(&public);
        return Err(e);
    }
    if args.quiet {
        return Ok(());
    }
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

/// Refuses `path` as a key file's name: an existing entry without `force`, a folder, a
/// missing folder.
fn check_target(path: &Path, force: bool) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => bail!("'{}' is a folder", path.display()),
        Ok(_) if !force => bail!("'{}' exists (--force replaces it)", path.display()),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let dir = parent(path);
            if !dir.is_dir() {
                bail!(
                    "cannot create '{}': folder '{}' does not exist",
                    path.display(),
                    dir.display()
                );
            }
            Ok(())
        }
        Err(e) => Err(e).with_context(|| format!("cannot use '{}'", path.display())),
    }
}

/// The folder a file named `path` goes in.
fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Writes `text` to `path` with permissions `mode` from creation: into a new file beside it
/// (created exclusively, never through a link), then renamed over `path`: a file or a
/// symbolic link already there (`force`) is replaced, never written through. Without
/// `force`, an entry that appeared meanwhile is not replaced.
fn write(path: &Path, text: &str, mode: u32, force: bool) -> Result<()> {
    let dir = parent(path);
    let name = path
        .file_name()
        .with_context(|| format!("'{}' names no file", path.display()))?;
    let mut temp = None;
    for attempt in 0..100u32 {
        let mut candidate = std::ffi::OsString::from(".");
        candidate.push(name);
        candidate.push(format!(".tmp{}-{attempt}", std::process::id()));
        let candidate = dir.join(candidate);
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        options.mode(mode).custom_flags(libc::O_NOFOLLOW);
        match options.open(&candidate) {
            Ok(file) => {
                temp = Some((file, candidate));
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot create '{}'", path.display())),
        }
    }
    let (mut file, temp) = temp.with_context(|| format!("cannot create '{}'", path.display()))?;
    let written = (|| -> Result<()> {
        // The mode asked for at creation is masked by the umask; set it exactly.
        #[cfg(unix)]
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        #[cfg(unix)]
        if file.metadata()?.mode() & 0o777 != mode {
            bail!("the file's permissions could not be set to {mode:03o}");
        }
        if force {
            std::fs::rename(&temp, path)?;
        } else {
            // A hard link fails if the name was taken meanwhile, unlike a rename.
            std::fs::hard_link(&temp, path)?;
            std::fs::remove_file(&temp)?;
        }
        Ok(())
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(e).with_context(|| format!("cannot write '{}'", path.display()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("salsify-keys-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path)
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    }

    fn keygen(out: &Path, force: bool) -> Result<()> {
        run(&KeygenArgs {
            out: out.to_path_buf(),
            force,
            quiet: true,
        })
    }

    /// A private key is owner-only from creation, even when --force replaces a file that
    /// was world-readable.
    #[test]
    fn a_replaced_private_key_is_owner_only() {
        let dir = temp("mode");
        let out = dir.join("wr");
        std::fs::write(dir.join("wr.key"), "old").unwrap();
        std::fs::set_permissions(dir.join("wr.key"), std::fs::Permissions::from_mode(0o644))
            .unwrap();
        keygen(&out, true).unwrap();
        assert_eq!(mode(&dir.join("wr.key")), 0o600);
        assert_eq!(mode(&dir.join("wr.pub")), 0o644);
        assert!(std::fs::read_to_string(dir.join("wr.key"))
            .unwrap()
            .contains("private-key = "));
        let leftovers: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(leftovers.len(), 2, "no temporary file left");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A symbolic link at the key's name is replaced, never followed: its target keeps its
    /// content.
    #[test]
    fn a_symlink_at_the_key_name_is_not_followed() {
        let dir = temp("link");
        let victim = dir.join("victim.txt");
        std::fs::write(&victim, "precious").unwrap();
        std::os::unix::fs::symlink(&victim, dir.join("evil.key")).unwrap();
        assert!(
            keygen(&dir.join("evil"), false).is_err(),
            "exists without --force"
        );
        keygen(&dir.join("evil"), true).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        let key = dir.join("evil.key");
        assert!(!std::fs::symlink_metadata(&key)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(mode(&key), 0o600);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// With NAME.pub already there (no --force) nothing is written: no orphan private key.
    #[test]
    fn an_existing_public_key_leaves_no_orphan_private_key() {
        let dir = temp("orphan");
        std::fs::write(dir.join("c.pub"), "mine").unwrap();
        let err = keygen(&dir.join("c"), false).unwrap_err().to_string();
        assert!(err.contains("c.pub") && err.contains("exists"), "{err}");
        assert!(!dir.join("c.key").exists());
        assert_eq!(std::fs::read_to_string(dir.join("c.pub")).unwrap(), "mine");
        let err = keygen(&dir.join("nope/c"), false).unwrap_err().to_string();
        assert!(err.contains("does not exist"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
