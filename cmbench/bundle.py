"""A suite with everything a worker needs to rebuild it, and its rebuilding.

A worker of a cluster shares nothing with the client: not its working
directory, not its home folder, not its files. So the client packs a loaded
`Suite` into a `SuiteBundle`: the suite file's text, the source of every plugin
file, the bytes of every data file a data set names by ``path`` (up to
`SHIP_LIMIT` in all), and the name and version of every other plugin (built-ins,
entry points, dotted modules), which must be installed on the workers. Every
path in it is absolute, resolved on the client. A worker rebuilds the suite
with `install`, importing the plugin sources from memory under the client's
paths (so tracebacks and code digests are those of the client's files) and
writing data files into a private folder (`_data_folder`: in a Dask worker's own
space, else a temporary folder deleted once its process has ended, even killed).
"""
from __future__ import annotations

import atexit
import dataclasses
import hashlib
import os
import shutil
import sys
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from .errors import PluginError, UserError
from .plugins import is_file_spec
from .suite import Suite, load_suite, size_limits

SHIP_LIMIT = 64 * 2**20  # bytes of data files shipped with a suite; larger ones must be on the workers
MEMO = 4  # suites kept rebuilt per process (a long-lived worker serves several runs)


class WorkerSetupError(UserError):
    """A worker cannot rebuild the suite: a plugin or a data file it needs is not there."""


@dataclass(frozen=True)
class SuiteBundle:
    """A loaded suite as bytes and names: picklable, and readable without the client's disk.

    Parameters
    ----------
    path : the suite file's absolute path on the client (its name in the cube).
    text : the suite file's contents.
    plugins : the ``--plugin`` specs, a file as its absolute path on the client.
    files : ``(absolute path, contents)`` of the plugin files and the shipped data files.
    data : the shipped data files' paths (a subset of ``files``' paths).
    unshipped : ``(path, size)`` of data files beyond ``limit``: each worker must read them
        at that same path.
    limit : bytes of data files shipped at most.
    limits : the client's size limits of a suite (`cmbench.suite.size_limits`).
    installed : ``(plugin, version)`` of each plugin that is not a file: the workers must have
        the same.
    digest : SHA-256 of all of the above: the suite's identity in a worker's memo.
    """

    path: str
    text: bytes
    plugins: tuple
    files: tuple
    data: tuple
    unshipped: tuple
    installed: tuple
    digest: str
    limit: int = SHIP_LIMIT
    limits: tuple = ()


def bundle_suite(suite: Suite, limit: int = SHIP_LIMIT) -> SuiteBundle:
    """Pack a suite loaded on the client (see the module docstring).

    Raises
    ------
    UserError
        A plugin file or data file became unreadable since the suite was loaded.
    """
    path = str(suite.path)
    text = suite.text or _read(Path(path), "suite file")  # as loaded: a suite given as a dict has no file
    files: dict[str, bytes] = {}
    installed = []
    for source in suite.registry.plugins:
        if is_file_spec(source.plugin) and Path(source.plugin).is_absolute():
            files[source.plugin] = _read(Path(source.plugin), "plugin file")
        else:
            installed.append((source.plugin, source.version))
    data, unshipped, total = [], [], 0
    for exp in suite.experiments:
        for entry in exp.datasets:
            where = entry.params.get("path")
            if not isinstance(where, str) or where in files or not os.path.isfile(where):
                continue  # not a file on the client: the data set's own error says so on the worker
            size = os.path.getsize(where)
            if total + size > limit:
                unshipped.append((where, size))
                continue
            files[where] = _read(Path(where), f"data file of data set {entry.label!r}")
            data.append(where)
            total += size
    h = hashlib.sha256()
    for part in (path, text, repr(suite.plugins), repr(installed), repr(unshipped), repr(size_limits())):
        h.update(part if isinstance(part, bytes) else part.encode())
    for key in sorted(files):
        h.update(key.encode() + b"\0" + hashlib.sha256(files[key]).digest())
    return SuiteBundle(path=path, text=text, plugins=tuple(suite.plugins), files=tuple(sorted(files.items())),
                       data=tuple(data), unshipped=tuple(unshipped), installed=tuple(installed),
                       digest=h.hexdigest(), limit=limit, limits=tuple(size_limits()))


