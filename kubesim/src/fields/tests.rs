use super::*;

fn req<'a>(manager: &'a str, force: bool) -> ApplyRequest<'a> {
    ApplyRequest {
        manager,
        api_version: "networking.k8s.io/v1",
        force,
        scope: Scope::MainWithoutStatus,
        now: "2026-01-01T00:00:00Z",
    }
}

fn ingress(annotations: Value) -> Value {
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
           "metadata": {"name": "shop", "namespace": "acme", "annotations": annotations}})
}

#[test]
fn apply_records_only_the_applied_annotation() {
    let live = ingress(json!({"a": "1"}));
    let out = apply(
        Some(&live),
        &ingress(json!({"b": "2"})),
        &req("lookout", false),
    )
    .unwrap();
    assert_eq!(out["metadata"]["annotations"], json!({"a": "1", "b": "2"}));
    let mf = &out["metadata"]["managedFields"][0];
    assert_eq!(mf["manager"], "lookout");
    assert_eq!(mf["operation"], "Apply");
    assert_eq!(
        mf["fieldsV1"],
        json!({"f:metadata": {"f:annotations": {"f:b": {}}}})
    );
}

#[test]
fn different_value_conflicts_same_value_is_shared() {
    let first = apply(None, &ingress(json!({"x": "1"})), &req("argocd", false)).unwrap();
    let err = apply(
        Some(&first),
        &ingress(json!({"x": "2"})),
        &req("lookout", false),
    )
    .unwrap_err();
    assert_eq!(
        err,
        vec![Conflict {
            manager: "argocd".into(),
            field: ".metadata.annotations.x".into()
        }]
    );
    let shared = apply(
        Some(&first),
        &ingress(json!({"x": "1"})),
        &req("lookout", false),
    )
    .unwrap();
    assert_eq!(read_managed(&shared).len(), 2);
}

#[test]
fn force_takes_the_field_from_the_other_manager() {
    let first = apply(None, &ingress(json!({"x": "1"})), &req("argocd", false)).unwrap();
    let out = apply(
        Some(&first),
        &ingress(json!({"x": "2"})),
        &req("lookout", true),
    )
    .unwrap();
    assert_eq!(out["metadata"]["annotations"]["x"], "2");
    let managers: Vec<String> = read_managed(&out).into_iter().map(|e| e.manager).collect();
    assert_eq!(managers, vec!["lookout"]);
}

#[test]
fn omitting_a_field_removes_it_unless_co_owned() {
    let a = apply(
        None,
        &ingress(json!({"x": "1", "y": "1"})),
        &req("lookout", false),
    )
    .unwrap();
    let b = apply(Some(&a), &ingress(json!({"y": "1"})), &req("other", false)).unwrap();
    let bare = json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                      "metadata": {"name": "shop", "namespace": "acme"}});
    let c = apply(Some(&b), &bare, &req("lookout", false)).unwrap();
    assert_eq!(c["metadata"]["annotations"], json!({"y": "1"}));
}

#[test]
fn update_takes_ownership_of_changed_fields() {
    let a = apply(None, &ingress(json!({"x": "1"})), &req("lookout", false)).unwrap();
    let mut b = a.clone();
    b["metadata"]["annotations"]["x"] = json!("2");
    track_update(
        Some(&a),
        &mut b,
        "kubectl-edit",
        "networking.k8s.io/v1",
        Scope::MainWithoutStatus,
        "t",
    );
    let entries = read_managed(&b);
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].manager, "kubectl-edit");
    assert_eq!(entries[0].operation, "Update");
}

#[test]
fn conditions_are_owned_per_type_and_round_trip() {
    let obj = json!({"status": {"conditions": [
        {"type": "Ready", "status": "True"}, {"type": "Issuing", "status": "False"}]}});
    let set = field_set(&obj, Scope::StatusOnly);
    let rendered = fields_v1(&set);
    assert!(rendered["f:status"]["f:conditions"]["k:{\"type\":\"Ready\"}"]["."].is_object());
    let mut back = FieldSet::new();
    parse_fields_v1(&rendered, Vec::new(), &mut back);
    assert_eq!(back, set);
    let ready = value_at(
        &obj,
        &[
            Step::Field("status".into()),
            Step::Field("conditions".into()),
            Step::Key("{\"type\":\"Ready\"}".into()),
            Step::Field("status".into()),
        ],
    );
    assert_eq!(ready, Some(&json!("True")));
}
