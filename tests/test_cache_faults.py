"""A cache or cube that cannot be trusted: damaged, from another version, or stale after an edit.

Whatever is found on disk, the numbers are those of a fresh run: a damaged or
foreign cache file is recomputed, never trusted; a cube of a newer format is
refused naming both versions.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import cmbench
from cmbench.cli import main
from cmbench.errors import UserError
from cmbench.runner import run_suite
from cmbench.options import RunOptions
from conftest import (GOOD, assert_same_cube, computed, copy_plugin, good_suite, open_cube, slow_suite,
                      unit_files, write)


# ====================================================== a corrupted or truncated cache file

def test_damaged_cache_files_are_detected_and_recomputed(tmp_path, log):
    suite = slow_suite(tmp_path, delay=0.0, instances=2, budgets="[0.0, 0.1, 0.2, 0.3]")
    out = tmp_path / "out"
    first = run_suite(suite, RunOptions(out=out))["e"]
    files = unit_files(out)
    assert len(files) == 8

    def edit(path, change):
        doc = json.loads(path.read_text())
        change(doc)
        path.write_text(json.dumps(doc))

    damage = [
        lambda p: p.write_bytes(b""),                                     # empty (crash before fsync)
        lambda p: p.write_bytes(bytes(range(256))),                       # binary garbage, not UTF-8
        lambda p: p.write_text(p.read_text()[: len(p.read_text()) // 2]),  # truncated
        lambda p: p.write_text("[1, 2, 3]"),                              # JSON, but not a unit
        lambda p: p.write_text(files[-1].read_text()),                    # another unit's (valid) file
        lambda p: edit(p, lambda d: next(iter(d["body"]["cells"].values())).update(l2=0.0)),  # checksum fails
        lambda p: edit(p, lambda d: d.pop("checksum")),                   # no checksum
    ]
    for path, spoil in zip(files, damage):
        spoil(path)
    log.unlink()
    again = run_suite(suite, RunOptions(out=out))["e"]
    assert computed(log) == len(damage), "a damaged file was trusted, or a sound one recomputed"
    assert_same_cube(first, again)
    log.unlink()
    run_suite(suite, RunOptions(out=out))
    assert computed(log) == 0, "the recomputed units were not written back"


# ====================================================== cube or cache from an older cmbench version

def _age_cache(out: Path, version: str = "0.0.1") -> None:
    for path in unit_files(out):
        doc = json.loads(path.read_text())
        doc["cmbench_version"] = version  # checksum (of the result) still valid
        path.write_text(json.dumps(doc))


def test_cache_from_another_cmbench_version_is_not_trusted(tmp_path, log):
    suite = slow_suite(tmp_path, delay=0.0, instances=1, budgets="[0.0, 0.2]")
    out = tmp_path / "out"
    first = run_suite(suite, RunOptions(out=out))["e"]
    _age_cache(out)
    log.unlink()
    again = run_suite(suite, RunOptions(out=out))["e"]
    assert computed(log) == 2
    assert_same_cube(first, again)


def test_cache_from_another_cmbench_version_is_reported_naming_both_versions(tmp_path, log):
    suite = slow_suite(tmp_path, delay=0.0, instances=1, budgets="[0.0, 0.2]")
    out = tmp_path / "out"
    run_suite(suite, RunOptions(out=out))
    _age_cache(out)
    result = CliRunner().invoke(main, ["suite", str(suite), "--out", str(out), "--no-report"])
    assert result.exit_code == 0
    assert "0.0.1" in result.stderr and cmbench.__version__ in result.stderr, result.stderr


def _small_cube(tmp_path: Path) -> Path:
    run_suite(good_suite(tmp_path), RunOptions(out=tmp_path / "out"))
    return tmp_path / "out" / "r" / "e.nc"


def test_cube_from_an_older_cmbench_version_is_read(tmp_path):
    from cmbench import cube
    from cmbench.report.load import load_cube

    ds = open_cube(_small_cube(tmp_path))
    old = ds.drop_vars(["recovered_fraction", "discarded_fraction", "d_entry1", "d_entry_inf", "d_tv"])
    old.attrs = {k: v for k, v in ds.attrs.items()
                 if k not in ("metrics", "methods", "datasets_info", "adversaries_info", "components",
                              "cube_format", "d_entry_method")}
    old.attrs["cmbench_version"] = "0.0.1"
    path = tmp_path / "old.nc"
    old.to_netcdf(path)
    loaded = cube.load(path)
    np.testing.assert_array_equal(loaded["l2"].values, ds["l2"].values)
    report_view = load_cube(path)
    np.testing.assert_array_equal(report_view.ds["l2"].values, ds["l2"].values)


def test_cube_from_a_newer_format_is_refused_naming_both_versions(tmp_path):
    from cmbench import cube

    ds = open_cube(_small_cube(tmp_path))
    ds.attrs.update(cube_format=cube.FORMAT + 1, cmbench_version="9.9.9")
    path = tmp_path / "future.nc"
    ds.to_netcdf(path)
    with pytest.raises(UserError) as err:
        cube.load(path)
    assert "9.9.9" in str(err.value) and cmbench.__version__ in str(err.value)


def test_editing_a_plugin_file_invalidates_its_cached_units(tmp_path):
    plugin = copy_plugin("shifted.py", tmp_path, "shifty.py")
    path = write(tmp_path / "s.toml", GOOD.replace("seed = 3", 'seed = 3\nplugins = ["shifty.py"]')
                 .replace('"cmedian"]', '"shifted"]'))
    before = run_suite(path, RunOptions(out=tmp_path / "out"))["e"]
    plugin.write_text(plugin.read_text().replace("SHIFT = 1.0", "SHIFT = 0.0"))
    # What the same command in a new process sees: the edited file imported afresh
    # (a copy of the suite file, so that no per-path memo of this process is hit).
    for name in [k for k, m in sys.modules.items() if getattr(m, "__file__", None) == str(plugin.resolve())]:
        del sys.modules[name]
    again = write(tmp_path / "s2.toml", path.read_text())
    after = run_suite(again, RunOptions(out=tmp_path / "out"))["e"]
    np.testing.assert_array_equal(after["l2"].sel(estimator="shifted").values,
                                  after["l2"].sel(estimator="mean").values)
    assert not np.array_equal(after["l2"].sel(estimator="shifted").values,
                              before["l2"].sel(estimator="shifted").values)


def test_editing_the_suite_file_between_in_process_runs_never_gives_stale_numbers(tmp_path):
    path = good_suite(tmp_path, '"cmedian"', '{name = "trimmed-mean", proportion = 0.0}')
    run_suite(path, RunOptions(out=tmp_path / "a"))
    path.write_text(path.read_text().replace("proportion = 0.0", "proportion = 0.3"))
    edited = run_suite(path, RunOptions(out=tmp_path / "a"))["e"]
    fresh = run_suite(good_suite(tmp_path, '"cmedian"', '{name = "trimmed-mean", proportion = 0.3}',
                                 name="fresh.toml"), RunOptions(out=tmp_path / "b"))["e"]
    np.testing.assert_array_equal(edited["l2"].values, fresh["l2"].values)
