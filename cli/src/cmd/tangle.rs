//! `kernelbook tangle`: writes each kernel of the book to `kernels/NAME.cu`; `--check` only
//! reports whether they are up to date (and fails if not).

use crate::output::{self, say};
use crate::project::{Context, Project};
use mdbook_kernelbook::tangle;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Do not write; exit with an error if kernels/ differs from the book.
    #[arg(long)]
    check: bool,
}

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let project = Project::load(ctx)?;
    let dir = ctx.root.join("kernels");
    let expected = tangle::tangled_files(&project.index);
    let diff = if args.check {
        tangle::diff(&dir, &expected)?
    } else {
        tangle::write(&dir, &expected)?
    };
    let verb = if args.check { "would" } else { "did" };
    let out = &mut output::stdout();
    let mut printed = || -> std::io::Result<()> {
        for name in &diff.missing {
            say!(out, "{verb} create kernels/{name}")?;
        }
        for name in &diff.outdated {
            say!(out, "{verb} update kernels/{name}")?;
        }
        for name in &diff.orphaned {
            say!(
                out,
                "{verb} remove kernels/{name} (its kernel is no longer in the book)"
            )?;
        }
        if diff.is_clean() {
            say!(out, "kernels/ is up to date ({} kernels)", expected.len())?;
        }
        Ok(())
    };
    let printed = printed();
    if !diff.is_clean() && args.check {
        output::notice("kernelbook: kernels/ is out of date; run `kernelbook tangle`");
        return Ok(output::verdict(printed, ExitCode::FAILURE)?);
    }
    Ok(output::verdict(printed, ExitCode::SUCCESS)?)
}
