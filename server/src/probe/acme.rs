//! The ACME HTTP-01 path as the CA asks for it: `GET http://<host>/.well-known/acme-challenge/<token>`
//! on port 80 — one request, redirects **not** followed: the answer itself is the evidence
//! (Let's Encrypt follows a redirect to HTTPS, and then reaches the application instead of
//! the solver when Cilium's enforcement catches the path).

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{connect, ProbeError, ProxyHeader};

/// The most of an answer read: the status line and headers are all that matter.
const HEAD_LIMIT: usize = 16 * 1024;

pub use lookout_app::model::probe::AcmePathObservation;

/// What stands for the probe's token in a redirect's `Location`: each round asks with a new
/// token, and a redirect that echoes it would otherwise be a new answer every round (the
/// failure's start moving with it).
const TOKEN_IN_LOCATION: &str = "<token>";

/// Asks `addr` for the ACME path of `host` with a token of the probe's own (no solver knows
/// it: a 404 from the solver is the healthy answer). A redirect's `Location` keeps its path
/// with the token as [`TOKEN_IN_LOCATION`].
pub async fn acme_path(
    addr: SocketAddr,
    host: &str,
    token: &str,
    timeout: Duration,
    proxy: Option<ProxyHeader>,
) -> Result<AcmePathObservation, ProbeError> {
    if host.bytes().any(|b| b.is_ascii_control() || b == b' ')
        || !token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(ProbeError::Malformed(
            "the host or token is not a plain name".into(),
        ));
    }
    let exchange = async {
        let mut stream = connect(addr, timeout, proxy).await?;
        let request = format!(
            "GET /.well-known/acme-challenge/{token} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: lookout-probe\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| super::classify(&e))?;
        let mut head = Vec::with_capacity(1024);
        let mut chunk = [0u8; 2048];
        loop {
            let n = stream
                .read(&mut chunk)
                .await
                .map_err(|e| super::classify(&e))?;
            if n == 0 {
                break;
            }
            head.extend_from_slice(&chunk[..n]);
            if head.windows(4).any(|w| w == b"\r\n\r\n") || head.len() >= HEAD_LIMIT {
                break;
            }
        }
        if head.is_empty() {
            return Err(ProbeError::Closed);
        }
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut response = httparse::Response::new(&mut headers);
        match response.parse(&head) {
            Ok(_) => {}
            Err(e) => return Err(ProbeError::Malformed(format!("not an HTTP answer ({e})"))),
        }
        let status = response
            .code
            .ok_or_else(|| ProbeError::Malformed("no status line".into()))?;
        let location = response
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("location"))
            .map(|h| String::from_utf8_lossy(h.value).replace(token, TOKEN_IN_LOCATION));
        Ok(AcmePathObservation { status, location })
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| ProbeError::Timeout)?
}
