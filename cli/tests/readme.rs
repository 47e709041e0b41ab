//! The README's examples, run as written. Every command of its ```sh blocks that needs no GPU is
//! run in a copy of the project (`cargo run --release --` is this test build's `kernelbook`), and
//! must succeed; those that need a GPU, a cluster, the network or a server that runs until
//! stopped are skipped by [`SKIPPED`], each with its reason, and an example that fails for a
//! known reason that a GPU must fix is in [`FAILING_FOR_NOW`]. A command of the README in
//! neither list is run: a new example is tested from the day it is written.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Commands (as written after `cargo run --release --`, or whole) not run here, and why.
const SKIPPED: &[(&str, &str)] = &[
    (
        "./scripts/test",
        "runs the whole test suite, this test among them",
    ),
    ("run transpose", "measures on a GPU"),
    (
        "run transpose --set n=4096 --json transpose.json",
        "measures on a GPU",
    ),
    ("record", "measures on a GPU"),
    ("record --folder nvidia-h200-882b8b4e", "measures on a GPU"),
    (
        "record --devices all",
        "measures on every GPU of the machine",
    ),
    ("--device hip run transpose", "measures on an AMD GPU"),
    (
        "serve",
        "serves until stopped; cli/tests/serve.rs and tests/browser/check-serve.mjs test it",
    ),
    (
        "cargo install mdbook --version 0.5.4",
        "downloads and compiles from crates.io",
    ),
    (
        "cargo install mdbook-katex --version 0.10.0",
        "downloads and compiles from crates.io",
    ),
    (
        "cargo install mdbook-mermaid --version 0.17.1",
        "downloads and compiles from crates.io",
    ),
    (
        "mdbook build",
        "needs the stock mdbook the lines above install",
    ),
];

/// Examples that fail as written for a reason only a GPU can remove; the test checks that they
/// still fail that way, and fails once they pass, so that the entry is removed.
const FAILING_FOR_NOW: &[(&str, &str, &str)] = &[];

/// Commands that need NVRTC (no GPU): skipped with a message where it cannot be loaded.
const NEEDS_NVRTC: &[&str] = &["compile transpose_padded"];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// The commands of the README's ```sh blocks, without their comments.
fn readme_commands(readme: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut in_sh = false;
    for line in readme.lines() {
        let trimmed = line.trim();
        if let Some(info) = trimmed.strip_prefix("```") {
            in_sh = !in_sh && info.trim() == "sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        let command = trimmed.split(" #").next().unwrap_or("").trim();
        if !command.is_empty() && !command.starts_with('#') {
            commands.push(command.to_string());
        }
    }
    commands
}

/// `kernelbook`'s arguments in `command`, where it is `cargo run --release -- ARGS`.
fn kernelbook_args(command: &str) -> Option<&str> {
    command
        .strip_prefix("cargo run --release --")
        .map(str::trim)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else if entry.file_type().expect("type").is_file() {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// A copy of what a clone holds that the commands read and write.
fn project_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for file in ["book.toml", "README.md"] {
        std::fs::copy(repo().join(file), dir.path().join(file)).expect("copy");
    }
    for folder in ["book", "labs", "kernels"] {
        copy_dir(&repo().join(folder), &dir.path().join(folder));
    }
    dir
}

/// Runs `kernelbook ARGS` (split on spaces: the README quotes nothing) in `cwd`, on this
/// machine's own devices, within ten minutes.
fn run_example(cwd: &Path, args: &str) -> (bool, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kernelbook"))
        .current_dir(cwd)
        .args(args.split_whitespace())
        .env_remove("KERNELBOOK_DEVICE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kernelbook starts");
    let deadline = Instant::now() + Duration::from_secs(600);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("`{args}` did not end within 10 minutes");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let output = child.wait_with_output().expect("output");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), said)
}

#[test]
fn every_readme_example_that_needs_no_gpu_works_as_written() {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let commands = readme_commands(&readme);
    assert!(commands.len() > 15, "the README's commands: {commands:?}");
    for (listed, _) in SKIPPED {
        let written = commands
            .iter()
            .any(|c| c == listed || kernelbook_args(c) == Some(listed));
        assert!(
            written,
            "SKIPPED names `{listed}`, which the README no longer has"
        );
    }
    let project = project_copy();
    let gpu = kernelbook_runner::backend::cuda::driver_present();
    let nvrtc = kernelbook_runner::backend::cuda::nvrtc_present();
    let mut ran = 0;
    for command in &commands {
        let args = kernelbook_args(command);
        let key = args.unwrap_or(command);
        if let Some((_, why)) = SKIPPED.iter().find(|(listed, _)| *listed == key) {
            eprintln!("skipped `{command}`: {why}");
            continue;
        }
        let Some(args) = args else {
            panic!("`{command}` is neither `cargo run --release -- …` nor in SKIPPED");
        };
        if NEEDS_NVRTC.contains(&args) && !nvrtc {
            eprintln!("skipped `{command}`: NVRTC is not installed here");
            continue;
        }
        eprintln!("running `{command}`");
        let (ok, said) = run_example(project.path(), args);
        match FAILING_FOR_NOW
            .iter()
            .find(|(listed, _, _)| *listed == args)
        {
            Some((_, says, why)) if !gpu => {
                assert!(
                    !ok,
                    "`{command}` works now: remove it from FAILING_FOR_NOW ({why})"
                );
                assert!(said.contains(says), "`{command}` fails otherwise: {said}");
                eprintln!("fails as expected for now: {why}");
            }
            _ => assert!(ok, "`{command}` fails as the README writes it:\n{said}"),
        }
        ran += 1;
    }
    assert!(ran >= 8, "only {ran} examples ran");
}

#[test]
fn the_readme_parser_finds_commands_and_drops_comments() {
    let readme = "text\n```sh\ncargo run --release -- list   # the labs\n\n# a note\n```\n\
                  ```toml\nnot = \"a command\"\n```\n";
    assert_eq!(readme_commands(readme), ["cargo run --release -- list"]);
    assert_eq!(kernelbook_args("cargo run --release -- list"), Some("list"));
}
