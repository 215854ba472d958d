//! Query strings (and form bodies): decoded by serde into the typed query of each list
//! (`lookout_app::model::read::views`), every parameter known by name. A parameter that is
//! unknown, given twice, or has a bad value is a 400 that names it; an empty value is no value.

use lookout_app::model::read::views::{
    AuditQuery, BudgetQuery, CertificateQuery, ChallengeQuery, FindingQuery, IngressQuery,
    ProblemQuery,
};
use lookout_app::model::Rule;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::AppError;
use crate::actions::BulkTarget;
use lookout_app::actions::{ActionKind, BulkList, BulkScope};

/// Decodes `a=1&b=2` into `Q`.
pub(super) fn read<Q: DeserializeOwned>(raw: Option<&str>) -> Result<Q, AppError> {
    let mut fields = Map::new();
    for (k, v) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
        let v = v.trim();
        let value = if v.is_empty() {
            Value::Null
        } else {
            Value::String(v.to_string())
        };
        if fields.insert(k.to_string(), value).is_some() {
            return Err(AppError::bad(&k, "given more than once"));
        }
    }
    serde_path_to_error::deserialize(Value::Object(fields)).map_err(|e| {
        let param = e.path().to_string();
        let message = e.inner().to_string();
        match unknown(&message) {
            Some((name, known)) if known.is_empty() => {
                AppError::bad(&name, "unknown parameter (this page takes none)")
            }
            Some((name, known)) => AppError::bad(
                &name,
                format!("unknown parameter (this page takes: {known})"),
            ),
            None => AppError::bad(&param, message),
        }
    })
}

/// `("colour", "cluster, namespace, …")` from serde's "unknown field `colour`, expected one of
/// `cluster`, `namespace`, …" (empty: "there are no fields").
fn unknown(message: &str) -> Option<(String, String)> {
    let rest = message.strip_prefix("unknown field `")?;
    let (name, rest) = rest.split_once('`')?;
    let known = rest
        .trim_start_matches(',')
        .trim()
        .trim_start_matches("expected one of ")
        .trim_start_matches("expected ")
        .trim_start_matches("there are no fields")
        .replace('`', "")
        .replace(" or ", ", ");
    Some((name.to_string(), known))
}

/// A page that takes no parameters.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Nothing {}

/// Refuses any parameter (pages and endpoints that take none).
pub(super) fn none(raw: Option<&str>) -> Result<(), AppError> {
    read::<Nothing>(raw).map(|Nothing {}| ())
}

/// The Ingress list filters, from `/ingresses` or `/api/v1/ingresses`.
pub(super) fn ingress_query(raw: Option<&str>) -> Result<IngressQuery, AppError> {
    read(raw)
}

/// The Certificate list filters.
pub(super) fn certificate_query(raw: Option<&str>) -> Result<CertificateQuery, AppError> {
    read(raw)
}

