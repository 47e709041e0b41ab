//! The Slurm jobs from the settings: book.toml's table read, the flags over it, tasks grouped
//! into arrays by their options, the scripts' text, sbatch's answer read.

use super::plan::{PlanError, plan};
use super::sbatch::parse_job_id;
use super::scripts::{Run, check_run_dir, scripts, shell_quote};
use super::*;
use std::path::PathBuf;

fn config(toml: &str) -> SlurmConfig {
    let config: mdbook_preprocessor::config::Config = toml.parse().expect("a book.toml");
    config
        .get(CONFIG_KEY)
        .expect("a Slurm table")
        .expect("present")
}

const TWO_TYPES: &str = r#"
[preprocessor.kernelbook.slurm]
partition = "gpu"
account = "course"
time = "01:00:00"

[[preprocessor.kernelbook.slurm.task]]
name = "h200-a"
gres = "gpu:h200:1"

[[preprocessor.kernelbook.slurm.task]]
name = "a100"
gres = "gpu:a100:1"
partition = "old"

[[preprocessor.kernelbook.slurm.task]]
name = "h200-b"
gres = "gpu:h200:1"
"#;

#[test]
fn tasks_with_the_same_options_share_an_array() {
    let plan = plan(&config(TWO_TYPES)).expect("a plan");
    assert_eq!(plan.arrays.len(), 2);
    assert_eq!(plan.arrays[0].tasks, ["h200-a", "h200-b"]);
    assert_eq!(
        plan.arrays[0].options.flags(),
        [
            "--partition=gpu",
            "--account=course",
            "--time=01:00:00",
            "--gres=gpu:h200:1",
            "--exclusive",
        ],
        "a node to itself by default"
    );
    assert_eq!(plan.arrays[1].tasks, ["a100"]);
    assert_eq!(plan.arrays[1].options.partition.as_deref(), Some("old"));
    assert_eq!(
        plan.merge.flags(),
        ["--partition=gpu", "--account=course", "--time=01:00:00"],
        "the merge job asks for no GPU"
    );
    assert_eq!(plan.devices, "all");
}

#[test]
fn flags_override_the_table_and_gres_flags_make_the_tasks() {
    let overridden = config(TWO_TYPES).with(Overrides {
        partition: Some("debug".into()),
        time: Some("00:10:00".into()),
        gres: vec!["gpu:h100:1".into(), "gpu:2".into(), "gpu:h100:1".into()],
        ..Overrides::default()
    });
    assert_eq!(overridden.partition.as_deref(), Some("debug"));
    assert_eq!(
        overridden.account.as_deref(),
        Some("course"),
        "kept from book.toml"
    );
    let names: Vec<&str> = overridden.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["h100", "task-1", "h100-2"]);
    let second = super::plan::plan(&overridden).expect("a plan");
    assert_eq!(second.arrays.len(), 2, "two h100 tasks in one array");
}

#[test]
fn settings_that_make_no_sound_job_are_refused() {
    assert_eq!(plan(&SlurmConfig::default()), Err(PlanError::NoTasks));
    let task = |name: &str, gres: &str| TaskConfig {
        name: name.into(),
        gres: Some(gres.into()),
        ..TaskConfig::default()
    };
    let with = |tasks: Vec<TaskConfig>| SlurmConfig {
        tasks,
        ..SlurmConfig::default()
    };
    assert_eq!(
        plan(&with(vec![task("a", "gpu:1"), task("a", "gpu:1")])),
        Err(PlanError::Duplicate("a".into()))
    );
    assert_eq!(
        plan(&with(vec![task("../x", "gpu:1")])),
        Err(PlanError::BadName("../x".into()))
    );
    assert!(matches!(
        plan(&with(vec![task("a", "gpu:1 --wrap=rm")])),
        Err(PlanError::BadValue { option: "gres", .. })
    ));
    let bad_devices = SlurmConfig {
        devices: Some("0,,1".into()),
        ..with(vec![task("a", "gpu:1")])
    };
    assert!(matches!(plan(&bad_devices), Err(PlanError::BadDevices(..))));
    let typo: Result<Option<SlurmConfig>, _> =
        "[preprocessor.kernelbook.slurm]\npartiton = \"gpu\"\n"
            .parse::<mdbook_preprocessor::config::Config>()
            .expect("toml")
            .get(CONFIG_KEY);
    assert!(typo.is_err(), "an unknown setting is an error, not ignored");
}

