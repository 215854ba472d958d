//! `lookout check-access --config FILE`: asks each configured cluster, as the identity Lookout
//! connects with, for every right Lookout needs (one SelfSubjectAccessReview each, as
//! `kubectl auth can-i`), and prints a table of each right and whether it is there. The read
//! rights come from the watched kinds, the actions' from `actions::RIGHTS` (skipped with
//! `read_only = true`).

use std::fmt::Write;

pub use crate::clusters::access::Right;

use crate::clusters::access;
use crate::config::Config;

/// What one cluster answered.
pub struct ClusterAccess {
    pub cluster: String,
    /// Each right and whether it is there; Err when the cluster could not be asked.
    pub rights: Result<Vec<(Right, bool)>, String>,
}

impl ClusterAccess {
    /// The rights it lacks (every right when it could not be asked).
    pub fn missing(&self) -> usize {
        match &self.rights {
            Ok(r) => r.iter().filter(|(_, ok)| !ok).count(),
            Err(_) => usize::MAX,
        }
    }
}

/// Every right Lookout needs with this configuration: `read_only` leaves the actions' out,
/// `asks_clusters` (`auth.access_source` other than `config`) adds asking the cluster what a
/// person may do, and `impersonates` (`actions.impersonate`) puts impersonating the person
/// in place of the actions' own rights (the person needs those, not Lookout).
pub fn needed(read_only: bool, asks_clusters: bool, impersonates: bool) -> Vec<Right> {
    let mut rights = access::read_rights();
    if asks_clusters {
        rights.push(Right {
            verb: "create",
            group: "authorization.k8s.io",
            resource: "subjectaccessreviews",
            subresource: "",
            namespace: None,
            name: None,
            purpose: "asking what a signed-in person may see and do (auth.access_source)".into(),
        });
        rights.push(Right {
            verb: "list",
            group: "rbac.authorization.k8s.io",
            resource: "rolebindings",
            subresource: "",
            namespace: None,
            name: None,
            purpose: "which namespaces name a person, to ask only about those".into(),
        });
    }
    if !read_only && impersonates {
        for (resource, purpose) in [
            ("users", "sending an action as the person who asked for it"),
            ("groups", "sending an action with the person's groups"),
        ] {
            rights.push(Right {
                verb: "impersonate",
                group: "",
                resource,
                subresource: "",
                namespace: None,
                name: None,
                purpose: purpose.into(),
            });
        }
    } else if !read_only {
        for (verb, group, resource, subresource, purpose) in crate::actions::RIGHTS {
            rights.push(Right {
                verb,
                group,
                resource,
                subresource,
                namespace: None,
                name: None,
                purpose: purpose.to_string(),
            });
        }
    }
    rights
}

/// Asks every cluster of `config` for every right.
pub async fn check(config: &Config) -> Vec<ClusterAccess> {
    let rights = needed(
        config.read_only,
        config.auth.access_source != crate::config::AccessSource::Config,
        config.actions.impersonate,
    );
    let mut out = Vec::new();
    for c in &config.clusters {
        let answers = match crate::clusters::build_client(c).await {
            Err(e) => Err(e),
            Ok(client) => {
                let mut answers = Ok(Vec::new());
                for r in &rights {
                    match access::has(&client, r).await {
                        Ok(ok) => {
                            if let Ok(a) = answers.as_mut() {
                                a.push((r.clone(), ok));
                            }
                        }
                        Err(e) => {
                            answers = Err(format!(
                                "asking for {}: {}",
                                r.describe(),
                                crate::clusters::with_causes(&e)
                            ));
                            break;
                        }
                    }
                }
                answers
            }
        };
        out.push(ClusterAccess {
            cluster: c.name.clone(),
            rights: answers,
        });
    }
    out
}

/// The table `lookout check-access` prints.
pub fn report(results: &[ClusterAccess]) -> String {
    let mut s = String::new();
    for r in results {
        let _ = writeln!(s, "cluster {}:", r.cluster);
        match &r.rights {
            Err(e) => {
                let _ = writeln!(s, "  could not ask: {e}");
            }
            Ok(rights) => {
                let width = rights
                    .iter()
                    .map(|(r, _)| r.describe().len())
                    .max()
                    .unwrap_or(0);
                for (right, ok) in rights {
                    let _ = writeln!(
                        s,
                        "  {:<7} {:<width$}  {:<15} {}",
                        if *ok { "ok" } else { "MISSING" },
                        right.describe(),
                        right.scope(),
                        right.purpose,
                    );
                }
                let missing = rights.iter().filter(|(_, ok)| !ok).count();
                let _ = writeln!(s, "  {} of {} rights missing", missing, rights.len());
            }
        }
    }
    s
}
