//! Output files are written whole or not at all: each goes to a temporary name in
//! the same directory and is renamed into place once complete. Only a regular
//! file or a new path is ever replaced (never a symlink, a device, a FIFO or a
//! directory), and an output directory is locked while a command writes it.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use super::Failure;

/// Refuses to write `target` unless it is a regular file or does not exist yet:
/// renaming over a symlink, a device node, a FIFO or a socket would replace it
/// (as root, `-o /dev/null` would replace the device).
pub fn check_target(target: &Path) -> Result<(), Failure> {
    let kind = match std::fs::symlink_metadata(target) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_failure(target, &e)),
        Ok(m) => m.file_type(),
    };
    let what = if kind.is_file() {
        return Ok(());
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
    };
    Err(Failure::input(format!(
        "cannot write `{}`: it is {what}; an output must be a regular file or a new path",
        target.display()
    )))
}

/// An output directory locked against another agentsim writing it at the same
/// time (two sweeps into one `--out` would share temporary files). The lock is
/// `flock` on the directory itself: no lock file is left behind, and the kernel
/// releases it when the process ends however it ends, so a killed run never
/// leaves a stale lock.
pub struct DirLock {
    _dir: File,
}

/// Creates `dir` if needed (unless `create` is false) and locks it, or refuses
/// (exit 2) when another process holds it.
pub fn lock_dir(dir: &Path, create: bool) -> Result<DirLock, Failure> {
    if create {
        std::fs::create_dir_all(dir).map_err(|e| io_failure(dir, &e))?;
    }
    let handle =
        File::open(dir).map_err(|e| Failure::input(format!("cannot open directory `{}`: {e}", dir.display())))?;
    if !handle.metadata().map_err(|e| io_failure(dir, &e))?.is_dir() {
        return Err(Failure::input(format!("`{}` is not a directory", dir.display())));
    }
    // SAFETY: `flock` on a descriptor this function owns; no memory is passed.
    let locked = unsafe { libc::flock(handle.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if locked != 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() == std::io::ErrorKind::WouldBlock {
            return Err(Failure::input(format!(
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
    /// Starts writing `target` (via `.NAME.tmp` beside it).
    pub fn create(target: &Path) -> Result<Self, Failure> {
        check_target(target)?;
        let name = target.file_name().and_then(|n| n.to_str()).unwrap_or("output");
        let temp = target.with_file_name(format!(".{name}.tmp"));
        let file = open_temp(&temp, target)?;
        Ok(Self { temp, target: target.to_path_buf(), writer: Some(BufWriter::new(file)), committed: false })
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
        // Checked again: the target may have become something else meanwhile.
        check_target(&self.target)?;
        std::fs::rename(&self.temp, &self.target).map_err(|e| io_failure(&self.target, &e))?;
        self.committed = true;
        Ok(())
    }
}

/// Opens `temp` for writing, locked (`flock`) against another agentsim writing
/// the same target: without the lock, a second writer could truncate or rename
/// the first one's half-written file. A temporary file left by a killed run is
/// not locked (the kernel dropped the lock), so it is taken over; anything at
/// that name that is not a regular file (a planted symlink, a FIFO) is removed,
/// never followed or opened.
fn open_temp(temp: &Path, target: &Path) -> Result<File, Failure> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    // A few tries: the name may be renamed away between opening and locking.
    for _ in 0..8 {
        if let Ok(m) = std::fs::symlink_metadata(temp)
            && !m.file_type().is_file()
        {
            std::fs::remove_file(temp).map_err(|e| io_failure(temp, &e))?;
        }
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(temp)
            .map_err(|e| io_failure(temp, &e))?;
        // SAFETY: `flock` on a descriptor this function owns; no memory is passed.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::WouldBlock {
                return Err(Failure::input(format!(
                    "cannot write `{}`: another agentsim is writing it now",
                    target.display()
                )));
            }
            // No `flock` on this file system: written unlocked.
        }
        let ours = file.metadata().map_err(|e| io_failure(temp, &e))?;
        // Still the file at that name (not one renamed into place meanwhile)?
        if std::fs::symlink_metadata(temp).is_ok_and(|m| m.dev() == ours.dev() && m.ino() == ours.ino())
            && ours.file_type().is_file()
        {
            file.set_len(0).map_err(|e| io_failure(temp, &e))?;
            return Ok(file);
        }
    }
    Err(Failure::input(format!("cannot write `{}`: its temporary file keeps changing", target.display())))
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        // Remove the partial file so nothing half-written is left behind (still
        // holding its lock). After a commit the name may be another writer's.
        if !self.committed {
            let _ = std::fs::remove_file(&self.temp);
        }
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

/// Writes one line of terminal output to stdout; a full or closed stdout is a
/// [`Failure`] (exit 2), never a panic, and a closed pipe never a signal (SIGPIPE
/// is left ignored, so a write reports `EPIPE`).
pub fn stdout_line(args: std::fmt::Arguments<'_>) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_fmt(args).and_then(|()| out.write_all(b"\n")).and_then(|()| out.flush()).map_err(|e| stdout_failure(&e))
}

/// Writes text to stdout as it is (it carries its own newlines), as [`stdout_line`].
pub fn stdout_text(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(|e| stdout_failure(&e))
}

fn stdout_failure(e: &std::io::Error) -> Failure {
    Failure::input(format!("cannot write to stdout: {e}"))
}

/// `println!` that returns a [`Failure`] instead of panicking: `outln!(...)?`.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::output::stdout_line(format_args!($($arg)*))
    };
}
pub(crate) use outln;

/// `eprintln!` that never panics: when stderr itself is full or closed there is
/// nowhere left to report to, so the line is dropped.
pub fn stderr_line(args: std::fmt::Arguments<'_>) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_fmt(args).and_then(|()| err.write_all(b"\n"));
}

/// `eprintln!` that never panics (see [`stderr_line`]).
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::cli::output::stderr_line(format_args!($($arg)*))
    };
}
pub(crate) use errln;
