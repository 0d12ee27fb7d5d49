//! The model provider of a run started from the window: the settings' `providers` entry the UI
//! names (or `providers.default`), with an optional model override, the base URL overrides and keys
//! from the environment or the keyring, exactly as `aibuddy run` resolves them. The UI names an
//! entry of the person's settings; it never supplies a URL or a key.

use aibuddy::agent::stored_route::route_for;
use aibuddy::app::App;
use aibuddy_provider::{BaseUrlOverrides, HttpProvider, KeyStore, ProviderError};
use aibuddy_store::RunRecord;

use crate::error::{CommandError, ErrorCode};

/// A provider error as the UI receives it (stage named; the message never carries a key).
pub fn provider_error(e: ProviderError) -> CommandError {
    CommandError {
        code: ErrorCode::Run,
        stage: Some(e.stage()),
        message: e.to_string(),
    }
}

/// The route a stored run continues on (its provider entry and model), without building a client
/// or reading a key; None when the settings no longer name a usable entry.
pub fn stored_route(app: &App, stored: &RunRecord) -> Option<aibuddy_provider::Route> {
    route_for(
        &app.settings.settings.providers,
        Some(stored),
        None,
        None,
        &BaseUrlOverrides::from_env(),
    )
    .ok()
}

/// The provider of a run: entry `name` and `model` when the UI names them (a blank model is no
/// override), else a continued run's stored entry and model, else `providers.default`. Same rule
/// as `aibuddy run` (`aibuddy::agent::stored_route`).
pub fn resolve(
    app: &App,
    stored: Option<&RunRecord>,
    name: Option<&str>,
    model: Option<&str>,
) -> Result<HttpProvider, CommandError> {
    let model = model.map(str::trim).filter(|m| !m.is_empty());
    let route = route_for(
        &app.settings.settings.providers,
        stored,
        name,
        model,
        &BaseUrlOverrides::from_env(),
    )
    .map_err(provider_error)?;
    let key = KeyStore::from_env().key_for_route(&route).map(|(k, _)| k);
    HttpProvider::new(route, key).map_err(provider_error)
}
