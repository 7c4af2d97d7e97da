"""TOML suite file -> validated experiment grid.

A suite names components by the names plugins registered; every error names the
file, the key and the valid choices, so a typo never reaches the runner.
"""
from __future__ import annotations

import hashlib
import importlib.resources
import itertools
import os
import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import tomllib

from .components import Component
from .errors import PluginError, SuiteError, UserError
from .files import file_problem
from .kinds import CELL_KINDS, GRID_KEYS, LISTED, METHOD_KINDS, SINGULAR
from .plugins import (RESERVED_METRIC_NAMES, Registry, choices_hint, did_you_mean, domain_problem,
                      is_file_spec, load_plugins, plugin_file_problem, plugin_list, ship, shipped_key)

#: the largest suite seed: the cube stores it as a netCDF attribute of type int64
MAX_SEED = 2 ** 63 - 1
SUITE_KEYS = {"name": str, "description": str, "seed": int, "plugins": list, "experiment": list,
              "theory_figures": list, "cache_size": (str, int)}
REQUIRED_SUITE_KEYS = ("name", "experiment")
#: an experiment's keys: its grid (a list of each kind along the cube, its instances and budgets),
#: its other kinds' lists (metrics), then the rest
EXPERIMENT_KEYS = {
    "name": str, "description": str,
    **{key: {"instances": (int, list), "budgets": (list, dict)}.get(key, list) for key in GRID_KEYS},
    **{kind.suite_key: list for kind in LISTED if kind.dimension is None},
    "methods": dict, "claim": list, "report": dict,
}
#: keys of an experiment's ``[experiment.report]`` table
REPORT_KEYS = {"x": str, "band": str, "yscale": str}
#: what ``[experiment.report] band`` may say: the shaded band around a curve (`cmbench.report.load.BANDS`)
REPORT_BANDS = ("auto", "sd", "ci95", "minmax", "none")
#: what ``[experiment.report] yscale`` may say: the curve pages' y axis (`cmbench.report.content.figures`)
REPORT_YSCALES = ("auto", "log", "linear")
REQUIRED_EXPERIMENT_KEYS = ("name", *(key for key in GRID_KEYS if key != "instances"))  # one instance by default
#: metrics every cube holds (reports read them), computed whether listed or not
ALWAYS_METRICS = ("l2", "mahalanobis")
#: the cube dimension of each kind of component a suite lists (its parameters are coordinates along it)
PARAM_DIMS = {kind.suite_key: kind.dimension for kind in CELL_KINDS}

#: Suite, experiment and component labels: they name files and folders (``<out>/<suite>/<experiment>.nc``),
#: so a label is a plain file name that is the same on every file system: no separator, no leading dot
#: (hence never ``.`` or ``..``), short enough for temporaries derived from it to fit ``NAME_MAX``.
LABEL_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
MAX_LABEL = 64

#: Size guard, checked when the suite loads, before anything is allocated. The environment
#: variables raise (or lower) the limits for one run.
ENV_MAX_CELLS = "CMBENCH_MAX_CELLS"
ENV_MAX_GB = "CMBENCH_MAX_GB"
DEFAULT_MAX_CELLS = 5_000_000
DEFAULT_MAX_GB = 4.0


class _Missing:
    """The value of a parameter a component does not have (NaN or "" in a cube)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()


@dataclass(frozen=True)
class Entry:
    """A component chosen in a suite: its label in the cube and its merged params.

    Attributes
    ----------
    label : str
        Its coordinate in the cube (the component's name unless the suite gives one).
    decl : Component
        The declaration.
    params : dict
        The declaration's defaults updated with the suite's overrides.
    source : str
        The declaring plugin's name and version.
    fingerprint : str
        Digest of the plugin's file (or its version) and of a data file it
        reads: an edited file never serves cached results.
    given : tuple of str
        The parameters the suite sets for this entry (or a grid varies), in
        the suite's order: they become coordinates of the cube.
    """

    label: str
    decl: Component
    params: dict
    source: str = ""
    fingerprint: str = ""
    given: tuple = ()

    @property
    def name(self) -> str:
        return self.decl.name

    def spec(self) -> dict:
        """What determines this entry's results (for cache keys and provenance)."""
        return {"label": self.label, "name": self.decl.name, "params": self.params,
                "fingerprint": self.fingerprint}


@dataclass(frozen=True)
class Experiment:
    """One ``[[experiment]]`` table, resolved: the grid the runner sweeps.

    Attributes
    ----------
    name, description : str
    datasets, instances, adversaries, budgets, recoverers, estimators : tuple
        The six dimensions of the cube (`Entry` items, instance numbers, budgets).
    metrics : tuple of str
        Labels of the metrics the suite lists (what the report plots).
    methods : dict
        Method label -> (recoverer label, estimator label), e.g. the paper's
        "Two-Step-M".
    claims : tuple of dict
        Normalized claims (`cmbench.verdicts.parse_claims`).
    metric_entries : tuple of Entry
        Every metric computed: the listed ones, then those always computed.
    report_x : str
        ``"<kind>.<param>"`` (``"dataset.N"``) from ``[experiment.report] x``: the
        numeric parameter the report draws error against; empty for the budget.
    report_band, report_yscale : str
        ``[experiment.report] band`` (one of `REPORT_BANDS`) and ``yscale`` (one of
        `REPORT_YSCALES`); empty when the suite leaves the report's rule ("auto").
    """

    name: str
    description: str
    datasets: tuple
    instances: tuple
    adversaries: tuple
    budgets: tuple
    recoverers: tuple
    estimators: tuple
    metrics: tuple
    methods: dict
    claims: tuple = ()
    metric_entries: tuple = ()
    report_x: str = ""
    report_band: str = ""
    report_yscale: str = ""

    def parameters(self) -> dict[str, dict[str, list]]:
        """The component parameters that are data: ``{dim: {param: [value per entry]}}``.

        Every parameter the suite sets (or a grid varies) on some entry of a
        list, and the one ``report_x`` names, with each entry's value (its
        default where the suite does not set it); `MISSING` where the entry's
        component has no such parameter. `cmbench.cube.build` makes them the
        coordinates ``<dim>_<param>``.
        """
        x_dim, _, x_param = self.report_x.partition(".")
        out = {}
        for kind, dim in PARAM_DIMS.items():
            entries = getattr(self, kind)
            keys = dict.fromkeys(k for e in entries for k in e.given)
            if x_dim == dim:
                keys[x_param] = None
            out[dim] = {k: [e.params.get(k, MISSING) for e in entries] for k in keys}
        return out


@dataclass(frozen=True)
class Suite:
    """A suite file, read and validated against the loaded plugins.

    Attributes
    ----------
    name, description : str
    seed : int
        The root of every unit's random stream.
    path : Path
        The suite file.
    hash : str
        Digest of the suite file's bytes (recorded in the cubes).
    plugins : tuple of str
        Plugin specs given on top of the suite file (``--plugin``); rebuilding
        the suite elsewhere needs them.
    experiments : tuple of Experiment
    registry : cmbench.plugins.Registry
        The plugins the suite was validated against.
    theory_figures : tuple of str
        Worked examples of the paper the report draws (`cmbench.theory.EXAMPLES`).
    cache_size : str, int or None
        The stage cache's cap (``"2GB"``, bytes); checked by the runner.
    """

    name: str
    description: str
    seed: int
    path: Path
    hash: str
    plugins: tuple
    experiments: tuple
    registry: Registry = field(repr=False, compare=False, default=None)
    theory_figures: tuple = ()
    cache_size: Any = None
    #: the suite file's bytes as read (a suite given as a dict: its TOML): what workers rebuild it from
    text: bytes = field(default=b"", repr=False, compare=False)


def shipped_suites() -> list[str]:
    """Names of the suites shipped in the package (``suites/*.toml``).

    Returns
    -------
    list of str
        Sorted, without the ``.toml`` suffix.
    """
    root = importlib.resources.files("cmbench.suites")
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".toml"))


