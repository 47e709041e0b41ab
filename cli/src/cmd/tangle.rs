//! `kernelbook tangle`: writes each kernel of the book to `kernels/NAME.cu`; `--check` only
//! reports whether they are up to date (and fails if not). Only files that are exactly an earlier
//! tangle output are replaced or removed; anything else is named, with why, and left alone.

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
    for name in &diff.missing {
        println!("{verb} create kernels/{name}");
    }
    for name in &diff.outdated {
        println!("{verb} update kernels/{name}");
    }
    for name in &diff.orphaned {
        println!("{verb} remove kernels/{name} (its kernel is no longer in the book)");
    }
    for (name, why) in diff.left_alone() {
        println!("left kernels/{name} alone: {why}");
    }
    if diff.is_clean() {
        println!("kernels/ is up to date ({} kernels)", expected.len());
    } else if args.check {
        eprintln!("kernelbook: kernels/ is out of date; run `kernelbook tangle`");
        return Ok(ExitCode::FAILURE);
    } else if !diff.blocked.is_empty() {
        eprintln!(
            "kernelbook: {} kernel(s) not written: move the files named above away (or delete \
             them) and run `kernelbook tangle` again",
            diff.blocked.len()
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