/// When `since` (RFC 3339, or a duration back from `now` such as `24h`) is.
fn since_at(
    text: Option<&str>,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Option<chrono::DateTime<chrono::Utc>>, AppError> {
    let Some(v) = text else { return Ok(None) };
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(v) {
        return Ok(Some(t.with_timezone(&chrono::Utc)));
    }
    match lookout_app::model::thresholds::parse_duration(v) {
        Ok(d) => now
            .checked_sub_signed(d)
            .map(Some)
            .ok_or_else(|| AppError::bad("since", format!("{v:?} reaches back too far"))),
        Err(e) if e.contains("hundred years") => Err(AppError::bad("since", e)),
        Err(_) => Err(AppError::bad(
            "since",
            format!("{v:?} is neither an RFC 3339 time nor a duration like 24h"),
        )),
    }
}

/// The challenge history filters.
pub(super) fn challenge_query(
    raw: Option<&str>,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<ChallengeQuery, AppError> {
    let mut q: ChallengeQuery = read(raw)?;
    q.since = since_at(q.since_text.as_deref(), now)?;
    q.domain = q.domain.map(|d| d.to_ascii_lowercase());
    Ok(q)
}

/// The audit log filters.
pub(super) fn audit_query(
    raw: Option<&str>,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<AuditQuery, AppError> {
    let mut q: AuditQuery = read(raw)?;
    q.since = since_at(q.since_text.as_deref(), now)?;
    Ok(q)
}

/// The search page's one parameter.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Search {
    q: Option<String>,
}

/// The search page's text, if any.
pub(super) fn search_query(raw: Option<&str>) -> Result<Option<String>, AppError> {
    Ok(read::<Search>(raw)?.q)
}

/// The findings filters (`/api/v1/findings`, the triage board).
pub(super) fn finding_query(raw: Option<&str>) -> Result<FindingQuery, AppError> {
    let q: FindingQuery = read(raw)?;
    if let Some(rule) = q.rule.as_deref().filter(|r| Rule::parse(r).is_none()) {
        let ids: Vec<&str> = Rule::ALL.iter().map(|r| r.id()).collect();
        return Err(AppError::bad(
            "rule",
            format!("{rule:?} is not one of: {}", ids.join(", ")),
        ));
    }
    Ok(q)
}

/// The budget filters (`/rate-limits`, `/api/v1/rate-limits`).
pub(super) fn budget_query(raw: Option<&str>) -> Result<BudgetQuery, AppError> {
    read(raw)
}

/// The probe results' filters (`/api/v1/probes`).
pub(super) fn probe_query(
    raw: Option<&str>,
) -> Result<lookout_app::model::read::views::ProbeQuery, AppError> {
    read(raw)
}

/// The issuer list's filters (`/issuers`, `/api/v1/issuers`).
pub(super) fn issuer_query(
    raw: Option<&str>,
) -> Result<lookout_app::model::read::issuer::IssuerQuery, AppError> {
    read(raw)
}

/// The Gateways list's filters (`/gateways`, `/api/v1/gateways`).
pub(super) fn gateway_query(
    raw: Option<&str>,
) -> Result<lookout_app::model::read::gateways::GatewayQuery, AppError> {
    read(raw)
}

pub(super) fn policy_query(
    raw: Option<&str>,
) -> Result<lookout_app::model::read::policies::PolicyQuery, AppError> {
    read(raw)
}

/// The problem filters (the board, `/api/v1/problems`); `cause` is a rule id.
pub(super) fn problem_query(raw: Option<&str>) -> Result<ProblemQuery, AppError> {
    let q: ProblemQuery = read(raw)?;
    if let Some(cause) = q.cause.as_deref().filter(|r| Rule::parse(r).is_none()) {
        let ids: Vec<&str> = Rule::ALL.iter().map(|r| r.id()).collect();
        return Err(AppError::bad(
            "cause",
            format!("{cause:?} is not one of: {}", ids.join(", ")),
        ));
    }
    Ok(q)
}

/// What a bulk run covers: a list (`board`, `ingresses`, `certificates`; by default the
/// action's own — the Ingresses for edit-in-place, the Certificates for renew) and its
/// filters as that list's query string, read as its page reads them. `cluster` and
/// `namespace` are the short form of `filters=cluster=…&namespace=…`.
pub(super) fn bulk_target(
    action: ActionKind,
    list: Option<&str>,
    filters: Option<&str>,
    cluster: Option<&str>,
    namespace: Option<&str>,
) -> Result<(BulkTarget, BulkScope), AppError> {
    let list = match list.filter(|l| !l.is_empty()) {
        None if action == ActionKind::BulkRenew => BulkList::Certificates,
        None => BulkList::Ingresses,
        Some(l) => BulkList::parse(l).ok_or_else(|| {
            AppError::bad(
                "list",
                format!("{l:?} is not one of: board, ingresses, certificates"),
            )
        })?,
    };
    let short = [("cluster", cluster), ("namespace", namespace)];
    let filters = match filters {
        Some(f) if short.iter().any(|(_, v)| v.is_some_and(|v| !v.is_empty())) => {
            return Err(AppError::bad(
                "filters",
                format!("give the filters ({f:?}) or cluster and namespace, not both"),
            ))
        }
        Some(f) => f.to_string(),
        None => {
            let mut out = form_urlencoded::Serializer::new(String::new());
            for (k, v) in short {
                if let Some(v) = v.filter(|v| !v.is_empty()) {
                    out.append_pair(k, v);
                }
            }
            out.finish()
        }
    };
    let raw = Some(filters.as_str());
    let target = match (action, list) {
        (_, BulkList::Board) => BulkTarget::Board(problem_query(raw)?),
        (ActionKind::BulkEditInPlace, BulkList::Ingresses) => {
            BulkTarget::Ingresses(ingress_query(raw)?)
        }
        (ActionKind::BulkRenew, BulkList::Certificates) => {
            BulkTarget::Certificates(certificate_query(raw)?)
        }
        (ActionKind::BulkRenew, _) => {
            return Err(AppError::bad(
                "list",
                "a bulk renew covers the board or the Certificates",
            ))
        }
        _ => {
            return Err(AppError::bad(
                "list",
                "a bulk edit-in-place covers the board or the Ingresses",
            ))
        }
    };
    Ok((target, BulkScope { list, filters }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lookout_app::model::Severity;

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
        assert_eq!(
            (q.page, q.per_page),
            (2, lookout_app::model::read::views::paging::DEFAULT_PER_PAGE)
        );
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

    #[test]
    fn unknown_parameters_are_named_with_what_the_page_takes() {
        match none(Some("cluster=zrh")) {
            Err(AppError::BadRequest { param, message }) => {
                assert_eq!(param, "cluster");
                assert_eq!(message, "unknown parameter (this page takes none)");
            }
            other => panic!("{other:?}"),
        }
        match ingress_query(Some("colour=red")) {
            Err(AppError::BadRequest { param, message }) => {
                assert_eq!(param, "colour");
                assert_eq!(
                    message,
                    "unknown parameter (this page takes: cluster, namespace, q, status, sort, page, per_page)"
                );
            }
            other => panic!("{other:?}"),
        }
        match certificate_query(Some("sort=size")) {
            Err(AppError::BadRequest { param, message }) => {
                assert_eq!(param, "sort");
                assert_eq!(
                    message,
                    "\"size\" is not one of: cluster, namespace, name, expiry, health (a leading - reverses)"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(none(None).is_ok() && none(Some("")).is_ok());
        let q = challenge_query(
            Some("domain=Shop.Example&since=&outcome=invalid"),
            chrono::Utc::now(),
        )
        .unwrap();
        assert_eq!(q.domain.as_deref(), Some("shop.example"));
        assert_eq!(
            (q.since, q.since_text),
            (None, None),
            "an empty value is no value"
        );
    }
}
