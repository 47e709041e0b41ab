//! `kernelbook diagrams`: every warp-access and bank diagram of the book, with the model's
//! prediction and, where a diagram claims them, the recorded Nsight Compute counters beside it
//! (the same comparison the chapter shows, from `labs/recorded/`). Exit status 1 when a diagram
//! that claims counters has none (`--check`).

use crate::output::{self, say};
use crate::project::{Context, Project};
use anyhow::bail;
use kernelbook_core::results::LabResults;
use kernelbook_runner::store::stale_kernels;
use kernelbook_runner::{LabOutcome, Mode};
use mdbook_kernelbook::book as diagram;
use mdbook_kernelbook::diagram::{Drawn, Results};
use std::collections::BTreeMap;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Fail when a diagram tied to a lab has no counters beside it.
    #[arg(long)]
    check: bool,
}

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let project = Project::load(ctx)?;
    let problems = diagram::check_diagrams(&project.index, &project.labs);
    if !problems.is_empty() {
        bail!("{}", problems.join("\n"));
    }
    let runner = project.runner(Mode::RecordedOnly);
    let mut outcomes: BTreeMap<&str, LabOutcome> = BTreeMap::new();
    for name in diagram::profiled_labs(&project.index) {
        let Some(lab) = project.labs.ready.get(name) else {
            continue;
        };
        let recorded: Option<LabResults> = runner.recorded().get(lab).unwrap_or_else(|distrust| {
            output::notice(&format!("kernelbook: {distrust}"));
            None
        });
        if let Some(results) = recorded {
            outcomes.insert(
                name,
                LabOutcome::Recorded {
                    stale_kernels: stale_kernels(&results, &project.kernels_for(lab)),
                    results,
                    why: "recorded".into(),
                    compile_errors: Vec::new(),
                },
            );
        }
    }
    let no_fallback = BTreeMap::new();
    let results = Results {
        outcomes: &outcomes,
        recorded: &no_fallback,
    };
    let out = &mut output::stdout();
    let mut uncounted = 0;
    for (_, directive, drawn) in diagram::draw_book(&project.index, &project.labs, results)? {
        print_diagram(out, &directive.location.to_string(), &drawn)?;
        uncounted += drawn.failures.len();
    }
    if args.check && uncounted > 0 {
        bail!("{uncounted} diagram panel(s) claim counters that the recordings do not hold");
    }
    Ok(ExitCode::SUCCESS)
}

/// One diagram: a line per panel with its numbers, then each prediction beside its counter.
fn print_diagram(
    out: &mut impl std::io::Write,
    location: &str,
    drawn: &Drawn,
) -> std::io::Result<()> {
    for panel in &drawn.view.panels {
        say!(out, "{location}  {}  {}", drawn.view.kind, panel.heading)?;
        say!(out, "    model: {}", panel.numbers)?;
        if let Some(comparison) = &panel.comparison {
            for row in &comparison.rows {
                say!(
                    out,
                    "    {}: model {}, Nsight Compute {}",
                    row.what,
                    row.predicted,
                    row.measured
                )?;
            }
            say!(out, "    {} ({})", comparison.verdict, comparison.source)?;
            for note in &comparison.notes {
                say!(out, "    {note}")?;
            }
        }
        if let Some(why) = &panel.missing_counters {
            say!(out, "    no counters: {why}")?;
        }
    }
    Ok(())
}
