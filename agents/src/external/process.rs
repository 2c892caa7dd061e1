//! One external agent process: spawned in its own process group, fed lines by a
//! writer thread, read with a bounded line length and a wall-clock limit, and
//! ended (the whole group killed, the process reaped) when done.
//!
//! The wall clock is read here and only here in the library: it decides whether
//! an answer came in time, and so only whether a trajectory ends as
//! `agent_error`. A deterministic agent that answers within the limit gives the
//! same trajectory on every run.
//!
//! Nothing an agent does can end the host process: a closed pipe is an error
//! message on the agent's channel (the writer thread blocks SIGPIPE, so a write
//! to an agent that exited fails with `EPIPE` even when the host left SIGPIPE at
//! its default), a write the agent never reads is bounded by the per-turn limit
//! like a missing answer, and the agent's children go with it (the group is
//! killed, so `sh -c` wrappers leave no orphans).

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::error::{ErrorKind, ExternalError};

/// How long to wait for the stderr reader to drain after the process ended.
const STDERR_DRAIN_MS: u64 = 500;

/// How often a wait for an answer looks at [`INTERRUPTED`].
const INTERRUPT_POLL_MS: u64 = 50;

/// Why a trajectory ended when its agent's pipes closed. The same words whether
/// the host saw it on a write (`EPIPE`) or on a read (end of file), which is a
/// race between two threads: the reason, and so the digest, must not depend on it.
/// Its kind is [`ErrorKind::Closed`], as is every other failure on the pipes.
pub const CLOSED: &str = "the agent closed its stdin or stdout (it exited or crashed)";

fn closed() -> ExternalError {
    ExternalError::new(ErrorKind::Closed, CLOSED)
}

/// The failure of an agent that gave no answer within `limit_ms` (wall clock).
pub fn timeout(limit_ms: u64) -> ExternalError {
    ExternalError::new(ErrorKind::Timeout, format!("no answer within {limit_ms} ms (wall clock)"))
}

/// Set once (by a SIGINT or SIGTERM handler, see [`interrupt`]): every running
/// agent's wait ends at once with an error and no new agent starts.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Ends every external agent's current wait and refuses to start new ones, for
/// the rest of the process: the trajectories they were in end as `agent_error`,
/// so an interrupted sweep must drop them (as `Runner::sweep_mapped_until` drops
/// the chunk running when its flag is set). Async-signal-safe (one atomic store):
/// a signal handler may call it.
pub fn interrupt() {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Whether [`interrupt`] was called.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Process groups of the running agents, for [`kill_all`]: 0 is a free slot.
/// One per running agent (a sweep runs one per thread); past the table's size an
/// agent is still ended by its trajectory, only not by `kill_all`.
static GROUPS: [AtomicI32; GROUPS_MAX] = [const { AtomicI32::new(0) }; GROUPS_MAX];
const GROUPS_MAX: usize = 1024;

/// Kills (SIGKILL) the process group of every running agent. For a signal handler
/// about to `_exit` (agents run in their own groups, so a terminal's Ctrl-C does not
/// reach them, and an agent that ignores its stdin would outlive agentsim):
/// async-signal-safe, atomic loads and `kill` only.
pub fn kill_all() {
    for slot in &GROUPS {
        let group = slot.load(Ordering::SeqCst);
        if group > 0 {
            // SAFETY: `kill` is async-signal-safe and has no memory preconditions.
            unsafe {
                libc::kill(-group, libc::SIGKILL);
            }
        }
    }
}

/// Agents started so far in this process.
static STARTED: AtomicU64 = AtomicU64::new(0);
/// Why the first agent that could not be started failed.
static FIRST_START_FAILURE: OnceLock<String> = OnceLock::new();

/// How many agents this process has started, and why the first one that could
/// not be started failed: a run in which none started (the program exists but
/// its interpreter does not, say) is a configuration error, not a measurement.
pub fn starts() -> (u64, Option<&'static str>) {
    (STARTED.load(Ordering::SeqCst), FIRST_START_FAILURE.get().map(String::as_str))
}

/// SIGINT and SIGTERM blocked on this thread while it lives; the mask before
/// is restored when it drops.
struct HeldSignals(libc::sigset_t);

impl HeldSignals {
    fn hold() -> Self {
        // SAFETY: a zeroed `sigset_t` is filled by `sigemptyset` before use;
        // `pthread_sigmask` changes only this thread's mask and writes the old one.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGINT);
            libc::sigaddset(&mut set, libc::SIGTERM);
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            HeldSignals(old)
        }
    }
}

