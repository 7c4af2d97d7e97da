"""The benchmarks still run: each one's quick form, from a folder outside the source tree.

The benchmarks are run on demand, not by CI, so nothing else notices when a change
to cmbench breaks one (benchmarks/report.py called a function whose signature had
changed, and failed from a non-editable install, for days). Slow: ``pytest -m slow``.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.mark.slow
@pytest.mark.parametrize("script, args, expect", [
    ("report.py", ["--suite", "smoke"], "report step alone"),
    ("cache.py", ["--suite", "smoke", "--rounds", "1"], "cube with the plugin equals a cold run with it"),
    ("startup.py", ["--suite", "smoke"], "cmbench start-up"),
    ("matrices.py", ["--d", "10", "--rounds", "1"], "speed-up"),
    ("dask_trim.py", ["--d", "10", "--N", "1000", "--rounds", "1"], "MALLOC_TRIM_THRESHOLD_ unset"),
    ("sample_level.py", ["--filter-speed", "--dims", "20", "--per-dim", "600", "--repeats", "1"], "ratio default"),
    ("report_tail.py", ["--suite", "smoke", "--rounds", "1", "--processes"], "| loky worker LokyProcess-"),
    ("tests_cpu.py", ["--keep", "kept.jsonl", "--", str(BENCHMARKS.parent / "tests" / "test_nanstats.py"), "-n", "0"],
     "| tests/test_nanstats.py |"),
])
def test_benchmark_quick_form_runs(tmp_path: Path, script: str, args: list, expect: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CMBENCH_DATA_DIR"}
    proc = subprocess.run([sys.executable, str(BENCHMARKS / script), *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert expect in proc.stdout, proc.stdout[-3000:]
