//! What a host serves, seen from where Lookout runs (issue 22). The `probe.*` rules that judge
//! the observations live in `app/src/model/rules/probe.rs`.
//!
//! - [`tls`]: connect to one address with SNI = the host, record the served chain (leaf
//!   subject, names, issuer, serial, validity, SHA-256 fingerprint, chain length), whether it
//!   verifies against the system roots for that name, and the TLS version.
//! - [`acme`]: `GET /.well-known/acme-challenge/<token>` on port 80 **without following
//!   redirects**: the status and `Location` (a redirect to HTTPS is the direct evidence that
//!   Cilium's enforcement catches the challenge).
//! - [`policy`]: which addresses may be probed at all — only what the watched clusters publish
//!   in load-balancer status, within the configured networks, never loopback, link-local or
//!   other special addresses unless a network allows them by name.
//!
//! - [`worker`]: the rounds of `lookout serve` (`[probe]`): targets, policy, storage on
//!   change, the observations handed to each cluster's record.
//!
//! Either probe may first send a PROXY protocol header ([`ProxyHeader`]), as a load balancer
//! that speaks it would.

pub mod acme;
pub mod policy;
pub mod tls;
pub mod worker;

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

pub use lookout_app::model::probe::ProbeError;

/// Classifies a socket error.
pub(crate) fn classify(e: &std::io::Error) -> ProbeError {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::ConnectionRefused => ProbeError::Refused,
        K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe => ProbeError::Reset,
        K::UnexpectedEof => ProbeError::Closed,
        K::TimedOut => ProbeError::Timeout,
        K::NetworkUnreachable | K::HostUnreachable | K::AddrNotAvailable => ProbeError::NoRoute,
        _ => match e.raw_os_error() {
            // ENETUNREACH, EHOSTUNREACH, EADDRNOTAVAIL, EAFNOSUPPORT (Linux)
            Some(101 | 113 | 99 | 97) => ProbeError::NoRoute,
            _ => ProbeError::Io(e.to_string()),
        },
    }
}

/// A PROXY protocol header to send first (haproxy's `proxy-protocol.txt`), naming the probe's
/// own connection as the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyHeader {
    V1,
    V2,
}

impl ProxyHeader {
    /// The header bytes for a connection from `from` to `to`.
    pub fn bytes(self, from: SocketAddr, to: SocketAddr) -> Vec<u8> {
        match self {
            ProxyHeader::V1 => {
                let family = if from.is_ipv4() && to.is_ipv4() {
                    "TCP4"
                } else {
                    "TCP6"
                };
                let ip = |a: SocketAddr| match (family, a.ip()) {
                    ("TCP6", std::net::IpAddr::V4(v4)) => v4.to_ipv6_mapped().to_string(),
                    (_, ip) => ip.to_string(),
                };
                format!(
                    "PROXY {family} {} {} {} {}\r\n",
                    ip(from),
                    ip(to),
                    from.port(),
                    to.port()
                )
                .into_bytes()
            }
            ProxyHeader::V2 => {
                let mut out = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
                out.push(0x21); // version 2, PROXY
                let v6 = |a: SocketAddr| match a.ip() {
                    std::net::IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
                    std::net::IpAddr::V6(v6) => v6.octets(),
                };
                match (from.ip(), to.ip()) {
                    (std::net::IpAddr::V4(f), std::net::IpAddr::V4(t)) => {
                        out.push(0x11); // TCP over IPv4
                        out.extend_from_slice(&12u16.to_be_bytes());
                        out.extend_from_slice(&f.octets());
                        out.extend_from_slice(&t.octets());
                    }
                    _ => {
                        out.push(0x21); // TCP over IPv6
                        out.extend_from_slice(&36u16.to_be_bytes());
                        out.extend_from_slice(&v6(from));
                        out.extend_from_slice(&v6(to));
                    }
                }
                out.extend_from_slice(&from.port().to_be_bytes());
                out.extend_from_slice(&to.port().to_be_bytes());
                out
            }
        }
    }
}

/// Opens a TCP connection within `timeout`, and sends the PROXY header when asked.
pub(crate) async fn connect(
    addr: SocketAddr,
    timeout: Duration,
    proxy: Option<ProxyHeader>,
) -> Result<TcpStream, ProbeError> {
    let mut stream = tokio::time::timeout(timeout, TcpStream::connect(addr))
        .await
        .map_err(|_| ProbeError::Timeout)?
        .map_err(|e| classify(&e))?;
    if let Some(header) = proxy {
        let from = stream.local_addr().map_err(|e| classify(&e))?;
        stream
            .write_all(&header.bytes(from, addr))
            .await
            .map_err(|e| classify(&e))?;
    }
    Ok(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_headers_name_the_probes_own_connection() {
        let from: SocketAddr = "192.0.2.1:40000".parse().unwrap();
        let to: SocketAddr = "198.51.100.7:443".parse().unwrap();
        assert_eq!(
            ProxyHeader::V1.bytes(from, to),
            b"PROXY TCP4 192.0.2.1 198.51.100.7 40000 443\r\n"
        );
        let v6: SocketAddr = "[2001:db8::1]:443".parse().unwrap();
        assert_eq!(
            String::from_utf8(ProxyHeader::V1.bytes(from, v6)).unwrap(),
            "PROXY TCP6 ::ffff:192.0.2.1 2001:db8::1 40000 443\r\n"
        );
        let v2 = ProxyHeader::V2.bytes(from, to);
        assert_eq!(&v2[..12], b"\r\n\r\n\0\r\nQUIT\n");
        assert_eq!((v2[12], v2[13]), (0x21, 0x11));
        assert_eq!(u16::from_be_bytes([v2[14], v2[15]]), 12);
        assert_eq!(&v2[16..20], &[192, 0, 2, 1]);
        assert_eq!(v2.len(), 16 + 12);
        assert_eq!(ProxyHeader::V2.bytes(from, v6).len(), 16 + 36);
    }

    #[test]
    fn socket_errors_are_classified() {
        use std::io::{Error, ErrorKind};
        assert_eq!(
            classify(&Error::from(ErrorKind::ConnectionRefused)),
            ProbeError::Refused
        );
        assert_eq!(
            classify(&Error::from(ErrorKind::ConnectionReset)),
            ProbeError::Reset
        );
        assert_eq!(
            classify(&Error::from(ErrorKind::UnexpectedEof)),
            ProbeError::Closed
        );
        assert_eq!(
            classify(&Error::from_raw_os_error(101)),
            ProbeError::NoRoute
        );
    }
}
