//! aibuddy-sandbox (being built)
