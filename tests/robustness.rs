//! Output files and the terminal under hostile conditions: a full or closed
//! stdout, an output path that is a symlink, a FIFO or a device, a merge over its
//! own input, and two sweeps into one directory.

use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::common::{agentsim, text};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Runs agentsim in `dir` with `stdout` as its standard output.
fn with_stdout(dir: &Path, args: &[&str], stdout: Stdio) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentsim"))
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .expect("the agentsim binary runs")
}

/// The write end of a pipe whose read end is already closed: every write fails
/// with EPIPE (and would raise SIGPIPE).
fn closed_pipe() -> Stdio {
    let mut fds = [0; 2];
    // SAFETY: `pipe` fills the two descriptors; each is then owned exactly once.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors were just created and are owned by nothing else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    Stdio::from(write)
}

#[test]
fn a_full_or_closed_stdout_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let output = agentsim(dir.path(), &["sweep", "--seeds", "0..20", "--out", "s", "--quiet"], &[]);
    assert!(output.status.success(), "{}", text(&output));
    let gate = format!("{ROOT}/seeds/gates/release.ron");
    let incident = std::fs::read_dir(format!("{ROOT}/seeds/incidents"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "ron"))
        .unwrap();
    let incident = incident.to_str().unwrap();
    let commands: [&[&str]; 7] = [
        &["--help"],
        &["--version"],
        &["run"],
        &["list"],
        &["check", &gate, "s"],
        &["replay", incident],
        &["sweep", "--seeds", "0..20", "--out", "t", "--quiet"],
    ];
    for args in commands {
        for (how, stdout) in
            [("/dev/full", Stdio::from(std::fs::File::create("/dev/full").unwrap())), ("closed", closed_pipe())]
        {
            let output = with_stdout(dir.path(), args, stdout);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(2), "{args:?} > {how}: {stderr}");
            assert!(stderr.contains("cannot write to stdout") && !stderr.contains("panicked"), "{args:?}: {stderr}");
        }
    }
}

#[test]
fn an_output_that_is_not_a_new_path_or_of_its_kind_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let output = agentsim(d, &["sweep", "--seeds", "0..20", "--out", "s", "--quiet"], &[]);
    assert!(output.status.success(), "{}", text(&output));
    std::fs::write(d.join("victim"), "precious").unwrap();
    std::os::unix::fs::symlink(d.join("victim"), d.join("link")).unwrap();
    std::fs::create_dir(d.join("folder")).unwrap();
    let fifo = std::ffi::CString::new(d.join("fifo").to_str().unwrap()).unwrap();
    // SAFETY: a valid C string; `mkfifo` only creates the node.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let trace = format!("{ROOT}/examples/traces/refund_storm.jsonl");
    for target in ["link", "folder", "fifo", "/dev/null"] {
        let commands: [Vec<&str>; 5] = [
            vec!["report", "s", "-o", target],
            vec!["run", "--record", target],
            vec!["shrink", "--agent", "naive", "--seed", "1", "-o", target],
            vec!["import-trace", &trace, "-o", target],
            vec!["mcp", "--record", target],
        ];
        for args in commands {
            let output = agentsim(d, &args, &[]);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output));
            assert!(stderr.contains("an output must be a new path or a regular file"), "{args:?}: {stderr}");
        }
    }
    // A directory output: the same rule and message, a directory in place of a file.
    for target in ["victim", "link", "fifo", "/dev/null"] {
        let commands: [Vec<&str>; 4] = [
            vec!["sweep", "--seeds", "0..3", "-o", target],
            vec!["sweep", "--seeds", "0..3", "--fault-scale", "0,1", "-o", target],
            vec!["compare", "--baseline", "naive", "--candidate", "resilient", "--seeds", "0..3", "-o", target],
            vec!["summarize", "s", "-o", target],
        ];
        for args in commands {
            let output = agentsim(d, &args, &[]);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output));
            assert!(stderr.contains("an output must be a new path or a directory"), "{args:?}: {stderr}");
        }
    }
    assert_eq!(std::fs::read_to_string(d.join("victim")).unwrap(), "precious");
    assert!(std::fs::symlink_metadata(d.join("link")).unwrap().file_type().is_symlink());
    assert!(std::fs::symlink_metadata("/dev/null").unwrap().file_type().is_char_device_like());

    // Links planted at the temporary name a writer used to predict are left
    // alone, never written through (temporary names are random and created
    // new); an existing regular file is replaced.
    std::os::unix::fs::symlink(d.join("victim"), d.join(".new.ron.tmp")).unwrap();
    std::fs::hard_link(d.join("victim"), d.join(".new.ron.tmp.tmp")).unwrap();
    std::fs::write(d.join("new.ron"), "old").unwrap();
    let output = agentsim(d, &["run", "--record", "new.ron"], &[]);
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(std::fs::read_to_string(d.join("victim")).unwrap(), "precious");
    assert!(std::fs::symlink_metadata(d.join(".new.ron.tmp")).unwrap().file_type().is_symlink());
    assert!(std::fs::read_to_string(d.join("new.ron")).unwrap().contains("digest"));
}

