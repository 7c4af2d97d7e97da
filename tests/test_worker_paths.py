"""Workers import the installed cmbench, whatever folder the command runs in.

README's first command runs `cmbench suite paper` inside the source checkout, whose
`cmbench/` folder is not the installed package (the built-in plugins live in
`plugins/`, installed as `cmbench.builtins`). A worker is started as
`python -m ...`, which puts the working folder first on its sys.path.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import good_suite


def test_workers_started_in_a_folder_holding_another_cmbench_import_the_installed_one(tmp_path):
    shadow = tmp_path / "cmbench"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("")  # imports, but holds none of cmbench's modules
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}
    script = Path(sys.executable).with_name("cmbench")
    suite = good_suite(tmp_path / "suites")  # two units: one for each worker
    proc = subprocess.run([str(script), "suite", str(suite), "--workers", "2", "--no-report",
                           "--out", str(tmp_path / "out")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "out" / "r" / "e.nc").is_file()
