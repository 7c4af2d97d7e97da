"""What a sweep pays before its first unit: the client's imports and suite loading, and each worker's.

```
python benchmarks/startup.py                # the paper suite with the README's plugin
python benchmarks/startup.py --suite smoke
```

Each measurement runs in a fresh interpreter (as a spawned worker is), three times; it
prints the fastest and which heavy libraries were imported. The client imports
`cmbench.cli` and loads the suite; a worker imports what a spawned worker unpickles first
(`cmbench.runner.executors`) and installs the suite's bundle (`cmbench.bundle.install`).
Always exits 0 (it is a report).
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
HEAVY = ("pandas", "pyarrow", "scipy", "xarray", "matplotlib", "dask")


def _client(suite: str, plugin: str, bundle: str) -> None:
    start = time.perf_counter()
    import cmbench.cli  # noqa: F401
    imported = time.perf_counter()
    from cmbench.runner import pack
    from cmbench.suite import load_suite

    loaded = load_suite(suite, [plugin])
    done = time.perf_counter()
    Path(bundle).write_bytes(pickle.dumps(pack(loaded, None)))
    print(json.dumps({"imports": imported - start, "load": done - imported,
                      "heavy": [m for m in HEAVY if m in sys.modules]}))


def _worker(bundle: str) -> None:
    start = time.perf_counter()
    import cmbench.runner.executors  # noqa: F401  what a spawned worker unpickles first
    imported = time.perf_counter()
    from cmbench.bundle import install

    install(pickle.loads(Path(bundle).read_bytes()))
    done = time.perf_counter()
    print(json.dumps({"imports": imported - start, "load": done - imported,
                      "heavy": [m for m in HEAVY if m in sys.modules]}))


def _run(*args: str) -> dict:
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                          env=dict(os.environ, MPLBACKEND="Agg"))
    if proc.returncode != 0:
        sys.exit(f"startup measurement failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in ("--as-client", "--as-worker"):
        (_client if sys.argv[1] == "--as-client" else _worker)(*sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suite", default="paper")
    args = parser.parse_args()
    plugin = str(HERE.parent / "tests" / "plugins" / "winsorized.py")
    with tempfile.TemporaryDirectory(prefix="cmbench-startup-") as tmp:
        bundle = str(Path(tmp) / "bundle.pickle")
        clients = [_run("--as-client", args.suite, plugin, bundle) for _ in range(3)]
        workers = [_run("--as-worker", bundle) for _ in range(3)]
    print(f"cmbench start-up, suite {args.suite} with --plugin winsorized.py "
          f"(load average {os.getloadavg()[0]:.1f}; fastest of 3 fresh interpreters)")
    for label, runs, what in (("client", clients, "import cmbench.cli, load_suite"),
                              ("worker", workers, "import cmbench.runner.executors, bundle.install")):
        best = min(runs, key=lambda r: r["imports"] + r["load"])
        print(f"{label}: {best['imports'] + best['load']:.2f} s ({what}: {best['imports']:.2f} + "
              f"{best['load']:.2f} s); heavy libraries imported: {', '.join(best['heavy']) or 'none'}")


if __name__ == "__main__":
    main()
