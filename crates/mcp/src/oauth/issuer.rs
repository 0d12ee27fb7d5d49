//! Pure rule for authorization-server metadata whose `issuer` is not byte-identical to the issuer
//! the protected-resource metadata named (RFC 8414 §3.3 asks for identity; rmcp enforces it).
//!
//! Some servers publish, at a well-known URL derived from a path issuer such as
//! `https://auth.example.com/tenant1`, metadata whose `issuer` is the origin itself
//! (`https://auth.example.com`): the conformance scenarios `auth/metadata-var2` and `-var3` do.
//! [`relaxed_issuer`] accepts exactly that shape and nothing wider:
//!
//! - the document was fetched from one of the spec's well-known URLs built from the named issuer
//!   ([`well_known_urls`]), so it came from the named issuer's own origin;
//! - the claimed issuer has the same origin (scheme, host, port) as the named one, no query or
//!   fragment, and its path is the named path or an ancestor of it, segment by segment
//!   (`/` or `/tenant1` for `/tenant1`; never `/tenant2`, `/tenant1x` or `/tenant1/sub`);
//! - every endpoint the document gives (authorization, token, registration) is on that origin, so
//!   accepting the looser claim never sends the person, a code or a secret anywhere else.
//!
//! Why this opens no mix-up hole: the defence of §3.3 is that a document naming issuer X was
//! served by X. Here the serving origin, the claimed issuer's origin and every endpoint's origin
//! are one and the same, which the protected resource itself named; a party that can serve those
//! well-known paths already controls the authorization server the resource sent us to. An issuer
//! on another origin, or another tenant's path, is still refused.

use url::Url;

/// Why metadata with a different `issuer` was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IssuerRefusal {
    #[error("issuer is not an absolute URL")]
    NotAUrl,
    #[error("issuer carries a query or a fragment")]
    QueryOrFragment,
    #[error("issuer is on another origin than the one the protected resource named")]
    OtherOrigin,
    #[error("issuer path is neither the named issuer's path nor an ancestor of it")]
    NotAnAncestor,
    #[error("metadata was not served at a well-known URL of the named issuer")]
    NotWellKnown,
    #[error("the {0} endpoint is on another origin")]
    EndpointOffOrigin(&'static str),
    #[error("metadata names no issuer")]
    Missing,
}

/// The endpoints a metadata document gives, by name.
#[derive(Debug, Clone, Default)]
pub struct Endpoints<'a> {
    pub authorization: &'a str,
    pub token: &'a str,
    pub registration: Option<&'a str>,
}

/// The spec's authorization-server metadata URLs for `issuer`, in its priority order
/// (MCP 2025-11-25 "Authorization Server Metadata Discovery"): for an issuer with a path, OAuth
/// path insertion, OpenID path insertion, OpenID path appending; for a root issuer, OAuth then
/// OpenID. Pure.
pub fn well_known_urls(issuer: &Url) -> Vec<Url> {
    let trimmed = issuer.path().trim_matches('/');
    let paths = if trimmed.is_empty() {
        vec![
            "/.well-known/oauth-authorization-server".to_owned(),
            "/.well-known/openid-configuration".to_owned(),
        ]
    } else {
        vec![
            format!("/.well-known/oauth-authorization-server/{trimmed}"),
            format!("/.well-known/openid-configuration/{trimmed}"),
            format!("/{trimmed}/.well-known/openid-configuration"),
        ]
    };
    paths
        .into_iter()
        .map(|path| {
            let mut url = issuer.clone();
            url.set_query(None);
            url.set_fragment(None);
            url.set_path(&path);
            url
        })
        .collect()
}

fn segments(url: &Url) -> Vec<&str> {
    url.path().split('/').filter(|s| !s.is_empty()).collect()
}

