//! Watch pipelines: default backoff → project into compact views → store. Every stream
//! carries `cluster` and `kind` in its span; no error is dropped silently.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::networking::v1::Ingress;
use kube::runtime::watcher::Event;
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client};
use lookout_app::model::{IngressView, KindState};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::ClusterRecord;

const KIND: &str = "Ingress";

fn key(v: &IngressView) -> (String, String) {
    (v.namespace.clone(), v.name.clone())
}

/// Watches every Ingress of the cluster until `shutdown`.
pub async fn ingresses(record: Arc<ClusterRecord>, client: Client, shutdown: CancellationToken) {
    let span = tracing::info_span!("watch", cluster = %record.name, kind = KIND);
    async move {
        let api: Api<Ingress> = Api::all(client);
        let stream = watcher(api, watcher::Config::default()).default_backoff();
        let mut stream = std::pin::pin!(stream);
        // The relist in progress; swapped in whole at InitDone so pages never see half a list.
        let mut relist: BTreeMap<(String, String), Arc<IngressView>> = BTreeMap::new();
        let mut skipped = 0usize;
        loop {
            let event = tokio::select! {
                _ = shutdown.cancelled() => break,
                ev = stream.next() => ev,
            };
            let Some(event) = event else { break };
            match event {
                Ok(Event::Init) => {
                    relist.clear();
                    skipped = 0;
                }
                Ok(Event::InitApply(ing)) => match IngressView::project(&record.name, &ing) {
                    Some(v) => {
                        relist.insert(key(&v), Arc::new(v));
                    }
                    None => skipped += 1,
                },
                Ok(Event::InitDone) => {
                    let count = relist.len();
                    *record.ingresses.write().expect("ingress lock") = std::mem::take(&mut relist);
                    if skipped > 0 {
                        tracing::warn!(skipped, "Ingresses without a name were skipped");
                    }
                    tracing::info!(count, "initial list done");
                    record.set_kind(KIND, KindState::Synced, count);
                }
                Ok(Event::Apply(ing)) => {
                    if let Some(v) = IngressView::project(&record.name, &ing) {
                        let count = {
                            let mut map = record.ingresses.write().expect("ingress lock");
                            map.insert(key(&v), Arc::new(v));
                            map.len()
                        };
                        record.set_kind(KIND, KindState::Synced, count);
                        record.touch();
                    }
                }
                Ok(Event::Delete(ing)) => {
                    let k = (
                        ing.metadata.namespace.clone().unwrap_or_default(),
                        ing.metadata.name.clone().unwrap_or_default(),
                    );
                    let count = {
                        let mut map = record.ingresses.write().expect("ingress lock");
                        map.remove(&k);
                        map.len()
                    };
                    record.set_kind(KIND, KindState::Synced, count);
                    record.touch();
                }
                Err(e) => {
                    tracing::warn!(error = %e, "watch failed; retrying with backoff");
                    let count = record.ingresses.read().expect("ingress lock").len();
                    record.set_kind(
                        KIND,
                        KindState::Error {
                            error: e.to_string(),
                        },
                        count,
                    );
                }
            }
        }
        tracing::debug!("watch stopped");
    }
    .instrument(span)
    .await
}
