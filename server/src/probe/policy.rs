//! Which addresses a probe may connect to. The probe must never become a way to make Lookout
//! connect where someone points it: an Ingress's status is written by whoever can write the
//! Ingress (or its controller), and a load balancer's hostname resolves wherever its DNS says.
//!
//! The defence, in order:
//! 1. Only addresses the watched clusters publish in load-balancer status (Ingress or Service
//!    `status.loadBalancer.ingress[].ip`) are candidates — never an address a user types.
//!    A published hostname is resolved, and each address it resolves to is a candidate of its
//!    own: it must pass 2 and 3 like any other.
//! 2. A denied network (`deny`) is never connected to; nor, unless a network in `allow` names
//!    it explicitly, is a special address: loopback, link-local (the cloud metadata service at
//!    169.254.169.254), unspecified, multicast or broadcast. Other addresses (private
//!    ranges included: load balancers live there) are candidates.
//! 3. When `allow` is set, the address must be in one of its networks.

use std::collections::HashSet;
use std::net::IpAddr;

use ipnet::IpNet;

/// The networks probes may reach.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Networks {
    /// When not empty, only these.
    pub allow: Vec<IpNet>,
    /// Never these.
    pub deny: Vec<IpNet>,
}

/// Why an address is not probed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No watched object publishes it.
    NotPublished,
    /// In a denied network.
    Denied(IpNet),
    /// Loopback, link-local and the like, which no network in `allow` names.
    Special(&'static str),
    /// Outside every allowed network.
    NotAllowed,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::NotPublished => {
                write!(f, "no watched Ingress or Service publishes this address")
            }
            Refusal::Denied(net) => write!(f, "in the denied network {net}"),
            Refusal::Special(what) => write!(
                f,
                "a {what} address, probed only when a network in probe.allow names it"
            ),
            Refusal::NotAllowed => write!(f, "outside the networks in probe.allow"),
        }
    }
}

/// What kind of special address `ip` is, if it is one.
fn special(ip: IpAddr) -> Option<&'static str> {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    match ip {
        IpAddr::V4(v4) if v4.is_loopback() => Some("loopback"),
        IpAddr::V4(v4) if v4.is_link_local() => Some("link-local"),
        IpAddr::V4(v4) if v4.is_unspecified() => Some("unspecified"),
        IpAddr::V4(v4) if v4.is_multicast() => Some("multicast"),
        IpAddr::V4(v4) if v4.is_broadcast() => Some("broadcast"),
        IpAddr::V6(v6) if v6.is_loopback() => Some("loopback"),
        IpAddr::V6(v6) if v6.is_unspecified() => Some("unspecified"),
        IpAddr::V6(v6) if v6.is_multicast() => Some("multicast"),
        IpAddr::V6(v6) if (v6.segments()[0] & 0xffc0) == 0xfe80 => Some("link-local"),
        _ => None,
    }
}

impl Networks {
    /// Whether `ip` may be probed on its own merits (steps 2 and 3 above).
    pub fn permits(&self, ip: IpAddr) -> Result<(), Refusal> {
        if let Some(net) = self.deny.iter().find(|n| n.contains(&ip)) {
            return Err(Refusal::Denied(*net));
        }
        let allowed = self.allow.iter().find(|n| n.contains(&ip));
        if let Some(what) = special(ip) {
            // Named explicitly: an allowed network that is itself special (127.0.0.0/8, ::1),
            // not 0.0.0.0/0 or ::/0.
            let named = self.allow.iter().any(|n| {
                n.contains(&ip)
                    && n.prefix_len() > 0
                    && special(n.network()).is_some()
                    && special(n.broadcast()).is_some()
            });
            if !named {
                return Err(Refusal::Special(what));
            }
        }
        if !self.allow.is_empty() && allowed.is_none() {
            return Err(Refusal::NotAllowed);
        }
        Ok(())
    }

    /// Whether a published address may be probed (steps 1 to 3).
    pub fn permits_published(
        &self,
        published: &HashSet<IpAddr>,
        ip: IpAddr,
    ) -> Result<(), Refusal> {
        if !published.contains(&ip) {
            return Err(Refusal::NotPublished);
        }
        self.permits(ip)
    }

    /// The addresses a published hostname resolved to that may be probed, and those that
    /// may not, with why.
    pub fn resolved(&self, addresses: &[IpAddr]) -> (Vec<IpAddr>, Vec<(IpAddr, Refusal)>) {
        let mut ok = Vec::new();
        let mut refused = Vec::new();
        for ip in addresses {
            match self.permits(*ip) {
                Ok(()) => ok.push(*ip),
                Err(why) => refused.push((*ip, why)),
            }
        }
        (ok, refused)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn nets(list: &[&str]) -> Vec<IpNet> {
        list.iter().map(|n| n.parse().unwrap()).collect()
    }

    #[test]
    fn only_published_addresses_are_candidates() {
        let published: HashSet<IpAddr> = [ip("203.0.113.10"), ip("2001:db8::10")].into();
        let open = Networks::default();
        assert_eq!(
            open.permits_published(&published, ip("203.0.113.10")),
            Ok(())
        );
        assert_eq!(
            open.permits_published(&published, ip("2001:db8::10")),
            Ok(())
        );
        assert_eq!(
            open.permits_published(&published, ip("203.0.113.11")),
            Err(Refusal::NotPublished)
        );
    }

    #[test]
    fn a_hostile_status_cannot_point_the_probe_at_special_addresses() {
        // An Ingress status that publishes the metadata service, loopback or the like.
        let published: HashSet<IpAddr> = [
            "169.254.169.254",
            "127.0.0.1",
            "::1",
            "0.0.0.0",
            "fe80::1",
            "::ffff:127.0.0.1",
            "224.0.0.1",
            "255.255.255.255",
        ]
        .into_iter()
        .map(ip)
        .collect();
        let everywhere = Networks {
            allow: nets(&["0.0.0.0/0", "::/0"]),
            deny: Vec::new(),
        };
        for a in &published {
            for n in [&Networks::default(), &everywhere] {
                assert!(
                    matches!(
                        n.permits_published(&published, *a),
                        Err(Refusal::Special(_))
                    ),
                    "{a} with {n:?}"
                );
            }
        }
        // Loopback only when named (tests and the demo run kubesim's listeners there).
        let local = Networks {
            allow: nets(&["127.0.0.0/8", "::1/128"]),
            deny: Vec::new(),
        };
        assert_eq!(local.permits_published(&published, ip("127.0.0.1")), Ok(()));
        assert_eq!(local.permits_published(&published, ip("::1")), Ok(()));
        assert!(local
            .permits_published(&published, ip("169.254.169.254"))
            .is_err());
    }

    #[test]
    fn deny_wins_and_allow_limits() {
        let n = Networks {
            allow: nets(&["10.0.0.0/8"]),
            deny: nets(&["10.9.0.0/16"]),
        };
        assert_eq!(n.permits(ip("10.1.2.3")), Ok(()));
        assert_eq!(
            n.permits(ip("10.9.2.3")),
            Err(Refusal::Denied(nets(&["10.9.0.0/16"])[0]))
        );
        assert_eq!(n.permits(ip("192.0.2.1")), Err(Refusal::NotAllowed));
        // A published hostname resolving elsewhere: those addresses are refused one by one.
        let (ok, refused) = n.resolved(&[ip("10.1.1.1"), ip("192.0.2.9"), ip("127.0.0.1")]);
        assert_eq!(ok, [ip("10.1.1.1")]);
        assert_eq!(refused.len(), 2);
        assert!(refused[1].1.to_string().contains("loopback"));
    }
}
