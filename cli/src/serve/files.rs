//! The built book, read-only: GET and HEAD of files under the HTML folder, nothing else. A
//! path is percent-decoded and taken apart; one that would climb out of the folder (a `..`
//! part, a backslash, a NUL) is refused before the file system is asked, and one that leads out
//! through a symbolic link is refused after. Each HTML page gets three lines before its
//! `</head>`: the serve script, its stylesheet, and what the script needs (the token and the
//! book's version).

use axum::body::Body;
use axum::http::header::{ALLOW, CONTENT_TYPE, LOCATION};
use axum::http::{HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use percent_encoding::percent_decode_str;
use std::path::{Path, PathBuf};

/// Where a request's path leads in the book.
#[derive(Debug, PartialEq, Eq)]
pub enum Resolved {
    File(PathBuf),
    /// A folder asked for without its final `/`: relative links need it.
    AddSlash,
    NotFound,
    /// The path tries to leave the book.
    Outside(String),
}

/// Resolves the path `raw` (as sent, percent-encoded) under the folder `root`.
pub fn resolve(root: &Path, raw: &str) -> Resolved {
    let Ok(decoded) = percent_decode_str(raw).decode_utf8() else {
        return Resolved::Outside("the path is not UTF-8".into());
    };
    let mut path = root.to_path_buf();
    for part in decoded.split('/') {
        match part {
            "" | "." => {}
            ".." => return Resolved::Outside("the path climbs out of the book (`..`)".into()),
            part if part.contains(['\\', '\0']) => {
                return Resolved::Outside("the path holds a backslash or a NUL".into());
            }
            part => path.push(part),
        }
    }
    // Symbolic links are followed only where they stay inside the book.
    let (Ok(real), Ok(real_root)) = (std::fs::canonicalize(&path), std::fs::canonicalize(root))
    else {
        return Resolved::NotFound;
    };
    if !real.starts_with(&real_root) {
        return Resolved::Outside("the path leads out of the book".into());
    }
    if real.is_dir() {
        if !decoded.ends_with('/') {
            return Resolved::AddSlash;
        }
        let index = real.join("index.html");
        return if index.is_file() {
            Resolved::File(index)
        } else {
            Resolved::NotFound
        };
    }
    if real.is_file() {
        Resolved::File(real)
    } else {
        Resolved::NotFound
    }
}

/// The content type of a file of the book, from its extension.
fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "ttf" => "font/ttf",
        "txt" | "md" | "cu" | "toml" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// What the serve script is told in every page.
#[derive(Debug, Clone)]
pub struct PageContext<'a> {
    pub token: &'a str,
    /// The book's version when the page was read ([`super::status::Status::version`]).
    pub version: u64,
}

/// `html` with the serve script, its stylesheet and its context before `</head>` (or at the
/// start, for a page without one).
pub fn inject(html: &str, context: &PageContext<'_>) -> String {
    let json = serde_json::json!({ "token": context.token, "version": context.version });
    let lines = format!(
        "<meta name=\"kernelbook-serve\" content=\"{}\">\n\
         <link rel=\"stylesheet\" href=\"{prefix}serve.css\">\n\
         <script src=\"{prefix}serve.js\" defer></script>\n",
        json.to_string()
            .replace('&', "&amp;")
            .replace('"', "&quot;"),
        prefix = super::guard::OWN_PREFIX,
    );
    match html.to_ascii_lowercase().find("</head>") {
        Some(at) => format!("{}{lines}{}", &html[..at], &html[at..]),
        None => format!("{lines}{html}"),
    }
}

/// The page shown where the book has not been built yet (its first build failed).
const NOT_BUILT: &str = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
    <title>kernelbook serve</title></head><body><main><h1>The book is not built yet</h1>\
    <p>Its first build failed; the error is below. Fix it and save: this page reloads with the \
    book.</p></main></body></html>\n";

/// Answers a GET or HEAD of a file of the book at `root`; any other method is refused.
pub async fn serve_file(
    method: &Method,
    uri: &Uri,
    root: &Path,
    page: PageContext<'_>,
) -> Response {
    if method != Method::GET && method != Method::HEAD {
        let mut response = (
            StatusCode::METHOD_NOT_ALLOWED,
            "the book is read-only: GET and HEAD only\n",
        )
            .into_response();
        response
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    // The file system is asked off the server's threads.
    let (folder, path) = (root.to_path_buf(), uri.path().to_string());
    let resolved = tokio::task::spawn_blocking(move || resolve(&folder, &path))
        .await
        .unwrap_or(Resolved::NotFound);
    let file = match resolved {
        Resolved::File(file) => file,
        Resolved::AddSlash => {
            let mut response = StatusCode::PERMANENT_REDIRECT.into_response();
            if let Ok(location) = HeaderValue::from_str(&format!("{}/", uri.path())) {
                response.headers_mut().insert(LOCATION, location);
            }
            return response;
        }
        Resolved::Outside(why) => {
            return (StatusCode::BAD_REQUEST, format!("{why}\n")).into_response();
        }
        Resolved::NotFound => return not_found(uri, root, &page).await,
    };
    match tokio::fs::read(&file).await {
        Ok(bytes) => respond(method, &file, bytes, StatusCode::OK, &page),
        Err(err) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot read {}: {err}\n", file.display()),
        )
            .into_response(),
    }
}

/// The book's 404 page, or the not-built page for its first page when there is no book yet.
async fn not_found(uri: &Uri, root: &Path, page: &PageContext<'_>) -> Response {
    if !root.is_dir() && matches!(uri.path(), "/" | "/index.html") {
        let html = inject(NOT_BUILT, page).into_bytes();
        return respond(
            &Method::GET,
            Path::new("index.html"),
            html,
            StatusCode::OK,
            page,
        );
    }
    let page_404 = root.join("404.html");
    match tokio::fs::read(&page_404).await {
        Ok(bytes) => respond(&Method::GET, &page_404, bytes, StatusCode::NOT_FOUND, page),
        Err(_) => (StatusCode::NOT_FOUND, "not found\n").into_response(),
    }
}

fn respond(
    method: &Method,
    file: &Path,
    bytes: Vec<u8>,
    status: StatusCode,
    page: &PageContext<'_>,
) -> Response {
    let kind = content_type(file);
    let bytes = if kind.starts_with("text/html") {
        inject(&String::from_utf8_lossy(&bytes), page).into_bytes()
    } else {
        bytes
    };
    let body = if method == Method::HEAD {
        Body::empty()
    } else {
        Body::from(bytes)
    };
    let mut response = (status, body).into_response();
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(kind));
    response
}