def resolve_suite_path(name_or_path: str | Path) -> Path:
    """The suite file named by ``name_or_path``: a shipped suite's name or a path.

    A path (`cmbench.plugins.is_file_spec` with suffix ``.toml``, or an
    existing file) is taken as given; anything else is a shipped suite's name.
    A bare name that is a folder here (a researcher's ``paper/``) is the
    shipped suite of that name when there is one, else an error naming the folder.

    Parameters
    ----------
    name_or_path : str or Path
        ``"paper"``, or a path to a TOML file.

    Returns
    -------
    Path
        The suite file (absolute for a path).

    Raises
    ------
    SuiteError
        The file does not exist, or no shipped suite has that name (the
        message suggests the closest).
    """
    text = str(name_or_path)
    path = Path(text)
    spec = is_file_spec(text, ".toml")
    candidate = importlib.resources.files("cmbench.suites") / f"{text}.toml"
    shipped = not spec and candidate.is_file()
    if spec or path.is_file() or (path.exists() and not shipped):
        problem = file_problem(path)  # a folder, a FIFO or a device is named as what it is
        if problem:
            raise SuiteError(f"suite file {path} {problem}")
        return path.resolve()
    if shipped:
        return Path(str(candidate))
    raise SuiteError(f"unknown suite {text!r}; {choices_hint(text, shipped_suites())} "
                     "(or give a path to a .toml file)")


