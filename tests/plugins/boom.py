"""A test plugin: ``boom`` raises at its own line (a shipped plugin's traceback points there)."""
import cmbench

def boom(X, *, rng):
    raise ValueError("shipped plugins fail at their own line")

@cmbench.hookimpl
def register_estimators():
    return [cmbench.Estimator("boom", boom)]
