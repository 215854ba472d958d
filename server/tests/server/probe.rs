//! The probes against real listeners on loopback, IPv4 and IPv6: a TLS server with a chain
//! from a test CA, one that wants a PROXY protocol header first, and port-80 answers that
//! redirect the ACME path or not.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use lookout_server::probe::acme::acme_path;
use lookout_server::probe::tls::{served, Roots, Untrusted};
use lookout_server::probe::{ProbeError, ProxyHeader};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const T: Duration = Duration::from_secs(3);

/// A CA and a leaf for `names` signed by it.
struct Chain {
    ca: CertificateDer<'static>,
    leaf: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
}

fn chain(names: &[&str]) -> Chain {
    chain_valid(names, None)
}

/// A day: year, month, day.
type Day = (i32, u8, u8);

/// [`chain`] with the leaf's validity set (an expired one, say).
fn chain_valid(names: &[&str], validity: Option<(Day, Day)>) -> Chain {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "Lookout test CA");
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let mut leaf_params =
        rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .unwrap();
    if let Some(((y1, m1, d1), (y2, m2, d2))) = validity {
        leaf_params.not_before = rcgen::date_time_ymd(y1, m1, d1);
        leaf_params.not_after = rcgen::date_time_ymd(y2, m2, d2);
    }
    let leaf = leaf_params.signed_by(&leaf_key, &ca).unwrap();
    Chain {
        ca: ca.der().clone(),
        leaf: leaf.der().clone(),
        key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
    }
}

/// Serves `chain` over TLS on `bind`, after a PROXY v1 line when `proxy` is set (closing
/// the connection when it does not come, as such a listener does).
async fn tls_server(bind: &str, chain: &Chain, proxy: bool) -> SocketAddr {
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![chain.leaf.clone(), chain.ca.clone()],
        chain.key.clone_key(),
    )
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind(bind).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                if proxy && !read_proxy_header(&mut stream).await {
                    return; // dropped: the client sees the connection closed
                }
                if let Ok(mut tls) = acceptor.accept(stream).await {
                    let _ = tls.shutdown().await;
                }
            });
        }
    });
    addr
}

/// Reads a PROXY header, v1 (a text line) or v2 (a binary block); false when the client
/// sent something else.
async fn read_proxy_header(stream: &mut tokio::net::TcpStream) -> bool {
    let mut start = [0u8; 12];
    if stream.read_exact(&mut start).await.is_err() {
        return false;
    }
    if &start == b"\r\n\r\n\0\r\nQUIT\n" {
        let mut fixed = [0u8; 4];
        if stream.read_exact(&mut fixed).await.is_err() || fixed[0] != 0x21 {
            return false;
        }
        let mut rest = vec![0u8; usize::from(u16::from_be_bytes([fixed[2], fixed[3]]))];
        return stream.read_exact(&mut rest).await.is_ok();
    }
    if !start.starts_with(b"PROXY ") {
        return false;
    }
    let mut line = start.to_vec();
    let mut byte = [0u8; 1];
    while !line.ends_with(b"\r\n") && line.len() < 108 {
        if stream.read_exact(&mut byte).await.is_err() {
            return false;
        }
        line.push(byte[0]);
    }
    line.ends_with(b"\r\n")
}

/// Answers every HTTP request on `bind` with `answer`.
async fn http_server(bind: &str, answer: &'static str) -> SocketAddr {
    let listener = TcpListener::bind(bind).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 2048];
                let _ = stream.read(&mut buf).await;
                let _ = stream.write_all(answer.as_bytes()).await;
            });
        }
    });
    addr
}

