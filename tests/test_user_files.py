"""One function opens a user's data file.

`cmbench.data.open_user_file` accepts a regular file only, checks its size on
the open descriptor before reading, and every read or digest of a user's file
goes through it in bounded chunks: a device, a FIFO or a folder given as a data
file is a one-line error naming it, at load and under ``--dry-run``, instead of
reading until memory runs out or hanging.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import signal

import pytest

from cmbench import data as cmdata
from conftest import assert_user_error, cli, cli_inproc_result, write

SUITE = """\
name = "s"
seed = 3
[[experiment]]
name = "e"
datasets = [{{name = "csv", label = "table", path = "{path}"}}]
instances = 1
adversaries = ["hide-random"]
budgets = [0.1]
recoverers = ["none"]
estimators = ["mean"]
metrics = ["l2"]
"""


def _special(tmp_path, kind):
    if kind == "device":
        return "/dev/zero"
    if kind == "fifo":
        path = tmp_path / "pipe.csv"
        os.mkfifo(path)
        return str(path)
    path = tmp_path / "folder.csv"
    path.mkdir()
    return str(path)


NAMES = {"device": "a character device", "fifo": "a FIFO", "folder": "a folder"}


@contextlib.contextmanager
def _within(seconds: int):
    """Fail, instead of hanging, if the block has not ended after ``seconds`` (an open FIFO would block)."""
    def stop(signum, frame):
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("kind", ["device", "fifo", "folder"])
@pytest.mark.parametrize("dry", [True, False])
def test_a_device_fifo_or_folder_as_a_data_file_is_one_line_naming_it(tmp_path, kind, dry):
    path = _special(tmp_path, kind)
    suite = write(tmp_path / "s.toml", SUITE.format(path=path))
    args = ("suite", suite, "--out", tmp_path / "out", "--no-report", *(["--dry-run"] if dry else []))
    if kind == "device":  # /dev/zero read whole would fill the memory: in a process of its own
        proc = cli(*args, timeout=60)
    else:
        with _within(60):
            proc = cli_inproc_result(*args)
    assert_user_error(proc.returncode, proc.stderr, path, NAMES[kind], "not a regular file")
    assert not (tmp_path / "out" / "s" / "e.nc").exists()


def test_open_user_file_checks_kind_and_size_before_reading(tmp_path, monkeypatch):
    table = tmp_path / "t.csv"
    table.write_bytes(b"a,b\n" + b"1,2\n" * 1000)
    with cmdata.open_user_file(table, "data set t") as f:
        assert f.read(4) == b"a,b\n"
    assert cmdata.hash_user_file(table, "data set t") == hashlib.sha256(table.read_bytes()).hexdigest()
    monkeypatch.setenv("CMBENCH_MAX_FILE_GB", "1e-6")  # 1 kB
    with pytest.raises(cmdata.DataError, match=r"t\.csv is 4\.0 kB, above the limit of 1\.0 kB"):
        cmdata.hash_user_file(table, "data set t")
    with pytest.raises(cmdata.DataError, match="no such file"):
        cmdata.open_user_file(tmp_path / "absent.csv", "data set t")


def test_reading_a_file_stops_at_the_limit_even_if_it_grows(tmp_path, monkeypatch):
    """The limit holds for what is read, not only for the size stat() reported."""
    table = tmp_path / "t.csv"
    table.write_bytes(b"x" * 100)
    real = cmdata.open_user_file

    def growing(path, what, limit=None):
        f = real(path, what, limit)
        with open(path, "ab") as grow:
            grow.write(b"y" * 5000)
        return f

    monkeypatch.setattr(cmdata, "open_user_file", growing)
    with pytest.raises(cmdata.DataError, match="grew past the limit"):
        cmdata.hash_user_file(table, "data set t", limit=1000)
