//! Cassettes: a folder of recorded answers, one JSON file per request key
//! (`docs/llm.md` documents the format; it is stable, versioned by
//! [`CASSETTE_VERSION`]).
//!
//! An entry is written whole (a temporary file renamed into place), so a
//! reader never sees half of one. Within a process, requests of one key are
//! answered one at a time: two episodes that send the same request while it
//! is being recorded get the same answer (the second reads what the first
//! recorded), so a replay of the cassette gives every episode the answer it
//! had when recording. Two processes recording into one folder at once may
//! each ask; the last to finish keeps its entry.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};

use serde_json::{Value as Json, json};

use super::error::{LlmError, LlmErrorKind};

/// The `format` field of every entry.
pub const CASSETTE_FORMAT: &str = "agentsim.llm.cassette";
/// The `version` field of entries this build writes and reads.
pub const CASSETTE_VERSION: u64 = 1;

/// The largest entry read, in bytes: a response is at most
/// [`super::client::BODY_BYTES_MAX`] and a request at most
/// [`super::request::REQUEST_BYTES_MAX`], each pretty-printed in the entry.
pub const ENTRY_BYTES_MAX: u64 = 64 << 20;

/// How a cassette is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CassetteMode {
    /// Every request asks the model; its answer replaces the entry.
    Record,
    /// Every request is answered from the cassette; a missing answer ends
    /// the episode as `agent_error`.
    Replay,
    /// Answered from the cassette when it has the answer, else asked and recorded.
    #[default]
    RecordMissing,
}

impl CassetteMode {
    /// Reads a mode as `--cassette-mode` writes it.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "record" => Some(Self::Record),
            "replay" => Some(Self::Replay),
            "record-missing" => Some(Self::RecordMissing),
            _ => None,
        }
    }
}

/// A recorded answer: the provider's response and the retries it took.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The response body, as the provider sent it (parsed).
    pub response: Json,
    /// Why each failed attempt before the answer failed (`http 429`), in order.
    pub retries: Vec<String>,
}

/// Answers carried with a run, by request key: an incident's
/// (`Incident::answers`), given to its replay so that it needs no cassette
/// folder and no network.
#[derive(Clone, Debug, Default)]
pub struct Answers(pub std::sync::Arc<std::collections::BTreeMap<String, Entry>>);

impl Answers {
    /// The answer to `key`, if carried.
    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.0.get(key)
    }
}

