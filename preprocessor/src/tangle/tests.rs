use super::*;

fn index() -> BookIndex {
    BookIndex::build([(
        Path::new("book/src/a.md"),
        "```cuda kernel=copy\nbody\n```\n",
    )])
    .expect("index")
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).expect("read")
}

#[test]
fn writes_then_reports_clean_then_updates_and_removes_only_its_own_outputs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let expected = tangled_files(&index());
    let copy = &expected["copy.cu"];
    assert!(copy.starts_with(&format!("{MARKER} book/src/a.md:2 (sha256 ")));
    assert!(copy.ends_with("). Edit the book, not this file.\nbody\n"));
    assert!(is_tangle_output(copy.as_bytes()));
    assert_eq!(
        diff(dir.path(), &expected).expect("diff").missing,
        vec!["copy.cu"]
    );
    write(dir.path(), &expected).expect("write");
    assert!(diff(dir.path(), &expected).expect("diff").is_clean());
    assert_eq!(read(&dir.path().join("copy.cu")), copy.as_bytes());

    // An earlier output of the book (another body) is replaced; one whose kernel is gone removed.
    let stale = tangled_contents(MARKER, "book/src/a.md:2", "old body\n");
    std::fs::write(dir.path().join("copy.cu"), &stale).expect("stale");
    let orphan = tangled_contents(MARKER, "x.md:1", "gone\n");
    std::fs::write(dir.path().join("old.cu"), orphan).expect("orphan");
    std::fs::write(dir.path().join("common.cuh"), "// shared header").expect("header");
    let found = diff(dir.path(), &expected).expect("diff");
    assert_eq!(found.outdated, vec!["copy.cu"]);
    assert_eq!(found.orphaned, vec!["old.cu"]);
    let done = write(dir.path(), &expected).expect("write");
    assert_eq!(
        (done.outdated, done.orphaned),
        (found.outdated, found.orphaned)
    );
    assert!(diff(dir.path(), &expected).expect("diff").is_clean());
    assert!(!dir.path().join("old.cu").exists());

    // What tangle wrote before the marker carried a hash is an output too.
    let earlier = format!("{MARKER} book/src/a.md:2. Edit the book, not this file.\nbody\n");
    std::fs::write(dir.path().join("copy.cu"), &earlier).expect("earlier");
    assert_eq!(
        write(dir.path(), &expected).expect("write").outdated,
        ["copy.cu"]
    );
    assert_eq!(read(&dir.path().join("copy.cu")), copy.as_bytes());
    assert!(
        dir.path().join("common.cuh").exists(),
        "hand-written files are kept"
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .expect("read_dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| name.starts_with(".tangle-"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "no temporary file is left: {leftovers:?}"
    );
}

#[test]
fn tangle_leaves_an_edited_tangled_file_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let expected = tangled_files(&index());
    write(dir.path(), &expected).expect("write");
    // A learner's copy of a tangled file, edited: it keeps the marker line.
    let mine = expected["copy.cu"].replace("body", "my body");
    std::fs::write(dir.path().join("mine.cu"), &mine).expect("mine");
    // The tangled file itself, edited in place.
    let edited = format!("{}// a note\n", expected["copy.cu"]);
    std::fs::write(dir.path().join("copy.cu"), &edited).expect("edit");
    // Only the marker line edited (a Python one, CRLF line endings).
    let py = tangled_contents(PYTHON_MARKER, "b.md:3", "x = 1\n").replace('\n', "\r\n");
    std::fs::write(dir.path().join("gone.py"), &py).expect("py");

    let done = write(dir.path(), &expected).expect("write");
    assert_eq!(read(&dir.path().join("mine.cu")), mine.as_bytes());
    assert_eq!(read(&dir.path().join("copy.cu")), edited.as_bytes());
    assert_eq!(read(&dir.path().join("gone.py")), py.as_bytes());
    assert!(done.orphaned.is_empty() && done.outdated.is_empty());
    let names: Vec<_> = done.left_alone().iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["copy.cu", "gone.py", "mine.cu"]);
    assert!(
        done.left_alone()
            .iter()
            .all(|(_, why)| why.contains("edited"))
    );
    assert!(!diff(dir.path(), &expected).expect("diff").is_clean());
}

