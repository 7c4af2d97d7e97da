"""`cmbench check` runs plugin code as a suite does.

Each call goes through the runner's guarded call (a per-call timeout, any
BaseException caught) in a child process, so that a component that loops
forever, exits or is killed fails its check instead of hanging or silently
ending the check; a plugin that ends the interpreter while it is imported is a
one-line error naming its file, for `check` as for `suite` and `plugins`.
"""
from __future__ import annotations

import pytest

from cmbench.check import FAIL, PASS, run_checks
from conftest import assert_user_error, cli, cli_inproc, cli_inproc_result, write

ENDERS = """\
import os, signal, sys
import numpy as np
import cmbench

def spin(X, *, rng):
    while True:
        pass

def bye(X, *, rng):
    os._exit(7)

def killed(X, *, rng):
    os.kill(os.getpid(), signal.SIGKILL)

def leave(X, *, rng):
    sys.exit(4)

def fine(X, *, rng):
    return np.nanmean(np.nan_to_num(X), axis=0)

@cmbench.hookimpl
def register_estimators():
    return [cmbench.Estimator(n, f) for n, f in
            (("spin", spin), ("bye", bye), ("killed", killed), ("leave", leave), ("fine", fine))]
"""


@pytest.fixture
def enders(tmp_path):
    return write(tmp_path / "enders.py", ENDERS)


def test_components_that_end_their_process_fail_and_the_others_are_still_checked(enders):
    results = run_checks([str(enders)], timeout=2.5)  # the spinning one costs the whole timeout
    by_name: dict = {}
    for r in results:
        by_name.setdefault(r.name, []).append(r)
    assert set(by_name) == {"spin", "bye", "killed", "leave", "fine"}
    assert "ended its process (exit code 7) in bye()" in by_name["bye"][0].reason
    assert "SIGKILL" in by_name["killed"][0].reason
    assert "SystemExit(4)" in by_name["leave"][0].reason  # caught in the child, as in a cell
    assert all(r.status == PASS for r in by_name["fine"])
    assert all(len(rs) == len({r.check for r in rs}) for rs in by_name.values())  # each check once


def test_a_component_that_never_returns_fails_its_check_after_the_cli_timeout(enders):
    proc = cli_inproc_result("check", "--plugin", enders, "spin", "--timeout", "0.3")
    assert proc.returncode == 1, proc.stderr
    failed = [line for line in proc.stdout.splitlines() if line.startswith("FAIL ")]
    assert len(failed) == 1 and failed[0].startswith("FAIL estimator spin"), proc.stdout
    assert "did not return within --timeout 0.3 s" in failed[0]


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_check_refuses_a_timeout_that_is_not_a_positive_number(enders, value):
    code, err = cli_inproc("check", "--plugin", enders, "fine", "--timeout", value)
    assert_user_error(code, err, "--timeout")


@pytest.mark.parametrize("body, needle", [("import os; os._exit(0)\n", "ended the process while being imported"),
                                          ("import sys; sys.exit(3)\n", "sys.exit(3)")])
@pytest.mark.parametrize("command", ["check", "plugins", "suite"])
def test_a_plugin_that_ends_the_interpreter_at_import_is_a_one_line_error(tmp_path, body, needle, command):
    plugin = write(tmp_path / "p.py", body)
    args = {"check": ("check", "--plugin", plugin), "plugins": ("plugins", "--plugin", plugin),
            "suite": ("suite", "smoke", "--plugin", plugin, "--out", tmp_path / "out", "--no-report")}[command]
    if command == "check" and "_exit" in body:  # once through the real command line
        proc = cli(*args, timeout=120)
        code, err = proc.returncode, proc.stderr
    else:
        code, err = cli_inproc(*args)
    assert_user_error(code, err, str(plugin), needle)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("make, needle", [
    (lambda d: write(d / "notes.txt", "hello\n"), "not a Python file"),
    (lambda d: (d / "bin.py").write_bytes(b"\x7fELF\x00\x01\x02") and d / "bin.py", "not a text file"),
    (lambda d: (d / "dir.py").mkdir() or d / "dir.py", "is a folder"),
])
def test_a_plugin_that_is_not_a_python_file_is_named_with_why(tmp_path, make, needle):
    path = make(tmp_path)
    proc = cli_inproc_result("plugins", "--plugin", path.name, cwd=tmp_path)
    assert_user_error(proc.returncode, proc.stderr, path.name, needle)


def test_a_suite_naming_etc_passwd_as_a_plugin_is_one_line(tmp_path):
    suite = write(tmp_path / "s.toml", 'name = "s"\nplugins = ["/etc/passwd"]\n[[experiment]]\nname = "e"\n')
    code, err = cli_inproc("suite", suite, "--out", tmp_path / "out", "--dry-run")
    assert_user_error(code, err, "/etc/passwd", "not a Python file")


def test_a_folder_given_as_a_cube_says_it_is_a_folder(tmp_path):
    for command in ("report", "export"):
        out = "r.pdf" if command == "report" else "t.csv"
        code, err = cli_inproc(command, tmp_path, "-o", tmp_path / out)
        assert_user_error(code, err, str(tmp_path), "folder")
