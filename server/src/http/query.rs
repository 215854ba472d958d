//! Query strings: every parameter known by name, a bad value a 400 that names it.

use std::collections::HashMap;

use lookout_app::model::choice::Choice;
use lookout_app::model::finding::RULE_IDS;
use lookout_app::model::read::sort::Sort;
use lookout_app::model::read::views::{
    AuditQuery, CertificateQuery, ChallengeQuery, FindingQuery, IngressQuery,
};
use lookout_app::model::Severity;

use super::AppError;

/// Rows per page unless `per_page` says otherwise.
pub(super) const DEFAULT_PER_PAGE: usize = 100;
const MAX_PER_PAGE: usize = 1000;

/// Decodes `a=1&b=2`; a parameter given twice or not in `known` is an error.
pub(super) fn parse(
    raw: Option<&str>,
    known: &[&str],
) -> Result<HashMap<String, String>, AppError> {
    let mut out = HashMap::new();
    for (k, v) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
        if !known.contains(&k.as_ref()) {
            return Err(AppError::bad(
                &k,
                format!("unknown parameter (this page takes: {})", known.join(", ")),
            ));
        }
        if out.insert(k.to_string(), v.to_string()).is_some() {
            return Err(AppError::bad(&k, "given more than once"));
        }
    }
    Ok(out)
}

fn number(
    params: &HashMap<String, String>,
    name: &str,
    default: usize,
    max: usize,
) -> Result<usize, AppError> {
    match params.get(name).filter(|v| !v.is_empty()) {
        None => Ok(default),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if n >= 1 && n <= max => Ok(n),
            _ => Err(AppError::bad(
                name,
                format!("{v:?} is not a whole number between 1 and {max}"),
            )),
        },
    }
}

