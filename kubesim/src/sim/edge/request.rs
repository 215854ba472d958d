//! The one request a listener reads from a connection.

use std::time::Duration;

use tokio::io::AsyncReadExt;

/// The host (without port) and path of the request at the start of `stream`.
pub(super) async fn read_request<S: tokio::io::AsyncRead + Unpin>(
    stream: &mut S,
) -> Option<(String, String)> {
    let mut head = Vec::new();
    let mut chunk = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
        match tokio::time::timeout(Duration::from_secs(2), stream.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => head.extend_from_slice(&chunk[..n]),
            _ => return None,
        }
    }
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    req.parse(&head).ok()?;
    let path = req.path.unwrap_or("/").to_string();
    let host = req
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("host"))
        .map(|h| String::from_utf8_lossy(h.value).to_string())
        .unwrap_or_default();
    let host = host.split(':').next().unwrap_or_default().to_string();
    Some((host, path))
}
