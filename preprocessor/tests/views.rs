//! The view model of the book's own labs, built from their committed H200 recordings: every
//! derived figure (ratios, the ridge point, work rates, nanoseconds from cycles, the levels
//! summary, the profiler's table) is recomputed here from the raw results and compared.

use kernelbook_core::results::{LabResults, Outcome, VariantResult};
use kernelbook_core::spec::LabSpec;
use kernelbook_runner::LabOutcome;
use mdbook_kernelbook::render::{LabView, Templates, lab_view};
use std::path::{Path, PathBuf};

/// The committed H200 recordings (book.toml's `recorded-gpu`).
const SHOWN: &str = "labs/recorded/nvidia-h200-882b8b4e";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_path_buf()
}

fn recorded(name: &str) -> (LabSpec, LabResults, LabView) {
    let lab = LabSpec::load(&repo().join("labs").join(format!("{name}.toml"))).expect("lab");
    let text = std::fs::read_to_string(repo().join(SHOWN).join(format!("{name}.json")))
        .expect("recording");
    let results = LabResults::from_json(&text).expect("results");
    let outcome = LabOutcome::Recorded {
        results: results.clone(),
        why: "test".into(),
        stale_kernels: Vec::new(),
        compile_errors: Vec::new(),
    };
    let view = lab_view(&lab, &outcome);
    (lab, results, view)
}

fn median_ms(v: &VariantResult) -> f64 {
    match &v.outcome {
        Outcome::Measured { summary, .. } => summary.median_ms,
        other => panic!("{}: {other:?}", v.name),
    }
}

#[test]
fn ratios_state_the_time_of_one_variant_over_another() {
    let (_, results, view) = recorded("bank_conflicts");
    let slow = median_ms(results.variant("conflicted").expect("conflicted"));
    let fast = median_ms(results.variant("padded").expect("padded"));
    let expected = format!("{:.2}×", slow / fast);
    assert!(
        view.ratios[0].contains(&expected),
        "{} should contain {expected}",
        view.ratios[0]
    );
    assert_eq!(view.ratios.len(), 2);
    // Work rates: shared loads per second, scaled to the header's prefix.
    let header = view.rate_header.as_deref().expect("rate column");
    assert!(header.ends_with("shared loads/s"), "{header}");
}

#[test]
fn the_ridge_point_is_the_measured_flop_rate_over_the_measured_bandwidth() {
    let (_, results, view) = recorded("memory_wall");
    let fma = results.variant("fma").expect("fma");
    let flops = fma.work.as_ref().expect("work").count as f64 / (median_ms(fma) / 1e3);
    let gbs = results
        .variant("memcpy")
        .and_then(VariantResult::effective_gbs)
        .expect("memcpy");
    let ridge = view.ridge.as_deref().expect("ridge");
    let expected = format!("= {:.1} FLOP per byte", flops / (gbs * 1e9));
    assert!(
        ridge.contains(&expected),
        "{ridge} should contain {expected}"
    );
    assert_eq!(view.rate_header.as_deref(), Some("TFLOP/s"));
}

#[test]
fn cycles_become_nanoseconds_at_the_recorded_sm_clock_and_levels_summarise_them() {
    let (lab, results, view) = recorded("hierarchy");
    assert!(
        !view.show_bandwidth,
        "a latency lab has no bandwidth column"
    );
    assert_eq!(view.counter_header.as_deref(), Some("cycles per load"));
    let ghz = f64::from(results.provenance.clocks.expect("clocks").sm_mhz) / 1000.0;
    let row = view.rows.iter().find(|r| r.name == "ws_1g").expect("row");
    let cycles: f64 = row.counter.parse().expect("cycles");
    let ns: f64 = row.counter_ns.parse().expect("ns");
    assert!(
        (cycles / ghz - ns).abs() <= 1.0,
        "{cycles} cycles, {ns} ns at {ghz} GHz"
    );
    let names: Vec<&str> = view.levels.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        names,
        lab.levels
            .iter()
            .map(|l| l.name.as_str())
            .collect::<Vec<_>>()
    );
    // Latency grows down the hierarchy.
    let value = |i: usize| -> f64 {
        view.levels[i]
            .value
            .split_whitespace()
            .next()
            .expect("value")
            .parse()
            .expect("number")
    };
    assert!(value(0) < value(1) && value(1) < value(2));
    let html = Templates::new().render_lab(&view).expect("render");
    assert!(html.contains("The hierarchy of the "));
    assert!(html.contains("cycles per load"));
}

