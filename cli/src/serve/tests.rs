//! The server's router, asked directly (tower's `oneshot`): who gets in and what is refused.
//! Each refusal is checked for its status and for nothing having run: no job reached the GPU
//! thread (the test holds its queue) and no learner's file was written. A request that passes
//! every check is shown to run, so that the refusals mean something.

use super::exercises::{Catalog, Exercise};
use super::files::{Resolved, resolve};
use super::gpu::{GpuQueue, Job};
use super::guard::{Admission, Gate, TOKEN_HEADER, Token};
use super::status::Board;
use super::watch::Watched;
use super::{App, http};
use crate::cmd::check_report::error_lines;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use kernelbook_core::spec::LabSpec;
use kernelbook_core::{KernelSource, SourceLocation};
use kernelbook_runner::RunError;
use std::path::{Path, PathBuf};
use std::sync::{Arc, mpsc};
use tower::ServiceExt as _;

const PORT: u16 = 4000;
const HOST: &str = "127.0.0.1:4000";
const ORIGIN: &str = "http://127.0.0.1:4000";

/// A server's state over a temp dir: a built book (`book/`), a secret beside it that no
/// request may read, the exercise `coalesce`, and the GPU queue's other end.
struct Fixture {
    dir: tempfile::TempDir,
    app: Arc<App>,
    jobs: mpsc::Receiver<Job>,
    token: String,
}

fn kernel(name: &str) -> KernelSource {
    KernelSource {
        name: name.into(),
        source: format!(
            "extern \"C\" __global__ void {name}(float *d, const float *s, int n) {{}}\n"
        ),
        origin: SourceLocation {
            file: "book/src/coalesce.md".into(),
            line: 3,
        },
        language: Default::default(),
    }
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let book = dir.path().join("book");
    std::fs::create_dir_all(book.join("labs")).expect("mkdir");
    std::fs::write(
        book.join("index.html"),
        "<html><head><title>t</title></head><body>the book</body></html>",
    )
    .expect("write");
    std::fs::write(
        book.join("labs/lab.html"),
        "<html><head></head><body>lab</body></html>",
    )
    .expect("write");
    std::fs::write(dir.path().join("secret.txt"), "SECRET").expect("write");
    #[cfg(unix)]
    std::os::unix::fs::symlink(dir.path().join("secret.txt"), book.join("link.txt"))
        .expect("symlink");
    let token = Token::generate().expect("token");
    let token_text = token.as_str().to_string();
    let (gpu, jobs) = GpuQueue::new();
    let app = Arc::new(App::new(
        Arc::new(Gate::new(token, PORT)),
        dir.path().to_path_buf(),
        book,
        Board::new(Ok("Fake GPU".into())),
        gpu,
        super::status::OpenLabs::default(),
    ));
    let lab = LabSpec::parse(
        include_str!("../../../labs/fixtures/coalesce.toml"),
        Path::new("labs/coalesce.toml"),
    )
    .expect("the exercise lab");
    let kernels = ["copy_chunked", "copy_coalesced"]
        .into_iter()
        .map(|name| (name.to_string(), kernel(name)))
        .collect();
    let mut catalog = Catalog::default();
    catalog.insert(Exercise {
        lab,
        kernels,
        kernel: "copy_chunked".into(),
        starter: kernel("copy_chunked").source,
    });
    app.set_catalog(catalog);
    Fixture {
        dir,
        app,
        jobs,
        token: token_text,
    }
}

impl Fixture {
    fn cookie(&self) -> String {
        format!("kernelbook-{PORT}={}", self.token)
    }

    /// The learner's file of the exercise.
    fn kept(&self) -> PathBuf {
        self.dir.path().join("exercises/coalesce.cu")
    }

    /// Sends `request` to the router; the status, the headers and the body as text.
    async fn send(&self, request: Request<Body>) -> (StatusCode, axum::http::HeaderMap, String) {
        let response = http::router(Arc::clone(&self.app))
            .oneshot(request)
            .await
            .expect("the router answers");
        let status = response.status();
        let headers = response.headers().clone();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("a body");
        (status, headers, String::from_utf8_lossy(&body).into_owned())
    }

    /// Asserts that nothing ran: no job for the GPU, no learner's file.
    fn nothing_ran(&self) {
        assert!(
            self.jobs.try_recv().is_err(),
            "a job reached the GPU thread"
        );
        assert!(!self.kept().exists(), "the learner's file was written");
    }