/// `is_char_device` through the extension trait, named for the assertion above.
trait CharDeviceLike {
    fn is_char_device_like(&self) -> bool;
}

impl CharDeviceLike for std::fs::FileType {
    fn is_char_device_like(&self) -> bool {
        std::os::unix::fs::FileTypeExt::is_char_device(self)
    }
}

#[test]
fn merge_refuses_to_write_over_one_of_its_shards() {
    let dir = tempfile::tempdir().unwrap();
    for k in ["0", "1"] {
        let shard = format!("{k}/2");
        let out = format!("part{k}");
        let args = ["sweep", "--seeds", "0..20", "--shard", &shard, "--out", &out, "--quiet"];
        let output = agentsim(dir.path(), &args, &[]);
        assert!(output.status.success(), "{}", text(&output));
    }
    let before = std::fs::read(dir.path().join("part1/trajectories.csv")).unwrap();
    let output = agentsim(dir.path(), &["merge", "part0", "part1", "--out", "./part1/"], &[]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("one of the shards"), "{}", text(&output));
    assert_eq!(std::fs::read(dir.path().join("part1/trajectories.csv")).unwrap(), before);
    let output = agentsim(dir.path(), &["merge", "part0", "part1", "--out", "merged"], &[]);
    assert!(output.status.success(), "{}", text(&output));
}

/// Starts a long sweep into `out` and waits until its rows are being written.
fn start_long_sweep(dir: &Path, out: &str) -> std::process::Child {
    let child = Command::new(env!("CARGO_BIN_EXE_agentsim"))
        .current_dir(dir)
        .args(["sweep", "--quiet", "--seeds", "0..10000000", "--out", out])
        .env("AGENTSIM_CHUNK_SEEDS", "500")
        .env("RAYON_NUM_THREADS", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    while crate::common::temp_len(&dir.join(out).join("trajectories.csv")) < 2000 {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child
}

#[test]
fn a_second_sweep_into_a_busy_folder_is_refused_and_the_first_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = start_long_sweep(dir.path(), "busy");
    // One recorded session to summarize (seeds/incidents/ mixes scenarios, which
    // summarize refuses before it looks at the lock).
    std::fs::create_dir(dir.path().join("sessions")).unwrap();
    let session = "double_refund_after_lost_answer.ron";
    std::fs::copy(format!("{ROOT}/seeds/incidents/{session}"), dir.path().join("sessions").join(session)).unwrap();
    for args in [
        vec!["sweep", "--seeds", "0..50", "--out", "busy", "--quiet"],
        vec!["sweep", "--seeds", "0..50", "--resume", "busy", "--quiet"],
        vec!["summarize", "sessions", "--out", "busy"],
    ] {
        let output = agentsim(dir.path(), &args, &[]);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output));
        assert!(String::from_utf8_lossy(&output.stderr).contains("is locked"), "{}", text(&output));
    }
    // SAFETY: a signal to a child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(i32::try_from(first.id()).unwrap(), libc::SIGINT) }, 0);
    assert_eq!(first.wait().unwrap().code(), Some(130));
    // The first sweep's rows are whole, in seed order, and agree with its summary.
    let csv = std::fs::read_to_string(dir.path().join("busy/trajectories.csv")).unwrap();
    let seeds: Vec<u64> = csv.lines().skip(1).map(|l| l.split(',').next().unwrap().parse().unwrap()).collect();
    assert_eq!(seeds, (0..seeds.len() as u64).collect::<Vec<_>>());
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("busy/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["partial"]["done_until_seed"], seeds.len() as u64);

    // Two writers of one `-o FILE` write temporary files of their own (the
    // last rename wins, each file whole): a file held locked at the name a
    // writer used to predict is neither refused over nor touched.
    std::fs::write(dir.path().join(".r.html.tmp"), "someone else's").unwrap();
    let temp = std::fs::File::open(dir.path().join(".r.html.tmp")).unwrap();
    // SAFETY: `flock` on a descriptor this test owns.
    assert_eq!(unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&temp), libc::LOCK_EX) }, 0);
    let output = agentsim(dir.path(), &["report", "busy", "-o", "r.html"], &[]);
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(std::fs::read_to_string(dir.path().join(".r.html.tmp")).unwrap(), "someone else's");
    assert!(crate::common::temp_of(&dir.path().join("r.html")).is_none());
    drop(temp);

    // A sweep killed outright leaves no lock behind (the kernel drops it).
    let mut killed = start_long_sweep(dir.path(), "killed");
    killed.kill().unwrap();
    killed.wait().unwrap();
    let output = agentsim(dir.path(), &["sweep", "--seeds", "0..50", "--out", "killed", "--quiet"], &[]);
    assert!(output.status.success(), "{}", text(&output));
}
