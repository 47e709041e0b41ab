//! The process-group keeper (`kernelbook __keep-group PROGRAM ...`), which ncu runs under: what
//! PROGRAM starts dies with the keeper's parent, however that parent ends. No GPU needed.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat[stat.rfind(')')? + 2..].chars().next())
        .is_some_and(|state| state != 'Z')
}

/// The pids of every live process whose command line is exactly `words` (arguments joined by
/// spaces): the shells and the keeper that mention the same words in a longer line are not it.
fn pids_with(words: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|raw| {
                String::from_utf8_lossy(&raw).replace('\0', " ").trim_end() == words
            })
        })
        .filter(|pid| alive(*pid))
        .collect()
}

#[test]
fn a_grandchild_under_the_keeper_dies_with_its_killed_parent() {
    if !Path::new("/proc/self/stat").exists() {
        eprintln!("SKIPPED a_grandchild_under_the_keeper_dies_with_its_killed_parent: no /proc");
        return;
    }
    // A unique sleep length marks this test's processes in the process table.
    let marker = format!("{}.{}", 3000 + std::process::id() % 1000, 17);
    let kernelbook = env!("CARGO_BIN_EXE_kernelbook");
    // The parent: a shell that starts the keeper, which starts a shell that starts two sleeps,
    // as ncu's script starts the real ncu and that the program it profiles.
    let script =
        format!("'{kernelbook}' __keep-group sh -c 'sleep {marker} & sleep {marker}' & wait");
    let mut parent = Command::new("sh")
        .args(["-c", &script])
        .stdout(Stdio::null())
        .spawn()
        .expect("the parent starts");
    let started = Instant::now();
    let sleeps = loop {
        let sleeps = pids_with(&format!("sleep {marker}"));
        if sleeps.len() == 2 {
            break sleeps;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the sleeps never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    parent.kill().expect("SIGKILL to the parent");
    let _ = parent.wait();
    let killed = Instant::now();
    while sleeps.iter().any(|pid| alive(*pid)) {
        assert!(
            killed.elapsed() < Duration::from_secs(1),
            "a grandchild outlived its killed parent by a second"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    eprintln!(
        "the keeper's group was gone {:?} after its parent",
        killed.elapsed()
    );
}

#[test]
fn the_keeper_passes_on_its_programs_exit_status_and_output() {
    let output = Command::new(env!("CARGO_BIN_EXE_kernelbook"))
        .args(["__keep-group", "sh", "-c", "echo out; echo err >&2; exit 3"])
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "out\n");
    assert_eq!(String::from_utf8_lossy(&output.stderr), "err\n");
    let missing = Command::new(env!("CARGO_BIN_EXE_kernelbook"))
        .args(["__keep-group", "/nonexistent/ncu"])
        .output()
        .expect("runs");
    assert_eq!(missing.status.code(), Some(127));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot start /nonexistent/ncu"));
}
