//! aibuddy-store (being built)
