//! Files: inputs read with a bound on their size, and outputs written whole or
//! not at all. Each output goes to a temporary name in the same directory and is
//! renamed into place once complete. Only a regular file or a new path is ever
//! replaced (never a symlink, a device, a FIFO or a directory), an output
//! directory is a directory or a new path, the missing folders of either are
//! created, and one message refuses anything else ([`check_target`],
//! [`check_output_dir`]); an output directory is locked while a command writes
//! it. Used by the binary and the Python module alike.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use crate::Error;

/// The largest scenario, stack, gate or incident file read: far above any real one
/// (the largest incident in `seeds/incidents/` is 22 KB), low enough that a wrong or
/// hostile file is refused at once instead of parsed for minutes.
pub const INPUT_BYTES_MAX: u64 = 16 << 20;

/// The largest trace read (`import-trace`): production traces are longer than
/// scenarios, but a trace holds at most `agentsim::trace::RECORDS_MAX` records.
pub const TRACE_BYTES_MAX: u64 = 64 << 20;

/// The UTF-8 encoding of U+FEFF, the byte-order mark.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// Reads a text file of at most [`INPUT_BYTES_MAX`], naming it in the error.
pub fn read_text(path: &str, what: &str) -> Result<String, Error> {
    read_bounded(path, what, Some(INPUT_BYTES_MAX))
}

/// Reads a text file of at most `bytes_max` bytes (any size with `None`: the CSV
/// files agentsim wrote itself), naming it in the error: a directory, a file too
/// large, or bytes that are not UTF-8 (with the line and column of the first).
pub fn read_bounded(path: &str, what: &str, bytes_max: Option<u64>) -> Result<String, Error> {
    use std::io::Read;
    let cannot = |e: &dyn std::fmt::Display| Error::read(format!("cannot read {what} `{path}`: {e}"));
    if Path::new(path).is_dir() {
        return Err(cannot(&"it is a directory, not a file"));
    }
    let file = std::fs::File::open(path).map_err(|e| cannot(&e))?;
    let mut bytes = Vec::new();
    // `take` bounds the read even when the size on disk says nothing (a pipe).
    let limit = bytes_max.map_or(u64::MAX, |max| max + 1);
    file.take(limit).read_to_end(&mut bytes).map_err(|e| cannot(&e))?;
    if let Some(max) = bytes_max.filter(|max| bytes.len() as u64 > *max) {
        return Err(Error::read(format!(
            "{path}: {what} is larger than {} MiB, the limit for {what}s (is it the right file?)",
            max >> 20
        )));
    }
    // A UTF-8 byte-order mark (some Windows editors write one) is not part of the
    // text: dropped, so the parser sees the first real character at 1:1, where an
    // editor shows it, and every position stays right.
    if bytes.starts_with(UTF8_BOM) {
        bytes.drain(..UTF8_BOM.len());
    }
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let text = String::from_utf8_lossy(&e.as_bytes()[..offset]).into_owned();
        let line = text.matches('\n').count() + 1;
        let column = text.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        Error::content(format!(
            "{path}:{line}:{column}: {what} is not valid UTF-8 (byte 0x{:02x})",
            e.as_bytes()[offset]
        ))
        .at(path, line, column)
    })
}

/// `path` (an entry of the folder `dir`) resolved, refused unless it is a
/// regular file really inside `dir`: the rule of the files a scenario names,
/// for every folder agentsim reads whole (`summarize DIR`). A symbolic link
/// may point anywhere (`/etc/passwd`); one that stays in the folder is followed.
pub fn resolve_inside(dir: &Path, path: &Path) -> Result<PathBuf, Error> {
    let cannot = |m: &dyn std::fmt::Display| Error::read(format!("cannot read `{}`: {m}", path.display()));
    let real = path.canonicalize().map_err(|e| cannot(&e))?;
    let real_dir = dir.canonicalize().map_err(|e| cannot(&e))?;
    if !real.starts_with(&real_dir) {
        return Err(cannot(&format_args!(
            "it resolves outside the folder `{}` (to `{}`); the folder's files must be in it",
            dir.display(),
            real.display()
        )));
    }
    if !real.is_file() {
        return Err(cannot(&"it is not a regular file"));
    }
    Ok(real)
}