impl Drop for HeldSignals {
    fn drop(&mut self) {
        // SAFETY: restores the mask `hold` saved, on the same thread.
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.0, std::ptr::null_mut());
        }
    }
}

fn register(group: i32) -> Option<usize> {
    GROUPS.iter().position(|slot| slot.compare_exchange(0, group, Ordering::SeqCst, Ordering::SeqCst).is_ok())
}

/// What the reader and writer threads report, in order: a line (without its
/// newline), or why the pipes are done.
pub type Line = Result<Vec<u8>, ExternalError>;

/// A [`Line`] with the tag of the process it came from, for a caller that waits
/// on several processes at once (see [`Process::spawn_tagged`]).
pub type Tagged = (u64, Line);

/// A running agent process.
pub struct Process {
    child: Child,
    /// The process group (the child's pid): killed whole at the end.
    group: i32,
    /// To the writer thread; `None` once closed.
    stdin: Option<Sender<Vec<u8>>>,
    /// Its own lines, unless they go to a shared channel.
    lines: Option<Receiver<Tagged>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_done: Receiver<()>,
    reaped: bool,
    /// Its slot in [`GROUPS`], if it found one.
    slot: Option<usize>,
}

/// Why an agent's command cannot start (found before any trajectory runs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommandError {
    /// The command names no program.
    Empty,
    /// The path exists but is no executable file.
    NotExecutable {
        /// The program, as the command names it.
        program: String,
    },
    /// The path names nothing.
    NoSuchFile {
        /// The program, as the command names it.
        program: String,
    },
    /// No directory of `PATH` holds an executable of that name.
    NotInPath {
        /// The program, as the command names it.
        program: String,
    },
}

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CommandError::Empty => f.write_str("the command is empty"),
            CommandError::NotExecutable { program } => write!(f, "cannot start `{program}`: not an executable file"),
            CommandError::NoSuchFile { program } => write!(f, "cannot start `{program}`: no such file"),
            CommandError::NotInPath { program } => {
                write!(f, "cannot start `{program}`: no executable of that name in PATH")
            }
        }
    }
}

impl std::error::Error for CommandError {}

