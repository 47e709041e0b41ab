//! Reading a text source a user wrote (a lab file, a chapter, an included file, an exercise)
//! without hanging or running out of memory: only a regular file is opened (a FIFO would wait
//! for a writer forever, `/dev/zero` never ends), it is opened without blocking, and no more
//! than a cap is read. Every error names the file.

use std::io::Read;
use std::path::{Path, PathBuf};

/// The most a chapter, an included file or a lab file may hold: far above any real one.
pub const MOST_BYTES: u64 = 16 << 20;

/// Why a text source could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{}: {reason}", path.display())]
pub struct ReadError {
    pub path: PathBuf,
    pub reason: String,
}

/// The text of the regular file at `path` (symbolic links followed), at most `limit` bytes.
pub fn read_text(path: &Path, limit: u64) -> Result<String, ReadError> {
    let error = |reason: String| ReadError {
        path: path.to_path_buf(),
        reason,
    };
    let metadata = std::fs::metadata(path).map_err(|err| error(err.to_string()))?;
    regular(&metadata).map_err(error)?;
    let file = open_without_blocking(path).map_err(|err| error(err.to_string()))?;
    // Checked again on what was opened: the path may have been replaced in between.
    let metadata = file.metadata().map_err(|err| error(err.to_string()))?;
    regular(&metadata).map_err(error)?;
    if metadata.len() > limit {
        return Err(error(too_big(metadata.len(), limit)));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| error(err.to_string()))?;
    if bytes.len() as u64 > limit {
        return Err(error(too_big(bytes.len() as u64, limit)));
    }
    String::from_utf8(bytes).map_err(|_| error("it is not UTF-8 text".into()))
}

/// Whether `path` is (or links to) a regular file: an error saying what it is otherwise.
pub fn check_regular(path: &Path) -> Result<(), ReadError> {
    let metadata = std::fs::metadata(path).map_err(|err| ReadError {
        path: path.to_path_buf(),
        reason: err.to_string(),
    })?;
    regular(&metadata).map_err(|reason| ReadError {
        path: path.to_path_buf(),
        reason,
    })
}

fn too_big(len: u64, limit: u64) -> String {
    format!("it holds more than {limit} bytes ({len} or more), more than a text source may")
}

/// `Err` saying what the file is, unless it is a regular file.
fn regular(metadata: &std::fs::Metadata) -> Result<(), String> {
    let kind = metadata.file_type();
    if kind.is_file() {
        return Ok(());
    }
    let what = if kind.is_dir() {
        "a folder"
    } else {
        special_kind(&kind)
    };
    Err(format!(
        "it is {what}, not a regular file: name a text file"
    ))
}

/// What a file that is neither a regular file nor a folder is: "a FIFO", "a socket", "a
/// device", or "a special file".
#[cfg(unix)]
pub fn special_kind(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "a special file"
    }
}

#[cfg(not(unix))]
pub fn special_kind(_: &std::fs::FileType) -> &'static str {
    "a special file"
}

/// Opens `path` with `O_NONBLOCK`, so that a FIFO put there after the check cannot make the
/// open wait for a writer.
#[cfg(unix)]
pub fn open_without_blocking(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
pub fn open_without_blocking(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::File::open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_file_is_read_and_one_too_big_is_refused() {
        let dir = std::env::temp_dir().join(format!("kb-textfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let path = dir.join("a.md");
        std::fs::write(&path, "hello").expect("write");
        assert_eq!(read_text(&path, 5).expect("read"), "hello");
        let err = read_text(&path, 4).expect_err("too big");
        assert!(err.to_string().contains("a.md"), "{err}");
        let err = read_text(&dir, 4).expect_err("a folder");
        assert!(err.to_string().contains("a folder"), "{err}");
        std::fs::remove_dir_all(&dir).expect("clean");
    }

    #[cfg(unix)]
    #[test]
    fn dev_zero_and_a_fifo_are_refused_at_once() {
        let err = read_text(Path::new("/dev/zero"), MOST_BYTES).expect_err("a device");
        assert!(err.to_string().contains("a device"), "{err}");
        let dir = std::env::temp_dir().join(format!("kb-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let fifo = dir.join("chapter.md");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let err = read_text(&fifo, MOST_BYTES).expect_err("a FIFO");
            assert!(err.to_string().contains("a FIFO"), "{err}");
        }
        std::fs::remove_dir_all(&dir).expect("clean");
    }
}
