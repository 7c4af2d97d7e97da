"""Built-in adversaries (placeholder until implemented)."""
