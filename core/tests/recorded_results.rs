//! Every results file committed with the book passes the checks a results file gets on load,
//! and holds exactly its lab's variants.

#[path = "support/results.rs"]
mod support;

use kernelbook_core::results::{LabResults, MissingVariants};
use kernelbook_core::spec::LabSpec;

/// The GPU folder the chapters show (book.toml's `recorded-gpu`).
fn shown_folder() -> String {
    let book = std::fs::read_to_string(support::repo().join("book.toml")).expect("book.toml");
    book.lines()
        .find_map(|line| line.strip_prefix("recorded-gpu = \""))
        .and_then(|rest| rest.strip_suffix('"'))
        .expect("book.toml names the recorded GPU")
        .to_string()
}

#[test]
fn every_recorded_file_passes_validation_and_matches_its_lab() {
    let recordings = support::recordings();
    assert!(recordings.len() >= 17, "{} recordings", recordings.len());
    for (name, text) in recordings {
        let results = LabResults::from_json(&text)
            .unwrap_or_else(|err| panic!("labs/recorded/*/{name}.json: {err}"));
        let lab = LabSpec::load(&support::repo().join("labs").join(format!("{name}.toml")))
            .unwrap_or_else(|err| panic!("labs/{name}.toml: {err}"));
        // Another board's recording may predate a variant (its column says "not recorded").
        results
            .check_lab(&lab, MissingVariants::Allowed)
            .unwrap_or_else(|err| panic!("labs/recorded/*/{name}.json: {err}"));
    }
}

#[test]
fn the_shown_gpu_has_every_lab_with_every_variant() {
    let folder = support::repo().join("labs/recorded").join(shown_folder());
    for entry in std::fs::read_dir(support::repo().join("labs"))
        .expect("labs/")
        .flatten()
    {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let lab = LabSpec::load(&path).unwrap_or_else(|err| panic!("{err}"));
        let file = folder.join(format!("{}.json", lab.name));
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|err| panic!("{}: {err}", file.display()));
        let results = LabResults::from_json(&text).expect("a results file");
        results
            .check_lab(&lab, MissingVariants::Refused)
            .unwrap_or_else(|err| panic!("{}: {err}", file.display()));
    }
}

#[test]
fn the_experiments_kept_beside_the_recordings_pass_validation_too() {
    let dir = support::repo().join("labs/recorded/experiments");
    let mut stack = vec![dir];
    let mut seen = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("experiments").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                let text = std::fs::read_to_string(&path).expect("a file");
                LabResults::from_json(&text)
                    .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
                seen += 1;
            }
        }
    }
    assert!(seen > 0);
}
