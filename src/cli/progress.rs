//! A progress bar for long runs, on stderr, only when stderr is a terminal.
//!
//! It reads the wall clock, which only the binary may do, and writes nothing to
//! stdout or to any output file, so it cannot change what a run produces.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Shortest time between two redraws: often enough to look alive, rarely enough
/// to cost nothing next to 50,000 trajectories a second.
const REDRAW_EVERY: Duration = Duration::from_millis(100);

/// Width of the bar in characters.
const BAR_CHARS: u64 = 30;

/// A progress bar over `total` units (trajectories).
pub struct Progress {
    label: String,
    total: u64,
    done: u64,
    started: Instant,
    last_drawn: Option<Instant>,
    enabled: bool,
}

impl Progress {
    /// A bar; drawn only when stderr is a terminal and `quiet` is false.
    pub fn new(label: impl Into<String>, total: u64, quiet: bool) -> Progress {
        Progress {
            label: label.into(),
            total,
            done: 0,
            started: Instant::now(),
            last_drawn: None,
            enabled: !quiet && std::io::stderr().is_terminal(),
        }
    }

    /// Counts `n` more units done and redraws if it is time.
    pub fn advance(&mut self, n: u64) {
        self.done += n;
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        // The first draw waits one interval too, so the rate and ETA mean something.
        let since = self.last_drawn.unwrap_or(self.started);
        if now.duration_since(since) >= REDRAW_EVERY || (self.done >= self.total && self.last_drawn.is_some()) {
            self.last_drawn = Some(now);
            self.draw(now);
        }
    }

    fn draw(&self, now: Instant) {
        let elapsed = now.duration_since(self.started).as_secs_f64().max(1e-9);
        let rate = self.done as f64 / elapsed;
        let left = self.total.saturating_sub(self.done);
        let eta = if rate > 0.0 { format!("{:.1}s", left as f64 / rate) } else { "?".into() };
        let filled = (self.done.min(self.total) * BAR_CHARS).checked_div(self.total).unwrap_or(BAR_CHARS);
        let bar: String = (0..BAR_CHARS).map(|i| if i < filled { '#' } else { '-' }).collect();
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{} [{bar}] {}/{} {:.0}/s ETA {eta}   ", self.label, self.done, self.total, rate);
        let _ = err.flush();
    }

    /// Clears the bar's line.
    pub fn finish(&self) {
        if self.enabled && self.last_drawn.is_some() {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r{:width$}\r", "", width = self.label.len() + BAR_CHARS as usize + 60);
            let _ = err.flush();
        }
    }
}