#[tokio::test]
async fn the_served_chain_is_recorded_and_judged_over_ipv4_and_ipv6() {
    let chain = chain(&["shop.example.test", "www.example.test"]);
    let roots = Roots::of([chain.ca.clone()]);
    for bind in ["127.0.0.1:0", "[::1]:0"] {
        let addr = tls_server(bind, &chain, false).await;
        let seen = served(addr, "shop.example.test", T, None, &roots)
            .await
            .unwrap();
        assert_eq!(seen.leaf.names, ["shop.example.test", "www.example.test"]);
        assert_eq!(seen.chain_len, 2);
        assert_eq!(seen.untrusted, None, "{bind}");
        assert_eq!(seen.version, "TLSv1.3");
        assert!(seen.leaf.issuer.contains("Lookout test CA"));
        {
            use sha2::Digest;
            let want: String = sha2::Sha256::digest(chain.leaf.as_ref())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            assert_eq!(seen.leaf.sha256, want);
        }
        assert!(seen.leaf.not_after > seen.leaf.not_before);
        // Another name: served all the same, and said not to verify for it.
        let other = served(addr, "api.example.test", T, None, &roots)
            .await
            .unwrap();
        assert!(
            matches!(other.untrusted, Some(Untrusted::NameMismatch(_))),
            "{other:?}"
        );
        // Against other roots (the system's, for a private CA): untrusted.
        let unknown = served(addr, "shop.example.test", T, None, &Roots::of([]))
            .await
            .unwrap();
        assert!(
            matches!(unknown.untrusted, Some(Untrusted::UnknownIssuer(_))),
            "{unknown:?}"
        );
    }
}

#[tokio::test]
async fn an_expired_certificate_is_served_and_said_to_be_expired() {
    let chain = chain_valid(&["old.example.test"], Some(((2020, 1, 1), (2020, 4, 1))));
    let addr = tls_server("127.0.0.1:0", &chain, false).await;
    let seen = served(
        addr,
        "old.example.test",
        T,
        None,
        &Roots::of([chain.ca.clone()]),
    )
    .await
    .unwrap();
    assert_eq!(
        seen.leaf.not_after.to_rfc3339(),
        "2020-04-01T00:00:00+00:00"
    );
    // Told by the bound it crossed, not the time of the check: the same certificate is
    // the same answer every round.
    assert_eq!(
        seen.untrusted,
        Some(Untrusted::Expired(
            "invalid peer certificate: certificate expired: not valid after 2020-04-01T00:00:00Z"
                .into()
        )),
    );
}

#[tokio::test]
async fn a_listener_that_wants_proxy_protocol_closes_on_a_plain_client() {
    let chain = chain(&["shop.example.test"]);
    let roots = Roots::of([chain.ca.clone()]);
    for bind in ["127.0.0.1:0", "[::1]:0"] {
        let addr = tls_server(bind, &chain, true).await;
        let plain = served(addr, "shop.example.test", T, None, &roots).await;
        assert!(
            matches!(plain, Err(ProbeError::Closed | ProbeError::Reset)),
            "{bind}: {plain:?}"
        );
        for header in [ProxyHeader::V1, ProxyHeader::V2] {
            let with = served(addr, "shop.example.test", T, Some(header), &roots)
                .await
                .unwrap();
            assert_eq!(with.untrusted, None);
        }
    }
}

#[tokio::test]
async fn the_acme_path_answer_is_read_without_following_it() {
    let redirect = http_server(
        "127.0.0.1:0",
        "HTTP/1.1 308 Permanent Redirect\r\nLocation: https://shop.example.test/.well-known/acme-challenge/probe-1\r\nContent-Length: 0\r\n\r\n",
    )
    .await;
    let seen = acme_path(redirect, "shop.example.test", "probe-1", T, None)
        .await
        .unwrap();
    assert_eq!(seen.status, 308);
    assert!(seen.redirected_to_https());
    // The round's token is not kept: the next round, with a token of its own, sees the same.
    assert_eq!(
        seen.location.as_deref(),
        Some("https://shop.example.test/.well-known/acme-challenge/<token>")
    );
    let solver = http_server(
        "[::1]:0",
        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
    )
    .await;
    let seen = acme_path(solver, "shop.example.test", "probe-1", T, None)
        .await
        .unwrap();
    assert_eq!((seen.status, seen.redirected_to_https()), (404, false));
    // Nothing listening: refused, quickly.
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        l.local_addr().unwrap()
    };
    assert_eq!(
        acme_path(closed, "shop.example.test", "probe-1", T, None).await,
        Err(ProbeError::Refused)
    );
    // A host that would smuggle a header is not sent.
    assert!(matches!(
        acme_path(solver, "shop.example.test\r\nX: 1", "probe-1", T, None).await,
        Err(ProbeError::Malformed(_))
    ));
}
