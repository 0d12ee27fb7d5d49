//! Who the client is to an authorization server, and the pure decisions made from it: which
//! grant, which client-credentials method, which signing algorithm. Secrets are held in
//! [`Secret`], whose `Debug` is redacted.

use rmcp::transport::auth::{ClientCredentialsConfig, JwtSigningAlgorithm};

/// A secret string (client secret, private key): never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[REDACTED]")
    }
}

/// Which OAuth grant a server uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Grant {
    /// A person authorizes in a browser (PKCE S256, loopback redirect).
    #[default]
    AuthorizationCode,
    /// A machine client authenticates itself (SEP-1046): no person involved.
    ClientCredentials,
}

/// How this client identifies itself. With nothing set, it registers dynamically (RFC 7591)
/// under `client_name`; a `client_metadata_url` is used when the server supports client ID
/// metadata documents; a pre-registered `client_id` (with its secret) takes priority.
#[derive(Debug, Clone, Default)]
pub struct ClientIdentity {
    pub client_name: String,
    pub client_id: Option<String>,
    pub client_secret: Option<Secret>,
    pub client_metadata_url: Option<String>,
    /// PEM private key for `private_key_jwt` (client credentials).
    pub private_key_pem: Option<Secret>,
    /// JWS algorithm for `private_key_jwt` (default `ES256`).
    pub signing_algorithm: Option<String>,
    pub grant: Grant,
    /// Scopes to ask for; empty = chosen from the challenge or `scopes_supported`.
    pub scopes: Vec<String>,
}

/// Why client credentials cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    #[error("client credentials need a client_id")]
    MissingClientId,
    #[error("client credentials need a client secret or a private key")]
    MissingCredential,
    #[error("unsupported signing algorithm \"{0}\" (RS256, RS384, RS512, ES256, ES384)")]
    UnsupportedAlgorithm(String),
}

/// The JWS algorithm named (pure).
pub fn signing_algorithm(name: Option<&str>) -> Result<JwtSigningAlgorithm, IdentityError> {
    match name.unwrap_or("ES256").to_ascii_uppercase().as_str() {
        "RS256" => Ok(JwtSigningAlgorithm::RS256),
        "RS384" => Ok(JwtSigningAlgorithm::RS384),
        "RS512" => Ok(JwtSigningAlgorithm::RS512),
        "ES256" => Ok(JwtSigningAlgorithm::ES256),
        "ES384" => Ok(JwtSigningAlgorithm::ES384),
        _ => Err(IdentityError::UnsupportedAlgorithm(
            name.unwrap_or_default().chars().take(16).collect(),
        )),
    }
}

/// The client-credentials configuration (pure): a private key means `private_key_jwt`,
/// otherwise the secret is sent as `client_secret_basic` or `_post` (whichever the server lists;
/// rmcp reads that from the metadata). `resource` is the server's URL (RFC 8707).
pub fn client_credentials(
    identity: &ClientIdentity,
    resource: &str,
) -> Result<ClientCredentialsConfig, IdentityError> {
    let client_id = identity
        .client_id
        .clone()
        .ok_or(IdentityError::MissingClientId)?;
    if let Some(key) = &identity.private_key_pem {
        return Ok(ClientCredentialsConfig::PrivateKeyJwt {
            client_id,
            signing_key: key.expose().as_bytes().to_vec(),
            signing_algorithm: signing_algorithm(identity.signing_algorithm.as_deref())?,
            token_endpoint_audience: None,
            scopes: identity.scopes.clone(),
            resource: Some(resource.to_owned()),
        });
    }
    let secret = identity
        .client_secret
        .as_ref()
        .ok_or(IdentityError::MissingCredential)?;
    Ok(ClientCredentialsConfig::ClientSecret {
        client_id,
        client_secret: secret.expose().to_owned(),
        scopes: identity.scopes.clone(),
        resource: Some(resource.to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine() -> ClientIdentity {
        ClientIdentity {
            client_id: Some("c".into()),
            grant: Grant::ClientCredentials,
            ..ClientIdentity::default()
        }
    }

    #[test]
    fn a_private_key_means_jwt_and_a_secret_means_secret() {
        let mut id = machine();
        id.private_key_pem = Some(Secret::new("-----BEGIN PRIVATE KEY-----"));
        let jwt = client_credentials(&id, "http://127.0.0.1/mcp").unwrap();
        assert!(matches!(jwt, ClientCredentialsConfig::PrivateKeyJwt { .. }));
        let mut id = machine();
        id.client_secret = Some(Secret::new("s3cret"));
        let basic = client_credentials(&id, "http://127.0.0.1/mcp").unwrap();
        assert!(matches!(
            basic,
            ClientCredentialsConfig::ClientSecret { .. }
        ));
        assert!(!format!("{basic:?}{id:?}").contains("s3cret"));
    }

    #[test]
    fn missing_pieces_are_named() {
        assert_eq!(
            client_credentials(&ClientIdentity::default(), "r").unwrap_err(),
            IdentityError::MissingClientId
        );
        assert_eq!(
            client_credentials(&machine(), "r").unwrap_err(),
            IdentityError::MissingCredential
        );
        assert!(matches!(
            signing_algorithm(Some("HS256")),
            Err(IdentityError::UnsupportedAlgorithm(_))
        ));
        assert!(signing_algorithm(None).is_ok());
    }
}
