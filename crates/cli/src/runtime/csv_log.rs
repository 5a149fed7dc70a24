//! Per-frame CSV logs, buffered and flushed on finish (and on drop, so an early exit keeps
//! what was written).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// A CSV file being written.
pub struct CsvLog {
    path: PathBuf,
    out: BufWriter<File>,
}

impl CsvLog {
    /// Creates `path` (and its folder) and writes the header line.
    pub fn create(path: &Path, header: &str) -> Result<CsvLog> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create folder '{}'", dir.display()))?;
        }
        let file =
            File::create(path).with_context(|| format!("cannot create '{}'", path.display()))?;
        let mut log = CsvLog {
            path: path.to_owned(),
            out: BufWriter::new(file),
        };
        log.line(format_args!("{header}"))?;
        Ok(log)
    }

    /// Writes one line.
    pub fn line(&mut self, args: std::fmt::Arguments<'_>) -> Result<()> {
        writeln!(self.out, "{args}").with_context(|| format!("writing '{}'", self.path.display()))
    }

    /// Flushes the file.
    pub fn finish(mut self) -> Result<()> {
        self.out
            .flush()
            .with_context(|| format!("writing '{}'", self.path.display()))
    }
}
