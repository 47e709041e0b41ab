//! The sanitizer's output read from fixtures (hand-made ones in the documented format until
//! the captured ones replace them), the tool found and run as a real process (with stand-in
//! scripts: absent, refusing, hanging), and whole sessions with stand-in runs.

use super::*;
use crate::references::Comparison;
use kernelbook_core::spec::ElemType;
use kernelbook_core::{KernelSource, SourceLocation};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/sanitizer");

/// Where the probes' kernel blocks are taken to stand in a chapter.
const CHAPTER: &str = "book/src/exercises/drill-sanitizer.md";
const BLOCK_LINE: usize = 40;

fn handmade(name: &str) -> String {
    let path = format!("{FIXTURES}/handmade/{name}");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Probe kernel `name` as a kernel block at line [`BLOCK_LINE`] of [`CHAPTER`].
fn probe(name: &str) -> KernelSource {
    let path = format!("{FIXTURES}/probes/kernels/{name}.cu");
    KernelSource {
        name: name.to_string(),
        source: std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}")),
        origin: SourceLocation {
            file: CHAPTER.into(),
            line: BLOCK_LINE,
        },
        language: Default::default(),
    }
}

fn probes() -> Vec<KernelSource> {
    [
        "clean_copy",
        "oob_tail",
        "shared_race",
        "halo_unloaded",
        "uninit_accumulate",
        "divergent_barrier",
        "early_return_barrier",
        "misaligned_vector",
        "oob_neighbour",
    ]
    .map(probe)
    .to_vec()
}

/// The chapter lines of the probe's lines marked `// FINDING …` with `marker` in the words.
fn marked_all(kernel: &str, marker: &str) -> Vec<usize> {
    let lines: Vec<usize> = probe(kernel)
        .source
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains("// FINDING") && l.contains(marker))
        .map(|(i, _)| BLOCK_LINE + i)
        .collect();
    assert!(!lines.is_empty(), "no `{marker}` marker in {kernel}.cu");
    lines
}

/// The chapter line of the probe's first line marked `// FINDING …` with `marker`.
fn marked(kernel: &str, marker: &str) -> usize {
    marked_all(kernel, marker)[0]
}

/// The buffers a harness printed ("probe: buffer out 0x7f… 4096 bytes"), as f32 buffers.
fn buffers(text: &str) -> Vec<DeviceBuffer> {
    text.lines()
        .filter_map(|line| {
            let rest = line.split_once("probe: buffer ")?.1;
            let mut words = rest.split_whitespace();
            let name = words.next()?.to_string();
            let address = u64::from_str_radix(words.next()?.strip_prefix("0x")?, 16).ok()?;
            let bytes = words.next()?.parse().ok()?;
            Some(DeviceBuffer {
                name,
                elem: ElemType::F32,
                address,
                bytes,
            })
        })
        .collect()
}

fn launch(grid: [u32; 3], block: [u32; 3]) -> Option<Launch> {
    Some(Launch { grid, block })
}

fn diagnoses(tool: Tool, text: &str, launch: Option<Launch>) -> (Report, Vec<Diagnosis>) {
    let report = parse(text);
    let kernels = probes();
    let buffers = buffers(text);
    let context = Context {
        sources: Sources { kernels: &kernels },
        buffers: &buffers,
        launch,
    };
    let found = diagnose(tool, &report, &context);
    (report, found)
}

fn line(diagnosis: &Diagnosis) -> Option<usize> {
    diagnosis.at.as_ref().map(|p| p.at.line)
}