def load_suite(name_or_path: "str | os.PathLike | Mapping[str, Any] | Suite", plugins: Sequence = (), *,
               files: Mapping[str, bytes] | None = None, limits: Optional[tuple] = None,
               claims: bool = True) -> Suite:
    """Read, resolve and validate a suite file against the loaded plugins.

    Every user mistake is found here, before anything runs: unknown keys and
    names (with a close-match suggestion), parameters outside their declared
    domain, a grid or data set too large.

    Parameters
    ----------
    name_or_path : str, path, dict or Suite
        A shipped suite's name or a suite file (`resolve_suite_path`); a suite's
        TOML text (a string holding a line break); a dict of the same keys
        (written out as TOML, `to_toml`); or a loaded `Suite` (returned as it
        is, or loaded again from its text with ``plugins`` added). A suite
        given as text or a dict is named ``<toml>`` or ``<dict>`` in messages
        and resolves relative paths against the working directory.
    plugins : sequence, default ()
        Extra plugins (``--plugin``): paths and module names, or (from Python)
        module objects and objects with hook implementations, shipped to workers
        by value (`cmbench.plugins.ship`). A plugin file given relative to the
        working directory is resolved here, so the suite names it by its
        absolute path wherever it is rebuilt.
    files : mapping of str to bytes, optional
        Contents by absolute path on the client: a suite shipped to a worker
        (see `cmbench.bundle`) is read from it (the suite file, plugin files,
        data files' digests) instead of the worker's disk.
    limits : tuple, optional
        The client's `size_limits`; default: this machine's.
    claims : bool, default True
        Parse and check the experiments' claims. A worker that rebuilds a suite
        the client has checked passes False: units never read claims, and
        their parser needs xarray, which a worker otherwise does not import.
        Its experiments then have no claims.

    Returns
    -------
    Suite

    Raises
    ------
    SuiteError
        The file cannot be read or is invalid; the message names the file and key.
    PluginError
        A plugin cannot be loaded; the message names the suite file and plugin.
    """
    shipped = files or {}
    if isinstance(name_or_path, Suite):
        if not plugins:
            return name_or_path
        plugins = (*name_or_path.plugins, *plugins)
        shipped = {**shipped, str(name_or_path.path): name_or_path.text or name_or_path.path.read_bytes()}
        name_or_path = str(name_or_path.path)
    path, raw = _suite_source(name_or_path, shipped)
    plugins = tuple(_plugin_spec(p, shipped) for p in plugin_list(plugins))
    for p in plugins:  # the command line's, not the suite file's: said before the suite's name is put on errors
        if isinstance(p, str) and is_file_spec(p) and p not in shipped and plugin_file_problem(Path(p)):
            raise PluginError(f"plugin file {p} {plugin_file_problem(Path(p))} (given with --plugin)")
    doc = _parse_toml(path, raw)
    ctx = _Ctx(path, files=shipped)
    _check_keys(ctx, doc, SUITE_KEYS, REQUIRED_SUITE_KEYS, "the suite")
    check_label(ctx.at("name"), doc["name"], "suite name")
    limits = tuple(limits) if limits else size_limits()
    suite_plugins = [_resolve_plugin_path(ctx, p, i) for i, p in enumerate(doc.get("plugins", []))]
    specs = plugins + tuple(suite_plugins)
    try:
        registry = load_plugins(specs, files=shipped)
    except PluginError as exc:
        raise PluginError(f"{shown(path)}: {exc}") from None
    experiments = doc["experiment"]
    if not experiments:
        raise SuiteError(f"{shown(path)}: key 'experiment': at least one [[experiment]] table is needed")
    contenders = _contenders(registry, plugins)
    parsed = []
    for i, table in enumerate(experiments):
        if not isinstance(table, dict):
            raise SuiteError(f"{shown(path)}: key 'experiment' must be an array of tables ([[experiment]])")
        parsed.append(_experiment(ctx.at(f"experiment[{i}]"), table, registry, contenders, limits, claims))
    names = [e.name for e in parsed]
    _no_duplicates(ctx, "experiment.name", names)
    _no_duplicates(ctx, "experiment.name (ignoring case, as some file systems do)",
                   [n.casefold() for n in names])
    check_size(path, parsed, limits)
    seed = doc.get("seed", 0)
    if not 0 <= seed <= MAX_SEED:
        raise SuiteError(f"{shown(path)}: key 'seed': must be an integer from 0 to {MAX_SEED} "
                         f"(2**63 - 1, the largest the cube's netCDF attribute holds), got {seed}")
    return Suite(
        name=doc["name"], description=doc.get("description", ""), seed=seed, path=path,
        hash=hashlib.sha256(raw).hexdigest(), plugins=plugins, experiments=tuple(parsed),
        registry=registry, theory_figures=_theory_figures(ctx, doc.get("theory_figures", [])),
        cache_size=doc.get("cache_size"), text=raw,
    )


#: the names a suite given as a dict or as TOML text has in messages (in the working directory,
#: against which its relative paths resolve)
DICT_NAME, TEXT_NAME = "<dict>", "<toml>"


def shown(path: Path) -> str:
    """A suite's name in messages: its path, or ``<dict>`` / ``<toml>`` alone for a suite given as a
    dict or as text (its stand-in path in the working folder only resolves its relative paths)."""
    return path.name if path.name in (DICT_NAME, TEXT_NAME) else str(path)


def is_toml_text(text: str) -> bool:
    """Whether a string given as a suite is its TOML text rather than a name or path.

    Names and paths hold no line break; a one-line suite is TOML when it has
    an ``=`` and is neither a ``.toml`` path nor an existing file.
    """
    return "\n" in text or ("=" in text and not is_file_spec(text, ".toml") and not Path(text).exists())


def _suite_source(given: Any, shipped: Mapping[str, bytes]) -> tuple[Path, bytes]:
    """The suite's name (its path, or a stand-in) and bytes, from what `load_suite` was given."""
    if isinstance(given, Mapping):
        return Path.cwd() / DICT_NAME, to_toml(given).encode("utf-8")
    if not isinstance(given, (str, os.PathLike)):
        raise SuiteError(f"a suite is a shipped suite's name, a path, TOML text, a dict or a Suite; "
                         f"got {type(given).__name__}")
    if str(given) in shipped:
        return Path(str(given)), shipped[str(given)]
    if isinstance(given, str) and is_toml_text(given):
        return Path.cwd() / TEXT_NAME, given.encode("utf-8")
    path = resolve_suite_path(given)
    return path, path.read_bytes()


def _plugin_spec(p: Any, shipped: Mapping[str, bytes]) -> Any:
    """A plugin as a suite keeps it: a file as its absolute path, a module name as it is,
    an object (and ``"__main__"``, the notebook's or script's own module) as a
    `cmbench.plugins.ShippedPlugin`."""
    if isinstance(p, str) and p == "__main__" and "__main__" in sys.modules:
        p = sys.modules["__main__"]  # a worker's own __main__ is not this one (a notebook's): by value
    if isinstance(p, (str, os.PathLike)):
        return str(Path(p).resolve()) if is_file_spec(p) and str(p) not in shipped else str(p)
    try:
        return ship(p)
    except PluginError as exc:
        raise PluginError(f"{exc} (given with plugins=)") from None


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def to_toml(doc: Mapping[str, Any]) -> str:
    """A suite given as a dict, as TOML text that `tomllib` reads back to the same dict.

    Top-level arrays of tables (``experiment``) become ``[[experiment]]``
    sections; every other table or array is written inline. Tuples are arrays.

    Raises
    ------
    SuiteError
        A key that is not a string, or a value TOML cannot hold (None, an
        object); the message names the key (``<dict>: key 'experiment[0].seed'``).
    """
    _no_cycle(doc, "the suite")
    lines: list[str] = []
    sections = []
    for key, value in doc.items():
        if (isinstance(value, (list, tuple)) and value
                and all(isinstance(v, Mapping) for v in value)):
            sections.append((key, value))
        else:
            lines.append(f"{_toml_key(key, key)} = {_toml_value(value, str(key))}")
    for key, tables in sections:
        for i, table in enumerate(tables):
            lines.append(f"\n[[{_toml_key(key, key)}]]")
            for k, v in table.items():
                lines.append(f"{_toml_key(k, f'{key}[{i}].{k}')} = {_toml_value(v, f'{key}[{i}].{k}')}")
    return "\n".join(lines) + "\n"


