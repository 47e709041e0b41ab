//! The routes. Everything passes the gate first ([`super::guard`]); then:
//!
//! | route | what |
//! | --- | --- |
//! | `GET /__kernelbook/serve.js`, `serve.css` | the page's script and style |
//! | `GET /__kernelbook/events` | a websocket: the [`Status`] as JSON, now and after each change |
//! | `GET /__kernelbook/api/state` | the [`Status`] once (for scripts: `scripts/bench`) |
//! | `GET /__kernelbook/api/exercises` | the exercises and the GPU they are graded on |
//! | `GET`, `PUT /__kernelbook/api/exercises/NAME` | the learner's last version; keep a new one |
//! | `POST /__kernelbook/api/exercises/NAME/check` | grade the learner's kernel |
//! | `GET`, `HEAD` anything else | a file of the built book ([`super::files`]) |
//!
//! Bodies are capped at [`MAX_BODY`] bytes (a kernel is a few kilobytes) and must arrive
//! within [`BODY_TIME`]: a request that announces a large body and stalls gets 408 instead of
//! holding a connection open forever.

use super::App;
use super::exercises;
use super::files::{PageContext, serve_file};
use super::guard::guard;
use super::status::{Status, page_labs};
use axum::Router;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{DefaultBodyLimit, RawQuery, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderValue, Method, Uri};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use std::sync::Arc;
use tokio::sync::watch;

/// The largest body a request may carry.
pub const MAX_BODY: usize = 64 * 1024;

/// How long a request's body may take to arrive.
pub const BODY_TIME: std::time::Duration = std::time::Duration::from_secs(10);

/// The page's script and style, compiled into the binary.
const SCRIPT: &str = include_str!("assets/serve.js");
const STYLE: &str = include_str!("assets/serve.css");

pub fn router(app: Arc<App>) -> Router {
    let api = Router::new()
        .route("/__kernelbook/api/state", get(state))
        .route("/__kernelbook/api/exercises", get(exercises::list))
        .route(
            "/__kernelbook/api/exercises/{name}",
            get(exercises::source).put(exercises::save),
        )
        .route(
            "/__kernelbook/api/exercises/{name}/check",
            post(exercises::check),
        )
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(middleware::from_fn(body_in_time));
    Router::new()
        .merge(api)
        .route(
            "/__kernelbook/serve.js",
            get(|| asset(SCRIPT, "text/javascript")),
        )
        .route("/__kernelbook/serve.css", get(|| asset(STYLE, "text/css")))
        .route("/__kernelbook/events", get(events))
        .fallback(page)
        .with_state(Arc::clone(&app))
        .layer(middleware::from_fn_with_state(Arc::clone(&app.gate), guard))
}

/// Reads the request's body whole before the handler sees it: refused at once (413) when its
/// announced length is over [`MAX_BODY`], refused (408) when it has not all come within
/// [`BODY_TIME`].
async fn body_in_time(request: axum::extract::Request, next: middleware::Next) -> Response {
    use axum::http::StatusCode;
    let announced = request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok()?.parse::<u64>().ok());
    if announced.is_some_and(|len| len > MAX_BODY as u64) {
        return (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("a body may hold at most {MAX_BODY} bytes"),
        )
            .into_response();
    }
    let (parts, body) = request.into_parts();
    let read = axum::body::to_bytes(body, MAX_BODY);
    match tokio::time::timeout(BODY_TIME, read).await {
        Ok(Ok(bytes)) => {
            let request = axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes));
            next.run(request).await
        }
        Ok(Err(_)) => (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("a body may hold at most {MAX_BODY} bytes"),
        )
            .into_response(),
        Err(_) => (
            StatusCode::REQUEST_TIMEOUT,
            format!("the body did not arrive within {} s", BODY_TIME.as_secs()),
        )
            .into_response(),
    }
}

async fn asset(text: &'static str, kind: &'static str) -> Response {
    let mut response = text.into_response();
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(kind));
    response
}

async fn state(State(app): State<Arc<App>>) -> Response {
    axum::Json(app.board.now()).into_response()
}

async fn page(State(app): State<Arc<App>>, method: Method, uri: Uri) -> Response {
    // The version is read before the file: a page read during a swap is then older than its
    // version says at worst, and reloads once more, never the other way round.
    let version = app.board.now().version;
    let context = PageContext {
        token: app.gate.token(),
        version,
    };
    serve_file(&method, &uri, &app.book_dir, context).await
}

async fn events(
    State(app): State<Arc<App>>,
    RawQuery(query): RawQuery,
    upgrade: WebSocketUpgrade,
) -> Response {
    let status = app.board.subscribe();
    // The labs the page shows are open while its socket is: the GPU measures them first.
    let labs = page_labs(query_value(query.as_deref(), "labs").as_deref());
    let open = app.open.clone();
    // The page only listens: anything it sends is small or a close.
    upgrade
        .max_message_size(4096)
        .on_upgrade(move |socket| async move {
            let _open = open.open(labs);
            follow(socket, status).await;
        })
}

/// The percent-decoded value of `name` in a query string.
fn query_value(query: Option<&str>, name: &str) -> Option<String> {
    query?.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        (key == name).then(|| {
            percent_encoding::percent_decode_str(value)
                .decode_utf8_lossy()
                .into_owned()
        })
    })
}

/// Sends the status now and after every change, until the page goes away.
async fn follow(mut socket: WebSocket, mut status: watch::Receiver<Status>) {
    loop {
        let Ok(text) = serde_json::to_string(&*status.borrow_and_update()) else {
            return;
        };
        if socket.send(Message::Text(text.into())).await.is_err() {
            return;
        }
        loop {
            tokio::select! {
                changed = status.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    break;
                }
                incoming = socket.recv() => match incoming {
                    None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return,
                    Some(Ok(_)) => {}
                },
            }
        }
    }
}
