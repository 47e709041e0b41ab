//! Which files the server watches, and the watcher (notify, debounced): the chapters (the
//! book's source folder), the theme, the labs folder and book.toml. A burst of events (an
//! editor writing a temp file and renaming it over the chapter) becomes one rebuild. Only
//! changes count, not reads (notify also reports a file opened, and every build opens every
//! chapter and lab); what the build itself writes (the book's build folder), the cache, the
//! learners' `exercises/` and editors' swap files never trigger one.

use super::rebuild::Trigger;
use notify_debouncer_full::notify::{EventKind, RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// How long the watcher waits for a burst of events to end.
const DEBOUNCE: Duration = Duration::from_millis(100);

/// What to watch, and what to ignore inside it. Paths are canonical, as the watcher reports
/// them.
#[derive(Debug, Clone)]
pub struct Watched {
    /// Folders watched with everything under them.
    pub folders: Vec<PathBuf>,
    /// Single files (book.toml), watched through their folder: an editor that saves by
    /// renaming a new file over the old one replaces the file a watch on it would follow.
    pub files: Vec<PathBuf>,
    /// Folders whose changes are the server's own doing (the built book, the cache, the
    /// learners' kernels), even where they lie inside a watched folder.
    pub ignored: Vec<PathBuf>,
}

impl Watched {
    /// Whether a change to `path` calls for a rebuild.
    pub fn matters(&self, path: &Path) -> bool {
        if self.ignored.iter().any(|dir| path.starts_with(dir)) {
            return false;
        }
        // The build's staging folders (crate::staging) beside the built book.
        let staging = path.components().any(|part| {
            part.as_os_str()
                .to_str()
                .is_some_and(|name| name.contains(".building-") || name.starts_with(".book.old-"))
        });
        if staging {
            return false;
        }
        if self.files.iter().any(|file| file == path) {
            return true;
        }
        if !self.folders.iter().any(|dir| path.starts_with(dir)) {
            return false;
        }
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        // Editors' swap, backup and lock files, and vim's probe file.
        let noise = name.ends_with('~')
            || name.ends_with(".swp")
            || name.ends_with(".swx")
            || name.starts_with(".#")
            || name == "4913";
        !noise
    }

    /// The watches to set: each folder with everything under it, each file's folder alone.
    fn watches(&self) -> Vec<(PathBuf, RecursiveMode)> {
        let mut watches: Vec<(PathBuf, RecursiveMode)> = self
            .folders
            .iter()
            .map(|dir| (dir.clone(), RecursiveMode::Recursive))
            .collect();
        for file in &self.files {
            let dir = file.parent().unwrap_or(Path::new(".")).to_path_buf();
            if !watches.iter().any(|(watched, _)| *watched == dir) {
                watches.push((dir, RecursiveMode::NonRecursive));
            }
        }
        watches
    }
}

/// Starts watching `watched`; each batch of changes that matters is sent as
/// [`Trigger::Changed`]. Watching stops when the returned debouncer is dropped.
pub fn start(
    watched: Watched,
    triggers: mpsc::Sender<Trigger>,
) -> anyhow::Result<Debouncer<RecommendedWatcher, RecommendedCache>> {
    let filter = watched.clone();
    let mut debouncer = new_debouncer(DEBOUNCE, None, move |events: DebounceEventResult| {
        let events = match events {
            Ok(events) => events,
            Err(errors) => {
                for err in errors {
                    crate::output::notice(&format!("kernelbook: watching the book: {err}"));
                }
                return;
            }
        };
        let mut paths: Vec<PathBuf> = events
            .into_iter()
            .filter(|event| !matches!(event.kind, EventKind::Access(_)))
            .flat_map(|event| event.event.paths)
            .filter(|path| filter.matters(path))
            .collect();
        paths.sort();
        paths.dedup();
        if !paths.is_empty() {
            let _ = triggers.send(Trigger::Changed(paths));
        }
    })?;
    for (path, mode) in watched.watches() {
        debouncer
            .watch(&path, mode)
            .map_err(|err| anyhow::anyhow!("cannot watch {}: {err}", path.display()))?;
    }
    Ok(debouncer)
}
