//! The per-certificate annotations of an Ingress that ingress-shim refuses.
//!
//! cert-manager's `pkg/controller/certificate-shim/helper.go` (`translateAnnotations`) turns
//! annotations such as `cert-manager.io/duration` into the Certificate's spec; an invalid
//! value is an error that stops the whole Ingress (`buildCertificates` returns it, `sync.go`
//! gives up and retries): no Certificate is made or updated, and no event says so — only
//! the controller's log. This reads the same values the same way, in cert-manager's words.

use chrono::Duration;

const DURATION: &str = "cert-manager.io/duration";
const RENEW_BEFORE: &str = "cert-manager.io/renew-before";
const RENEW_BEFORE_PERCENTAGE: &str = "cert-manager.io/renew-before-percentage";
const REVISION_HISTORY_LIMIT: &str = "cert-manager.io/revision-history-limit";
const KEY_ALGORITHM: &str = "cert-manager.io/private-key-algorithm";
const KEY_ENCODING: &str = "cert-manager.io/private-key-encoding";
const KEY_SIZE: &str = "cert-manager.io/private-key-size";
const KEY_ROTATION: &str = "cert-manager.io/private-key-rotation-policy";
const COMMON_NAME: &str = "cert-manager.io/common-name";

/// Why ingress-shim refuses these annotations (the first problem, as it stops at the first),
/// or None.
pub fn invalid_annotation<'a>(get: impl Fn(&str) -> Option<&'a str>) -> Option<String> {
    let bad = |key: &str, why: String| Some(format!("invalid ingress annotation {key:?}: {why}"));
    if get(COMMON_NAME).is_some_and(|cn| cn.len() > 64) {
        return bad(
            COMMON_NAME,
            "common name may not be more than 64 bytes".into(),
        );
    }
    for (key, minimum, what) in [
        (DURATION, Duration::hours(1), ("duration", "1h0m0s")),
        (RENEW_BEFORE, Duration::minutes(5), ("renewBefore", "5m0s")),
    ] {
        if let Some(v) = get(key) {
            match go_duration(v) {
                Err(e) => return bad(key, e),
                Ok(d) if d < minimum => {
                    return bad(
                        key,
                        format!("{} must be greater than or equal to {}", what.0, what.1),
                    )
                }
                Ok(_) => {}
            }
        }
    }
    if let Some(v) = get(RENEW_BEFORE_PERCENTAGE) {
        if v.parse::<i32>().is_err() {
            return bad(RENEW_BEFORE_PERCENTAGE, go_int_error("strconv.ParseInt", v));
        }
    }
    if let Some(v) = get(REVISION_HISTORY_LIMIT) {
        match v.parse::<i32>() {
            Err(_) => return bad(REVISION_HISTORY_LIMIT, go_int_error("strconv.ParseInt", v)),
            Ok(n) if n < 1 => {
                return bad(
                    REVISION_HISTORY_LIMIT,
                    format!("revision history limit must be a positive number {v:?}"),
                )
            }
            Ok(_) => {}
        }
    }
    let algorithm = get(KEY_ALGORITHM);
    if let Some(a) = algorithm.filter(|a| !matches!(*a, "RSA" | "ECDSA" | "Ed25519")) {
        return bad(
            KEY_ALGORITHM,
            format!("invalid private key algorithm {a:?}"),
        );
    }
    if let Some(e) = get(KEY_ENCODING).filter(|e| !matches!(*e, "PKCS1" | "PKCS8")) {
        return bad(KEY_ENCODING, format!("invalid private key encoding {e:?}"));
    }
    if let Some(v) = get(KEY_SIZE) {
        let Ok(size) = v.parse::<i64>() else {
            return bad(KEY_SIZE, go_int_error("strconv.Atoi", v));
        };
        match algorithm.unwrap_or("RSA") {
            "RSA" if !(2048..=8192).contains(&size) => {
                return bad(
                    KEY_SIZE,
                    format!("invalid private key size for RSA algorithm {v:?}"),
                )
            }
            "ECDSA" if !matches!(size, 256 | 384 | 521) => {
                return bad(
                    KEY_SIZE,
                    format!("invalid private key size for ECDSA algorithm {v:?}"),
                )
            }
            _ => {}
        }
    }
    if let Some(p) = get(KEY_ROTATION).filter(|p| !matches!(*p, "Never" | "Always")) {
        return bad(
            KEY_ROTATION,
            format!("invalid private key rotation policy {p:?}"),
        );
    }
    None
}

