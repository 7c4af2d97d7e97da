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
import numpy as np
import pytest

import cmbench
from cmbench import verdicts as claims_module
from cmbench import cube, suite
from cmbench.cli import main

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
NOTEBOOK = DOCS / "tutorial.ipynb"
FIGURE = DOCS / "tutorial-error-vs-n.png"  # the notebook's figure, shown on its docs page


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
    for name in ("quickstart", "your-estimator", "tutorial", "plugins", "scaling-out", "suite-files", "cli", "api",
                 "components", "theory", "results", "paper", "sample-level", "suites", "citing"):
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


def test_the_api_reference_is_in_the_order_a_user_reads_it(site):
    """Running a suite and reading its results first, plugins next, the progress display and
    the exceptions last (alphabetical order put the exceptions and Progress first)."""
    html = _page(site, "api")
    order = ["run_suite", "to_frame", "rank", "claims", "load_plugins", "Progress", "UserError", "SuiteError",
             "PluginError", "DataError", "WorkerSetupError", "StoppedAtFailure", "Interrupted"]
    where = [html.find(f'id="cmbench.{name}"') for name in order]
    assert -1 not in where, dict(zip(order, where))
    assert where == sorted(where), sorted(zip(where, order))
    declarations = html.find('id="declarations"')
    assert where[order.index("load_plugins")] < declarations < where[order.index("Progress")]


def test_code_blocks_wrap_long_lines_instead_of_cutting_them(site):
    """The site's stylesheet wraps code: lines past the column's width stayed hidden."""
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text().replace("!relative", ""))
    (css,) = config["extra_css"]
    rules = (DOCS / css).read_text()
    assert re.search(r"\.md-typeset pre > code\s*\{[^}]*white-space:\s*pre-wrap", rules), rules
    assert f'href="{css}"' in (site / "index.html").read_text(), "every page links the stylesheet"
    assert (site / css).read_text() == rules


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


def executed(path: Path, folder: Path, probe: str | None = None):
    """The notebook at ``path`` run in a fresh kernel whose working folder is ``folder``, with
    the outputs a stored copy keeps: everything but the progress bar's text (stderr) and the
    cube's HTML view (its text view stays), which would make the file large and noisy.

    ``probe``: code run in the kernel after the notebook's cells; with it, ``(notebook, what
    the probe printed)``, the notebook without the probe's cell.
    """
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    if probe is not None:
        notebook.cells.append(nbformat.v4.new_code_cell(probe))
    client = NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(folder)}})
    # TMPDIR: the tutorial keeps its cubes in a `tempfile.mkdtemp` folder, which a reader keeps;
    # the test's kernel makes it inside ``folder``, so that no run leaves one in the system's /tmp
    client.execute(env={**os.environ, "TMPDIR": str(folder)})  # raises CellExecutionError if a cell fails
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs if not (o.output_type == "stream" and o.name == "stderr")]
            for output in cell.outputs:
                if "image/png" not in output.get("data", {}):
                    output.get("data", {}).pop("text/html", None)
    if probe is None:
        return notebook
    printed = "".join(o.get("text", "") for o in notebook.cells.pop().outputs)
    return notebook, printed


# Run in the tutorial's kernel after its cells: on each axis of its figure, the visible tick labels,
# major and minor, that overlap, and the axes that show two labels or more (a shared axis shows its
# labels on one panel only).
TICK_PROBE = """\
import json as _json
from matplotlib.backends.backend_agg import FigureCanvasAgg as _Agg
_canvas = _Agg(fig)  # the inline backend closed the figure once shown
_canvas.draw()
_renderer = _canvas.get_renderer()
_labelled, _overlaps = set(), []
for _ax in fig.axes:
    for _axis in (_ax.xaxis, _ax.yaxis):
        _low, _high = sorted(_axis.get_view_interval())
        _boxes = [_t.label1.get_window_extent(_renderer) for _t in [*_axis.get_major_ticks(), *_axis.get_minor_ticks()]
                  if _t.label1.get_visible() and _t.label1.get_text() and _low <= _t.get_loc() <= _high]
        if len(_boxes) >= 2:
            _labelled.add(_axis.axis_name)
        _overlaps += [f"{_ax.get_title()}: {_axis.axis_name} tick labels overlap"
                      for _i, _a in enumerate(_boxes) for _b in _boxes[_i + 1:] if _a.overlaps(_b)]
print(_json.dumps({"labelled": sorted(_labelled), "overlaps": _overlaps}))
"""


