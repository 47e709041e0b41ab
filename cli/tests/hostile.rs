//! A newcomer's mistakes and hostile inputs (issue 25), each pinned by the outcome it must have:
//! no user file lost, no hang, no silent wrong answer, a clear message that names the file or
//! value and says what to do. The fixture book is `tests/gpus-book` on the fake device.

mod support;

use std::path::Path;
use std::process::{Command, Output};
use support::{gpus_book, text};

/// `kernelbook ARGS…` in the folder `cwd` (no `--root`), on one fake GPU.
fn kernelbook_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kernelbook"))
        .current_dir(cwd)
        .args(args)
        .env("KERNELBOOK_DEVICE", "fake")
        .env("KERNELBOOK_FAKE_DEVICES", "1")
        .env_remove("CUDA_VISIBLE_DEVICES")
        .output()
        .expect("kernelbook runs")
}

fn stderr(output: &Output) -> String {
    text(&output.stderr)
}

// ---- A. user files lost ------------------------------------------------------------------

/// Every folder a newcomer might name as the book's destination that holds files of theirs:
/// the build refuses it, names it, and leaves every file where it was.
#[test]
fn build_never_empties_a_folder_that_is_not_a_book_it_wrote() {
    let book = gpus_book();
    let root = book.path();
    let home = tempfile::tempdir().expect("a home");
    std::fs::write(home.path().join(".bashrc"), "alias ll='ls -l'\n").expect("bashrc");
    let user = root.join("notes");
    std::fs::create_dir_all(&user).expect("mkdir");
    std::fs::write(user.join("todo.txt"), "mine").expect("write");
    std::fs::create_dir_all(root.join("labs/recorded/gpu-a")).expect("mkdir");
    std::fs::write(root.join("labs/recorded/gpu-a/copy.json"), "{}").expect("write");
    let cases: [(&Path, &str); 6] = [
        (&user, "todo.txt"),
        (&root.join("src"), "SUMMARY.md"),
        (root, "book.toml"),
        (&root.join("labs"), "copy.toml"),
        (&root.join("labs/recorded"), "gpu-a/copy.json"),
        (home.path(), ".bashrc"),
    ];
    for (dest, kept) in cases {
        let dest_arg = dest.to_str().expect("utf-8");
        let output = kernelbook_in(root, &["build", "--dest-dir", dest_arg]);
        let err = stderr(&output);
        assert!(!output.status.success(), "{}: refused", dest.display());
        assert!(
            err.contains(&dest.display().to_string()) || err.contains("sources"),
            "{}: the message names it: {err}",
            dest.display()
        );
        assert!(dest.join(kept).is_file(), "{}: {kept} kept", dest.display());
    }
    // book.toml's build-dir the same.
    let toml = std::fs::read_to_string(root.join("book.toml")).expect("book.toml");
    let toml = toml.replace("build-dir = \"target/book\"", "build-dir = \"labs\"");
    std::fs::write(root.join("book.toml"), toml).expect("write");
    let output = kernelbook_in(root, &["build"]);
    assert!(!output.status.success(), "build-dir = labs refused");
    assert!(stderr(&output).contains("not a book kernelbook wrote"));
    assert!(root.join("labs/copy.toml").is_file(), "the lab files kept");
}

/// A folder the build wrote carries the marker and is replaced by the next build.
#[test]
fn a_book_kernelbook_wrote_is_replaced_by_the_next_build() {
    let book = gpus_book();
    let site = tempfile::tempdir().expect("tempdir");
    let dest = site.path().join("site");
    let dest_arg = dest.to_str().expect("utf-8");
    for round in 0..2 {
        let output = kernelbook_in(book.path(), &["build", "--dest-dir", dest_arg]);
        assert!(
            output.status.success(),
            "round {round}: {}",
            stderr(&output)
        );
        assert!(dest.join(".kernelbook-book").is_file(), "the marker");
        assert!(dest.join("index.html").is_file());
    }
}

