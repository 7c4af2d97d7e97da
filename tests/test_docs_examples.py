"""The documentation's examples do what the pages say: install commands that work without a
release, the example suite of "Benchmark your estimator" with its claim holding when run
verbatim, and a citation for every study a shipped suite reproduces.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

import cmbench

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def code_blocks(path: Path, language: str) -> list[str]:
    """The fenced code blocks of ``language`` in a Markdown file, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```", path.read_text(), flags=re.S | re.M)


def pip_targets(text: str) -> list[str]:
    """What each ``pip install`` of ``text`` installs (its first argument that is not an option)."""
    targets = []
    for match in re.finditer(r"pip install((?:\s+-\S+)*)\s+(\"[^\"]*\"|'[^']*'|[^\s`)]+)", text):
        targets.append(match.group(2).strip("'\""))
    return targets


def registry_installs(text: str) -> list[str]:
    """The ``pip install`` targets of ``text`` that ask the registry for cmbench by name."""
    return [t for t in pip_targets(text) if t.startswith("cmbench") and not installable_without_a_release(t)]


def installable_without_a_release(target: str) -> bool:
    """A checkout (``.``, ``.[extra]``) or the repository's URL, bare or behind a name."""
    return bool(re.fullmatch(r"\.(\[[\w,-]+\])?", target)) or "git+https://github.com/cmbench/cmbench" in target


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_install_command_of_the_docs_works_without_a_release(page):
    """No page tells a reader to ``pip install cmbench``: there is no such distribution on
    PyPI yet, so every install is from a checkout or from the repository's URL."""
    bad = registry_installs(page.read_text())
    assert not bad, f"{page.name} installs from the registry: {bad}"


def test_the_install_commands_are_recognised():
    """The check above sees the forms it must (a test that cannot fail would prove nothing)."""
    assert pip_targets("pip install cmbench") == ["cmbench"]
    assert pip_targets("`pip install 'cmbench[dask]'`") == ["cmbench[dask]"]
    assert pip_targets('pip install -q "git+https://github.com/cmbench/cmbench"') == \
        ["git+https://github.com/cmbench/cmbench"]
    assert installable_without_a_release(".[dask]") and not installable_without_a_release("cmbench")
    assert registry_installs("pip install cmbench && pip install 'cmbench[dask]'") == ["cmbench", "cmbench[dask]"]
    assert registry_installs('pip install "cmbench[dask] @ git+https://github.com/cmbench/cmbench"') == []


def test_the_quickstart_installs_from_a_checkout_and_from_the_url():
    block = code_blocks(DOCS / "quickstart.md", "sh")[0]
    assert "pip install .\n" in block and 'pip install "git+https://github.com/cmbench/cmbench"' in block


def _winsorized_suite() -> str:
    blocks = [b for b in code_blocks(DOCS / "your-estimator.md", "toml") if "winsorized-beats-mean" in b]
    assert len(blocks) == 1, "docs/your-estimator.md has one suite file declaring winsorized-beats-mean"
    return blocks[0]


def test_the_your_estimator_example_claim_holds_when_run_verbatim(tmp_path):
    """The page's suite file and plugin, saved as they are shown, run, and the page's claim
    holds (it failed as first written: under random hiding the mean is unbiased and the
    winsorized mean only adds variance)."""
    page = (DOCS / "your-estimator.md").read_text()
    assert '--8<-- "tests/plugins/winsorized.py"' in page  # the plugin the page shows is this file
    (tmp_path / "winsorized.py").write_text((ROOT / "tests" / "plugins" / "winsorized.py").read_text())
    suite = tmp_path / "winsorized.toml"
    suite.write_text(_winsorized_suite())
    cubes = cmbench.run_suite(suite, out=tmp_path / "reports", workers=1)
    frame = cmbench.to_frame(cubes)
    assert (frame["status"] == "ok").all(), frame.loc[frame["status"] != "ok", "error"].unique()[:3]
    verdicts = cmbench.claims(cubes).set_index("id")
    claim = verdicts.loc["winsorized-beats-mean"]
    assert claim["verdict"] == "holds", claim["numbers"]
    # the page's figures: the mean's error over the winsorized mean's, hide-smallest, budget > 0
    ok = frame[(frame["recoverer"] == "none") & (frame["budget"] > 0)]
    means = ok.groupby(["adversary", "p_dataset_N", "budget", "method"])["l2"].mean().unstack("method")
    ratio = means["none+mean"] / means["none+winsorized-mean.limit_0.1"]
    assert ratio["hide-smallest"].between(1.05, 1.25).all(), ratio["hide-smallest"]
    assert (ratio["hide-random"].xs(2000.0, level="p_dataset_N") < 1).all(), ratio["hide-random"]


# -- citing ------------------------------------------------------------------

STUDIES = {  # suite -> the title its reference carries
    "paper": "On Robust Mean Estimation under Coordinate-level Corruption",
    "dkk17": "Being Robust (in High Dimensions) Can Be Practical",
    "gao19": "Robust Estimation and Generative Adversarial Networks",
    "ap25": "Robust High-Dimensional Mean Estimation With Low Data Size, an Empirical Study",
}


