//! Property test: tangle against a directory of arbitrary files touches nothing but its own
//! outputs. Random names (some a kernel's), contents (random bytes, the marker, exact tangle
//! outputs, outputs edited by one byte), symbolic links (to files outside, to each other,
//! dangling) and folders; after `tangle::write` every file that was not exactly a tangle output
//! is byte-identical, every link is the same link and every link's target untouched.
#![cfg(unix)]

use mdbook_kernelbook::scan::BookIndex;
use mdbook_kernelbook::tangle::{self, MARKER, PYTHON_MARKER, is_tangle_output};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// Inputs per property: 300 in an ordinary test run; set KERNELBOOK_FUZZ_CASES for a longer one.
fn cases() -> u32 {
    std::env::var("KERNELBOOK_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}

fn expected() -> BTreeMap<String, String> {
    let index = BookIndex::build([(
        Path::new("book/src/a.md"),
        "```cuda kernel=copy\nbody\n```\n\n```python kernel=scale\nx = 2\n```\n",
    )])
    .expect("index");
    tangle::tangled_files(&index)
}

#[derive(Debug, Clone)]
enum Entry {
    Bytes(Vec<u8>),
    Marked(Vec<u8>),
    Output(String),
    Edited(String, usize, u8),
    Expected(bool),
    LinkOutside(usize),
    LinkInside(String),
    Dangling,
    Folder,
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("copy.cu".to_string()),
        Just("scale.py".to_string()),
        Just("copy.py".to_string()),
        "[a-z]{1,4}\\.(cu|py|cuh|txt)",
    ]
}

fn entry() -> impl Strategy<Value = Entry> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..64).prop_map(Entry::Bytes),
        proptest::collection::vec(any::<u8>(), 0..64).prop_map(Entry::Marked),
        "[ -~\n]{0,40}".prop_map(Entry::Output),
        ("[ -~\n]{0,40}", any::<usize>(), any::<u8>())
            .prop_map(|(s, at, byte)| Entry::Edited(s, at, byte)),
        any::<bool>().prop_map(Entry::Expected),
        (0usize..3).prop_map(Entry::LinkOutside),
        name().prop_map(Entry::LinkInside),
        Just(Entry::Dangling),
        Just(Entry::Folder),
    ]
}

/// What stood at a path before tangle ran.
#[derive(Debug, PartialEq, Eq)]
enum Snapshot {
    File(Vec<u8>),
    Link(PathBuf),
    Folder,
    Absent,
}

fn snapshot(path: &Path) -> Snapshot {
    match std::fs::symlink_metadata(path) {
        Err(_) => Snapshot::Absent,
        Ok(meta) if meta.file_type().is_symlink() => {
            Snapshot::Link(std::fs::read_link(path).expect("read_link"))
        }
        Ok(meta) if meta.is_dir() => Snapshot::Folder,
        Ok(_) => Snapshot::File(std::fs::read(path).expect("read")),
    }
}

fn output(source: &str) -> String {
    tangle::tangled_contents(MARKER, "old.md:7", source)
}

/// Creates `entry` at `path`; `outside` are the link targets outside the folder.
fn create(path: &Path, entry: &Entry, outside: &[PathBuf], expected: &BTreeMap<String, String>) {
    let bytes = match entry {
        Entry::Bytes(bytes) => bytes.clone(),
        Entry::Marked(rest) => [PYTHON_MARKER.as_bytes(), rest].concat(),
        Entry::Output(source) => output(source).into_bytes(),
        Entry::Edited(source, at, byte) => {
            let mut bytes = output(source).into_bytes();
            let at = at % bytes.len();
            bytes[at] = bytes[at].wrapping_add((*byte).max(1));
            bytes
        }
        Entry::Expected(cuda) => expected[if *cuda { "copy.cu" } else { "scale.py" }]
            .clone()
            .into_bytes(),
        Entry::LinkOutside(i) => return symlink(&outside[*i], path).expect("link"),
        Entry::LinkInside(name) => return symlink(name, path).expect("link"),
        Entry::Dangling => return symlink("/nonexistent/x.cu", path).expect("link"),
        Entry::Folder => return std::fs::create_dir(path).expect("mkdir"),
    };
    std::fs::write(path, bytes).expect("write");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn tangle_touches_nothing_but_its_own_outputs(
        entries in proptest::collection::btree_map(name(), entry(), 0..10),
    ) {
        let expected = expected();
        let root = tempfile::tempdir().expect("tempdir");
        let outside: Vec<PathBuf> = (0..3).map(|i| root.path().join(format!("outside{i}.cu"))).collect();
        std::fs::write(&outside[0], output("precious\n")).expect("outside");
        std::fs::write(&outside[1], &expected["copy.cu"]).expect("outside");
        std::fs::write(&outside[2], "hand-written\n").expect("outside");
        let dir = root.path().join("kernels");
        std::fs::create_dir(&dir).expect("mkdir");
        for (name, entry) in &entries {
            create(&dir.join(name), entry, &outside, &expected);
        }
        let before: BTreeMap<_, _> = entries.keys().map(|n| (n.clone(), snapshot(&dir.join(n)))).collect();
        let outside_before: Vec<_> = outside.iter().map(|p| snapshot(p)).collect();

        let done = tangle::write(&dir, &expected).expect("write");

        for (name, was) in &before {
            let now = snapshot(&dir.join(name));
            match was {
                Snapshot::File(bytes) if is_tangle_output(bytes) => {
                    // An output is brought up to date, removed where its kernel is gone, and
                    // left as it was where it is not a kernel file (`.cuh`, `.txt`).
                    let allowed = match expected.get(name) {
                        Some(contents) => now == Snapshot::File(contents.clone().into_bytes()),
                        None if name.ends_with(".cu") || name.ends_with(".py") => now == Snapshot::Absent,
                        None => now == *was,
                    };
                    prop_assert!(allowed, "{name}: {was:?} became {now:?}");
                }
                _ => prop_assert_eq!(&now, was, "{} was touched", name),
            }
        }
        prop_assert_eq!(outside.iter().map(|p| snapshot(p)).collect::<Vec<_>>(), outside_before);
        for name in expected.keys() {
            if !before.contains_key(name) {
                prop_assert_eq!(snapshot(&dir.join(name)), Snapshot::File(expected[name].clone().into_bytes()));
            }
        }
        let blocked: Vec<_> = done.blocked.iter().map(|(n, _)| n.clone()).collect();
        let after = tangle::diff(&dir, &expected).expect("diff");
        prop_assert!(after.missing.is_empty() && after.outdated.is_empty() && after.orphaned.is_empty());
        prop_assert_eq!(after.blocked.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(), blocked);
        let names: Vec<_> = std::fs::read_dir(&dir).expect("read_dir")
            .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
            .collect();
        prop_assert!(names.iter().all(|n| !n.starts_with(".tangle-")), "{:?}", names);
    }
}
