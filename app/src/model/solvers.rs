//! An ACME issuer's solvers and which one cert-manager picks for a name.
//!
//! Read in cert-manager's `pkg/util/solverpicker/solverpicker.go` (`Pick`) and
//! `pkg/controller/acmeorders/selectors/` (`labels.go`, `dns_names.go`, `dns_zones.go`): a
//! solver is a candidate if the authorization offers its challenge type (Let's Encrypt offers
//! only DNS-01 for a wildcard) and its selector matches — every `matchLabels` pair on the
//! Certificate's labels, the exact name in `dnsNames`, a zone in `dnsZones` that the name is
//! in. Among candidates, one whose `dnsNames` matched wins over one whose did not; then the
//! most specific matching zone (most labels); then the most matching labels; ties keep the
//! earlier solver, and a solver without a selector is only a fallback.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use super::object::at;

use super::interner::Interner;
use super::text::Text;

/// How a solver answers a challenge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SolverKind {
    /// `http01.ingress`: a solver Ingress, or the named Ingress edited in place.
    Http01Ingress,
    /// `http01.gatewayHTTPRoute`.
    Http01Gateway,
    Dns01,
    /// Neither (an empty or unknown solver): never picked.
    Unknown,
}

/// One entry of `spec.acme.solvers`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Solver {
    pub kind: SolverKind,
    /// `http01.ingress.name`: the solver edits this Ingress in place.
    pub ingress_name: Option<Text>,
    /// No `selector` at all: matches everything, as a fallback.
    pub catch_all: bool,
    pub match_labels: Arc<[(Text, Text)]>,
    pub dns_names: Arc<[Text]>,
    pub dns_zones: Arc<[Text]>,
}

/// The solvers of an issuer body (`spec.acme.solvers`); empty when it has none.
pub fn project(data: &Value, strings: &mut Interner) -> Arc<[Solver]> {
    at(data, "/spec/acme/solvers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|s| {
            let kind = if at(s, "/http01/ingress").is_some() {
                SolverKind::Http01Ingress
            } else if at(s, "/http01/gatewayHTTPRoute").is_some() {
                SolverKind::Http01Gateway
            } else if s.get("dns01").is_some() {
                SolverKind::Dns01
            } else {
                SolverKind::Unknown
            };
            let selector = s.get("selector").filter(|v| !v.is_null());
            let list = |key: &str, strings: &mut Interner| -> Arc<[Text]> {
                selector
                    .and_then(|sel| sel.get(key))
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(|n| strings.get(n))
                    .collect()
            };
            Solver {
                kind,
                ingress_name: at(s, "/http01/ingress/name")
                    .and_then(Value::as_str)
                    .filter(|n| !n.is_empty())
                    .map(|n| strings.get(n)),
                catch_all: selector.is_none(),
                match_labels: selector
                    .and_then(|sel| sel.get("matchLabels"))
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                    .filter_map(|(k, v)| Some((strings.get(k), strings.get(v.as_str()?))))
                    .collect(),
                dns_names: list("dnsNames", strings),
                dns_zones: list("dnsZones", strings),
            }
        })
        .collect()
}

/// How specifically a selector matched: (dnsNames matched, zone labels, labels).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Specificity {
    names: bool,
    zone: usize,
    labels: usize,
}

impl Solver {
    /// One line in words: "HTTP-01 through a solver Ingress, for dnsZones example.com".
    pub fn describe(&self) -> String {
        let how = match (self.kind, &self.ingress_name) {
            (SolverKind::Http01Ingress, Some(name)) => {
                format!("HTTP-01, editing Ingress {name} in place")
            }
            (SolverKind::Http01Ingress, None) => "HTTP-01 through a solver Ingress".to_string(),
            (SolverKind::Http01Gateway, _) => "HTTP-01 through a Gateway HTTPRoute".to_string(),
            (SolverKind::Dns01, _) => "DNS-01".to_string(),
            (SolverKind::Unknown, _) => "an empty or unknown solver (never picked)".to_string(),
        };
        let mut whom = Vec::new();
        if !self.dns_names.is_empty() {
            whom.push(format!("dnsNames {}", self.dns_names.join(", ")));
        }
        if !self.dns_zones.is_empty() {
            whom.push(format!("dnsZones {}", self.dns_zones.join(", ")));
        }
        if !self.match_labels.is_empty() {
            let labels: Vec<String> = self
                .match_labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            whom.push(format!("labels {}", labels.join(", ")));
        }
        match (whom.is_empty(), self.catch_all) {
            (true, true) => format!("{how}, for every name"),
            (true, false) => format!("{how}, for names its selector matches"),
            (false, _) => format!("{how}, for {}", whom.join("; ")),
        }
    }

    /// Whether it can answer the challenge types offered for `name` (DNS-01 only for a
    /// wildcard).
    fn offered(&self, name: &str) -> bool {
        match self.kind {
            SolverKind::Dns01 => true,
            SolverKind::Http01Ingress | SolverKind::Http01Gateway => !name.starts_with("*."),
            SolverKind::Unknown => false,
        }
    }

    /// How the selector matches `name` on a Certificate with `labels`; None if it does not.
    fn matches(&self, name: &str, labels: &[(Text, Text)]) -> Option<Specificity> {
        let labels_ok = self
            .match_labels
            .iter()
            .all(|(k, v)| labels.iter().any(|(lk, lv)| lk == k && lv == v));
        let names = self.dns_names.iter().any(|n| &**n == name);
        let zone = self
            .dns_zones
            .iter()
            .filter(|z| in_zone(name, z))
            .map(|z| label_count(z))
            .max()
            .unwrap_or(0);
        let ok = labels_ok
            && (self.dns_names.is_empty() || names)
            && (self.dns_zones.is_empty() || zone > 0);
        ok.then_some(Specificity {
            names,
            zone,
            labels: self.match_labels.len(),
        })
    }
}