#[test]
fn the_profilers_counters_are_tabulated_per_variant() {
    let (_, results, view) = recorded("profile_transpose");
    let profile = view.profile.as_ref().expect("profile");
    let run = results.profile.as_ref().expect("recorded profile");
    assert_eq!(profile.rows.len(), run.kernels.len());
    let tiled = profile
        .rows
        .iter()
        .find(|r| r.label == "transpose_tiled")
        .expect("tiled");
    let recorded = run
        .kernels
        .iter()
        .find(|k| k.variant == "tiled")
        .and_then(|k| k.counters.conflicts_per_shared_load)
        .expect("conflicts per load");
    assert_eq!(tiled.conflicts_per_load, format!("{recorded:.2}"));
    let html = Templates::new().render_lab(&view).expect("render");
    assert!(html.contains("Counters from Nsight Compute"));
}

/// Counters added to a recording afterwards (`kernelbook profile`) say when and where they were
/// taken, apart from the timings.
#[test]
fn counters_taken_apart_from_the_timings_say_so() {
    let (lab, mut results, _) = recorded("profile_transpose");
    if let Some(run) = results.profile.as_mut() {
        run.provenance = Some(kernelbook_core::results::ProfileProvenance {
            device: "NVIDIA H200".into(),
            uuid: "GPU-0".into(),
            measured_at: "2026-12-02T10:00:00Z".into(),
        });
    }
    let outcome = LabOutcome::Recorded {
        results,
        why: "no GPU".into(),
        stale_kernels: vec![],
        compile_errors: vec![],
    };
    let html = Templates::new()
        .render_lab(&lab_view(&lab, &outcome))
        .expect("render");
    assert!(
        html.contains("one checked launch per kernel, profiled on NVIDIA H200, 2026-12-02T10:00:00Z, apart from the timings above"),
        "{html}"
    );
}

#[test]
fn compute_labs_say_their_check_is_sampled() {
    let (_, _, view) = recorded("register_pressure");
    assert!(
        view.notes.iter().any(|n| n.contains("compares every")),
        "{:?}",
        view.notes
    );
    let (_, _, view) = recorded("transpose");
    assert!(!view.notes.iter().any(|n| n.contains("compares every")));
}

/// The note's stride is the one the plan wrote into the results, so a lab whose check samples
/// through `compare.every` says so too, and a built-in reference's sample keeps its sentence.
#[test]
fn the_sampled_note_takes_the_stride_the_plan_wrote() {
    let (_, _, view) = recorded("register_pressure");
    assert!(
        view.notes
            .iter()
            .any(|n| n.contains("every 257th output element with the CPU's (about")),
        "{:?}",
        view.notes
    );
    let (lab, mut results, _) = recorded("transpose");
    let row = results.variants.get_mut(1).expect("a row");
    row.checked = Some("within 4 ulps against the NumPy reference `t`, every 7th element".into());
    let outcome = LabOutcome::Recorded {
        results,
        why: "test".into(),
        stale_kernels: Vec::new(),
        compile_errors: Vec::new(),
    };
    let view = lab_view(&lab, &outcome);
    assert!(
        view.notes.iter().any(|n| n
            == "This lab's check compares every 7th output element with its reference's (the lab's `compare.every`)."),
        "{:?}",
        view.notes
    );
}

#[test]
fn a_recording_missing_a_variant_shows_it_as_not_recorded_never_a_ghost() {
    let lab = LabSpec::load(&repo().join("labs/transpose.toml")).expect("lab");
    let text = std::fs::read_to_string(repo().join(SHOWN).join("transpose.json")).expect("rec");
    let mut results = LabResults::from_json(&text).expect("results");
    let dropped = results.variants.remove(1).name;
    let outcome = LabOutcome::Recorded {
        results: results.clone(),
        why: "test".into(),
        stale_kernels: Vec::new(),
        compile_errors: Vec::new(),
    };
    let view = lab_view(&lab, &outcome);
    let names: Vec<&str> = view.rows.iter().map(|r| r.name.as_str()).collect();
    let lab_names: Vec<&str> = lab.variants.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(
        names, lab_names,
        "one row per variant of the lab, in its order"
    );
    let row = &view.rows[1];
    assert_eq!(
        (row.name.as_str(), row.status.as_str()),
        (dropped.as_str(), "not recorded")
    );
    assert_eq!(row.median, "–");
    assert!(
        view.failures().iter().any(|f| f.contains("not recorded")),
        "--strict fails on it: {:?}",
        view.failures()
    );
    let html = Templates::new().render_lab(&view).expect("render");
    assert!(html.contains("<strong>not recorded</strong>"), "{html}");
}

