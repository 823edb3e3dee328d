//! Just enough HTTP/1.1 for a loopback test server: read a request head and its body (`Content-Length` or
//! `Transfer-Encoding: chunked`), and write responses. Every failure of the peer is an error value, never a
//! panic.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest request head we accept, in bytes.
const MAX_HEAD: usize = 64 * 1024;
/// The largest body we accept, in bytes.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// Why a request (or, in tests, a response) could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HttpError {
    /// The socket failed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The peer closed the connection in the middle of a message.
    #[error("connection closed mid-message")]
    Eof,
    /// The bytes are not valid HTTP/1.1.
    #[error("bad http: {0}")]
    Bad(String),
}

/// A parsed message head: the start line and the headers (names lower-cased).
#[derive(Debug)]
pub(crate) struct Head {
    pub start_line: String,
    pub headers: Vec<(String, String)>,
}

impl Head {
    /// The first header with this (lower-case) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// Reads more bytes into `buf`; `Ok(false)` on end of stream.
async fn fill<S: AsyncRead + Unpin>(stream: &mut S, buf: &mut Vec<u8>) -> Result<bool, HttpError> {
    let mut tmp = [0u8; 8192];
    let n = stream.read(&mut tmp).await?;
    buf.extend_from_slice(&tmp[..n]);
    Ok(n > 0)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Reads one message head. `Ok(None)` when the peer closed cleanly before sending anything.
pub(crate) async fn read_head<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut Vec<u8>,
) -> Result<Option<Head>, HttpError> {
    let end = loop {
        if let Some(pos) = find(buf, b"\r\n\r\n") {
            break pos;
        }
        if buf.len() > MAX_HEAD {
            return Err(HttpError::Bad("head too large".into()));
        }
        if !fill(stream, buf).await? {
            return if buf.is_empty() { Ok(None) } else { Err(HttpError::Eof) };
        }
    };
    let text = String::from_utf8_lossy(&buf[..end]).into_owned();
    buf.drain(..end + 4);
    let mut lines = text.split("\r\n");
    let start_line = lines.next().unwrap_or_default().to_string();
    let mut headers = Vec::new();
    for line in lines {
        let (name, value) =
            line.split_once(':').ok_or_else(|| HttpError::Bad(format!("header line {line:?}")))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    Ok(Some(Head { start_line, headers }))
}

/// Makes sure `buf` holds at least `n` bytes.
async fn fill_to<S: AsyncRead + Unpin>(stream: &mut S, buf: &mut Vec<u8>, n: usize) -> Result<(), HttpError> {
    while buf.len() < n {
        if !fill(stream, buf).await? {
            return Err(HttpError::Eof);
        }
    }
    Ok(())
}

/// Takes one CRLF-terminated line from the stream.
async fn read_line<S: AsyncRead + Unpin>(stream: &mut S, buf: &mut Vec<u8>) -> Result<String, HttpError> {
    loop {
        if let Some(pos) = find(buf, b"\r\n") {
            let line = String::from_utf8_lossy(&buf[..pos]).into_owned();
            buf.drain(..pos + 2);
            return Ok(line);
        }
        if buf.len() > MAX_HEAD {
            return Err(HttpError::Bad("line too long".into()));
        }
        if !fill(stream, buf).await? {
            return Err(HttpError::Eof);
        }
    }
}

/// Reads the body that follows `head`: chunked, `Content-Length`, or (when `to_eof`, for responses without
/// either) everything until the peer closes. Requests without either header have an empty body.
pub(crate) async fn read_body<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut Vec<u8>,
    head: &Head,
    to_eof: bool,
) -> Result<Vec<u8>, HttpError> {
    let chunked =
        head.header("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    if chunked {
        let mut body = Vec::new();
        loop {
            let line = read_line(stream, buf).await?;
            let size_text = line.split(';').next().unwrap_or_default().trim();
            let size = usize::from_str_radix(size_text, 16)
                .map_err(|_| HttpError::Bad(format!("chunk size {size_text:?}")))?;
            if size == 0 {
                // Trailers, up to the blank line.
                while !read_line(stream, buf).await?.is_empty() {}
                return Ok(body);
            }
            if body.len() + size > MAX_BODY {
                return Err(HttpError::Bad("body too large".into()));
            }
            fill_to(stream, buf, size + 2).await?;
            body.extend(buf.drain(..size));
            buf.drain(..2);
        }
    }
    if let Some(len) = head.header("content-length") {
        let len: usize = len.parse().map_err(|_| HttpError::Bad(format!("content-length {len:?}")))?;
        if len > MAX_BODY {
            return Err(HttpError::Bad("body too large".into()));
        }
        fill_to(stream, buf, len).await?;
        return Ok(buf.drain(..len).collect());
    }
    if to_eof {
        while fill(stream, buf).await? {}
        return Ok(std::mem::take(buf));
    }
    Ok(Vec::new())
}

/// The reason phrase for the status codes the Messages API uses.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

/// Serializes a status line and headers, ending with the blank line.
pub(crate) fn head_bytes(status: u16, headers: &[(String, String)]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    out.into_bytes()
}

/// Writes all of `bytes` and flushes, so the peer sees them now.
pub(crate) async fn send<S: AsyncWrite + Unpin>(stream: &mut S, bytes: &[u8]) -> std::io::Result<()> {
    stream.write_all(bytes).await?;
    stream.flush().await
}

/// Wraps `data` as one chunk of a `Transfer-Encoding: chunked` body.
pub(crate) fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}
