//! zrh-prod's platform stories, as upstream's controllers tell them: requests an
//! approver-policy leaves or denies, a host Let's Encrypt's other vantage points cannot
//! reach (its first issuance serving cert-manager's temporary certificate meanwhile), a
//! wildcard no solver of its issuer can validate, and a host given two Secrets on Cilium's
//! shared listener.

use super::scenarios::fixed;
use super::seeder::Seeder;

pub(super) async fn zurich(s: &Seeder) -> anyhow::Result<()> {
    // The cluster runs approver-policy: no policy applies to team-ml's renewal request, so it
    // waits for approval for ever; acme-shop's partners name is refused by a policy. Both
    // renewals: the certificates issued before still serve.
    s.issued_secret(
        "team-ml",
        "mlflow-tls",
        &["mlflow.ml.example"],
        Some(("ClusterIssuer", "letsencrypt-prod")),
        22,
    )
    .await?;
    s.issued_secret(
        "acme-shop",
        "partners-tls",
        &["partners.acme.example"],
        Some(("ClusterIssuer", "letsencrypt-prod")),
        26,
    )
    .await?;
    s.ingress(
        "team-ml",
        "mlflow",
        &["mlflow.ml.example"],
        fixed("letsencrypt-prod"),
        Some("cilium"),
        None,
    )
    .await?;
    s.ingress(
        "acme-shop",
        "partners",
        &["partners.acme.example"],
        fixed("letsencrypt-prod"),
        Some("cilium"),
        None,
    )
    .await?;
    // A first issuance behind a firewall that admits Let's Encrypt's primary vantage point
    // only: the challenge fails "During secondary validation", and the host serves
    // cert-manager's temporary certificate meanwhile.
    s.ingress(
        "globex-web",
        "extranet",
        &["extranet.globex.example"],
        fixed("letsencrypt-prod"),
        Some("cilium"),
        None,
    )
    .await?;
    // A wildcard host under an issuer with HTTP-01 solvers only, renewing: cert-manager finds
    // no solver for it (a Warning Solver event on the Order), makes no Challenge and waits
    // for ever, while the certificate issued before (by another issuer) still serves.
    s.issued_secret(
        "globex-web",
        "apps-tls",
        &["*.apps.globex.example"],
        Some(("ClusterIssuer", "letsencrypt-prod")),
        25,
    )
    .await?;
    s.ingress(
        "globex-web",
        "apps",
        &["*.apps.globex.example"],
        fixed("letsencrypt-prod"),
        Some("cilium"),
        None,
    )
    .await?;
    Ok(())
}

/// Once the shared listener has taken zrh-prod's Ingresses: the second Secret for one host.
pub(super) async fn zurich_later(s: &Seeder) -> anyhow::Result<()> {
    // A second Ingress gives docs.globex.example a Secret of its own, its certificate issued
    // before: on Cilium's shared listener that is two filter chains for one server name,
    // which Envoy refuses (cilium/cilium#45925). The listener keeps the chains it accepted
    // before (docs' Secret for the host) and takes no change of its chains from then on.
    s.issued_secret(
        "globex-web",
        "docs-preview-tls",
        &["docs.globex.example"],
        Some(("ClusterIssuer", "letsencrypt-prod")),
        45,
    )
    .await?;
    s.ingress(
        "globex-web",
        "docs-preview",
        &["docs.globex.example"],
        fixed("letsencrypt-prod"),
        Some("cilium"),
        None,
    )
    .await?;
    // From then on the shared listener takes no change of its filter chains: careers moves
    // to a new Secret, cert-manager issues it, and clients still get the old one.
    s.move_tls_secret(
        "globex-web",
        "careers",
        "careers.globex.example",
        "careers-2027-tls",
    )
    .await
}
