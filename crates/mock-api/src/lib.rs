//! A loopback server that speaks the Anthropic Messages API from a script, and records every request.
//!
//! Tests start a [`MockServer`] with the exact list of [`Reply`]s they expect to be asked for, point a
//! chapter binary at [`MockServer::base_url`] (`ANTHROPIC_BASE_URL`), then check [`MockServer::requests`].
//!
//! ```text
//!   chapter binary ──POST /v1/messages──▶ MockServer ──▶ next Reply in the script
//!                                             │            (JSON, SSE, error, drop, hang)
//!                                             └─ records RecordedRequest {method, path, headers, body}
//! ```
//!
//! - A [`Reply::Message`] is answered with the `usage` the prompt cache would give (see [`cache`]):
//!   the server remembers the prefix up to each `cache_control` breakpoint of every request, and
//!   sets `input_tokens`, `cache_creation_input_tokens` and `cache_read_input_tokens` (about 4
//!   characters per token); [`MockServer::usage`] lists them. A request with more than four
//!   breakpoints gets the API's 400 instead.
//! - Each `POST /v1/messages` consumes the next reply, in order. One past the end gets HTTP 500 `api_error`
//!   `mock-api: unexpected request #N (script has M replies)`, and still counts.
//! - Any other method or path gets 404 `not_found_error` (a doubled `/v1` shows up here), and counts too.
//! - HTTP/1.1 keep-alive, `Content-Length` and chunked request bodies; every response carries a
//!   `request-id: req_mock_N` header unless the reply sets one.
//! - The server runs on its own thread and tokio runtime, so it works from plain `#[test]`s and async tests
//!   alike; dropping it shuts it down and closes every connection (including hanging ones).
//!
//! ```
//! use mock_api::{MockServer, reply};
//!
//! let server = MockServer::start(vec![reply::text("hello")]);
//! // ... run a binary with ANTHROPIC_BASE_URL=server.base_url() ...
//! assert_eq!(server.request_count(), 0);
//! ```

#![warn(missing_docs)]

pub mod cache;
mod http;
pub mod reply;
pub mod rules;
mod sse;

use std::collections::{HashSet, VecDeque};
use std::net::{Ipv4Addr, SocketAddr, TcpListener as StdListener};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

pub use cache::{CacheUsage, PromptCache};
pub use sse::{Chunking, SseEvent, serialize as serialize_sse};

/// One request the server received, in arrival order.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// The HTTP method, e.g. `POST`.
    pub method: String,
    /// The request target as sent, e.g. `/v1/messages` (query string included).
    pub path: String,
    /// Every header in order, names lower-cased, values trimmed.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON; a JSON string holding the raw text when it is not JSON; `null` when empty.
    pub body: Value,
}

impl RecordedRequest {
    /// The first header with this name (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }

    /// The names in the request's `tools`, in order (empty when it sends none).
    pub fn tool_names(&self) -> Vec<String> {
        let tools = self.body["tools"].as_array().map(Vec::as_slice).unwrap_or_default();
        tools.iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect()
    }

    /// Checks every request rule of [`rules::check_messages`] and [`rules::check_cache_control`],
    /// then [`RecordedRequest::check_tool_pairing`].
    ///
    /// # Errors
    /// A sentence naming the message (and block) at fault and the API's text for the rule.
    pub fn check_api_rules(&self) -> Result<(), String> {
        rules::check_messages(&self.body)?;
        rules::check_cache_control(&self.body)?;
        self.check_tool_pairing()
    }