#[test]
fn an_out_of_bounds_write_is_said_at_its_line_with_its_element() {
    let text = handmade("memcheck_oob_tail.log");
    let (report, found) = diagnoses(Tool::Memcheck, &text, launch([4, 1, 1], [256, 1, 1]));
    assert_eq!((report.errors, report.api_errors.len()), (Some(3), 2));
    let Problem::InvalidAccess {
        space,
        access,
        size,
        address,
        fault,
        nearest,
    } = &report.findings[0].problem
    else {
        panic!("{report:?}");
    };
    assert_eq!(
        (*space, *access, *size, *address, *fault),
        (
            Space::Global,
            Access::Write,
            4,
            Some(0x7f3a_1e20_2000),
            Some(Fault::OutOfBounds)
        )
    );
    assert_eq!(
        nearest.map(|n| (n.relation, n.distance, n.size)),
        Some((Relation::After, 1, 4096))
    );
    assert_eq!(found.len(), 1);
    let d = &found[0];
    assert_eq!(d.kind, Kind::OutOfBounds(Access::Write));
    assert_eq!(line(d), Some(marked("oob_tail", "memcheck")));
    assert_eq!(
        d.sentence,
        "thread 255 of block 3 writes `out[1024]`, one element past the end of `out` (1024 \
         floats): the bounds test lets the last thread through"
    );
    let shown = d.to_string();
    assert!(shown.starts_with(&format!(
        "memcheck: out-of-bounds write at {CHAPTER}:{}\n    out[i + 1] = in[i];",
        marked("oob_tail", "memcheck")
    )));
}

#[test]
fn a_fault_in_a_helper_is_placed_at_the_kernels_line_that_called_it() {
    let text = handmade("memcheck_wrapped_frames.log");
    let report = parse(&text);
    assert_eq!(report.findings.len(), 3, "{report:#?}");
    let first = &report.findings[0];
    // The `in FILE:LINE` wrapped onto its own line belongs to the `at` line before it.
    let site = first.site.as_ref().expect("site");
    assert_eq!(
        (site.function.as_deref(), site.file.as_deref(), site.line),
        (
            Some("load_left(const float *, int)"),
            Some("stencil_helpers.cuh"),
            Some(21)
        )
    );
    assert_eq!(first.frames.len(), 1);
    assert_eq!(first.block, Some([0, 0, 0]));
    let stencil = KernelSource {
        name: "stencil_left".into(),
        source: (1..=12).map(|i| format!("line {i}\n")).collect(),
        origin: SourceLocation {
            file: CHAPTER.into(),
            line: 100,
        },
        language: Default::default(),
    };
    let kernels = [stencil];
    let buffers = buffers(&text);
    let context = Context {
        sources: Sources { kernels: &kernels },
        buffers: &buffers,
        launch: launch([4, 1, 1], [256, 1, 1]),
    };
    let found = diagnose(Tool::Memcheck, &report, &context);
    assert_eq!(found.len(), 1);
    assert_eq!(line(&found[0]), Some(108));
    assert_eq!(
        found[0].sentence,
        "thread 0 of block 0 reads `in[-1]`, one element before the start of `in` (1024 \
         floats); 2 other threads fault at this line too: an index goes below zero (a \
         neighbour at the left edge needs a bounds test too)"
    );
}

#[test]
fn a_misaligned_vector_access_names_its_byte_and_the_rule() {
    let text = handmade("memcheck_misaligned.log");
    let (report, found) = diagnoses(Tool::Memcheck, &text, launch([1, 1, 1], [256, 1, 1]));
    assert_eq!((report.errors, report.not_printed), (Some(254), Some(252)));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].kind, Kind::Misaligned(Access::Read));
    assert_eq!(
        line(&found[0]),
        Some(marked("misaligned_vector", "memcheck"))
    );
    assert!(
        found[0]
            .sentence
            .starts_with("thread 0 of block 0 reads 16 bytes at byte 4 of `in`, an address that is not a multiple of 16; 1 other thread"),
        "{}",
        found[0].sentence
    );
}

