"""A run's options, parsed and checked once (`RunOptions`) for a real run and ``--dry-run``.

``--workers auto`` (the default of ``cmbench suite``) is the number of usable
cores and more than four workers per usable core is refused; ``--dry-run``
refuses every option a real run refuses and shows a data set's true size; a
seed the cube cannot store is refused at load, naming the key; a guarded plugin call
is told its context as an argument.
"""
from __future__ import annotations

import pytest

from cmbench.errors import UserError
from cmbench.options import MAX_WORKERS_PER_CORE, parse_workers, usable_cores
from conftest import assert_user_error, cli_inproc, cli_inproc_result, good_suite


def test_workers_auto_is_the_usable_cores_and_the_default(monkeypatch):
    assert parse_workers("auto") == usable_cores() >= 1
    assert parse_workers(None) == usable_cores()
    monkeypatch.setattr("cmbench.options.usable_cores", lambda: 2)
    assert parse_workers("auto") == 2 and parse_workers(8) == 8
    with pytest.raises(UserError, match="more than 4 per usable core"):
        parse_workers(9)


def test_workers_auto_starts_a_local_cluster_of_a_worker_per_core_and_asks_nothing_of_an_external_one(monkeypatch):
    """A LocalCluster is started by the run, with ``--workers`` workers: auto gave it one worker, so
    ``--scheduler local`` computed every unit on one core. An external scheduler brings its own."""
    from cmbench.options import RunOptions

    monkeypatch.setattr("cmbench.options.usable_cores", lambda: 2)
    assert RunOptions(workers="auto", scheduler="local").workers == 2
    assert RunOptions(workers=3, scheduler="local").workers == 3
    assert RunOptions(workers="auto", scheduler="tcp://127.0.0.1:8786").workers == 1
    assert RunOptions(workers="auto", post_mortem=True).workers == 1


@pytest.mark.parametrize("option", [("--workers", "0"), ("--workers", "-3"), ("--workers", "many"),
                                    ("--timeout", "-1"), ("--timeout", "nan"), ("--timeout", "0"),
                                    ("--timeout", "1e10"), ("--timeout", "soon"),
                                    ("--cache-size", "lots"), ("--workers", "3", "--pdb")])
@pytest.mark.parametrize("dry", [True, False])
def test_dry_run_refuses_what_a_real_run_refuses(tmp_path, option, dry):
    out = tmp_path / "out"
    code, err = cli_inproc("suite", good_suite(tmp_path), "--out", out, "--no-report", *option,
                           *(["--dry-run"] if dry else []))
    needle = {"--cache-size": "cache size 'lots'"}.get(option[0], option[0] if option[-1] != "--pdb" else "--pdb")
    assert_user_error(code, err, needle)
    assert not (out / "r").exists()


def test_more_workers_than_four_per_usable_core_is_one_line(tmp_path):
    many = MAX_WORKERS_PER_CORE * usable_cores() + 1
    for dry in ([], ["--dry-run"]):
        code, err = cli_inproc("suite", good_suite(tmp_path), "--out", tmp_path / "out", "--workers", many, *dry)
        assert_user_error(code, err, f"--workers {many}", "per usable core")


def test_dry_run_shows_the_size_a_data_set_parameter_gives(tmp_path):
    suite = good_suite(tmp_path, "N = 60", "N = 30000000")
    proc = cli_inproc_result("suite", suite, "--out", tmp_path / "out", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "30,000,000 x 16 (3.8 GB per array), from its parameters" in proc.stdout, proc.stdout


@pytest.mark.parametrize("seed", ["99999999999999999999", "9223372036854775808"])
def test_a_seed_the_cube_cannot_store_is_refused_at_load_naming_the_key(tmp_path, seed):
    suite = good_suite(tmp_path, "seed = 3", f"seed = {seed}")
    for dry in (["--dry-run"], []):
        code, err = cli_inproc("suite", suite, "--out", tmp_path / "out", "--no-report", *dry)
        assert_user_error(code, err, "'seed'", str(suite))
    assert not (tmp_path / "out" / "r").exists()


def test_the_largest_seed_the_cube_stores_runs(tmp_path):
    import xarray as xr

    suite = good_suite(tmp_path, "seed = 3", f"seed = {2 ** 63 - 1}")
    proc = cli_inproc_result("suite", suite, "--out", tmp_path / "out", "--no-report", "--workers", "1")
    assert proc.returncode == 0, proc.stderr
    with xr.open_dataset(tmp_path / "out" / "r" / "e.nc") as ds:
        assert int(ds.attrs["seed"]) == 2 ** 63 - 1


def test_suite_help_states_the_default_timeout_and_none_disables_it(tmp_path):
    from cmbench.options import SUITE_TIMEOUT

    code, _ = cli_inproc("suite", good_suite(tmp_path), "--out", tmp_path / "out", "--no-report",
                         "--timeout", "none", "--workers", "1")
    assert code == 0
    from click.testing import CliRunner

    from cmbench.cli import main

    help_text = " ".join(CliRunner().invoke(main, ["suite", "--help"]).output.split())
    assert f"[default: {SUITE_TIMEOUT:g}]" in help_text and "'none': no limit" in help_text


@pytest.mark.parametrize("value", ["1e7", "-2", "soon"])
def test_check_refuses_a_timeout_out_of_bounds_in_one_line(value):
    code, err = cli_inproc("check", "mean", "--timeout", value)
    assert_user_error(code, err, "--timeout")


def test_run_options_are_parsed_once_into_a_frozen_object():
    import dataclasses

    from cmbench.options import SUITE_TIMEOUT, RunOptions

    options = RunOptions(out="o", workers="auto", timeout="none", cache_size="500MB", plugins=["x.py"],
                         select="cmedian", post_mortem=True)
    assert options.workers == 1 and options.timeout is None and options.cache_size == 500_000_000
    assert options.plugins == ("x.py",) and options.select == ("cmedian",) and not options.isolate
    assert str(options.out) == "o" and RunOptions().timeout == SUITE_TIMEOUT
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.workers = 2
    assert dataclasses.replace(options, post_mortem=False).isolate  # replacing keeps it parsed
    with pytest.raises(UserError, match="^--pdb debugs in this process"):
        RunOptions(workers=2, post_mortem=True)
    with pytest.raises(UserError, match="^workers must be at least 1"):  # the API's name for it
        RunOptions(workers=0, workers_name="workers")


def test_a_guarded_call_is_told_its_context_and_keeps_no_flag(monkeypatch):
    import pdb

    from cmbench.pools import Slot
    from cmbench.runner import guard

    seen, slot = [], Slot()

    def plugin():
        seen.append(slot.value)  # what the parent would read if this call ended the process
        raise ValueError("bug")

    monkeypatch.setattr(pdb, "post_mortem", lambda tb: seen.append("debugger"))
    try:
        out = guard.run(plugin, context=guard.Context(running=slot.path), what="plugin() of mine.py")
        assert out.status == "failed" and seen == [b"plugin() of mine.py"] and slot.value == b""
        guard.run(plugin, context=guard.Context(post_mortem=True))
        assert seen[-1] == "debugger"
        seen.clear()
        guard.run(plugin)  # the default context: no slot, no debugger, whatever ran before
        assert seen == [b""]
    finally:
        slot.close()
