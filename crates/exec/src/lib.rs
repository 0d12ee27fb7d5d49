//! aibuddy-exec (being built)
