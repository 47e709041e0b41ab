//! What the server tells every open page, and the terminal: the book's version, whether a
//! build or a measurement is under way, and why the last build failed. One [`Board`] holds it;
//! each page's websocket follows its changes (a `tokio::sync::watch` channel keeps only the
//! latest, so a slow page skips to it).

use kernelbook_core::terminal;
use kernelbook_runner::engine::Progress;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::watch;

/// The state every page shows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Status {
    /// How many builds have put a new book in place. A page built from an older one reloads
    /// (when no build is under way).
    pub version: u64,
    /// A build is under way.
    pub building: bool,
    /// Labs whose results are being measured (or are waiting for the GPU), in the order asked.
    pub measuring: Vec<String>,
    /// Labs whose counters are being collected now.
    pub counting: Vec<String>,
    /// What the GPU is doing now, in a few words.
    pub progress: Option<String>,
    /// The exercise being graded now.
    pub checking: Option<String>,
    /// Why the last build failed, with files and lines, until a build succeeds.
    pub error: Option<String>,
    /// The GPU exercises are graded on, or (in `no_gpu`) why none can be.
    pub gpu: Option<String>,
    pub no_gpu: Option<String>,
}

/// The one [`Status`], shared by the builder, the GPU worker and the pages.
#[derive(Debug, Clone)]
pub struct Board(Arc<watch::Sender<Status>>);

impl Board {
    /// A board for a machine whose GPU is `gpu` (its name, or why there is none).
    pub fn new(gpu: Result<String, String>) -> Board {
        let (gpu, no_gpu) = match gpu {
            Ok(name) => (Some(name), None),
            Err(why) => (None, Some(why)),
        };
        let (sender, _) = watch::channel(Status {
            gpu,
            no_gpu,
            ..Status::default()
        });
        Board(Arc::new(sender))
    }

    pub fn subscribe(&self) -> watch::Receiver<Status> {
        self.0.subscribe()
    }

    pub fn now(&self) -> Status {
        self.0.borrow().clone()
    }

    /// Changes the status; every page is told.
    pub fn update(&self, change: impl FnOnce(&mut Status)) {
        self.0.send_modify(change);
    }
}

/// Progress reports from the GPU worker, shown in every page as [`Status::progress`].
#[derive(Debug)]
pub struct BoardProgress {
    board: Board,
    /// The current variant, for the sample counts.
    variant: String,
}

impl BoardProgress {
    pub fn new(board: &Board) -> Self {
        BoardProgress {
            board: board.clone(),
            variant: String::new(),
        }
    }

    fn show(&self, text: String) {
        self.board.update(|status| status.progress = Some(text));
    }
}

impl Progress for BoardProgress {
    // Messages name labs and variants from lab files: on one line, control characters escaped
    // (the page shows them as text; the terminal never sees them from here).
    fn stage(&mut self, message: &str) {
        self.show(terminal::one_line(message).into_owned());
    }
    fn variant(&mut self, index: usize, total: usize, name: &str) {
        self.variant = format!("[{}/{total}] {}", index + 1, terminal::one_line(name));
        self.show(self.variant.clone());
    }
    fn samples(&mut self, count: usize) {
        if count.is_multiple_of(25) {
            self.show(format!("{}: {count} samples", self.variant));
        }
    }
}

/// The labs shown on the pages open in a browser now (each page's websocket names the labs it
/// shows, for as long as it is open): what the GPU does first after a save.
#[derive(Debug, Clone, Default)]
pub struct OpenLabs(Arc<Mutex<BTreeMap<String, usize>>>);

impl OpenLabs {
    /// Counts `labs` as open until the returned guard is dropped (the page's socket closes).
    pub fn open(&self, labs: Vec<String>) -> OpenGuard {
        let mut open = self.lock();
        for lab in &labs {
            *open.entry(lab.clone()).or_default() += 1;
        }
        OpenGuard {
            open: self.clone(),
            labs,
        }
    }

    pub fn contains(&self, lab: &str) -> bool {
        self.lock().contains_key(lab)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, usize>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A page's labs, open while it lives.
#[derive(Debug)]
pub struct OpenGuard {
    open: OpenLabs,
    labs: Vec<String>,
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        let mut open = self.open.lock();
        for lab in &self.labs {
            if let Some(count) = open.get_mut(lab) {
                *count -= 1;
                if *count == 0 {
                    open.remove(lab);
                }
            }
        }
    }
}

/// The lab names a page says it shows (`?labs=a,b`): names as lab files have them (letters,
/// digits, `_`, `-`), at most 64; anything else is dropped.
pub fn page_labs(query: Option<&str>) -> Vec<String> {
    const MOST: usize = 64;
    let Some(list) = query else {
        return Vec::new();
    };
    list.split(',')
        .filter(|name| {
            !name.is_empty()
                && name.len() <= 64
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        })
        .take(MOST)
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pages_labs_are_open_while_its_socket_is() {
        let open = OpenLabs::default();
        let first = open.open(page_labs(Some("bandwidth,fusion")));
        let second = open.open(page_labs(Some("bandwidth")));
        drop(first);
        assert!(open.contains("bandwidth"));
        assert!(!open.contains("fusion"));
        drop(second);
        assert!(!open.contains("bandwidth"));
    }

    #[test]
    fn only_names_a_lab_file_could_have_are_taken() {
        assert_eq!(page_labs(Some("ok_1,<script>,,a-b,../x")), ["ok_1", "a-b"]);
        assert!(page_labs(None).is_empty());
    }
}