def test_citation_cff_cites_every_reproduced_study():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    titles = {ref["title"] for ref in cff["references"]}
    assert set(STUDIES.values()) <= titles, set(STUDIES.values()) - titles
    for ref in cff["references"]:
        assert ref["type"] in ("conference-paper", "article") and ref["authors"] and ref["year"], ref["title"]
        # keys the CFF 1.2.0 schema does not allow in a reference (cffconvert --validate rejects them)
        assert not {"series", "booktitle"} & set(ref), ref["title"]


def test_every_shipped_study_suite_names_the_reference_that_cites_it():
    """A suite file's opening comment names its study, so the reference can be found from it."""
    for suite, words in (("dkk17", "Being Robust (in\n# High Dimensions) Can Be Practical"),
                         ("gao19", "Gao, Liu, Yao, Zhu")):
        assert words in (ROOT / "suites" / f"{suite}.toml").read_text(), suite


@pytest.mark.parametrize("page", [ROOT / "README.md", DOCS / "citing.md"], ids=lambda p: p.name)
def test_the_bibtex_block_has_an_entry_for_every_study(page):
    blocks = code_blocks(page, "bibtex")
    assert len(blocks) == 1, f"{page.name}: one BibTeX block"
    entries = re.findall(r"^@(\w+)\{(\w+),\n(.*?)^\}", blocks[0], flags=re.S | re.M)
    titles = {re.search(r"title\s*=\s*\{(.*)\},", body).group(1) for _, _, body in entries}
    assert set(STUDIES.values()) <= titles, set(STUDIES.values()) - titles
    assert len({key for _, key, _ in entries}) == len(entries), "unique keys"


def test_the_readme_and_the_docs_carry_the_same_bibtex():
    assert code_blocks(ROOT / "README.md", "bibtex") == code_blocks(DOCS / "citing.md", "bibtex")


# -- the README and the suites page ---------------------------------------------

SHIPPED = sorted(p.stem for p in (ROOT / "suites").glob("*.toml"))


def test_the_readme_lists_every_shipped_suite():
    table = (ROOT / "README.md").read_text().split("Shipped suites (`cmbench suite NAME`):", 1)[1].split("\n\n", 2)[1]
    missing = [s for s in SHIPPED if f"`{s}`" not in table]
    assert not missing, f"README.md's table of shipped suites misses {missing}"
    assert {"dkk17", "dkk17-quick", "gao19", "gao19-quick"} <= set(SHIPPED)


def test_the_readme_first_paragraph_says_how_many_claims_hold_and_links_the_page():
    text = (ROOT / "README.md").read_text()
    first = text.split("```\n\n", 1)[1].split("\n\n", 1)[0]
    assert "one of the paper's five claims holds" in first
    assert "(https://cmbench.github.io/cmbench/suites/)" in first


def test_the_suites_page_names_every_shipped_suite_and_every_claim():
    import tomllib

    page = (DOCS / "suites.md").read_text()
    for suite in SHIPPED:
        assert f"`{suite}`" in page, suite
        doc = tomllib.loads((ROOT / "suites" / f"{suite}.toml").read_text())
        for experiment in doc["experiment"]:
            for claim in experiment.get("claim", []):
                if suite == "paper":
                    assert f"({claim['id']})" in page, f"paper claim ({claim['id']})"
                else:
                    assert f"`{claim['id']}`" in page, f"{suite}: claim {claim['id']}"


@pytest.mark.slow
def test_the_suites_page_gives_the_paper_suites_measured_verdicts(tmp_path):
    """The paper suite run afresh: each claim's verdict and cell count are the page's, and the
    numbers the page gives for the failing claims are the cubes' (means over instances)."""
    page = (DOCS / "suites.md").read_text()
    cubes = cmbench.run_suite("paper", out=tmp_path, workers=2)
    verdicts = cmbench.claims(cubes).set_index("id")
    for claim, row in verdicts.iterrows():
        line = next(line for line in page.splitlines() if line.startswith(f"| ({claim}) "))
        assert f"| {row['verdict']} | {row['passed']} of {row['compared']} |" in line, (line, row["numbers"])
    frame = cmbench.to_frame(cubes)
    real = frame[frame["experiment"] == "realworld"].groupby(["dataset", "budget", "method"])["l2"].mean()
    assert round(real["blood-transfusion", 0.025, "Two-Step-M"], 3) == 0.069
    assert round(real["blood-transfusion", 0.025, "Empirical Mean"], 3) == 0.052
    for dataset, error in {"breast-cancer": 1.82, "mice-protein": 1.11, "leaf": 1.09, "wearable-sensor": 1.06,
                           "blood-transfusion": 0.78}.items():
        assert round(real[dataset, 0.0, "C-Median"], 2) == error, dataset
    synthetic = frame[frame["experiment"] == "synthetic"].groupby(["dataset", "budget", "method"])["mahalanobis"].mean()
    assert round(synthetic["synthetic-gaussian", 0.425, "Two-Step-E"], 2) == 0.97
