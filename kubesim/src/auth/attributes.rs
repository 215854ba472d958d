//! What a request asks to do, in the terms RBAC decides on: the API server's `RequestInfo`
//! (`staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`) and the wording of
//! its refusal (`…/endpoints/handlers/responsewriters/errors.go`, `apierrors.NewForbidden`).

use serde_json::json;

use crate::status::ApiError;

/// The attributes of one request (or of one review's question).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attributes {
    pub verb: String,
    /// True for `/api/…` and `/apis/…` URLs naming a resource; false for discovery,
    /// `/version`, `/healthz`, the OpenAPI documents.
    pub resource_request: bool,
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    /// The URL path, for non-resource requests.
    pub path: String,
}

impl Attributes {
    /// Reads the attributes off a request the way `RequestInfoFactory.NewRequestInfo` does.
    pub fn from_request(method: &str, path: &str, query: &str) -> Attributes {
        let mut a = Attributes {
            verb: method.to_ascii_lowercase(),
            path: path.to_string(),
            ..Attributes::default()
        };
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        if parts.len() < 3 || !matches!(parts[0], "api" | "apis") {
            return a;
        }
        let mut rest = &parts[1..];
        if parts[0] == "apis" {
            if rest.len() < 3 {
                return a;
            }
            a.group = rest[0].to_string();
            rest = &rest[1..];
        }
        a.resource_request = true;
        rest = &rest[1..]; // the version
        a.verb = match method {
            "POST" => "create",
            "GET" | "HEAD" => "get",
            "PUT" => "update",
            "PATCH" => "patch",
            "DELETE" => "delete",
            _ => "",
        }
        .to_string();
        if rest.first() == Some(&"namespaces") {
            if let Some(ns) = rest.get(1) {
                a.namespace = ns.to_string();
                if rest.len() > 2 && !matches!(rest[2], "status" | "finalize") {
                    rest = &rest[2..];
                }
            }
        }
        if let Some(r) = rest.first() {
            a.resource = r.to_string();
        }
        if let Some(n) = rest.get(1) {
            a.name = n.to_string();
        }
        if let Some(s) = rest.get(2) {
            a.subresource = s.to_string();
        }
        let param = |key: &str| form_pairs(query).find(|(k, _)| k == key).map(|(_, v)| v);
        if a.name.is_empty() && a.verb == "get" {
            a.verb = if matches!(param("watch").as_deref(), Some("true" | "1")) {
                "watch"
            } else {
                "list"
            }
            .to_string();
            // A list or watch of one name (`fieldSelector=metadata.name=x`) is authorized
            // for that name, so `resourceNames` rules can allow it.
            if let Some(sel) = param("fieldSelector") {
                for req in sel.split(',') {
                    if let Some(n) = req
                        .strip_prefix("metadata.name==")
                        .or_else(|| req.strip_prefix("metadata.name="))
                    {
                        a.name = n.to_string();
                    }
                }
            }
        }
        if a.name.is_empty() && a.verb == "delete" {
            a.verb = "deletecollection".to_string();
        }
        a
    }

    /// `resource/subresource` as RBAC rules name it.
    pub fn combined_resource(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }

    /// The API server's refusal: 403 `Forbidden` with its exact message.
    pub fn forbidden(&self, user: &str) -> ApiError {
        if !self.resource_request {
            return ApiError::new(
                403,
                "Forbidden",
                format!(
                    "forbidden: User {user:?} cannot {} path {:?}",
                    self.verb, self.path
                ),
            )
            .with_details(json!({}));
        }
        let reason = if self.namespace.is_empty() {
            format!(
                "User {user:?} cannot {} resource {:?} in API group {:?} at the cluster scope",
                self.verb,
                self.combined_resource(),
                self.group
            )
        } else {
            format!(
                "User {user:?} cannot {} resource {:?} in API group {:?} in the namespace {:?}",
                self.verb,
                self.combined_resource(),
                self.group,
                self.namespace
            )
        };
        let qualified = if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        };
        let message = if self.name.is_empty() {
            format!("{qualified} is forbidden: {reason}")
        } else {
            format!("{qualified} {:?} is forbidden: {reason}", self.name)
        };
        let mut details = json!({"group": self.group, "kind": self.resource});
        if !self.name.is_empty() {
            details["name"] = json!(self.name);
        }
        ApiError::new(403, "Forbidden", message).with_details(details)
    }
}

