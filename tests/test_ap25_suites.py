"""The built-in suites ap25 and ap25-quick (Anderson and Phillips 2025): the full grid's dry run,
and the quick suite run end to end, its claims printed and its report's curves against n, d and
eta drawn with the inliers' reference curve.
"""
import re
import subprocess
import sys
from pathlib import Path


SUITES = Path(__file__).parent.parent / "suites"
def _suite(name: str, tmp_path: Path) -> Path:
    return SUITES / f"{name}.toml"


def _cmbench(*args, cwd):
    return subprocess.run([str(Path(sys.executable).parent / "cmbench"), *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=1800)


def test_the_full_suite_dry_run_shows_every_family_panel_and_its_size(tmp_path):
    out = _cmbench("suite", _suite("ap25", tmp_path), "--dry-run", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    families = ("identity", "spherical", "diagonal", "student-t", "laplace", "poisson", "mixture")
    for family in families:
        for panel in ("n", "n-small", "d", "eta"):
            assert re.search(rf"^{family}-{panel}\s+\d+", out.stdout, re.M), (family, panel)
    total = int(re.search(r"^(\d+) cells, 0 cached", out.stdout, re.M).group(1))
    estimators = 15
    # identity and spherical: 6 schemes; diagonal 4; the non-Gaussian families 1 each
    per_estimator = sum(k * inst * (11 + 11 + 11 + 9) for k, inst in ((6, 5), (6, 5), (4, 5), (1, 3), (1, 3),
                                                                     (1, 3), (1, 3)))
    assert total == per_estimator * estimators


def test_the_quick_suite_runs_prints_its_claims_and_draws_its_curves(tmp_path):
    out = _cmbench("suite", _suite("ap25-quick", tmp_path), "--out", tmp_path / "out", "--workers", "2",
                   cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "The paper's claims:" in out.stdout
    for claim in ("spectral-near-inliers", "sample-mean-far", "subtractive-no-gain"):
        line = re.search(rf"identity-eta \({claim}\)\s+(holds|fails|no data|holds up to .*?)\s", out.stdout)
        assert line and line.group(1) == "holds", (claim, out.stdout)
    html = (tmp_path / "out" / "ap25-quick.html").read_text()
    for page in ("identity-n: error versus N", "identity-d: error versus d", "identity-eta: error versus budget"):
        assert page in html, page
    assert "untouched rows' mean (reference)" in html  # the inliers' reference curve
    cubes = {p.stem for p in (tmp_path / "out" / "ap25-quick").glob("*.nc")}
    assert cubes == {"identity-n", "identity-d", "identity-eta"}