    /// Checks the Messages API rule on `body.messages`: every assistant `tool_use` gets exactly one
    /// `tool_result` (matching `tool_use_id`) in the very next message, which is a user message with the
    /// `tool_result` blocks before any other block, and no `tool_result` answers anything else.
    ///
    /// # Errors
    /// A sentence naming the message index and the id at fault.
    pub fn check_tool_pairing(&self) -> Result<(), String> {
        let empty = Vec::new();
        let messages = self.body["messages"].as_array().unwrap_or(&empty);
        let blocks = |m: &Value| m["content"].as_array().cloned().unwrap_or_default();
        let mut pending: Vec<String> = Vec::new();
        for (i, message) in messages.iter().enumerate() {
            let content = blocks(message);
            let results: Vec<String> = content
                .iter()
                .filter(|b| b["type"] == "tool_result")
                .map(|b| b["tool_use_id"].as_str().unwrap_or_default().to_string())
                .collect();
            let mut wanted: HashSet<&String> = pending.iter().collect();
            for id in &results {
                if !wanted.remove(id) {
                    return Err(format!(
                        "messages[{i}]: tool_result {id:?} answers no tool_use just before it"
                    ));
                }
            }
            if let Some(id) = wanted.into_iter().next() {
                return Err(format!("messages[{i}]: tool_use {id:?} has no tool_result in this message"));
            }
            let leading = content.iter().take_while(|b| b["type"] == "tool_result").count();
            if leading != results.len() {
                return Err(format!("messages[{i}]: a tool_result comes after another block"));
            }
            pending = if message["role"] == "assistant" {
                content
                    .iter()
                    .filter(|b| b["type"] == "tool_use")
                    .map(|b| b["id"].as_str().unwrap_or_default().to_string())
                    .collect()
            } else {
                Vec::new()
            };
        }
        match pending.first() {
            Some(id) => Err(format!("the last message has tool_use {id:?} with no tool_result after it")),
            None => Ok(()),
        }
    }
}

/// What the server answers to one `POST /v1/messages`.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A Messages API response body (see [`reply::message`]), sent with HTTP 200 as JSON, or as its SSE
    /// stream ([`reply::sse_from_message`], one write per event) when the request has `"stream": true`.
    Message(Value),
    /// A JSON response whatever the request asked: a message (200) or an API error (4xx/5xx). `headers` are
    /// added to `content-type: application/json` and `content-length`.
    Json {
        /// The HTTP status code.
        status: u16,
        /// Extra headers, e.g. `("retry-after", "2")`.
        headers: Vec<(String, String)>,
        /// The body.
        body: Value,
    },
    /// Any status with a body that is not JSON, such as a proxy's HTML error page, with
    /// `content-type` and `content-length`.
    Raw {
        /// The HTTP status code.
        status: u16,
        /// The `content-type` header, e.g. `text/html`.
        content_type: String,
        /// The body, sent as is.
        body: String,
    },
    /// HTTP 200 `text/event-stream` with `transfer-encoding: chunked`; each write is one HTTP chunk.
    Sse {
        /// The stream's items, serialized in order.
        events: Vec<SseEvent>,
        /// How the serialized stream is cut into writes.
        chunking: Chunking,
        /// A pause between writes (not before the first nor after the last).
        delay_between_chunks: Option<Duration>,
        /// `\r\n` line endings instead of `\n`.
        crlf: bool,
    },
    /// Status 200, `content-type` and `content-length: body.len()`, then only the first `after` bytes of
    /// `body`, then the socket closes: a response dropped mid-message.
    DropAfter {
        /// The `content-type` header, e.g. `text/event-stream`.
        content_type: String,
        /// The full body the headers announce.
        body: Vec<u8>,
        /// How many body bytes are sent before closing.
        after: usize,
    },
    /// Close the connection without answering (a connection reset before any response).
    Close,
    /// Read the request, then send nothing and keep the socket open until the server is dropped.
    Hang,
    /// Wait, then send the inner reply.
    Delay(Duration, Box<Reply>),
}

impl Reply {
    /// An SSE reply with [`Chunking::PerEvent`], no delay and `\n` line endings.
    pub fn sse(events: Vec<SseEvent>) -> Reply {
        Reply::Sse { events, chunking: Chunking::PerEvent, delay_between_chunks: None, crlf: false }
    }

    /// Sets how an SSE reply is cut into writes; a [`Reply::Message`] becomes an always-SSE reply first.
    ///
    /// # Panics
    /// On other variants: that is a mistake in the test.
    pub fn chunking(self, chunking: Chunking) -> Reply {
        match self.into_sse() {
            Reply::Sse { events, delay_between_chunks, crlf, .. } => {
                Reply::Sse { events, chunking, delay_between_chunks, crlf }
            }
            other => panic!("mock-api: chunking() needs an SSE reply, got {other:?}"),
        }
    }

