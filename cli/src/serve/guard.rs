//! Only the reader gets in. The server listens on 127.0.0.1 alone, and every request passes
//! this gate before any handler sees it:
//!
//! - its `Host` must be a local name with this server's port (`127.0.0.1`, `localhost`,
//!   `[::1]`), so that a web page whose domain was made to resolve to 127.0.0.1 (DNS
//!   rebinding) gets nothing;
//! - an `Origin`, where there is one, must be this server's; a request that changes or runs
//!   anything (any method but GET and HEAD) and a websocket must have one;
//! - it must carry the token made at start ([`Token`]), which only the address printed on the
//!   terminal holds: a page is read with it in the address (`?token=`, then moved into a
//!   cookie for the server's own port, `HttpOnly`, `SameSite=Strict`, and taken out of the
//!   address), a request that changes or runs anything only with it in the
//!   [`TOKEN_HEADER`] header, which a page of another origin cannot add without a CORS
//!   preflight this server never approves (it sends no `Access-Control-Allow-Origin`).
//!
//! [`Gate::admit`] is a pure function of the request's method, address and headers.

use axum::extract::{Request, State};
use axum::http::header::{
    CACHE_CONTROL, CONTENT_TYPE, COOKIE, HOST, LOCATION, ORIGIN, SET_COOKIE, UPGRADE,
};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::fmt;
use std::sync::Arc;

/// The header that carries the token on requests that change or run anything.
pub const TOKEN_HEADER: &str = "x-kernelbook-token";

/// The host names a local reader's browser uses for this server.
const LOCAL_NAMES: [&str; 3] = ["127.0.0.1", "localhost", "[::1]"];

/// Where the server's own API and assets live; the token never leads to a redirect there.
pub const OWN_PREFIX: &str = "/__kernelbook/";

/// A random secret made at each start: 32 bytes from the operating system, in hex.
#[derive(Clone)]
pub struct Token(String);

impl Token {
    pub fn generate() -> Result<Token, getrandom::Error> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes)?;
        Ok(Token(bytes.iter().map(|b| format!("{b:02x}")).collect()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `given` is this token, in time that does not depend on where they differ.
    fn matches(&self, given: &[u8]) -> bool {
        let ours = self.0.as_bytes();
        ours.len() == given.len()
            && ours
                .iter()
                .zip(given)
                .fold(0u8, |diff, (a, b)| diff | (a ^ b))
                == 0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(…)")
    }
}

/// What the gate decides about a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Let it through; `set_cookie`: the token came in the address, and the response sets the
    /// cookie that carries it from now on.
    Admit {
        set_cookie: bool,
    },
    /// A page asked for with the token in its address: sent to `location`, the same address
    /// without it, with the cookie set (so the token stays out of the history and the
    /// `Referer`).
    Redirect {
        location: String,
    },
    Refuse {
        status: StatusCode,
        why: String,
    },
}

/// The checks every request passes; see the module documentation.
#[derive(Debug)]
pub struct Gate {
    token: Token,
    port: u16,
}

impl Gate {
    pub fn new(token: Token, port: u16) -> Gate {
        Gate { token, port }
    }

    /// The token, for the pages (their script sends it with every request that changes or
    /// runs anything).
    pub fn token(&self) -> &str {
        self.token.as_str()
    }

    /// The address to print: the book's first page, with the token.
    pub fn address(&self) -> String {
        format!(
            "http://127.0.0.1:{}/?token={}",
            self.port,
            self.token.as_str()
        )
    }

    /// The cookie that carries the token; named after the port, as cookies ignore ports.
    fn cookie_name(&self) -> String {
        format!("kernelbook-{}", self.port)
    }

    fn set_cookie(&self) -> HeaderValue {
        let cookie = format!(
            "{}={}; Path=/; HttpOnly; SameSite=Strict",
            self.cookie_name(),
            self.token.as_str()
        );
        // Hex digits, a number and fixed words: always a valid header value.
        HeaderValue::from_str(&cookie).unwrap_or_else(|_| HeaderValue::from_static(""))
    }

    pub fn admit(&self, method: &Method, uri: &Uri, headers: &HeaderMap) -> Admission {
        let refuse = |status, why: String| Admission::Refuse { status, why };
        if let Err(why) = self.check_host(headers) {
            return refuse(StatusCode::FORBIDDEN, why);
        }
        let changes = !matches!(*method, Method::GET | Method::HEAD);
        let websocket = headers.contains_key(UPGRADE);
        match headers.get(ORIGIN) {
            Some(origin) if !self.is_our_origin(origin) => {
                return refuse(
                    StatusCode::FORBIDDEN,
                    format!(
                        "a request from {} is refused: only this server's own pages may use it",
                        shown(origin.as_bytes())
                    ),
                );
            }
            None if changes || websocket => {
                return refuse(
                    StatusCode::FORBIDDEN,
                    "a request that changes or runs anything must come from this server's own \
                     pages (it has no Origin)"
                        .into(),
                );
            }
            _ => {}
        }
        if changes {
            return match headers.get(TOKEN_HEADER) {
                None => refuse(
                    StatusCode::UNAUTHORIZED,
                    format!(
                        "a request that changes or runs anything needs the {TOKEN_HEADER} header"
                    ),
                ),
                Some(given) if self.token.matches(given.as_bytes()) => {
                    Admission::Admit { set_cookie: false }
                }
                Some(_) => refuse(StatusCode::UNAUTHORIZED, "wrong token".into()),
            };
        }
        self.admit_reading(uri, headers)
    }