/// The decoded `key=value` pairs of a query string.
pub fn form_pairs(query: &str) -> impl Iterator<Item = (String, String)> + '_ {
    form_urlencoded::parse(query.as_bytes()).map(|(k, v)| (k.into_owned(), v.into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(method: &str, path: &str, query: &str) -> Attributes {
        Attributes::from_request(method, path, query)
    }

    #[test]
    fn discovery_and_version_are_not_resource_requests() {
        for p in [
            "/version",
            "/api",
            "/api/v1",
            "/apis",
            "/apis/networking.k8s.io/v1",
            "/openapi/v3",
        ] {
            let a = attrs("GET", p, "");
            assert!(!a.resource_request, "{p}");
            assert_eq!(a.verb, "get");
        }
    }

    #[test]
    fn verbs_follow_method_name_and_watch() {
        let list = attrs("GET", "/apis/networking.k8s.io/v1/ingresses", "");
        assert_eq!(
            (
                list.verb.as_str(),
                list.group.as_str(),
                list.resource.as_str()
            ),
            ("list", "networking.k8s.io", "ingresses")
        );
        let watch = attrs(
            "GET",
            "/apis/networking.k8s.io/v1/namespaces/a/ingresses",
            "watch=true&resourceVersion=5",
        );
        assert_eq!(
            (watch.verb.as_str(), watch.namespace.as_str()),
            ("watch", "a")
        );
        let status = attrs(
            "PUT",
            "/apis/cert-manager.io/v1/namespaces/a/certificates/c/status",
            "",
        );
        assert_eq!(status.combined_resource(), "certificates/status");
        assert_eq!(
            (status.verb.as_str(), status.name.as_str()),
            ("update", "c")
        );
        let one = attrs(
            "GET",
            "/api/v1/namespaces/a/secrets",
            "fieldSelector=metadata.name%3Dtls",
        );
        assert_eq!((one.verb.as_str(), one.name.as_str()), ("list", "tls"));
        assert_eq!(
            attrs("DELETE", "/api/v1/namespaces/a/configmaps", "").verb,
            "deletecollection"
        );
        let ns = attrs("GET", "/api/v1/namespaces/a", "");
        assert_eq!(
            (
                ns.resource.as_str(),
                ns.name.as_str(),
                ns.namespace.as_str()
            ),
            ("namespaces", "a", "a")
        );
        let token = attrs(
            "POST",
            "/api/v1/namespaces/a/serviceaccounts/lookout/token",
            "",
        );
        assert_eq!(
            (token.verb.as_str(), token.combined_resource().as_str()),
            ("create", "serviceaccounts/token")
        );
    }

    #[test]
    fn refusals_are_worded_as_the_api_server_words_them() {
        let a = attrs(
            "GET",
            "/apis/cert-manager.io/v1/certificaterequests",
            "watch=1",
        );
        assert_eq!(
            a.forbidden("system:serviceaccount:lookout:lookout").message,
            "certificaterequests.cert-manager.io is forbidden: User \"system:serviceaccount:lookout:lookout\" cannot watch resource \"certificaterequests\" in API group \"cert-manager.io\" at the cluster scope"
        );
        let named = attrs(
            "DELETE",
            "/apis/cert-manager.io/v1/namespaces/shop/certificaterequests/web-1",
            "",
        );
        assert_eq!(
            named.forbidden("bob").message,
            "certificaterequests.cert-manager.io \"web-1\" is forbidden: User \"bob\" cannot delete resource \"certificaterequests\" in API group \"cert-manager.io\" in the namespace \"shop\""
        );
        assert_eq!(
            attrs("GET", "/version", "")
                .forbidden("system:anonymous")
                .message,
            "forbidden: User \"system:anonymous\" cannot get path \"/version\""
        );
    }
}
