"""Built-in estimators (placeholder until implemented)."""