/// Whether metadata fetched from `served_at`, claiming `claimed` as its issuer, may be used for
/// the issuer `named` by the protected-resource metadata (see the module text). Pure.
pub fn relaxed_issuer(
    named: &str,
    served_at: &Url,
    claimed: Option<&str>,
    endpoints: &Endpoints<'_>,
) -> Result<(), IssuerRefusal> {
    let named = Url::parse(named).map_err(|_| IssuerRefusal::NotAUrl)?;
    let claimed =
        Url::parse(claimed.ok_or(IssuerRefusal::Missing)?).map_err(|_| IssuerRefusal::NotAUrl)?;
    if claimed.query().is_some() || claimed.fragment().is_some() {
        return Err(IssuerRefusal::QueryOrFragment);
    }
    if !well_known_urls(&named).contains(served_at) {
        return Err(IssuerRefusal::NotWellKnown);
    }
    let origin = named.origin();
    if !origin.is_tuple() || claimed.origin() != origin {
        return Err(IssuerRefusal::OtherOrigin);
    }
    let (named_path, claimed_path) = (segments(&named), segments(&claimed));
    if !named_path.starts_with(&claimed_path) {
        return Err(IssuerRefusal::NotAnAncestor);
    }
    let on_origin = |endpoint: &str| Url::parse(endpoint).is_ok_and(|u| u.origin() == origin);
    if !on_origin(endpoints.authorization) {
        return Err(IssuerRefusal::EndpointOffOrigin("authorization"));
    }
    if !on_origin(endpoints.token) {
        return Err(IssuerRefusal::EndpointOffOrigin("token"));
    }
    if let Some(registration) = endpoints.registration
        && !on_origin(registration)
    {
        return Err(IssuerRefusal::EndpointOffOrigin("registration"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMED: &str = "http://localhost:4100/tenant1";

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn on(origin: &str) -> (String, String, String) {
        (
            format!("{origin}/tenant1/authorize"),
            format!("{origin}/tenant1/token"),
            format!("{origin}/tenant1/register"),
        )
    }

    fn check(served_at: &str, claimed: &str, endpoints_origin: &str) -> Result<(), IssuerRefusal> {
        let (a, t, r) = on(endpoints_origin);
        let endpoints = Endpoints {
            authorization: &a,
            token: &t,
            registration: Some(&r),
        };
        relaxed_issuer(NAMED, &url(served_at), Some(claimed), &endpoints)
    }

    const ORIGIN: &str = "http://localhost:4100";
    const INSERTED: &str = "http://localhost:4100/.well-known/oauth-authorization-server/tenant1";
    const APPENDED: &str = "http://localhost:4100/tenant1/.well-known/openid-configuration";

    #[test]
    fn the_well_known_urls_are_the_specs_in_its_order() {
        let urls: Vec<String> = well_known_urls(&url(NAMED))
            .iter()
            .map(Url::to_string)
            .collect();
        assert_eq!(
            urls,
            [
                INSERTED,
                "http://localhost:4100/.well-known/openid-configuration/tenant1",
                APPENDED,
            ]
        );
        let root: Vec<String> = well_known_urls(&url("https://as.example/"))
            .iter()
            .map(Url::to_string)
            .collect();
        assert_eq!(
            root,
            [
                "https://as.example/.well-known/oauth-authorization-server",
                "https://as.example/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn the_origin_or_an_ancestor_on_the_same_origin_is_accepted() {
        // auth/metadata-var2 (path insertion) and -var3 (OpenID path appending).
        assert_eq!(check(INSERTED, ORIGIN, ORIGIN), Ok(()));
        assert_eq!(check(APPENDED, "http://localhost:4100/", ORIGIN), Ok(()));
        // The named issuer itself, with a trailing slash.
        assert_eq!(
            check(INSERTED, "http://localhost:4100/tenant1/", ORIGIN),
            Ok(())
        );
        let deep = "http://localhost:4100/org/tenant1";
        let served =
            url("http://localhost:4100/.well-known/oauth-authorization-server/org/tenant1");
        let (a, t, _) = on(ORIGIN);
        let endpoints = Endpoints {
            authorization: &a,
            token: &t,
            registration: None,
        };
        assert_eq!(
            relaxed_issuer(deep, &served, Some("http://localhost:4100/org"), &endpoints),
            Ok(())
        );
    }

    #[test]
    fn another_origin_is_refused() {
        for claimed in [
            "http://evil.example:4100",
            "https://localhost:4100",
            "http://localhost:4101",
            "http://localhost.evil.example:4100",
        ] {
            assert_eq!(
                check(INSERTED, claimed, ORIGIN),
                Err(IssuerRefusal::OtherOrigin),
                "{claimed}"
            );
        }
    }

    #[test]
    fn a_sibling_or_deeper_path_is_refused() {
        for claimed in [
            "http://localhost:4100/tenant2",
            "http://localhost:4100/tenant1x",
            "http://localhost:4100/tenant1/sub",
            "http://localhost:4100/other/tenant1",
        ] {
            assert_eq!(
                check(INSERTED, claimed, ORIGIN),
                Err(IssuerRefusal::NotAnAncestor),
                "{claimed}"
            );
        }
    }

    #[test]
    fn endpoints_elsewhere_are_refused() {
        assert_eq!(
            check(INSERTED, ORIGIN, "http://evil.example"),
            Err(IssuerRefusal::EndpointOffOrigin("authorization"))
        );
        let (a, _, r) = on(ORIGIN);
        let endpoints = Endpoints {
            authorization: &a,
            token: "http://evil.example/token",
            registration: Some(&r),
        };
        assert_eq!(
            relaxed_issuer(NAMED, &url(INSERTED), Some(ORIGIN), &endpoints),
            Err(IssuerRefusal::EndpointOffOrigin("token"))
        );
        let endpoints = Endpoints {
            authorization: &a,
            token: &a,
            registration: Some("not a url"),
        };
        assert_eq!(
            relaxed_issuer(NAMED, &url(INSERTED), Some(ORIGIN), &endpoints),
            Err(IssuerRefusal::EndpointOffOrigin("registration"))
        );
    }

    #[test]
    fn documents_not_from_the_named_issuers_well_known_urls_are_refused() {
        for served in [
            "http://localhost:4100/.well-known/oauth-authorization-server",
            "http://localhost:4100/.well-known/oauth-authorization-server/tenant2",
            "http://evil.example/.well-known/oauth-authorization-server/tenant1",
            "http://localhost:4100/custom/metadata.json",
        ] {
            assert_eq!(
                check(served, ORIGIN, ORIGIN),
                Err(IssuerRefusal::NotWellKnown),
                "{served}"
            );
        }
    }

    #[test]
    fn malformed_or_missing_issuers_are_refused() {
        assert_eq!(
            check(INSERTED, "localhost:4100", ORIGIN),
            Err(IssuerRefusal::OtherOrigin)
        );
        assert_eq!(
            check(INSERTED, "/tenant1", ORIGIN),
            Err(IssuerRefusal::NotAUrl)
        );
        assert_eq!(
            check(INSERTED, "http://localhost:4100/?x=1", ORIGIN),
            Err(IssuerRefusal::QueryOrFragment)
        );
        assert_eq!(
            check(INSERTED, "http://localhost:4100/#f", ORIGIN),
            Err(IssuerRefusal::QueryOrFragment)
        );
        let (a, t, _) = on(ORIGIN);
        let endpoints = Endpoints {
            authorization: &a,
            token: &t,
            registration: None,
        };
        assert_eq!(
            relaxed_issuer(NAMED, &url(INSERTED), None, &endpoints),
            Err(IssuerRefusal::Missing)
        );
        assert_eq!(
            relaxed_issuer("not a url", &url(INSERTED), Some(ORIGIN), &endpoints),
            Err(IssuerRefusal::NotAUrl)
        );
    }
}
