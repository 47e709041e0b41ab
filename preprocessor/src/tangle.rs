//! "Tangling": writing each kernel of the book to `kernels/NAME.cu`, so a learner can open it in
//! an editor or build it with nvcc. The book stays the source of truth; a test fails when
//! `kernels/` is out of date.
//!
//! Tangle replaces or removes only files that are exactly one of its own outputs: a regular file
//! (never a symbolic link) whose first line is the marker with a hash of the file's contents
//! ([`is_tangle_output`]). A file edited since it was tangled, a hand-written one and anything
//! that is not a regular file are left alone and reported ([`TangleDiff::left_alone`]). Files are
//! written through a temporary file in the same folder and renamed into place, so a crash never
//! leaves half a file. A file byte-equal to what an earlier tangle (before the marker carried a
//! hash) wrote for a kernel of the book counts as an output too.

use crate::scan::BookIndex;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::path::Path;

/// The start of the first line of every tangled file; files without it (shared headers) are
/// left alone.
pub const MARKER: &str = "// Tangled by `kernelbook tangle` from";
/// The same for a Python kernel block (`NAME.py`).
pub const PYTHON_MARKER: &str = "# Tangled by `kernelbook tangle` from";
/// Between the origin and the hash on the marker line.
const HASH_OPEN: &str = " (sha256 ";
/// The end of the marker line.
const TAIL: &str = "). Edit the book, not this file.";
/// Hex digits of the SHA-256 kept on the marker line (64 bits: enough to tell an edit).
const HASH_HEX: usize = 16;
/// No tangled file is larger; a larger one is not read.
const MAX_TANGLED_BYTES: u64 = 1 << 20;

/// The hash on a marker line: of the line's start (marker and origin) and of everything after the
/// line.
fn content_hash(head: &str, body: &[u8]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(head.as_bytes());
    hasher.update(b"\n");
    hasher.update(body);
    hasher
        .finalize()
        .iter()
        .take(HASH_HEX / 2)
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// A tangled file: the marker line (`marker`, where the kernel comes from, the hash) then the
/// kernel's source.
pub fn tangled_contents(marker: &str, origin: &str, source: &str) -> String {
    let head = format!("{marker} {origin}");
    let hash = content_hash(&head, source.as_bytes());
    format!("{head}{HASH_OPEN}{hash}{TAIL}\n{source}")
}

/// Whether `bytes` is exactly a file tangle wrote: a marker line whose hash matches the rest.
/// Any edit (of the source, the marker line, line endings) makes it `false`.
pub fn is_tangle_output(bytes: &[u8]) -> bool {
    let Some(newline) = bytes.iter().position(|&b| b == b'\n') else {
        return false;
    };
    let (Ok(line), Some(body)) = (
        std::str::from_utf8(&bytes[..newline]),
        bytes.get(newline + 1..),
    ) else {
        return false;
    };
    if !(line.starts_with(MARKER) || line.starts_with(PYTHON_MARKER)) {
        return false;
    }
    let Some((head, hash)) = line
        .strip_suffix(TAIL)
        .and_then(|rest| rest.rsplit_once(HASH_OPEN))
    else {
        return false;
    };
    hash.len() == HASH_HEX && content_hash(head, body) == hash
}

/// What tangle wrote before its marker line carried a hash, for the same kernel at the same
/// place: such a file is an output too, so an older `kernels/` is brought up to date.
fn earlier_form(contents: &str) -> Option<String> {
    let (line, body) = contents.split_once('\n')?;
    let (head, _) = line.strip_suffix(TAIL)?.rsplit_once(HASH_OPEN)?;
    Some(format!("{head}. Edit the book, not this file.\n{body}"))
}

/// The earlier forms of every expected file.
fn earlier_forms(expected: &BTreeMap<String, String>) -> BTreeSet<Vec<u8>> {
    expected
        .values()
        .filter_map(|contents| earlier_form(contents))
        .map(String::into_bytes)
        .collect()
}

/// Whether `bytes` starts with a tangle marker (it may have been edited since).
fn has_marker(bytes: &[u8]) -> bool {
    bytes.starts_with(MARKER.as_bytes()) || bytes.starts_with(PYTHON_MARKER.as_bytes())
}

/// The files `kernels/` should hold: file name → contents.
pub fn tangled_files(index: &BookIndex) -> BTreeMap<String, String> {
    index
        .kernels
        .values()
        .map(|kernel| {
            let marker = match kernel.language {
                kernelbook_core::Language::Cuda => MARKER,
                kernelbook_core::Language::Python | kernelbook_core::Language::PythonReference => {
                    PYTHON_MARKER
                }
            };
            let origin = format!("{}:{}", kernel.origin.file.display(), kernel.origin.line);
            let contents = tangled_contents(marker, &origin, &kernel.source);
            let file = format!("{}.{}", kernel.name, kernel.language.extension());
            (file, contents)
        })
        .collect()
}

/// How `kernels/` differs from what the book says it should hold.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct TangleDiff {
    pub missing: Vec<String>,
    /// Tangle outputs that the book now says differently.
    pub outdated: Vec<String>,
    /// Tangle outputs whose kernel is no longer in the book.
    pub orphaned: Vec<String>,
    /// Files a kernel should be written to that are not tangle outputs (edited, hand-written,
    /// a symbolic link, not a regular file), with why: left alone, the kernel not written.
    pub blocked: Vec<(String, String)>,
    /// Other files carrying the marker that are not exactly a tangle output (a learner's edited
    /// copy), with why: left alone.
    pub kept: Vec<(String, String)>,
}

