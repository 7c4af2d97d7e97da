"""The report step's serial parts: no plotting library where only records are built, the
scipy.special numbers equal to scipy.stats's."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from cmbench.report.content import significance

from helpers import make_cube


def test_building_the_records_loads_no_plotting_library_and_the_cd_test_no_scipy_stats(tmp_path):
    """In a fresh interpreter (what a module imports is the question): the critical-difference test
    imports no scipy.stats (about 0.8 s of CPU in every report that a new method redraws), building
    the pages' records no plotting library."""
    path = tmp_path / "synthetic.nc"
    make_cube(adversaries=("min-rho", "random-rho")).to_netcdf(path, engine="netcdf4")
    code = textwrap.dedent(f"""
        import sys
        import numpy as np
        from cmbench.report.content.significance import friedman
        r = friedman(np.random.default_rng(0).random((6, 5)), list("abcde"))
        assert r.cd > 0
        print("scipy.stats" in sys.modules)
        from cmbench.report.load import load_cubes
        from cmbench.report.render.pdf import build_pages
        from cmbench.report.content.summary import summary_lines
        from cmbench.cube import load
        pages = build_pages(load_cubes([{str(path)!r}]), title="t")
        summary_lines([load({str(path)!r})])
        assert len(pages) > 8
        print(sorted(m for m in ("matplotlib", "plotly") if m in sys.modules))
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["False", "[]"], out.stdout


def test_the_t_band_and_friedman_p_values_are_scipys():
    from scipy import stats

    from cmbench.report.load import load_cube, summarize

    cube = load_cube(make_cube(instances=4))
    values = cube.ok_values("l2")
    summ = summarize(values)
    sd = values.std("instance", ddof=1).values
    assert np.allclose(summ.half.values, stats.t.ppf(0.975, 3) * sd / 2, rtol=1e-12)
    scores = np.random.default_rng(0).random((12, 4))
    res = significance.friedman(scores, list("abcd"))
    ref = stats.friedmanchisquare(*scores.T)
    assert res.chi2 == pytest.approx(ref.statistic, rel=1e-12)
    assert res.p_value == pytest.approx(ref.pvalue, rel=1e-12)
    assert res.f_p_value == pytest.approx(stats.f.sf(res.f_stat, 3, 33), rel=1e-12)



def test_a_process_that_draws_pages_imports_no_data_stack(tmp_path):
    """A drawing worker unpickles its pages' records and drawing functions (`render.drawing`), which
    imports their modules: every built-in kind's record types and drawings (`plots`, `layout`) import
    no xarray, pandas, pyarrow or scipy (about 1 CPU-s in each process that draws)."""
    import pickle

    from cmbench.report.kinds import page_kinds
    from cmbench.report.load import load_cube
    from cmbench.report.render.pdf import build_pages

    drawings = {rtype: draw for kind in page_kinds() for rtype, draw in kind.records.items()}
    pages = build_pages([load_cube(make_cube(adversaries=("min-rho", "random-rho")))], title="t")
    records = [(p.record, p.draw) for p in pages]
    assert {type(r) for r, _ in records} >= {t for t in drawings if t.__name__ in ("CurvePage", "RuntimePage",
                                                                                    "CdPage", "TextPage")}
    blob = tmp_path / "pages.pkl"
    blob.write_bytes(pickle.dumps((drawings, records)))
    code = textwrap.dedent(f"""
        import pickle, sys
        drawings, records = pickle.loads(open({str(blob)!r}, "rb").read())
        assert len(drawings) >= 7 and records
        print(sorted(m for m in ("xarray", "pandas", "pyarrow", "scipy") if m in sys.modules))
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