#[test]
fn a_race_names_the_write_and_the_read_at_their_lines() {
    let text = handmade("racecheck_analysis.log");
    let (report, found) = diagnoses(Tool::Racecheck, &text, launch([2, 2, 1], [32, 8, 1]));
    assert_eq!(report.errors, Some(1));
    let Problem::Race { severity, accesses } = &report.findings[0].problem else {
        panic!("{report:?}");
    };
    assert_eq!(*severity, Severity::Error);
    assert_eq!(
        accesses
            .iter()
            .map(|a| (a.access, a.site.line, a.hazards))
            .collect::<Vec<_>>(),
        [
            (Access::Write, Some(12), None),
            (Access::Read, Some(18), Some(3072))
        ]
    );
    let (write, read) = (
        marked("shared_race", "the write"),
        marked("shared_race", "the read"),
    );
    assert_eq!(line(&found[0]), Some(write));
    assert_eq!(
        found[0].sentence,
        format!(
            "the write at line {write} and the read at line {read} reach the same shared memory \
             with no barrier between them (3,072 hazards), so a thread can read a slot before \
             another has written it: put a `__syncthreads()` between the writes and the reads"
        )
    );
}

#[test]
fn hazards_name_the_threads_and_their_block() {
    let text = handmade("racecheck_hazard.log");
    let (report, found) = diagnoses(Tool::Racecheck, &text, launch([2, 2, 1], [32, 8, 1]));
    assert_eq!(report.findings.len(), 3);
    let Problem::Hazard {
        severity,
        hazard,
        offset,
        first,
        second,
    } = &report.findings[0].problem
    else {
        panic!("{report:?}");
    };
    assert_eq!(
        (*severity, *hazard, *offset),
        (Severity::Error, HazardKind::ReadAfterWrite, 0x84)
    );
    assert_eq!(report.findings[0].block, Some([1, 0, 0]));
    assert_eq!(
        first.as_ref().map(|a| (a.access, a.thread)),
        Some((Access::Write, [1, 1, 0]))
    );
    assert_eq!(
        second.as_ref().map(|a| (a.access, a.thread)),
        Some((Access::Read, [1, 0, 0]))
    );
    assert!(matches!(
        report.findings[2].problem,
        Problem::Hazard {
            severity: Severity::Warning,
            ..
        }
    ));
    // The two hazards of the probe are one diagnosis; the third is in a file of no kernel.
    assert_eq!(found.len(), 2);
    assert_eq!(found[0].records, 2);
    let (write, read) = (
        marked("shared_race", "the write"),
        marked("shared_race", "the read"),
    );
    assert_eq!(
        found[0].sentence,
        format!(
            "thread (1,0) of block (1,0) reads shared byte 0x84 at line {read} before thread \
             (1,1) has written it at line {write} (1 more hazard like it): a `__syncthreads()` \
             is missing between the write and the read"
        )
    );
    assert_eq!(found[1].at, None);
    assert!(
        found[1].sentence.contains("warp_error.cu:56"),
        "{}",
        found[1].sentence
    );
}

#[test]
fn a_halo_never_loaded_is_a_read_of_shared_memory_nobody_wrote() {
    let text = handmade("initcheck_shared_halo.log");
    let (report, found) = diagnoses(Tool::Initcheck, &text, launch([4, 1, 1], [256, 1, 1]));
    assert_eq!(report.findings.len(), 4);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].kind, Kind::UninitializedShared);
    assert_eq!(line(&found[0]), Some(marked("halo_unloaded", "initcheck")));
    assert_eq!(
        found[0].sentence,
        "thread 0 of block 0 reads shared memory (byte 0) that no thread of its block wrote (3 \
         more reads like it): part of the tile (its halo, or the slots of threads that returned \
         early) is never loaded"
    );
}

#[test]
fn an_output_read_before_it_is_written() {
    let text = handmade("initcheck_global.log");
    let (_, found) = diagnoses(Tool::Initcheck, &text, launch([4, 1, 1], [256, 1, 1]));
    assert_eq!(found[0].kind, Kind::UninitializedGlobal);
    assert_eq!(
        line(&found[0]),
        Some(marked("uninit_accumulate", "initcheck"))
    );
    assert!(
        found[0].sentence.starts_with(
            "thread 0 of block 0 reads `out[0]`, which nothing had written (1 more read like it)"
        ),
        "{}",
        found[0].sentence
    );
}