/// What `kind` is, in words, for an output that cannot be written there.
fn kind_in_words(kind: std::fs::FileType) -> &'static str {
    if kind.is_file() {
        "a regular file"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// The one message of every refused output (`-o FILE` and `-o DIR` alike):
/// the path, what is there, and what an output may be.
fn refused_output(target: &Path, what: &str, expected: &str) -> Error {
    Error::write(format!(
        "cannot write `{}`: it is {what}; an output must be a new path or {expected}",
        target.display()
    ))
}

/// Nothing at that path: not found, or a file where a folder of the path
/// should be (`file.txt/out`, said by [`check_ancestors`]).
fn missing(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory)
}

/// Refuses an output whose missing folders cannot be created: the nearest
/// existing ancestor of `target` must be a directory. Checked before the work,
/// so that the work is never done for nothing; the folders themselves are
/// created when the output is written.
fn check_ancestors(target: &Path) -> Result<(), Error> {
    let mut ancestor = target.parent();
    while let Some(dir) = ancestor.filter(|d| !d.as_os_str().is_empty()) {
        match std::fs::metadata(dir) {
            Ok(m) if m.is_dir() => return Ok(()),
            Ok(_) => {
                return Err(Error::write(format!(
                    "cannot write `{}`: `{}` is not a directory",
                    target.display(),
                    dir.display()
                )));
            }
            Err(e) if missing(&e) => ancestor = dir.parent(),
            Err(e) => return Err(io_failure(target, &e)),
        }
    }
    Ok(())
}

/// The rule of every output file (`-o FILE`, `--record FILE`, each file under
/// `--out`): a regular file (replaced whole) or a new path, whose missing
/// folders are created. Anything else is refused: renaming over a symlink, a
/// device node, a FIFO or a socket would replace it (as root, `-o /dev/null`
/// would replace the device).
pub fn check_target(target: &Path) -> Result<(), Error> {
    match std::fs::symlink_metadata(target) {
        Err(e) if missing(&e) => check_ancestors(target),
        Err(e) => Err(io_failure(target, &e)),
        Ok(m) if m.file_type().is_file() => Ok(()),
        Ok(m) => Err(refused_output(target, kind_in_words(m.file_type()), "a regular file")),
    }
}

/// The rule of every output directory (`sweep`, `merge`, `summarize`,
/// `compare`, `import-tau2 -o DIR`): a directory (or a symbolic link to one)
/// or a new path, whose missing folders are created; anything else is refused
/// with the message of [`check_target`].
pub fn check_output_dir(dir: &Path) -> Result<(), Error> {
    match std::fs::metadata(dir) {
        Err(e) if missing(&e) => match std::fs::symlink_metadata(dir) {
            // A symbolic link to nothing: creating the folder would follow it.
            Ok(m) => Err(refused_output(dir, kind_in_words(m.file_type()), "a directory")),
            Err(_) => check_ancestors(dir),
        },
        Err(e) => Err(io_failure(dir, &e)),
        Ok(m) if m.is_dir() => Ok(()),
        Ok(m) => Err(refused_output(dir, kind_in_words(m.file_type()), "a directory")),
    }
}

/// An output directory locked against another agentsim writing it at the same
/// time (two sweeps into one `--out` would leave one's rows beside the other's
/// summary). The lock is
/// `flock` on the directory itself: no lock file is left behind, and the kernel
/// releases it when the process ends however it ends, so a killed run never
/// leaves a stale lock.
pub struct DirLock {
    _dir: File,
}