def pack(suite: Suite, scheduler: Optional[str]) -> SuiteBundle:
    """The suite as its jobs carry it, registered in this process (`register`).

    Data files travel only to a cluster of other machines: local processes and
    a local Dask cluster read them where the client does.

    Parameters
    ----------
    suite : Suite
        The loaded suite.
    scheduler : str or None
        The Dask scheduler's address, ``"local"`` or None (local processes).

    Returns
    -------
    SuiteBundle
    """
    packed = bundle_suite(suite, limit=SHIP_LIMIT if scheduler and scheduler != "local" else 0)
    register(suite, packed)
    return packed


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise UserError(f"{what} {path} cannot be read: {exc.strerror or exc}") from None


# ------------------------------------------------------------------ on the worker
_SUITES: "OrderedDict[str, tuple[Suite, Optional[str]]]" = OrderedDict()  # digest -> (suite, temp folder)
_LOCK = threading.Lock()


def register(suite: Suite, bundle: SuiteBundle) -> None:
    """Make ``suite`` the rebuilt form of ``bundle`` in this process (the client's own copy)."""
    with _LOCK:
        _remember(bundle.digest, suite, None)


def install(bundle: SuiteBundle) -> Suite:
    """The suite of ``bundle``, rebuilt once per process and kept for the next jobs.

    Raises
    ------
    WorkerSetupError
        A plugin that is not a file is missing here or has another version, a
        plugin fails to load, or a data file too large to ship is not readable here.
    """
    with _LOCK:
        if bundle.digest in _SUITES:
            _SUITES.move_to_end(bundle.digest)
            return _SUITES[bundle.digest][0]
        suite, folder = _rebuild(bundle)
        _remember(bundle.digest, suite, folder)
        return suite


def lookup(digest: str) -> Suite:
    """The suite installed (or registered) in this process under ``digest``."""
    with _LOCK:
        try:
            return _SUITES[digest][0]
        except KeyError:
            raise RuntimeError(f"suite {digest[:12]} is not installed in this process") from None


def check(bundle: SuiteBundle) -> str:
    """'' when this process can rebuild ``bundle``, else the reason (for a probe of every worker)."""
    try:
        install(bundle)
    except UserError as exc:
        return str(exc)
    return ""


