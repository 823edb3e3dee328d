//! How a request reaches the endpoint and its answer comes back.
//!
//! Source: ours, for speed: a local endpoint needs no TLS set-up. Two ways, one interface ([`Transport::send`] gives an [`Answer`]):
//!
//! | endpoint | transport | why |
//! |---|---|---|
//! | `https://…`, or any endpoint while `HTTP_PROXY`/`ALL_PROXY` is set | reqwest with rustls | TLS with the system's CA certificates, proxies from the environment |
//! | plain `http://…` (a local model, the tests' loopback server) | hyper's own client | no TLS set-up, no proxy and redirect layers: less code run at start-up and per request |
//!
//! Both send the same bytes with the same headers; the loopback tests run the client's cases over
//! both ([`AnthropicClient::via_reqwest`](super::AnthropicClient::via_reqwest)).

use std::pin::Pin;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use http_body_util::BodyDataStream;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use reqwest::header::HeaderMap;

use super::Timeouts;
use super::wire::{Chunks, RequestBody};

/// The body of an answer, chunk by chunk; an error is the transport's description of it.
pub(super) type BodyStream = Pin<Box<dyn Stream<Item = Result<Bytes, String>> + Send>>;

/// An answer's status, headers and body.
pub(super) struct Answer {
    /// The HTTP status code.
    pub status: u16,
    /// The response headers.
    pub headers: HeaderMap,
    /// The body, read as it arrives.
    pub body: BodyStream,
}

/// The HTTP client behind [`super::AnthropicClient`]; see the module table.
pub(super) enum Transport {
    /// reqwest with rustls, for https and proxies.
    Reqwest(reqwest::Client),
    /// hyper's client on plain TCP, with the URI and the headers of every request.
    Plain(Box<(Client<HttpConnector, Chunks>, http::Uri, HeaderMap)>),
}

impl Transport {
    /// The reqwest client: `headers` on every request, the connect timeout, no redirects (the
    /// API never sends one, and a POST body cannot follow it). For a plain `http://` endpoint the
    /// root store is empty, so a machine without CA certificates still works.
    ///
    /// # Errors
    /// reqwest's description when the TLS backend cannot start.
    pub(super) fn reqwest(headers: HeaderMap, timeouts: &Timeouts, plain_http: bool) -> Result<Self, String> {
        let mut builder = reqwest::Client::builder()
            .default_headers(headers)
            .connect_timeout(timeouts.connect)
            .redirect(reqwest::redirect::Policy::none());
        if plain_http {
            builder = builder.tls_certs_only(Vec::new());
        }
        builder.build().map(Transport::Reqwest).map_err(|e| describe(&e))
    }

    /// hyper's client for a plain `http://` endpoint: requests to `url` with `headers`, the
    /// connect timeout, `TCP_NODELAY` (as reqwest sets it), idle connections kept for reuse.
    ///
    /// # Errors
    /// `url` is not a valid URI.
    pub(super) fn plain(url: &reqwest::Url, headers: HeaderMap, timeouts: &Timeouts) -> Result<Self, String> {
        let uri: http::Uri = url.as_str().parse().map_err(|e| format!("{url}: {e}"))?;
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(timeouts.connect));
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new()).pool_timer(TokioTimer::new()).build(connector);
        Ok(Transport::Plain(Box::new((client, uri, headers))))
    }

    /// Sends `body` to `url` with `POST` and returns the answer once its head has arrived.
    ///
    /// # Errors
    /// The transport's description of why no answer came (connection refused, timed out, …).
    pub(super) async fn send(&self, url: &reqwest::Url, body: &RequestBody) -> Result<Answer, String> {
        match self {
            Transport::Reqwest(http) => {
                let response =
                    http.post(url.clone()).body(body.to_http()).send().await.map_err(|e| describe(&e))?;
                let (parts, body) = http::Response::from(response).into_parts();
                let body = BodyDataStream::new(body).map(|r| r.map_err(|e| describe(&e)));
                Ok(Answer { status: parts.status.as_u16(), headers: parts.headers, body: Box::pin(body) })
            }
            Transport::Plain(plain) => {
                let (client, uri, headers) = &**plain;
                let mut request = http::Request::new(body.to_chunks());
                *request.method_mut() = http::Method::POST;
                *request.uri_mut() = uri.clone();
                *request.headers_mut() = headers.clone();
                let response = client
                    .request(request)
                    .await
                    .map_err(|e| format!("error sending request for url ({url}): {}", describe(&e)))?;
                let (parts, body) = response.into_parts();
                let body = BodyDataStream::new(body).map(|r| r.map_err(|e| describe(&e)));
                Ok(Answer { status: parts.status.as_u16(), headers: parts.headers, body: Box::pin(body) })
            }
        }
    }
}

/// Whether the environment names a proxy for plain http (`HTTP_PROXY`, `ALL_PROXY`, either case),
/// which reqwest honours and hyper's client does not.
pub(super) fn proxy_in_env() -> bool {
    ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()))
}

/// An error with its chain of causes, `: `-separated, and ` (timed out)` when a cause was a
/// timeout that the text does not already say.
pub(super) fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut timed_out = false;
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if !std::ptr::addr_eq(s, e) {
            text.push_str(": ");
            text.push_str(&s.to_string());
        }
        timed_out |= s.downcast_ref::<reqwest::Error>().is_some_and(reqwest::Error::is_timeout)
            || s.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut);
        source = s.source();
    }
    if timed_out && !text.contains("timed out") {
        text.push_str(" (timed out)");
    }
    text
}
