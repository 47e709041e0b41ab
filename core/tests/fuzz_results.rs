//! Property tests: no results file, however damaged, makes `LabResults::from_json` panic, and
//! whatever it accepts passes validation and gives finite, bounded figures (bandwidth, rates,
//! percentages) — the numbers the book would print.

#[path = "support/results.rs"]
mod support;

use kernelbook_core::bandwidth::percent_of;
use kernelbook_core::results::{
    LabResults, MAX_GBS, MAX_TIME_MS, MAX_WORK_PER_SECOND, MIN_TIME_MS, MissingVariants,
};
use kernelbook_core::spec::LabSpec;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::Value;
use std::sync::OnceLock;
use support::{cases, damaged_recording, lab_results, mutation, recordings, repo};

/// The book's recordings, parsed once, with their labs.
fn book() -> &'static [(String, Value, LabSpec)] {
    static BOOK: OnceLock<Vec<(String, Value, LabSpec)>> = OnceLock::new();
    BOOK.get_or_init(|| {
        recordings()
            .into_iter()
            .map(|(name, text)| {
                let lab = LabSpec::load(&repo().join("labs").join(format!("{name}.toml")))
                    .expect("the recording's lab");
                let value = serde_json::from_str(&text).expect("a recording is JSON");
                (name, value, lab)
            })
            .collect()
    })
}

/// The recordings as (lab name, JSON), for [`damaged_recording`].
fn values() -> &'static [(String, Value)] {
    static VALUES: OnceLock<Vec<(String, Value)>> = OnceLock::new();
    VALUES.get_or_init(|| {
        book()
            .iter()
            .map(|(n, v, _)| (n.clone(), v.clone()))
            .collect()
    })
}

/// Every figure the book derives from `r` is finite and within the validation bounds.
fn figures_are_sound(r: &LabResults) -> Result<(), TestCaseError> {
    let peak = r.provenance.device.theoretical_gbs();
    prop_assert!(peak.is_finite() && peak >= 0.0, "peak {peak}");
    let ceiling = r.ceiling_gbs();
    prop_assert!(ceiling.is_none_or(f64::is_finite), "ceiling {ceiling:?}");
    for v in &r.variants {
        if let Some(ms) = v.median_ms() {
            prop_assert!(
                (MIN_TIME_MS..=MAX_TIME_MS).contains(&ms),
                "{}: {ms} ms",
                v.name
            );
        }
        if let Some(gbs) = v.effective_gbs() {
            prop_assert!((0.0..=MAX_GBS).contains(&gbs), "{}: {gbs} GB/s", v.name);
            for whole in [Some(peak), ceiling].into_iter().flatten() {
                let pct = percent_of(gbs, whole);
                prop_assert!(pct.is_none_or(f64::is_finite), "{}: {pct:?} %", v.name);
            }
        }
        if let Some(rate) = v.work_per_second() {
            prop_assert!(
                (0.0..=MAX_WORK_PER_SECOND).contains(&rate),
                "{}: {rate}/s",
                v.name
            );
        }
        let counter = v.counter.as_ref().and_then(|c| c.median());
        prop_assert!(
            counter.is_none_or(f64::is_finite),
            "{}: {counter:?}",
            v.name
        );
    }
    Ok(())
}

/// What `from_json` accepted is valid, sound, and reads back after being written.
fn accepted_is_sound(r: &LabResults) -> Result<(), TestCaseError> {
    prop_assert_eq!(r.validate(), Ok(()));
    figures_are_sound(r)?;
    let again = LabResults::from_json(&r.to_json());
    prop_assert!(
        again.is_ok(),
        "what was written does not read back: {:?}",
        again.err()
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(2000)))]

    #[test]
    fn arbitrary_text_is_refused_or_valid(text in any::<String>()) {
        if let Ok(r) = LabResults::from_json(&text) {
            accepted_is_sound(&r)?;
        }
    }

}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(500)))]

    #[test]
    fn a_damaged_recording_is_refused_or_valid(
        pick in any::<Index>(),
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        let (name, text) = damaged_recording(values(), &pick, &mutations);
        if let Ok(r) = LabResults::from_json(&text) {
            accepted_is_sound(&r)?;
            let lab = &book().iter().find(|(n, _, _)| *n == name).expect("its lab").2;
            // Any answer will do, as long as it is one.
            let _ = r.check_lab(lab, MissingVariants::Allowed);
        }
    }

    #[test]
    fn generated_results_are_refused_or_sound(
        r in lab_results("copy".into(), vec!["memcpy".into(), "scalar".into(), "ghost".into()]),
    ) {
        if r.validate().is_ok() {
            figures_are_sound(&r)?;
            let again = LabResults::from_json(&r.to_json());
            prop_assert!(again.is_ok(), "{:?}", again.err());
        }
    }
}

/// How many of each strategy's inputs get through, so that the properties above are known to
/// test accepted files and not only refusals: `cargo test --test fuzz_results -- --ignored`.
#[test]
#[ignore = "a report, not a check"]
fn acceptance_rates() {
    use proptest::test_runner::TestRunner;
    let n = cases(2000);
    let mut runner = TestRunner::new(ProptestConfig::with_cases(n));
    let damaged = (any::<Index>(), proptest::collection::vec(mutation(), 1..4));
    let accepted = std::cell::Cell::new(0u32);
    let _ = runner.run(&damaged, |(pick, mutations)| {
        let (_, text) = damaged_recording(values(), &pick, &mutations);
        accepted.set(accepted.get() + u32::from(LabResults::from_json(&text).is_ok()));
        Ok(())
    });
    eprintln!("damaged recordings: {} of {n} accepted", accepted.get());
    let mut runner = TestRunner::new(ProptestConfig::with_cases(n));
    let generated = lab_results("copy".into(), vec!["memcpy".into(), "scalar".into()]);
    let valid = std::cell::Cell::new(0u32);
    let why = std::cell::RefCell::new(std::collections::BTreeMap::new());
    let _ = runner.run(&generated, |r| {
        match r.validate() {
            Ok(()) => valid.set(valid.get() + 1),
            Err(err) => {
                let kind = format!("{err:?}");
                let kind = kind
                    .split([' ', '(', '{'])
                    .next()
                    .unwrap_or_default()
                    .to_string();
                *why.borrow_mut().entry(kind).or_insert(0u32) += 1;
            }
        }
        Ok(())
    });
    eprintln!(
        "generated results: {} of {n} valid; refused: {:?}",
        valid.get(),
        why.borrow()
    );
}