#[test]
fn every_recorded_lab_renders_without_nan_or_infinity() {
    for entry in std::fs::read_dir(repo().join(SHOWN))
        .expect("dir")
        .flatten()
    {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let name = path.file_stem().and_then(|s| s.to_str()).expect("name");
        let (_, _, view) = recorded(name);
        let html = Templates::new().render_lab(&view).expect("render");
        assert!(!html.contains("NaN") && !html.contains(">inf"), "{name}");
        assert!(view.failures().is_empty(), "{name}: {:?}", view.failures());
    }
}

#[test]
fn a_live_table_on_another_gpu_shows_the_recorded_gpu_beside_it() {
    use mdbook_kernelbook::render::lab_view_beside;
    for name in ["transpose", "hierarchy"] {
        let (lab, recorded, _) = recorded(name);
        // "Another GPU": the recording with another UUID, every time 1.5× as long.
        let mut live = recorded.clone();
        live.provenance.device.uuid = "GPU-another".into();
        live.provenance.device.name = "Another GPU".into();
        for row in &mut live.variants {
            if let Outcome::Measured {
                summary,
                samples_ms,
                ..
            } = &mut row.outcome
            {
                samples_ms.iter_mut().for_each(|s| *s *= 1.5);
                *summary = kernelbook_core::stats::Summary::of(samples_ms).expect("samples");
            }
        }
        let outcome = LabOutcome::Measured {
            results: live.clone(),
            cached: false,
        };
        let view = lab_view_beside(&lab, &outcome, Some(&recorded));
        let header = view
            .beside_header
            .clone()
            .expect("a column for the recorded GPU");
        assert!(header.contains("NVIDIA H200 (recorded)"), "{header}");
        assert_eq!(view.data_columns, lab_view(&lab, &outcome).data_columns + 1);
        for row in &view.rows {
            let theirs = recorded.variant(&row.name).expect("recorded row");
            let expected = if view.show_bandwidth {
                format!("{:.0}", theirs.effective_gbs().expect("gbs"))
            } else {
                let median = theirs
                    .counter
                    .as_ref()
                    .and_then(|c| c.median())
                    .expect("counter");
                mdbook_kernelbook::render::format_sig(median)
            };
            assert_eq!(row.beside, expected, "{name}/{}", row.name);
            assert_ne!(
                row.gbs, row.beside,
                "{name}/{}: the live figure differs",
                row.name
            );
        }
        let html = Templates::new().render_lab(&view).expect("html");
        assert_eq!(
            html.matches("class=\"kernelbook-beside\"").count(),
            view.rows.len() + 1,
            "{name}: a header and a cell per row"
        );
        // The same GPU as the recording: no second column.
        let same = LabOutcome::Measured {
            results: recorded.clone(),
            cached: false,
        };
        assert!(
            lab_view_beside(&lab, &same, Some(&recorded))
                .beside_header
                .is_none()
        );
    }
}

#[test]
fn a_drills_starter_with_a_bug_to_find_shows_its_wrong_result_without_failing_the_build() {
    let (_, _, view) = recorded("drill_race");
    let starter = view
        .rows
        .iter()
        .find(|row| row.name == "starter")
        .expect("the starter's row");
    assert!(starter.intended, "{starter:?}");
    assert!(
        starter
            .status
            .contains("the bug this drill asks you to find")
    );
    assert!(
        starter
            .problem
            .as_deref()
            .is_some_and(|p| p.contains("wrong result"))
    );
    assert!(view.failures().is_empty(), "{:?}", view.failures());
    let solution = view.rows.iter().find(|row| row.name == "solution");
    assert!(solution.is_some_and(|row| !row.intended && row.problem.is_none()));
}