impl TangleDiff {
    /// Whether `kernels/` holds every kernel as the book says and nothing stale of tangle's.
    pub fn is_clean(&self) -> bool {
        self.missing.is_empty()
            && self.outdated.is_empty()
            && self.orphaned.is_empty()
            && self.blocked.is_empty()
    }

    /// Every file left alone, with why, in name order.
    pub fn left_alone(&self) -> Vec<&(String, String)> {
        let mut all: Vec<_> = self.blocked.iter().chain(&self.kept).collect();
        all.sort();
        all
    }
}

/// What stands at a path in `kernels/`.
#[derive(Debug, PartialEq, Eq)]
enum Found {
    Absent,
    /// A regular file that is exactly a tangle output, with its bytes.
    Output(Vec<u8>),
    /// Anything else, with why tangle may not touch it; `marked` when it starts with the marker.
    Other {
        why: String,
        marked: bool,
    },
}

fn other(why: impl Into<String>, marked: bool) -> Found {
    Found::Other {
        why: why.into(),
        marked,
    }
}

/// Opens a regular file for reading without following a symbolic link and without blocking on
/// a FIFO.
fn open_no_follow(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    options.open(path)
}

/// Looks at `path` without following a symbolic link; `earlier` are more files that count as
/// outputs (see [`earlier_form`]).
fn inspect(path: &Path, earlier: &BTreeSet<Vec<u8>>) -> std::io::Result<Found> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Found::Absent),
        Err(err) => return Err(err),
    };
    if meta.file_type().is_symlink() {
        return Ok(other(
            "it is a symbolic link (tangle never writes through one)",
            false,
        ));
    }
    if !meta.is_file() {
        return Ok(other("it is not a regular file", false));
    }
    if meta.len() > MAX_TANGLED_BYTES {
        return Ok(other("it is larger than any file tangle writes", false));
    }
    let read = || -> std::io::Result<Option<Vec<u8>>> {
        let file = open_no_follow(path)?;
        if !file.metadata()?.is_file() {
            return Ok(None);
        }
        let mut bytes = Vec::new();
        file.take(MAX_TANGLED_BYTES + 1).read_to_end(&mut bytes)?;
        Ok(Some(bytes))
    };
    Ok(match read() {
        Err(err) => other(format!("it could not be read ({err})"), false),
        Ok(None) => other("it is not a regular file", false),
        Ok(Some(bytes)) if is_tangle_output(&bytes) || earlier.contains(&bytes) => {
            Found::Output(bytes)
        }
        Ok(Some(bytes)) if has_marker(&bytes) => other(
            "it carries the tangle marker but is not exactly what tangle wrote (edited since?)",
            true,
        ),
        Ok(Some(_)) => other("it was not written by tangle (no marker line)", false),
    })
}

