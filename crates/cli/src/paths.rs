//! Output paths named on the command line, checked before anything runs: not a folder, in a
//! folder that exists (`-`, standard output, where a command allows it, passes).

use std::path::Path;

use anyhow::{bail, Result};

/// Refuses `path` (given with `flag`) as an output file: a folder, or a file in a folder that
/// does not exist.
pub fn check_output(flag: &str, path: &Path) -> Result<()> {
    if path.as_os_str() == "-" {
        return Ok(());
    }
    if path.as_os_str().is_empty() {
        bail!("{flag}: an empty file name");
    }
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
