//! One file per command.

pub mod build;
pub mod check;
pub mod check_report;
pub mod compile;
pub mod diagrams;
pub mod export;
pub mod info;
pub mod list;
pub mod merge;
pub mod profile;
pub mod record;
pub mod run;
pub mod slurm;
pub mod tangle;
