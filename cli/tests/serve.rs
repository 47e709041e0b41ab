//! `kernelbook serve` from the outside: the binary started on a copy of the fixture book
//! `tests/serve-book` with the fake device (`KERNELBOOK_DEVICE=fake`, which test builds have),
//! asked over real TCP connections. It grades the exercise as `kernelbook check` does, rebuilds
//! on a save, shows a broken lab's error until the next good save, and refuses every request
//! that is not the reader's without running anything. (The browser's side is
//! tests/browser/check-serve.mjs.)

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `kernelbook serve`, killed when dropped.
struct Server {
    child: Child,
    book: tempfile::TempDir,
    port: u16,
    token: String,
    log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Copies the fixture book to a temp dir.
fn fixture_copy() -> tempfile::TempDir {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/serve-book");
    let dir = tempfile::tempdir().expect("tempdir");
    for sub in ["", "src", "labs"] {
        std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
        for entry in std::fs::read_dir(fixture.join(sub)).expect("fixture") {
            let path = entry.expect("entry").path();
            if path.is_file() {
                let name = path.file_name().expect("a name");
                std::fs::copy(&path, dir.path().join(sub).join(name)).expect("copy");
            }
        }
    }
    dir
}

fn start() -> Server {
    let book = fixture_copy();
    let mut child = Command::new(env!("CARGO_BIN_EXE_kernelbook"))
        .arg("--root")
        .arg(book.path())
        .arg("serve")
        .env("KERNELBOOK_DEVICE", "fake")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kernelbook serve starts");
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let stderr = child.stderr.take().expect("stderr");
    let sink = std::sync::Arc::clone(&log);
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Ok(mut log) = sink.lock() {
                log.push_str(&line);
                log.push('\n');
            }
        }
    });
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("the address");
    let Some(address) = first
        .trim()
        .strip_prefix("kernelbook: serving the book at http://127.0.0.1:")
    else {
        let _ = child.wait();
        std::thread::sleep(Duration::from_millis(200));
        let said = log.lock().map(|log| log.clone()).unwrap_or_default();
        panic!("kernelbook serve printed no address ({first:?}); it said:\n{said}");
    };
    let (port, token) = address.split_once("/?token=").expect("a token");
    Server {
        port: port.parse().expect("a port"),
        token: token.to_string(),
        child,
        book,
        log,
    }
}

/// An answer: its status and body.
#[derive(Debug)]
struct Answer {
    status: u16,
    body: String,
}