def client_paths(bundle: SuiteBundle, result: Any) -> Any:
    """``result`` with each shipped data file's local copy named by its client path.

    A data set's error message names the file it read; the user knows it by
    the path on the client, and a cube must not depend on where a unit ran.
    """
    with _LOCK:
        folder = _SUITES.get(bundle.digest, (None, None))[1]
    if not folder:
        return result
    pairs = [(str(Path(folder) / str(i) / Path(where).name), where) for i, where in enumerate(bundle.data)]

    def fix(value):
        if isinstance(value, str):
            for local, client in pairs:
                value = value.replace(local, client)
            return value
        if isinstance(value, dict):
            return {k: fix(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(fix(v) for v in value)
        return value

    return fix(result)


def _remember(digest: str, suite: Suite, folder: Optional[str]) -> None:
    _SUITES[digest] = (suite, folder)
    _SUITES.move_to_end(digest)
    while len(_SUITES) > MEMO:
        _, (_, old) = _SUITES.popitem(last=False)
        if old:
            shutil.rmtree(old, ignore_errors=True)


def _rebuild(bundle: SuiteBundle) -> tuple[Suite, Optional[str]]:
    try:
        # the client checked the claims; units never read them
        suite = load_suite(bundle.path, bundle.plugins, files={**dict(bundle.files), bundle.path: bundle.text},
                           limits=bundle.limits or None, claims=False)
    except PluginError as exc:
        raise WorkerSetupError(f"{exc}{_INSTALL_HINT}") from None
    except UserError as exc:
        raise WorkerSetupError(str(exc)) from None
    _check_installed(bundle, suite)
    for where, size in bundle.unshipped:
        if not os.path.isfile(where):
            raise WorkerSetupError(
                f"data file {where} ({size:,} bytes) is beyond the {bundle.limit:,} bytes of data "
                "cmbench ships with a suite, and this worker cannot read it: put it where every "
                "worker reads it at the same path")
    folder = None
    if bundle.data:
        folder = _data_folder()
        local = {}
        files = dict(bundle.files)
        for i, where in enumerate(bundle.data):
            target = Path(folder) / str(i) / Path(where).name
            target.parent.mkdir()
            target.write_bytes(files[where])
            local[where] = str(target)
        suite = _localize(suite, local)
    return suite, folder


PREFIX = "cmbench-data-"


def _data_folder() -> str:
    """A new private folder for shipped data files, not left behind by a process that is killed.

    In a Dask worker it lies in the worker's local directory, which Dask deletes
    when the worker closes and purges when a killed worker's space is found
    stale. Elsewhere (a test, a worker outside a Dask task) it lies in the
    temporary folder, named after this process, and is removed at exit; folders
    of processes that no longer run are deleted before a new one is made, since
    a killed process runs no atexit (not on Windows, where probing a process by
    `os.kill` would end it).
    """
    dask = sys.modules.get("distributed")  # a Dask worker has it loaded; nobody else needs it
    if dask is not None:
        try:
            return tempfile.mkdtemp(prefix=PREFIX, dir=dask.get_worker().local_directory)
        except (ValueError, AttributeError, OSError):
            pass  # not in a Dask task, or no usable local directory
    _remove_orphans(tempfile.gettempdir())
    return tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-")


def _remove_orphans(parent: str) -> None:
    """Delete ``parent``'s data folders whose process (the pid in the name) has ended."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        pid = name[len(PREFIX):].split("-", 1)[0]
        if not name.startswith(PREFIX) or not pid.isdigit() or _alive(int(pid)):
            continue
        shutil.rmtree(os.path.join(parent, name), ignore_errors=True)


def _alive(pid: int) -> bool:
    if os.name == "nt":  # os.kill there terminates the process, whatever the signal
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process, or a platform without signal 0: leave it
    return True


_INSTALL_HINT = ("; a plugin given as a module name or installed as a distribution must be installed on "
                 "every worker (a plugin .py file is shipped with the jobs)")


def _check_installed(bundle: SuiteBundle, suite: Suite) -> None:
    here = {s.plugin: s.version for s in suite.registry.plugins}
    for plugin, version in bundle.installed:
        if plugin not in here:
            raise WorkerSetupError(f"plugin {plugin} {version} is not installed here{_INSTALL_HINT}")
        if here[plugin] != version:
            raise WorkerSetupError(f"plugin {plugin} is version {version} on the client and "
                                   f"{here[plugin] or 'unversioned'} here; install the same version on "
                                   "every worker")


def _localize(suite: Suite, local: dict) -> Suite:
    """The suite with each shipped data file's ``path`` parameter pointing at its local copy."""
    def entry(e):
        where = e.params.get("path")
        if isinstance(where, str) and where in local:
            return dataclasses.replace(e, params={**e.params, "path": local[where]})
        return e

    experiments = tuple(dataclasses.replace(exp, datasets=tuple(entry(d) for d in exp.datasets))
                        for exp in suite.experiments)
    return dataclasses.replace(suite, experiments=experiments)


@atexit.register
def _cleanup() -> None:
    for _, folder in _SUITES.values():
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