/// Creates `dir` if needed (unless `create` is false) and locks it, or refuses
/// when another process holds it.
pub fn lock_dir(dir: &Path, create: bool) -> Result<DirLock, Error> {
    if create {
        check_output_dir(dir)?;
        std::fs::create_dir_all(dir).map_err(|e| io_failure(dir, &e))?;
    }
    let handle =
        File::open(dir).map_err(|e| Error::write(format!("cannot open directory `{}`: {e}", dir.display())))?;
    if !handle.metadata().map_err(|e| io_failure(dir, &e))?.is_dir() {
        return Err(Error::write(format!("`{}` is not a directory", dir.display())));
    }
    // SAFETY: `flock` on a descriptor this function owns; no memory is passed.
    let locked = unsafe { libc::flock(handle.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if locked != 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() == std::io::ErrorKind::WouldBlock {
            return Err(Error::write(format!(
                "`{}` is locked: another agentsim is writing there; wait for it to end or choose another directory",
                dir.display()
            )));
        }
        // A file system without `flock` (ENOLCK on some network mounts): the
        // directory is written unlocked, as before there was a lock.
    }
    Ok(DirLock { _dir: handle })
}

/// A file being written under a temporary name.
pub struct AtomicFile {
    temp: PathBuf,
    target: PathBuf,
    /// Always `Some` until `commit` takes it.
    writer: Option<BufWriter<File>>,
    /// Renamed into place.
    committed: bool,
}

impl AtomicFile {
    /// Starts writing `target` (via a new temporary file beside it, named
    /// `.NAME.<16 random hex digits>.tmp` by [`agentsim_agents::temp_file`]:
    /// nothing planted at a name is written through), creating its missing
    /// folders. Errors name `target`, never the temporary file.
    ///
    /// Two writers of one target each write their own temporary file; the
    /// last rename wins, and each leaves a whole file (a sweep's folder is
    /// locked besides: [`lock_dir`]).
    pub fn create(target: &Path) -> Result<Self, Error> {
        check_target(target)?;
        if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| io_failure(target, &e))?;
        }
        let (file, temp) = agentsim_agents::temp_file::create_beside(target).map_err(|e| io_failure(target, &e))?;
        Ok(Self { temp, target: target.to_path_buf(), writer: Some(BufWriter::new(file)), committed: false })
    }

    /// The writer.
    pub fn writer(&mut self) -> &mut BufWriter<File> {
        self.writer.as_mut().expect("the writer is present until commit")
    }

    /// Flushes, syncs and renames into place.
    pub fn commit(mut self) -> Result<(), Error> {
        let writer = self.writer.take().expect("the writer is present until commit");
        let file = writer.into_inner().map_err(|e| io_failure(&self.target, e.error()))?;
        file.sync_all().map_err(|e| io_failure(&self.target, &e))?;
        // Checked again: the target may have become something else meanwhile.
        check_target(&self.target)?;
        std::fs::rename(&self.temp, &self.target).map_err(|e| io_failure(&self.target, &e))?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        // Remove the partial file so nothing half-written is left behind (the
        // name is this writer's alone: created new, unpredictable).
        if !self.committed {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// An I/O failure naming the path.
pub fn io_failure(path: &Path, e: &std::io::Error) -> Error {
    Error::write(format!("cannot write `{}`: {e}", path.display()))
}

/// Writes a whole small file atomically.
pub fn write_atomic(target: &Path, bytes: &[u8]) -> Result<(), Error> {
    let mut file = AtomicFile::create(target)?;
    file.writer().write_all(bytes).map_err(|e| io_failure(target, &e))?;
    file.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_planted_at_a_temporary_name_is_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        // At the names a writer could predict: a hard link to another file (a
        // symbolic link is refused by O_NOFOLLOW; a hard link is a regular
        // file) and a symbolic link.
        std::fs::hard_link(&victim, dir.path().join(".out.json.tmp")).unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join(".out.json.tmp.tmp")).unwrap();
        write_atomic(&dir.path().join("out.json"), b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(std::fs::read_to_string(dir.path().join("out.json")).unwrap(), "new");
        // Nothing of this writer is left beside it.
        let mut names: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
        names.sort();
        assert_eq!(names, [".out.json.tmp", ".out.json.tmp.tmp", "out.json", "victim"]);
    }
}
