//! The supervisor against stand-in measuring children (shell scripts that speak the protocol
//! on descriptor 3, the channel a measuring child answers on): one process for many labs,
//! replacement after an unusable device or a crash, stray output on stdout ignored.

use super::*;
use crate::engine::Quiet;
use crate::plan::{Measurement, Target};
use crate::protocol::Event;
use kernelbook_core::KernelSource;
use kernelbook_core::results::{FailureStage, Outcome};
use kernelbook_core::spec::LabSpec;
use std::path::{Path, PathBuf};

/// The measuring tests' lab: variants `memcpy`, `good`, `wrong` and `broken`.
pub(super) fn plan() -> LabPlan {
    let lab = LabSpec::parse(crate::engine::tests::LAB, Path::new("t.toml")).expect("lab");
    let kernels: BTreeMap<String, KernelSource> = ["transpose", "transpose_skip_last", "broken"]
        .into_iter()
        .map(|name| crate::engine::tests::kernel(name, "ok"))
        .collect();
    let target = Target::of(&crate::plan::tests::h200());
    crate::plan::compile(&lab, &kernels, &target, &Measurement::default()).expect("a plan")
}

/// A provenance to report, from a recording committed with the book.
fn begin() -> Event {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../labs/recorded/nvidia-h200-882b8b4e/bandwidth.json");
    let text = std::fs::read_to_string(path).expect("a recording");
    let results: LabResults = serde_json::from_str(&text).expect("recorded results");
    Event::Begin {
        provenance: Box::new(results.provenance),
    }
}

/// What a child reports for the variants `from` on: each started, then finished.
fn variants_from(plan: &LabPlan, from: usize) -> Vec<Event> {
    let total = plan.variants.len();
    plan.variants
        .iter()
        .enumerate()
        .skip(from)
        .flat_map(|(index, variant)| {
            let result = engine::result_template(
                plan,
                variant,
                Outcome::Unavailable {
                    reason: "measured by a stand-in".into(),
                },
            );
            [
                Event::Started {
                    index,
                    total,
                    name: variant.name.clone(),
                },
                Event::Finished {
                    result: Box::new(result),
                },
            ]
        })
        .collect()
}

fn done(reusable: bool) -> Event {
    Event::Done {
        clocks: None,
        reusable,
        launches: Vec::new(),
        diagnoses: Vec::new(),
        buffers: Vec::new(),
    }
}

/// Writes `events` as the protocol's lines to `dir/name`.
fn reply(dir: &Path, name: &str, events: &[Event]) {
    let lines: Vec<String> = events
        .iter()
        .map(|e| serde_json::to_string(e).expect("event"))
        .collect();
    std::fs::write(dir.join(name), lines.join("\n") + "\n").expect("reply");
}

/// A stand-in for the kernelbook binary: counts its starts in `dir/starts`, then runs
/// `body` (a shell script; `$n` is the start's number).
fn fake_child(dir: &Path, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("kernelbook");
    let script = format!(
        "#!/bin/sh\ncd '{}'\necho started >> starts\nn=$(wc -l < starts)\n{body}\n",
        dir.display()
    );
    std::fs::write(&path, script).expect("write the stand-in");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

fn starts(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("starts"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

fn measure(supervisor: &Supervisor) -> LabResults {
    supervisor.measure(&plan(), &mut Quiet).expect("measured")
}

fn supervisor(exe: &Path) -> Supervisor {
    Supervisor::new(BackendChoice::Cuda, Some(exe.to_path_buf()))
        .with_python(PythonPeers::with_python("/nonexistent/python3"))
}

fn outcome<'a>(results: &'a LabResults, name: &str) -> &'a Outcome {
    &results.variant(name).expect("variant").outcome
}

#[test]
fn one_process_measures_lab_after_lab() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lab = plan();
    let events: Vec<Event> = std::iter::once(begin())
        .chain(variants_from(&lab, 0))
        .chain([done(true)])
        .collect();
    reply(dir.path(), "reply", &events);
    let exe = fake_child(dir.path(), "while read line; do cat reply >&3; done");
    let process = supervisor(&exe);
    for _ in 0..3 {
        let results = measure(&process);
        assert_eq!(results.variants.len(), 4);
        assert!(matches!(
            outcome(&results, "broken"),
            Outcome::Unavailable { .. }
        ));
    }
    assert_eq!(starts(dir.path()), 1, "one process for three labs");
}

