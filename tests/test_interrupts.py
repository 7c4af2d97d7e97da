"""Interruption: Ctrl-C, a kill at any moment, and a second run on the same folder lose nothing.

A SIGKILL at a random moment, then the same command, is
tests/test_runner.py::test_sigkill_then_rerun_gives_the_same_cube (slow); here,
deterministically, what a kill can leave behind.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cmbench.runner import run_suite
from cmbench.options import RunOptions
from conftest import (assert_same_cube, assert_user_error, cli_inproc, cli_inproc_result, computed, open_cube,
                      slow_suite, unit_files)


# ====================================================== SIGINT (Ctrl-C) during a sweep

def _interrupt_when(proc: subprocess.Popen, out: Path, units: int, sig=signal.SIGINT, group=False):
    """Send ``sig`` once ``units`` unit files exist; return (stdout, stderr, seconds to exit)."""
    deadline = time.monotonic() + 90
    try:
        while len(unit_files(out)) < units:
            assert proc.poll() is None, "the sweep ended before it could be interrupted"
            assert time.monotonic() < deadline, "no unit finished in time"
            time.sleep(0.05)
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        sent = time.monotonic()
        stdout, stderr = proc.communicate(timeout=60)
        return stdout, stderr, time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _check_interrupted(stderr: str, waited: float, returncode: int, out: Path, total: int) -> int:
    # No tight wall-clock bound (a loaded machine stretches it); `kept < total` below
    # shows the sweep stopped early, this only catches a hang.
    assert waited < 60, f"took {waited:.1f} s to stop"
    assert returncode == 130, stderr
    assert "Traceback" not in stderr, stderr
    assert "run the same command again to resume" in stderr, stderr
    kept = len(unit_files(out))
    assert 0 < kept < total
    reported = int(re.search(r"(\d+) of (\d+) units", stderr).group(1))
    assert reported in (kept, kept + 1), stderr  # +1: a unit cut short while its file was being written
    return kept


def test_sigint_stops_within_seconds_keeps_finished_units_and_says_how_to_resume(tmp_path, log):
    total = 12
    # 0.3 s a unit leaves ~3 s between the 2nd unit and the end: room for a loaded machine
    suite = slow_suite(tmp_path, delay=0.3, instances=2, budgets="[0.0, 0.05, 0.1, 0.15, 0.2, 0.25]")
    out = tmp_path / "out"
    args = ["suite", str(suite), "--out", str(out), "--no-report"]
    proc = subprocess.Popen([sys.executable, "-m", "cmbench.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    _, stderr, waited = _interrupt_when(proc, out, units=2)
    kept = _check_interrupted(stderr, waited, proc.returncode, out, total)
    log.unlink()
    result = cli_inproc_result(*args)  # the same command again, here: the resume is what it checks
    assert result.returncode == 0, result.stderr
    assert computed(log) == total - kept, "a finished unit was recomputed"
    ds = open_cube(out / "slow" / "e.nc")
    assert (ds["status"] == "ok").all() and ds.sizes["budget"] == 6 and ds.sizes["instance"] == 2


@pytest.mark.slow
def test_sigint_to_the_process_group_with_workers_stops_cleanly(tmp_path):
    """What a terminal does: Ctrl-C reaches the runner and its worker processes."""
    total = 18
    suite = slow_suite(tmp_path, delay=0.4, instances=3, budgets="[0.0, 0.05, 0.1, 0.15, 0.2, 0.25]")
    out = tmp_path / "out"
    command = [sys.executable, "-m", "cmbench.cli", "suite", str(suite), "--out", str(out), "--no-report",
               "--workers", "2"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    _, stderr, waited = _interrupt_when(proc, out, units=3, group=True)
    _check_interrupted(stderr, waited, proc.returncode, out, total)
    result = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr


# ====================================================== SIGKILL at any moment, then the same command
# The random-moment kill is tests/test_runner.py::test_sigkill_then_rerun_gives_the_same_cube (slow).
# Here, deterministically, what a kill can leave behind.

def test_leftovers_of_a_killed_run_are_ignored(tmp_path, log):
    suite = slow_suite(tmp_path, delay=0.0, instances=2, budgets="[0.0, 0.1, 0.2]")
    out = tmp_path / "out"
    first = run_suite(suite, RunOptions(out=out))["e"]
    files = unit_files(out)
    # killed mid-write: temporary files of the atomic writes, and a half-written unit
    # (only possible without atomic writes, but a disk can do it too)
    (files[0].parent / f".{files[0].name}.abc123.tmp").write_text(files[0].read_text()[:50])
    (out / "slow" / ".e.xyz789.nc.tmp").write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 100)
    files[1].write_text(files[1].read_text()[:-25])
    (out / "slow" / "e.nc").write_bytes(b"")  # the previous cube, truncated
    log.unlink(missing_ok=True)
    again = run_suite(suite, RunOptions(out=out))["e"]
    assert computed(log) == 1
    assert_same_cube(first, again)
    assert_same_cube(first, open_cube(out / "slow" / "e.nc"))


# ====================================================== two runs writing the same folder at once

def test_second_run_on_the_same_out_folder_is_refused_while_the_first_finishes_intact(tmp_path):
    suite = slow_suite(tmp_path, delay=0.2, instances=2, budgets="[0.0, 0.1, 0.2, 0.3, 0.4, 0.5]")
    out = tmp_path / "out"
    # one worker: the run lock is what is tested, not the pool (a second worker would cost its start)
    proc = subprocess.Popen([sys.executable, "-m", "cmbench.cli", "suite", str(suite), "--out", str(out),
                             "--no-report", "--workers", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 90
        while not unit_files(out):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        code, err = cli_inproc("suite", suite, "--out", out, "--no-report")
        still_running = proc.poll() is None
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert still_running, "the first run ended before the second tried: nothing was tested"
    assert_user_error(code, err, "another cmbench run is writing", str(out / "slow"))
    assert proc.returncode == 0, stderr
    ds = open_cube(out / "slow" / "e.nc")
    assert (ds["status"] == "ok").all() and ds.sizes["budget"] == 6
    assert len(unit_files(out)) == 12



def test_a_second_run_is_refused_while_the_first_draws_its_report(tmp_path, monkeypatch):
    """The report is drawn from the cubes on disk: a second run into the folder meanwhile
    would replace them under it (a report mixing two runs, stamped as the first's)."""
    import cmbench
    from cmbench.report import suite_step as report_outputs

    suite = slow_suite(tmp_path, delay=0.0, instances=1, budgets="[0.0, 0.1]")
    out = tmp_path / "out"
    seen = {}
    real = report_outputs.write_suite_reports

    def drawing(outputs, **kw):  # the first run's report step: a second run starts now
        seen["code"], seen["err"] = cli_inproc("suite", suite, "--out", out, "--no-report")
        return real(outputs, **kw)

    monkeypatch.setattr(report_outputs, "write_suite_reports", drawing)
    cmbench.run_suite(suite, out=out, report=True)
    assert_user_error(seen["code"], seen["err"], "another cmbench run is writing", str(out / "slow"))
    assert (out / "slow.pdf").is_file() and (out / "slow.html").is_file()
    assert cli_inproc("suite", suite, "--out", out, "--no-report")[0] == 0  # and let go of after it