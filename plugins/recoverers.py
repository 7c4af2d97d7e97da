"""Built-in recoverers (placeholder until implemented)."""
