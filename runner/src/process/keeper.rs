//! A process-group keeper, for children that start children of their own which the parent-death
//! signal cannot reach. `ncu` is a shell script that runs the real `ncu` as its child: when
//! kernelbook is killed, the script gets its parent-death signal and dies, but the real `ncu`
//! (and the program it profiles) would run on. So such a child is started under the keeper —
//! this program again, as `kernelbook __keep-group PROGRAM ARGS...` — which leads the process
//! group, runs PROGRAM in it with the keeper's own stdin, stdout and stderr, and kills the whole
//! group when kernelbook ends (its parent-death signal is SIGTERM, which it can catch) or when it
//! is sent SIGINT, SIGTERM or SIGHUP. Otherwise it exits as PROGRAM did.

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, ExitCode};

/// The first argument that makes a kernelbook binary a process-group keeper.
pub const KEEPER_ARG: &str = "__keep-group";

/// `command` to be run under `keeper` (a kernelbook binary): the same program, arguments,
/// environment changes and working folder. Start the result in a group of its own.
pub fn under_keeper(keeper: &Path, command: &Command) -> Command {
    let mut kept = Command::new(keeper);
    kept.arg(KEEPER_ARG)
        .arg(command.get_program())
        .args(command.get_args());
    for (name, value) in command.get_envs() {
        match value {
            Some(value) => kept.env(name, value),
            None => kept.env_remove(name),
        };
    }
    if let Some(dir) = command.get_current_dir() {
        kept.current_dir(dir);
    }
    kept
}

/// The keeper's `main`: `args` are PROGRAM and its arguments (what follows [`KEEPER_ARG`]).
#[cfg(unix)]
pub fn keeper_main(args: &[OsString]) -> ExitCode {
    use rustix::process::Signal;
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Some((program, rest)) = args.split_first() else {
        eprintln!("kernelbook {KEEPER_ARG}: no program to run");
        return ExitCode::from(2);
    };
    // The group to keep is this process's own, whoever started it and however.
    if rustix::process::setpgid(None, None).is_err() {
        eprintln!("kernelbook {KEEPER_ARG}: cannot lead a process group");
        return ExitCode::from(2);
    }
    // The handler first: from the moment the parent-death signal is SIGTERM, it must be caught.
    let mut signals = match signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
        Ok(signals) => signals,
        Err(err) => {
            eprintln!("kernelbook {KEEPER_ARG}: cannot catch signals: {err}");
            return ExitCode::from(2);
        }
    };
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            kill_own_group();
        }
    });
    // Until here the parent-death signal is the SIGKILL `process::spawn` set: nothing has been
    // started that could outlive this process.
    let parent = rustix::process::getppid();
    if rustix::process::set_parent_process_death_signal(Some(Signal::TERM)).is_err()
        || rustix::process::getppid() != parent
        || parent.is_none_or(|p| p.is_init())
    {
        return ExitCode::from(2);
    }
    let status = match Command::new(program).args(rest).status() {
        Ok(status) => status,
        Err(err) => {
            eprintln!(
                "kernelbook {KEEPER_ARG}: cannot start {}: {err}",
                Path::new(program).display()
            );
            return ExitCode::from(127);
        }
    };
    // What PROGRAM left running in the group ends with it.
    exit_code(status)
}

#[cfg(unix)]
fn kill_own_group() {
    let group = rustix::process::getpgrp();
    let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
}

#[cfg(unix)]
fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        (None, Some(signal)) => ExitCode::from(u8::try_from(128 + signal).unwrap_or(1)),
        (None, None) => ExitCode::FAILURE,
    }
}

/// Off Unix there are no process groups to keep: PROGRAM is run and its status passed on.
#[cfg(not(unix))]
pub fn keeper_main(args: &[OsString]) -> ExitCode {
    let Some((program, rest)) = args.split_first() else {
        return ExitCode::from(2);
    };
    match Command::new(program).args(rest).status() {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    }
}
