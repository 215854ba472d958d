//! The one door, held by a test: a caller's view is made in one place and applied only
//! behind the read ports.

/// The caller's view is made at one door: only `authenticate` (through `Caller::new`)
/// turns an identity's rules into a view; Lookout's own fleet-wide view is made by the
/// registry and used only where no caller is involved; nothing else reads an identity's
/// rules or matches a scope's globs itself.
#[test]
fn the_callers_view_is_made_at_one_door() {
    let files = crate::source_scan::product_sources();
    assert!(files.len() > 20, "the sources were found");
    let using = |needle: &str| -> Vec<&str> {
        files
            .iter()
            .filter(|(_, text)| text.contains(needle))
            .map(|(name, _)| name.as_str())
            .collect()
    };
    assert_eq!(using("Caller::new("), ["auth/mod.rs", "http/session.rs"]);
    assert_eq!(using("View::new("), ["auth/mod.rs"]);
    assert_eq!(using("View::whole_fleet("), ["clusters/mod.rs"]);
    assert_eq!(
        using(".whole_fleet()"),
        ["actions/bulk.rs", "actions/renew.rs", "http/metrics.rs"],
        "the fleet-wide view: metrics, and whether an action would fail (alone or as a bulk run's item)"
    );
    assert!(using("glob_match(").is_empty(), "globs are the view's");
    // An identity's rules (`model::scope`: `Access`, `Grant`) are read by the
    // configuration, sign-in and the demo's identities only; every other module sees
    // callers as a `View` (or the whole `Caller`).
    let rules: Vec<&str> = using("model::scope::")
        .into_iter()
        .filter(|f| {
            !["auth/", "config/", "demo/"]
                .iter()
                .any(|p| f.starts_with(p))
        })
        .collect();
    assert!(rules.is_empty(), "an identity's rules read in {rules:?}");
    // And one clock: the time is asked of the injected clock (`clock::Now`), so tests
    // and the demo can move it; only the clock module reads the wall clock.
    assert_eq!(using("Utc::now"), ["clock.rs"]);
    assert!(files.iter().any(|(n, _)| n == "config/mod.rs"));
    assert!(
        !files.iter().any(|(n, _)| n.ends_with("fuzz.rs")),
        "test-only module"
    );
    let rules: Vec<&str> = using("identity.access")
        .into_iter()
        .filter(|f| !f.starts_with("auth/"))
        .collect();
    assert!(rules.is_empty(), "an identity's rules read in {rules:?}");
    // Where a view is inspected (who sees or may act where), outside the auth module: only
    // behind the ports that read for a caller — the fleet (clusters/read.rs), its budgets
    // (fleet.rs), the history (store/reads.rs) and the actions (who may act:
    // actions/mod.rs; whose records may be read: actions/records.rs). Handlers and every
    // other module hand the view over and get back only what it may see.
    let inspections = [
        ".sees(",
        ".sees_everything(",
        ".sees_cluster_wide(",
        ".sees_cluster(",
        ".may_act(",
        ".may_act_in(",
        ".sight(",
        ".unanswered(",
        ".narrowed(",
        ".readable_through(",
        "view.clusters()",
        "Visibility::of(",
    ];
    let inspecting: Vec<&str> = files
        .iter()
        .filter(|(name, text)| {
            !name.starts_with("auth/") && inspections.iter().any(|n| text.contains(n))
        })
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(
        inspecting,
        [
            "actions/mod.rs",
            "actions/records.rs",
            "clusters/read.rs",
            "fleet.rs",
            "store/reads.rs",
        ],
        "a view inspected outside the read ports: apply it behind them instead"
    );
}
