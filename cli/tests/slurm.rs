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

#[test]
fn the_labs_run_as_a_job_array_and_the_merge_job_builds_the_comparison() {
    if !cluster_or_skip() {
        return;
    }
    let book = gpus_book();
    let run = book.path().join("run");
    let submitted = Command::new(env!("CARGO_BIN_EXE_kernelbook"))
        .arg("--root")
        .arg(book.path())
        .args(["slurm", "--out"])
        .arg(&run)
        .env("KERNELBOOK_DEVICE", "fake")
        .env("KERNELBOOK_FAKE_DEVICES", "2")
        .env_remove("CUDA_VISIBLE_DEVICES")
        .env_remove("KERNELBOOK_FAKE_BUSY")
        .output()
        .expect("kernelbook runs");
    assert!(submitted.status.success(), "{}", text(&submitted.stderr));
    let stdout = text(&submitted.stdout);
    assert!(stdout.contains("submitted job array"), "{stdout}");
    assert!(stdout.contains("--dependency=afterok:"), "{stdout}");
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