def _no_cycle(value: Any, where: str, path: tuple = ()) -> None:
    """Refuse a dict or list that contains itself (TOML cannot hold it; writing it would never end)."""
    if isinstance(value, (Mapping, list, tuple)):
        if id(value) in path:
            raise SuiteError(f"{DICT_NAME}: key {where!r}: contains itself; a suite is a tree of "
                             "tables and arrays")
        items = value.items() if isinstance(value, Mapping) else enumerate(value)
        for k, v in items:
            _no_cycle(v, f"{where}[{k}]" if not isinstance(value, Mapping) else
                      (str(k) if where == "the suite" else f"{where}.{k}"), (*path, id(value)))


def _toml_key(key: Any, where: str) -> str:
    if not isinstance(key, str):
        raise SuiteError(f"{DICT_NAME}: key {where!r}: a key must be a string, got {key!r}")
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key, ensure_ascii=False)


def _toml_value(value: Any, where: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(float(value))
    if isinstance(value, (str, os.PathLike)):
        return json.dumps(os.fspath(value), ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v, f"{where}[{i}]") for i, v in enumerate(value)) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_toml_key(k, f'{where}.{k}')} = {_toml_value(v, f'{where}.{k}')}"
                               for k, v in value.items()) + "}"
    import numpy as np

    if isinstance(value, np.generic):  # a NumPy scalar (np.float64(0.1), np.int64(3), np.True_): its Python value
        return _toml_value(value.item(), where)
    raise SuiteError(f"{DICT_NAME}: key {where!r}: {value!r} ({type(value).__name__}) is not a TOML value "
                     "(strings, numbers, booleans, arrays and tables)")


def _theory_figures(ctx: "_Ctx", names: list) -> tuple:
    """The paper's worked examples a suite's report shows, by their figure labels."""
    from .theory import EXAMPLES

    for i, name in enumerate(names):
        if name not in EXAMPLES:
            raise ctx.at(f"theory_figures[{i}]").error(
                f"unknown figure {name!r}; {choices_hint(str(name), EXAMPLES)}")
    _no_duplicates(ctx.at("theory_figures"), "figure", names)
    return tuple(names)


class _Ctx:
    """Where we are in the file, for error messages."""

    def __init__(self, path: Path, where: str = "", files: Mapping[str, bytes] | None = None) -> None:
        self.path, self.where, self.files = path, where, files or {}

    def at(self, key: str) -> "_Ctx":
        # an index joins its array without a dot: budgets[1], not budgets.[1]
        joined = f"{self.where}{key}" if key.startswith("[") else f"{self.where}.{key}"
        return _Ctx(self.path, joined if self.where else key, self.files)

    def error(self, msg: str) -> SuiteError:
        where = f"key '{self.where}': " if self.where else ""
        return SuiteError(f"{shown(self.path)}: {where}{msg}")


