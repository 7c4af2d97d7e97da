"""The documentation site builds from the source with no warning, documents what the code
has (every top-level name, command, suite-file key and cube variable), and its tutorial
notebook runs in a fresh kernel.

The lists compared against are the code's own (``cmbench.__all__``, the click group, the
suite loader's key tables, ``cmbench.cube.VARIABLES``): a name added to the code without a
word in the docs fails here.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest

import cmbench
from cmbench import verdicts as claims_module
from cmbench import cube, suite
from cmbench.cli import main

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
NOTEBOOK = DOCS / "tutorial.ipynb"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """``mkdocs build --strict`` into a temporary folder (the build reads the source tree)."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # mkdocs-material's banner about its successor
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                          "-d", str(out)], capture_output=True, text=True, env=env, cwd=ROOT)
    log = run.stdout + run.stderr
    assert run.returncode == 0, f"mkdocs build --strict failed:\n{log[-5000:]}"
    assert not re.search(r"^(WARNING|ERROR)\b", log, re.M), log
    return out


def _page(site: Path, name: str) -> str:
    return (site / name / "index.html").read_text()


def _text(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)


def test_every_page_of_the_navigation_is_built(site):
    for name in ("quickstart", "your-estimator", "tutorial", "suite-files", "cli", "api", "components",
                 "theory", "results", "paper"):
        assert (site / name / "index.html").is_file(), name
    assert (site / "tutorial.ipynb").is_file(), "the notebook is published beside its page"


def test_the_site_fetches_nothing_from_another_host(site):
    """Offline build and reading: no web font, stylesheet or script from another host."""
    for page in site.rglob("*.html"):
        html = page.read_text()
        tags = [t for t in re.findall(r"<(?:link|script|img)\b[^>]*>", html) if 'rel="canonical"' not in t]
        external = [t for t in tags if re.search(r"(?:href|src)=\"(?:https?:)?//", t)]
        assert not external, f"{page.relative_to(site)} loads {external}"
        assert "fonts.googleapis" not in html and "fonts.gstatic" not in html, page


def test_the_api_reference_documents_every_top_level_name(site):
    pages = _page(site, "api") + _page(site, "components")
    markers = {"hookimpl", "hookspec"}  # pluggy markers, described in the page's text
    missing = [name for name in cmbench.__all__ if not name.startswith("_") and name not in markers
               and f'id="cmbench.{name}"' not in pages and f'id="cmbench.components.{name}"' not in pages]
    assert not missing, f"top-level names without an entry in docs/api.md or docs/components.md: {missing}"
    assert all(f"cmbench.{m}" in _text(_page(site, "api")) for m in markers)


def test_the_api_reference_documents_every_hook(site):
    html = _page(site, "api")
    hooks = [n for n in dir(cmbench.hookspecs) if n.startswith("register_")]
    assert hooks and all(f'id="cmbench.hookspecs.{h}"' in html for h in hooks), hooks


def test_the_theory_reference_documents_every_public_function(site):
    from cmbench import theory

    html = _page(site, "theory")
    missing = [n for n in theory.__all__ if callable(getattr(theory, n)) and f'id="cmbench.theory.{n}"' not in html]
    assert not missing, missing


def _commands(group: click.Group, prefix: str = "cmbench"):
    for name, command in group.commands.items():
        path = f"{prefix}-{name}"
        yield path, command
        if isinstance(command, click.Group):
            yield from _commands(command, path)


def test_the_cli_reference_is_generated_from_every_click_command_and_option(site):
    html = _page(site, "cli")
    text = _text(html)
    for anchor, command in _commands(main):
        assert f'id="{anchor}"' in html, f"{anchor.replace('-', ' ', 1)} is not in the CLI reference"
        for param in command.params:
            for opt in getattr(param, "opts", []):
                if opt.startswith("-"):
                    assert opt in text, f"{anchor}: option {opt} is not in the CLI reference"


def test_the_suite_file_reference_documents_every_key_the_loader_accepts():
    page = (DOCS / "suite-files.md").read_text()
    keys = {*suite.SUITE_KEYS, *suite.EXPERIMENT_KEYS, *claims_module.CLAIM_KEYS, *claims_module.RANGE_KEYS}
    missing = sorted(k for k in keys if f"`{k}`" not in page)
    assert not missing, f"suite-file keys missing from docs/suite-files.md: {missing}"
    from cmbench import theory

    missing = [k for k in theory.THRESHOLD_LABELS if f"`{k}`" not in page]
    assert not missing, f"recovery thresholds a claim may name, missing from docs/suite-files.md: {missing}"


def test_the_results_guide_documents_every_cube_variable_and_status():
    page = (DOCS / "results.md").read_text()
    missing = sorted(v for v in (*cube.VARIABLES, *cube.DIMS, *cube.STATUSES) if f"`{v}`" not in page)
    assert not missing, f"missing from docs/results.md: {missing}"


def test_the_paper_page_states_every_claim_of_the_paper_suite():
    import tomllib

    doc = tomllib.loads((ROOT / "suites" / "paper.toml").read_text())
    page = (DOCS / "paper.md").read_text()
    for experiment in doc["experiment"]:
        for claim in experiment.get("claim", []):
            assert re.search(rf"^\| {re.escape(claim['id'])} \| {experiment['name']} \|", page, re.M), \
                f"claim {claim['id']} of experiment {experiment['name']} is not in docs/paper.md's table"


def test_the_tutorial_notebook_runs_in_a_fresh_kernel(tmp_path):
    """The notebook of issue 33's "Done when": an estimator defined in a cell, a suite given as a
    dict with a grid over N, error plotted against p_dataset_N, the ranking and the claims."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError, with the cell and its traceback, if a cell fails
    code = [c for c in notebook.cells if c.cell_type == "code"]
    outputs = [o for c in code for o in c.get("outputs", [])]
    assert any("image/png" in o.get("data", {}) for o in outputs), "the notebook draws error against N"
    printed = "".join(o.get("text", "") for o in code[-2].outputs + code[-1].outputs)
    for method in ("Empirical Mean", "C-Median", "Winsorized Mean"):
        assert method in printed, f"{method} is not in the ranking / claims printed:\n{printed}"
    for claim_id in ("median-under-hiding", "winsorizing-is-harmless"):
        assert claim_id in printed, printed
    assert re.search(r"\b(holds|fails|no data)\b", printed), printed


def test_the_tutorial_notebook_is_stored_without_outputs():
    """Outputs are made by running it (the test above); stored ones would go stale."""
    import nbformat

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, cell.source[:60]


def test_the_benchmarks_readme_is_short_and_says_how_to_run_every_script():
    """issue 32: at most 200 lines (the dated logs live in git history), every script with its command."""
    text = (ROOT / "benchmarks" / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    for script in (ROOT / "benchmarks").glob("*.py"):
        if script.name != "baselines.py":  # the baselines the scripts import
            assert f"python benchmarks/{script.name}" in text, f"benchmarks/README.md: how to run {script.name}"
