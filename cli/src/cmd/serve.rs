//! `kernelbook serve`: renders the book, serves it on 127.0.0.1, rebuilds it on every save
//! (measuring again only the labs whose plan changed) and grades exercises from the page
//! (see [`crate::serve`]).

use crate::project::Context;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The port to listen on (on 127.0.0.1 only); a free one by default.
    #[arg(long, default_value_t = 0)]
    port: u16,
}

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    crate::serve::serve(ctx, args.port)
}
