//! `kernelbook slurm` end to end on a real Slurm: the fixture book `tests/gpus-book` (two array
//! tasks asking for one GPU of type `fake` each) submitted to the cluster this machine runs
//! (`scripts/slurm-test-cluster` starts a one-node one with two such GPUs), measured on the fake
//! device, which sees the GPU Slurm gives each task (`CUDA_VISIBLE_DEVICES`). The array runs,
//! the merge job builds the book, and its "GPUs compared" chapter has a column per task.
//!
//! Without `sbatch` or a cluster that answers, the test says so and passes, unless
//! `KERNELBOOK_REQUIRE_SLURM=1` (CI) makes that a failure.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use support::{gpus_book, text};

/// How long the jobs may take: two tasks of a few seconds each, then a book build.
const JOBS_LIMIT: Duration = Duration::from_secs(300);

/// The one-node test cluster runs one test's jobs at a time: a test waits for the others'.
static CLUSTER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The cluster to this test alone while the guard lives.
fn cluster() -> std::sync::MutexGuard<'static, ()> {
    CLUSTER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Whether a Slurm cluster answers here; if not, says why (or fails, where CI requires one).
fn cluster_or_skip() -> bool {
    let answers = Command::new("timeout")
        .args(["20", "sinfo", "--noheader", "--format=%t"])
        .output()
        .map(|out| (out.status.success(), text(&out.stdout), text(&out.stderr)));
    let why = match answers {
        Err(err) => format!("sinfo cannot run ({err}): Slurm is not installed"),
        Ok((false, _, stderr)) => format!("no Slurm cluster answers: {}", stderr.trim()),
        Ok((true, states, _))
            if !states
                .lines()
                .any(|s| s.starts_with("idle") || s.starts_with("mix")) =>
        {
            format!("no Slurm node is idle: {}", states.trim())
        }
        Ok(_) => return true,
    };
    assert!(
        std::env::var_os("KERNELBOOK_REQUIRE_SLURM").is_none_or(|v| v != "1"),
        "KERNELBOOK_REQUIRE_SLURM=1 and {why}; start one with scripts/slurm-test-cluster"
    );
    eprintln!("SKIPPED (needs a Slurm cluster; scripts/slurm-test-cluster starts one): {why}");
    false
}

/// The job ids `kernelbook slurm` wrote to the run's jobs.json.
fn job_ids(run: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(run.join("jobs.json")).expect("jobs.json");
    let jobs: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let mut ids: Vec<String> = jobs["arrays"]
        .as_array()
        .expect("arrays")
        .iter()
        .map(|id| id.to_string())
        .collect();
    ids.push(jobs["merge"].to_string());
    ids
}

/// Whether any of `ids` is still queued or running.
fn still_queued(ids: &[String]) -> bool {
    Command::new("timeout")
        .args(["20", "squeue", "--noheader", "--format=%i", "--jobs"])
        .arg(ids.join(","))
        .output()
        .is_ok_and(|out| !text(&out.stdout).trim().is_empty())
}

/// Every log the jobs wrote, for a failure's message.
fn logs(run: &Path) -> String {
    let mut all = String::new();
    if let Ok(entries) = std::fs::read_dir(run.join("logs")) {
        for entry in entries.flatten() {
            let body = std::fs::read_to_string(entry.path()).unwrap_or_default();
            all.push_str(&format!("==> {} <==\n{body}\n", entry.path().display()));
        }
    }
    all
}

/// Waits for the merge job's book, or for the jobs to leave the queue without it.
fn wait_for_book(run: &Path, ids: &[String]) -> Result<(), String> {
    let page = run.join("book/gpus-compared.html");
    let deadline = Instant::now() + JOBS_LIMIT;
    while Instant::now() < deadline {
        if page.exists() && !still_queued(ids) {
            return Ok(());
        }
        if !page.exists() && !still_queued(ids) {
            // The queue may lag the merge job's last write by a moment.
            std::thread::sleep(Duration::from_secs(2));
            return match page.exists() {
                true => Ok(()),
                false => Err(format!("the jobs ended without the book\n{}", logs(run))),
            };
        }
        std::thread::sleep(Duration::from_secs(2));
    }
    let _ = Command::new("scancel").args(ids).status();
    Err(format!(
        "the jobs did not finish in {} s\n{}",
        JOBS_LIMIT.as_secs(),
        logs(run)
    ))
}

/// `kernelbook slurm --out RUN ARGS…` on the fixture book, measuring on the fake device.
fn slurm(root: &Path, run: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_kernelbook"))
        .arg("--root")
        .arg(root)
        .args(["slurm", "--out"])
        .arg(run)
        .args(args)
        .env("KERNELBOOK_DEVICE", "fake")
        .env("KERNELBOOK_FAKE_DEVICES", "2")
        .env_remove("CUDA_VISIBLE_DEVICES")
        .env_remove("KERNELBOOK_FAKE_BUSY")
        .output()
        .expect("kernelbook runs")
}

