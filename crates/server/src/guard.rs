//! What keeps a web page from driving the server through its visitor's browser: a request
//! must name a host the server serves (a DNS-rebinding page names its own domain, which
//! resolves to 127.0.0.1), and a request that changes something must not come from another
//! site's page (the browser says so in `Sec-Fetch-Site` or `Origin`, as Go's
//! `CrossOriginProtection` reads them). JSON bodies must say they are JSON (`JsonBody`), which
//! a page cannot send across sites without the browser asking first.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::{HOST, ORIGIN};
use axum::http::{HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::AppState;
use crate::error::{ApiError, ErrorCode};

/// The hosts a server answers to: loopback names always, the address it listens on, and the
/// names the operator adds (`--allow-host`; `*` for any).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowedHosts {
    names: Vec<String>,
    any: bool,
}

impl AllowedHosts {
    /// The loopback names and `extra` (`*` allows any host).
    pub fn new(extra: &[String]) -> Self {
        let mut names: Vec<String> =
            ["localhost", "127.0.0.1", "::1"].iter().map(ToString::to_string).collect();
        let any = extra.iter().any(|h| h == "*");
        names.extend(extra.iter().filter(|h| *h != "*").map(|h| normalise(h)));
        Self { names, any }
    }

    /// These hosts and the address the server listens on (a client that names its IP
    /// directly names no domain an attacker could point elsewhere).
    #[must_use]
    pub fn listening_on(mut self, addr: SocketAddr) -> Self {
        if !addr.ip().is_unspecified() {
            self.names.push(addr.ip().to_string());
        }
        self
    }

    /// Whether `host` (a `Host` header: a name or address, with or without its port) is served.
    pub fn allows(&self, host: &str) -> bool {
        if self.any {
            return true;
        }
        let name = strip_port(host);
        let name = normalise(name);
        name.ends_with(".localhost") || self.names.contains(&name)
    }
}

/// A host name as compared: lower case, without brackets or a final dot.
fn normalise(name: &str) -> String {
    name.trim_start_matches('[').trim_end_matches(']').trim_end_matches('.').to_ascii_lowercase()
}

/// `host:port`, `[v6]:port` or a bare host, without the port.
fn strip_port(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split_once(']').map_or(rest, |(ip, _)| ip);
    }
    if host.parse::<IpAddr>().is_ok() {
        return host; // a bare IPv6 address has colons of its own
    }
    host.rsplit_once(':').map_or(host, |(name, _)| name)
}

/// Whether the browser says the request was sent by another site's page.
fn cross_site(headers: &HeaderMap, host: &str) -> bool {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    match header("sec-fetch-site") {
        Some("same-origin" | "none") => return false,
        Some(_) => return true,
        None => {}
    }
    // Older browsers: an `Origin` whose host is not the one asked.
    headers.get(ORIGIN).and_then(|v| v.to_str().ok()).is_some_and(|origin| {
        let authority = origin.split_once("://").map_or(origin, |(_, rest)| rest);
        origin == "null" || !authority.eq_ignore_ascii_case(host)
    })
}

/// The middleware: 403 `forbidden` for a host not served, or a change sent by another site.
pub(crate) async fn guard(
    State(state): State<Arc<AppState>>,
    req: Request,
    next: Next,
) -> Response {
    // A browser always names the host; a request that names none comes from a program (an
    // HTTP/1.0 client, a test driving the router), which no web page can make.
    let named = req
        .headers()
        .get(HOST)
        .map(|v| v.to_str().unwrap_or("\u{fffd}"))
        .or_else(|| req.uri().authority().map(axum::http::uri::Authority::as_str));
    let host = named.unwrap_or_default().to_string();
    if named.is_some() && !state.config.allowed_hosts.allows(&host) {
        return ApiError::new(
            ErrorCode::Forbidden,
            format!(
                "this server does not answer to the host `{host}`; start it with --allow-host \
                 NAME to serve that name"
            ),
        )
        .into_response();
    }
    let safe = matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if !safe && cross_site(req.headers(), &host) {
        return ApiError::new(
            ErrorCode::Forbidden,
            "a request from another site's page; this server takes changes only from its own \
             pages and from programs",
        )
        .into_response();
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_the_listening_address_and_added_names_are_served() {
        let hosts = AllowedHosts::new(&["Search.Example.org".into()])
            .listening_on("10.0.0.5:7700".parse().unwrap());
        for ok in [
            "localhost:7700",
            "127.0.0.1:7700",
            "[::1]:7700",
            "localhost",
            "app.localhost:80",
            "10.0.0.5:7700",
            "search.example.org",
            "SEARCH.example.org.:443",
        ] {
            assert!(hosts.allows(ok), "{ok}");
        }
        for bad in ["evil.example", "evil.example:7700", "127.0.0.1.evil.example", "", "10.0.0.6"] {
            assert!(!hosts.allows(bad), "{bad}");
        }
        assert!(AllowedHosts::new(&["*".into()]).allows("anything.example"));
        let unspecified = AllowedHosts::new(&[]).listening_on("0.0.0.0:7700".parse().unwrap());
        assert!(!unspecified.allows("0.0.0.0:7700"));
    }

    #[test]
    fn a_change_from_another_site_is_told_apart_from_the_servers_own_pages() {
        let headers = |pairs: &[(&'static str, &'static str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(*k, v.parse().unwrap());
            }
            h
        };
        let host = "127.0.0.1:7700";
        assert!(!cross_site(&headers(&[]), host), "a program sends neither header");
        assert!(!cross_site(&headers(&[("sec-fetch-site", "same-origin")]), host));
        assert!(cross_site(&headers(&[("sec-fetch-site", "cross-site")]), host));
        assert!(cross_site(&headers(&[("sec-fetch-site", "same-site")]), host));
        assert!(!cross_site(&headers(&[("origin", "http://127.0.0.1:7700")]), host));
        assert!(cross_site(&headers(&[("origin", "http://evil.example")]), host));
        assert!(cross_site(&headers(&[("origin", "null")]), host));
    }
}