/// The solver cert-manager picks for `name` (a `*.` prefix for a wildcard) on a Certificate
/// with `labels`; None when no solver can be used.
pub fn pick<'s>(solvers: &'s [Solver], name: &str, labels: &[(Text, Text)]) -> Option<&'s Solver> {
    const NOTHING: Specificity = Specificity {
        names: false,
        zone: 0,
        labels: 0,
    };
    let mut chosen: Option<(&Solver, Specificity)> = None;
    for solver in solvers.iter().filter(|s| s.offered(name)) {
        // A catch-all counts as matching nothing in particular: taken only when nothing was.
        let this = if solver.catch_all {
            NOTHING
        } else {
            match solver.matches(name, labels) {
                Some(m) => m,
                None => continue,
            }
        };
        let better = match chosen {
            None => true,
            Some((_, best)) => {
                (this.names, this.zone, this.labels) > (best.names, best.zone, best.labels)
            }
        };
        if better {
            chosen = Some((solver, this));
        }
    }
    chosen.map(|(s, _)| s)
}

/// Whether `name` is `zone` or below it (case-insensitive, trailing dots ignored).
fn in_zone(name: &str, zone: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    let zone = zone.trim_end_matches('.').to_ascii_lowercase();
    !zone.is_empty() && (name == zone || name.ends_with(&format!(".{zone}")))
}

fn label_count(zone: &str) -> usize {
    zone.trim_end_matches('.')
        .split('.')
        .filter(|l| !l.is_empty())
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn solvers(v: Value) -> Arc<[Solver]> {
        project(
            &json!({"spec": {"acme": {"solvers": v}}}),
            &mut Interner::default(),
        )
    }

    fn picked(s: &[Solver], name: &str, labels: &[(&str, &str)]) -> Option<usize> {
        let labels: Vec<(Text, Text)> = labels
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect();
        pick(s, name, &labels).map(|p| s.iter().position(|x| std::ptr::eq(x, p)).unwrap())
    }

    #[test]
    fn a_solver_without_selector_is_the_fallback() {
        let s = solvers(json!([
            {"http01": {"ingress": {"ingressClassName": "cilium"}}},
            {"dns01": {"route53": {}}, "selector": {"dnsZones": ["example.com"]}},
        ]));
        assert_eq!(
            picked(&s, "www.example.com", &[]),
            Some(1),
            "a matching zone wins"
        );
        assert_eq!(
            picked(&s, "www.other.org", &[]),
            Some(0),
            "else the catch-all"
        );
        assert_eq!(s[0].kind, SolverKind::Http01Ingress);
    }

    #[test]
    fn dns_names_beat_zones_and_longer_zones_beat_shorter() {
        let s = solvers(json!([
            {"dns01": {"cloudflare": {}}, "selector": {"dnsZones": ["example.com"]}},
            {"dns01": {"route53": {}}, "selector": {"dnsZones": ["shop.example.com"]}},
            {"http01": {"ingress": {}}, "selector": {"dnsNames": ["www.shop.example.com"]}},
        ]));
        assert_eq!(picked(&s, "api.shop.example.com", &[]), Some(1));
        assert_eq!(picked(&s, "www.shop.example.com", &[]), Some(2));
        assert_eq!(
            picked(&s, "example.com", &[]),
            Some(0),
            "a zone matches itself"
        );
        assert_eq!(
            picked(&s, "badexample.com", &[]),
            None,
            "not a suffix by label"
        );
    }

    #[test]
    fn labels_must_all_match_and_more_labels_win_a_tie() {
        let s = solvers(json!([
            {"http01": {"ingress": {}}, "selector": {"matchLabels": {"team": "web"}}},
            {"dns01": {"route53": {}}, "selector": {"matchLabels": {"team": "web", "dns": "yes"}}},
        ]));
        assert_eq!(picked(&s, "a.example.com", &[("team", "web")]), Some(0));
        assert_eq!(
            picked(&s, "a.example.com", &[("team", "web"), ("dns", "yes")]),
            Some(1)
        );
        assert_eq!(picked(&s, "a.example.com", &[("team", "ops")]), None);
        // An empty selector matches everything but is no more specific than a catch-all:
        // the earlier of the two is kept.
        let s = solvers(json!([
            {"http01": {"ingress": {}}},
            {"dns01": {"route53": {}}, "selector": {}},
        ]));
        assert_eq!(picked(&s, "a.example.com", &[]), Some(0));
        let s = solvers(json!([
            {"dns01": {"route53": {}}, "selector": {}},
            {"http01": {"ingress": {}}},
        ]));
        assert_eq!(picked(&s, "a.example.com", &[]), Some(0));
    }

    #[test]
    fn a_wildcard_can_only_be_solved_with_dns01() {
        let s = solvers(json!([{"http01": {"ingress": {"name": "shop"}}}]));
        assert_eq!(picked(&s, "*.example.com", &[]), None);
        assert_eq!(s[0].ingress_name.as_deref(), Some("shop"));
        let s = solvers(json!([{"http01": {"ingress": {}}}, {"dns01": {"route53": {}}}]));
        assert_eq!(picked(&s, "*.example.com", &[]), Some(1));
        assert_eq!(
            picked(&s, "www.example.com", &[]),
            Some(0),
            "the first catch-all"
        );
    }
}
