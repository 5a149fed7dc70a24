//! Output files of every command: created without following a symbolic link at their name,
//! and told apart by device and inode rather than by name.
//!
//! Writing through a link would overwrite whatever it points at (a planted link turns
//! `salsify recv -o out.y4m` into a way to clobber another file), so a link where an output
//! goes is refused with an error saying so, as `salsify keygen` does. Links in the folders
//! above the name are followed as usual: the user chose them.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

/// Whether `path` is a symbolic link itself (not following it).
pub fn is_symlink(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// The error for an output whose name is a symbolic link.
fn link_refused(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "'{}' is a symbolic link: refused as an output (writing would overwrite what it \
             points at); remove the link or give another name",
            path.display()
        ),
    )
}

/// Creates (or truncates) the output file `path` for writing, refusing a symbolic link at
/// its name: `O_NOFOLLOW`, so a link planted between a check and the open is refused too.
pub fn create(path: &Path) -> io::Result<File> {
    if is_symlink(path) {
        return Err(link_refused(path));
    }
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    options.open(path).map_err(|e| {
        // ELOOP: the name became a link after the check above.
        if is_symlink(path) {
            link_refused(path)
        } else {
            e
        }
    })
}

/// Writes `bytes` to the output file `path` as [`create`] opens it.
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) -> io::Result<()> {
    use std::io::Write;
    let mut file = create(path)?;
    file.write_all(bytes.as_ref())?;
    file.flush()
}

/// Refuses `path` as an output if it is a symbolic link (for checks before anything runs).
pub fn check_not_link(path: &Path) -> io::Result<()> {
    if is_symlink(path) {
        Err(link_refused(path))
    } else {
        Ok(())
    }
}

/// What an output path names, by device and inode: the file itself if it exists (not
/// following a link at its name), else its folder's device and inode and the file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    dev: u64,
    ino: u64,
    name: Option<std::ffi::OsString>,
}

/// The [`Identity`] of `path`, if its folder exists.
pub fn identity(path: &Path) -> Option<Identity> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let Ok(m) = std::fs::symlink_metadata(path) {
            return Some(Identity {
                dev: m.dev(),
                ino: m.ino(),
                name: None,
            });
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let m = std::fs::metadata(dir).ok()?;
        Some(Identity {
            dev: m.dev(),
            ino: m.ino(),
            name: Some(path.file_name()?.to_os_string()),
        })
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Whether two output paths name one file: the same device and inode (a hard link, the same
/// folder reached two ways, `./x` and `x`).
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (identity(a), identity(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("salsify-output-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[cfg(unix)]
    #[test]
    fn a_link_at_the_name_is_refused_and_its_target_untouched() {
        let dir = scratch("link");
        let victim = dir.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let link = dir.join("out.y4m");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let err = create(&link).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
        assert!(write(&link, "x").is_err());
        assert!(check_not_link(&link).is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        // A dangling link too.
        let dangling = dir.join("dangling");
        std::os::unix::fs::symlink(dir.join("nothing"), &dangling).unwrap();
        assert!(create(&dangling).is_err());
        assert!(!dir.join("nothing").exists());
        // A plain file is created and truncated.
        write(&dir.join("plain"), "abc").unwrap();
        write(&dir.join("plain"), "d").unwrap();
        assert_eq!(std::fs::read_to_string(dir.join("plain")).unwrap(), "d");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn the_same_file_is_told_by_device_and_inode() {
        let dir = scratch("same");
        let a = dir.join("a");
        assert!(same_file(&a, &dir.join(".").join("a")), "not yet created");
        assert!(!same_file(&a, &dir.join("b")));
        std::fs::write(&a, "").unwrap();
        std::fs::hard_link(&a, dir.join("hard")).unwrap();
        assert!(same_file(&a, &dir.join("hard")));
        let sub = dir.join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::os::unix::fs::symlink(&sub, dir.join("via")).unwrap();
        assert!(same_file(&sub.join("x"), &dir.join("via").join("x")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
