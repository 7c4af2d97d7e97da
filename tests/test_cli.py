"""The command line as a user meets it: exit codes, one-line errors, the tables it prints.

`test_version` goes through the real entry point in a fresh interpreter (``python -m cmbench.cli``;
its exit 2 is test_suite_file_errors.py's first test, its exit 1 test_data_load_faults.py's); the
others run the same click command in-process.
"""
import xarray as xr

import cmbench
from conftest import assert_user_error, cli, cli_inproc_result
from helpers import pdf_pages_text, squash


def refused(result, *needles):
    """The ``result`` is a one-line user error (exit 2) holding every needle."""
    return assert_user_error(result.returncode, result.stderr, *needles)


def test_version():
    result = cli("--version")
    assert result.returncode == 0 and cmbench.__version__ in result.stdout


def test_plugins_table_lists_builtins_and_a_plugin_file(winsorized_file):
    result = cli_inproc_result("plugins", "--plugin", winsorized_file)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:4] == ["kind", "name", "plugin", "description"]
    row = next(line for line in lines if "winsorized-mean" in line)
    assert row.startswith("estimator") and str(winsorized_file.resolve()) in row
    assert any(line.startswith("recoverer") and " ithsvd " in line and "cmbench.recoverers 0" in line
               for line in lines)


def test_smoke_suite_runs_a_plugin_estimator(tmp_path, winsorized_file):
    result = cli_inproc_result("suite", "smoke", "--out", tmp_path / "out", "--plugin", winsorized_file,
                               cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "failed" not in result.stdout
    with xr.open_dataset(tmp_path / "out" / "smoke" / "synthetic.nc") as ds:
        assert "winsorized-mean" in ds["estimator"].values
        assert (ds["status"].sel(estimator="winsorized-mean") == "ok").all()
        assert "winsorized-mean" in ds.attrs["methods"]
    # drawn by the sweep's warm workers (--workers auto), the pages in report order
    pages = pdf_pages_text(tmp_path / "out" / "smoke.pdf")
    texts = [squash(p) for p in pages]
    assert texts[0].startswith("cmbenchreport:smoke")
    appendix = next(i for i, t in enumerate(texts) if "Suitefile:smoke.toml" in t)  # the suite file, last
    assert "cellsthatdidnotrun" in texts[appendix - 1] and all("Suitefile:smoke.toml" in t for t in texts[appendix:])


def test_unknown_suite_lists_shipped_ones():
    refused(cli_inproc_result("suite", "smok"), "unknown suite 'smok'", "did you mean 'smoke'", "paper")


def test_missing_plugin_file(tmp_path):
    refused(cli_inproc_result("plugins", "--plugin", tmp_path / "nope.py"), "nope.py", "does not exist")


def test_missing_plugin_file_of_the_command_line_is_not_blamed_on_the_suite(tmp_path):
    result = cli_inproc_result("suite", "smoke", "--out", tmp_path / "out", "--plugin", tmp_path / "nope.py")
    refused(result, "nope.py", "does not exist", "--plugin")
    assert "smoke.toml" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_plugin_syntax_error(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import cmbench\n\nx = (\n")
    refused(cli_inproc_result("suite", "smoke", "--plugin", bad, "--out", tmp_path), "bad.py:3", "syntax error")


def test_duplicate_component_names_both_plugins(tmp_path, winsorized_file):
    twin = tmp_path / "twin.py"
    twin.write_text(winsorized_file.read_text())
    refused(cli_inproc_result("plugins", "--plugin", winsorized_file, "--plugin", twin),
            "duplicate estimator name 'winsorized-mean'", "winsorized.py", "twin.py")


def test_report_command_redraws_from_cubes(smoke_run, tmp_path):
    out = tmp_path / "again.pdf"
    result = cli_inproc_result("report", smoke_run / "smoke" / "synthetic.nc", "-o", out,
                               "--png", tmp_path / "png", "--tables", tmp_path / "tables")
    assert result.returncode == 0, result.stderr
    assert out.stat().st_size > 1000 and list((tmp_path / "png").glob("*.png"))
    assert len(list((tmp_path / "tables").glob("synthetic-*.tex"))) == 4  # ranking, mean error x 2 metrics
    refused(cli_inproc_result("report", tmp_path / "missing.nc", "-o", out), "missing.nc")


def test_datasets_table():
    result = cli_inproc_result("datasets")
    assert result.returncode == 0, result.stderr
    assert "synthetic-gaussian" in result.stdout and "1000x16" in result.stdout
    assert "wearable-sensor" in result.stdout