    /// Sets the pause between SSE writes; a [`Reply::Message`] becomes an always-SSE reply first.
    ///
    /// # Panics
    /// On other variants.
    pub fn delay_between_chunks(self, delay: Duration) -> Reply {
        match self.into_sse() {
            Reply::Sse { events, chunking, crlf, .. } => {
                Reply::Sse { events, chunking, delay_between_chunks: Some(delay), crlf }
            }
            other => panic!("mock-api: delay_between_chunks() needs an SSE reply, got {other:?}"),
        }
    }

    /// Uses `\r\n` line endings in an SSE reply; a [`Reply::Message`] becomes an always-SSE reply first.
    ///
    /// # Panics
    /// On other variants.
    pub fn crlf(self) -> Reply {
        match self.into_sse() {
            Reply::Sse { events, chunking, delay_between_chunks, .. } => {
                Reply::Sse { events, chunking, delay_between_chunks, crlf: true }
            }
            other => panic!("mock-api: crlf() needs an SSE reply, got {other:?}"),
        }
    }

    /// Adds a response header to a [`Reply::Json`] (a [`Reply::Message`] becomes an always-JSON reply).
    ///
    /// # Panics
    /// On other variants.
    pub fn with_header(self, name: &str, value: &str) -> Reply {
        let (status, mut headers, body) = match self {
            Reply::Json { status, headers, body } => (status, headers, body),
            Reply::Message(body) => (200, Vec::new(), body),
            other => panic!("mock-api: with_header() needs a JSON reply, got {other:?}"),
        };
        headers.push((name.to_string(), value.to_string()));
        Reply::Json { status, headers, body }
    }

    /// Wraps this reply in [`Reply::Delay`].
    pub fn delayed(self, delay: Duration) -> Reply {
        Reply::Delay(delay, Box::new(self))
    }

    fn into_sse(self) -> Reply {
        match self {
            Reply::Message(body) => Reply::sse(reply::sse_from_message(&body)),
            other => other,
        }
    }
}

/// A function that answers each `POST /v1/messages`, for servers without a fixed script (see
/// [`MockServer::start_fn`]).
pub type Responder = Box<dyn Fn(&RecordedRequest) -> Reply + Send + Sync>;

/// Where replies come from.
enum Source {
    Script { replies: VecDeque<Reply>, len: usize },
    Func(Responder),
}

/// What the server thread and the test share.
struct State {
    source: Source,
    requests: Vec<RecordedRequest>,
    /// `POST /v1/messages` requests seen so far.
    messages: usize,
    /// Requests beyond the script or to another route.
    unexpected: Vec<String>,
    /// Whether recorded requests keep their body (else `null`, see [`MockServer::start_fn_no_bodies`]).
    keep_bodies: bool,
    /// TCP connections accepted so far.
    connections: usize,
    /// The prompt cache of this server's session.
    cache: PromptCache,
    /// The cache's `usage` of each [`Reply::Message`] answered, in order.
    usage: Vec<CacheUsage>,
}

impl State {
    /// Records `request` and picks its reply and `request-id`.
    fn answer(&mut self, mut request: RecordedRequest) -> (Reply, String) {
        let route = request.method == "POST" && request.path.split('?').next() == Some("/v1/messages");
        let reply = if !route {
            let message = format!("mock-api: no route for {} {}", request.method, request.path);
            self.unexpected.push(message.clone());
            reply::error(404, "not_found_error", &message)
        } else {
            self.messages += 1;
            match &mut self.source {
                Source::Func(f) => f(&request),
                Source::Script { replies, len } => match replies.pop_front() {
                    Some(reply) => reply,
                    None => {
                        let message = format!(
                            "mock-api: unexpected request #{} (script has {len} replies)",
                            self.messages
                        );
                        self.unexpected.push(message.clone());
                        reply::error(500, "api_error", &message)
                    }
                },
            }
        };
        let reply = if route { self.with_cache_usage(reply, &request.body) } else { reply };
        if !self.keep_bodies {
            request.body = Value::Null;
        }
        self.requests.push(request);
        (reply, format!("req_mock_{}", self.requests.len()))
    }