#[test]
fn a_process_whose_device_is_unusable_is_not_asked_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lab = plan();
    let events: Vec<Event> = std::iter::once(begin())
        .chain(variants_from(&lab, 0))
        .chain([done(false)])
        .collect();
    reply(dir.path(), "reply", &events);
    let exe = fake_child(dir.path(), "read line\ncat reply >&3");
    let process = supervisor(&exe);
    measure(&process);
    measure(&process);
    assert_eq!(starts(dir.path()), 2);
}

#[test]
fn a_crash_fails_the_running_variant_and_a_fresh_process_measures_the_rest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lab = plan();
    let mut first = vec![begin()];
    first.extend(variants_from(&lab, 0).into_iter().take(1));
    reply(dir.path(), "first", &first);
    let second: Vec<Event> = std::iter::once(begin())
        .chain(variants_from(&lab, 1))
        .chain([done(true)])
        .collect();
    reply(dir.path(), "second", &second);
    let exe = fake_child(
        dir.path(),
        "read line\nif [ \"$n\" -eq 1 ]; then cat first >&3; echo 'CUDA_ERROR_ILLEGAL_ADDRESS' >&2; exit 1; fi\ncat second >&3\nwhile read line; do :; done",
    );
    let process = supervisor(&exe);
    let results = measure(&process);
    match outcome(&results, "memcpy") {
        Outcome::Failed { stage, message } => {
            assert_eq!(*stage, FailureStage::Crash);
            assert!(message.contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{message}");
        }
        other => panic!("expected a crash, got {other:?}"),
    }
    for name in ["good", "wrong", "broken"] {
        assert!(matches!(
            outcome(&results, name),
            Outcome::Unavailable { .. }
        ));
    }
    assert_eq!(starts(dir.path()), 2);
}

/// Before: events came on stdout, where a kernel's `printf` also goes; one without a newline
/// glued itself to the next event, which was lost (here the device's report, so the lab failed).
#[test]
fn a_kernels_printf_does_not_corrupt_the_protocol() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lab = plan();
    let events: Vec<Event> = std::iter::once(begin())
        .chain(variants_from(&lab, 0))
        .chain([done(true)])
        .collect();
    reply(dir.path(), "reply", &events);
    let exe = fake_child(
        dir.path(),
        "while read line; do printf 'thread 0: x = 1'; cat reply >&3; printf '{\"status\": '; done",
    );
    let process = supervisor(&exe);
    for _ in 0..2 {
        let results = measure(&process);
        assert_eq!(results.variants.len(), 4);
        assert_eq!(results.provenance.device.name, "NVIDIA H200");
    }
    assert_eq!(starts(dir.path()), 1, "the child stayed usable");
}

/// A supervisor for the host's second GPU sends its measuring child requests for that GPU.
#[test]
fn the_child_is_asked_for_the_supervisors_gpu() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lab = plan();
    let events: Vec<Event> = std::iter::once(begin())
        .chain(variants_from(&lab, 0))
        .chain([done(true)])
        .collect();
    reply(dir.path(), "reply", &events);
    let exe = fake_child(
        dir.path(),
        "while read line; do echo \"$line\" > request; cat reply >&3; done",
    );
    measure(&supervisor(&exe).on_gpu(1, "GPU-b780f725"));
    let request = std::fs::read_to_string(dir.path().join("request")).expect("a request");
    let request: crate::protocol::Request =
        serde_json::from_str(request.trim()).expect("the child's request");
    let crate::protocol::Request::Measure(request) = request else {
        panic!("a measure request, got {request:?}");
    };
    assert_eq!(request.ordinal, 1);
}

/// A child started without a channel is not told of one, even if this process was.
#[test]
fn only_a_channel_child_is_told_of_a_channel() {
    let mut command = std::process::Command::new("sh");
    command
        .arg("-c")
        .arg(format!(
            "echo \"${{{}:-none}}\"",
            crate::process::CHANNEL_ENV
        ))
        .env(crate::process::CHANNEL_ENV, "3");
    let mut child = crate::process::spawn(
        command,
        crate::process::Spawn {
            own_group: false,
            stderr_lines: 5,
        },
    )
    .expect("spawn");
    let line = child
        .lines()
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("a line");
    assert_eq!(line, "none");
}