#[test]
fn a_barrier_in_a_branch() {
    let text = handmade("synccheck_divergent.log");
    let (report, found) = diagnoses(Tool::Synccheck, &text, launch([2, 1, 1], [64, 1, 1]));
    assert_eq!((report.errors, report.not_printed), (Some(32), Some(30)));
    assert_eq!(found[0].kind, Kind::DivergentBarrier);
    assert_eq!(
        line(&found[0]),
        Some(marked("divergent_barrier", "synccheck"))
    );
    assert!(
        found[0]
            .sentence
            .starts_with("thread 0 of block 0 (and 1 more thread) waits at a barrier that other threads of its block skip"),
        "{}",
        found[0].sentence
    );
}

#[test]
fn a_clean_run_a_refusal_and_a_program_without_cuda() {
    let clean = parse(&handmade("clean.log"));
    assert!(clean.banner && clean.findings.is_empty() && clean.tool_errors.is_empty());
    assert_eq!(clean.errors, Some(0));
    assert_eq!(
        tool::classify(
            Tool::Memcheck,
            "exit status: 0",
            &handmade("clean.log"),
            "",
            ""
        ),
        Ok(clean)
    );
    assert_eq!(
        tool::classify(
            Tool::Memcheck,
            "exit status: 1",
            &handmade("refused.log"),
            "",
            ""
        ),
        Err(SanitizerError::Refused(
            "Error: Device not supported".into()
        ))
    );
    let no_cuda = tool::classify(
        Tool::Memcheck,
        "exit status: 1",
        &handmade("no_cuda_call.log"),
        "",
        "",
    );
    let Err(SanitizerError::Failed { tail, .. }) = &no_cuda else {
        panic!("{no_cuda:?}");
    };
    assert!(
        tail.starts_with("Error: Target application terminated before first instrumented API call"),
        "{tail}"
    );
    // Output that is not the tool's at all.
    assert!(matches!(
        tool::classify(
            Tool::Memcheck,
            "exit status: 127",
            "",
            "sh: compute-sanitizer: not found",
            ""
        ),
        Err(SanitizerError::Refused(_) | SanitizerError::Failed { .. })
    ));
    assert!(matches!(
        tool::classify(
            Tool::Memcheck,
            "exit status: 2",
            "",
            "",
            "Segmentation fault"
        ),
        Err(SanitizerError::Failed { .. })
    ));
}

/// What each capture run must show once the captured fixtures are committed
/// (`runner/tests/fixtures/sanitizer/captured/`, the capture script's folder): the kind and
/// the probe line marked for it, `None` for a run that should find nothing; runs not listed
/// must only parse.
fn expected_capture(id: &str) -> Option<Option<(Kind, &'static str, &'static str)>> {
    use Kind::*;
    let oob = Some((OutOfBounds(Access::Write), "oob_tail", "memcheck"));
    Some(match id {
        "01" | "13" | "16" | "19" | "20" | "21" | "22" => None,
        "02" | "03" | "09" | "10" | "23" | "24" | "33" | "37" => oob,
        "35" => Some((OutOfBounds(Access::Write), "oob_neighbour", "memcheck")),
        // Either side of the race may be printed first.
        "04" | "11" | "12" | "25" | "28" => Some((SharedRace, "shared_race", "racecheck")),
        "06" | "27" | "29" => Some((DivergentBarrier, "divergent_barrier", "synccheck")),
        "07" | "32" => Some((UninitializedGlobal, "uninit_accumulate", "initcheck")),
        "08" | "31" => Some((Misaligned(Access::Read), "misaligned_vector", "memcheck")),
        _ => return None,
    })
}

/// The capture runs that asked initcheck for `--initcheck-address-space`, which the
/// compute-sanitizer of CUDA 13.0 (2025.3.1) rejects as an unrecognised option.
const REFUSED_OPTION_RUNS: [&str; 6] = ["05", "14", "18", "20", "26", "30"];

