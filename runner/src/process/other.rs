//! Off Unix: no process groups, no parent-death signal, no signal handling; a child is killed
//! on its own, and reaping it is how its end is seen.

use std::io;
use std::process::{Child, Command, ExitStatus};

pub(super) fn spawn(mut command: Command, _own_group: bool) -> io::Result<Child> {
    command.spawn()
}

pub(super) fn die_with_parent() {}

pub(super) fn exited(child: &mut Child, block: bool) -> io::Result<Option<ExitStatus>> {
    if block {
        child.wait().map(Some)
    } else {
        child.try_wait()
    }
}

pub(super) fn kill(child: &mut Child, _own_group: bool) {
    let _ = child.kill();
}

pub(super) fn end_children_on_signal() -> io::Result<()> {
    Ok(())
}

/// No private channel: the child answers on stdout.
pub(super) fn give_channel(_command: &mut Command) -> io::Result<Option<super::Pipe>> {
    Ok(None)
}

pub(super) fn channel_to_parent() -> Option<std::fs::File> {
    None
}
