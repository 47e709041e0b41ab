//! The last lines a child process wrote to stderr, kept for the message that reports its end.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Reads a child's stderr on a thread of its own, keeping the last `keep` lines, so that the
/// pipe never fills up however much the child writes.
#[derive(Debug)]
pub(crate) struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    reader: Option<JoinHandle<()>>,
}

impl StderrTail {
    pub(crate) fn start(pipe: Option<impl Read + Send + 'static>, keep: usize) -> Self {
        let lines = Arc::new(Mutex::new(VecDeque::new()));
        let reader = pipe.map(|pipe| {
            let lines = Arc::clone(&lines);
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    if let Ok(mut lines) = lines.lock() {
                        if lines.len() == keep {
                            lines.pop_front();
                        }
                        lines.push_back(line);
                    }
                }
            })
        });
        StderrTail { lines, reader }
    }

    /// The last `count` non-blank lines, joined by " / ". Call `ended` when the process has
    /// ended: its last words may still be in the pipe, so this waits for the reader to reach the
    /// end (a second at most, should a process of its own still hold the pipe).
    pub(crate) fn last(&self, count: usize, ended: bool) -> String {
        if let (true, Some(reader)) = (ended, &self.reader) {
            let deadline = Instant::now() + Duration::from_secs(1);
            while !reader.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let Ok(lines) = self.lines.lock() else {
            return String::new();
        };
        let lines: Vec<&str> = lines
            .iter()
            .map(String::as_str)
            .filter(|l| !l.trim().is_empty())
            .collect();
        lines[lines.len().saturating_sub(count)..].join(" / ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_lines_and_skips_blank_ones() {
        let text = "one\ntwo\n\nthree\nfour\n";
        let tail = StderrTail::start(Some(std::io::Cursor::new(text.as_bytes().to_vec())), 3);
        assert_eq!(tail.last(2, true), "three / four");
        assert_eq!(
            tail.last(5, true),
            "three / four",
            "only three lines are kept, one blank"
        );
        let none = StderrTail::start(None::<std::io::Empty>, 3);
        assert_eq!(none.last(2, true), "");
    }
}