#[test]
fn captured_runs_read_as_the_probes_meant() {
    let dir = Path::new(FIXTURES).join("captured");
    let Ok(index) = std::fs::read_to_string(dir.join("runs.tsv")) else {
        eprintln!(
            "skipped: no captured sanitizer fixtures in {} (run scripts/capture-sanitizer-fixtures.sh on a GPU)",
            dir.display()
        );
        return;
    };
    let kernels = probes();
    for row in index.lines().skip(1) {
        let fields: Vec<&str> = row.split('\t').collect();
        let [id, _build, tool, _kernel, _exit, _seconds, state, ..] = fields[..] else {
            panic!("runs.tsv: bad row {row:?}");
        };
        if state != "ran" {
            continue;
        }
        let log = std::fs::read_to_string(dir.join(format!("runs/{id}.log"))).unwrap_or_default();
        let stdout =
            std::fs::read_to_string(dir.join(format!("runs/{id}.stdout"))).unwrap_or_default();
        let tool = Tool::ALL
            .into_iter()
            .find(|t| t.name() == tool)
            .unwrap_or_else(|| panic!("run {id}: tool {tool}"));
        let stderr =
            std::fs::read_to_string(dir.join(format!("runs/{id}.stderr"))).unwrap_or_default();
        let classified = tool::classify(tool, "?", &log, &stdout, &stderr);
        // CUDA 13.0's initcheck has no shared-memory mode: the runs that asked for it show
        // the tool refusing the option, not a finding.
        if REFUSED_OPTION_RUNS.contains(&id) {
            let Err(SanitizerError::Failed { tail, .. }) = &classified else {
                panic!("run {id}: {classified:?}");
            };
            assert!(tail.contains("unrecognised option"), "run {id}: {tail}");
            continue;
        }
        let report = classified.unwrap_or_else(|e| panic!("run {id}: {e}"));
        let buffers = buffers(&stdout);
        let context = Context {
            sources: Sources { kernels: &kernels },
            buffers: &buffers,
            launch: None,
        };
        let found = diagnose(tool, &report, &context);
        match expected_capture(id) {
            Some(None) => assert!(found.is_empty(), "run {id}: {found:#?}"),
            Some(Some((kind, kernel, marker))) => {
                let first = found
                    .first()
                    .unwrap_or_else(|| panic!("run {id}: nothing found"));
                assert_eq!(first.kind, kind, "run {id}");
                let at = line(first).unwrap_or_else(|| panic!("run {id}: not placed: {first}"));
                assert!(
                    marked_all(kernel, marker).contains(&at),
                    "run {id}: {first}"
                );
            }
            None => {}
        }
    }
}

#[test]
fn analyses_a_captured_poisoned_output_where_there_is_one() {
    // The halo probe's plain run: its dumped input and output (a 3-point average, zero past
    // both ends of the array).
    let plain = Path::new(FIXTURES).join("captured/plain");
    let (Ok(input), Ok(actual)) = (
        std::fs::read(plain.join("halo_unloaded.in.f32")),
        std::fs::read(plain.join("halo_unloaded.out.f32")),
    ) else {
        eprintln!(
            "skipped: no captured plain run of halo_unloaded in {}",
            plain.display()
        );
        return;
    };
    let x: Vec<f32> = input
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let at = |i: isize| {
        usize::try_from(i)
            .ok()
            .and_then(|i| x.get(i))
            .copied()
            .unwrap_or(0.0)
    };
    let expected: Vec<u8> = (0..x.len() as isize)
        .flat_map(|i| ((at(i - 1) + at(i) + at(i + 1)) / 3.0).to_le_bytes())
        .collect();
    let close = Comparison::close(1e-5, 1e-6, 1);
    let shape = OutputShape::infer(x.len(), [4, 1, 1], [256, 1, 1]);
    let pattern = analyse(&expected, &actual, ElemType::F32, &close, &shape);
    eprintln!("halo_unloaded, plain: {}", pattern.describe());
    if pattern.wrong > 0 {
        let on_edge = pattern.tiles.as_ref().is_some_and(|t| t.all_on_edge);
        assert!(on_edge, "{}", pattern.describe());
    }
}