#[test]
fn tangle_does_not_overwrite_a_hand_written_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let expected = tangled_files(&index());
    let mine = "// my own copy kernel\nextern \"C\" __global__ void copy() {}\n";
    std::fs::write(dir.path().join("copy.cu"), mine).expect("mine");
    std::fs::write(dir.path().join("empty.cu"), "").expect("empty");
    let done = write(dir.path(), &expected).expect("write");
    assert_eq!(read(&dir.path().join("copy.cu")), mine.as_bytes());
    assert_eq!(read(&dir.path().join("empty.cu")), b"");
    assert_eq!(
        done.blocked,
        vec![(
            "copy.cu".to_string(),
            "it was not written by tangle (no marker line)".to_string()
        )]
    );
    assert!(done.missing.is_empty() && done.kept.is_empty());
}

#[cfg(unix)]
#[test]
fn tangle_does_not_write_through_a_symlink() {
    use std::os::unix::fs::symlink;
    let outside = tempfile::tempdir().expect("tempdir");
    let dir = tempfile::tempdir().expect("tempdir");
    let expected = tangled_files(&index());
    // The link's target holds a stale tangle output: following the link, tangle would update it.
    let target = outside.path().join("precious.cu");
    let stale = tangled_contents(MARKER, "book/src/a.md:2", "old\n");
    std::fs::write(&target, &stale).expect("target");
    symlink(&target, dir.path().join("copy.cu")).expect("link");
    // An orphaned output behind a link, and a dangling link.
    let orphan = outside.path().join("orphan.cu");
    std::fs::write(&orphan, tangled_contents(MARKER, "x.md:1", "gone\n")).expect("orphan");
    symlink(&orphan, dir.path().join("old.cu")).expect("link");
    symlink(outside.path().join("none"), dir.path().join("dangling.cu")).expect("link");

    let done = write(dir.path(), &expected).expect("write");
    assert_eq!(read(&target), stale.as_bytes());
    assert!(orphan.exists());
    for name in ["copy.cu", "old.cu", "dangling.cu"] {
        let meta = std::fs::symlink_metadata(dir.path().join(name)).expect("link is kept");
        assert!(meta.file_type().is_symlink(), "{name} is still a link");
    }
    assert_eq!(done.blocked.len(), 1);
    assert!(done.blocked[0].1.contains("symbolic link"));
    assert!(done.orphaned.is_empty() && done.missing.is_empty());

    // kernels/ itself a link: nothing is written into the folder it points at.
    let linked = outside.path().join("kernels");
    symlink(outside.path(), &linked).expect("link");
    let err = write(&linked, &expected).expect_err("a linked folder is refused");
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert!(!outside.path().join("copy.cu").exists());
}

#[test]
fn a_marker_line_alone_or_a_wrong_hash_is_not_an_output() {
    for text in [
        "",
        "\n",
        MARKER,
        &format!("{MARKER}\n"),
        &format!("{MARKER} a.md:1 (sha256 0000000000000000). Edit the book, not this file.\nx\n"),
        &format!("{MARKER} a.md:1 (sha256 ). Edit the book, not this file.\n"),
        &format!("{MARKER} a.md:1. Edit the book, not this file.\nbody\n"),
    ] {
        assert!(!is_tangle_output(text.as_bytes()), "{text:?}");
    }
    let good = tangled_contents(MARKER, "a.md:1", "");
    assert!(is_tangle_output(good.as_bytes()));
    assert!(!is_tangle_output(&good.as_bytes()[..good.len() - 1]));
}