    /// A [`Reply::Message`] (or one delayed) with the `usage` the prompt cache gives a request
    /// with `body` (see [`cache`]); the API's 400 when `body` has too many breakpoints. Any other
    /// reply is sent as scripted.
    fn with_cache_usage(&mut self, reply: Reply, body: &Value) -> Reply {
        match reply {
            Reply::Message(mut message) => match self.cache.answer(body) {
                Ok(usage) => {
                    if !message["usage"].is_object() {
                        message["usage"] = serde_json::json!({"output_tokens": 1});
                    }
                    message["usage"]["input_tokens"] = usage.input_tokens.into();
                    message["usage"]["cache_creation_input_tokens"] =
                        usage.cache_creation_input_tokens.into();
                    message["usage"]["cache_read_input_tokens"] = usage.cache_read_input_tokens.into();
                    self.usage.push(usage);
                    Reply::Message(message)
                }
                Err(text) => reply::error(400, "invalid_request_error", &text),
            },
            Reply::Delay(delay, inner) => Reply::Delay(delay, Box::new(self.with_cache_usage(*inner, body))),
            other => other,
        }
    }
}

/// A Messages API server on `127.0.0.1`, answering from a script on its own thread. Dropping it stops the
/// server and closes every connection.
pub struct MockServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl MockServer {
    /// Starts a server on a free port that answers the `POST /v1/messages` requests with `script`, in order.
    ///
    /// # Panics
    /// When no loopback port can be bound (use [`MockServer::try_start`] to handle that).
    pub fn start(script: Vec<Reply>) -> MockServer {
        match Self::try_start(script) {
            Ok(server) => server,
            Err(e) => panic!("mock-api: cannot start the server: {e}"),
        }
    }

    /// [`MockServer::start`], returning the bind or thread error.
    ///
    /// # Errors
    /// Binding `127.0.0.1:0`, or starting the thread or runtime, failed.
    pub fn try_start(script: Vec<Reply>) -> std::io::Result<MockServer> {
        let len = script.len();
        Self::spawn(0, Source::Script { replies: script.into(), len }, true)
    }

    /// Starts a server on a free port that answers every `POST /v1/messages` with `f(request)`.
    ///
    /// # Panics
    /// When no loopback port can be bound.
    pub fn start_fn(f: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static) -> MockServer {
        match Self::try_start_fn_on(0, f) {
            Ok(server) => server,
            Err(e) => panic!("mock-api: cannot start the server: {e}"),
        }
    }

    /// Like [`MockServer::start_fn`] on `127.0.0.1:port` (0: any free port).
    ///
    /// # Errors
    /// Binding the port, or starting the thread or runtime, failed.
    pub fn try_start_fn_on(
        port: u16,
        f: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static,
    ) -> std::io::Result<MockServer> {
        Self::spawn(port, Source::Func(Box::new(f)), true)
    }

    /// Like [`MockServer::start_fn`], but the requests it records keep no body (`body` is `null`
    /// in [`MockServer::requests`]; `f` still sees it). For long sessions, such as the bench's
    /// 1,000 rounds, whose bodies add up to gigabytes once parsed.
    ///
    /// # Panics
    /// When no loopback port can be bound.
    pub fn start_fn_no_bodies(f: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static) -> MockServer {
        match Self::spawn(0, Source::Func(Box::new(f)), false) {
            Ok(server) => server,
            Err(e) => panic!("mock-api: cannot start the server: {e}"),
        }
    }