/// Checks, as `execvp` would look for it, that `command`'s program exists and is
/// executable: a configuration that can start no agent at all is refused before
/// any trajectory runs.
pub fn check_command(command: &str) -> Result<(), CommandError> {
    use std::os::unix::fs::PermissionsExt;
    let program = command.split_whitespace().next().ok_or(CommandError::Empty)?;
    let executable =
        |path: &std::path::Path| path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    let program_name = || program.to_string();
    if program.contains('/') {
        let path = std::path::Path::new(program);
        return if executable(path) {
            Ok(())
        } else if path.exists() {
            Err(CommandError::NotExecutable { program: program_name() })
        } else {
            Err(CommandError::NoSuchFile { program: program_name() })
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    if std::env::split_paths(&path).any(|dir| executable(&dir.join(program))) {
        Ok(())
    } else {
        Err(CommandError::NotInPath { program: program_name() })
    }
}

impl Process {
    /// Starts `command` (split on whitespace, run directly without a shell) as the
    /// leader of a new process group.
    pub fn spawn(command: &str, line_bytes_max: usize, stderr_bytes_max: usize) -> Result<Self, ExternalError> {
        let (to, lines) = channel();
        let mut process = Self::spawn_tagged(command, line_bytes_max, stderr_bytes_max, 0, to)?;
        process.lines = Some(lines);
        Ok(process)
    }

    /// [`Process::spawn`] whose lines (and the error that ends them) go to
    /// `lines` tagged with `tag`, so that one thread can wait on many processes;
    /// read them there, not with [`Process::receive`].
    pub fn spawn_tagged(
        command: &str,
        line_bytes_max: usize,
        stderr_bytes_max: usize,
        tag: u64,
        lines: Sender<Tagged>,
    ) -> Result<Self, ExternalError> {
        use std::os::unix::process::CommandExt;
        if interrupted() {
            return Err(ExternalError::new(
                ErrorKind::Interrupted,
                "interrupted (SIGINT or SIGTERM): no new agent is started",
            ));
        }
        let not_started = |reason: &str| ExternalError::new(ErrorKind::Start, reason);
        let mut words = command.split_whitespace();
        let program = words.next().ok_or_else(|| not_started("the command is empty"))?;
        // Until the agent's group is registered for `kill_all`, a Ctrl-C on this
        // thread would end agentsim and leave the agent running: hold SIGINT and
        // SIGTERM back until then (the child starts with an empty mask: std
        // resets it before exec; the reader threads started here keep them
        // blocked, so the signal is handled after registration, here or by
        // another thread that never blocked it).
        let held = HeldSignals::hold();
        let mut child = Command::new(program)
            .args(words)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group: the agent's children can be ended with it, and a
            // terminal's Ctrl-C (sent to the foreground group) reaches only agentsim,
            // which then ends its agents itself.
            .process_group(0)
            .spawn()
            .map_err(|e| {
                let reason = format!("cannot start `{command}`: {e}");
                let _ = FIRST_START_FAILURE.set(reason.clone());
                ExternalError::new(ErrorKind::Start, reason)
            })?;
        STARTED.fetch_add(1, Ordering::SeqCst);
        let group = i32::try_from(child.id()).map_err(|_| not_started("the agent's pid does not fit a pid_t"))?;
        let stdout = child.stdout.take().ok_or_else(|| not_started("no stdout pipe"))?;
        let stderr_pipe = child.stderr.take().ok_or_else(|| not_started("no stderr pipe"))?;
        let stdin_pipe = child.stdin.take().ok_or_else(|| not_started("no stdin pipe"))?;
        let line_tx = lines;
        let writer_tx = line_tx.clone();
        let (stdin, to_write) = channel::<Vec<u8>>();
        std::thread::spawn(move || write_lines(stdin_pipe, &to_write, &writer_tx, tag));
        std::thread::spawn(move || read_lines(stdout, line_bytes_max, &line_tx, tag));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let (done_tx, stderr_done) = channel();
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            keep_tail(stderr_pipe, &sink, stderr_bytes_max);
            let _ = done_tx.send(());
        });
        let slot = register(group);
        drop(held);
        Ok(Self { child, group, stdin: Some(stdin), lines: None, stderr, stderr_done, reaped: false, slot })
    }

    /// Queues one line for the agent's stdin. A write that fails (the agent
    /// exited) reaches [`Process::receive`] as an error; one that blocks (the
    /// agent reads nothing) is bounded by the per-turn limit.
    pub fn send(&mut self, line: &str) -> Result<(), ExternalError> {
        let stdin = self.stdin.as_ref().ok_or_else(closed)?;
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        stdin.send(bytes).map_err(|_| closed())
    }

    /// Reads one line, waiting at most `limit_ms` of wall-clock time, and less
    /// when [`interrupt`] is called.
    pub fn receive(&mut self, limit_ms: u64) -> Result<Vec<u8>, ExternalError> {
        let lines = self.lines.as_ref().expect("receive is for a process of its own (`spawn`), not a tagged one");
        let deadline = Instant::now() + Duration::from_millis(limit_ms);
        loop {
            if interrupted() {
                return Err(ExternalError::new(
                    ErrorKind::Interrupted,
                    "interrupted (SIGINT or SIGTERM) while waiting for the agent",
                ));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left.min(Duration::from_millis(INTERRUPT_POLL_MS))) {
                Ok((_, line)) => return line,
                Err(RecvTimeoutError::Timeout) if left.is_zero() => {
                    return Err(timeout(limit_ms));
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Err(closed()),
            }
        }
    }

    /// Ends the process group and reaps the process; returns the tail of its stderr.
    pub fn stop(&mut self) -> String {
        self.end();
        let _ = self.stderr_done.recv_timeout(Duration::from_millis(STDERR_DRAIN_MS));
        let kept = self.stderr.lock().map(|k| k.clone()).unwrap_or_default();
        String::from_utf8_lossy(&kept).into_owned()
    }

    /// Kills the whole group, then reaps the leader. In this order: until it is
    /// reaped the leader's pid (the group's id) cannot be reused, so the signal
    /// reaches no other process.
    fn end(&mut self) {
        self.stdin = None;
        if self.reaped {
            return;
        }
        // SAFETY: `kill` has no memory preconditions; a negative pid names the
        // group this process created and has not reaped the leader of.
        unsafe {
            libc::kill(-self.group, libc::SIGKILL);
        }
        let _ = self.child.kill();
        // Out of the table before the leader is reaped (its pid may then be reused).
        if let Some(slot) = self.slot.take() {
            GROUPS[slot].store(0, Ordering::SeqCst);
        }
        let _ = self.child.wait();
        self.reaped = true;
    }
}

/// The writer thread: writes each queued line, and reports a failed write on the
/// agent's channel. SIGPIPE is blocked in this thread, so writing to an agent that
/// exited is an `EPIPE` error here, never a signal that ends the host; a SIGPIPE
/// left pending on the thread is discarded when it ends.
/// The reader thread: sends each line of `stdout` (without its line end) to
/// `lines`, until an error (a closed pipe, a line longer than `line_bytes_max`),
/// which it sends last.
fn read_lines(stdout: std::process::ChildStdout, line_bytes_max: usize, lines: &Sender<Tagged>, tag: u64) {
    let mut reader = BufReader::new(stdout);
    loop {
        let mut line = Vec::new();
        let limit = line_bytes_max as u64 + 1;
        let read = (&mut reader).take(limit).read_until(b'\n', &mut line);
        let message = match read {
            Ok(0) => Err(closed()),
            Ok(_) if line.last() != Some(&b'\n') && line.len() > line_bytes_max => {
                Err(ExternalError::new(ErrorKind::LineTooLong, format!("a line longer than {line_bytes_max} bytes")))
            }
            Ok(_) => {
                while matches!(line.last(), Some(b'\n' | b'\r')) {
                    line.pop();
                }
                assert!(line.len() <= line_bytes_max, "a line passed on is at most the limit");
                Ok(line)
            }
            Err(e) => Err(ExternalError::new(ErrorKind::Closed, format!("cannot read the agent's stdout: {e}"))),
        };
        let stop = message.is_err();
        if lines.send((tag, message)).is_err() || stop {
            return;
        }
    }
}

/// The stderr thread: keeps the last `bytes_max` bytes of `pipe` in `sink`
/// until it closes (the end of a crash is what explains it).
fn keep_tail(mut pipe: std::process::ChildStderr, sink: &Mutex<Vec<u8>>, bytes_max: usize) {
    let mut chunk = [0u8; 4096];
    while let Ok(n) = pipe.read(&mut chunk) {
        if n == 0 {
            break;
        }
        if let Ok(mut kept) = sink.lock() {
            kept.extend_from_slice(&chunk[..n]);
            let excess = kept.len().saturating_sub(bytes_max);
            kept.drain(..excess);
        }
    }
}

fn write_lines(mut pipe: ChildStdin, lines: &Receiver<Vec<u8>>, errors: &Sender<Tagged>, tag: u64) {
    // SAFETY: the set is initialised by `sigemptyset` before use, and
    // `pthread_sigmask` changes only this thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
    while let Ok(line) = lines.recv() {
        if let Err(e) = pipe.write_all(&line).and_then(|()| pipe.flush()) {
            let message = if e.kind() == std::io::ErrorKind::BrokenPipe {
                closed()
            } else {
                ExternalError::new(ErrorKind::Closed, format!("cannot write to the agent: {e}"))
            };
            let _ = errors.send((tag, Err(message)));
            return;
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.end();
    }
}
