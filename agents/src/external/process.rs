//! One external agent process: spawned, fed lines, read with a bounded line
//! length and a wall-clock limit, killed and reaped when done.
//!
//! The wall clock is read here and only here in the library: it decides whether
//! an answer came in time, and so only whether a trajectory ends as
//! `agent_error`. A deterministic agent that answers within the limit gives the
//! same trajectory on every run.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long to wait for the stderr reader to drain after the process ended.
const STDERR_DRAIN_MS: u64 = 500;

/// A running agent process.
pub struct Process {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Result<Vec<u8>, String>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_done: Receiver<()>,
}

impl Process {
    /// Starts `command` (split on whitespace, run directly without a shell).
    pub fn spawn(command: &str, line_bytes_max: usize, stderr_bytes_max: usize) -> Result<Self, String> {
        let mut words = command.split_whitespace();
        let program = words.next().ok_or("the command is empty")?;
        let mut child = Command::new(program)
            .args(words)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start `{command}`: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout pipe")?;
        let stderr_pipe = child.stderr.take().ok_or("no stderr pipe")?;
        let (line_tx, lines) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut line = Vec::new();
                let limit = line_bytes_max as u64 + 1;
                let read = (&mut reader).take(limit).read_until(b'\n', &mut line);
                let message = match read {
                    Ok(0) => Err("the agent closed its stdout (it exited or crashed)".to_string()),
                    Ok(_) if line.last() != Some(&b'\n') && line.len() > line_bytes_max => {
                        Err(format!("a line longer than {line_bytes_max} bytes"))
                    }
                    Ok(_) => {
                        while matches!(line.last(), Some(b'\n' | b'\r')) {
                            line.pop();
                        }
                        Ok(line)
                    }
                    Err(e) => Err(format!("cannot read the agent's stdout: {e}")),
                };
                let stop = message.is_err();
                if line_tx.send(message).is_err() || stop {
                    return;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let (done_tx, stderr_done) = channel();
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut pipe = stderr_pipe;
            let mut chunk = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                if let Ok(mut kept) = sink.lock() {
                    // Keep the tail: the end of a crash is what explains it.
                    kept.extend_from_slice(&chunk[..n]);
                    let excess = kept.len().saturating_sub(stderr_bytes_max);
                    kept.drain(..excess);
                }
            }
            let _ = done_tx.send(());
        });
        Ok(Self { stdin: child.stdin.take(), child, lines, stderr, stderr_done })
    }

    /// Writes one line.
    pub fn send(&mut self, line: &str) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("stdin is closed")?;
        stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.write_all(b"\n"))
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("cannot write to the agent (it exited?): {e}"))
    }

    /// Reads one line, waiting at most `limit_ms` of wall-clock time.
    pub fn receive(&mut self, limit_ms: u64) -> Result<Vec<u8>, String> {
        match self.lines.recv_timeout(Duration::from_millis(limit_ms)) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => Err(format!("no answer within {limit_ms} ms (wall clock)")),
            Err(RecvTimeoutError::Disconnected) => Err("the agent's stdout is closed".into()),
        }
    }

    /// Kills and reaps the process; returns the tail of its stderr.
    pub fn stop(&mut self) -> String {
        self.stdin = None;
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = self.stderr_done.recv_timeout(Duration::from_millis(STDERR_DRAIN_MS));
        let kept = self.stderr.lock().map(|k| k.clone()).unwrap_or_default();
        String::from_utf8_lossy(&kept).into_owned()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stdin = None;
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
