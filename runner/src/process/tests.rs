//! Stand-in children are shell scripts; a stand-in *parent* (or a kernelbook-style child) is
//! this test binary run again on one of the `role_*` tests below, which do their part only when
//! [`ROLE`] names them.

use super::*;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::sync::mpsc::RecvTimeoutError;

fn sh(script: &str) -> Command {
    let mut command = Command::new("sh");
    command.arg("-c").arg(script);
    command
}

const GROUP: Spawn = Spawn {
    own_group: true,
    stderr_lines: 20,
};

/// Gone, or a zombie waiting for a reaper (a killed grandchild is nobody's to reap).
fn gone(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}

fn gone_within(pid: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while !gone(pid) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// The pid a stand-in writes to `path`, once it has.
fn pid_in(path: &Path) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(pid) = std::fs::read_to_string(path)
            .map_err(|_| ())
            .and_then(|text| text.trim().parse().map_err(|_| ()))
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "no pid in {}", path.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `sh` that starts `sleep 60` in the background, writes its pid to `pid_file`, then `rest`.
fn with_grandchild(pid_file: &Path, rest: &str) -> Command {
    sh(&format!(
        "sleep 60 & echo $! > '{}'; {rest}",
        pid_file.display()
    ))
}

#[test]
fn a_json_lines_child_is_read_under_a_deadline() {
    let mut child = spawn(
        sh(r#"echo '{"n": 1}'; echo 'a stray print'; echo '{"n": 2}'; sleep 30"#),
        GROUP,
    )
    .expect("spawn");
    let replies = child.json_lines::<serde_json::Value>();
    let soon = || Instant::now() + Duration::from_secs(10);
    assert_eq!(replies.recv_until(soon()), Ok(serde_json::json!({"n": 1})));
    assert_eq!(replies.recv_until(soon()), Ok(serde_json::json!({"n": 2})));
    let started = Instant::now();
    assert_eq!(
        replies.recv_until(Instant::now() + Duration::from_millis(200)),
        Err(RecvTimeoutError::Timeout)
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(child.is_running());
}

#[test]
fn a_channel_child_answers_on_descriptor_3_and_its_stdout_joins_stderr() {
    let mut child = spawn_with_channel(
        sh(&format!(
            r#"printf 'no newline'; echo "{{\"fd\": ${CHANNEL_ENV}}}" >&3; echo ' then stdout'; ls -l /proc/self/fd >&2"#
        )),
        Spawn {
            own_group: false,
            stderr_lines: 50,
        },
    )
    .expect("spawn");
    let replies = child.json_lines::<serde_json::Value>();
    let soon = || Instant::now() + Duration::from_secs(10);
    assert_eq!(replies.recv_until(soon()), Ok(serde_json::json!({"fd": 3})));
    assert_eq!(
        replies.recv_until(soon()),
        Err(RecvTimeoutError::Disconnected),
        "the channel ends with the child: no other process holds its write end"
    );
    child.wait().expect("wait");
    assert!(child.stderr().wait_for_end(soon()));
    let stderr = child.stderr().text();
    assert!(stderr.contains("no newline then stdout"), "{stderr}");
    // Stdout is stderr's pipe; the channel is another pipe, on descriptor 3 alone.
    let target = |fd: &str| {
        stderr
            .lines()
            .find_map(|l| {
                l.split_once(&format!(" {fd} -> "))
                    .map(|(_, t)| t.to_string())
            })
            .unwrap_or_default()
    };
    assert_eq!(target("1"), target("2"), "{stderr}");
    assert!(
        target("3").starts_with("pipe:") && target("3") != target("1"),
        "{stderr}"
    );
    let channel = format!("-> {}", target("3"));
    assert_eq!(stderr.matches(&channel).count(), 1, "{stderr}");
}

#[test]
fn a_child_that_overruns_is_killed_with_its_whole_group() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("pid");
    let mut child = spawn(with_grandchild(&pid_file, "wait"), GROUP).expect("spawn");
    let grandchild = pid_in(&pid_file);
    assert_eq!(
        child
            .wait_timeout(Duration::from_millis(300))
            .expect("wait"),
        None
    );
    assert!(sys::is_registered(child.id()));
    let status = child.kill().expect("reaped");
    assert_eq!(status.signal(), Some(9), "{status}");
    assert!(!sys::is_registered(child.id()), "forgotten once killed");
    assert!(gone(child.id()));
    assert!(
        gone_within(grandchild, Duration::from_secs(1)),
        "the grandchild survived"
    );
}

#[test]
fn dropping_a_child_kills_its_group() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("pid");
    let child = spawn(with_grandchild(&pid_file, "wait"), GROUP).expect("spawn");
    let (pid, grandchild) = (child.id(), pid_in(&pid_file));
    drop(child);
    assert!(gone(pid));
    assert!(gone_within(grandchild, Duration::from_secs(1)));
}

#[test]
fn what_a_child_leaves_running_when_it_ends_is_killed_with_its_group() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("pid");
    let mut child = spawn(with_grandchild(&pid_file, "exit 0"), GROUP).expect("spawn");
    let status = child
        .wait_timeout(Duration::from_secs(10))
        .expect("wait")
        .expect("ended");
    assert!(status.success());
    let grandchild = pid_in(&pid_file);
    // The grandchild holds stdout open.
    let stdout = child.stdout_to_end();
    assert_eq!(
        stdout.recv_timeout(Duration::from_millis(100)),
        Err(RecvTimeoutError::Timeout)
    );
    assert!(!gone(grandchild));
    assert_eq!(child.kill(), Some(status), "kept how it ended");
    assert!(gone_within(grandchild, Duration::from_secs(1)));
}

