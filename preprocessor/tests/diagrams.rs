//! Warp-access and bank diagrams from the outside: directives in a chapter rendered against
//! golden files, beside a recorded profile, beside nothing, and what is wrong reported at the
//! directive's line.
//!
//! Set `KERNELBOOK_BLESS=1` to rewrite the golden files after an intended change.

use kernelbook_core::results::LabResults;
use kernelbook_core::spec::LabSpec;
use kernelbook_runner::LabOutcome;
use mdbook_kernelbook::diagram::{self, Rendered, Results};
use mdbook_kernelbook::preprocessor::Labs;
use mdbook_kernelbook::render::Templates;
use mdbook_kernelbook::scan::{BookIndex, scan_chapter};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Lab 3's file and its H200 recording, with Nsight Compute's counters.
fn profiled_lab() -> (LabSpec, LabResults) {
    let lab = LabSpec::load(&fixtures().join("profile_transpose.toml")).expect("fixture lab");
    let text = std::fs::read_to_string(fixtures().join("profile_transpose.results.json"))
        .expect("fixture results");
    (
        lab,
        LabResults::from_json(&text).expect("fixture results parse"),
    )
}

fn labs() -> Labs {
    let (lab, _) = profiled_lab();
    let mut labs = Labs::default();
    labs.ready.insert(lab.name.clone(), lab);
    labs
}

fn recorded_outcome(results: LabResults) -> LabOutcome {
    LabOutcome::Recorded {
        results,
        why: "no CUDA driver found".into(),
        stale_kernels: vec![],
        compile_errors: vec![],
    }
}

/// The chapter's one diagram rendered with `outcome` for Lab 3 (and `recorded` as its
/// recording).
fn render(chapter: &str, outcome: Option<LabOutcome>, recorded: Option<LabResults>) -> Rendered {
    let scan = scan_chapter(chapter, Path::new("chapter.md")).expect("scans");
    let outcomes: BTreeMap<&str, LabOutcome> = outcome
        .into_iter()
        .map(|o| ("profile_transpose", o))
        .collect();
    let recorded: BTreeMap<String, LabResults> = recorded
        .into_iter()
        .map(|r| ("profile_transpose".to_string(), r))
        .collect();
    let results = Results {
        outcomes: &outcomes,
        recorded: &recorded,
    };
    diagram::render_one(
        "diagram-test-1",
        (&scan.diagrams[0].spec, &scan.diagrams[0].location),
        &labs(),
        results,
        &Templates::new(),
    )
    .expect("renders")
}

/// The HTML's text as a reader sees it: handlebars' escapes decoded.
fn text(html: &str) -> String {
    // A name in backticks is shown as code.
    html.replace("<code>", "`")
        .replace("</code>", "`")
        .replace("&#x60;", "`")
        .replace("&#x27;", "'")
        .replace("&#x3D;", "=")
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

fn check_golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("KERNELBOOK_BLESS").is_some() {
        std::fs::write(&path, actual).expect("bless");
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("missing golden file {}", path.display()));
    assert_eq!(
        actual,
        expected,
        "rendering differs from {}; set KERNELBOOK_BLESS=1 if intended",
        path.display()
    );
}

#[test]
fn strides_render_as_the_golden_panels() {
    let rendered = render(
        "# Coalescing\n\n{{#warp-access index=\"t * stride\" stride=[1, 2, 32]}}\n",
        None,
        None,
    );
    assert!(rendered.failures.is_empty(), "no lab, nothing to fail");
    let html = &rendered.html;
    assert_eq!(html.matches("<svg").count(), 3);
    assert!(html.contains("data-sectors=\"4\"") && html.contains("data-sectors=\"32\""));
    assert!(text(html).contains(
        "<strong>stride = 2:</strong> 8 sectors per request (256 B fetched) in 2 lines (256 B); 128 B used: 50 % of the sectors' bytes, 50 % of the lines'."
    ));
    assert!(
        !html.contains("\n\n"),
        "no blank line ends the HTML block early"
    );
    check_golden("diagram-strides.html", html);
}

/// 16-byte lanes (a `float4` each), two rows of 256 bytes: 16 full sectors in 4 lines.
#[test]
fn float4_rows_render_as_the_golden_panel() {
    let rendered = render(
        "{{#warp-access index=\"(t / 16) * (n / 4) + t % 16\" elem=16 n=8192}}\n",
        None,
        None,
    );
    let html = &rendered.html;
    assert!(html.contains("data-sectors=\"16\" data-sector-bytes=\"512\" data-lines=\"4\""));
    assert!(
        html.contains(">+32 KiB</text>") && html.contains(">+32 KiB + 128 B</text>"),
        "{html}"
    );
    assert!(
        !html.contains("class=\"swatch fetched\""),
        "no sector is partly used"
    );
    check_golden("diagram-float4-rows.html", html);
}