def _parse_toml(path: Path, raw: bytes) -> dict:
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise SuiteError(f"{shown(path)}:{line}:{col}: not UTF-8 text (byte {raw[exc.start]:#04x}); "
                         "save the file as UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        msg = (getattr(exc, "msg", None) or str(exc)).split(" (at ")[0]
        raise SuiteError(f"{shown(path)}:{_toml_location(raw, exc)}: invalid TOML: {msg}") from None


def _toml_location(raw: bytes, exc: Exception) -> str:
    """'line:col' of a TOML error; tomllib omits it at the end of the document."""
    line, col = getattr(exc, "lineno", None), getattr(exc, "colno", None)
    if line is None:
        m = re.search(r"line (\d+), column (\d+)", str(exc))
        if m:
            line, col = int(m.group(1)), int(m.group(2))
    if line is None:  # "at end of document": point at the last line
        lines = raw.decode("utf-8", "replace").splitlines() or [""]
        line, col = len(lines), len(lines[-1]) + 1
    return f"{line}:{col}"


def _type_name(t) -> str:
    names = {str: "a string", int: "an integer", list: "an array", dict: "a table"}
    return " or ".join(names[x] for x in t) if isinstance(t, tuple) else names[t]


def _check_keys(ctx: _Ctx, table: dict, allowed: dict, required: Sequence, what: str) -> None:
    for key in table:
        if key not in allowed:
            raise ctx.at(key).error(f"unknown key in {what}; {choices_hint(key, allowed)}")
    for key in required:
        if key not in table:
            raise ctx.error(f"missing required key {key!r} in {what}")
    for key, value in table.items():
        expected = allowed[key]
        if isinstance(value, bool) or not isinstance(value, expected):
            raise ctx.at(key).error(f"expected {_type_name(expected)}, got {type(value).__name__} {value!r}")


def _resolve_plugin_path(ctx: _Ctx, spec: Any, i: int) -> str:
    if not isinstance(spec, str):
        raise ctx.at(f"plugins[{i}]").error(f"expected a path or module name, got {spec!r}")
    if is_file_spec(spec):
        path = Path(spec)
        path = path if path.is_absolute() else ctx.path.parent / path
        shipped = shipped_key(path, ctx.files)
        if shipped:
            return shipped
        problem = plugin_file_problem(path)
        if problem:
            raise ctx.at(f"plugins[{i}]").error(f"plugin file {path} {problem}")
        return str(path.resolve())
    return spec


def _contenders(registry: Registry, cli_plugins: Sequence) -> dict:
    """Estimators and recoverers declared by ``--plugin`` plugins, by kind.

    They join every experiment of the suite being run, so that
    ``cmbench suite paper --plugin mine.py`` benchmarks the newcomer against the
    suite's methods without editing the suite.
    """
    # a plugin object (`cmbench.plugins.ShippedPlugin`) by its str, a file by its absolute path
    labels = {str(Path(s).resolve()) if isinstance(s, str) and is_file_spec(s) else str(s) for s in cli_plugins}
    return {kind: [name for name in registry.kind(kind) if registry.source(kind, name).plugin in labels]
            for kind in (k.plural for k in METHOD_KINDS)}


def _experiment(ctx: _Ctx, table: dict, registry: Registry, contenders: dict,
                limits: tuple = (DEFAULT_MAX_CELLS, DEFAULT_MAX_GB), with_claims: bool = True) -> Experiment:
    _check_keys(ctx, table, EXPERIMENT_KEYS, REQUIRED_EXPERIMENT_KEYS, "an [[experiment]] table")
    check_label(ctx.at("name"), table["name"], "experiment name")
    lists, listed = {}, {}  # key -> its entries; the labels the suite lists (then contenders, always-metrics)
    for kind in (k.suite_key for k in LISTED):
        entries = [e for i, item in enumerate(table.get(kind, ["l2"]))
                   for e in _entries(ctx.at(f"{kind}[{i}]"), kind, item, registry)]
        if not entries:
            what = "metric" if kind == "metrics" else "component"
            raise ctx.at(kind).error(f"empty list: name at least one {what}")
        listed[kind] = tuple(e.label for e in entries)
        _no_duplicates(ctx.at(kind), "label", listed[kind])
        more = ALWAYS_METRICS if kind == "metrics" else contenders.get(kind, ())
        lists[kind] = (*entries, *(_entry(ctx, kind, name, registry) for name in more if name not in listed[kind]))
    budgets = _budgets(ctx.at("budgets"), table["budgets"], limits[0])
    instances = _instances(ctx.at("instances"), table.get("instances", 1), limits[0])
    for kind, entries in lists.items():
        for entry in entries:
            _check_budget_bound(ctx.at(kind), kind, entry, budgets)
    metrics, metric_entries = listed["metrics"], lists["metrics"]
    methods = _methods(ctx.at("methods"), table.get("methods", {}), lists)
    claims = _claims(ctx, table.get("claim", []), methods, lists, metrics) if with_claims else ()
    if methods:
        methods = _contender_methods(methods, lists, contenders)
    report_x = _report_x(ctx.at("report"), table.get("report", {}), lists)
    report = table.get("report", {})
    band, yscale = (_report_choice(ctx.at("report"), report, key, allowed)
                    for key, allowed in (("band", REPORT_BANDS), ("yscale", REPORT_YSCALES)))
    return Experiment(
        name=table["name"], description=table.get("description", ""),
        **{kind.entries: lists[kind.suite_key] for kind in CELL_KINDS}, instances=instances,
        budgets=budgets, metrics=metrics, methods=methods, claims=claims, metric_entries=tuple(metric_entries),
        report_x=report_x, report_band=band, report_yscale=yscale,
    )


def _report_x(ctx: _Ctx, table: dict, lists: dict) -> str:
    """``[experiment.report] x = "dataset.N"``: a numeric parameter of this experiment's components.

    Returns the ``"<kind>.<param>"`` string ('' when not given), checked: the
    kind is one of the cube's component dims, some entry of that kind has the
    parameter, and every value it takes is a number.
    """
    _check_keys(ctx, table, REPORT_KEYS, (), "the [experiment.report] table")
    if "x" not in table:
        return ""
    x = table["x"]
    here = ctx.at("x")
    kinds = {dim: kind for kind, dim in PARAM_DIMS.items()}
    dim, dot, param = x.partition(".")
    if not dot or not param or dim not in kinds:
        hint = f" ({did_you_mean(dim, kinds)})" if dim and dim not in kinds and did_you_mean(dim, kinds) else ""
        raise here.error(f"expected \"<kind>.<parameter>\" with kind one of {', '.join(kinds)} "
                         f"(e.g. \"dataset.N\"), got {x!r}{hint}")
    entries = lists[kinds[dim]]
    having = [e for e in entries if param in e.params]
    if not having:
        known = sorted({k for e in entries for k in e.params})
        raise here.error(f"no {dim} of this experiment has a parameter {param!r}; "
                         f"{choices_hint(param, known)}")
    for e in having:
        value = e.params[param]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise here.error(f"{dim} {e.label!r}: parameter {param!r} is {value!r}, not a number: "
                             "the report's x axis must be numeric")
    return x


def _report_choice(ctx: _Ctx, table: dict, key: str, allowed: Sequence[str]) -> str:
    """``[experiment.report] <key>``, one of ``allowed`` ('' when not given)."""
    if key not in table:
        return ""
    value = table[key]
    if value not in allowed:
        raise ctx.at(key).error(f"expected one of {', '.join(map(repr, allowed))}, got {value!r}")
    return value


def _claims(ctx: _Ctx, tables: list, methods: dict, lists: dict, metrics: tuple) -> tuple:
    """The experiment's ``[[experiment.claim]]`` tables, validated (see `cmbench.verdicts`)."""
    from . import theory, verdicts as claims

    labels = list(methods) or [f"{r.label}+{e.label}" for r in lists["recoverers"]
                               for e in lists["estimators"]]
    return claims.parse_claims(
        tables, error=lambda key, msg: ctx.at(key).error(msg), methods=labels,
        datasets=[d.label for d in lists["datasets"]], metrics=list(metrics),
        adversaries=[a.label for a in lists["adversaries"]],
        threshold_keys=list(theory.THRESHOLD_LABELS))



def _entries(ctx: _Ctx, kind: str, item: Any, registry: Registry) -> list[Entry]:
    """One suite list item as entries: several when a parameter is given a list of values (a grid).

    ``{name = "trimmed-mean", proportion = [0.05, 0.1]}`` gives the entries
    ``trimmed-mean.proportion_0.05`` and ``trimmed-mean.proportion_0.1`` (labels
    are plain file names); two list-valued parameters give their cross product
    (``filter.eps_0.1.C_2``, ...). A list is a grid for a
    parameter whose default is a single value (or None with declared choices
    or range, or a recoverer's ``rank``); for a parameter whose default is
    itself a list (``exclude = ["a", "b"]``) it is one value.
    """
    name = item.get("name") if isinstance(item, dict) else None
    decl = registry.kind(kind).get(name) if isinstance(name, str) else None
    axes = [(key, value) for key, value in (item.items() if decl else ())  # else _entry's error names it
            if key not in ("name", "label") and isinstance(value, list) and _is_grid(kind, decl, key)]
    if not axes:
        return [_entry(ctx, kind, item, registry)]
    for key, values in axes:
        if not values:
            raise ctx.at(key).error("an empty list of values; give at least one")
    base = item.get("label", item["name"])
    entries = []
    for combo in itertools.product(*(values for _, values in axes)):
        point = dict(zip((key for key, _ in axes), combo))
        label = base + "".join(f".{k}_{_show(v)}" for k, v in point.items())
        entries.append(_entry(ctx, kind, {**item, **point, "label": label}, registry))
    return entries


#: A parameter given this value in a suite receives the cell's budget (`bind`), e.g.
#: ``{ name = "filter", eps = "@budget" }``: the filter runs with eps equal to the budget.
BUDGET = "@budget"


def bind(params: Mapping[str, Any], budget: float) -> dict:
    """``params`` with every `BUDGET` value replaced by ``budget`` (the runner's call)."""
    return {k: (budget if isinstance(v, str) and v == BUDGET else v) for k, v in params.items()}


def _check_budget_param(ctx: _Ctx, kind: str, name: str, default: Any) -> None:
    """A parameter bound to the budget must take a number: a float (or None) by default."""
    if kind == "datasets":
        raise ctx.error(f"data set {name!r}: {BUDGET!r} binds a parameter to the cell's budget, but a "
                        "data set is loaded once for every budget; give a value")
    if default is not None and (isinstance(default, bool) or not isinstance(default, float)):
        raise ctx.error(f"{SINGULAR[kind]} {name!r}: {BUDGET!r} gives a budget (a float), but the default "
                        f"is {default!r}")


def _check_budget_bound(ctx: _Ctx, kind: str, entry: Entry, budgets: Sequence[float]) -> None:
    """Every budget of the experiment must be a value the component allows where it is bound."""
    for key, value in entry.params.items():
        if not (isinstance(value, str) and value == BUDGET):
            continue
        for budget in budgets:
            problem = domain_problem(entry.decl, key, float(budget))
            if problem:
                raise ctx.error(f"{SINGULAR[kind]} {entry.label!r}: {key} = {BUDGET!r} at budget "
                                f"{budget:g}: {problem}; narrow the budgets or bind a value")


def _is_grid(kind: str, decl: Component, key: str) -> bool:
    if key not in decl.params:  # a recoverer's rank; else the entry's own check names the unknown parameter
        return True
    default = decl.params[key]
    if default is None:
        return key in decl.choices or key in decl.ranges
    return isinstance(default, (bool, int, float, str))


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value).lower() if isinstance(value, bool) else str(value)


def _entry(ctx: _Ctx, kind: str, item: Any, registry: Registry) -> Entry:
    if isinstance(item, str):
        name, label, overrides = item, item, {}
    elif isinstance(item, dict):
        if "name" not in item or not isinstance(item["name"], str):
            raise ctx.error("an inline table needs a string 'name', e.g. {name = \"ithsvd\", rank = 5}")
        overrides = {k: v for k, v in item.items() if k not in ("name", "label")}
        name = item["name"]
        label = item.get("label", name)
        if not isinstance(label, str) or not label:
            raise ctx.error(f"'label' must be a non-empty string, got {label!r}")
    else:
        raise ctx.error(f"expected a component name or an inline table, got {item!r}")
    if label is name:
        check_label(ctx, label, f"{SINGULAR[kind]} name (used as its label)")
    else:
        check_label(ctx.at("label"), label, "label")
    table = registry.kind(kind)
    if name not in table:
        raise ctx.error(f"unknown {SINGULAR[kind]} {name!r}; {choices_hint(name, table)}")
    decl = table[name]
    for key in overrides:
        if key not in decl.params and not (key == "rank" and getattr(decl, "rank_hint", False)):
            valid = ", ".join(sorted(decl.params)) or "none"
            hint = did_you_mean(key, decl.params)
            raise ctx.at(key).error(f"{SINGULAR[kind]} {name!r} has no parameter {key!r}; "
                                    f"its parameters: {valid}" + (f" ({hint})" if hint else ""))
    for key, value in overrides.items():
        if value == BUDGET:  # checked against the experiment's budgets (`_check_budget_bound`)
            _check_budget_param(ctx.at(key), kind, name, decl.params.get(key))
            continue
        _check_param_type(ctx.at(key), decl.params.get(key), value)
        problem = domain_problem(decl, key, value)  # with a close match for a misspelt choice
        if problem:
            raise ctx.at(key).error(f"{SINGULAR[kind]} {name!r}: {problem}")
    if kind == "metrics" and label in RESERVED_METRIC_NAMES:
        raise ctx.error(f"{label!r} is a cube variable already; give the metric another label")
    if kind == "datasets" and isinstance(overrides.get("path"), str):
        p = Path(overrides["path"])
        overrides["path"] = str(p if p.is_absolute() else (ctx.path.parent / p).resolve())
    params = {**decl.params, **overrides}
    try:
        json.dumps(params, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise ctx.error(f"parameters must be plain TOML values ({exc})") from None
    source = registry.source(kind, name)
    try:
        fingerprint = _fingerprint(source.plugin, source.version, params.get("path"), ctx.files,
                                   getattr(source, "digest", ""))
    except UserError as exc:  # a data file that is a device, FIFO or folder
        raise ctx.error(f"{SINGULAR[kind]} {label!r}: {exc}") from None
    return Entry(label=label, decl=decl, params=params, source=str(source), fingerprint=fingerprint,
                 given=tuple(overrides))


def _fingerprint(plugin: str, version: str, data_path: Any, files: Mapping[str, bytes] | None = None,
                 code: str = "") -> str:
    """So that resuming never serves results of an edited plugin file or data file.

    A file shipped with a job (``files``) has the digest of its shipped contents;
    a plugin object (``code``: the digest of its pickled form) has that digest,
    so that editing a notebook's estimator recomputes its cells.
    """
    def digest(path: str) -> str:
        if files and path in files:
            return hashlib.sha256(files[path]).hexdigest()[:16]
        return _file_digest(path)

    parts = [code if code else digest(plugin) if is_file_spec(plugin) else version]
    if isinstance(data_path, str):
        parts.append(digest(data_path))
    return ":".join(parts)


def _file_digest(path: str) -> str:
    """The digest of a plugin or data file (`cmbench.data.sha256_file`: a regular file, read in
    chunks; a device, FIFO or folder is a `DataError` naming it), "absent" for no file."""
    from .data import sha256_file

    try:
        return sha256_file(path)[:16]
    except OSError:
        return "absent"


#: (type of a default, types an override may have, their name): bool before int, which it subclasses
_PARAM_TYPES = ((bool, bool, "a boolean"), (int, int, "an integer"), (float, (int, float), "a number"),
                (str, str, "a string"), ((list, tuple), list, "an array"), (dict, dict, "a table"))


def _check_param_type(ctx: _Ctx, default: Any, value: Any) -> None:
    """An override must have its default's type (an integer may stand for a float)."""
    for kind, allowed, expected in _PARAM_TYPES:
        if isinstance(default, kind):
            if not isinstance(value, allowed) or (isinstance(value, bool) and kind is not bool):
                raise ctx.error(f"expected {expected} (the default is {default!r}), "
                                f"got {type(value).__name__} {value!r}")
            return


def _budgets(ctx: _Ctx, value: Any, max_count: int = DEFAULT_MAX_CELLS) -> tuple:
    if isinstance(value, dict):
        keys = ("start", "stop", "step")
        for key in value:
            if key not in keys:
                raise ctx.at(key).error(f"unknown key; {choices_hint(key, keys)}")
        missing = [k for k in keys if k not in value]
        if missing:
            raise ctx.error(f"a budget range needs start, stop and step; missing {', '.join(missing)}")
        for key, v in zip(keys, map(value.get, keys)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ctx.at(key).error(f"must be a finite number, got {v!r}")
        start, stop, step = (float(value[k]) for k in keys)
        if step <= 0:
            raise ctx.at("step").error(f"step must be positive, got {step}")
        span = (stop - start) / step
        if span + 1 > max_count:  # checked before the list is built
            raise ctx.at("step").error(
                f"step {step:g} from {start:g} to {stop:g} gives {math.floor(span) + 1:,} budgets, above the "
                f"limit of {max_count:,} cells; use a larger step (or set {ENV_MAX_CELLS} to raise the limit)")
        count = int(math.floor(span + 1e-9)) + 1
        value = [round(start + i * step, 12) for i in range(max(count, 0))]
    budgets = []
    for i, b in enumerate(value):
        if isinstance(b, bool) or not isinstance(b, (int, float)):
            raise ctx.at(f"[{i}]").error(f"expected a number, got {b!r}")
        if not (0.0 <= b <= 1.0) or math.isnan(b):
            raise ctx.at(f"[{i}]").error(f"budget {b} is outside [0, 1]")
        budgets.append(float(b))
    if not budgets:
        raise ctx.error("empty budget grid: give at least one budget")
    _no_duplicates(ctx, "budget", budgets)
    return tuple(budgets)


def _instances(ctx: _Ctx, value: Any, max_count: int = DEFAULT_MAX_CELLS) -> tuple:
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise ctx.error(f"the number of instances must be at least 1, got {value}")
        if value > max_count:  # checked before the range is built
            raise ctx.error(f"{value:,} instances is above the limit of {max_count:,} cells "
                            f"(set {ENV_MAX_CELLS} to raise the limit)")
        return tuple(range(value))
    items = list(value)
    if not items:
        raise ctx.error("empty list of instances")
    for i, v in enumerate(items):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ctx.at(f"[{i}]").error(f"an instance is a non-negative integer, got {v!r}")
    _no_duplicates(ctx, "instance", items)
    return tuple(items)


def _methods(ctx: _Ctx, value: dict, lists: dict) -> dict:
    recs = [e.label for e in lists["recoverers"]]
    ests = [e.label for e in lists["estimators"]]
    methods = {}
    for label, pair in value.items():
        here = ctx.at(label)
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
            raise here.error(f"a method is [recoverer, estimator], e.g. [\"ithsvd\", \"mean\"]; got {pair!r}")
        for what, name, known in (("recoverer", pair[0], recs), ("estimator", pair[1], ests)):
            if name not in known:
                raise here.error(f"{what} {name!r} is not in this experiment's {what}s; "
                                 f"{choices_hint(name, known)}")
        methods[label] = tuple(pair)
    pairs = list(methods.values())
    if len(set(pairs)) != len(pairs):
        dup = next(p for p in pairs if pairs.count(p) > 1)
        raise ctx.error(f"two methods name the same pair {dup[0]}+{dup[1]}")
    return methods


def _contender_methods(methods: dict, lists: dict, contenders: dict) -> dict:
    """Name the pairs a contender forms: alone after the first recoverer, and after each other one."""
    methods = dict(methods)
    recs = [e.label for e in lists["recoverers"]]
    ests = [e.label for e in lists["estimators"]]
    taken = set(methods.values())
    pairs = [(est if i == 0 else f"{rec}+{est}", rec, est)
             for est in contenders.get("estimators", ()) for i, rec in enumerate(recs)]
    pairs += [(f"{rec}+{est}", rec, est) for rec in contenders.get("recoverers", ()) for est in ests]
    for label, rec, est in pairs:
        if (rec, est) not in taken and label not in methods:
            methods[label] = (rec, est)
    return methods


def _no_duplicates(ctx: _Ctx, what: str, values: Sequence) -> None:
    seen = set()
    for v in values:
        if v in seen:
            raise ctx.error(f"duplicate {what} {v!r}")
        seen.add(v)


def check_label(ctx: _Ctx, value: Any, what: str) -> str:
    """A suite, experiment or component label: a portable file name, never a path.

    Parameters
    ----------
    ctx : _Ctx
        Where in the suite file the label stands (for the message).
    value : object
        The label.
    what : str
        What it labels, in the message (``"experiment name"``).

    Returns
    -------
    str
        ``value``, checked.

    Raises
    ------
    SuiteError
        Not a string, too long, or with characters outside letters, digits and
        ``. _ + -`` (a path separator, a leading dot, ``..``); names the key.
    """
    if not isinstance(value, str):
        raise ctx.error(f"the {what} must be a string, got {value!r}")
    if len(value) > MAX_LABEL:
        raise ctx.error(f"the {what} is {len(value)} characters long; at most {MAX_LABEL} are allowed "
                        "(it names files)")
    if not LABEL_PATTERN.fullmatch(value):
        raise ctx.error(f"the {what} {value!r} is not a plain label: use letters, digits and . _ + - "
                        "(starting with a letter or digit); it names files, so it may hold no path")
    return value


def size_limits() -> tuple[int, float]:
    """``(max cells, max GB per data array)`` from the environment, else the defaults.

    Returns
    -------
    tuple of (int, float)

    Raises
    ------
    UserError
        A limit that is not a positive number; names the variable.
    """
    from .data import env_limit

    return (env_limit(ENV_MAX_CELLS, DEFAULT_MAX_CELLS, int, SuiteError),
            env_limit(ENV_MAX_GB, DEFAULT_MAX_GB, float, SuiteError))


def data_size(entry: Entry) -> Optional[tuple[int, int]]:
    """The (N, n) a data set entry will load, as far as its parameters tell before loading.

    The declaration's `cmbench.Dataset.shape_for` first (a ``shape`` callable
    of the parameters); else ``N`` (the conventional sample-size parameter)
    and ``blocks`` (the synthetic structure's ``[rows, cols]`` pairs) over the
    declared nominal shape.
    """
    decl = entry.decl
    if callable(getattr(decl, "shape", None)):
        return decl.shape_for(entry.params)
    shape = getattr(decl, "shape", None)
    N = entry.params.get("N")
    N = N if isinstance(N, int) and not isinstance(N, bool) else (shape[0] if shape else None)
    n = shape[1] if shape else None
    blocks = entry.params.get("blocks")
    try:
        n = sum(int(rows) for rows, _ in blocks) if blocks is not None else n
    except (TypeError, ValueError):
        pass
    return (N, n) if N and n else None


def check_size(path: Path, experiments: Sequence[Experiment], limits: tuple) -> None:
    """Refuse a suite whose grid or data would not fit, before anything is allocated.

    Parameters
    ----------
    path : Path
        The suite file (for the message).
    experiments : sequence of Experiment
    limits : tuple
        ``(max cells, max GB per data array)``, as `size_limits` returns.

    Raises
    ------
    SuiteError
        More cells than the limit, or a data set larger than the memory limit;
        the message gives the size and how to raise the limit.
    """
    max_cells, max_gb = limits
    sizes = []
    for exp in experiments:
        dims = [len(getattr(exp, k)) for k in GRID_KEYS]
        sizes.append((exp.name, math.prod(dims), dims))
        for ds in exp.datasets:
            shape = data_size(ds)
            gb = shape[0] * shape[1] * 8 / 1e9 if shape else 0.0
            if gb > max_gb:
                raise SuiteError(
                    f"{shown(path)}: experiment {exp.name!r}: data set {ds.label!r} would hold {shape[0]:,} x "
                    f"{shape[1]:,} values ({gb:,.1f} GB per array), above the limit of {max_gb:g} GB; "
                    f"make it smaller or set {ENV_MAX_GB} to raise the limit")
    total = sum(n for _, n, _ in sizes)
    if total > max_cells:
        name, n, dims = max(sizes, key=lambda t: t[1])
        raise SuiteError(
            f"{shown(path)}: the suite has {total:,} cells, above the limit of {max_cells:,}; the largest experiment, "
            f"{name!r}, has {n:,} = {' x '.join(map(str, dims))} (data sets x instances x adversaries x "
            f"budgets x recoverers x estimators); shrink the grid or set {ENV_MAX_CELLS} to raise the limit")