    /// A GET or HEAD: the token in the header, the cookie or the address.
    fn admit_reading(&self, uri: &Uri, headers: &HeaderMap) -> Admission {
        let header = headers.get(TOKEN_HEADER).map(HeaderValue::as_bytes);
        let cookies = self.cookies(headers);
        let (query_token, rest_of_query) = split_token(uri.query().unwrap_or(""));
        let presented: Vec<&[u8]> = header
            .into_iter()
            .chain(cookies.iter().map(|c| c.as_bytes()))
            .chain(query_token.map(str::as_bytes))
            .collect();
        if presented.is_empty() {
            return Admission::Refuse {
                status: StatusCode::UNAUTHORIZED,
                why: "this server needs its token: open the address `kernelbook serve` printed"
                    .into(),
            };
        }
        if !presented.iter().any(|given| self.token.matches(given)) {
            return Admission::Refuse {
                status: StatusCode::UNAUTHORIZED,
                why: "wrong token: open the address this `kernelbook serve` printed".into(),
            };
        }
        let by_address = query_token.is_some_and(|t| self.token.matches(t.as_bytes()));
        if by_address && !uri.path().starts_with(OWN_PREFIX) {
            let location = if rest_of_query.is_empty() {
                uri.path().to_string()
            } else {
                format!("{}?{rest_of_query}", uri.path())
            };
            return Admission::Redirect { location };
        }
        Admission::Admit {
            set_cookie: by_address,
        }
    }

    /// The values of this server's cookie in the request.
    fn cookies(&self, headers: &HeaderMap) -> Vec<String> {
        let name = self.cookie_name();
        headers
            .get_all(COOKIE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .filter(|(key, _)| *key == name)
            .map(|(_, value)| value.to_string())
            .collect()
    }

    fn check_host(&self, headers: &HeaderMap) -> Result<(), String> {
        let answer = || {
            format!(
                "this server answers only to 127.0.0.1:{0} and localhost:{0}",
                self.port
            )
        };
        let Some(host) = headers.get(HOST) else {
            return Err(format!("a request without a Host is refused: {}", answer()));
        };
        let local = host
            .to_str()
            .ok()
            .and_then(|host| host.rsplit_once(':'))
            .is_some_and(|(name, port)| {
                LOCAL_NAMES.iter().any(|n| n.eq_ignore_ascii_case(name))
                    && port.parse() == Ok(self.port)
            });
        if local {
            Ok(())
        } else {
            Err(format!(
                "Host {} is refused: {}",
                shown(host.as_bytes()),
                answer()
            ))
        }
    }

    fn is_our_origin(&self, origin: &HeaderValue) -> bool {
        let Ok(origin) = origin.to_str() else {
            return false;
        };
        LOCAL_NAMES
            .iter()
            .any(|name| origin.eq_ignore_ascii_case(&format!("http://{name}:{}", self.port)))
    }
}

/// The `token` parameter of a query, and the query without it.
fn split_token(query: &str) -> (Option<&str>, String) {
    let mut token = None;
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.strip_prefix("token=") {
            Some(value) => token = Some(value),
            None => rest.push(pair),
        }
    }
    (token, rest.join("&"))
}

/// A header's value as a message may quote it: printable ASCII, 80 characters at most.
fn shown(value: &[u8]) -> String {
    let text: String = value
        .iter()
        .take(80)
        .map(|&b| if b.is_ascii_graphic() { b as char } else { '?' })
        .collect();
    format!("`{text}`")
}

/// The middleware: [`Gate::admit`], then the headers every answer carries.
pub async fn guard(State(gate): State<Arc<Gate>>, request: Request, next: Next) -> Response {
    let admission = gate.admit(request.method(), request.uri(), request.headers());
    let mut response = match admission {
        Admission::Admit { set_cookie } => {
            let mut response = next.run(request).await;
            if set_cookie {
                response.headers_mut().append(SET_COOKIE, gate.set_cookie());
            }
            response
        }
        Admission::Redirect { location } => {
            let mut response = StatusCode::SEE_OTHER.into_response();
            if let Ok(location) = HeaderValue::from_str(&location) {
                response.headers_mut().insert(LOCATION, location);
            }
            response.headers_mut().insert(SET_COOKIE, gate.set_cookie());
            response
        }
        Admission::Refuse { status, why } => {
            crate::output::notice(&format!(
                "kernelbook: refused {} {}: {why}",
                request.method(),
                shown(request.uri().path().as_bytes())
            ));
            let mut response = (status, format!("{why}\n")).into_response();
            response.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            response
        }
    };
    let headers = response.headers_mut();
    // Every answer is fresh (a rebuilt page must not come from the browser's cache), is what
    // its type says, may not be framed (no click-jacking of the Check button) nor read by
    // another site's page, and sends no address on.
    for (name, value) in [
        (CACHE_CONTROL.as_str(), "no-store"),
        ("x-content-type-options", "nosniff"),
        ("content-security-policy", "frame-ancestors 'none'"),
        ("cross-origin-resource-policy", "same-origin"),
        ("referrer-policy", "no-referrer"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}