/// `record --folder` is a GPU folder's name, and a relative `--out` stays in the project: no
/// recording lands outside it unless an absolute path says so.
#[test]
fn record_never_writes_outside_the_project_through_a_relative_path() {
    let outer = tempfile::tempdir().expect("tempdir");
    let root = outer.path().join("a/b/book");
    support::copy_dir(&support::repo().join("tests/gpus-book"), &root);
    for args in [
        &["record", "--folder", "../../x"][..],
        &["record", "--folder", "../../../x"][..],
        &["record", "--out", "../../x"][..],
        &["export", "--format", "csv", "-o", "../../x"][..],
        &[
            "slurm",
            "--dry-run",
            "--gres",
            "gpu:h200:1",
            "--out",
            "../../x",
        ][..],
        &["build", "--dest-dir", "../../x"][..],
    ] {
        let output = kernelbook_in(&root, args);
        let err = stderr(&output);
        assert!(!output.status.success(), "{args:?} refused");
        assert!(err.contains("../"), "{args:?}: names the value: {err}");
        for outside in ["a/x", "x", "a/b/x"] {
            assert!(!outer.path().join(outside).exists(), "{args:?}: {outside}");
        }
    }
    // An absolute path out of the project is what the user asked for.
    let elsewhere = outer.path().join("x");
    let output = kernelbook_in(
        &root,
        &[
            "record",
            "copy",
            "--out",
            elsewhere.to_str().expect("utf-8"),
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(elsewhere.join("fake-gpu-fake/copy.json").is_file());
}

// ---- B. hangs, aborts, orphans -----------------------------------------------------------

/// A `python3` with NumPy: `KERNELBOOK_PYTHON`, else `python3`; `None` (the test says it is
/// skipped) without one.
fn python_with_numpy() -> Option<String> {
    let python = std::env::var("KERNELBOOK_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = Command::new(&python)
        .args(["-c", "import numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: no python3 with NumPy (set KERNELBOOK_PYTHON)");
    }
    ok.then_some(python)
}

/// Whether process `pid` is still running (a zombie is not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// A copy of `tests/author-labs` whose NumPy reference starts `sleep 300` and writes its pid
/// to `pid_file`, then sleeps `stall` seconds itself.
fn book_whose_reference_starts_a_child(pid_file: &Path, stall: u32) -> tempfile::TempDir {
    let book = tempfile::tempdir().expect("tempdir");
    support::copy_dir(&support::repo().join("tests/author-labs"), book.path());
    let chapter = book.path().join("src/axpy.md");
    let text = std::fs::read_to_string(&chapter).expect("axpy.md");
    let spawning = format!(
        "def axpy_ref(x, y, a):\n    import subprocess, time\n    child = subprocess.Popen([\"sleep\", \"300\"])\n    \
         open({:?}, \"w\").write(str(child.pid))\n    time.sleep({stall})\n",
        pid_file.display().to_string()
    );
    let text = text.replace("def axpy_ref(x, y, a):\n", &spawning);
    std::fs::write(&chapter, text).expect("write");
    book
}

fn wait_for_pid(pid_file: &Path, child: &mut std::process::Child) -> u32 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        if let Some(pid) = std::fs::read_to_string(pid_file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return pid;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("kernelbook ended ({status}) before the reference started its child");
        }
        assert!(std::time::Instant::now() < deadline, "no pid after 120 s");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn assert_ends_soon(pid: u32, what: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while running(pid) {
        if std::time::Instant::now() > deadline {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("{what}: the reference's child {pid} is still running");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A NumPy reference's child process dies with the build: when the build ends, and when
/// kernelbook is killed in the middle of it.
#[test]
fn a_numpy_references_child_dies_with_the_build() {
    let Some(python) = python_with_numpy() else {
        return;
    };
    for (stall, killed) in [(0, false), (60, true)] {
        let pids = tempfile::tempdir().expect("tempdir");
        let pid_file = pids.path().join("child.pid");
        let book = book_whose_reference_starts_a_child(&pid_file, stall);
        let mut child = Command::new(env!("CARGO_BIN_EXE_kernelbook"))
            .arg("--root")
            .arg(book.path())
            .args(["build", "--no-counters"])
            .env("KERNELBOOK_DEVICE", "fake")
            .env("KERNELBOOK_PYTHON", &python)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("kernelbook starts");
        let pid = wait_for_pid(&pid_file, &mut child);
        if killed {
            child.kill().expect("SIGKILL");
        }
        let _ = child.wait();
        assert_ends_soon(pid, if killed { "killed" } else { "ended" });
    }
}

/// `kernelbook ARGS…` on the book at `root`, killed (and the test failed) if it has not ended
/// within `limit` seconds: a hang is a failure, not a stuck test.
fn kernelbook_within(root: &Path, args: &[&str], limit: u64) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kernelbook"))
        .arg("--root")
        .arg(root)
        .args(args)
        .env("KERNELBOOK_DEVICE", "fake")
        .env("KERNELBOOK_FAKE_DEVICES", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kernelbook starts");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(limit);
    while child.try_wait().expect("wait").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("kernelbook {args:?} did not end within {limit} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

fn mkfifo(path: &Path) -> bool {
    let made = Command::new("mkfifo").arg(path).status();
    let ok = made.is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipped: mkfifo is not available");
    }
    ok
}

/// A FIFO or a link to `/dev/zero` where a chapter, an included file or a lab file should be:
/// a clear error naming it, at once, never a hang or a read until memory runs out.
#[cfg(unix)]
#[test]
fn special_files_as_sources_are_refused_at_once() {
    // (the special file, what it is, a chapter that includes it and the line that does)
    type Case<'a> = (&'a str, &'a str, Option<(&'a str, &'a str)>);
    let cases: [Case<'_>; 5] = [
        ("src/copy.md", "fifo", None),
        ("src/copy.md", "zero", None),
        ("labs/copy.toml", "fifo", None),
        ("labs/copy.toml", "zero", None),
        (
            "src/part.md",
            "fifo",
            Some(("src/copy.md", "\n{{#include part.md}}\n")),
        ),
    ];
    for (file, kind, include) in cases {
        let book = gpus_book();
        let path = book.path().join(file);
        let _ = std::fs::remove_file(&path);
        match kind {
            "fifo" if !mkfifo(&path) => return,
            "fifo" => {}
            _ => std::os::unix::fs::symlink("/dev/zero", &path).expect("symlink"),
        }
        if let Some((chapter, line)) = include {
            let at = book.path().join(chapter);
            let text = std::fs::read_to_string(&at).expect("chapter") + line;
            std::fs::write(&at, text).expect("write");
        }
        for command in [&["build"][..], &["list"][..]] {
            let output = kernelbook_within(book.path(), command, 60);
            let err = stderr(&output);
            assert!(!output.status.success(), "{file} ({kind}), {command:?}");
            let name = Path::new(file)
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or(file);
            assert!(err.contains(name), "{file} ({kind}), {command:?}: {err}");
            assert!(
                err.contains("not a regular file"),
                "{file} ({kind}), {command:?}: {err}"
            );
        }
    }
}

/// `kernelbook check EXERCISE FILE` with a FIFO or `/dev/zero` as FILE.
#[cfg(unix)]
#[test]
fn a_special_file_as_checks_file_is_refused_at_once() {
    let book = tempfile::tempdir().expect("tempdir");
    support::copy_dir(&support::repo().join("tests/serve-book"), book.path());
    let fifo = book.path().join("mine.cu");
    if !mkfifo(&fifo) {
        return;
    }
    for file in [fifo.as_path(), Path::new("/dev/zero")] {
        let path = file.to_str().expect("utf-8");
        let output = kernelbook_within(book.path(), &["check", "copy_exercise", path], 60);
        let err = stderr(&output);
        assert!(!output.status.success(), "{path}");
        assert!(
            err.contains(path) && err.contains("not a regular file"),
            "{err}"
        );
    }
}

/// `{{#value}}` written 100,000 times in a chapter builds in seconds, not hours: no step of
/// the scan or the splice goes over the chapter once per figure.
#[test]
fn a_hundred_thousand_figures_do_not_hang_the_build() {
    let book = gpus_book();
    let chapter = book.path().join("src/copy.md");
    let mut text = std::fs::read_to_string(&chapter).expect("chapter");
    text.push_str("\nOn one line: ");
    text.push_str(&"{{#value copy.scalar.gbs}} ".repeat(50_000));
    text.push('\n');
    for _ in 0..50_000 {
        text.push_str("A line of its own: {{#value copy.scalar.gbs}}\n");
    }
    std::fs::write(&chapter, text).expect("write");
    let started = std::time::Instant::now();
    let output = kernelbook_within(book.path(), &["build", "--recorded"], 300);
    assert!(output.status.success(), "{}", stderr(&output));
    eprintln!(
        "100,000 figures built in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

// ---- C. silent wrong, unclear ------------------------------------------------------------

/// `kernelbook --help` into a full disk fails; into a pipe closed early it does not.
#[cfg(target_os = "linux")]
#[test]
fn help_that_cannot_be_written_is_a_failure() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    for args in [
        &["--help"][..],
        &["build", "--help"][..],
        &["--version"][..],
    ] {
        let status = Command::new(env!("CARGO_BIN_EXE_kernelbook"))
            .args(args)
            .stdout(full.try_clone().expect("dup"))
            .stderr(std::process::Stdio::null())
            .status()
            .expect("runs");
        assert!(!status.success(), "{args:?} > /dev/full: {status}");
    }
    let output = Command::new(env!("CARGO_BIN_EXE_kernelbook"))
        .arg("--help")
        .output()
        .expect("runs");
    assert!(output.status.success());
    assert!(text(&output.stdout).contains("Usage"));
}

/// A copy of `tests/gpus-book` with `text` added to its chapter `src/copy.md`.
fn book_with_chapter_line(text: &str) -> tempfile::TempDir {
    let book = gpus_book();
    let chapter = book.path().join("src/copy.md");
    let written = std::fs::read_to_string(&chapter).expect("chapter");
    std::fs::write(&chapter, format!("{written}\n{text}\n")).expect("write");
    book
}

/// The line of `src/copy.md` that holds `needle`.
fn line_of(book: &Path, needle: &str) -> usize {
    let text = std::fs::read_to_string(book.join("src/copy.md")).expect("chapter");
    text.lines()
        .position(|l| l.contains(needle))
        .expect("the line")
        + 1
}

/// What was accepted without a word is an error at its chapter's line: a diagram's counters
/// from a lab that is not profiled, an include of nothing or of a folder.
#[test]
fn chapter_mistakes_are_errors_at_their_line() {
    let cases = [
        (
            r#"{{#banks index="32 * t + c" c=3 lab=copy variant=scalar}}"#,
            "is not profiled",
        ),
        ("{{#include missing.md}}", "No such file"),
        ("{{#include .}}", "a folder"),
        ("{{#include /dev/zero}}", "a device"),
    ];
    for (line, says) in cases {
        let book = book_with_chapter_line(line);
        let at = format!("src/copy.md:{}", line_of(book.path(), line));
        for command in [&["build"][..], &["list"][..]] {
            if command == ["list"] && line.starts_with("{{#banks") {
                continue; // list does not draw diagrams; build does
            }
            let output = kernelbook_within(book.path(), command, 120);
            let err = stderr(&output);
            assert!(!output.status.success(), "{line}, {command:?}: accepted");
            assert!(err.contains(&at) && err.contains(says), "{line}: {err}");
        }
    }
}

/// A builtin row with a launch shape or a minimum architecture is refused at its lab file's
/// line: the runner launches builtins itself, and would ignore both.
#[test]
fn a_builtin_with_a_grid_or_requires_is_refused_at_its_line() {
    for field in ["grid = [4]", "requires = \"sm_90\""] {
        let book = gpus_book();
        let lab = book.path().join("labs/copy.toml");
        let text = std::fs::read_to_string(&lab).expect("lab");
        assert!(
            text.contains("builtin = \"memcpy\"\n"),
            "the fixture has a builtin"
        );
        let text = text.replacen(
            "builtin = \"memcpy\"\n",
            &format!("builtin = \"memcpy\"\n{field}\n"),
            1,
        );
        std::fs::write(&lab, &text).expect("write");
        let at = text.lines().position(|l| l == field).expect("the line") + 1;
        let output = kernelbook_within(book.path(), &["list"], 60);
        let err = stderr(&output);
        assert!(!output.status.success(), "{field}: accepted");
        assert!(err.contains(&format!("copy.toml:{at}")), "{field}: {err}");
        assert!(err.contains("takes no"), "{field}: {err}");
    }
}

/// Output paths that cannot be written say which path and what to do, before any measuring.
#[test]
fn impossible_output_paths_name_the_path_and_what_to_do() {
    let book = gpus_book();
    let root = book.path();
    let file = root.join("notes.txt");
    std::fs::write(&file, "mine").expect("write");
    let file_arg = file.to_str().expect("utf-8");
    let under_file = file.join("x.json");
    let cases: [(Vec<&str>, &str); 4] = [
        (
            vec!["merge", "--into", file_arg, "labs/recorded"],
            "not a folder",
        ),
        (vec!["record", "copy", "--out", file_arg], "not a folder"),
        (
            vec!["run", "copy", "--json", under_file.to_str().expect("utf-8")],
            "is a file, not a folder",
        ),
        (
            vec!["run", "copy", "--json", "/proc/kernelbook/x.json"],
            "cannot make its folder",
        ),
    ];
    for (args, says) in cases {
        let output = kernelbook_in(root, &args);
        let err = stderr(&output);
        assert!(!output.status.success(), "{args:?}: accepted");
        let named = args.last().expect("a path");
        let named = if args[0] == "merge" { args[2] } else { named };
        assert!(err.contains(named) && err.contains(says), "{args:?}: {err}");
        assert!(
            !err.contains("os error 20)\n") || err.contains(says),
            "{err}"
        );
    }
    assert_eq!(std::fs::read_to_string(&file).expect("kept"), "mine");
}

/// `merge` copies recordings only from inside its sources: a link out of one is refused.
#[cfg(unix)]
#[test]
fn merge_refuses_a_source_holding_a_link_out_of_it() {
    let book = gpus_book();
    let root = book.path();
    let outside = tempfile::tempdir().expect("tempdir");
    std::fs::write(outside.path().join("copy.json"), "{}").expect("write");
    let source = root.join("results");
    std::fs::create_dir_all(source.join("gpu-a")).expect("mkdir");
    std::os::unix::fs::symlink(
        outside.path().join("copy.json"),
        source.join("gpu-a/copy.json"),
    )
    .expect("symlink");
    let output = kernelbook_in(root, &["merge", "--into", "merged", "results"]);
    let err = stderr(&output);
    assert!(!output.status.success(), "accepted");
    assert!(err.contains("symbolic link out of results"), "{err}");
    assert!(!root.join("merged").exists(), "nothing merged");
}

/// An empty SUMMARY.md is blamed on SUMMARY.md, not on a lab whose kernels it does not list.
#[test]
fn an_empty_summary_is_blamed_on_summary_md() {
    let book = gpus_book();
    std::fs::write(book.path().join("src/SUMMARY.md"), "").expect("write");
    let output = kernelbook_within(book.path(), &["list"], 60);
    let err = stderr(&output);
    assert!(!output.status.success());
    assert!(err.contains("SUMMARY.md: it lists no chapter"), "{err}");
    assert!(!err.contains("copy.toml"), "{err}");
}

// ---- D. messages ---------------------------------------------------------------------------

/// `kernelbook ARGS…` in `cwd` on this machine's own devices (no fake one).
fn kernelbook_here(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kernelbook"))
        .current_dir(cwd)
        .args(args)
        .env_remove("KERNELBOOK_DEVICE")
        .output()
        .expect("kernelbook runs")
}

fn no_gpu_here() -> bool {
    let none = !kernelbook_runner::backend::cuda::driver_present();
    if !none {
        eprintln!("skipped: this machine has a CUDA driver");
    }
    none
}

/// Without a GPU, `run` and `record` say what to do; `profile` says it once for every lab;
/// `info` still reports NVRTC where it is.
#[test]
fn without_a_gpu_each_command_says_what_to_do_once() {
    if !no_gpu_here() {
        return;
    }
    let book = tempfile::tempdir().expect("tempdir");
    std::fs::copy(
        support::repo().join("book.toml"),
        book.path().join("book.toml"),
    )
    .expect("toml");
    support::copy_dir(&support::repo().join("book"), &book.path().join("book"));
    support::copy_dir(&support::repo().join("labs"), &book.path().join("labs"));
    for args in [&["run", "transpose"][..], &["record", "transpose"][..]] {
        let output = kernelbook_here(book.path(), args);
        let err = stderr(&output);
        assert!(!output.status.success(), "{args:?}");
        assert!(
            err.contains("`kernelbook build` shows the recorded results")
                && err.contains("install the NVIDIA driver"),
            "{args:?}: {err}"
        );
    }
    let output = kernelbook_here(book.path(), &["profile"]);
    let said = text(&output.stdout);
    assert!(!output.status.success());
    assert_eq!(
        said.lines()
            .filter(|l| l.starts_with("not profiled"))
            .count(),
        1,
        "once for every lab: {said}"
    );
    let output = kernelbook_here(book.path(), &["info"]);
    let said = text(&output.stdout);
    assert!(said.contains("compiler: "), "{said}");
    if kernelbook_runner::backend::cuda::nvrtc_present() {
        assert!(
            said.contains("compiler: NVRTC 1") && said.contains("libnvrtc"),
            "{said}"
        );
    } else {
        assert!(
            said.contains("NVRTC not found") && said.contains("pip install"),
            "{said}"
        );
    }
}

/// Outside a book's folder, the commands that need one say there is no book.toml and how to
/// name the book.
#[test]
fn outside_a_book_folder_commands_say_there_is_no_book_toml() {
    let empty = tempfile::tempdir().expect("tempdir");
    for args in [
        &["list"][..],
        &["build"][..],
        &["run", "transpose"][..],
        &["merge", "--into", "merged", "labs/recorded"][..],
    ] {
        let output = kernelbook_here(empty.path(), args);
        let err = stderr(&output);
        assert!(!output.status.success(), "{args:?}");
        assert!(
            err.contains("there is no book.toml in") && err.contains("--root"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("SUMMARY.md"), "{args:?}: {err}");
    }
}

/// A kernel that does not compile: a plain build still succeeds, and says so on the terminal
/// at the chapter's line; `--strict` fails.
#[test]
fn a_kernel_that_does_not_compile_is_named_on_the_terminal() {
    let book = gpus_book();
    let chapter = book.path().join("src/copy.md");
    let text_before = std::fs::read_to_string(&chapter).expect("chapter");
    let broken = text_before.replacen(
        "    int i = blockIdx.x",
        "#error broken on purpose\n    int i = blockIdx.x",
        1,
    );
    std::fs::write(&chapter, &broken).expect("write");
    let line = broken
        .lines()
        .position(|l| l.contains("#error"))
        .expect("line")
        + 1;
    let output = kernelbook_within(book.path(), &["build", "--no-counters"], 120);
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(err.contains("did not compile"), "{err}");
    assert!(err.contains(&format!("src/copy.md:{line}")), "{err}");
    let output = kernelbook_within(book.path(), &["build", "--strict"], 120);
    assert!(!output.status.success(), "--strict fails");
}

/// `compile NAME` gives the compiler's errors at the chapter's line, as `build` does.
#[test]
fn compile_reports_errors_at_the_chapters_line() {
    if !kernelbook_runner::backend::cuda::nvrtc_present() {
        eprintln!("skipped: NVRTC is not installed here");
        return;
    }
    let book = gpus_book();
    let chapter = book.path().join("src/copy.md");
    let before = std::fs::read_to_string(&chapter).expect("chapter");
    let broken = before.replacen("if (i < n) dst[i] = src[i];", "undefined_name = 1;", 1);
    std::fs::write(&chapter, &broken).expect("write");
    let line = broken
        .lines()
        .position(|l| l.contains("undefined_name"))
        .expect("line")
        + 1;
    let output = kernelbook_here(book.path(), &["compile", "copy_scalar"]);
    let err = stderr(&output);
    assert!(!output.status.success());
    assert!(
        err.contains(&format!(
            "src/copy.md:{line}: error: identifier \"undefined_name\""
        )),
        "{err}"
    );
    assert!(!err.contains("copy_scalar.cu("), "{err}");
}

/// The notes under the tables and beside the diagrams show names as code, not in backticks.
#[test]
fn notes_show_no_literal_backticks() {
    let book = tempfile::tempdir().expect("tempdir");
    std::fs::copy(
        support::repo().join("book.toml"),
        book.path().join("book.toml"),
    )
    .expect("toml");
    support::copy_dir(&support::repo().join("book"), &book.path().join("book"));
    support::copy_dir(&support::repo().join("labs"), &book.path().join("labs"));
    let output = kernelbook_within(book.path(), &["build", "--recorded", "--no-counters"], 600);
    assert!(output.status.success(), "{}", stderr(&output));
    let mut pages = vec![book.path().join("target/book")];
    let mut seen = 0;
    while let Some(dir) = pages.pop() {
        for entry in std::fs::read_dir(&dir).expect("dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                pages.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "html") || path.ends_with("print.html") {
                continue;
            }
            let html = std::fs::read_to_string(&path).expect("page");
            let classes = [
                ("<p class=\"kernelbook-note", "</p>"),
                ("<caption>", "</caption>"),
                ("kernelbook-diagram-verdict", "</p>"),
            ];
            for (class, close) in classes {
                for piece in html.split(class).skip(1) {
                    seen += 1;
                    let end = piece.find(close).unwrap_or(piece.len());
                    let shown = &piece[..end];
                    assert!(
                        !shown.contains('`') && !shown.contains("&#x60;"),
                        "{}: {}",
                        path.display(),
                        &shown[..shown.len().min(200)]
                    );
                }
            }
        }
    }
    assert!(seen > 20, "the notes were found ({seen})");
}