    /// A check of the exercise `name` as the page sends it, with `headers` instead of the
    /// page's where given.
    fn check(&self, name: &str, source: &str, headers: &[(&str, &str)]) -> Request<Body> {
        let body = serde_json::json!({ "source": source }).to_string();
        let mut request = Request::post(format!("/__kernelbook/api/exercises/{name}/check"))
            .header("content-type", "application/json");
        let page = [
            ("host", HOST),
            ("origin", ORIGIN),
            (TOKEN_HEADER, &self.token),
        ];
        for (key, value) in page {
            if !headers.iter().any(|(k, _)| *k == key) {
                request = request.header(key, value);
            }
        }
        for (key, value) in headers {
            if !value.is_empty() {
                request = request.header(*key, *value);
            }
        }
        request.body(Body::from(body)).expect("request")
    }
}

fn get(path: &str, headers: &[(&str, &str)]) -> Request<Body> {
    let mut request = Request::get(path);
    for (key, value) in headers {
        request = request.header(*key, *value);
    }
    request.body(Body::empty()).expect("request")
}

#[tokio::test]
async fn a_page_needs_the_token_and_the_address_one_becomes_a_cookie() {
    let f = fixture();
    let (status, _, body) = f.send(get("/", &[("host", HOST)])).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert!(
        body.contains("open the address `kernelbook serve` printed"),
        "{body}"
    );
    let wrong = format!("kernelbook-{PORT}=0123");
    let (status, _, _) = f
        .send(get("/", &[("host", HOST), ("cookie", &wrong)]))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let address = format!("/labs/lab.html?token={}", f.token);
    let (status, headers, _) = f.send(get(&address, &[("host", HOST)])).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(
        headers["location"], "/labs/lab.html",
        "the token leaves the address"
    );
    let cookie = headers["set-cookie"].to_str().expect("ascii");
    assert_eq!(
        cookie,
        format!("{}; Path=/; HttpOnly; SameSite=Strict", f.cookie())
    );

    let (status, headers, body) = f
        .send(get(
            "/labs/lab.html",
            &[("host", HOST), ("cookie", &f.cookie())],
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    assert_eq!(headers["cache-control"], "no-store");
    assert!(body.contains("<script src=\"/__kernelbook/serve.js\" defer></script>\n</head>"));
    assert!(body.contains(&format!("&quot;token&quot;:&quot;{}&quot;", f.token)));
    assert!(!headers.contains_key("access-control-allow-origin"));
    f.nothing_ran();
}

#[tokio::test]
async fn a_foreign_host_is_refused() {
    let f = fixture();
    for host in [
        "evil.example:4000",
        "127.0.0.1:4001",
        "127.0.0.1",
        "localhost.evil.example:4000",
    ] {
        let (status, _, body) = f.send(f.check("coalesce", "x", &[("host", host)])).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{host}: {body}");
        assert!(body.contains("answers only to 127.0.0.1:4000"), "{body}");
        let (status, _, _) = f
            .send(get("/", &[("host", host), ("cookie", &f.cookie())]))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{host}");
    }
    f.nothing_ran();
    for host in ["localhost:4000", "LOCALHOST:4000", "[::1]:4000"] {
        let (status, _, _) = f
            .send(get("/", &[("host", host), ("cookie", &f.cookie())]))
            .await;
        assert_eq!(status, StatusCode::OK, "{host}");
    }
}

#[tokio::test]
async fn a_foreign_origin_is_refused_and_a_change_needs_one() {
    let f = fixture();
    for origin in [
        "http://evil.example",
        "http://127.0.0.1:4001",
        "null",
        "https://127.0.0.1:4000",
    ] {
        let (status, _, body) = f
            .send(f.check("coalesce", "x", &[("origin", origin)]))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{origin}: {body}");
        assert!(!body.contains("SECRET"));
    }
    // No Origin at all: a request that runs something is not a page's.
    let (status, _, _) = f.send(f.check("coalesce", "x", &[("origin", "")])).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // A page of another site reading this one's pages.
    let (status, _, _) = f
        .send(get(
            "/",
            &[
                ("host", HOST),
                ("cookie", &f.cookie()),
                ("origin", "http://evil.example"),
            ],
        ))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // A CORS preflight is never approved.
    let preflight = Request::options("/__kernelbook/api/exercises/coalesce/check")
        .header("host", HOST)
        .header("origin", "http://evil.example")
        .header("access-control-request-method", "POST")
        .body(Body::empty())
        .expect("request");
    let (status, headers, _) = f.send(preflight).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(!headers.contains_key("access-control-allow-origin"));
    f.nothing_ran();
}

#[tokio::test]
async fn a_missing_or_wrong_token_runs_nothing() {
    let f = fixture();
    let (status, _, body) = f
        .send(f.check("coalesce", "x", &[(TOKEN_HEADER, "")]))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert!(
        body.contains("needs the x-kernelbook-token header"),
        "{body}"
    );
    let wrong = "f".repeat(64);
    let (status, _, body) = f
        .send(f.check("coalesce", "x", &[(TOKEN_HEADER, &wrong)]))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body.trim(), "wrong token");
    // The cookie lets a page be read, not a kernel be run.
    let (status, _, _) = f
        .send(f.check(
            "coalesce",
            "x",
            &[(TOKEN_HEADER, ""), ("cookie", &f.cookie())],
        ))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _, _) = f
        .send(get("/__kernelbook/api/state", &[("host", HOST)]))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    f.nothing_ran();
}

