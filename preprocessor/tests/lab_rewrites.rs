//! The course's labs rewritten with sweeps, per-variant parameters and device properties
//! measure exactly what their hand-unrolled versions did: compiled with the book's own kernels
//! for the H200 their recordings were made on, the two give the same plan (variants, launches,
//! arguments, bytes, checks) and so the same cache key, and the same rows (names, labels,
//! access patterns, places on the plot).
//!
//! The hand-unrolled files are kept in `labs/fixtures/` as they were before the rewrite.

use kernelbook_core::results::LabResults;
use kernelbook_core::spec::LabSpec;
use kernelbook_runner::plan::{LabPlan, Measurement, ReferencePlan, Target, Toolchain, compile};
use mdbook_kernelbook::scan::BookIndex;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_path_buf()
}

/// Every chapter under `book/src`, as (path relative to the repository, text).
fn chapters() -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    let mut folders = vec![repo().join("book/src")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("a folder").flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                let text = std::fs::read_to_string(&path).expect("a chapter");
                let relative = path.strip_prefix(repo()).expect("in the repository");
                found.push((relative.to_path_buf(), text));
            }
        }
    }
    found.sort();
    found
}

/// `lab` compiled with the book's kernels for the GPU and toolchain its recording names.
fn plan(lab: &LabSpec, index: &BookIndex, recording: &LabResults) -> (LabPlan, String) {
    let kernels = index.kernels_named(lab.kernel_refs().into_iter().map(|(k, _)| k));
    let target = Target::of(&recording.provenance.device);
    let plan = compile(lab, &kernels, &target, &Measurement::default())
        .unwrap_or_else(|err| panic!("{err}"));
    let toolchain = Toolchain {
        device: recording.provenance.device.clone(),
        driver_version: recording.provenance.driver_version.clone(),
        compiler_version: recording.provenance.compiler_version.clone(),
    };
    let key = plan.key(&toolchain);
    (plan, key)
}

#[test]
fn the_rewritten_labs_compile_to_the_plans_of_their_unrolled_versions() {
    let chapters = chapters();
    let index = BookIndex::build(chapters.iter().map(|(p, t)| (p.as_path(), t.as_str())))
        .unwrap_or_else(|errors| panic!("{errors:?}"));
    for name in ["hierarchy", "hierarchy_bandwidth"] {
        let rewritten = LabSpec::load(&repo().join(format!("labs/{name}.toml")))
            .unwrap_or_else(|err| panic!("{err}"));
        let unrolled = LabSpec::load(&repo().join(format!("labs/fixtures/{name}.unrolled.toml")))
            .unwrap_or_else(|err| panic!("{err}"));
        let text = std::fs::read_to_string(
            repo().join(format!("labs/recorded/nvidia-h200-882b8b4e/{name}.json")),
        )
        .expect("a recording");
        let recording = LabResults::from_json(&text).expect("a valid recording");
        assert_eq!(recording.provenance.device.name, "NVIDIA H200");

        let rows = |lab: &LabSpec| -> Vec<_> {
            lab.variants
                .iter()
                .map(|v| {
                    let kernels: Vec<String> =
                        v.kernel_names().into_iter().map(String::from).collect();
                    (
                        v.name.clone(),
                        v.label().to_string(),
                        v.access.clone(),
                        v.plot_x,
                        kernels,
                    )
                })
                .collect()
        };
        assert_eq!(rows(&rewritten), rows(&unrolled), "{name}: the rows");
        let (mut new_plan, new_key) = plan(&rewritten, &index, &recording);
        let (old_plan, old_key) = plan(&unrolled, &index, &recording);
        // A NumPy reference receives every parameter of its variant, a sweep's own included,
        // which the unrolled file spelt out as numbers instead: compare what both pass.
        let mut passes_more = false;
        for (new, old) in new_plan.checks.iter_mut().zip(&old_plan.checks) {
            if let (
                ReferencePlan::Python { params: more, .. },
                ReferencePlan::Python { params: fewer, .. },
            ) = (&mut new.reference, &old.reference)
            {
                passes_more |= more.len() != fewer.len();
                more.retain(|name, _| fewer.contains_key(name));
            }
        }
        assert!(!new_plan.builds.is_empty(), "{name}: the book's kernels");
        // Each variant's own parameters are in the plan (and so in its key) as the lab file
        // writes them: the rewritten file's sweeps bind them, the unrolled file wrote numbers.
        // Everything they measure by is the same.
        let mut old_plan = old_plan;
        let mut swept = 0;
        for (new, old) in new_plan.variants.iter_mut().zip(&mut old_plan.variants) {
            swept += usize::from(new.params.sweep.is_some());
            new.params = Default::default();
            old.params = Default::default();
            assert_eq!(new, old, "{name}: variant {}", old.name);
        }
        assert!(
            swept > 0,
            "{name}: the rewritten file's sweeps are in its plan"
        );
        assert_eq!(new_plan, old_plan, "{name}: the plan");
        if !passes_more {
            assert_ne!(
                new_key, old_key,
                "{name}: how a variant's parameters are written is in the key"
            );
        }
        let recorded: Vec<_> = recording.variants.iter().map(|v| v.name.as_str()).collect();
        let planned: Vec<_> = new_plan.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(planned, recorded, "{name}: the recording's rows");
    }
}
