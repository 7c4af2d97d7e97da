"""The package as it would be published: `python -m build` gives an sdist and a wheel that
`twine check` passes, whose metadata carries the licence, authors and project URLs, whose
README renders on a package index (images by absolute URL), and whose wheel holds what an
installed cmbench needs (type hints marker, suites, the built-in plugins' data)."""
from __future__ import annotations

import email.parser
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """sdist and wheel built from the source tree, as a maintainer would before uploading.

    ``--no-isolation``: the backend (setuptools, in the test extra) comes from this
    environment rather than a download, so the test runs offline.
    """
    out = tmp_path_factory.mktemp("dist")
    # A copy without what earlier builds and installs leave behind: setuptools reads an existing
    # *.egg-info/SOURCES.txt and build/ back, which can hide a package missing from `packages`.
    source = tmp_path_factory.mktemp("source") / "cmbench"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "venv", "build", "dist", "site", "*.egg-info", "__pycache__", ".hypothesis",
        ".pytest_cache", "reports"))
    run = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)],
                         capture_output=True, text=True)
    assert run.returncode == 0, f"python -m build failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    return out


def _wheel(dist: Path) -> zipfile.ZipFile:
    (wheel,) = dist.glob("cmbench-*.whl")
    return zipfile.ZipFile(wheel)


def _metadata(dist: Path):
    with _wheel(dist) as whl:
        (name,) = [n for n in whl.namelist() if n.endswith(".dist-info/METADATA")]
        return email.parser.Parser().parsestr(whl.read(name).decode())


def test_twine_check_passes_on_the_sdist_and_the_wheel(dist):
    files = sorted(str(p) for p in dist.iterdir())
    assert len(files) == 2, files
    run = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *files],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_metadata_has_an_spdx_licence_with_its_file_authors_and_urls(dist):
    meta = _metadata(dist)
    assert meta["License-Expression"] == "MIT"
    assert meta.get_all("License-File") == ["LICENSE"]
    assert meta["Author"] or meta["Author-email"]
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL"))
    assert {"Homepage", "Documentation", "Source", "Issues"} <= urls.keys(), urls
    assert all(u.startswith("https://") for u in urls.values()), urls
    assert "Typing :: Typed" in meta.get_all("Classifier")
    assert not [c for c in meta.get_all("Classifier") if c.startswith("License ::")], \
        "a License classifier beside License-Expression is rejected by PEP 639"
    with _wheel(dist) as whl:
        licence = next(n for n in whl.namelist() if n.endswith(".dist-info/licenses/LICENSE"))
        assert "MIT License" in whl.read(licence).decode()


def test_the_wheel_holds_the_typing_marker_the_suites_and_the_builtin_data(dist):
    with _wheel(dist) as whl:
        names = set(whl.namelist())
    assert "cmbench/py.typed" in names
    suites = {p.name for p in (ROOT / "suites").glob("*.toml")}
    assert suites and {f"cmbench/suites/{s}" for s in suites} <= names
    data = {p.name for p in (ROOT / "plugins" / "data").iterdir() if p.suffix in (".npz", ".md")}
    assert data and {f"cmbench/builtins/data/{d}" for d in data} <= names
    modules = {f"cmbench/{p.relative_to(ROOT / 'cmbench').as_posix()}" for p in (ROOT / "cmbench").rglob("*.py")}
    missing = sorted(modules - names)
    assert not missing, f"modules of the source missing from the wheel (pyproject's `packages`?): {missing}"
    plugins = {p.name for p in (ROOT / "plugins").glob("*.py")}
    assert {f"cmbench/builtins/{p}" for p in plugins} <= names
    assert not [n for n in names if n.startswith(("plugins/", "suites/", "tests/"))], \
        "no top-level package but cmbench"


def test_the_sdist_holds_the_licence_changelog_and_citation(dist):
    (sdist,) = dist.glob("cmbench-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert {"LICENSE", "README.md", "pyproject.toml", "cmbench/py.typed"} <= names


def test_the_readme_renders_on_an_index_every_image_by_an_absolute_url_to_a_tracked_file(dist):
    """A package index renders the README alone: a relative image link is broken there."""
    description = _metadata(dist).get_payload()
    images = re.findall(r"!\[[^\]]*\]\(([^)\s]+)", description) + re.findall(r"<img[^>]+src=\"([^\"]+)", description)
    assert images, "the README shows the paper's figure"
    source = PYPROJECT["project"]["urls"]["Source"].rstrip("/")
    raw = source.replace("https://github.com/", "https://raw.githubusercontent.com/") + "/main/"
    for url in images:
        assert url.startswith(raw), f"README image {url!r} is not an absolute link into {raw}"
        assert (ROOT / url.removeprefix(raw)).is_file(), f"README image {url!r}: no such file in the repository"
    links = re.findall(r"(?<!!)\[[^\]]*\]\(([^)\s]+)", description)
    relative = [u for u in links if not re.match(r"(https?:|mailto:|#)", u)]
    assert not relative, f"README links that break on a package index (relative): {relative}"


def test_the_citation_file_cites_cmbench_and_the_paper_it_reproduces():
    text = (ROOT / "CITATION.cff").read_text()
    assert re.search(r"^cff-version: 1\.2\.0$", text, re.M)
    assert re.search(rf"^version: \"?{re.escape(_version())}\"?$", text, re.M), \
        "CITATION.cff's version is cmbench's"
    assert "On Robust Mean Estimation under Coordinate-level Corruption" in text
    for author in ("Liu", "Park", "Rekatsinas", "Tzamos"):
        assert f"family-names: {author}" in text


def test_the_changelog_has_an_entry_for_the_current_version():
    assert re.search(rf"^## \[?{re.escape(_version())}\]?", (ROOT / "CHANGELOG.md").read_text(), re.M)


def _version() -> str:
    namespace: dict = {}
    exec((ROOT / "cmbench" / "version.py").read_text(), namespace)
    return namespace["__version__"]
