//! `kernelbook serve`: the book in the browser, rebuilt on every save, with its exercises
//! graded on the reader's GPU.
//!
//! ```text
//! files saved ──(watch: notify, debounced)──► builder thread ──► book built, swapped in
//!                                               │  labs not in the cache        │ version + 1
//!                                               ▼                               ▼
//!          GPU thread: numbers lab by lab (open pages first), each followed by "build again";
//!          then counters, lab by lab, likewise                       pages reload (websocket)
//!   page: "Check on my GPU" ──(POST, token, Origin)──► GPU thread: grade ──► verdict and table
//! ```
//!
//! - [`guard`]: only the reader gets in (127.0.0.1, the token, `Host` and `Origin`);
//! - [`http`]: the routes; [`files`]: the built book, read-only, each page given the script;
//! - [`rebuild`]: the builder, and the results a build shows (it never waits for the GPU);
//! - [`gpu`]: the one thread that measures and grades; [`exercises`]: the exercises' API;
//! - [`watch`]: what is watched; [`status`]: what every page is told;
//! - `assets/serve.js`: the page's side (reload, banners, the exercise editor).
//!
//! **Invariant:** this module renders nothing and measures nothing itself: the book is built by
//! `cmd::build::render` with the preprocessor, labs are measured and exercises graded by the
//! runner (`Runner::lookup`, `measure_unmeasured`, `check_exercise`), as the other commands do.

mod exercises;
mod files;
mod gpu;
mod guard;
mod http;
mod rebuild;
mod status;
#[cfg(test)]
mod tests;
mod watch;

use crate::cmd::build::html_dir;
use crate::output::{self, say};
use crate::project::{Context, runner_at};
use anyhow::Context as _;
use exercises::Catalog;
use gpu::GpuQueue;
use guard::{Gate, Token};
use kernelbook_runner::Mode;
use mdbook_driver::MDBook;
use rebuild::{Builder, ServeResults, Trigger};
use status::{Board, OpenLabs};
use std::io::Write as _;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError, RwLock, mpsc};
use watch::Watched;

/// `kernelbook serve`'s arguments. (The command lives here rather than in `cmd/`, which this
/// module builds on: the arrow runs one way, serve → cmd.)
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The port to listen on (on 127.0.0.1 only); a free one by default.
    #[arg(long, default_value_t = 0)]
    port: u16,
}

/// `kernelbook serve`: renders the book, serves it on 127.0.0.1, rebuilds it on every save
/// (measuring again only the labs whose plan changed) and grades exercises from the page.
pub fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    serve(ctx, args.port)
}

/// What the handlers share.
#[derive(Debug)]
pub struct App {
    pub gate: Arc<Gate>,
    /// The book's root: where `exercises/` is.
    pub root: PathBuf,
    /// The built book's HTML folder.
    pub book_dir: PathBuf,
    pub board: Board,
    pub gpu: GpuQueue,
    /// The labs of the pages open now.
    pub open: OpenLabs,
    /// A check is running (one at a time).
    pub checking: AtomicBool,
    catalog: RwLock<Arc<Catalog>>,
}

impl App {
    pub fn new(
        gate: Arc<Gate>,
        root: PathBuf,
        book_dir: PathBuf,
        board: Board,
        gpu: GpuQueue,
        open: OpenLabs,
    ) -> Self {
        App {
            gate,
            root,
            book_dir,
            board,
            gpu,
            open,
            checking: AtomicBool::new(false),
            catalog: RwLock::default(),
        }
    }

    /// The exercises of the last book that loaded.
    pub fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.catalog.read().unwrap_or_else(PoisonError::into_inner))
    }

    pub fn set_catalog(&self, catalog: Catalog) {
        *self.catalog.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(catalog);
    }
}

