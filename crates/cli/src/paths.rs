//! Output paths named on the command line, checked before anything runs: not a folder, in a
//! folder that exists (`-`, standard output, where a command allows it, passes).

use std::io::Read;
use std::path::Path;

use anyhow::{bail, Context, Result};

/// Largest text file read (an experiment, a matrix, scheme parameters, a key): far above any
/// real one, small enough that `/dev/zero` or a video given by mistake is refused at once.
pub const MAX_TEXT_FILE: u64 = 4 << 20;

/// Reads the text file `path` (`what` names it in errors): at most [`MAX_TEXT_FILE`] bytes
/// (a device or a pipe that never ends is refused, not read forever), not a folder, UTF-8.
pub fn read_text(what: &str, path: &Path) -> Result<String> {
    if path.is_dir() {
        bail!("{what} '{}' is a folder, not a file", path.display());
    }
    let file = std::fs::File::open(path)
        .with_context(|| format!("cannot read {what} '{}'", path.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_TEXT_FILE + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {what} '{}'", path.display()))?;
    if bytes.len() as u64 > MAX_TEXT_FILE {
        bail!(
            "{what} '{}' is longer than {} MiB: not a text file of that kind",
            path.display(),
            MAX_TEXT_FILE >> 20
        );
    }
    String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("{what} '{}' is not text (UTF-8)", path.display()))
}

/// Refuses `path` (given with `flag`) as an output file: a folder, a symbolic link (writing
/// would overwrite what it points at), or a file in a folder that does not exist.
pub fn check_output(flag: &str, path: &Path) -> Result<()> {
    if path.as_os_str() == "-" {
        return Ok(());
    }
    if path.as_os_str().is_empty() {
        bail!("{flag}: an empty file name");
    }
    salsify_codec::output::check_not_link(path).with_context(|| flag.to_string())?;
    if path.is_dir() {
        bail!("{flag} '{}' is a folder: give a file name", path.display());
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            bail!(
                "{flag} '{}': folder '{}' does not exist",
                path.display(),
                dir.display()
            );
        }
    }
    Ok(())
}

/// [`check_output`] for every output given.
pub fn check_outputs(outputs: &[(&str, Option<&Path>)]) -> Result<()> {
    for (flag, path) in outputs {
        if let Some(path) = path {
            check_output(flag, path)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file that never ends (or is far too long) is refused, not read into memory.
    #[test]
    fn endless_or_binary_text_files_are_refused() {
        let err = read_text("key file", Path::new("/dev/zero"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("longer than"), "{err}");
        let err = read_text("key file", &std::env::temp_dir())
            .unwrap_err()
            .to_string();
        assert!(err.contains("is a folder"), "{err}");
        let err = format!(
            "{:#}",
            read_text("key file", Path::new("/nonexistent/k")).unwrap_err()
        );
        assert!(err.contains("cannot read key file"), "{err}");
    }

    #[test]
    fn folders_and_missing_folders_are_refused() {
        let dir = std::env::temp_dir();
        let err = check_output("--log", &dir).unwrap_err().to_string();
        assert!(err.contains("is a folder"), "{err}");
        let err = check_output("--ivf", Path::new("/nonexistent/x.ivf"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not exist"), "{err}");
        assert!(check_output("-o", Path::new("-")).is_ok());
        assert!(check_output("-o", Path::new("fresh.y4m")).is_ok());
        assert!(check_output("-o", &dir.join("fresh.y4m")).is_ok());
    }
}