#[test]
fn a_child_that_ends_reports_its_status_and_last_words() {
    let mut child = spawn(
        sh("echo one >&2; echo >&2; echo two >&2; echo three >&2; exit 3"),
        Spawn {
            own_group: false,
            stderr_lines: 2,
        },
    )
    .expect("spawn");
    let status = child.wait().expect("wait");
    assert_eq!(status.to_string(), "exit status: 3");
    assert_eq!(child.stderr_tail(5), "two / three");
    assert_eq!(
        child.lines().recv_timeout(Duration::from_secs(5)),
        Err(RecvTimeoutError::Disconnected)
    );
}

#[test]
fn a_line_sent_to_a_child_is_answered() {
    let mut child =
        spawn(sh("while read line; do echo \"got $line\"; done"), GROUP).expect("spawn");
    let lines = child.lines();
    child.send_line("ping").expect("sent");
    assert_eq!(
        lines.recv_timeout(Duration::from_secs(10)).as_deref(),
        Ok("got ping")
    );
    child.close_stdin();
    let status = child.wait_timeout(Duration::from_secs(10)).expect("wait");
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
}

/// Which `role_*` test a run of this binary is to play.
const ROLE: &str = "KERNELBOOK_TEST_ROLE";
/// Where a role writes the pid the test waits for.
const PID_FILE: &str = "KERNELBOOK_TEST_PID_FILE";

/// This test binary, to run `role` (`PID_FILE` set to `pid_file`).
fn play(role: &str, pid_file: &Path) -> Command {
    let mut command = Command::new(std::env::current_exe().expect("the test binary"));
    command
        .args(["--exact", &format!("process::tests::{role}")])
        .args(["--ignored", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env(PID_FILE, pid_file)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// The pid file if this run plays `role`.
fn playing(role: &str) -> Option<std::path::PathBuf> {
    (std::env::var(ROLE).ok()? == role).then(|| std::env::var_os(PID_FILE).map(Into::into))?
}

fn kill_by_pid(pid: u32, signal: rustix::process::Signal) {
    let pid = rustix::process::Pid::from_raw(pid as i32).expect("a pid");
    let _ = rustix::process::kill_process(pid, signal);
}

#[test]
#[ignore = "a stand-in parent, run by a_spawned_child_dies_with_its_killed_parent"]
fn role_parent() {
    let Some(pid_file) = playing("role_parent") else {
        return;
    };
    let child = spawn(sh("sleep 60"), GROUP).expect("spawn");
    std::fs::write(pid_file, child.id().to_string()).expect("pid file");
    std::thread::sleep(Duration::from_secs(60));
}

#[test]
fn a_spawned_child_dies_with_its_killed_parent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("pid");
    let mut parent = play("role_parent", &pid_file).spawn().expect("parent");
    let child = pid_in(&pid_file);
    // SIGKILL: the parent runs no code of its own on the way out.
    let _ = parent.kill();
    let _ = parent.wait();
    assert!(
        gone_within(child, Duration::from_secs(1)),
        "the child outlived its parent"
    );
}

#[test]
#[ignore = "a kernelbook-style child, run by a_measuring_child_dies_with_its_parent"]
fn role_measuring_child() {
    let Some(pid_file) = playing("role_measuring_child") else {
        return;
    };
    die_with_parent();
    std::fs::write(pid_file, std::process::id().to_string()).expect("pid file");
    std::thread::sleep(Duration::from_secs(60));
}

#[test]
#[ignore = "a child that does not ask to die with its parent (the control)"]
fn role_careless_child() {
    let Some(pid_file) = playing("role_careless_child") else {
        return;
    };
    std::fs::write(pid_file, std::process::id().to_string()).expect("pid file");
    std::thread::sleep(Duration::from_secs(60));
}

/// The grandchild that `role` plays under an intermediate `sh` that is then killed, and whether
/// it was gone a second later.
fn grandchild_outlives_a_killed_parent(role: &str) -> (u32, bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("pid");
    let grandchild = play(role, &pid_file);
    let args: Vec<String> = grandchild
        .get_args()
        .map(|a| format!("'{}'", a.to_string_lossy()))
        .collect();
    let mut parent = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "'{}' {} >/dev/null 2>&1 & wait",
            grandchild.get_program().to_string_lossy(),
            args.join(" ")
        ))
        .env(ROLE, role)
        .env(PID_FILE, &pid_file)
        .spawn()
        .expect("the intermediate sh");
    let pid = pid_in(&pid_file);
    let _ = parent.kill();
    let _ = parent.wait();
    (pid, !gone_within(pid, Duration::from_secs(1)))
}

