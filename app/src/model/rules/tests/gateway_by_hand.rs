//! The Gateway remedies written in full: the lines a finding carries are the change that
//! clears it, only from names a shell and YAML read as written, and only for what its
//! readers may see.

use std::sync::Arc;

use super::gateway_http01::{gateway_challenge, http, parent, redirected, route, unreachable};
use crate::model::certificate::CertificateView;
use crate::model::infra::RoutesFrom;
use crate::model::Rule;

#[test]
fn a_gateway_without_a_port_80_listener_is_given_one_by_server_side_apply() {
    let w = gateway_challenge(false, vec![parent("acme", "gw", None)], Vec::new());
    let found = unreachable(&w);
    let lines = found[0].commands.as_deref().expect("the listener to add");
    assert!(
        lines.contains("kubectl apply --server-side --field-manager=lookout -f - <<'EOF'\n"),
        "{lines}"
    );
    for part in [
        "kind: Gateway\nmetadata:\n  namespace: \"acme\"\n  name: \"gw\"\n",
        "  listeners:\n  - name: \"acme-http01\"\n    protocol: HTTP\n    port: 80\n    hostname: \"shop.example.com\"\nEOF\n",
    ] {
        assert!(lines.contains(part), "{part}\n---\n{lines}");
    }
    // The parentRef's sectionName names the listener it waits for.
    let w = gateway_challenge(false, vec![parent("acme", "gw", Some("plain"))], Vec::new());
    let lines = unreachable(&w)[0].commands.clone().unwrap();
    assert!(lines.contains("  - name: \"plain\"\n"), "{lines}");
}

#[test]
fn no_listener_is_written_where_it_would_change_another_or_not_help() {
    for (listeners, parents) in [
        // A port-80 listener serves the host; the parentRef's section misses it.
        (
            vec![http("http", 80, None, RoutesFrom::All)],
            vec![parent("acme", "gw", Some("plain"))],
        ),
        // The name the parentRef asks for is a listener on another port: applying would move it.
        (
            vec![http("plain", 8080, None, RoutesFrom::All)],
            vec![parent("acme", "gw", Some("plain"))],
        ),
        // The name is the TLS listener's.
        (Vec::new(), vec![parent("acme", "gw", Some("https"))]),
        // A Gateway of another namespace: not the Challenge's readers' to see or change.
        (Vec::new(), vec![parent("edge", "gw", None)]),
        // A name no API server admits: nothing a shell would read otherwise.
        (
            Vec::new(),
            vec![parent("acme", "gw", Some("x'; rm -rf ~; '"))],
        ),
    ] {
        let w = gateway_challenge(false, parents.clone(), listeners.clone());
        let found = unreachable(&w);
        assert_eq!(found.len(), 1, "{listeners:?} {parents:?}");
        assert_eq!(found[0].commands, None, "{listeners:?} {parents:?}");
    }
}

#[test]
fn a_redirect_in_front_of_an_ingress_solver_gets_a_gateway_solver_for_its_host() {
    let w = redirected(
        vec![route("to-https", Some("http"), &[], &[], true)],
        ("Ingress", "shop"),
    );
    let found: Vec<_> = w
        .findings()
        .into_iter()
        .filter(|f| f.rule == Rule::GatewayAcmePathRedirected)
        .collect();
    let lines = found[0].commands.as_deref().expect("the solver to add");
    let patch = lines
        .lines()
        .find(|l| l.starts_with("kubectl patch clusterissuer letsencrypt-prod --type=json -p '"))
        .unwrap_or_else(|| panic!("{lines}"));
    let json = patch
        .split_once(" -p '")
        .unwrap()
        .1
        .strip_suffix('\'')
        .unwrap();
    let ops: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(ops[0]["op"], "add");
    assert_eq!(ops[0]["path"], "/spec/acme/solvers/-");
    let solver = &ops[0]["value"];
    assert_eq!(solver["selector"]["dnsNames"][0], "shop.example.com");
    let p = &solver["http01"]["gatewayHTTPRoute"]["parentRefs"][0];
    assert_eq!(
        (&p["namespace"], &p["name"], &p["sectionName"], &p["port"]),
        (&"acme".into(), &"gw".into(), &"http".into(), &80.into())
    );
    // Ready: the next renewal uses it; nothing to restart.
    assert!(!lines.contains("cmctl renew"), "{lines}");
}

#[test]
fn a_certificate_not_ready_behind_the_redirect_is_also_issued_again() {
    let mut w = redirected(
        vec![route("to-https", Some("http"), &[], &[], true)],
        ("Ingress", "shop"),
    );
    let c = w.data.certificates.values_mut().next().unwrap();
    *Arc::make_mut(c) = CertificateView::clone(c).not_ready("Failed", chrono::Duration::hours(1));
    let found: Vec<_> = w
        .findings()
        .into_iter()
        .filter(|f| f.rule == Rule::GatewayAcmePathRedirected)
        .collect();
    let lines = found[0].commands.as_deref().unwrap();
    assert!(lines.contains("\ncmctl renew -n acme shop-tls"), "{lines}");
}

/// A listener whose certificate of another namespace is not permitted: the ReferenceGrant
/// it needs, in the Secret's namespace, as a manifest to apply.
fn not_permitted(secret_ns: &str, secret: &str) -> Option<String> {
    let mut w = super::gateway::with_gateway(
        crate::model::rules::fixtures::World::new(),
        Some((
            "False",
            "RefNotPermitted",
            "Invalid CertificateRef, not permitted.",
        )),
    );
    let gw = w.data.gateways.values_mut().next().unwrap();
    let r = &mut Arc::make_mut(gw).listeners[0].certificate_refs[0];
    r.namespace = secret_ns.into();
    r.name = secret.into();
    let found: Vec<_> = w
        .findings()
        .into_iter()
        .filter(|f| f.rule == Rule::GatewayReferenceNotPermitted)
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].host.as_deref(), Some("shop.example.com"));
    found[0].commands.as_deref().map(String::from)
}

#[test]
fn a_reference_not_permitted_gets_its_reference_grant_written_in_full() {
    let lines = not_permitted("certs", "shop-tls").expect("the grant");
    for part in [
        "kubectl apply --server-side --field-manager=lookout -f - <<'EOF'\n",
        "kind: ReferenceGrant\nmetadata:\n  namespace: \"certs\"\n  name: \"acme-gateways-shop-tls\"\n",
        "spec:\n  from:\n  - group: gateway.networking.k8s.io\n    kind: Gateway\n    namespace: \"acme\"\n  to:\n  - group: \"\"\n    kind: Secret\n    name: \"shop-tls\"\nEOF",
    ] {
        assert!(lines.contains(part), "{part}\n---\n{lines}");
    }
    // Names no API server admits: nothing to paste.
    assert_eq!(not_permitted("certs", "shop'; rm -rf ~"), None);
}