fn run() -> Run {
    Run {
        dir: PathBuf::from("/scratch/kb/run 1".replace(' ', "-")),
        exe: PathBuf::from("/opt/kernelbook/bin/kernelbook"),
        root: PathBuf::from("/home/me/it's a book"),
        committed: Some(PathBuf::from("/home/me/book/labs/recorded")),
    }
}

#[test]
fn the_array_script_records_each_task_into_its_own_folder() {
    let plan = plan(&config(TWO_TYPES)).expect("a plan");
    let scripts = scripts(&run(), &plan).expect("renders");
    assert_eq!(scripts.len(), 3);
    let array = &scripts[0];
    assert_eq!(array.path, PathBuf::from("/scratch/kb/run-1/labs-0.sh"));
    for line in [
        "#!/bin/bash",
        "#SBATCH --array=0-1",
        "#SBATCH --output=/scratch/kb/run-1/logs/labs-%A_%a.out",
        "#SBATCH --gres=gpu:h200:1",
        "#SBATCH --partition=gpu",
        "tasks=('h200-a' 'h200-b')",
        "#SBATCH --job-name=kernelbook-labs-run-1",
        "trap 'echo $? > '/scratch/kb/run-1/status'/\"$task\"' EXIT",
        "srun --ntasks=1 --export=ALL '/opt/kernelbook/bin/kernelbook' --root '/home/me/it'\\''s a book' record --devices 'all' --keep-going --out '/scratch/kb/run-1/results'/\"$task\"",
    ] {
        assert!(
            array.text.lines().any(|l| l == line),
            "{line:?} in\n{}",
            array.text
        );
    }
    assert!(scripts[1].text.contains("#SBATCH --array=0-0"));
}

#[test]
fn the_merge_script_gathers_the_results_and_builds_the_book() {
    let plan = plan(&config(TWO_TYPES)).expect("a plan");
    let scripts = scripts(&run(), &plan).expect("renders");
    let merge = &scripts[2];
    assert_eq!(merge.path, PathBuf::from("/scratch/kb/run-1/merge.sh"));
    assert!(!merge.text.contains("--gres"), "{}", merge.text);
    for line in [
        "#SBATCH --job-name=kernelbook-merge-run-1",
        "#SBATCH --kill-on-invalid-dep=yes",
        "for task in 'h200-a' 'h200-b' 'a100'; do",
        "srun --ntasks=1 --export=ALL '/opt/kernelbook/bin/kernelbook' --root '/home/me/it'\\''s a book' merge --into '/scratch/kb/run-1/recorded' '/home/me/book/labs/recorded' \"${merged[@]}\"",
        "srun --ntasks=1 --export=ALL '/opt/kernelbook/bin/kernelbook' --root '/home/me/it'\\''s a book' build --recorded --recordings '/scratch/kb/run-1/recorded' --dest-dir '/scratch/kb/run-1/book'",
    ] {
        assert!(
            merge.text.lines().any(|l| l == line),
            "{line:?} in\n{}",
            merge.text
        );
    }
}

#[test]
fn shell_words_and_sbatch_answers() {
    assert_eq!(shell_quote("plain"), "'plain'");
    assert_eq!(shell_quote("it's"), r"'it'\''s'");
    assert_eq!(shell_quote("$(rm -rf /)"), "'$(rm -rf /)'");
    assert!(check_run_dir(std::path::Path::new("/a b")).is_err());
    assert!(check_run_dir(std::path::Path::new("/scratch/run")).is_ok());
    assert_eq!(parse_job_id("1234\n"), Ok(1234));
    assert_eq!(parse_job_id("1234;cluster-a\n"), Ok(1234));
    assert_eq!(
        parse_job_id("warning: x\n77\n"),
        Ok(77),
        "the last line is the answer"
    );
    assert!(parse_job_id("").is_err());
    assert!(parse_job_id("Submitted batch job 12\n").is_err());
    assert_eq!(
        crate::cmd::slurm::dependency(&[12, 15]),
        "--dependency=afterany:12:15"
    );
}

