//! Whether an action is offered on an object, and why not — judged once, here, for the
//! object's page, a bulk run's items and the action itself, so that a button is never shown
//! where the action would be refused or fail, and a bulk run is the single action many times.

use crate::model::certificate::CertificateView;
use crate::model::chain::AnnotationStatus;
use crate::model::ingress::IngressView;
use crate::model::read::problems::Problem;
use crate::model::text::Text;
use crate::model::Kind;

/// The answer for one object.
#[derive(Debug, Clone, PartialEq)]
pub enum Offer<'p> {
    /// The action helps here.
    Offered,
    /// Nothing to do: the object already is as the action would make it, or asks for nothing.
    NotNeeded,
    /// A cause must be fixed first: the action would be refused, or fail the same way.
    Blocked(&'p Problem),
    /// Another field manager owns the field with another value: Lookout's apply (which
    /// never forces) would end in a conflict.
    OwnedElsewhere(Vec<Text>),
    /// cert-manager is issuing the Certificate already and ignores another trigger.
    Issuing,
}

impl Offer<'_> {
    pub fn offered(&self) -> bool {
        matches!(self, Offer::Offered)
    }

    /// Why the action is not offered, in a sentence for the reader; None when it is.
    pub fn why_not(&self) -> Option<String> {
        match self {
            Offer::Offered => None,
            Offer::NotNeeded => Some("nothing to change: it already is as the action would make it".into()),
            Offer::Blocked(p) => Some(format!(
                "it would fail the same way until this is fixed: {} — {}",
                p.diagnosis,
                p.action.label.to_lowercase()
            )),
            Offer::OwnedElsewhere(managers) => Some(format!(
                "the annotation is owned by another field manager ({}) with another value; Lookout does not take it over — change it where {} manages it",
                managers.join(", "),
                if managers.len() == 1 { "that tool" } else { "those tools" }
            )),
            Offer::Issuing => Some(
                "cert-manager is issuing it already (Issuing=True) and ignores another trigger"
                    .into(),
            ),
        }
    }
}

/// Adding edit-in-place to `ingress`, whose annotation reads `annotation`, among the
/// problems that concern it (`problems`, any order).
pub fn edit_in_place<'p>(
    ingress: &IngressView,
    annotation: &AnnotationStatus,
    problems: &'p [Problem],
) -> Offer<'p> {
    let needed = matches!(
        annotation,
        AnnotationStatus::Missing
            | AnnotationStatus::SetNotEffective { .. }
            | AnnotationStatus::Invalid { .. }
    );
    if !needed {
        return Offer::NotNeeded;
    }
    if matches!(annotation, AnnotationStatus::Invalid { .. }) {
        let others: Vec<Text> = ingress
            .edit_in_place_managers
            .iter()
            .filter(|m| &***m != crate::model::FIELD_MANAGER)
            .cloned()
            .collect();
        if !others.is_empty() {
            return Offer::OwnedElsewhere(others);
        }
    }
    match problems.iter().find(|p| p.blocks_edit_in_place()) {
        Some(p) => Offer::Blocked(p),
        None => Offer::Offered,
    }
}

/// Whether `p` makes issuing `certificate` (owned by the Ingress `ingress`, if any) fail
/// the same way: a problem of its chain whose root blocks issuance — the Certificate among
/// its objects, or rooted at its Ingress — or edit-in-place set on the Ingress but not on
/// this Certificate while its challenges fail behind the redirect (the next challenge
/// still uses the separate solver; with the override there, a new request is what applies
/// it). The Certificate's page and the action ask this same question.
pub fn stops_issuance(p: &Problem, certificate: &CertificateView, ingress: Option<&str>) -> bool {
    let (ns, name) = (&*certificate.namespace, &*certificate.name);
    let rooted_here = ingress.is_some_and(|i| p.rooted_at(Kind::Ingress, ns, i));
    let unapplied_fix = p.cause == crate::model::Rule::IngressEditInPlaceNotEffective
        && p.root.severity == crate::model::finding::Severity::Critical
        && certificate.override_ingress_name.is_none()
        && rooted_here;
    (p.blocks_issuance() && (p.concerns(Kind::Certificate, ns, name) || rooted_here))
        || unapplied_fix
}

