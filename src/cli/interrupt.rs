//! SIGINT and SIGTERM during a sweep: the first one sets a flag that the sweep
//! checks between chunks (it then writes what is done and exits with
//! [`EXIT_INTERRUPTED`]) and ends every external agent's wait at once
//! (`agentsim_agents::external::interrupt`: agents run in their own process
//! groups, so a terminal's Ctrl-C does not reach them); a second one ends the
//! process at once.

use std::sync::atomic::{AtomicBool, Ordering};

/// Exit code of an interrupted sweep: 128 + SIGINT, what shells report for Ctrl-C.
/// SIGTERM gives the same code, so a script needs to know only one.
pub const EXIT_INTERRUPTED: u8 = 130;

/// Set by the first SIGINT or SIGTERM.
static STOP: AtomicBool = AtomicBool::new(false);

#[cfg(unix)]
extern "C" fn on_signal(_signal: libc::c_int) {
    // Only async-signal-safe work here: atomics, `kill` and `_exit`.
    if STOP.swap(true, Ordering::SeqCst) {
        agentsim_agents::external::kill_all();
        // SAFETY: `_exit` is async-signal-safe and has no precondition.
        unsafe { libc::_exit(i32::from(EXIT_INTERRUPTED)) }
    }
    agentsim_agents::external::interrupt();
}

#[cfg(unix)]
extern "C" fn on_signal_now(_signal: libc::c_int) {
    agentsim_agents::external::kill_all();
    // SAFETY: `_exit` is async-signal-safe and has no precondition.
    unsafe { libc::_exit(i32::from(EXIT_INTERRUPTED)) }
}

/// For every command that runs an external agent (`run`, `compare`, `shrink`,
/// `replay --agent`...): SIGINT and SIGTERM end the agents' process groups, then
/// the process (exit 130), as the default action would have ended agents that
/// shared agentsim's group. `sweep` replaces it with [`install`].
pub fn install_for_agents() {
    #[cfg(unix)]
    set_handler(on_signal_now);
}

#[cfg(unix)]
fn set_handler(handler: extern "C" fn(libc::c_int)) {
    // SAFETY: each handler only touches atomics and calls `kill` and `_exit`, all
    // async-signal-safe; `sigaction` with a zeroed, then filled, struct is the
    // documented way to install it.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as libc::sighandler_t;
        // SA_RESTART: a signal must not make a file write fail with EINTR.
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        for signal in [libc::SIGINT, libc::SIGTERM] {
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// Installs the handler for SIGINT and SIGTERM and returns the flag it sets.
pub fn install() -> &'static AtomicBool {
    #[cfg(unix)]
    set_handler(on_signal);
    &STOP
}
