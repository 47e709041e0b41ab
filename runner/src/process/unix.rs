//! The Unix side of [`super`]: one spawning thread, the parent-death signal, the registry of
//! live children that a signal handler kills, waiting without reaping, and the private channel
//! of [`super::spawn_with_channel`].
//!
//! Why a child is reaped only after it was killed: a child's pid (and, for a group leader, its
//! group id) stays reserved while it is a zombie. So a group is killed, then forgotten by the
//! registry, then reaped, never the other way round, and a kill can never reach a stranger that
//! was given a recycled id.

use super::CHANNEL_FD;
use rustix::io::FdFlags;
use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};
use std::fs::File;
use std::io;
use std::mem::ManuallyDrop;
use std::os::fd::{BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

/// A live child: its pid, and whether it leads a process group of its own.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Live {
    pid: Pid,
    group: bool,
}

/// Every child [`spawn`] started and no one has killed or reaped yet.
static LIVE: Mutex<Vec<Live>> = Mutex::new(Vec::new());

fn live() -> MutexGuard<'static, Vec<Live>> {
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

fn send_kill(live: Live) {
    // Errors mean it is gone already.
    let _ = if live.group {
        rustix::process::kill_process_group(live.pid, Signal::KILL)
    } else {
        rustix::process::kill_process(live.pid, Signal::KILL)
    };
}

fn pid_of(child: &Child) -> Pid {
    Pid::from_child(child)
}

/// Starts `command` on the spawning thread and registers it.
pub(super) fn spawn(mut command: Command, own_group: bool) -> io::Result<Child> {
    if own_group {
        command.process_group(0);
    }
    #[cfg(target_os = "linux")]
    die_with_this_process(&mut command);
    let Some(spawner) = spawner() else {
        // No thread could be started: spawn here, the parent-death signal then tied to this
        // thread's life.
        return spawn_and_register(command, own_group);
    };
    let (reply, answer) = mpsc::sync_channel(1);
    spawner
        .send((command, own_group, reply))
        .map_err(|_| io::Error::other("the thread that starts child processes has ended"))?;
    answer
        .recv()
        .map_err(|_| io::Error::other("the thread that starts child processes has ended"))?
}

fn spawn_and_register(mut command: Command, own_group: bool) -> io::Result<Child> {
    // Registered before the lock is let go, so that a signal handler that kills every live
    // child cannot miss one that is being started.
    let mut live = live();
    let child = command.spawn()?;
    live.push(Live {
        pid: pid_of(&child),
        group: own_group,
    });
    Ok(child)
}

type SpawnJob = (Command, bool, mpsc::SyncSender<io::Result<Child>>);

/// The thread every child is forked from. Linux sends the parent-death signal when the *thread*
/// that forked a child ends, not the process: a child forked from a short-lived thread (a scoped
/// worker, a test) would be killed with that thread, however long its parent goes on. This one
/// lives as long as the process.
fn spawner() -> Option<&'static mpsc::Sender<SpawnJob>> {
    static SPAWNER: OnceLock<Option<mpsc::Sender<SpawnJob>>> = OnceLock::new();
    SPAWNER
        .get_or_init(|| {
            let (jobs, inbox) = mpsc::channel::<SpawnJob>();
            std::thread::Builder::new()
                .name("kernelbook-spawner".into())
                .spawn(move || {
                    for (command, own_group, reply) in inbox {
                        let _ = reply.send(spawn_and_register(command, own_group));
                    }
                })
                .ok()
                .map(|_| jobs)
        })
        .as_ref()
}

/// Makes the child get SIGKILL when this process ends, however it ends (SIGKILL included).
#[cfg(target_os = "linux")]
fn die_with_this_process(command: &mut Command) {
    let parent = rustix::process::getpid();
    // SAFETY: the closure runs in the forked child before `exec`; it makes two system calls
    // (rustix calls the kernel directly) and neither allocates nor takes a lock.
    unsafe {
        command.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
            // The parent may have ended before that call: then no signal would ever come.
            if rustix::process::getppid() != Some(parent) {
                return Err(rustix::io::Errno::SRCH.into());
            }
            Ok(())
        });
    }
}

/// See [`super::die_with_parent`].
pub(super) fn die_with_parent() {
    #[cfg(target_os = "linux")]
    {
        let before = rustix::process::getppid();
        if rustix::process::set_parent_process_death_signal(Some(Signal::KILL)).is_ok()
            && rustix::process::getppid() != before
        {
            // The parent ended between the two calls; nobody is left to report to.
            std::process::exit(1);
        }
    }
}

