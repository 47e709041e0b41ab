//! Extension points are tables: the newest builtins, one Python peer (`torch_sum`) and one device
//! peer (`library_gemm_bf16`), are named in no more files than `book/AUTHORING.md` lists for a new
//! builtin — so a builtin added after them touches the same few.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every source file under the crates' `src/` (Rust and the Python worker), with its test
/// modules left out: a test may name anything.
fn sources(dir: &Path, out: &mut Vec<(String, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
            continue;
        }
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let is_source = name.ends_with(".rs") || name.ends_with(".py");
        if !is_source || name == "tests.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
        let relative = path.strip_prefix(repo()).unwrap_or(&path);
        out.push((relative.display().to_string(), code.to_string()));
    }
}

fn files_naming(needles: &[&str]) -> BTreeSet<String> {
    let mut all = Vec::new();
    for krate in ["core", "runner", "preprocessor", "cli"] {
        sources(&repo().join(krate).join("src"), &mut all);
    }
    all.into_iter()
        .filter(|(_, code)| needles.iter().any(|needle| code.contains(needle)))
        .map(|(path, _)| path.replace("runner/../", ""))
        .collect()
}

fn set(paths: &[&str]) -> BTreeSet<String> {
    paths.iter().map(|p| p.to_string()).collect()
}

#[test]
fn a_python_peer_is_its_descriptor_its_plan_arm_and_its_job() {
    assert_eq!(
        files_naming(&["TorchSum", "torch_sum"]),
        set(&[
            "core/src/builtins.rs",
            "runner/src/plan/compile.rs",
            "runner/src/peers/worker.py",
        ])
    );
}

#[test]
fn a_device_peer_is_its_descriptor_and_its_plan_arm() {
    // Its operation (a BF16 `Op::Gemm`) lives in the backend, which never names a builtin.
    assert_eq!(
        files_naming(&["LibraryGemmBf16", "library_gemm_bf16"]),
        set(&["core/src/builtins.rs", "runner/src/plan/compile.rs"])
    );
}

#[test]
fn authoring_md_lists_every_builtin_and_the_files_a_new_one_touches() {
    let authoring = std::fs::read_to_string(repo().join("book/AUTHORING.md")).expect("AUTHORING");
    for builtin in kernelbook_core::spec::Builtin::ALL {
        let row = format!("| `{}` |", builtin.name());
        assert!(authoring.contains(&row), "AUTHORING.md has no row {row}");
    }
    for file in [
        "core/src/builtins.rs",
        "runner/src/plan/compile.rs",
        "runner/src/peers/worker.py",
    ] {
        assert!(
            authoring.contains(file),
            "AUTHORING.md does not name {file}"
        );
    }
}
