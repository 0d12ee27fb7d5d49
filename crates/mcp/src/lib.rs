//! aibuddy-mcp (being built)