impl PartialEq for Answers {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

impl Eq for Answers {}

/// The file of `key` in the cassette folder `dir`.
pub fn path(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{key}.json"))
}

/// The context of an entry's `checksum` (BLAKE3 `derive_key`).
pub const CHECKSUM_CONTEXT: &str = "agentsim llm cassette checksum v1";

/// The `checksum` of an entry: BLAKE3 (64 hex digits) of the canonical
/// encoding of its `response` and `retries`, what a replay acts on. It guards
/// against an entry edited by hand or by a tool, not against an adversary
/// (anyone can compute it again).
pub fn checksum(entry: &Entry) -> String {
    let covered = json!({"response": entry.response, "retries": entry.retries});
    let text = super::request::canonical(&covered);
    blake3::Hasher::new_derive_key(CHECKSUM_CONTEXT).update(text.as_bytes()).finalize().to_hex().to_string()
}

/// The entry of `key`, or `None` when the cassette has none.
pub fn load(dir: &Path, key: &str) -> Result<Option<Entry>, LlmError> {
    Ok(load_checked(dir, key)?.map(|(entry, _)| entry))
}

/// The entry of `key` and whether it had a checksum to check (an entry
/// recorded before checksums has none), or `None` when the cassette has none.
pub fn load_checked(dir: &Path, key: &str) -> Result<Option<(Entry, bool)>, LlmError> {
    let file = path(dir, key);
    let Some(text) = read_entry(&file)? else {
        return Ok(None);
    };
    let json: Json = serde_json::from_str(&text).map_err(|e| bad(&file, &format!("is not JSON: {e}")))?;
    if json.get("format").and_then(Json::as_str) != Some(CASSETTE_FORMAT) {
        return Err(bad(&file, &format!("is not a cassette entry (no `format: \"{CASSETTE_FORMAT}\"`)")));
    }
    match json.get("version").and_then(Json::as_u64) {
        Some(CASSETTE_VERSION) => {}
        other => return Err(bad(&file, &format!("has version {other:?}; this build reads {CASSETTE_VERSION}"))),
    }
    if json.get("key").and_then(Json::as_str) != Some(key) {
        return Err(bad(&file, "names another key than its file name"));
    }
    let response = json.get("response").cloned().ok_or_else(|| bad(&file, "has no `response`"))?;
    let retries = json
        .get("retries")
        .and_then(Json::as_array)
        .map(|r| r.iter().filter_map(Json::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    let entry = Entry { response, retries };
    // An entry recorded before checksums has none: read as it was (docs/llm.md).
    match json.get("checksum") {
        None => return Ok(Some((entry, false))),
        Some(Json::String(sum)) if *sum == checksum(&entry) => {}
        Some(Json::String(_)) => {
            return Err(bad(
                &file,
                "was edited: its `response` or `retries` no longer match its `checksum` (record it again)",
            ));
        }
        Some(other) => return Err(bad(&file, &format!("has a `checksum` that is not a string: {other}"))),
    }
    Ok(Some((entry, true)))
}

/// The text of the entry `file`, `None` when there is none. Only a regular
/// file of at most [`ENTRY_BYTES_MAX`] is read: it is opened without waiting
/// (`O_NONBLOCK`: a FIFO would block the open, and then the read, for ever)
/// and checked as opened, so that nothing put there in between is read.
fn read_entry(file: &Path) -> Result<Option<String>, LlmError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let opened = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(file);
    let handle = match opened {
        Ok(handle) => handle,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(bad(file, &format!("cannot be read: {e}"))),
    };
    let metadata = handle.metadata().map_err(|e| bad(file, &format!("cannot be read: {e}")))?;
    if !metadata.is_file() {
        return Err(bad(file, "is not a regular file (a FIFO, a device or a folder is never read)"));
    }
    if metadata.len() > ENTRY_BYTES_MAX {
        return Err(bad(
            file,
            &format!("is {} bytes, more than the {} MiB an entry may hold", metadata.len(), ENTRY_BYTES_MAX >> 20),
        ));
    }
    let mut bytes = Vec::new();
    // Bounded again as read: the file may grow after its size was taken.
    handle.take(ENTRY_BYTES_MAX + 1).read_to_end(&mut bytes).map_err(|e| bad(file, &format!("cannot be read: {e}")))?;
    if bytes.len() as u64 > ENTRY_BYTES_MAX {
        return Err(bad(file, &format!("is more than the {} MiB an entry may hold", ENTRY_BYTES_MAX >> 20)));
    }
    String::from_utf8(bytes).map(Some).map_err(|e| bad(file, &format!("is not UTF-8: {e}")))
}

/// Writes the entry of `key` for `request` whole: a temporary file beside it,
/// renamed into place.
pub fn store(dir: &Path, key: &str, request: &Json, entry: &Entry) -> Result<(), LlmError> {
    let file = path(dir, key);
    std::fs::create_dir_all(dir).map_err(|e| bad(dir, &format!("cannot be created: {e}")))?;
    let document = json!({
        "format": CASSETTE_FORMAT,
        "version": CASSETTE_VERSION,
        "key": key,
        "request": request,
        "response": entry.response,
        "retries": entry.retries,
        "checksum": checksum(entry),
    });
    let mut text = serde_json::to_string_pretty(&document).unwrap_or_default();
    text.push('\n');
    write_whole(&file, text.as_bytes())
}

/// Writes `bytes` to `file` whole: a new temporary file of an unpredictable
/// name beside it ([`crate::temp_file`]: nothing planted there is written
/// through), synced, renamed into place.
fn write_whole(file: &Path, bytes: &[u8]) -> Result<(), LlmError> {
    use std::io::Write;
    let (mut handle, temporary) =
        crate::temp_file::create_beside(file).map_err(|e| bad(file, &format!("cannot be written: {e}")))?;
    let written = handle.write_all(bytes).and_then(|()| handle.sync_all()).and_then(|()| {
        drop(handle);
        std::fs::rename(&temporary, file)
    });
    written.map_err(|e| {
        let _ = std::fs::remove_file(&temporary);
        bad(file, &format!("cannot be written: {e}"))
    })
}

fn bad(file: &Path, what: &str) -> LlmError {
    LlmError::new(LlmErrorKind::Cassette, format!("cassette entry `{}` {what}", file.display()))
}

/// Requests being asked in this process (by key): another asker of the same
/// key waits, then reads the answer from the memory (see [`super::memory`]).
struct Keys {
    busy: BTreeSet<String>,
}

static KEYS: Mutex<Keys> = Mutex::new(Keys { busy: BTreeSet::new() });
static FREED: Condvar = Condvar::new();

/// The right to ask one request, held while it is asked: others of the same
/// key wait for it, so that every episode of a process gets one answer.
pub struct Recording {
    key: String,
}

impl Recording {
    /// Waits until no other episode of this process asks the request of
    /// `key`, then takes the right to.
    pub fn begin(key: &str) -> Recording {
        let mut keys = KEYS.lock().unwrap_or_else(|p| p.into_inner());
        while keys.busy.contains(key) {
            keys = FREED.wait(keys).unwrap_or_else(|p| p.into_inner());
        }
        keys.busy.insert(key.to_string());
        Recording { key: key.to_string() }
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        let mut keys = KEYS.lock().unwrap_or_else(|p| p.into_inner());
        keys.busy.remove(&self.key);
        FREED.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_bad_ones_are_named() {
        let dir = std::env::temp_dir().join(format!("agentsim-cassette-test-{}", std::process::id()));
        let entry = Entry { response: json!({"choices": []}), retries: vec!["http 429".into()] };
        assert_eq!(load(&dir, "k1").unwrap(), None);
        store(&dir, "k1", &json!({"model": "m"}), &entry).unwrap();
        assert_eq!(load(&dir, "k1").unwrap(), Some(entry));
        std::fs::write(path(&dir, "k2"), "{\"format\": \"agentsim.llm.cassette\", \"version\": 2}").unwrap();
        let err = load(&dir, "k2").unwrap_err();
        assert!(err.reason.contains("version Some(2)") && err.reason.contains("k2.json"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_entry_that_is_not_a_regular_file_or_too_large_is_refused_at_once() {
        let dir = std::env::temp_dir().join(format!("agentsim-cassette-fifo-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = std::ffi::CString::new(path(&dir, "k1").to_string_lossy().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path this test owns.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        // A FIFO nobody writes: opened for reading, it would block for ever.
        let (sent, got) = std::sync::mpsc::channel();
        let in_thread = dir.clone();
        std::thread::spawn(move || sent.send(load(&in_thread, "k1")));
        let err = got.recv_timeout(std::time::Duration::from_secs(10)).expect("load returns").unwrap_err();
        assert!(err.reason.contains("k1.json") && err.reason.contains("not a regular file"), "{err}");
        std::fs::File::create(path(&dir, "k2")).unwrap().set_len(ENTRY_BYTES_MAX + 1).unwrap();
        let err = load(&dir, "k2").unwrap_err();
        assert!(err.reason.contains("k2.json") && err.reason.contains("MiB"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_edited_answer_is_refused_and_an_entry_without_checksum_accepted() {
        let dir = std::env::temp_dir().join(format!("agentsim-cassette-edit-test-{}", std::process::id()));
        let entry = Entry { response: json!({"choices": [{"message": {"content": "refund 10"}}]}), retries: vec![] };
        store(&dir, "k1", &json!({"model": "m"}), &entry).unwrap();
        let text = std::fs::read_to_string(path(&dir, "k1")).unwrap();
        std::fs::write(path(&dir, "k1"), text.replace("refund 10", "refund 99")).unwrap();
        let err = load(&dir, "k1").unwrap_err();
        assert!(err.reason.contains("k1.json") && err.reason.contains("checksum"), "{err}");
        // Whitespace is no edit: the checksum is of the canonical encoding.
        std::fs::write(path(&dir, "k1"), text.replace("\n", "\n  ")).unwrap();
        assert_eq!(load(&dir, "k1").unwrap(), Some(entry.clone()));
        // An entry written before checksums (none) is read as it was.
        let mut old: Json = serde_json::from_str(&text).unwrap();
        old.as_object_mut().unwrap().remove("checksum");
        std::fs::write(path(&dir, "k1"), old.to_string()).unwrap();
        assert_eq!(load_checked(&dir, "k1").unwrap(), Some((entry.clone(), false)));
        store(&dir, "k1", &json!({"model": "m"}), &entry).unwrap();
        assert_eq!(load_checked(&dir, "k1").unwrap(), Some((entry, true)));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_link_planted_at_a_temporary_name_is_never_written_through() {
        let dir = std::env::temp_dir().join(format!("agentsim-cassette-link-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        // The names a writer could predict: the key and the process id.
        std::os::unix::fs::symlink(&victim, dir.join(format!(".k1.{}.tmp", std::process::id()))).unwrap();
        std::os::unix::fs::symlink(&victim, dir.join(".k1.json.tmp")).unwrap();
        let entry = Entry { response: json!({"choices": []}), retries: Vec::new() };
        store(&dir, "k1", &json!({"model": "m"}), &entry).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(load(&dir, "k1").unwrap().map(|e| e.response), Some(entry.response));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn modes_parse() {
        assert_eq!(CassetteMode::parse("replay"), Some(CassetteMode::Replay));
        assert_eq!(CassetteMode::parse("record-missing"), Some(CassetteMode::RecordMissing));
        assert_eq!(CassetteMode::parse("rewind"), None);
    }
}