impl Server {
    /// Sends `head` (the request line and headers, without `Host` where `host` is given) and
    /// `body` over a fresh connection.
    fn raw(&self, head: &str, body: &str) -> Answer {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .expect("timeout");
        let request = format!(
            "{head}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        // A refused body may be cut off unread: what matters is the answer.
        let _ = stream.write_all(request.as_bytes());
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        let answer = String::from_utf8_lossy(&answer).into_owned();
        let status = answer
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("no status in {answer:?}"));
        let body = answer
            .split_once("\r\n\r\n")
            .map(|(_, body)| body.to_string())
            .unwrap_or_default();
        Answer { status, body }
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// What the page sends to grade `source`, with `replace` in place of the page's headers.
    fn check(&self, exercise: &str, source: &str, replace: &[(&str, &str)]) -> Answer {
        let mut headers = vec![
            ("Host".to_string(), self.host()),
            ("Origin".to_string(), self.origin()),
            ("X-Kernelbook-Token".to_string(), self.token.clone()),
            ("Content-Type".to_string(), "application/json".to_string()),
        ];
        for (name, value) in replace {
            headers.retain(|(n, _)| n != name);
            if !value.is_empty() {
                headers.push((name.to_string(), value.to_string()));
            }
        }
        let head = std::iter::once(format!(
            "POST /__kernelbook/api/exercises/{exercise}/check HTTP/1.1"
        ))
        .chain(headers.iter().map(|(n, v)| format!("{n}: {v}")))
        .collect::<Vec<_>>()
        .join("\r\n");
        self.raw(&head, &serde_json::json!({ "source": source }).to_string())
    }

    fn state(&self) -> serde_json::Value {
        let answer = self.raw(
            &format!(
                "GET /__kernelbook/api/state HTTP/1.1\r\nHost: {}\r\nX-Kernelbook-Token: {}",
                self.host(),
                self.token
            ),
            "",
        );
        assert_eq!(answer.status, 200, "{answer:?}");
        serde_json::from_str(&answer.body).expect("the state is JSON")
    }

    /// Waits until the state satisfies `done`; returns it.
    fn wait_for(&self, what: &str, done: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let state = self.state();
            if done(&state) {
                return state;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: still {state} after 60 s\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until a build newer than `version` is in place and nothing is being measured.
    fn settled_after(&self, version: u64) -> serde_json::Value {
        self.wait_for("a new book, measured", |s| {
            s["version"].as_u64() > Some(version)
                && s["building"] == false
                && s["measuring"].as_array().is_some_and(Vec::is_empty)
        })
    }

    fn log(&self) -> String {
        self.log.lock().map(|log| log.clone()).unwrap_or_default()
    }

    fn path(&self, file: &str) -> PathBuf {
        self.book.path().join(file)
    }
}

fn edit(file: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(file).expect("read");
    assert!(text.contains(from), "{} has no {from:?}", file.display());
    std::fs::write(file, text.replacen(from, to, 1)).expect("write");
}

/// The starter kernel of the fixture's exercise, as the chapter has it.
fn starter(server: &Server) -> String {
    let chapter = std::fs::read_to_string(server.path("src/exercise.md")).expect("chapter");
    let start = chapter
        .find("```cuda kernel=copy_chunked\n")
        .expect("the starter")
        + 28;
    let end = start + chapter[start..].find("```").expect("its end");
    chapter[start..end].to_string()
}

#[test]
fn serve_grades_the_exercise_and_rebuilds_on_every_save() {
    let server = start();
    let first = server.settled_after(0);
    assert_eq!(first["gpu"], "Fake GPU", "{first}");
    let page = server.raw(
        &format!(
            "GET /exercise.html HTTP/1.1\r\nHost: {}\r\nCookie: kernelbook-{}={}",
            server.host(),
            server.port,
            server.token
        ),
        "",
    );
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains("id=\"lab-copy_exercise\""),
        "the lab is shown"
    );
    assert!(
        page.body.contains("kernelbook-live"),
        "with the fake device's numbers, measured in the background"
    );

    // PASS: a correct kernel (the starter with a comment) is as fast as the starter.
    let mine = format!("{}// mine\n", starter(&server));
    let answer = server.check("copy_exercise", &mine, &[]);
    assert_eq!(answer.status, 200, "{answer:?}");
    let report: serde_json::Value = serde_json::from_str(&answer.body).expect("json");
    assert_eq!(report["verdict"], "pass", "{report}");
    assert!(
        report["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("PASS: correct"))
    );
    let roles: Vec<&str> = report["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter_map(|row| row[0].as_str())
        .collect();
    assert_eq!(roles, ["starter", "yours", "solution"]);
    let kept = server.path("exercises/copy_exercise.cu");
    assert_eq!(std::fs::read_to_string(&kept).expect("kept"), mine);

    // FAIL: `#error` on line 2 is a compile error at line 2 of the learner's file.
    let broken = mine.replacen('\n', "\n#error not yet\n", 1);
    let answer = server.check("copy_exercise", &broken, &[]);
    let report: serde_json::Value = serde_json::from_str(&answer.body).expect("json");
    assert_eq!(report["verdict"], "fail", "{report}");
    assert_eq!(
        report["errors"],
        serde_json::json!([{ "line": 2, "message": "error: #error not yet" }])
    );
    assert!(
        server.log().contains("kernelbook: checked `copy_exercise`"),
        "the terminal is told"
    );

    // A save rebuilds the book; a broken lab shows its error until the next good save.
    let version = server.state()["version"].as_u64().expect("a version");
    edit(
        &server.path("src/introduction.md"),
        "reload it.",
        "reload it. Saved.",
    );
    let after = server.settled_after(version);
    let lab = server.path("labs/copy_exercise.toml");
    let good = std::fs::read_to_string(&lab).expect("lab");
    std::fs::write(&lab, good.replace("block = [256]", "block = [256")).expect("break");
    let failed = server.wait_for("the error", |s| s["error"].is_string());
    let error = failed["error"].as_str().expect("text");
    assert!(
        error.contains(&format!("{}:", lab.display())),
        "at the lab file's line: {error}"
    );
    assert_eq!(
        failed["version"], after["version"],
        "the last good book stays"
    );
    assert!(server.log().contains("the book does not build"));
    std::fs::write(&lab, good).expect("fix");
    let fixed = server.settled_after(after["version"].as_u64().expect("version"));
    assert!(fixed["error"].is_null(), "{fixed}");
}

#[test]
fn serve_refuses_every_request_that_is_not_the_readers() {
    let server = start();
    server.settled_after(0);
    let source = starter(&server);
    let refused = [
        (
            "no token",
            server.check("copy_exercise", &source, &[("X-Kernelbook-Token", "")]),
            401,
        ),
        (
            "a wrong token",
            server.check(
                "copy_exercise",
                &source,
                &[("X-Kernelbook-Token", &"0".repeat(64))],
            ),
            401,
        ),
        (
            "a foreign Host",
            server.check(
                "copy_exercise",
                &source,
                &[("Host", &format!("attacker.example:{}", server.port))],
            ),
            403,
        ),
        (
            "a foreign Origin",
            server.check(
                "copy_exercise",
                &source,
                &[("Origin", "http://attacker.example")],
            ),
            403,
        ),
        (
            "no Origin",
            server.check("copy_exercise", &source, &[("Origin", "")]),
            403,
        ),
        (
            "an unknown exercise",
            server.check("rm_rf", &source, &[]),
            404,
        ),
        (
            "an oversized body",
            server.check("copy_exercise", &"x".repeat(100_000), &[]),
            413,
        ),
    ];
    for (what, answer, status) in &refused {
        assert_eq!(answer.status, *status, "{what}: {answer:?}");
    }
    std::fs::write(server.book.path().join("secret.txt"), "SECRET").expect("write");
    for path in [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/..%2f..%2fsecret.txt",
    ] {
        let answer = server.raw(
            &format!(
                "GET {path} HTTP/1.1\r\nHost: {}\r\nCookie: kernelbook-{}={}",
                server.host(),
                server.port,
                server.token
            ),
            "",
        );
        assert_eq!(answer.status, 400, "{path}: {answer:?}");
        assert!(!answer.body.contains("SECRET"));
    }
    assert!(
        !server.path("exercises").exists(),
        "nothing was graded or kept"
    );
    assert!(!server.log().contains("checked `"), "{}", server.log());
}

/// A request that announces a body and sends only part of it, then waits: an announced body
/// over the cap is refused at once, one under it gets a time-out, and the server goes on.
#[test]
fn a_body_that_stalls_gets_a_time_out() {
    let server = start();
    server.settled_after(0);
    for (announced, status, within) in [(100_000_000, 413, 5), (1_000, 408, 30)] {
        let mut stream = TcpStream::connect(("127.0.0.1", server.port)).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .expect("timeout");
        let head = format!(
            "POST /__kernelbook/api/exercises/copy_exercise/check HTTP/1.1\r\nHost: {}\r\n\
             Origin: {}\r\nX-Kernelbook-Token: {}\r\nContent-Type: application/json\r\n\
             Content-Length: {announced}\r\n\r\n{{\"source\":",
            server.host(),
            server.origin(),
            server.token
        );
        let started = Instant::now();
        stream.write_all(head.as_bytes()).expect("send");
        let mut answer = [0u8; 64];
        let read = stream
            .read(&mut answer)
            .expect("an answer before the client gives up");
        let answer = String::from_utf8_lossy(&answer[..read]).into_owned();
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status}")),
            "{announced} bytes announced: {answer:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(within),
            "{announced}: answered after {:?}",
            started.elapsed()
        );
        // The stream stays open on our side, as a stalling client's would.
        drop(stream);
    }
    assert_eq!(
        server.state()["building"],
        false,
        "the server still answers"
    );
}