@pytest.fixture(scope="module")
def tutorial(tmp_path_factory):
    """The tutorial run in a fresh kernel (`executed`), once for this file's tests, and what
    `TICK_PROBE` found in its figure there."""
    import json

    notebook, printed = executed(NOTEBOOK, tmp_path_factory.mktemp("tutorial"), probe=TICK_PROBE)
    return notebook, json.loads(printed)


def _png(notebook) -> bytes:
    import base64

    images = [o["data"]["image/png"] for c in notebook.cells if c.cell_type == "code"
              for o in c.outputs if "image/png" in o.get("data", {})]
    assert len(images) == 1, "the notebook draws one figure: error against N"
    return base64.b64decode(images[0])


_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?|\bnan\b", re.I)


def _printed(notebook) -> str:
    code = [c for c in notebook.cells if c.cell_type == "code"]
    return "".join(o.get("text", "") for o in code[-2].outputs + code[-1].outputs)


def store(path: Path = NOTEBOOK, figure: Path = FIGURE) -> None:
    """Execute the tutorial and store it with its outputs, and its figure for the docs page:
    ``python tests/test_docs_site.py`` after editing the notebook."""
    import tempfile

    import nbformat

    with tempfile.TemporaryDirectory() as folder:
        notebook = executed(path, Path(folder))
    nbformat.write(notebook, path)
    figure.write_bytes(_png(notebook))


def test_the_tutorial_notebook_runs_in_a_fresh_kernel_and_shows_what_is_stored(tutorial):
    """The notebook of the tutorial: an estimator defined in a cell, a suite given as a dict with a
    grid over N, error plotted against p_dataset_N, the ranking and the claims. Run afresh, it
    prints what its stored copy shows (the runs are seeded), so the stored outputs are current."""
    import nbformat

    notebook, _ = tutorial
    _png(notebook)
    printed = _printed(notebook)
    for method in ("Empirical Mean", "C-Median", "Winsorized Mean"):
        assert method in printed, f"{method} is not in the ranking / claims printed:\n{printed}"
    for claim_id in ("median-under-hiding", "winsorizing-is-harmless"):
        assert claim_id in printed, printed
    assert re.search(r"\b(holds|fails|no data)\b", printed), printed
    stored = nbformat.read(NOTEBOOK, as_version=4)
    # the same words and numbers (not the same text: column widths follow the pandas version)
    words, numbers = (lambda s: re.findall(r"[A-Za-z][\w-]*", s), lambda s: [float(x) for x in _NUMBER.findall(s)])
    again = _printed(stored)
    stale = "the stored outputs are stale: run python tests/test_docs_site.py"
    assert words(again) == words(printed), stale
    assert np.allclose(numbers(again), numbers(printed), rtol=1e-6, equal_nan=True), stale
    assert [c.source for c in stored.cells] == [c.source for c in notebook.cells]


def test_the_tutorial_notebook_is_stored_with_its_outputs_and_small():
    """Stored executed, so that the notebook opened anywhere, and its docs page, show the figure."""
    import nbformat
    from PIL import Image

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code), "every code cell was executed"
    assert not [o for c in code for o in c.outputs if o.get("name") == "stderr"], "no progress-bar text"
    png = _png(notebook)
    width, height = Image.open(__import__("io").BytesIO(png)).size
    assert width <= 800 and len(png) < 80_000, (width, height, len(png))  # a modest dpi
    assert NOTEBOOK.stat().st_size < 120_000
    assert FIGURE.read_bytes() == png, "docs/ figure differs from the notebook's: run python tests/test_docs_site.py"


def test_the_tutorial_page_shows_the_notebooks_figure(site):
    html = _page(site, "tutorial")
    assert re.search(rf'<img[^>]+src="[./]*{FIGURE.name}"', html), "the tutorial page shows the figure"
    assert (site / FIGURE.name).read_bytes() == FIGURE.read_bytes()


def test_the_tutorial_figure_has_no_overlapping_tick_labels(tutorial):
    """The notebook's figure, as its kernel drew it: on each axis the visible tick labels, major
    and minor, do not overlap (the default labelled every minor tick of the short log ranges, and
    they ran into one another)."""
    _, ticks = tutorial
    assert not ticks["overlaps"], ticks["overlaps"]
    assert ticks["labelled"] == ["x", "y"], "both axes carry at least two labels"


def test_the_benchmarks_readme_says_how_to_run_every_script():
    """Every script with its command."""
    text = (ROOT / "benchmarks" / "README.md").read_text()
    for script in (ROOT / "benchmarks").glob("*.py"):
        if script.name != "baselines.py":  # the baselines the scripts import
            assert f"python benchmarks/{script.name}" in text, f"benchmarks/README.md: how to run {script.name}"


if __name__ == "__main__":
    store()
