//! The `Model` the loop talks to, and the two ways to answer without a network.
//!
//! - [`crate::client::AnthropicClient`]: the real Messages API.
//! - [`ReplayModel`]: answers from recorded responses, one per request, in order.
//! - [`Recording`]: wraps any model and appends each response it returns to a JSONL file.
//!
//! Streaming is the client's business: a [`Model`] reports each text delta to the caller's
//! [`EventSink`] as it arrives, and returns the whole response at the end. Models that answer at
//! once (replay, the JSON path) report no delta, so the caller shows their text from the response.
//!
//! A recording is a JSONL file: one Messages API response body (`{"id","type":"message",…}`) per
//! line, in the order the session received them. `--record FILE` writes one; `--replay FILE` and
//! `--demo` read one. A line may also be an error answer, the API's error body with the HTTP
//! status it came with (`{"type":"error","status":400,"error":{"type":…,"message":…}}`): the
//! replay fails that request with it, as the endpoint did (s08's demo replays a "prompt is too
//! long"). Source: ours (goose's record/replay decorator, STYLE.md).

use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Mutex;

use crate::client::AnthropicClient;
use crate::error::ApiError;
use crate::events::{self, EventSink, Level};
use crate::messages::{MessagesRequest, MessagesResponse};

/// The future a [`Model`] returns.
pub type ModelFuture<'a> = Pin<Box<dyn Future<Output = Result<MessagesResponse, ApiError>> + Send + 'a>>;

/// Something that answers a Messages API request.
pub trait Model: Send + Sync {
    /// Answers one request with one assistant response. Text that streams in is reported to
    /// `events` as [`Event::TextDelta`](crate::events::Event::TextDelta)s before the future
    /// completes, and each retry as an [`Event::Retry`](crate::events::Event::Retry); a model that
    /// does not stream reports no delta. Dropping the future cancels the request.
    fn create<'a>(&'a self, request: &'a MessagesRequest, events: &'a dyn EventSink) -> ModelFuture<'a>;

    /// Whether the requests this model sends carry prompt-caching breakpoints
    /// ([`crate::client::cache`]), for a listener that shows them (`/history`). `false` unless
    /// the model says otherwise: a replay sends nothing.
    fn prompt_caching(&self) -> bool {
        false
    }
}

impl Model for AnthropicClient {
    fn create<'a>(&'a self, request: &'a MessagesRequest, events: &'a dyn EventSink) -> ModelFuture<'a> {
        Box::pin(AnthropicClient::create(self, request, events))
    }

    fn prompt_caching(&self) -> bool {
        AnthropicClient::prompt_caching(self)
    }
}

/// Answers from recorded responses, in order; needs no key and no network.
pub struct ReplayModel {
    source: String,
    responses: Vec<Result<MessagesResponse, ApiError>>,
    next: Mutex<usize>,
}

/// A recorded error answer (see the module docs).
#[derive(serde::Deserialize)]
struct RecordedError {
    #[serde(rename = "type")]
    kind: String,
    status: u16,
    error: RecordedErrorBody,
}

/// The `error` object of a [`RecordedError`] (Messages API "Errors").
#[derive(serde::Deserialize)]
struct RecordedErrorBody {
    #[serde(rename = "type")]
    error_type: String,
    message: String,
}

impl ReplayModel {
    /// Parses JSONL text: one response body, or one error answer (see the module docs), per
    /// non-blank line. `source` names it in errors.
    ///
    /// # Errors
    /// [`ApiError::Replay`] naming the line that is neither a Messages API response nor an error
    /// answer, or saying the text holds no response at all.
    pub fn from_jsonl(source: impl Into<String>, text: &str) -> Result<Self, ApiError> {
        let source = source.into();
        let mut responses = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            if let Ok(recorded) = serde_json::from_str::<RecordedError>(line)
                && recorded.kind == "error"
            {
                responses.push(Err(ApiError::Api {
                    status: recorded.status,
                    error_type: recorded.error.error_type,
                    message: recorded.error.message,
                    request_id: None,
                }));
                continue;
            }
            let response: MessagesResponse = serde_json::from_str(line)
                .map_err(|e| ApiError::Replay(format!("{source} line {}: {e}", i + 1)))?;
            responses.push(Ok(response));
        }
        if responses.is_empty() {
            return Err(ApiError::Replay(format!("{source} holds no recorded turns")));
        }
        Ok(Self { source, responses, next: Mutex::new(0) })
    }

    /// Reads a recording from `path`.
    ///
    /// # Errors
    /// [`ApiError::Replay`] when the file cannot be read or a line does not parse.
    pub fn from_file(path: &Path) -> Result<Self, ApiError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ApiError::Replay(format!("cannot read {}: {e}", path.display())))?;
        Self::from_jsonl(path.display().to_string(), &text)
    }

    /// How many recorded responses are left.
    pub fn remaining(&self) -> usize {
        let next = *self.next.lock().unwrap_or_else(|p| p.into_inner());
        self.responses.len().saturating_sub(next)
    }
}