#[cfg(unix)]
fn write_script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}")).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[cfg(unix)]
#[test]
fn finds_the_sanitizer_by_override_then_path_then_the_toolkit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b, home) = (
        dir.path().join("a"),
        dir.path().join("b"),
        dir.path().join("cuda"),
    );
    for d in [&a, &b, &home.join("bin")] {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    write_script(&b.join("compute-sanitizer"), "");
    write_script(&home.join("bin/compute-sanitizer"), "");
    std::fs::write(a.join("compute-sanitizer"), "").expect("not executable");
    let path = std::env::join_paths([&a, &b]).expect("join");
    let in_home = home.join("bin/compute-sanitizer");
    let fallback = [dir.path().join("nowhere")];
    assert_eq!(
        tool::find_in(None, Some(path.clone()), Some(in_home.clone()), &fallback),
        Some(b.join("compute-sanitizer"))
    );
    assert_eq!(
        tool::find_in(
            None,
            Some(a.clone().into_os_string()),
            Some(in_home.clone()),
            &fallback
        ),
        Some(in_home.clone())
    );
    assert_eq!(tool::find_in(None, None, None, &fallback), None);
    // An override that points nowhere is not replaced by another; an empty one is unset.
    let missing = Some(dir.path().join("missing").into_os_string());
    assert_eq!(
        tool::find_in(missing, Some(path.clone()), None, &fallback),
        None
    );
    assert_eq!(
        tool::find_in(Some(OsString::new()), Some(path), None, &fallback),
        Some(b.join("compute-sanitizer"))
    );
}

#[test]
fn the_command_line_names_the_tool_the_kernel_and_the_child() {
    let args = |tool, shared_memory| -> Vec<String> {
        let check = Check {
            tool,
            kernel: "oob_tail",
            shared_memory,
            log_file: Path::new("/tmp/run.log"),
        };
        let child_args = [OsString::from("__measure-lab")];
        let cmd = command(
            Path::new("compute-sanitizer"),
            &check,
            Path::new("kernelbook"),
            &child_args,
        );
        cmd.get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    };
    let memcheck = args(Tool::Memcheck, false).join(" ");
    assert!(
        memcheck.starts_with(
            "--tool memcheck --log-file /tmp/run.log --print-limit 64 --error-exitcode 86 \
             --show-backtrace device --launch-timeout 60 --kernel-name kne=oob_tail --launch-count 1"
        ),
        "{memcheck}"
    );
    assert!(
        memcheck.ends_with("--padding 4096 -- kernelbook __measure-lab"),
        "{memcheck}"
    );
    assert!(
        args(Tool::Racecheck, true)
            .join(" ")
            .contains("--racecheck-report all --")
    );
    // The option that would check shared memory too is refused by the CUDA 13.0 tool.
    for shared in [true, false] {
        assert!(
            !args(Tool::Initcheck, shared)
                .join(" ")
                .contains("address-space")
        );
    }
}

/// A stand-in for compute-sanitizer: writes `$FIXTURE` to its `--log-file`, then runs the
/// program after `--` with its stdin.
#[cfg(unix)]
fn stand_in(dir: &Path) -> PathBuf {
    let path = dir.join("compute-sanitizer");
    write_script(
        &path,
        "log=\nwhile [ $# -gt 0 ]; do case \"$1\" in --log-file) log=$2; shift 2;; --) shift; break;; *) shift;; esac; done\n\
         cat \"$FIXTURE\" > \"$log\"\nexec \"$@\"\n",
    );
    path
}

