"""The built-in suites ap25 and ap25-quick (Anderson and Phillips 2025): the full grid's dry run,
and the quick suite run end to end, its claims printed and its report's curves against n, d and
eta drawn with the inliers' reference curve (in the default run on the quick suite's file shrunk
to a few rows and dimensions; at its own size with ``pytest -m slow``).
"""
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import cli_inproc_result

SUITES = Path(__file__).parent.parent / "suites"
CLAIMS = ("spectral-near-inliers", "sample-mean-far", "subtractive-no-gain")
#: the methods the claims compare, by their estimators' labels
CLAIMED = {"Sample Mean": "sample-mean", "QUE": "que", "Eigenvalue Pruning": "ev-pruning", "PGD": "pgd"}
#: the quick suite's sizes and their small stand-ins
SMALL = {"instances = 2": "instances = 1", "d = 50, N = [50, 100, 200]": "d = 8, N = [40, 60]",
         "N = 100, d = [25, 50, 100]": "N = 40, d = [4, 8]", "N = 500, d = 500": "N = 60, d = 8"}


def _cmbench(*args, cwd):
    return subprocess.run([str(Path(sys.executable).parent / "cmbench"), *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=1800)


def test_the_full_suite_dry_run_shows_every_family_panel_and_its_size(tmp_path):
    done = cli_inproc_result("suite", SUITES / "ap25.toml", "--dry-run", "--out", tmp_path)
    assert done.returncode == 0, done.stderr
    stdout = done.stdout
    families = ("identity", "spherical", "diagonal", "student-t", "laplace", "poisson", "mixture")
    for family in families:
        for panel in ("n", "n-small", "d", "eta"):
            assert re.search(rf"^{family}-{panel}\s+\d+", stdout, re.M), (family, panel)
    total = int(re.search(r"^(\d+) cells, 0 cached", stdout, re.M).group(1))
    estimators = 15
    # identity and spherical: 6 schemes; diagonal 4; the non-Gaussian families 1 each
    per_estimator = sum(k * inst * (11 + 11 + 11 + 9) for k, inst in ((6, 5), (6, 5), (4, 5), (1, 3), (1, 3),
                                                                     (1, 3), (1, 3)))
    assert total == per_estimator * estimators
    assert not list(tmp_path.iterdir()), "a dry run writes nothing"


def _curves_and_claims(stdout: str, out: Path, verdicts: tuple[str, ...]) -> None:
    """The claims printed with a verdict among ``verdicts``, the curve pages and the reference curve
    in the HTML, one cube per experiment."""
    assert "The paper's claims:" in stdout
    for claim in CLAIMS:
        line = re.search(rf"identity-eta \({claim}\)\s+(holds|fails|no data|holds up to .*?)\s", stdout)
        assert line and line.group(1) in verdicts, (claim, stdout)
    html = (out / "ap25-quick.html").read_text()
    for page in ("identity-n: error versus N", "identity-d: error versus d", "identity-eta: error versus budget"):
        assert page in html, page
    assert "untouched rows' mean (reference)" in html  # the inliers' reference curve
    cubes = {p.stem for p in (out / "ap25-quick").glob("*.nc")}
    assert cubes == {"identity-n", "identity-d", "identity-eta"}


def _small(text: str) -> str:
    """The quick suite's text at ``SMALL``'s sizes, with the estimators its claims compare only
    (every scheme, budget, page and claim kept)."""
    for size, small in SMALL.items():
        assert size in text, size
        text = text.replace(size, small)

    def claimed(line: str) -> bool:
        entry = re.match(r'\s+\{ name = "([^"]+)"(?:, label = "([^"]+)")?', line)
        return not entry or (entry.group(2) or entry.group(1)) in CLAIMED.values()

    text = "\n".join(line for line in text.splitlines() if claimed(line)) + "\n"
    methods = "methods = { " + ", ".join(f'"{m}" = ["none", "{e}"]' for m, e in CLAIMED.items()) + " }"
    text, n = re.subn(r"^methods = \{.*\}$", methods, text, flags=re.M)
    assert n == 3, "one methods table per experiment"
    return text


def test_the_quick_suite_at_small_size_runs_prints_its_claims_and_draws_its_curves(tmp_path):
    suite = tmp_path / "ap25-quick.toml"
    suite.write_text(_small((SUITES / "ap25-quick.toml").read_text()))
    out = tmp_path / "out"
    done = cli_inproc_result("suite", suite, "--out", out, "--workers", "1", "--no-report")
    assert done.returncode == 0, done.stderr
    stdout = done.stdout
    cubes = sorted((out / "ap25-quick").glob("*.nc"))
    drawn = cli_inproc_result("report", *cubes, "-o", out / "ap25-quick.html")  # the HTML: the PDF's model
    assert drawn.returncode == 0, drawn.stderr
    # at a few rows, whether the claims hold is not the question: that each is judged on values
    _curves_and_claims(stdout, out, verdicts=("holds", "fails", "holds up to"))
    for claim in CLAIMS:
        assert not re.search(rf"identity-eta \({claim}\)\s+no data", stdout), claim


@pytest.mark.slow
def test_the_quick_suite_runs_prints_its_claims_and_draws_its_curves(tmp_path):
    out = _cmbench("suite", SUITES / "ap25-quick.toml", "--out", tmp_path / "out", "--workers", "2",
                   cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    _curves_and_claims(out.stdout, tmp_path / "out", verdicts=("holds",))