impl Model for ReplayModel {
    fn create<'a>(&'a self, _request: &'a MessagesRequest, _events: &'a dyn EventSink) -> ModelFuture<'a> {
        let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
        let result = match self.responses.get(*next) {
            Some(r) => {
                *next += 1;
                r.clone()
            }
            None => Err(ApiError::Replay(format!(
                "{} has no more recorded turns (all {} were used)",
                self.source,
                self.responses.len()
            ))),
        };
        Box::pin(async move { result })
    }
}

/// Wraps a model and appends every response it returns to a JSONL file (`--record FILE`).
pub struct Recording<M> {
    inner: M,
    path: PathBuf,
    file: Mutex<std::fs::File>,
}

impl<M: Model> Recording<M> {
    /// Opens `path` for appending (creating it) and wraps `inner`.
    ///
    /// # Errors
    /// The I/O error when the file cannot be opened.
    pub fn new(inner: M, path: &Path) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self { inner, path: path.to_owned(), file: Mutex::new(file) })
    }
}

impl<M: Model> Model for Recording<M> {
    fn create<'a>(&'a self, request: &'a MessagesRequest, events: &'a dyn EventSink) -> ModelFuture<'a> {
        Box::pin(async move {
            let response = self.inner.create(request, events).await?;
            let line = serde_json::to_string(&response).map_err(|e| ApiError::Decode(e.to_string()))?;
            let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
            if let Err(e) = writeln!(file, "{line}").and_then(|()| file.flush()) {
                // A failed recording must not cost the user the answer.
                events::line(
                    events,
                    Level::Warning,
                    &format!("could not append to {}: {e}", self.path.display()),
                );
            }
            Ok(response)
        })
    }

    fn prompt_caching(&self) -> bool {
        self.inner.prompt_caching()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::Message;

    fn request() -> MessagesRequest {
        MessagesRequest {
            model: "m".into(),
            max_tokens: 10,
            system: String::new(),
            messages: vec![Message::user_text("hi")].into(),
            tools: Vec::new().into(),
            stream: None,
        }
    }

    const TWO: &str = r#"{"id":"a","type":"message","role":"assistant","content":[{"type":"text","text":"one"}],"model":"m","stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}

{"id":"b","type":"message","role":"assistant","content":[{"type":"text","text":"two"}],"model":"m","stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}
"#;

    #[tokio::test]
    async fn replay_answers_in_order_then_says_it_ran_out() {
        let model = ReplayModel::from_jsonl("t.jsonl", TWO).unwrap();
        assert_eq!(model.create(&request(), &crate::events::Silent).await.unwrap().text(), "one");
        assert_eq!(model.create(&request(), &crate::events::Silent).await.unwrap().text(), "two");
        let err = model.create(&request(), &crate::events::Silent).await.unwrap_err();
        assert_eq!(err.to_string(), "replay: t.jsonl has no more recorded turns (all 2 were used)");
    }

    #[tokio::test]
    async fn a_recorded_error_answer_fails_its_request() {
        let text = format!(
            "{}\n{}",
            r#"{"type":"error","status":400,"error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
            TWO
        );
        let model = ReplayModel::from_jsonl("t.jsonl", &text).unwrap();
        assert_eq!(model.remaining(), 3);
        let err = model.create(&request(), &crate::events::Silent).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "API error 400 invalid_request_error: prompt is too long: 210000 tokens > 200000 maximum"
        );
        assert_eq!(model.create(&request(), &crate::events::Silent).await.unwrap().text(), "one");
    }

    #[test]
    fn a_bad_line_is_named() {
        let err = ReplayModel::from_jsonl("t.jsonl", "{}\n").err().unwrap();
        assert!(err.to_string().starts_with("replay: t.jsonl line 1:"), "{err}");
    }

    #[tokio::test]
    async fn recording_appends_what_replay_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.jsonl");
        let rec = Recording::new(ReplayModel::from_jsonl("t", TWO).unwrap(), &path).unwrap();
        rec.create(&request(), &crate::events::Silent).await.unwrap();
        rec.create(&request(), &crate::events::Silent).await.unwrap();
        let back = ReplayModel::from_file(&path).unwrap();
        assert_eq!(back.remaining(), 2);
        assert_eq!(back.create(&request(), &crate::events::Silent).await.unwrap().text(), "one");
    }
}
