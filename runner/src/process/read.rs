//! Reading a child's pipes on threads of their own: stdout as lines, JSON values or one text,
//! stderr as its last lines. A pipe is always read to its end, so that a child never blocks on
//! a full pipe, whatever it writes and whether or not anyone still listens.

use serde::de::DeserializeOwned;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What a reader thread sends, received under a deadline. `Err(Disconnected)` once the pipe
/// has ended (the child closed it, usually by exiting) and every value was received.
pub struct Incoming<T> {
    rx: mpsc::Receiver<T>,
}

impl<T> std::fmt::Debug for Incoming<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Incoming").finish_non_exhaustive()
    }
}

impl<T> Incoming<T> {
    /// The next value, waiting until `deadline` at most.
    pub fn recv_until(&self, deadline: Instant) -> Result<T, RecvTimeoutError> {
        self.recv_timeout(deadline.saturating_duration_since(Instant::now()))
    }

    /// The next value, waiting `limit` at most.
    pub fn recv_timeout(&self, limit: Duration) -> Result<T, RecvTimeoutError> {
        self.rx.recv_timeout(limit)
    }

    /// A channel that has already ended (for a pipe that was taken elsewhere).
    pub(super) fn ended() -> Self {
        Incoming {
            rx: mpsc::channel().1,
        }
    }
}

/// Each line of `pipe` (without its line ending; invalid UTF-8 replaced, not fatal).
pub fn read_lines(pipe: impl Read + Send + 'static) -> Incoming<String> {
    read_parsed(pipe, Some)
}

/// Each line of `pipe` that is a JSON `T`; other lines are passed over (a stray print must not
/// break the protocol).
pub fn read_json_lines<T: DeserializeOwned + Send + 'static>(
    pipe: impl Read + Send + 'static,
) -> Incoming<T> {
    read_parsed(pipe, |line| serde_json::from_str(&line).ok())
}

/// Everything `pipe` gives until it ends, as one text (invalid UTF-8 replaced).
pub fn read_to_end(pipe: impl Read + Send + 'static) -> Incoming<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut pipe = pipe;
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        let _ = tx.send(String::from_utf8_lossy(&bytes).into_owned());
    });
    Incoming { rx }
}

fn read_parsed<T: Send + 'static>(
    pipe: impl Read + Send + 'static,
    parse: impl Fn(String) -> Option<T> + Send + 'static,
) -> Incoming<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut listening = true;
        each_line(pipe, |line| {
            if listening && let Some(value) = parse(line) {
                // Nobody listens any more: go on draining the pipe all the same.
                listening = tx.send(value).is_ok();
            }
        });
    });
    Incoming { rx }
}

/// Calls `f` with each line of `pipe` until it ends. `BufRead::lines` would stop at the first
/// line that is not UTF-8 and leave the pipe unread from there on.
fn each_line(pipe: impl Read, mut f: impl FnMut(String)) {
    let mut reader = BufReader::new(pipe);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                f(String::from_utf8_lossy(line).into_owned());
            }
        }
    }
}

/// The last lines a child wrote to stderr, kept for the message that reports its end. Read on
/// a thread of its own, so that the pipe never fills up however much the child writes.
#[derive(Debug)]
pub struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    reader: Option<JoinHandle<()>>,
}

impl StderrTail {
    /// Reads `pipe` (if any), keeping its last `keep` lines.
    pub fn start(pipe: Option<impl Read + Send + 'static>, keep: usize) -> Self {
        let lines = Arc::new(Mutex::new(VecDeque::new()));
        let reader = pipe.map(|pipe| {
            let lines = Arc::clone(&lines);
            std::thread::spawn(move || {
                each_line(pipe, |line| {
                    if let Ok(mut lines) = lines.lock() {
                        if lines.len() >= keep {
                            lines.pop_front();
                        }
                        if keep > 0 {
                            lines.push_back(line);
                        }
                    }
                });
            })
        });
        StderrTail { lines, reader }
    }

    /// Waits until the pipe has ended (everyone holding its other end has closed it) or
    /// `deadline` passes; says whether it ended.
    pub fn wait_for_end(&self, deadline: Instant) -> bool {
        let Some(reader) = &self.reader else {
            return true;
        };
        while !reader.is_finished() {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }

    /// The last `count` non-blank lines, joined by " / ". Say `ended` when the process has
    /// ended: its last words may still be in the pipe, so this waits for the reader to reach the
    /// end (a second at most, should a process of its own still hold the pipe).
    pub fn last(&self, count: usize, ended: bool) -> String {
        if ended {
            self.wait_for_end(Instant::now() + Duration::from_secs(1));
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

    /// Every line kept, blank ones too, each ended by a newline.
    pub fn text(&self) -> String {
        let Ok(lines) = self.lines.lock() else {
            return String::new();
        };
        lines.iter().flat_map(|l| [l.as_str(), "\n"]).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn pipe(bytes: &[u8]) -> Option<Cursor<Vec<u8>>> {
        Some(Cursor::new(bytes.to_vec()))
    }

    #[test]
    fn the_stderr_tail_keeps_the_last_lines_and_skips_blank_ones() {
        let tail = StderrTail::start(pipe(b"one\ntwo\n\nthree\nfour\n"), 3);
        assert_eq!(tail.last(2, true), "three / four");
        assert_eq!(
            tail.last(5, true),
            "three / four",
            "only three lines are kept, one blank"
        );
        assert_eq!(tail.text(), "\nthree\nfour\n");
        let none = StderrTail::start(None::<std::io::Empty>, 3);
        assert_eq!(none.last(2, true), "");
    }

    #[test]
    fn a_stderr_line_that_is_not_utf8_does_not_stop_the_tail() {
        let tail = StderrTail::start(pipe(b"one\n\xff\xfe bad\r\nlast words\n"), 10);
        assert_eq!(
            tail.last(3, true),
            "one / \u{fffd}\u{fffd} bad / last words"
        );
    }

    #[test]
    fn json_lines_pass_over_what_is_not_json_and_end_with_the_pipe() {
        let lines = read_json_lines::<serde_json::Value>(Cursor::new(
            b"{\"a\": 1}\nnot json\n\xff\n{\"b\": 2}".to_vec(),
        ));
        let limit = Duration::from_secs(5);
        assert_eq!(lines.recv_timeout(limit), Ok(serde_json::json!({"a": 1})));
        assert_eq!(lines.recv_timeout(limit), Ok(serde_json::json!({"b": 2})));
        assert_eq!(
            lines.recv_timeout(limit),
            Err(RecvTimeoutError::Disconnected)
        );
        let all = read_to_end(Cursor::new(b"x\ny".to_vec()));
        assert_eq!(all.recv_timeout(limit).as_deref(), Ok("x\ny"));
    }
}