#[cfg(unix)]
fn checked(dir: &Path, fixture: &str, child: &str) -> (Command, PathBuf) {
    let log = dir.join(format!("{fixture}.out"));
    let check = Check {
        tool: Tool::Memcheck,
        kernel: "oob_tail",
        shared_memory: false,
        log_file: &log,
    };
    let child_args = ["-c".into(), child.into()];
    let mut cmd = command(&stand_in(dir), &check, Path::new("sh"), &child_args);
    cmd.env("FIXTURE", format!("{FIXTURES}/handmade/{fixture}"));
    (cmd, log)
}

#[cfg(unix)]
#[test]
fn runs_the_tool_with_the_childs_input_and_reads_its_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The child checks that it got the request, as the measuring child reads its plan.
    let child =
        "read request; [ \"$request\" = plan ] || exit 3; echo 'probe: printed by the child'";
    let (cmd, log) = checked(dir.path(), "memcheck_oob_tail.log", child);
    let report = run(
        cmd,
        Tool::Memcheck,
        &log,
        Some(b"plan\n"),
        Duration::from_secs(30),
    )
    .expect("report");
    assert_eq!(report.findings.len(), 1);
    assert_eq!(report.errors, Some(3));
    let (cmd, log) = checked(dir.path(), "refused.log", "exit 1");
    assert_eq!(
        run(cmd, Tool::Memcheck, &log, None, Duration::from_secs(30)),
        Err(SanitizerError::Refused(
            "Error: Device not supported".into()
        ))
    );
    let missing = Path::new("/nonexistent/kernelbook-test/compute-sanitizer");
    let cmd = command(
        missing,
        &Check {
            tool: Tool::Memcheck,
            kernel: "k",
            shared_memory: false,
            log_file: &log,
        },
        Path::new("sh"),
        &[],
    );
    let err = run(cmd, Tool::Memcheck, &log, None, Duration::from_secs(5)).expect_err("missing");
    assert_eq!(err, SanitizerError::Missing(Some(missing.into())));
    assert!(err.to_string().contains(tool::SANITIZER_ENV), "{err}");
}

