//! The preprocessor's settings in book.toml, under `[preprocessor.kernelbook]`: its name and the
//! labs folder. (The recordings' settings are in `recorded`.)

use std::path::{Path, PathBuf};

/// The name book.toml uses: `[preprocessor.kernelbook]`.
pub const NAME: &str = "kernelbook";

/// The labs folder named in book.toml (`[preprocessor.kernelbook] labs = "labs"`), from the
/// book's root.
pub fn labs_dir(
    ctx_root: &Path,
    config: &mdbook_preprocessor::config::Config,
) -> anyhow::Result<PathBuf> {
    let dir: Option<String> = config.get(&format!("preprocessor.{NAME}.labs"))?;
    Ok(ctx_root.join(dir.unwrap_or_else(|| "labs".into())))
}