const SITE: &str = r#"
[preprocessor.kernelbook.slurm]
partition = "gpu"
time = "01:00:00"
cpus-per-task = 8
mem = "32G"
sbatch-options = ["--qos=high", "--reservation=course"]
setup = ["module load cuda/12.4", "source /opt/site/env.sh"]

[preprocessor.kernelbook.slurm.merge]
partition = "cpu"
mem = "4G"
sbatch-options = ["--qos=low"]

[[preprocessor.kernelbook.slurm.task]]
name = "h200"
gres = "gpu:h200:1"
sbatch-options = ["--gpus=1"]
"#;

#[test]
fn a_sites_options_set_up_lines_and_merge_resources_reach_the_scripts() {
    let plan = plan(&config(SITE)).expect("a plan");
    assert_eq!(
        plan.arrays[0].options.flags(),
        [
            "--partition=gpu",
            "--time=01:00:00",
            "--gres=gpu:h200:1",
            "--cpus-per-task=8",
            "--mem=32G",
            "--exclusive",
            "--qos=high",
            "--reservation=course",
            "--gpus=1",
        ]
    );
    assert_eq!(
        plan.merge.flags(),
        [
            "--partition=cpu",
            "--time=01:00:00",
            "--mem=4G",
            "--qos=low"
        ],
        "the merge job's own partition and resources, no GPU, not exclusive"
    );
    let scripts = scripts(&run(), &plan).expect("renders");
    for script in &scripts {
        let lines: Vec<&str> = script.text.lines().collect();
        let setup = lines
            .iter()
            .position(|l| *l == "module load cuda/12.4")
            .unwrap_or_else(|| panic!("the set-up line in\n{}", script.text));
        assert_eq!(lines[setup + 1], "source /opt/site/env.sh");
        let first_step = lines
            .iter()
            .position(|l| l.starts_with("srun "))
            .expect("a step");
        assert!(setup < first_step, "set up before kernelbook runs");
    }
    // The command line's over book.toml's: appended options, another merge partition, no
    // exclusive node.
    let overridden = config(SITE).with(Overrides {
        exclusive: Some(false),
        sbatch_options: vec!["--gpu-freq=high".into()],
        setup: vec!["nvidia-smi".into()],
        merge_partition: Some("short".into()),
        ..Overrides::default()
    });
    let second = super::plan::plan(&overridden).expect("a plan");
    let flags = second.arrays[0].options.flags();
    assert!(!flags.contains(&"--exclusive".to_string()), "{flags:?}");
    assert_eq!(
        flags.last().map(String::as_str),
        Some("--gpus=1"),
        "the task's own last"
    );
    assert!(flags.contains(&"--gpu-freq=high".to_string()));
    assert_eq!(second.setup.last().map(String::as_str), Some("nvidia-smi"));
    assert_eq!(second.merge.partition.as_deref(), Some("short"));
}

#[test]
fn a_free_form_option_or_set_up_line_that_could_break_the_script_is_refused() {
    let with = |edit: &dyn Fn(&mut SlurmConfig)| {
        let mut c = config(SITE);
        edit(&mut c);
        plan(&c)
    };
    assert!(matches!(
        with(&|c| c.sbatch_options.push("qos=high".into())),
        Err(PlanError::BadOption(_))
    ));
    assert!(matches!(
        with(&|c| c.sbatch_options.push("--qos=high --wrap=x".into())),
        Err(PlanError::BadOption(_))
    ));
    assert!(matches!(
        with(&|c| c.merge.sbatch_options.push("--comment=#x".into())),
        Err(PlanError::BadOption(_))
    ));
    assert!(matches!(
        with(&|c| c.setup.push("ok\nrm -rf /".into())),
        Err(PlanError::BadSetup(_))
    ));
    assert!(matches!(
        with(&|c| c.merge.mem = Some("4 G".into())),
        Err(PlanError::BadValue { option: "mem", .. })
    ));
}