#[test]
fn the_naive_transpose_store_sits_beside_its_recorded_counters() {
    let (_, results) = profiled_lab();
    let rendered = render(
        "{{#warp-access index=\"t * n\" n=8192 op=store lab=profile_transpose variant=naive}}\n",
        Some(recorded_outcome(results)),
        None,
    );
    let html = &rendered.html;
    assert!(rendered.failures.is_empty(), "{:?}", rendered.failures);
    assert!(
        html.contains(
            "data-metric=\"sectors-per-request\" data-predicted=\"32\" data-measured=\"32.00\""
        ),
        "{html}"
    );
    assert!(html.contains("data-verdict=\"agree\""));
    assert!(html.contains("recorded on NVIDIA H200, 2026-12-01T09:18:40Z"));
    // The L1 → L2 traffic is the model's 8×; the L2 merged it before DRAM.
    assert!(html.contains("L1 wrote 2048 MiB to L2"), "{html}");
    assert!(
        html.contains("DRAM received only 292 MiB, 7.0× less"),
        "{html}"
    );
    check_golden("diagram-naive-store.html", html);
}

#[test]
fn the_32_wide_column_read_sits_beside_the_tiled_kernels_conflicts() {
    let (_, results) = profiled_lab();
    let rendered = render(
        "{{#banks index=\"32 * t + c\" c=0 lab=profile_transpose variant=tiled title=\"tile[32][32], column 0\"}}\n",
        Some(recorded_outcome(results)),
        None,
    );
    let html = &rendered.html;
    assert!(html.contains("data-degree=\"32\" data-wavefronts=\"32\" data-conflicts=\"31\""));
    assert!(
        html.contains("data-predicted=\"31\" data-measured=\"31.35\""),
        "{html}"
    );
    assert!(html.contains("data-predicted=\"32\" data-measured=\"32.35\""));
    assert!(html.contains("data-verdict=\"agree\""));
    // 31 words wait for a later pass in bank 0.
    assert_eq!(html.matches("class=\"word conflict\"").count(), 31);
    check_golden("diagram-column-32.html", html);
}

#[test]
fn a_broadcast_is_drawn_as_one_shared_word() {
    let rendered = render("{{#banks index=\"c\" c=7}}\n", None, None);
    let html = &rendered.html;
    assert!(html.contains("data-degree=\"1\"") && html.contains("data-broadcast-words=\"1\""));
    assert!(html.contains("No conflict: 1 wavefront per request, 0 conflicts; 1 of 32 banks used; 1 word broadcast to 32 lanes."));
    assert!(html.contains("class=\"word broadcast\""));
    assert!(html.contains(">×32</text>"));
    check_golden("diagram-broadcast.html", html);
}

#[test]
fn a_disagreement_is_named_with_both_numbers_and_the_authors_reason() {
    let (_, results) = profiled_lab();
    // The tiled kernel's loads are 32-way; a diagram claiming they are conflict-free disagrees.
    let rendered = render(
        "{{#banks index=\"33 * t\" lab=profile_transpose variant=tiled why=\"The kernel's tile is not padded.\"}}\n",
        Some(recorded_outcome(results)),
        None,
    );
    let html = text(&rendered.html);
    assert!(html.contains("data-verdict=\"differ\""));
    assert!(html.contains(
        "The counters differ from the model: bank conflicts per shared load 31.35 against the model's 0, 31.35 more; wavefronts per shared load 32.35 against the model's 1, 3135 % more. The kernel's tile is not padded."
    ), "{html}");
}

#[test]
fn live_results_without_counters_fall_back_to_the_recorded_ones() {
    let (_, recorded) = profiled_lab();
    let mut live = recorded.clone();
    live.profile = None;
    live.provenance.device.name = "NVIDIA GeForce RTX 4090".into();
    let rendered = render(
        "{{#warp-access index=\"t * n\" n=8192 op=store lab=profile_transpose variant=naive}}\n",
        Some(LabOutcome::Measured {
            results: live,
            cached: false,
        }),
        Some(recorded),
    );
    let html = text(&rendered.html);
    assert!(rendered.failures.is_empty());
    assert!(html.contains("This machine's run gave no counters (lab `profile_transpose` was measured without Nsight Compute); these are the recorded ones."), "{html}");
    assert!(html.contains("recorded on NVIDIA H200"));
    assert!(html.contains("data-measured=\"32.00\""));
}