fn text(params: &HashMap<String, String>, name: &str) -> Option<String> {
    params
        .get(name)
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// A parameter that must be one of the values of `C`.
fn one_of<C: Choice>(params: &HashMap<String, String>, name: &str) -> Result<Option<C>, AppError> {
    match text(params, name) {
        None => Ok(None),
        Some(v) => C::parse(&v).map(Some).ok_or_else(|| {
            AppError::bad(
                name,
                format!("{v:?} is not one of: {}", C::labels().join(", ")),
            )
        }),
    }
}

/// A `sort` parameter: a key of `K`, optionally with a leading `-`.
fn sort<K: Choice>(params: &HashMap<String, String>) -> Result<Option<Sort<K>>, AppError> {
    match text(params, "sort") {
        None => Ok(None),
        Some(v) => Sort::parse(&v).map(Some).ok_or_else(|| {
            AppError::bad(
                "sort",
                format!(
                    "{v:?} is not one of: {} (a leading - reverses)",
                    K::labels().join(", ")
                ),
            )
        }),
    }
}

/// The Ingress list filters, from `/ingresses` or `/api/v1/ingresses`.
pub(super) fn ingress_query(raw: Option<&str>) -> Result<IngressQuery, AppError> {
    let p = parse(
        raw,
        &[
            "cluster",
            "namespace",
            "q",
            "status",
            "sort",
            "page",
            "per_page",
        ],
    )?;
    Ok(IngressQuery {
        cluster: text(&p, "cluster"),
        namespace: text(&p, "namespace"),
        q: text(&p, "q"),
        status: one_of(&p, "status")?,
        sort: sort(&p)?,
        page: number(&p, "page", 1, 1_000_000)?,
        per_page: number(&p, "per_page", DEFAULT_PER_PAGE, MAX_PER_PAGE)?,
    })
}

/// The Certificate list filters.
pub(super) fn certificate_query(raw: Option<&str>) -> Result<CertificateQuery, AppError> {
    let p = parse(
        raw,
        &[
            "cluster",
            "namespace",
            "q",
            "status",
            "sort",
            "page",
            "per_page",
        ],
    )?;
    Ok(CertificateQuery {
        cluster: text(&p, "cluster"),
        namespace: text(&p, "namespace"),
        q: text(&p, "q"),
        status: one_of(&p, "status")?,
        sort: sort(&p)?,
        page: number(&p, "page", 1, 1_000_000)?,
        per_page: number(&p, "per_page", DEFAULT_PER_PAGE, MAX_PER_PAGE)?,
    })
}

/// A `since` parameter: RFC 3339, or a duration back from `now` (`24h`, `7d`).
fn since(
    params: &HashMap<String, String>,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(Option<chrono::DateTime<chrono::Utc>>, Option<String>), AppError> {
    let Some(v) = text(params, "since") else {
        return Ok((None, None));
    };
    let at = chrono::DateTime::parse_from_rfc3339(&v)
        .map(|t| t.with_timezone(&chrono::Utc))
        .or_else(|_| lookout_app::model::thresholds::parse_duration(&v).map(|d| now - d))
        .map_err(|_| {
            AppError::bad(
                "since",
                format!("{v:?} is neither an RFC 3339 time nor a duration like 24h"),
            )
        })?;
    Ok((Some(at), Some(v)))
}

/// The challenge history filters.
pub(super) fn challenge_query(
    raw: Option<&str>,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<ChallengeQuery, AppError> {
    let p = parse(
        raw,
        &[
            "cluster",
            "namespace",
            "domain",
            "outcome",
            "since",
            "sort",
            "page",
            "per_page",
        ],
    )?;
    let (since, since_text) = since(&p, now)?;
    Ok(ChallengeQuery {
        cluster: text(&p, "cluster"),
        namespace: text(&p, "namespace"),
        domain: text(&p, "domain").map(|d| d.to_ascii_lowercase()),
        outcome: one_of(&p, "outcome")?,
        since,
        since_text,
        sort: sort(&p)?,
        page: number(&p, "page", 1, 1_000_000)?,
        per_page: number(&p, "per_page", DEFAULT_PER_PAGE, MAX_PER_PAGE)?,
    })
}

/// The audit log filters.
pub(super) fn audit_query(
    raw: Option<&str>,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<AuditQuery, AppError> {
    let p = parse(
        raw,
        &[
            "cluster",
            "namespace",
            "actor",
            "action",
            "outcome",
            "since",
            "page",
            "per_page",
        ],
    )?;
    let (since, since_text) = since(&p, now)?;
    Ok(AuditQuery {
        cluster: text(&p, "cluster"),
        namespace: text(&p, "namespace"),
        actor: text(&p, "actor"),
        action: text(&p, "action"),
        outcome: one_of(&p, "outcome")?,
        since,
        since_text,
        page: number(&p, "page", 1, 1_000_000)?,
        per_page: number(&p, "per_page", DEFAULT_PER_PAGE, MAX_PER_PAGE)?,
    })
}

/// The search page's one parameter.
pub(super) fn search_query(raw: Option<&str>) -> Result<Option<String>, AppError> {
    let p = parse(raw, &["q"])?;
    Ok(text(&p, "q"))
}

/// The findings filters (`/api/v1/findings`, the triage board).
pub(super) fn finding_query(raw: Option<&str>) -> Result<FindingQuery, AppError> {
    let p = parse(
        raw,
        &[
            "cluster",
            "namespace",
            "severity",
            "rule",
            "sort",
            "page",
            "per_page",
        ],
    )?;
    Ok(FindingQuery {
        cluster: text(&p, "cluster"),
        namespace: text(&p, "namespace"),
        severity: match text(&p, "severity") {
            None => None,
            Some(v) => Some(Severity::parse(&v).ok_or_else(|| {
                AppError::bad(
                    "severity",
                    format!("{v:?} is not one of: critical, warning, info"),
                )
            })?),
        },
        rule: match text(&p, "rule") {
            Some(v) if !RULE_IDS.contains(&v.as_str()) => {
                return Err(AppError::bad(
                    "rule",
                    format!("{v:?} is not one of: {}", RULE_IDS.join(", ")),
                ))
            }
            rule => rule,
        },
        sort: sort(&p)?,
        page: number(&p, "page", 1, 1_000_000)?,
        per_page: number(&p, "per_page", DEFAULT_PER_PAGE, MAX_PER_PAGE)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finding_filters_reject_unknown_severities_and_rules() {
        let q = finding_query(Some("severity=critical&rule=cert.expired")).unwrap();
        assert_eq!(q.severity, Some(Severity::Critical));
        for (raw, param) in [("severity=urgent", "severity"), ("rule=cert.nope", "rule")] {
            match finding_query(Some(raw)) {
                Err(AppError::BadRequest { param: p, .. }) => assert_eq!(p, param),
                other => panic!("{raw}: {other:?}"),
            }
        }
        assert!(certificate_query(Some("status=expired")).is_ok());
        assert!(certificate_query(Some("status=fine")).is_err());
    }

    #[test]
    fn filters_are_decoded_and_bad_values_named() {
        let q = ingress_query(Some("cluster=zrh&q=shop%2Eexample&page=2")).unwrap();
        assert_eq!(q.cluster.as_deref(), Some("zrh"));
        assert_eq!(q.q.as_deref(), Some("shop.example"));
        assert_eq!((q.page, q.per_page), (2, DEFAULT_PER_PAGE));
        for (raw, param) in [
            ("page=0", "page"),
            ("page=x", "page"),
            ("per_page=5000", "per_page"),
            ("colour=red", "colour"),
            ("q=a&q=b", "q"),
        ] {
            match ingress_query(Some(raw)) {
                Err(AppError::BadRequest { param: p, .. }) => assert_eq!(p, param, "{raw}"),
                other => panic!("{raw}: {other:?}"),
            }
        }
    }
}
