//! `kernelbook tangle`: writes each kernel of the book to `kernels/NAME.cu`; `--check` only
//! reports whether they are up to date (and fails if not). Only files that are exactly an earlier
//! tangle output are replaced or removed; anything else is named, with why, and left alone.

use crate::output::{self, say};
use crate::project::{Context, Project};
use anyhow::Context as _;
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
        tangle::diff(&dir, &expected)
    } else {
        tangle::write(&dir, &expected)
    }
    .with_context(|| format!("tangling the book's kernels into {}", dir.display()))?;
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
        for (name, why) in diff.left_alone() {
            say!(out, "left kernels/{name} alone: {why}")?;
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
    if !diff.blocked.is_empty() {
        output::notice(&format!(
            "kernelbook: {} kernel(s) not written: move the files named above away (or delete \
             them) and run `kernelbook tangle` again",
            diff.blocked.len()
        ));
        return Ok(output::verdict(printed, ExitCode::FAILURE)?);
    }
    Ok(output::verdict(printed, ExitCode::SUCCESS)?)
}