#[tokio::test]
async fn only_the_books_own_exercises_are_accepted() {
    let f = fixture();
    for name in ["nope", "coalesce2", "%2e%2e", "..%2fcoalesce", "COALESCE"] {
        let (status, _, body) = f.send(f.check(name, "x", &[])).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}: {body}");
        let saving = Request::put(format!("/__kernelbook/api/exercises/{name}"))
            .header("host", HOST)
            .header("origin", ORIGIN)
            .header(TOKEN_HEADER, &f.token)
            .header("content-type", "application/json")
            .body(Body::from(r#"{"source": "x"}"#))
            .expect("request");
        let (status, _, _) = f.send(saving).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}");
    }
    f.nothing_ran();
    assert!(!f.dir.path().join("exercises").exists());
}

#[tokio::test]
async fn an_oversized_body_is_refused() {
    let f = fixture();
    let big = "x".repeat(http::MAX_BODY + 1);
    let (status, _, _) = f.send(f.check("coalesce", &big, &[])).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    f.nothing_ran();
}

#[tokio::test]
async fn a_path_outside_the_book_is_refused() {
    let f = fixture();
    let cookie = f.cookie();
    let headers = [("host", HOST), ("cookie", cookie.as_str())];
    for path in [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/labs/../../secret.txt",
        "/labs/%2E%2E%2F..%2Fsecret.txt",
        "/..%5csecret.txt",
    ] {
        let (status, _, body) = f.send(get(path, &headers)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {body}");
        assert!(!body.contains("SECRET"), "{path}");
    }
    #[cfg(unix)]
    {
        let (status, _, body) = f.send(get("/link.txt", &headers)).await;
        assert_eq!(
            status,
            StatusCode::BAD_REQUEST,
            "a link out of the book: {body}"
        );
        assert!(!body.contains("SECRET"));
    }
    let (status, _, _) = f.send(get("/missing.html", &headers)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, headers_back, _) = f.send(get("/labs", &headers)).await;
    assert_eq!(status, StatusCode::PERMANENT_REDIRECT);
    assert_eq!(headers_back["location"], "/labs/");
}

#[tokio::test]
async fn the_book_is_read_only() {
    let f = fixture();
    for method in ["PUT", "POST", "DELETE"] {
        let request = Request::builder()
            .method(method)
            .uri("/index.html")
            .header("host", HOST)
            .header("origin", ORIGIN)
            .header(TOKEN_HEADER, &f.token)
            .body(Body::from("overwritten"))
            .expect("request");
        let (status, headers, _) = f.send(request).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
        assert_eq!(headers["allow"], "GET, HEAD");
    }
    let page = std::fs::read_to_string(f.dir.path().join("book/index.html")).expect("page");
    assert!(page.contains("the book"));
}

#[tokio::test]
async fn a_websocket_needs_this_servers_origin() {
    let f = fixture();
    let upgrade = |origin: Option<&str>| {
        let mut request = Request::get("/__kernelbook/events")
            .header("host", HOST)
            .header("cookie", f.cookie())
            .header("connection", "upgrade")
            .header("upgrade", "websocket")
            .header("sec-websocket-version", "13")
            .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==");
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        request.body(Body::empty()).expect("request")
    };
    let (status, _, _) = f.send(upgrade(None)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _, _) = f.send(upgrade(Some("http://evil.example"))).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn a_request_that_passes_every_check_is_graded() {
    let f = fixture();
    let Fixture { jobs, .. } = &f;
    // The GPU thread's stand-in: it takes the job and says there is no GPU.
    let (taken, job_taken) = mpsc::channel();
    let request = f.check("coalesce", "// mine\n", &[]);
    let answer = f.send(request);
    let gpu = async {
        loop {
            if let Ok(job) = jobs.try_recv() {
                let Job::Check { plan, done } = job else {
                    panic!("not a check");
                };
                let _ = taken.send(plan.book_lab.name.clone());
                done(Err(RunError::Unavailable("no GPU in this test".into())));
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    };
    let ((status, _, body), ()) = tokio::join!(answer, gpu);
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(
        body.contains("cannot check `coalesce` on this machine: no GPU in this test"),
        "{body}"
    );
    assert_eq!(job_taken.try_recv().as_deref(), Ok("coalesce"));
    assert_eq!(
        std::fs::read_to_string(f.kept()).expect("kept"),
        "// mine\n",
        "the learner's version is kept"
    );
}

#[tokio::test]
async fn the_learners_last_version_is_served_and_kept() {
    let f = fixture();
    let source = |f: &Fixture| {
        get(
            "/__kernelbook/api/exercises/coalesce",
            &[("host", HOST), ("cookie", &f.cookie())],
        )
    };
    let (status, _, body) = f.send(source(&f)).await;
    assert_eq!(status, StatusCode::OK);
    let answer: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(answer["saved"], false);
    assert_eq!(answer["source"], kernel("copy_chunked").source);
    let saving = Request::put("/__kernelbook/api/exercises/coalesce")
        .header("host", HOST)
        .header("origin", ORIGIN)
        .header(TOKEN_HEADER, &f.token)
        .header("content-type", "application/json")
        .body(Body::from(r#"{"source": "// edited\n"}"#))
        .expect("request");
    let (status, _, _) = f.send(saving).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, _, body) = f.send(source(&f)).await;
    let answer: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(answer["saved"], true);
    assert_eq!(answer["source"], "// edited\n");
    assert!(f.jobs.try_recv().is_err(), "saving runs nothing");
}

#[test]
fn the_gate_is_a_function_of_the_request() {
    let token = Token::generate().expect("token");
    let text = token.as_str().to_string();
    assert_eq!(text.len(), 64);
    assert_ne!(
        Token::generate().expect("token").as_str(),
        text,
        "a new one each start"
    );
    let gate = Gate::new(token, PORT);
    let mut headers = axum::http::HeaderMap::new();
    headers.insert("host", HOST.parse().expect("value"));
    let uri = |s: &str| s.parse::<axum::http::Uri>().expect("uri");
    let admit =
        |uri, headers: &axum::http::HeaderMap| gate.admit(&axum::http::Method::GET, &uri, headers);
    assert_eq!(
        admit(uri(&format!("/__kernelbook/events?token={text}")), &headers),
        Admission::Admit { set_cookie: true },
        "the script's websocket: no redirect"
    );
    assert_eq!(
        admit(uri(&format!("/a.html?x=1&token={text}&y=2")), &headers),
        Admission::Redirect {
            location: "/a.html?x=1&y=2".into()
        }
    );
    assert!(matches!(
        admit(uri(&format!("/a.html?token={}", &text[1..])), &headers),
        Admission::Refuse {
            status: StatusCode::UNAUTHORIZED,
            ..
        }
    ));
    // A stale cookie from an earlier server on this port, and the new token in the address.
    headers.insert(
        "cookie",
        format!("kernelbook-{PORT}=old").parse().expect("value"),
    );
    assert_eq!(
        admit(uri(&format!("/?token={text}")), &headers),
        Admission::Redirect {
            location: "/".into()
        }
    );
    assert!(
        format!("{gate:?}").contains("Token(…)"),
        "the token is never printed"
    );
}

#[test]
fn paths_resolve_inside_the_book_only() {
    let f = fixture();
    let book = f.dir.path().join("book");
    let real = std::fs::canonicalize(&book).expect("book");
    assert_eq!(resolve(&book, "/"), Resolved::File(real.join("index.html")));
    assert_eq!(
        resolve(&book, "/./labs/lab.html"),
        Resolved::File(real.join("labs/lab.html"))
    );
    assert_eq!(resolve(&book, "/labs"), Resolved::AddSlash);
    assert_eq!(
        resolve(&book, "/labs/"),
        Resolved::NotFound,
        "no index.html there"
    );
    assert!(matches!(
        resolve(&book, "/a/%2e%2e/index.html"),
        Resolved::Outside(_)
    ));
    assert!(matches!(resolve(&book, "/%ff"), Resolved::Outside(_)));
    assert!(matches!(resolve(&book, "/a%00b"), Resolved::Outside(_)));
}

#[test]
fn compile_errors_are_found_at_the_learners_lines() {
    let file = Path::new("exercises/coalesce.cu");
    let log = "exercises/coalesce.cu:3: error: expected a \";\"\n\
               exercises/coalesce.cu:12:5: error: identifier \"k\" is undefined\n\
               book/src/other.md:4: error: not the learner's\n\
               1 error detected in the compilation of \"copy_chunked.cu\".\n";
    let lines: Vec<(usize, String)> = error_lines(log, file)
        .into_iter()
        .map(|e| (e.line, e.message))
        .collect();
    assert_eq!(
        lines,
        [
            (3, "error: expected a \";\"".to_string()),
            (12, "error: identifier \"k\" is undefined".to_string()),
        ]
    );
}

#[test]
fn only_changes_to_the_books_sources_rebuild_it() {
    let watched = Watched {
        folders: vec!["/b/book/src".into(), "/b/labs".into()],
        files: vec!["/b/book.toml".into()],
        ignored: vec!["/b/target/book".into(), "/b/exercises".into()],
    };
    for path in [
        "/b/book/src/a.md",
        "/b/labs/x.toml",
        "/b/labs/recorded/x.json",
        "/b/book.toml",
    ] {
        assert!(watched.matters(Path::new(path)), "{path}");
    }
    for path in [
        "/b/book/src/.a.md.swp",
        "/b/book/src/a.md~",
        "/b/book/src/4913",
        "/b/exercises/x.cu",
        "/b/target/book/index.html",
        "/b/target/.book.building-x1/index.html",
        "/b/other.toml",
        "/b/Cargo.toml",
    ] {
        assert!(!watched.matters(Path::new(path)), "{path}");
    }
}

/// A build's results in `kernelbook serve`, on the fake device measuring in this process: a
/// lab the cache lacks is shown as being measured and queued once, measured by the GPU
/// thread's job, then shown from the cache, and no longer "being measured" once a build
/// showed it.
#[test]
fn a_lab_the_cache_lacks_is_measured_once_in_the_background() {
    use super::rebuild::{MEASURING_NOW, ServeResults, Trigger};
    use kernelbook_runner::backend::BackendChoice;
    use kernelbook_runner::engine::Quiet;
    use kernelbook_runner::{LabOutcome, LabRequest, Mode, Runner, RunnerConfig};
    use mdbook_kernelbook::preprocessor::ResultSource as _;

    let dir = tempfile::tempdir().expect("tempdir");
    let runner = Arc::new(Runner::new(RunnerConfig {
        cache_dir: dir.path().join("cache"),
        recorded_dir: dir.path().join("recorded"),
        mode: Mode::Auto,
        measurement: Default::default(),
        isolation: None,
        backend: BackendChoice::Fake,
    }));
    let board = Board::new(Ok("Fake GPU".into()));
    let (gpu, jobs) = GpuQueue::new();
    let (triggers, changes) = mpsc::channel();
    let results = ServeResults::new(Arc::clone(&runner), gpu, board.clone(), triggers);
    let lab = LabSpec::parse(
        &include_str!("../../../labs/fixtures/coalesce.toml").replace("n = 16777216", "n = 65536"),
        Path::new("labs/coalesce.toml"),
    )
    .expect("lab");
    let kernels = ["copy_chunked", "copy_coalesced"]
        .into_iter()
        .map(|name| (name.to_string(), kernel(name)))
        .collect();
    let requests = [LabRequest {
        lab: &lab,
        kernels: &kernels,
    }];

    let first = results.outcomes(&requests, &mut Quiet);
    assert!(
        matches!(&first[0], LabOutcome::Missing { why } if why.starts_with(MEASURING_NOW)),
        "{first:?}"
    );
    assert_eq!(board.now().measuring, ["coalesce"]);
    results.outcomes(&requests, &mut Quiet);
    let job = jobs.try_recv().expect("a job for the GPU thread");
    assert!(jobs.try_recv().is_err(), "asked for once");

    super::gpu::run(&runner, &board, job);
    assert_eq!(
        changes.try_recv(),
        Ok(Trigger::Measured),
        "the builder is told"
    );
    assert_eq!(
        board.now().measuring,
        ["coalesce"],
        "until a build shows it"
    );
    let ending = results.ended_unshown();
    assert_eq!(ending.len(), 1);
    let second = results.outcomes(&requests, &mut Quiet);
    assert!(
        matches!(&second[0], LabOutcome::Measured { cached: true, .. }),
        "{second:?}"
    );
    results.shown(&ending);
    assert!(board.now().measuring.is_empty());
    assert!(jobs.try_recv().is_err(), "nothing measured again");
}