/// Issuing `certificate` again (renew, restart), owned by the Ingress `ingress` if
/// ingress-shim made it, among the problems of its namespace (`problems`): blocked by the
/// first that [`stops_issuance`] (a problem only naming the Ingress among a neighbour's
/// symptoms, a shared host, does not stop this Ingress's own challenge); else not offered
/// while cert-manager is issuing it already.
pub fn issue_again<'p>(
    certificate: &CertificateView,
    ingress: Option<&str>,
    problems: &'p [Problem],
) -> Offer<'p> {
    if let Some(p) = problems
        .iter()
        .find(|p| stops_issuance(p, certificate, ingress))
    {
        return Offer::Blocked(p);
    }
    if certificate
        .rare
        .issuing
        .as_deref()
        .is_some_and(|c| c.status == crate::model::object::ConditionStatus::True)
    {
        return Offer::Issuing;
    }
    Offer::Offered
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::rules::fixtures::World;

    fn blog(value: Option<&str>, managers: &[&str]) -> IngressView {
        let mut ing = IngressView::test("blog")
            .in_ns("acme")
            .with_issuer("letsencrypt-prod")
            .tls("blog.acme.example");
        ing.edit_in_place = value.map(Into::into);
        ing.edit_in_place_managers = managers.iter().map(|m| Text::from(*m)).collect();
        ing
    }

    #[test]
    fn another_managers_value_is_not_taken_over_and_lookouts_own_is_fixed() {
        let invalid = AnnotationStatus::Invalid {
            value: "false".into(),
        };
        let theirs = blog(Some("false"), &["gitops"]);
        let offer = edit_in_place(&theirs, &invalid, &[]);
        assert_eq!(offer, Offer::OwnedElsewhere(vec!["gitops".into()]));
        assert!(offer.why_not().unwrap().contains("gitops"));
        // Lookout's own field, or one nobody claims: the fix replaces it.
        for managers in [&["lookout"][..], &[]] {
            let ing = blog(Some("false"), managers);
            assert_eq!(edit_in_place(&ing, &invalid, &[]), Offer::Offered);
        }
        let set = AnnotationStatus::Set {
            managers: std::sync::Arc::from(["gitops".into()]),
        };
        assert_eq!(
            edit_in_place(&blog(Some("true"), &["gitops"]), &set, &[]),
            Offer::NotNeeded
        );
    }

    #[test]
    fn a_missing_issuer_blocks_the_fix_and_issuing_again() {
        let mut ing = blog(None, &[]);
        ing = ing.with_issuer("nobody-made-this");
        let w = World::new().ingress(ing.clone());
        let now = crate::model::rules::fixtures::now();
        let findings = std::sync::Arc::new(w.findings());
        let problems =
            crate::model::read::problems::cluster_problems(&w.facts, &w.data, &findings, now);
        let offer = edit_in_place(&ing, &AnnotationStatus::Missing, &problems);
        assert!(
            matches!(offer, Offer::Blocked(p) if p.cause == crate::model::Rule::IssuerMissing),
            "{offer:?}"
        );
        assert!(offer.why_not().unwrap().contains("would fail the same way"));
        let cert = crate::model::certificate::CertificateView::of(&ing);
        assert!(matches!(
            issue_again(&cert, Some("blog"), &problems),
            Offer::Blocked(_)
        ));
        assert_eq!(issue_again(&cert, Some("blog"), &[]), Offer::Offered);
        assert_eq!(
            issue_again(&cert.issuing(), Some("blog"), &[]),
            Offer::Issuing
        );
    }

    /// Set on the Ingress, not on its Certificate, and its challenge failing behind the
    /// redirect: renewing would fail again; the fix (which puts the override on the
    /// Certificate) is what helps. With the override there, a new request applies it.
    #[test]
    fn a_fix_not_on_the_certificate_blocks_issuing_again_until_it_is() {
        use crate::model::rules::fixtures::attempt;
        use chrono::Duration;
        let ing = blog(Some("true"), &["kubectl"]);
        let judge = |cert: CertificateView| {
            let (r, o, ch) = attempt(
                &cert,
                "pending",
                None,
                Some((
                    "pending",
                    "Waiting for HTTP-01 challenge propagation: wrong status code '404', expected '200'",
                    Duration::minutes(20),
                )),
            );
            let w = World::new()
                .attempt((r, o, ch))
                .certificate(cert.clone())
                .ingress(ing.clone());
            let findings = std::sync::Arc::new(w.findings());
            let now = crate::model::rules::fixtures::now();
            let problems =
                crate::model::read::problems::cluster_problems(&w.facts, &w.data, &findings, now);
            let blocked = matches!(
                issue_again(&cert, Some("blog"), &problems),
                Offer::Blocked(p) if p.cause == crate::model::Rule::IngressEditInPlaceNotEffective
            );
            blocked
        };
        let without = CertificateView::of(&ing).without_override().issuing();
        assert!(judge(without), "no override on the Certificate: blocked");
        let with = CertificateView::of(&ing).issuing();
        assert!(
            !judge(with),
            "the override is there: a new request applies it"
        );
    }
}