/// The `.cu` and `.py` names in `dir` that are not expected, as UTF-8.
fn other_kernel_files(
    dir: &Path,
    expected: &BTreeMap<String, String>,
) -> std::io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let Ok(name) = entry?.file_name().into_string() else {
            continue;
        };
        if (name.ends_with(".cu") || name.ends_with(".py")) && !expected.contains_key(&name) {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// Compares `dir` with `expected`; reads `dir` only. An error where `dir` is a symbolic link or
/// not a folder.
pub fn diff(dir: &Path, expected: &BTreeMap<String, String>) -> std::io::Result<TangleDiff> {
    let mut diff = TangleDiff::default();
    if !dir_exists(dir)? {
        diff.missing = expected.keys().cloned().collect();
        return Ok(diff);
    }
    let earlier = earlier_forms(expected);
    for (name, contents) in expected {
        match inspect(&dir.join(name), &earlier)? {
            Found::Absent => diff.missing.push(name.clone()),
            Found::Output(bytes) if bytes == contents.as_bytes() => {}
            Found::Output(_) => diff.outdated.push(name.clone()),
            Found::Other { why, .. } => diff.blocked.push((name.clone(), why)),
        }
    }
    for name in other_kernel_files(dir, expected)? {
        match inspect(&dir.join(&name), &earlier)? {
            Found::Output(_) => diff.orphaned.push(name),
            Found::Other { why, marked: true } => diff.kept.push((name, why)),
            Found::Absent | Found::Other { .. } => {}
        }
    }
    Ok(diff)
}

/// Whether `dir` is a real directory (`false` where there is nothing); an error where something
/// else stands there, a symbolic link included.
fn dir_exists(dir: &Path) -> std::io::Result<bool> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(true),
        Ok(meta) => Err(std::io::Error::other(format!(
            "{} is {}; tangle writes only into a real folder",
            dir.display(),
            if meta.file_type().is_symlink() {
                "a symbolic link"
            } else {
                "not a folder"
            }
        ))),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(err) => Err(err),
    }
}

/// Writes `contents` to `dir/name` through a temporary file in `dir` renamed into place: over
/// the file only if it is still a tangle output (`replace`), else only where nothing stands.
fn write_file(
    dir: &Path,
    name: &str,
    contents: &str,
    replace: bool,
    earlier: &BTreeSet<Vec<u8>>,
) -> std::io::Result<Found> {
    let path = dir.join(name);
    let mut temp = tempfile::Builder::new()
        .prefix(".tangle-")
        .tempfile_in(dir)?;
    temp.write_all(contents.as_bytes())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        temp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    temp.as_file().sync_all()?;
    // Looked at again just before the rename, so the window for a change in between is small.
    match inspect(&path, earlier)? {
        Found::Output(_) if replace => {
            temp.persist(&path).map_err(|e| e.error)?;
            Ok(Found::Absent)
        }
        Found::Absent if !replace => match temp.persist_noclobber(&path) {
            Ok(_) => Ok(Found::Absent),
            Err(err) if err.error.kind() == std::io::ErrorKind::AlreadyExists => {
                Ok(other("it appeared while tangle was writing", false))
            }
            Err(err) => Err(err.error),
        },
        Found::Absent => Ok(other("it was removed while tangle was writing", false)),
        found => Ok(found),
    }
}

/// Brings `dir` in line with `expected`: writes what is missing or outdated, removes orphans,
/// leaves everything else alone. Returns what it did (`blocked` and `kept`: left alone).
pub fn write(dir: &Path, expected: &BTreeMap<String, String>) -> std::io::Result<TangleDiff> {
    if !dir_exists(dir)? {
        std::fs::create_dir_all(dir)?;
    }
    let mut found = diff(dir, expected)?;
    let earlier = earlier_forms(expected);
    let mut done = TangleDiff {
        blocked: std::mem::take(&mut found.blocked),
        kept: std::mem::take(&mut found.kept),
        ..TangleDiff::default()
    };
    let plan = [(found.missing, false), (found.outdated, true)];
    for (names, replace) in plan {
        for name in names {
            let Some(contents) = expected.get(&name) else {
                continue;
            };
            match write_file(dir, &name, contents, replace, &earlier)? {
                Found::Other { why, .. } => done.blocked.push((name, why)),
                _ if replace => done.outdated.push(name),
                _ => done.missing.push(name),
            }
        }
    }
    for name in found.orphaned {
        let path = dir.join(&name);
        match inspect(&path, &earlier)? {
            Found::Output(_) => {
                std::fs::remove_file(&path)?;
                done.orphaned.push(name);
            }
            Found::Absent => {}
            Found::Other { why, .. } => done.kept.push((name, why)),
        }
    }
    done.blocked.sort();
    done.kept.sort();
    Ok(done)
}

#[cfg(test)]
mod tests;