#[cfg(target_os = "linux")]
#[test]
fn a_hanging_tool_is_stopped_with_the_program_it_checks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("pid");
    let child = format!("sleep 60 & echo $! > '{}'; wait", pid_file.display());
    let (cmd, log) = checked(dir.path(), "clean.log", &child);
    let started = Instant::now();
    let err = run(cmd, Tool::Synccheck, &log, None, Duration::from_millis(500)).expect_err("hangs");
    assert_eq!(
        err,
        SanitizerError::Timeout {
            tool: Tool::Synccheck,
            limit: Duration::from_millis(500)
        }
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    let pid = std::fs::read_to_string(&pid_file).expect("pid file");
    let stat = format!("/proc/{}/stat", pid.trim());
    let deadline = Instant::now() + Duration::from_secs(5);
    while std::fs::read_to_string(&stat).is_ok_and(|s| {
        s.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    }) {
        assert!(Instant::now() < deadline, "the checked program survived");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A session's stand-in runs: each tool's report (by fixture) or error.
fn session(
    tools: &[Tool],
    outcome: impl Fn(Tool) -> Result<Report, SanitizerError>,
    output: Option<&OutputPattern>,
) -> (Verdict, Vec<Tool>) {
    let kernels = probes();
    let text = handmade("memcheck_oob_tail.log");
    let buffers = buffers(&text);
    let context = Context {
        sources: Sources { kernels: &kernels },
        buffers: &buffers,
        launch: launch([4, 1, 1], [256, 1, 1]),
    };
    let mut ran = Vec::new();
    let verdict = sanitize(
        tools,
        |tool| {
            ran.push(tool);
            (outcome(tool).map(Ran::from), Duration::from_millis(1500))
        },
        &context,
        output,
    );
    (verdict, ran)
}

#[test]
fn a_session_stops_at_the_first_tool_that_finds_something() {
    let tools = [Tool::Racecheck, Tool::Memcheck, Tool::Initcheck];
    let (verdict, ran) = session(
        &tools,
        |tool| match tool {
            Tool::Memcheck => Ok(parse(&handmade("memcheck_oob_tail.log"))),
            _ => Ok(parse(&handmade("clean.log"))),
        },
        None,
    );
    assert_eq!(ran, [Tool::Racecheck, Tool::Memcheck]);
    let Verdict::Found { diagnoses, runs } = &verdict else {
        panic!("{verdict:?}");
    };
    assert_eq!(diagnoses.len(), 1);
    assert_eq!(runs[0].result, RunResult::Clean);
    assert_eq!(runs[1].result, RunResult::Found { records: 1 });
    assert!((verdict.seconds() - 3.0).abs() < 1e-9);
    let lines = verdict.lines();
    assert!(
        lines[0].starts_with("memcheck: out-of-bounds write at"),
        "{lines:?}"
    );
    assert_eq!(
        lines.last().map(String::as_str),
        Some("(compute-sanitizer: racecheck 1.5 s, memcheck 1.5 s)")
    );
}

#[test]
fn a_refusal_is_said_once_and_a_hang_does_not_stop_the_others() {
    let (verdict, ran) = session(
        &Tool::ALL,
        |_| {
            Err(SanitizerError::Refused(
                "Error: Device not supported".into(),
            ))
        },
        None,
    );
    assert_eq!(ran, [Tool::Memcheck]);
    assert_eq!(
        verdict.lines(),
        [
            "No sanitizer check: compute-sanitizer cannot check kernels on this machine: Error: Device not supported."
        ]
    );
    let (verdict, _) = session(&Tool::ALL, |_| Err(SanitizerError::Missing(None)), None);
    assert!(matches!(verdict, Verdict::Unavailable { .. }));

    // synccheck hangs; the others run and find nothing; the output speaks for itself.
    let expected: Vec<u8> = (0..1024u32)
        .flat_map(|i| (i as f32).to_le_bytes())
        .collect();
    let mut actual = expected.clone();
    for block in 0..4 {
        let i = block * 256 + 255;
        actual[i * 4..i * 4 + 4].copy_from_slice(&[0xFF; 4]);
    }
    let shape = OutputShape::infer(1024, [4, 1, 1], [256, 1, 1]);
    let pattern = analyse(
        &expected,
        &actual,
        ElemType::F32,
        &Comparison::EXACT,
        &shape,
    );
    let (verdict, ran) = session(
        &[
            Tool::Synccheck,
            Tool::Memcheck,
            Tool::Racecheck,
            Tool::Initcheck,
        ],
        |tool| match tool {
            Tool::Synccheck => Err(SanitizerError::Timeout {
                tool,
                limit: Duration::from_secs(30),
            }),
            _ => Ok(parse(&handmade("clean.log"))),
        },
        Some(&pattern),
    );
    assert_eq!(ran.len(), 4);
    assert_eq!(
        verdict.lines(),
        [
            "compute-sanitizer: memcheck, racecheck and initcheck ran and found nothing; \
             compute-sanitizer (synccheck) did not finish within 30s and was stopped (6.0 s).",
            "The output: 4 of 1024 elements are wrong; every one is the last of its 256-thread \
             block, in every one of the 4 blocks; they still hold the poison: no thread wrote them."
        ]
    );
}

#[test]
fn a_verdict_round_trips_through_json() {
    let (verdict, _) = session(
        &[Tool::Memcheck],
        |_| Ok(parse(&handmade("memcheck_oob_tail.log"))),
        None,
    );
    let json = serde_json::to_string(&verdict).expect("json");
    assert!(json.contains("\"sanitizer\":\"found\""), "{json}");
    assert!(
        json.contains("\"kind\":{\"out_of_bounds\":\"write\"}"),
        "{json}"
    );
    let back: Verdict = serde_json::from_str(&json).expect("parse");
    assert_eq!(back, verdict);
}
