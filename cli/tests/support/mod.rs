//! What the tests of the several-GPU fixture book share: a copy of `tests/gpus-book`, and the
//! `kernelbook` binary run on it with a fake host of GPUs.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// A copy of `tests/gpus-book` in a temp dir.
pub fn gpus_book() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    copy_dir(&repo().join("tests/gpus-book"), dir.path());
    dir
}

/// `kernelbook --root ROOT ARGS…` on the fake device, on a host of `gpus` fake GPUs of which
/// those in `busy` are held by another process.
pub fn kernelbook(root: &Path, args: &[&str], gpus: usize, busy: &str) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_kernelbook"))
        .arg("--root")
        .arg(root)
        .args(args)
        .env("KERNELBOOK_DEVICE", "fake")
        .env("KERNELBOOK_FAKE_DEVICES", gpus.to_string())
        .env("KERNELBOOK_FAKE_BUSY", busy)
        .env_remove("CUDA_VISIBLE_DEVICES")
        .output()
        .expect("kernelbook runs")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