/// Before: a `__measure-lab` child whose parent was killed went on holding the GPU, re-parented
/// to PID 1 (and under ncu, a measuring child is ncu's, not ours).
#[test]
fn a_measuring_child_dies_with_its_parent() {
    let (pid, survived) = grandchild_outlives_a_killed_parent("role_measuring_child");
    assert!(!survived, "the measuring child {pid} outlived its parent");
    // The control: without asking, a child does outlive its parent, so the above means something.
    let (pid, survived) = grandchild_outlives_a_killed_parent("role_careless_child");
    kill_by_pid(pid, rustix::process::Signal::KILL);
    assert!(survived, "the careless child died on its own");
}

#[test]
#[ignore = "a stand-in parent, run by a_parent_ended_by_sigterm_kills_its_childrens_groups"]
fn role_signalled_parent() {
    let Some(pid_file) = playing("role_signalled_parent") else {
        return;
    };
    end_children_on_signal().expect("signal handling");
    let grandchild_file = pid_file.with_extension("grandchild");
    let _child = spawn(with_grandchild(&grandchild_file, "wait"), GROUP).expect("spawn");
    // Once the grandchild is known, the test may signal.
    pid_in(&grandchild_file);
    std::fs::write(pid_file, std::process::id().to_string()).expect("pid file");
    std::thread::sleep(Duration::from_secs(60));
}

/// Before: Ctrl-C or SIGTERM to `kernelbook` left the Python process and ncu (each in a group of
/// its own) and what they had started running.
#[test]
fn a_parent_ended_by_sigterm_kills_its_childrens_groups() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("pid");
    let mut parent = play("role_signalled_parent", &pid_file)
        .spawn()
        .expect("parent");
    pid_in(&pid_file);
    // The child's own child: the parent-death signal does not reach it, only a group kill.
    let grandchild = pid_in(&pid_file.with_extension("grandchild"));
    kill_by_pid(parent.id(), rustix::process::Signal::TERM);
    let status = parent.wait().expect("the parent ends");
    assert_eq!(status.signal(), Some(15), "ended as by SIGTERM: {status}");
    assert!(
        gone_within(grandchild, Duration::from_secs(1)),
        "the grandchild survived"
    );
}

#[test]
fn the_python_interpreter_is_the_variables_then_the_projects_venv_then_python3() {
    let dir = tempfile::tempdir().expect("tempdir");
    let inner = dir.path().join("book/src");
    std::fs::create_dir_all(&inner).expect("folders");
    assert_eq!(python_interpreter_in(None, Some(&inner)), "python3");
    let venv = dir.path().join(".venv/bin");
    std::fs::create_dir_all(&venv).expect("venv");
    std::fs::write(venv.join("python3"), "").expect("python3");
    assert_eq!(
        python_interpreter_in(None, Some(&inner)),
        venv.join("python3").display().to_string(),
        "found in a folder above"
    );
    assert_eq!(
        python_interpreter_in(Some("/opt/py/bin/python3"), Some(&inner)),
        "/opt/py/bin/python3"
    );
    assert_eq!(
        python_interpreter_in(Some("  "), Some(&inner)),
        venv.join("python3").display().to_string(),
        "an empty variable is no choice"
    );
}
