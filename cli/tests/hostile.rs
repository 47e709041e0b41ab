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
        ["record", "--folder", "../../x"],
        ["record", "--folder", "../../../x"],
        ["record", "--out", "../../x"],
    ] {
        let output = kernelbook_in(&root, &args);
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

