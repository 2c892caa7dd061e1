//! Output files are written whole or not at all: each goes to a temporary name in
//! the same directory and is renamed into place once complete.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::Failure;

/// A file being written under a temporary name.
pub struct AtomicFile {
    temp: PathBuf,
    target: PathBuf,
    /// Always `Some` until `commit` takes it.
    writer: Option<BufWriter<File>>,
}

impl AtomicFile {
    /// Starts writing `target` (via `.NAME.tmp` beside it).
    pub fn create(target: &Path) -> Result<Self, Failure> {
        let name = target.file_name().and_then(|n| n.to_str()).unwrap_or("output");
        let temp = target.with_file_name(format!(".{name}.tmp"));
        let file = File::create(&temp).map_err(|e| io_failure(&temp, &e))?;
        Ok(Self { temp, target: target.to_path_buf(), writer: Some(BufWriter::new(file)) })
    }

    /// The writer.
    pub fn writer(&mut self) -> &mut BufWriter<File> {
        self.writer.as_mut().expect("the writer is present until commit")
    }

    /// Flushes, syncs and renames into place.
    pub fn commit(mut self) -> Result<(), Failure> {
        let writer = self.writer.take().expect("the writer is present until commit");
        let file = writer.into_inner().map_err(|e| io_failure(&self.temp, e.error()))?;
        file.sync_all().map_err(|e| io_failure(&self.temp, &e))?;
        std::fs::rename(&self.temp, &self.target).map_err(|e| io_failure(&self.target, &e))
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        // After a successful commit the temporary name no longer exists; otherwise
        // remove the partial file so nothing half-written is left behind.
        let _ = std::fs::remove_file(&self.temp);
    }
}

/// An I/O failure naming the path.
pub fn io_failure(path: &Path, e: &std::io::Error) -> Failure {
    Failure::input(format!("cannot write `{}`: {e}", path.display()))
}

/// Writes a whole small file atomically.
pub fn write_atomic(target: &Path, bytes: &[u8]) -> Result<(), Failure> {
    let mut file = AtomicFile::create(target)?;
    file.writer().write_all(bytes).map_err(|e| io_failure(target, &e))?;
    file.commit()
}
