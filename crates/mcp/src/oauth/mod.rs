//! OAuth 2.1 for remote MCP servers, as the MCP authorization spec defines it, on rmcp's `auth`
//! feature (which does discovery, registration, PKCE, resource indicators, token endpoint auth
//! methods, client credentials and refresh). This module adds what rmcp leaves to the client:
//!
//! - [`flow`]: the [`Authorizer`] driving a login or a client-credentials grant, and step-up;
//! - [`login`]: `aibuddy mcp login|logout` (probe, authorize, keep the token);
//! - [`loopback`]: the RFC 8252 redirect listener shared by the CLI and the desktop;
//! - [`challenge`] / [`step_up`] / [`identity`]: the pure decisions (what a failure asks for,
//!   whether to escalate scope, which grant and client authentication);
//! - [`issuer`]: the narrow rule for metadata naming an ancestor issuer on the same origin;
//! - [`unattended`]: scope step-up without a person (a refresh asking for the wider scope);
//! - [`vault`]: where tokens are kept ([`TokenVault`]: the OS keyring in the app).

pub mod challenge;
mod discovery;
pub mod error;
pub mod flow;
pub mod identity;
pub mod issuer;
pub mod login;
pub mod loopback;
pub mod step_up;
pub mod unattended;
pub mod vault;

pub use challenge::{Challenge, find_challenge};
pub use error::OAuthError;
pub use flow::{AuthorizedClient, Authorizer, OpenUrl};
pub use identity::{ClientIdentity, Grant, Secret};
pub use login::{LoginOutcome, login, logout, probe};
pub use loopback::Loopback;
pub use vault::{MemoryVault, TokenVault, VaultCredentialStore};