    fn spawn(port: u16, source: Source, keep_bodies: bool) -> std::io::Result<MockServer> {
        let listener = StdListener::bind((Ipv4Addr::LOCALHOST, port))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let state = Arc::new(Mutex::new(State {
            source,
            requests: Vec::new(),
            messages: 0,
            unexpected: Vec::new(),
            keep_bodies,
            connections: 0,
            cache: PromptCache::default(),
            usage: Vec::new(),
        }));
        let (shutdown, stop) = oneshot::channel::<()>();
        let shared = Arc::clone(&state);
        let thread =
            std::thread::Builder::new().name(format!("mock-api-{}", addr.port())).spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = TcpListener::from_std(listener) else { return };
                    tokio::select! {
                        _ = stop => {}
                        () = accept_loop(listener, shared) => {}
                    }
                });
                // Dropping the runtime here drops every connection task, closing its socket.
            })?;
        Ok(MockServer { addr, state, shutdown: Some(shutdown), thread: Some(thread) })
    }

    /// The base URL to give a client, `http://127.0.0.1:PORT` (no trailing slash, no `/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The socket address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request received so far (any route), in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().requests.clone()
    }

    /// The input counts of the `usage` of every [`Reply::Message`] answered so far, in order, as
    /// the simulated prompt cache split them (see [`cache`]).
    pub fn usage(&self) -> Vec<CacheUsage> {
        self.lock().usage.clone()
    }

    /// Sets the smallest prefix, in tokens, the simulated prompt cache keeps (default
    /// [`cache::DEFAULT_MINIMUM`]; 0 caches every breakpoint, for a test with a short session).
    pub fn set_cache_minimum(&self, tokens: u64) {
        self.lock().cache.set_minimum(tokens);
    }

    /// How many TCP connections the server accepted so far: a client that keeps its connection
    /// alive between requests (HTTP/1.1 keep-alive) makes one for a whole session.
    pub fn connections(&self) -> usize {
        self.lock().connections
    }

    /// How many requests (any route, including unexpected ones) were received so far.
    pub fn request_count(&self) -> usize {
        self.lock().requests.len()
    }

    /// How many scripted replies have not been asked for yet (0 for [`MockServer::start_fn`]).
    pub fn remaining(&self) -> usize {
        match &self.lock().source {
            Source::Script { replies, .. } => replies.len(),
            Source::Func(_) => 0,
        }
    }

    /// Asserts the script was followed exactly: every reply used, no request beyond it, none to another
    /// route.
    ///
    /// # Panics
    /// Otherwise, with the reason.
    pub fn assert_done(&self) {
        let remaining = self.remaining();
        let state = self.lock();
        assert!(state.unexpected.is_empty(), "mock-api: unexpected requests: {:?}", state.unexpected);
        assert!(remaining == 0, "mock-api: {remaining} scripted replies were never asked for");
    }

    /// Asserts [`RecordedRequest::check_tool_pairing`] on every request received.
    ///
    /// # Panics
    /// On the first request that breaks it.
    pub fn assert_tool_pairing(&self) {
        for (i, request) in self.requests().iter().enumerate() {
            if let Err(e) = request.check_tool_pairing() {
                panic!("mock-api: request #{}: {e}", i + 1);
            }
        }
    }

    /// Asserts [`RecordedRequest::check_api_rules`] on every `POST /v1/messages` received.
    ///
    /// # Panics
    /// On the first request that breaks a rule, with the request body.
    pub fn assert_api_rules(&self) {
        for (i, request) in self.requests().iter().enumerate() {
            if request.path.starts_with("/v1/messages")
                && let Err(e) = request.check_api_rules()
            {
                panic!("mock-api: request #{}: {e}\nbody: {}", i + 1, request.body);
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer").field("addr", &self.addr).finish_non_exhaustive()
    }
}

async fn accept_loop(listener: TcpListener, state: Arc<Mutex<State>>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                state.lock().unwrap_or_else(|p| p.into_inner()).connections += 1;
                let _ = stream.set_nodelay(true);
                tokio::spawn(serve_connection(stream, Arc::clone(&state)));
            }
            // Out of file descriptors and the like: wait and try again.
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

/// Serves requests on one connection until the client closes it or a reply ends it.
async fn serve_connection(mut stream: TcpStream, state: Arc<Mutex<State>>) {
    let mut buf = Vec::new();
    loop {
        let head = match http::read_head(&mut stream, &mut buf).await {
            Ok(Some(head)) => head,
            Ok(None) => return,
            Err(e) => return bad_request(&mut stream, &e).await,
        };
        if head.header("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
            && http::send(&mut stream, b"HTTP/1.1 100 Continue\r\n\r\n").await.is_err()
        {
            return;
        }
        let raw = match http::read_body(&mut stream, &mut buf, &head, false).await {
            Ok(raw) => raw,
            Err(e) => return bad_request(&mut stream, &e).await,
        };
        let mut start = head.start_line.split_whitespace();
        let method = start.next().unwrap_or_default().to_string();
        let path = start.next().unwrap_or_default().to_string();
        let version = start.next().unwrap_or("HTTP/1.1");
        let connection = head.header("connection").unwrap_or_default().to_ascii_lowercase();
        let keep_alive =
            if version == "HTTP/1.0" { connection == "keep-alive" } else { connection != "close" };
        let body = if raw.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&raw)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&raw).into()))
        };
        let wants_stream = body["stream"] == true;
        let request = RecordedRequest { method, path, headers: head.headers, body };
        let (reply, request_id) =
            state.lock().unwrap_or_else(std::sync::PoisonError::into_inner).answer(request);
        match respond(&mut stream, reply, &request_id, wants_stream, keep_alive).await {
            Ok(true) => {}
            Ok(false) | Err(_) => return,
        }
    }
}

