//! Temporary files for writing a file whole: every atomic writer of the
//! workspace (the runner's output files, the CLI's and the Python module's
//! through them, cassette entries) creates its temporary file here.
//!
//! A temporary name that another user can guess is a name they can plant
//! something at first: a symbolic link (writing through it overwrites its
//! target), a hard link to another file, or a file of their own (renamed into
//! place, the output would stay theirs to change). So the file is created new
//! (`O_EXCL`: anything already at the name is never opened, a final symbolic
//! link included, `O_NOFOLLOW` saying so twice) under a name holding 64
//! random bits. The name is never output: the randomness that picks it cannot
//! reach a trajectory, a digest or a file's bytes.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Names tried before giving up: a collision of 64 random bits is a name
/// someone planted, and the next name is as unpredictable.
const TRIES_MAX: u32 = 16;

/// A new, empty file beside `target` (in the same folder, so that a rename
/// moves it into place), named `.NAME.<16 hex digits>.tmp`, and its path.
/// Nothing that was at any name it tried is opened, followed or changed.
pub fn create_beside(target: &Path) -> io::Result<(File, PathBuf)> {
    let mut last = None;
    for _ in 0..TRIES_MAX {
        let temp = name_beside(target, "tmp");
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&temp)
        {
            Ok(file) => return Ok((file, temp)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no temporary name was free")))
}

/// A fresh, unpredictable name beside `target`: `.NAME.<16 hex digits>.SUFFIX`
/// (a folder that [`std::fs::create_dir`] then creates new, for a writer of a
/// whole folder).
pub fn name_beside(target: &Path, suffix: &str) -> PathBuf {
    let name = target.file_name().map_or_else(|| "output".into(), |n| n.to_string_lossy());
    target.with_file_name(format!(".{name}.{:016x}.{suffix}", unpredictable()))
}

/// 64 bits an outsider cannot guess: the OS's randomness where it answers,
/// else the process id, a per-process counter and an address, mixed (a name
/// guessed then is only a name taken, and the next try draws again).
fn unpredictable() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut bytes = [0u8; 8];
    // SAFETY: `getrandom` writes at most `bytes.len()` bytes into the buffer
    // this function owns.
    #[cfg(target_os = "linux")]
    let filled = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) } == bytes.len() as isize;
    #[cfg(not(target_os = "linux"))]
    let filled = false;
    if filled {
        return u64::from_le_bytes(bytes);
    }
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let address = &count as *const u64 as u64;
    let mixed = u64::from(std::process::id()).rotate_left(32) ^ count.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ address;
    // splitmix64's finaliser: every input bit moves every output bit.
    let mut z = mixed;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_differ_and_nothing_planted_is_written_through() {
        let dir = std::env::temp_dir().join(format!("agentsim-temp-file-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("out.json");
        let (a, b) = (name_beside(&target, "tmp"), name_beside(&target, "tmp"));
        assert_ne!(a, b);
        let name = a.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with(".out.json.") && name.ends_with(".tmp") && name.len() == ".out.json..tmp".len() + 16);
        let (file, temp) = create_beside(&target).unwrap();
        assert!(file.metadata().unwrap().is_file() && temp.parent() == Some(dir.as_path()));
        // The file was created new: opening its name again new is refused.
        let again = OpenOptions::new().write(true).create_new(true).open(&temp).unwrap_err();
        assert_eq!(again.kind(), io::ErrorKind::AlreadyExists);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
