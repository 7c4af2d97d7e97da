"""Built-in datasets (placeholder until implemented)."""