#[test]
fn a_recording_without_counters_says_how_to_get_them_and_fails_strict() {
    let (_, mut results) = profiled_lab();
    results.profile = None;
    let rendered = render(
        "# A\n\n{{#warp-access index=\"t * n\" n=8192 op=store lab=profile_transpose variant=naive}}\n",
        Some(recorded_outcome(results)),
        None,
    );
    assert!(text(&rendered.html).contains("No counters beside this diagram: lab `profile_transpose` was recorded without Nsight Compute counters; on a GPU with Nsight Compute, `kernelbook profile profile_transpose` adds them to its recording."), "{}", rendered.html);
    assert_eq!(rendered.failures.len(), 1);
    assert!(
        rendered.failures[0].starts_with("chapter.md:3: the diagram has no counters beside it")
    );
}

/// The model is of NVIDIA's 32-lane warp: counters of a 64-lane wavefront are not set beside it.
#[test]
fn counters_from_a_64_lane_wavefront_are_not_compared() {
    let (_, mut results) = profiled_lab();
    results.provenance.device.name = "AMD Instinct MI300X".into();
    results.provenance.device.warp_size = 64;
    let rendered = render(
        "{{#warp-access index=\"t * n\" n=8192 op=store lab=profile_transpose variant=naive}}\n",
        Some(recorded_outcome(results)),
        None,
    );
    assert!(!rendered.html.contains("data-verdict"));
    assert!(
        text(&rendered.html).contains("measured on an AMD Instinct MI300X whose warps are 64 lanes, and the model is of a 32-lane warp"),
        "{}",
        rendered.html
    );
}

#[test]
fn a_store_of_a_recording_without_store_counters_says_so() {
    let (_, results) = profiled_lab();
    let rendered = render(
        "{{#banks index=\"t\" op=store lab=profile_transpose variant=padded}}\n",
        Some(recorded_outcome(results)),
        None,
    );
    assert!(rendered.html.contains("data-verdict=\"unknown\""));
    assert!(text(&rendered.html).contains(
        "lacks these counters: profile the lab again (`kernelbook profile profile_transpose`)"
    ));
}

/// Bad input is an error naming the chapter and the line of the directive.
#[test]
fn bad_diagrams_are_reported_at_their_lines() {
    let cases = [
        (
            "{{#warp-access index=\"t * stride\" stride=0}}",
            "stride must be at least 1",
        ),
        (
            "{{#banks index=\"t\" lanes=64}}",
            "64 lanes: the model is of one warp instruction",
        ),
        ("{{#warp-access index=\"t * k\"}}", "unknown parameter `k`"),
        (
            "{{#warp-access index=\"t\" elem=6}}",
            "1, 2, 4, 8 or 16 bytes",
        ),
        ("{{#warp-access index=\"3 - t\"}}", "lane 4: `3 - t` is -1"),
        ("{{#banks index=\"t\" elem=8}}", "4-byte accesses only"),
        (
            "{{#banks index=\"t\" lab=nope variant=x}}",
            "there is no lab `nope`",
        ),
        (
            "{{#banks index=\"t\" lab=profile_transpose variant=nope}}",
            "no kernel variant `nope`",
        ),
        ("{{#warp-access index=\"t\"", "not closed with `}}`"),
        (
            "| a |\n|---|\n| {{#banks index=\"t\"}} |",
            "cannot stand in a table",
        ),
    ];
    for (directive, expected) in cases {
        let chapter = format!("# A\n\ntext\n\n{directive}\n");
        let line = chapter[..chapter.find("{{#").expect("a directive")]
            .matches('\n')
            .count()
            + 1;
        let problems = match BookIndex::build([(Path::new("ch.md"), chapter.as_str())]) {
            Err(errors) => errors.iter().map(ToString::to_string).collect(),
            Ok(index) => mdbook_kernelbook::book::check_diagrams(&index, &labs()),
        };
        assert_eq!(problems.len(), 1, "{directive}: {problems:?}");
        assert!(
            problems[0].starts_with(&format!("ch.md:{line}: ")),
            "{directive}: {}",
            problems[0]
        );
        assert!(
            problems[0].contains(expected),
            "{directive}: {}",
            problems[0]
        );
    }
}

#[test]
fn an_unprofiled_lab_cannot_give_counters() {
    let mut labs = labs();
    if let Some(lab) = labs.ready.get_mut("profile_transpose") {
        lab.profile = false;
    }
    let index = BookIndex::build([(
        Path::new("ch.md"),
        "{{#banks index=\"t\" lab=profile_transpose variant=tiled}}\n",
    )])
    .expect("scans");
    let problems = mdbook_kernelbook::book::check_diagrams(&index, &labs);
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0].contains("is not profiled: set `profile = true`"),
        "{}",
        problems[0]
    );
}