#[test]
fn the_labs_run_as_a_job_array_and_the_merge_job_builds_the_comparison() {
    let _cluster = cluster();
    if !cluster_or_skip() {
        return;
    }
    let book = gpus_book();
    let run = book.path().join("run");
    // The test cluster is one node with two GPUs: the two tasks share it, side by side (a GPU
    // each), instead of taking it in turn, as recording tasks do by default.
    let submitted = slurm(book.path(), &run, &["--no-exclusive"]);
    assert!(submitted.status.success(), "{}", text(&submitted.stderr));
    let stdout = text(&submitted.stdout);
    assert!(stdout.contains("submitted job array"), "{stdout}");
    assert!(stdout.contains("--dependency=afterany:"), "{stdout}");
    let ids = job_ids(&run);
    wait_for_book(&run, &ids).unwrap_or_else(|why| panic!("{why}"));

    // Slurm ran each task (its log is named from the array job's id and the task's index) and
    // gave each its own GPU, so each recorded into a GPU folder of its own.
    let array = &ids[0];
    for index in 0..2 {
        let log = std::fs::read_to_string(run.join(format!("logs/labs-{array}_{index}.out")))
            .unwrap_or_else(|e| panic!("task {index}'s log: {e}\n{}", logs(&run)));
        assert!(
            log.contains(&format!("array job {array} index {index}")),
            "{log}"
        );
    }
    let mut folders: Vec<String> = ["first", "second"]
        .iter()
        .flat_map(|task| std::fs::read_dir(run.join("results").join(task)).expect("results"))
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    folders.sort();
    assert_eq!(
        folders,
        ["fake-gpu-fake", "fake-gpu-fake-1"],
        "a GPU per task"
    );

    // The merge job built the book from both, a column per task's GPU.
    let html = std::fs::read_to_string(run.join("book/gpus-compared.html")).expect("the page");
    for folder in &folders {
        assert!(
            html.contains(&format!("<td><code>{folder}</code></td><td>recorded</td>")),
            "{folder} in the GPUs' table"
        );
    }
    assert_eq!(
        html.matches("class=\"kernelbook-gpu-head\"").count(),
        2 * 2,
        "two labs, a column group per GPU"
    );
    let merge_log = std::fs::read_to_string(run.join(format!("logs/merge-{}.out", ids[1])))
        .expect("the merge job's log");
    assert!(
        merge_log.contains("merged 4 recordings of 2 GPUs"),
        "{merge_log}"
    );
}

