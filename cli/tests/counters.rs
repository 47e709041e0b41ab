//! Numbers first, counters second, without a GPU: `tests/counters-book` on the fake device,
//! "profiled" by the stand-in ncu of test builds (`kernelbook __fake-ncu`, through a script
//! `KERNELBOOK_NCU` names). What is checked: no number waits for a counter (the book is
//! written with every number while the counters are still being collected, and the progress
//! says so in that order); one ncu session per lab; the counters cache key (a kernel edit
//! re-profiles that kernel's launches only; a label or prose edit re-profiles nothing);
//! `--no-counters`.

mod support;

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::{copy_dir, repo, text};

/// A copy of `tests/counters-book`, and the stand-in ncu's script and session log beside it.
struct Book {
    dir: tempfile::TempDir,
}

impl Book {
    fn new() -> Book {
        let dir = tempfile::tempdir().expect("tempdir");
        copy_dir(
            &repo().join("tests/counters-book"),
            &dir.path().join("book"),
        );
        let script = dir.path().join("ncu");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nexec '{}' __fake-ncu \"$@\"\n",
                env!("CARGO_BIN_EXE_kernelbook")
            ),
        )
        .expect("the stand-in's script");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))
                .expect("chmod");
        }
        Book { dir }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("book")
    }

    fn command(&self, args: &[&str], delay_ms: u64) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_kernelbook"));
        command
            .arg("--root")
            .arg(self.root())
            .args(args)
            .env("KERNELBOOK_DEVICE", "fake")
            .env("KERNELBOOK_NCU", self.dir.path().join("ncu"))
            .env("KERNELBOOK_FAKE_NCU_LOG", self.dir.path().join("sessions"))
            .env("KERNELBOOK_FAKE_NCU_DELAY_MS", delay_ms.to_string())
            .env_remove("KERNELBOOK_TRACE");
        command
    }

    fn build(&self, args: &[&str]) -> Output {
        let mut all = vec!["build"];
        all.extend_from_slice(args);
        let output = self.command(&all, 0).output().expect("kernelbook runs");
        assert!(output.status.success(), "{}", text(&output.stderr));
        output
    }

    /// Each ncu session so far: the functions it profiled.
    fn sessions(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("sessions"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn page(&self, name: &str) -> String {
        std::fs::read_to_string(self.root().join("target/book").join(name)).unwrap_or_default()
    }

    fn edit(&self, file: &str, from: &str, to: &str) {
        let path = self.root().join(file);
        let old = std::fs::read_to_string(&path).expect("read");
        assert!(old.contains(from), "{file} has no {from:?}");
        std::fs::write(&path, old.replacen(from, to, 1)).expect("write");
    }
}

fn lines_with<'a>(stderr: &'a str, prefix: &str) -> Vec<(usize, &'a str)> {
    stderr
        .lines()
        .enumerate()
        .filter(|(_, line)| line.contains(prefix))
        .collect()
}

/// The counters phase starts after the last lab's numbers; one session per profiled lab, of
/// its kernels only; the finished pages show the counters.
#[test]
fn every_number_comes_before_any_counter_and_each_lab_is_one_session() {
    let book = Book::new();
    let output = book.build(&[]);
    let stderr = text(&output.stderr);
    let numbers = lines_with(&stderr, "kernelbook: numbers: lab");
    let counters = lines_with(&stderr, "kernelbook: counters: lab");
    assert_eq!(numbers.len(), 3, "{stderr}");
    assert_eq!(counters.len(), 2, "{stderr}");
    assert!(
        numbers.last().expect("numbers").0 < counters[0].0,
        "{stderr}"
    );
    assert!(
        counters[0].1.contains("about"),
        "an estimate: {}",
        counters[0].1
    );
    assert!(
        text(&output.stdout).contains("every number was in the book after"),
        "{}",
        text(&output.stdout)
    );
    let mut sessions = book.sessions();
    sessions.sort();
    assert_eq!(sessions, ["copy_first copy_second", "copy_third"]);
    let two = book.page("two.html");
    assert!(two.contains("kernelbook-profile"), "the counters table");
    assert!(!two.contains("being collected"), "nothing left pending");
}

/// While the counters are collected (each session slowed to 4 s), the book already holds every
/// lab's numbers and says its counters are being collected.
#[test]
fn the_book_has_its_numbers_while_the_counters_are_collected() {
    let book = Book::new();
    let mut child: Child = book
        .command(&["build"], 4000)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("kernelbook runs");
    let started = Instant::now();
    let mut seen = String::new();
    while started.elapsed() < Duration::from_secs(60) {
        seen = book.page("two.html");
        if seen.contains("being collected") || child.try_wait().ok().flatten().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        seen.contains("being collected") && seen.contains("the copy_first kernel"),
        "the first book, numbers only: {seen}"
    );
    assert!(child.wait().expect("waits").success());
    let done = book.page("two.html");
    assert!(!done.contains("being collected") && done.contains("kernelbook-profile"));
}

/// A kernel edit re-profiles only that kernel's launches; a label edit or a prose edit
/// re-profiles nothing; nothing changed, nothing is profiled.
#[test]
fn counters_are_cached_by_kernel() {
    let book = Book::new();
    book.build(&[]);
    let first = book.sessions().len();
    book.build(&[]);
    assert_eq!(
        book.sessions().len(),
        first,
        "a warm build profiles nothing"
    );
    book.edit("labs/two.toml", "the copy_first kernel", "the first copy");
    book.edit("src/one.md", "# One copy", "# One copy, reworded");
    book.build(&[]);
    assert_eq!(
        book.sessions().len(),
        first,
        "labels and prose profile nothing"
    );
    book.edit(
        "src/two.md",
        "if (i < n) dst[i] = src[i];\n}\n```\n\n```cuda kernel=copy_second",
        "if (i < n) { dst[i] = src[i]; }\n}\n```\n\n```cuda kernel=copy_second",
    );
    book.build(&[]);
    let sessions = book.sessions();
    assert_eq!(sessions.len(), first + 1, "{sessions:?}");
    assert_eq!(sessions.last().map(String::as_str), Some("copy_first"));
}

/// `--no-counters` (and `counters = false` in book.toml) collects none: the pages say so.
#[test]
fn no_counters_collects_none_and_says_so() {
    let book = Book::new();
    let output = book.build(&["--no-counters"]);
    assert!(book.sessions().is_empty(), "{:?}", book.sessions());
    assert!(lines_with(&text(&output.stderr), "kernelbook: counters:").is_empty());
    let two = book.page("two.html");
    assert!(two.contains("this build collected none"), "{two}");
    let config = book.root().join("book.toml");
    let toml = std::fs::read_to_string(&config).expect("book.toml");
    std::fs::write(
        &config,
        toml.replace("labs = \"labs\"", "labs = \"labs\"\ncounters = false"),
    )
    .expect("write");
    book.build(&[]);
    assert!(book.sessions().is_empty());
}