/// Serves the book at `ctx.root` on 127.0.0.1:`port` (0: a free port) until interrupted.
pub fn serve(ctx: &Context, port: u16) -> anyhow::Result<ExitCode> {
    // book.toml and SUMMARY.md must load to start: they say where everything is. Any later
    // error, and any error in a chapter or a lab, is shown in the page instead.
    crate::project::check_sources(&ctx.root)?;
    let book = MDBook::load(&ctx.root)
        .with_context(|| format!("loading the book at {}", ctx.root.display()))?;
    let (book_dir, watched) = layout(&ctx.root, &book)?;
    let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port))
        .with_context(|| format!("cannot listen on 127.0.0.1:{port}"))?;
    let port = listener.local_addr()?.port();
    let gate = Arc::new(Gate::new(
        Token::generate().map_err(|err| anyhow::anyhow!("cannot make a token: {err}"))?,
        port,
    ));
    let (recorded_dir, _) = mdbook_kernelbook::recorded::shown_dir(&ctx.root, &book.config)?;
    let runner = Arc::new(runner_at(&ctx.root, &recorded_dir, ctx.backend, Mode::Auto));
    let board = Board::new(
        runner
            .toolchain()
            .map(|toolchain| toolchain.device.name)
            .map_err(|err| err.to_string()),
    );
    let (gpu, jobs) = GpuQueue::new();
    let open = OpenLabs::default();
    let (triggers, changes) = mpsc::channel();
    let told = Mutex::new(triggers.clone());
    let collected: gpu::CountersCollected = Box::new(move |_labs: &[String]| {
        let _ = told
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(Trigger::Counters);
    });
    gpu::spawn(
        Arc::clone(&runner),
        board.clone(),
        open.clone(),
        jobs,
        collected,
    )?;
    let app = Arc::new(App::new(
        Arc::clone(&gate),
        ctx.root.clone(),
        book_dir,
        board.clone(),
        gpu.clone(),
        open,
    ));
    let builder = Builder {
        ctx: ctx.clone(),
        app: Arc::clone(&app),
        results: Arc::new(ServeResults::new(runner, gpu, board, triggers.clone())),
    };
    // Watching starts before the first build, so that a save during it is not missed.
    let _watching = watch::start(watched.clone(), triggers)?;
    builder.pass();
    std::thread::Builder::new()
        .name("kernelbook-builder".into())
        .spawn(move || builder.run(changes))?;
    announce(&gate, &book, &watched)?;
    listener.set_nonblocking(true)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        axum::serve(listener, http::router(app)).await
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Where the built book's HTML is, and what to watch, for the book at `root`.
fn layout(root: &Path, book: &MDBook) -> anyhow::Result<(PathBuf, Watched)> {
    let real_root = std::fs::canonicalize(root)
        .with_context(|| format!("cannot find the book's folder {}", root.display()))?;
    let build = real_root.join(&book.config.build.build_dir);
    let theme = book.config.html_config().map_or_else(
        || real_root.join("theme"),
        |html| html.theme_dir(&real_root),
    );
    let labs = mdbook_kernelbook::preprocessor::labs_dir(&real_root, &book.config)?;
    let mut folders: Vec<PathBuf> = Vec::new();
    for dir in [real_root.join(&book.config.book.src), theme, labs] {
        // A folder inside another is watched with it.
        if dir.is_dir() && !folders.iter().any(|f| dir.starts_with(f)) {
            folders.retain(|f| !f.starts_with(&dir));
            folders.push(dir);
        }
    }
    let watched = Watched {
        folders,
        files: vec![real_root.join("book.toml")],
        ignored: vec![
            build.clone(),
            real_root.join(".kernelbook"),
            real_root.join("exercises"),
        ],
    };
    Ok((build.join(html_dir(book)), watched))
}

/// The address with its token on stdout (where a script or test reads it); the rest on stderr.
fn announce(gate: &Gate, book: &MDBook, watched: &Watched) -> anyhow::Result<()> {
    let out = &mut output::stdout();
    say!(out, "kernelbook: serving the book at {}", gate.address())?;
    out.flush()?;
    let root = watched
        .files
        .first()
        .and_then(|file| file.parent())
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let names: Vec<String> = watched
        .folders
        .iter()
        .chain(&watched.files)
        .map(|path| {
            path.strip_prefix(&root)
                .unwrap_or(path)
                .display()
                .to_string()
        })
        .collect();
    output::notice(&format!(
        "kernelbook: \"{}\": watching {} for changes; Ctrl-C stops",
        book.config.book.title.as_deref().unwrap_or("the book"),
        names.join(", ")
    ));
    Ok(())
}
