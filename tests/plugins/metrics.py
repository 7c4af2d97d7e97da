"""A test plugin: two error metrics (one with a parameter) and one that always raises."""
import numpy as np, cmbench

def relative_l2(mu_hat, data):
    return float(np.linalg.norm(mu_hat - data.mean) / np.linalg.norm(data.mean))

def worst_coordinate(mu_hat, data, *, power=1.0):
    return float(np.max(np.abs(mu_hat - data.mean)) ** power)

def broken(mu_hat, data):
    raise RuntimeError("no luck")

@cmbench.hookimpl
def register_metrics():
    return [cmbench.Metric("relative-l2", relative_l2, description="l2 error over |mu|"),
            cmbench.Metric("worst-coordinate", worst_coordinate),
            cmbench.Metric("broken-metric", broken)]
