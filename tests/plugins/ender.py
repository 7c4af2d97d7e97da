"""A test plugin whose estimators end the process or raise what is not an Exception."""
import os
import cmbench

class Escape(BaseException):
    """Not an Exception: a careless plugin's own control-flow signal."""

def bye(X, *, rng):
    os._exit(0)

def ctrl_c(X, *, rng):
    raise KeyboardInterrupt

def escape(X, *, rng):
    raise Escape("out of here")

@cmbench.hookimpl
def register_estimators():
    return [cmbench.Estimator("bye", bye), cmbench.Estimator("ctrl-c", ctrl_c),
            cmbench.Estimator("escape", escape)]
