"""Built-in peers (placeholder until implemented)."""