/// How `child` ended, if it has, leaving it a zombie (`WNOWAIT`: see the module's note);
/// `block` waits for it to end. `&mut` as off Unix, where seeing the end reaps.
pub(super) fn exited(child: &mut Child, block: bool) -> io::Result<Option<ExitStatus>> {
    let mut options = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT;
    if !block {
        options |= WaitIdOptions::NOHANG;
    }
    loop {
        match rustix::process::waitid(WaitId::Pid(pid_of(child)), options) {
            Ok(Some(status)) => {
                // The encoding of waitpid's status, which ExitStatus displays.
                let raw = match (status.exit_status(), status.terminating_signal()) {
                    (Some(code), _) => (code & 0xff) << 8,
                    (None, Some(signal)) if status.dumped() => signal | 0x80,
                    (None, Some(signal)) => signal,
                    // Neither exited nor killed (waitid reports nothing else for EXITED).
                    (None, None) => return Ok(None),
                };
                return Ok(Some(ExitStatus::from_raw(raw)));
            }
            Ok(None) => return Ok(None),
            Err(rustix::io::Errno::INTR) => continue,
            Err(err) => return Err(err.into()),
        }
    }
}

/// Kills `child` (its whole group if it leads one) with SIGKILL and forgets it; the caller
/// reaps it after.
pub(super) fn kill(child: &mut Child, own_group: bool) {
    let this = Live {
        pid: pid_of(child),
        group: own_group,
    };
    let mut live = live();
    send_kill(this);
    live.retain(|l| *l != this);
}

/// A pipe for the child of `command` (see [`super::spawn_with_channel`]): in the child its
/// write end becomes descriptor [`CHANNEL_FD`] and its stdout a copy of its stderr; returns the
/// reading end.
pub(super) fn give_channel(command: &mut Command) -> io::Result<Option<super::Pipe>> {
    let (reader, writer) = std::io::pipe()?;
    // Above the standard descriptors, whichever of them this process has closed, so that
    // setting up the child's stdin, stdout and stderr cannot overwrite it; close-on-exec, so
    // that no other child inherits it. The copy in this process is closed when `command` is
    // dropped, once the child has started: then the channel ends when the child does.
    let writer = rustix::io::fcntl_dupfd_cloexec(&writer, 10)?;
    command.env(super::CHANNEL_ENV, CHANNEL_FD.to_string());
    // SAFETY: the closure runs in the forked child before `exec`; it makes two `dup2` system
    // calls (rustix calls the kernel directly) and neither allocates nor takes a lock. The
    // `OwnedFd`s for descriptors 1 and CHANNEL_FD only name `dup2`'s targets and are never
    // dropped, so they close nothing.
    unsafe {
        command.pre_exec(move || {
            let mut stdout = ManuallyDrop::new(OwnedFd::from_raw_fd(1));
            rustix::io::dup2(BorrowedFd::borrow_raw(2), &mut stdout)?;
            let mut channel = ManuallyDrop::new(OwnedFd::from_raw_fd(CHANNEL_FD));
            rustix::io::dup2(&writer, &mut channel)?;
            Ok(())
        });
    }
    Ok(Some(super::Pipe(Box::new(reader))))
}

/// See [`super::channel_to_parent`].
pub(super) fn channel_to_parent() -> Option<File> {
    static TAKEN: AtomicBool = AtomicBool::new(false);
    if std::env::var(super::CHANNEL_ENV).ok()? != CHANNEL_FD.to_string()
        || TAKEN.swap(true, Ordering::SeqCst)
    {
        return None;
    }
    // SAFETY: borrowed for one `fcntl`, which fails (EBADF) if the descriptor is not open.
    let fd = unsafe { BorrowedFd::borrow_raw(CHANNEL_FD) };
    rustix::io::fcntl_setfd(fd, FdFlags::CLOEXEC).ok()?;
    // SAFETY: the descriptor is open; the parent made it for this process's answers alone, and
    // nothing else here owns it (`TAKEN`: this is the one owner).
    Some(unsafe { File::from_raw_fd(CHANNEL_FD) })
}

/// Whether `pid` is a live child that [`spawn`] started (for tests).
#[cfg(test)]
pub(super) fn is_registered(pid: u32) -> bool {
    live().iter().any(|l| l.pid.as_raw_pid() as u32 == pid)
}

/// See [`super::end_children_on_signal`].
pub(super) fn end_children_on_signal() -> io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    static INSTALLED: OnceLock<()> = OnceLock::new();
    if INSTALLED.get().is_some() {
        return Ok(());
    }
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::Builder::new()
        .name("kernelbook-signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                // Held until the process is gone, so that no child starts after this.
                let live = live();
                live.iter().copied().for_each(send_kill);
                // Ends the process as the signal would have (the shell sees "interrupted").
                let _ = signal_hook::low_level::emulate_default_handler(signal);
                std::process::exit(128 + signal);
            }
        })?;
    let _ = INSTALLED.set(());
    Ok(())
}