fn go_int_error(func: &str, v: &str) -> String {
    format!("{func}: parsing {v:?}: invalid syntax")
}

/// Go's `time.ParseDuration`: signed decimal numbers with units (`ns`, `us`, `µs`, `ms`, `s`,
/// `m`, `h`), e.g. `2160h`, `1h30m`, `1.5h`; its error texts.
pub fn go_duration(s: &str) -> Result<Duration, String> {
    let invalid = || format!("time: invalid duration {s:?}");
    let (negative, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Ok(Duration::zero());
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..number_len];
        if number.is_empty() || number == "." {
            return Err(invalid());
        }
        let value: f64 = number.parse().map_err(|_| invalid())?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let nanos = match unit {
            "" => return Err(format!("time: missing unit in duration {s:?}")),
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            other => return Err(format!("time: unknown unit {other:?} in duration {s:?}")),
        };
        total += value * nanos;
    }
    let nanos = if negative { -total } else { total };
    if nanos.abs() > i64::MAX as f64 {
        return Err(invalid());
    }
    Ok(Duration::nanoseconds(nanos as i64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn check(pairs: &[(&str, &str)]) -> Option<String> {
        let map: HashMap<&str, &str> = pairs.iter().copied().collect();
        invalid_annotation(|k| map.get(k).copied())
    }

    #[test]
    fn go_durations_parse_as_go_does() {
        assert_eq!(go_duration("2160h"), Ok(Duration::hours(2160)));
        assert_eq!(go_duration("1h30m"), Ok(Duration::minutes(90)));
        assert_eq!(go_duration("1.5h"), Ok(Duration::minutes(90)));
        assert_eq!(go_duration("300ms"), Ok(Duration::milliseconds(300)));
        assert_eq!(go_duration("0"), Ok(Duration::zero()));
        assert_eq!(
            go_duration("banana"),
            Err("time: invalid duration \"banana\"".into())
        );
        assert_eq!(
            go_duration("90"),
            Err("time: missing unit in duration \"90\"".into())
        );
        assert_eq!(
            go_duration("3d"),
            Err("time: unknown unit \"d\" in duration \"3d\"".into())
        );
    }

    #[test]
    fn invalid_values_are_worded_as_ingress_shim_words_them() {
        assert_eq!(check(&[("cert-manager.io/duration", "2160h")]), None);
        assert_eq!(
            check(&[("cert-manager.io/duration", "90d")]).unwrap(),
            "invalid ingress annotation \"cert-manager.io/duration\": time: unknown unit \"d\" in duration \"90d\""
        );
        assert_eq!(
            check(&[("cert-manager.io/duration", "30m")]).unwrap(),
            "invalid ingress annotation \"cert-manager.io/duration\": duration must be greater than or equal to 1h0m0s"
        );
        assert!(check(&[("cert-manager.io/renew-before", "1m")])
            .unwrap()
            .contains("renewBefore must be greater than or equal to 5m0s"));
        assert!(check(&[("cert-manager.io/private-key-algorithm", "rsa")])
            .unwrap()
            .contains("invalid private key algorithm \"rsa\""));
        assert!(check(&[("cert-manager.io/private-key-size", "1024")])
            .unwrap()
            .contains("invalid private key size for RSA algorithm"));
        assert_eq!(
            check(&[
                ("cert-manager.io/private-key-algorithm", "ECDSA"),
                ("cert-manager.io/private-key-size", "384")
            ]),
            None
        );
        assert!(check(&[("cert-manager.io/revision-history-limit", "0")])
            .unwrap()
            .contains("must be a positive number"));
        assert!(check(&[("cert-manager.io/renew-before-percentage", "ten")])
            .unwrap()
            .contains("strconv.ParseInt: parsing \"ten\": invalid syntax"));
        assert!(check(&[("cert-manager.io/private-key-rotation-policy", "always")]).is_some());
        assert!(check(&[("cert-manager.io/common-name", &"a".repeat(65))]).is_some());
    }
}
