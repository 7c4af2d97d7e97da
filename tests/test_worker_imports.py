"""What a sweep worker imports before its first unit: loading the suite and its built-in plugins
(as every worker rebuilds the suite) imports no scipy, pandas, xarray or plotting library; each
is imported by the code that computes with it, when it runs."""
from __future__ import annotations

import subprocess
import sys

HEAVY = ("scipy", "pandas", "xarray", "matplotlib", "dask")


def test_loading_a_suite_and_the_builtin_plugins_imports_no_heavy_library():
    code = ("import sys; from cmbench.suite import load_suite; load_suite('paper'); load_suite('dkk17'); "
            f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"


def test_the_constants_computed_on_first_use_are_scipys():
    from scipy.special import ndtri

    from cmbench.builtins import sample_estimators

    assert sample_estimators._middle_20() == 2.0 * float(ndtri(0.6)) == -2.0 * float(ndtri(0.4))
