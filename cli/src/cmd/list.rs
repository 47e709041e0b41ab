//! `kernelbook list`: the labs and kernels of the book.

use crate::output::{self, say};
use crate::project::{Context, Project};
use mdbook_kernelbook::render::format_params;
use std::process::ExitCode;

pub fn run(ctx: &Context) -> anyhow::Result<ExitCode> {
    let project = Project::load(ctx)?;
    let out = &mut output::stdout();
    say!(out, "labs:")?;
    for lab in project.labs.ready.values() {
        let variants: Vec<&str> = lab.variants.iter().map(|v| v.name.as_str()).collect();
        say!(
            out,
            "  {:<20} {} ({}) — {}",
            lab.name,
            lab.title,
            format_params(&lab.params),
            variants.join(", ")
        )?;
    }
    for lab in project.labs.planned.values() {
        say!(
            out,
            "  {:<20} {} (planned: no kernels yet)",
            lab.name,
            lab.title
        )?;
    }
    say!(out, "kernels:")?;
    for kernel in project.index.kernels.values() {
        say!(out, "  {:<24} {}", kernel.name, kernel.origin)?;
    }
    Ok(ExitCode::SUCCESS)
}