/// Answers a request that could not be parsed with 400 `invalid_request_error`, then closes.
async fn bad_request(stream: &mut TcpStream, error: &http::HttpError) {
    if matches!(error, http::HttpError::Bad(_)) {
        let body = reply::error_body("invalid_request_error", &format!("mock-api: {error}")).to_string();
        let headers = vec![
            ("content-type".to_string(), "application/json".to_string()),
            ("content-length".to_string(), body.len().to_string()),
            ("connection".to_string(), "close".to_string()),
        ];
        let mut bytes = http::head_bytes(400, &headers);
        bytes.extend_from_slice(body.as_bytes());
        let _ = http::send(stream, &bytes).await;
    }
}

/// Sends `reply`; `Ok(true)` when the connection can serve another request.
async fn respond(
    stream: &mut TcpStream,
    mut reply: Reply,
    request_id: &str,
    wants_stream: bool,
    keep_alive: bool,
) -> std::io::Result<bool> {
    let reply = loop {
        reply = match reply {
            Reply::Delay(delay, inner) => {
                tokio::time::sleep(delay).await;
                *inner
            }
            Reply::Message(body) if wants_stream => Reply::sse(reply::sse_from_message(&body)),
            Reply::Message(body) => reply::json(body),
            other => break other,
        };
    };
    let common = |extra: Vec<(String, String)>, keep: bool| {
        let mut headers = extra;
        if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("request-id")) {
            headers.push(("request-id".to_string(), request_id.to_string()));
        }
        headers.push(("connection".to_string(), if keep { "keep-alive" } else { "close" }.to_string()));
        headers
    };
    match reply {
        Reply::Json { status, headers, body } => {
            let body = body.to_string();
            let mut all = vec![
                ("content-type".to_string(), "application/json".to_string()),
                ("content-length".to_string(), body.len().to_string()),
            ];
            all.extend(headers);
            let mut bytes = http::head_bytes(status, &common(all, keep_alive));
            bytes.extend_from_slice(body.as_bytes());
            http::send(stream, &bytes).await?;
            Ok(keep_alive)
        }
        Reply::Raw { status, content_type, body } => {
            let headers = vec![
                ("content-type".to_string(), content_type),
                ("content-length".to_string(), body.len().to_string()),
            ];
            let mut bytes = http::head_bytes(status, &common(headers, keep_alive));
            bytes.extend_from_slice(body.as_bytes());
            http::send(stream, &bytes).await?;
            Ok(keep_alive)
        }
        Reply::Sse { events, chunking, delay_between_chunks, crlf } => {
            let headers = vec![
                ("content-type".to_string(), "text/event-stream; charset=utf-8".to_string()),
                ("cache-control".to_string(), "no-cache".to_string()),
                ("transfer-encoding".to_string(), "chunked".to_string()),
            ];
            http::send(stream, &http::head_bytes(200, &common(headers, keep_alive))).await?;
            for (i, piece) in sse::pieces(&events, crlf, chunking).iter().enumerate() {
                if let (true, Some(delay)) = (i > 0, delay_between_chunks) {
                    tokio::time::sleep(delay).await;
                }
                http::send(stream, &http::chunk(piece)).await?;
            }
            http::send(stream, b"0\r\n\r\n").await?;
            Ok(keep_alive)
        }
        Reply::DropAfter { content_type, body, after } => {
            let headers = vec![
                ("content-type".to_string(), content_type),
                ("content-length".to_string(), body.len().to_string()),
            ];
            let mut bytes = http::head_bytes(200, &common(headers, false));
            bytes.extend_from_slice(&body[..after.min(body.len())]);
            http::send(stream, &bytes).await?;
            Ok(false)
        }
        Reply::Hang => std::future::pending().await,
        Reply::Close | Reply::Message(_) | Reply::Delay(..) => Ok(false),
    }
}

#[cfg(test)]
mod tests;
