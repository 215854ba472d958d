//! A problem as one reader sees it. Problems are judged once over the whole cluster; a
//! reader who sees only some namespaces gets each problem that reaches a chain of theirs,
//! with what it says narrowed to what they may know: their chains, hosts, namespaces and
//! findings, and its urgency as the worst of their chains' (each judged with the problem,
//! so the same object reads the same for everyone). A root they may not see keeps its rule,
//! object and headline when it is cluster-wide (the ClusterIssuer their Certificate names,
//! the cluster's load balancer) — in words that name nothing of another namespace — and is
//! told from one of their own findings when it is another namespace's.

use super::*;
use crate::model::read::Visibility;

impl Problem {
    /// This problem as `visible` sees it; None when it reaches nothing of theirs.
    pub fn seen_by(&self, visible: &Visibility<'_>) -> Option<Problem> {
        let mut told = self.narrowed(visible)?;
        // Only the platform can act: the reader who does not run the cluster is told so,
        // with no button nor command they could not use.
        if self.owner == Owner::Platform && !visible.whole_cluster() {
            told.action = NextAction::provider();
        }
        Some(told)
    }

    /// What of the problem the reader sees.
    fn narrowed(&self, visible: &Visibility<'_>) -> Option<Problem> {
        if visible.whole_cluster() {
            return Some(self.clone());
        }
        let theirs = |ns: &str| !ns.is_empty() && visible.namespace(ns);
        let affected: Vec<Affected> = self
            .affected
            .iter()
            .filter(|a| theirs(&a.object.namespace))
            .cloned()
            .collect();
        if affected.is_empty() {
            return None;
        }
        let everything = affected.len() == self.affected.len()
            && visible.finding(&self.root)
            && self.symptoms.iter().all(|f| visible.finding(f))
            && self.objects.iter().all(|o| theirs(&o.namespace));
        if everything {
            return Some(self.clone());
        }
        let mut symptoms: Vec<FindingRef> = self
            .symptoms
            .iter()
            .filter(|f| visible.finding(f))
            .cloned()
            .collect();
        let root = if visible.finding(&self.root) {
            self.root.clone()
        } else if self.root.namespace.is_empty() {
            let told = Arc::new(vec![in_public_words(&self.root)]);
            FindingRef::of(&told, &told[0])
        } else {
            // Another namespace's finding (the load balancer's, first seen on another
            // namespace's host): told from the reader's own of the same rule.
            let at = symptoms
                .iter()
                .position(|f| f.rule == self.root.rule)
                .or((!symptoms.is_empty()).then_some(0))?;
            symptoms.remove(at)
        };
        let cluster_wide_root = root.namespace.is_empty();
        let objects: Vec<ProblemObject> = self
            .objects
            .iter()
            .filter(|o| {
                theirs(&o.namespace)
                    || (cluster_wide_root
                        && o.namespace.is_empty()
                        && o.kind == root.kind
                        && o.name == root.name)
            })
            .cloned()
            .collect();
        let hosts: BTreeSet<Text> = affected
            .iter()
            .flat_map(|a| a.hosts.iter().cloned())
            .collect();
        let namespaces: Vec<Text> = self
            .namespaces
            .iter()
            .filter(|n| theirs(n))
            .cloned()
            .collect();
        let since = std::iter::once(&*root)
            .chain(symptoms.iter().map(|f| &**f))
            .filter_map(|f| f.since)
            .min();
        let (diagnosis, evidence) = if std::ptr::eq(&*root, &*self.root) {
            (self.diagnosis.clone(), self.evidence.clone())
        } else {
            headline(&root, symptoms.iter().map(|f| &**f))
        };
        let mut action = self.action.clone();
        if !std::ptr::eq(&*root, &*self.root) {
            let own = next_action(&root);
            action.label = own.label;
            action.detail = own.detail;
            // The page it opens stays the problem's (the issuer's, or the reader's object's)
            // unless it was another namespace's object.
            if root.namespace.is_empty() {
                action.href = action.href.or(own.href);
            } else {
                action.href = own.href.or_else(|| {
                    objects.iter().find_map(|o| {
                        crate::model::links::object_path(
                            o.kind.name(),
                            &o.cluster,
                            &o.namespace,
                            &o.name,
                        )
                    })
                });
            }
        }
        let urgency = Urgency::worst(affected.iter().map(|a| &a.urgency))
            .unwrap_or_else(|| self.urgency.clone());
        Some(Problem {
            id: self.id.clone(),
            cause: root.rule,
            diagnosis,
            evidence,
            hosts: hosts.into_iter().collect(),
            objects: objects.into(),
            clusters: self.clusters.clone(),
            namespaces: namespaces.into(),
            urgency,
            affected: affected.into(),
            since,
            action,
            owner: self.owner,
            confirming: self.confirming.clone(),
            root,
            symptoms: symptoms.into(),
        })
    }

    /// This problem as it bears on one object: its urgency and hosts are those of the chain
    /// that holds the object (the Ingress's, or the Certificate's), as every list and page
    /// tells of that object. Unchanged when no chain of it holds the object.
    pub fn about_object(&self, kind: Kind, namespace: &str, name: &str) -> Problem {
        let mut out = self.clone();
        let holding: Vec<&Affected> = self
            .affected
            .iter()
            .filter(|a| a.holds(kind, namespace, name))
            .collect();
        if let Some(u) = Urgency::worst(holding.iter().map(|a| &a.urgency)) {
            out.urgency = u;
            let hosts: BTreeSet<Text> = holding
                .iter()
                .flat_map(|a| a.hosts.iter().cloned())
                .collect();
            if !hosts.is_empty() {
                out.hosts = hosts.into_iter().collect();
            }
        }
        out
    }
}

/// A cluster-wide finding told to a reader who sees only some namespaces: its rule, object,
/// severity, time and headline — a cluster-wide finding's title names nothing of any
/// namespace (a rule test holds every rule to that) — with its evidence and remedy as what
/// the platform that runs the cluster does, not the users it lists in every namespace.
fn in_public_words(f: &Finding) -> Finding {
    Finding {
        message: Text::from(format!(
            "{}. This is cluster-wide: the platform team that runs cluster {} fixes it; \
             nothing in your namespaces needs to change.",
            f.title, f.cluster
        )),
        remediation: Text::from(
            "On the provider's side: the platform team that runs the cluster fixes it. \
             Your certificates are issued once it is fixed.",
        ),
        commands: None,
        host: None,
        ..f.clone()
    }
}