/// Waits until none of `ids` is queued or running.
fn wait_for_queue(ids: &[String]) -> Result<(), String> {
    let deadline = Instant::now() + JOBS_LIMIT;
    while still_queued(ids) {
        if Instant::now() > deadline {
            let _ = Command::new("scancel").args(ids).status();
            return Err(format!(
                "jobs {ids:?} still queued after {} s",
                JOBS_LIMIT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_secs(2));
    }
    Ok(())
}

#[test]
fn a_failed_task_is_reported_and_the_others_still_make_the_book() {
    let _cluster = cluster();
    if !cluster_or_skip() {
        return;
    }
    let book = gpus_book();
    let run = book.path().join("run");
    // The second task's set-up line fails: the merge job (afterany) runs all the same.
    let submitted = slurm(
        book.path(),
        &run,
        &["--setup", r#"test "${task:-}" != second"#],
    );
    assert!(submitted.status.success(), "{}", text(&submitted.stderr));
    let ids = job_ids(&run);
    wait_for_queue(&ids).unwrap_or_else(|why| panic!("{why}\n{}", logs(&run)));
    let script = std::fs::read_to_string(run.join("labs-0.sh")).expect("the array's script");
    assert!(
        script.lines().any(|l| l == "#SBATCH --exclusive"),
        "{script}"
    );
    let name = run
        .file_name()
        .expect("a name")
        .to_string_lossy()
        .into_owned();
    assert!(
        script
            .lines()
            .any(|l| l == format!("#SBATCH --job-name=kernelbook-labs-{name}")),
        "a job name of the run's own: {script}"
    );
    let failed = std::fs::read_to_string(run.join("failed-tasks.txt"))
        .unwrap_or_else(|e| panic!("failed-tasks.txt: {e}\n{}", logs(&run)));
    assert_eq!(failed.trim(), "second (exit 1)");
    let merge_log = std::fs::read_to_string(run.join(format!("logs/merge-{}.out", ids[1])))
        .unwrap_or_else(|e| panic!("the merge job's log: {e}\n{}", logs(&run)));
    assert!(
        merge_log.contains("1 task(s) failed, left out of the book: second (exit 1)"),
        "{merge_log}"
    );
    assert!(
        merge_log.contains("merged 2 recordings of 1 GPU"),
        "{merge_log}"
    );
    let html = std::fs::read_to_string(run.join("book/gpus-compared.html"))
        .unwrap_or_else(|e| panic!("the book: {e}\n{}", logs(&run)));
    assert!(html.contains("<td><code>fake-gpu-fake</code></td><td>recorded</td>"));
}

#[test]
fn a_submission_the_cluster_refuses_cancels_the_arrays_already_submitted() {
    let _cluster = cluster();
    if !cluster_or_skip() {
        return;
    }
    let book = gpus_book();
    let run = book.path().join("run");
    let refused = slurm(
        book.path(),
        &run,
        &["--merge-partition", "no-such-partition"],
    );
    assert!(
        !refused.status.success(),
        "the merge job cannot be submitted"
    );
    let stderr = text(&refused.stderr);
    assert!(
        stderr.contains("cancelled the jobs already submitted"),
        "{stderr}"
    );
    let stdout = text(&refused.stdout);
    let array = stdout
        .lines()
        .find_map(|l| l.strip_prefix("submitted job array "))
        .and_then(|rest| rest.split(':').next())
        .unwrap_or_else(|| panic!("the array was submitted first: {stdout}"))
        .to_string();
    wait_for_queue(std::slice::from_ref(&array)).unwrap_or_else(|why| panic!("{why}"));
    assert!(!run.join("jobs.json").exists(), "no run to follow");
    assert!(
        !run.join("results/first").exists()
            || std::fs::read_dir(run.join("results/first"))
                .map(|d| d.count())
                .unwrap_or(0)
                == 0,
        "the cancelled array recorded nothing"
    );
}

/// A stand-in `sbatch` that answers job ids for its first `ok` calls and then refuses, and a
/// stand-in `scancel` that writes down what it was asked to cancel.
fn stand_ins(dir: &Path, ok: usize) -> (std::path::PathBuf, std::path::PathBuf) {
    let sbatch = dir.join("sbatch");
    let scancel = dir.join("scancel");
    let calls = dir.join("calls");
    std::fs::write(
        &sbatch,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{calls}'\nn=$(wc -l < '{calls}')\nif [ \"$n\" -le {ok} ]; then echo $((100 + n)); exit 0; fi\necho 'sbatch: error: invalid partition' >&2\nexit 1\n",
            calls = calls.display()
        ),
    )
    .expect("write sbatch");
    std::fs::write(
        &scancel,
        format!(
            "#!/bin/sh\necho \"$*\" > '{}'\n",
            dir.join("cancelled").display()
        ),
    )
    .expect("write scancel");
    for program in [&sbatch, &scancel] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(program, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    (sbatch, scancel)
}

#[test]
fn a_failed_submission_cancels_what_it_submitted() {
    let book = gpus_book();
    let bin = tempfile::tempdir().expect("a temp dir");
    // Two GPU types: two arrays, then the merge job. The second array is refused.
    let (sbatch, scancel) = stand_ins(bin.path(), 1);
    let run = book.path().join("run");
    let out = slurm(
        book.path(),
        &run,
        &[
            "--gres",
            "gpu:fake:1",
            "--gres",
            "gpu:other:1",
            "--sbatch",
            &sbatch.to_string_lossy(),
            "--scancel",
            &scancel.to_string_lossy(),
        ],
    );
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("sbatch: error: invalid partition"),
        "{stderr}"
    );
    assert!(
        stderr.contains("cancelled the jobs already submitted (101)"),
        "{stderr}"
    );
    let cancelled = std::fs::read_to_string(bin.path().join("cancelled")).expect("scancel ran");
    assert_eq!(cancelled.trim(), "101");
    assert!(!run.join("jobs.json").exists());
    // The merge job refused: both arrays cancelled.
    let bin = tempfile::tempdir().expect("a temp dir");
    let (sbatch, scancel) = stand_ins(bin.path(), 2);
    let out = slurm(
        book.path(),
        &book.path().join("run-2"),
        &[
            "--gres",
            "gpu:fake:1",
            "--gres",
            "gpu:other:1",
            "--sbatch",
            &sbatch.to_string_lossy(),
            "--scancel",
            &scancel.to_string_lossy(),
        ],
    );
    assert!(!out.status.success());
    let cancelled = std::fs::read_to_string(bin.path().join("cancelled")).expect("scancel ran");
    assert_eq!(cancelled.trim(), "101 102");
    let calls = std::fs::read_to_string(bin.path().join("calls")).expect("calls");
    assert!(
        calls
            .lines()
            .nth(2)
            .is_some_and(|l| l.contains("--dependency=afterany:101:102")),
        "{calls}"
    );
    // Nothing submitted yet: nothing to cancel, sbatch's own message.
    let bin = tempfile::tempdir().expect("a temp dir");
    let (sbatch, scancel) = stand_ins(bin.path(), 0);
    let out = slurm(
        book.path(),
        &book.path().join("run-3"),
        &[
            "--sbatch",
            &sbatch.to_string_lossy(),
            "--scancel",
            &scancel.to_string_lossy(),
        ],
    );
    assert!(!out.status.success());
    assert!(!bin.path().join("cancelled").exists());
}
