"""The one plugin manager: built-ins, entry points, files and modules, validated.

Plugins are loaded in this order, and every component remembers which plugin
declared it:

1. the built-in modules in ``plugins/`` (shipped as ``cmbench.builtins``);
2. installed distributions with an entry point in group ``cmbench``, unless the
   environment variable ``CMBENCH_DISABLE_PLUGIN_AUTOLOAD`` is set (to anything
   but empty or ``0``), as pytest's ``PYTEST_DISABLE_PLUGIN_AUTOLOAD``;
3. ``--plugin PATH.py`` or ``--plugin dotted.module`` (repeatable), or from
   Python (``cmbench.run_suite(plugins=[...])``, ``cmbench.load_plugins``) a
   module object or any object with hook implementations (`ShippedPlugin`);
4. ``plugins = [...]`` in a suite file (resolved by `cmbench.suite`).

A hook whose name is not one of cmbench's (``register_estimator``) is an error
naming it and the plugin (pluggy's ``check_pending``), not a plugin that
silently declares nothing.
"""
from __future__ import annotations

import difflib
import hashlib
import importlib
import importlib.abc
import importlib.metadata
import importlib.util
import inspect
import math
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pluggy

from . import hookspecs
from .components import LEVELS, MODES, PLACEMENTS, Adversary, Component, Dataset, Estimator, Metric, Recoverer
from .errors import PluginError, describe_error
from .kinds import BY_NAME, KINDS, SINGULAR
from .shipping import ShippedPlugin, ship
from .version import __version__

BUILTIN_MODULES = ("adversaries", "recoverers", "ppca", "estimators", "sample_estimators", "ap25_estimators",
                   "datasets", "distributions", "peers", "worstcase", "metrics", "ap25_schemes")
#: the environment variable that turns entry-point plugins off (set to anything but empty or ``0``)
AUTOLOAD_ENV = "CMBENCH_DISABLE_PLUGIN_AUTOLOAD"
#: cube variables a metric may not be named after
RESERVED_METRIC_NAMES = ("seconds", "evaluations", "status", "error", "traceback")
KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Source:
    """Where a component came from: the plugin's name and version.

    Attributes
    ----------
    plugin : str
        ``cmbench.<module>`` for a built-in, ``dist:entry-point`` for an
        installed plugin, the absolute path of a plugin file, or a module name.
    version : str
        The plugin's version ("" when it declares none).
    """

    plugin: str
    version: str = ""
    #: for a plugin object (`ShippedPlugin`): the digest of its pickled form, its code's identity
    digest: str = ""

    def __str__(self) -> str:
        return f"{self.plugin} {self.version}".strip()


#: the hook that adds kinds of report page (`cmbench.report.kinds.PageKind`), and the built-in
#: plugin registering the report's own pages through it
PAGES_HOOK, REPORT_PAGES = "register_report_pages", "cmbench.report.pages"
#: the hooks a plugin may implement (`cmbench.hookspecs`)
HOOKS = (*(kind.hook for kind in KINDS), PAGES_HOOK)


@dataclass
class Registry:
    """Every loaded component, by kind and name, with the plugin that declared it.

    Attributes
    ----------
    components : dict
        For each kind (`cmbench.kinds.KINDS`, by its plural name), its declarations by
        name; ``registry.estimators`` (any kind's plural) reads the kind's.
    sources : dict
        `Source` of each ``(kind, name)``.
    plugins : list of Source
        Every loaded plugin, in loading order.
    autoload : bool
        False when ``CMBENCH_DISABLE_PLUGIN_AUTOLOAD`` left out entry points.
    """

    components: dict = field(default_factory=lambda: {kind.plural: {} for kind in KINDS})
    sources: dict = field(default_factory=dict)  # (kind, name) -> Source
    plugins: list = field(default_factory=list)  # Source of each loaded plugin, in order
    autoload: bool = True  # False when CMBENCH_DISABLE_PLUGIN_AUTOLOAD skipped entry points
    #: (kind, name) -> (declaration, Source, why) of components whose parameters were refused;
    #: filled only by a lenient load (`cmbench check` reports them all, then checks the rest)
    refused: dict = field(default_factory=dict)
    #: (Source, hook function) of each plugin's ``register_report_pages``, in loading order:
    #: called only when a report is drawn (`cmbench.report.kinds.page_kinds`)
    page_hooks: list = field(default_factory=list)

    def kind(self, kind: str) -> dict:
        """The declarations of ``kind`` (``"adversaries"``, ...), by name."""
        return self.components[kind]

    def __getattr__(self, name: str) -> dict:
        # only for the kinds' tables, and never before `components` is set (unpickling asks first)
        tables = self.__dict__.get("components")
        if tables is None or name not in tables:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return tables[name]

    def get(self, kind: str, name: str) -> Component:
        """The declaration ``name`` of ``kind``, or a `PluginError` with the close matches."""
        table = self.kind(kind)
        if name in table:
            return table[name]
        raise PluginError(f"unknown {SINGULAR[kind]} {name!r}; {choices_hint(name, table)}")

    def source(self, kind: str, name: str) -> Source:
        """The plugin that declared component ``name`` of ``kind``."""
        return self.sources[(kind, name)]


def close_matches(name: str, valid: Iterable[str], n: int = 3) -> list[str]:
    """The names of ``valid`` that ``name`` is likely a misspelling of, closest first.

    The one similarity rule of every "did you mean" in cmbench's messages
    (`difflib` ratio of at least 0.5).

    Parameters
    ----------
    name : str
        What the user wrote.
    valid : iterable of str
        The names that would have been accepted.
    n : int, default 3
        At most this many matches.

    Returns
    -------
    list of str
        Up to ``n`` names of ``valid``, most similar first; empty when none is close.
    """
    return difflib.get_close_matches(str(name), [str(v) for v in valid], n=n, cutoff=0.5)


def did_you_mean(name: str, valid: Iterable[str]) -> str:
    """``"did you mean 'x'?"`` for the closest name of ``valid``, or ``""`` when none is close.

    For messages that list the valid choices themselves; `choices_hint` adds the list.
    """
    close = close_matches(name, valid, n=1)
    return f"did you mean {close[0]!r}?" if close else ""


def choices_hint(name: str, valid: Iterable[str]) -> str:
    """``"did you mean 'x'? valid: a, b, ..."``: the close matches first, then the rest sorted.

    Parameters
    ----------
    name : str
        The unknown name the user wrote.
    valid : iterable of str
        The names that would have been accepted.

    Returns
    -------
    str
        The hint, to follow ``"unknown <kind> 'name'; "`` in an error message;
        ``"none declared"`` when ``valid`` is empty.
    """
    valid = sorted(str(v) for v in valid)
    if not valid:
        return "none declared"
    close = close_matches(name, valid)
    rest = [v for v in valid if v not in close]
    text = f"valid: {', '.join(close + rest)}"
    return f"did you mean {close[0]!r}? {text}" if close else text


class _Manager(pluggy.PluginManager):
    """cmbench's plugin manager: on a plugin object that is not a module, a routine named
    like a hook (``register_*``) implements it without the ``@cmbench.hookimpl`` marker,
    so that a namespace or class of a notebook is a plugin as it is; a misspelt one then
    meets `_Loader.add`'s unknown-hook check as a marked one would."""

    def parse_hookimpl_opts(self, plugin, name):
        opts = super().parse_hookimpl_opts(plugin, name)
        if (opts is None and not isinstance(plugin, ModuleType) and name.startswith("register_")
                and inspect.isroutine(getattr(plugin, name, None))):
            return {"wrapper": False, "hookwrapper": False, "optionalhook": False, "tryfirst": False,
                    "trylast": False, "specname": None}
        return opts


class ParamsError(PluginError):
    """A component whose ``params``, ``choices`` or ``ranges`` do not fit its function or each other."""


class _Loader:
    def __init__(self, lenient: bool = False) -> None:
        self.pm = _Manager("cmbench")
        self.pm.add_hookspecs(hookspecs)
        self.registry = Registry()
        self.lenient = lenient  # keep loading past a component whose parameters are refused

    def add(self, plugin: object, source: Source, listed: bool = True) -> bool:
        """Register ``plugin`` and collect its components; False when it was registered already.
        ``listed=False``: left out of ``Registry.plugins`` (the report's own pages, which no
        cube names)."""
        name = source.plugin
        if self.pm.is_registered(plugin) or self.pm.has_plugin(name):
            return False  # the same plugin named twice (e.g. on the CLI and in a suite)
        try:
            self.pm.register(plugin, name=name)
        except pluggy.PluginValidationError as exc:
            raise PluginError(f"plugin {name}: {exc}") from None
        try:
            self.pm.check_pending()  # a hook with no spec: a misspelt name
        except pluggy.PluginValidationError:
            unknown = [hc.name for hc in self.pm.get_hookcallers(plugin) or () if not hc.has_spec()]
            self.pm.unregister(plugin)
            hint = did_you_mean(unknown[0], HOOKS) if unknown else ""
            raise PluginError(f"plugin {name}: unknown hook {', '.join(map(repr, unknown))}"
                              + (f" ({hint})" if hint else "")
                              + f"; cmbench's hooks: {', '.join(HOOKS)}") from None
        if listed:
            self.registry.plugins.append(source)
        self.registry.page_hooks += [(source, impl.function) for impl in getattr(self.pm.hook, PAGES_HOOK)
                                     .get_hookimpls() if impl.plugin is plugin]
        for kind in KINDS:
            for impl in getattr(self.pm.hook, kind.hook).get_hookimpls():
                if impl.plugin is plugin:
                    self._collect(kind.plural, kind.cls, impl.function, source)
        return True

    def declared(self) -> int:
        return (sum(len(self.registry.kind(kind.plural)) for kind in KINDS) + len(self.registry.refused)
                + len(self.registry.page_hooks))

    def _collect(self, kind: str, cls: type, hook_fn, source: Source) -> None:
        try:
            items = hook_fn()
        except Exception as exc:  # a plugin's own bug, reported as its own
            raise PluginError(f"plugin {source.plugin}: {hook_fn.__name__}() raised {describe_error(exc)}") from None
        if items is None:
            return
        try:
            items = list(items)
        except TypeError:
            raise PluginError(
                f"plugin {source.plugin}: {hook_fn.__name__}() must return an iterable of "
                f"cmbench.{cls.__name__}, got {type(items).__name__}") from None
        table = self.registry.kind(kind)
        for item in items:
            try:
                _validate(kind, cls, item, source)
            except ParamsError as exc:
                if not self.lenient:
                    raise
                self.registry.refused[(kind, item.name)] = (item, source, str(exc))
                continue
            if item.name in table:
                other = self.registry.sources[(kind, item.name)]
                raise PluginError(
                    f"duplicate {SINGULAR[kind]} name {item.name!r}: declared by plugin {other.plugin} "
                    f"and by plugin {source.plugin}")
            table[item.name] = item
            self.registry.sources[(kind, item.name)] = source


def _validate(kind: str, cls: type, item: object, source: Source) -> None:
    where = f"plugin {source.plugin}"
    if not isinstance(item, cls):
        raise PluginError(f"{where}: {kind} hook returned {item!r}; expected cmbench.{cls.__name__}")
    what = f"{where}, {SINGULAR[kind]} {item.name!r}"
    if not isinstance(item.name, str) or not KEBAB.match(item.name):
        raise PluginError(f"{what}: the name must be kebab-case (lowercase words joined by '-')")
    if not callable(item.fn):
        raise PluginError(f"{what}: fn is not callable")
    if not isinstance(item.params, dict):
        raise PluginError(f"{what}: params must be a dict of defaults")
    if isinstance(item, Adversary):
        if item.level not in LEVELS:
            raise PluginError(f"{what}: level {item.level!r} is not one of {', '.join(LEVELS)}")
        if item.mode not in MODES:
            raise PluginError(f"{what}: mode {item.mode!r} is not one of {', '.join(MODES)}")
        _validate_adversary(item, what)
    if isinstance(item, Recoverer) and not set(item.modes) <= set(MODES):
        raise PluginError(f"{what}: modes {item.modes!r} must be among {', '.join(MODES)}")
    if isinstance(item, Estimator) and (isinstance(item.cost, bool) or not isinstance(item.cost, (int, float))
                                        or not 0 < item.cost < math.inf):
        raise PluginError(f"{what}: cost {item.cost!r} must be a positive number (the empirical mean's is 1)")
    if isinstance(item, Metric) and item.name in RESERVED_METRIC_NAMES:
        raise PluginError(f"{what}: {item.name!r} is a cube variable already; choose another name")
    try:
        _validate_domains(item, what)
        check_signature(kind, item, item.params, what)
    except PluginError as exc:
        raise ParamsError(str(exc)) from None


def _validate_adversary(item: Adversary, what: str) -> None:
    """The placement and the delete mode: sample level only, and a placement among `PLACEMENTS`."""
    if item.mode == "delete" and (item.level != "sample" or item.adaptive):
        raise PluginError(f"{what}: mode 'delete' removes rows: it needs level 'sample' and no adaptive attack")
    if item.placement not in PLACEMENTS:
        raise PluginError(f"{what}: placement {item.placement!r} is not one of {', '.join(PLACEMENTS)}")
    placement = item.placement_for()
    if placement == "last" and (item.level != "sample" or item.mode == "delete"):
        raise PluginError(f"{what}: placement 'last' places corrupted rows: it needs level 'sample' "
                          "and mode 'missing' or 'replace'")
    if not isinstance(item.needs_truth, bool):
        raise PluginError(f"{what}: needs_truth must be True or False")


def _validate_domains(item: Component, what: str) -> None:
    """``choices`` and ``ranges`` name declared parameters, and the defaults obey them."""
    for field_name in ("choices", "ranges"):
        for key in getattr(item, field_name):
            if key not in item.params and not (key == "rank" and getattr(item, "rank_hint", False)):
                raise PluginError(f"{what}: {field_name} names {key!r}, which is not one of its params "
                                  f"({', '.join(item.params) or 'none'})")
    for key, allowed in item.choices.items():
        if not allowed:
            raise PluginError(f"{what}: choices[{key!r}] is empty")
    for key, bounds in item.ranges.items():
        if (len(bounds) not in (2, 3) or not all(b is None or _is_number(b) for b in bounds[:2])
                or (len(bounds) == 3 and bounds[2] not in _CLOSURES)):
            raise PluginError(f"{what}: ranges[{key!r}] must be (low, high) or (low, high, closure), "
                              f"low and high numbers or None, closure one of {', '.join(_CLOSURES)}; "
                              f"got {bounds!r}")
    for key, value in item.params.items():
        problem = domain_problem(item, key, value)
        if problem:
            raise PluginError(f"{what}: the default of {key!r} is outside its declared domain: {problem}")


def _is_number(x) -> bool:
    return isinstance(x, (int, float, np.number)) and not isinstance(x, bool)


def domain_problem(item: Component, key: str, value) -> str:
    """Why ``value`` is not allowed for parameter ``key`` of ``item`` ('' when it is).

    Checks the component's declared ``choices`` and ``ranges``, so that a
    suite's override is refused when the suite loads, not halfway through a sweep.

    Parameters
    ----------
    item : Component
        The declaration.
    key : str
        A parameter name.
    value : object
        The proposed value. None always passes (it means "the method's own
        default", e.g. a rank hint).

    Returns
    -------
    str
        The reason, e.g. ``"0.7 is outside [0.0, 0.5)"``; empty when allowed.
    """
    if value is None:
        return ""
    allowed = item.choices.get(key)
    if allowed is not None and value not in allowed:
        hint = did_you_mean(value, [a for a in allowed if isinstance(a, str)]) if isinstance(value, str) else ""
        return f"{value!r} is not one of {', '.join(map(repr, allowed))}" + (f" ({hint})" if hint else "")
    bounds = item.ranges.get(key)
    if bounds is not None:
        low, high = bounds[:2]
        closure = bounds[2] if len(bounds) == 3 else "[]"
        if not _is_number(value) or (isinstance(value, float) and math.isnan(value)):
            return f"{value!r} is not a number"
        # a bound of None means "no bound" among finite numbers: infinity is allowed only where a
        # bound says so (math.inf, closed)
        if math.isinf(value) and value not in (low, high):
            return f"{value!r} is not a finite number (the range is {format_range(bounds, repr)})"
        below = low is not None and (value < low if closure[0] == "[" else value <= low)
        above = high is not None and (value > high if closure[1] == "]" else value >= high)
        if below or above:
            return f"{value!r} is outside {format_range(bounds, repr)}"
    return ""


_CLOSURES = ("[]", "[)", "(]", "()")


def check_signature(kind: str, item: Component, params: dict, what: str) -> None:
    """Check that ``item.fn`` accepts the contract's arguments and ``params``.

    A callable whose signature cannot be inspected (a builtin) passes.

    Parameters
    ----------
    kind : str
        The component's kind (``"estimators"``, ...): fixes the contract's call.
    item : Component
        The declaration.
    params : dict
        The keyword parameters it will be called with.
    what : str
        How to name the component in the message.

    Raises
    ------
    PluginError
        The signature does not fit; the message shows the expected call.
    """
    try:
        sig = inspect.signature(item.fn)
    except (TypeError, ValueError):
        return  # builtins without a signature: nothing to check
    positional, keywords = BY_NAME[kind].call
    kwargs = dict.fromkeys(keywords)  # binding checks names and arity: the values do not matter
    if getattr(item, "adaptive", False):
        kwargs = dict(kwargs, pipeline=None)
    if getattr(item, "needs_truth", False):
        kwargs = dict(kwargs, true_mean=None, true_cov=None)
    if getattr(item, "inputs", ()):  # a metric's inputs from the runner (`cmbench.Metric`)
        kwargs = dict(kwargs, **{name: None for name in item.inputs})
    try:
        sig.bind(*positional, **kwargs, **params)
    except TypeError as exc:
        expected = ", ".join([*positional, *(f"{k}=" for k in kwargs)])
        raise PluginError(f"{what}: signature {item.fn.__name__}{sig} does not fit the contract "
                          f"({expected}, **params): {exc}") from None


class _ShippedSource(importlib.abc.Loader):
    """Imports a plugin file's source from memory, under the client's path.

    Its code objects keep the client's file name (tracebacks and cell errors
    name the user's file) and ``inspect.getsource`` works through
    ``get_source``, although the file does not exist on this machine.
    """

    def __init__(self, path: Path, source: bytes) -> None:
        self.path, self.source = str(path), source

    def exec_module(self, module: ModuleType) -> None:
        exec(compile(self.source, self.path, "exec", dont_inherit=True), module.__dict__)

    def get_source(self, fullname: str) -> str:
        return importlib.util.decode_source(self.source)


def watch_child(target, args: tuple, wait, on_message, setup: tuple | None = None) -> str | None:
    """Run ``target(conn, *args)`` in a guard process (a one-worker pool of its own,
    `cmbench.pools.private`) and hand each message it sends through ``conn`` to
    ``on_message``, until that returns True.

    The guard process of `cmbench check`: a plugin that ends its
    process there (``os._exit``, a signal) is told apart from one that finishes.
    ``setup`` is called first there (`cmbench.pools.private`).
    Returns ``""`` when ``on_message`` said done, None when no message came within
    ``wait`` seconds (the child is then killed), else how the child ended
    (``"exit code 7"``, ``"killed by signal SIGKILL"``). The child is killed on the way
    out, whatever ends the wait (Ctrl-C included).
    """
    import threading
    from multiprocessing.connection import Listener

    from . import pools

    key = os.urandom(32)
    listener = Listener(authkey=key)  # a local socket that only the holder of ``key`` may use
    box: dict = {}
    ready = threading.Event()

    def accept() -> None:
        try:
            box["conn"] = listener.accept()
        except Exception:  # the listener closed, or a stranger without the key: no child speaks
            pass
        ready.set()

    threading.Thread(target=accept, daemon=True, name="cmbench-guard-accept").start()
    executor = pools.private(1, setup)
    future = executor.submit(_talking, target, listener.address, key, args)
    try:
        while not ready.wait(0.05) and not future.done():
            pass
        if not ready.is_set() and future.done() and future.exception() is None:
            # the child connected, talked and returned before the accept thread stored its
            # connection: its messages are waiting there, not lost
            ready.wait(10)
        conn = box.get("conn")
        if conn is not None:
            while True:
                if not conn.poll(wait):
                    return None
                try:
                    message = conn.recv()
                except EOFError:
                    break
                if on_message(message):
                    return ""
        return _how_it_ended(future)
    finally:
        if "conn" in box:
            box["conn"].close()
        listener.close()
        pools.stop(executor)


def _talking(target, address, key: bytes, args: tuple) -> None:
    """In the guard process: connect back to the parent, then run ``target(conn, *args)``."""
    from multiprocessing.connection import Client

    conn = Client(address, authkey=key)
    try:
        target(conn, *args)
    finally:
        conn.close()


def _how_it_ended(future) -> str:
    """How a guard process that stopped talking ended: its exit code or signal."""
    from concurrent.futures import TimeoutError as Timeout
    from concurrent.futures.process import BrokenProcessPool

    from . import pools

    try:
        future.result(timeout=10)
    except BrokenProcessPool as exc:
        return pools.death(exc) or "the process ended"
    except Timeout:
        return "the process stopped answering"
    except BaseException as exc:  # the guard's own code failed: said as it is
        return f"{type(exc).__name__}: {exc}"
    return "exit code 0"


#: import a plugin file in a child process first (`preflight`); off in the guard processes themselves
PREFLIGHT = True
#: seconds a plugin file may take to import in `preflight`
PREFLIGHT_TIMEOUT = 120.0
_PREFLIGHT_PASSED: set = set()  # digests of plugin sources that imported without ending their process


def plugin_file_problem(path: Path) -> str:
    """Why ``path`` cannot be a plugin file ('' when it can): absent, a folder, not a regular
    file, not named .py, or not text."""
    from .files import file_problem

    problem = file_problem(path)
    if problem:
        return problem.replace(", not a file", ", not a .py file")
    if path.suffix != ".py":
        return "is not a Python file (its name must end in .py)"
    return ""


def _text_problem(raw: bytes) -> str:
    if b"\0" in raw:
        return "is not a text file (it holds NUL bytes)"
    try:
        importlib.util.decode_source(raw)
    except (UnicodeDecodeError, SyntaxError, LookupError):
        return "is not a text file in its declared encoding (UTF-8 by default)"
    return ""


def preflight(path: Path, raw: bytes) -> None:
    """Import the plugin file ``path`` and call its registration hooks in a worker of the
    process's shared pool first (`cmbench.pools.shared`): one that ends its process meanwhile
    (``os._exit``, a signal) is a `PluginError` naming it, instead of ending cmbench silently.
    Once per source per process.

    The shared pool, not a process of its own: the run's sweep starts that pool anyway, so
    the worker the import started (its interpreter, NumPy, cmbench, the plugin's own
    imports: about 0.4 CPU-s) goes on to compute units instead of being thrown away. A
    plugin that ends the worker breaks the pool, which the next use starts afresh; one that
    hangs past `PREFLIGHT_TIMEOUT`, or a Ctrl-C meanwhile, ends the pool's workers.
    """
    from concurrent.futures import TimeoutError as Timeout
    from concurrent.futures.process import BrokenProcessPool

    from . import pools

    digest = hashlib.sha256(raw).hexdigest()
    if not PREFLIGHT or digest in _PREFLIGHT_PASSED:
        return
    executor = pools.shared(1)
    future = executor.submit(pools.in_environment, pools.environment(), _preflight_import, str(path))
    try:
        future.result(timeout=PREFLIGHT_TIMEOUT)
    except KeyboardInterrupt:  # Ctrl-C, or a signal the plugin sent to its parent
        pools.stop(executor)
        raise PluginError(f"plugin file {path}: interrupted while being imported (Ctrl-C, or a signal "
                          "the plugin sent to cmbench)") from None
    except Timeout:
        pools.stop(executor)
        raise PluginError(f"plugin file {path} did not finish importing within {PREFLIGHT_TIMEOUT:g} s") from None
    except BrokenProcessPool as exc:
        how = pools.death(exc) or "the worker process died"
        raise PluginError(f"plugin file {path} ended the process while being imported or registered "
                          f"({how}); a plugin may not exit at import") from None
    _PREFLIGHT_PASSED.add(digest)


def _preflight_import(path: str) -> None:
    """In a worker: import the plugin file and call its hooks; an ordinary error is reported by
    the real import, with its line. Workers never pre-flight themselves."""
    global PREFLIGHT
    PREFLIGHT = False
    try:
        _Loader().add(_import_file(Path(path)), Source(path))  # imported, then its hooks called
    except BaseException:
        pass


def _import_file(path: Path, source: bytes | None = None) -> ModuleType:
    """Import a plugin file from disk, or from ``source`` (its text, shipped with a job)."""
    key = hashlib.sha1(str(path).encode()).hexdigest()[:8]
    stem = re.sub(r"\W", "_", path.stem)
    modname = f"cmbench_plugin_{stem}_{key}"
    if source is not None:  # a long-lived worker may meet several versions of one file
        modname += "_" + hashlib.sha256(source).hexdigest()[:8]
    if modname in sys.modules:
        return sys.modules[modname]
    loader = None if source is None else _ShippedSource(path, source)
    spec = importlib.util.spec_from_file_location(modname, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        del sys.modules[modname]
        raise _import_error("file", path, exc) from None
    return module


def _import_error(kind: str, name: str | Path, exc: BaseException) -> PluginError:
    """The one line of a plugin ``kind`` ("file" or "module") whose import raised ``exc``."""
    what = f"plugin {kind} {name}"
    if isinstance(exc, SyntaxError):
        where = f"{exc.filename or name}:{exc.lineno}" if exc.lineno else str(exc.filename or name)
        return PluginError(f"plugin file {where}: syntax error: {exc.msg}" if kind == "file"
                           else f"{what}: {where}: syntax error: {exc.msg}")
    if isinstance(exc, SystemExit):
        return PluginError(f"{what} called sys.exit({exc.code!r}) while being imported; "
                           "a plugin may not exit at import")
    return PluginError(f"{what} failed to import: {describe_error(exc, name if kind == 'file' else None)}")


def is_file_spec(spec: str | os.PathLike, suffix: str = ".py") -> bool:
    """Whether ``spec`` names a file (else a name: a dotted module, a shipped suite).

    The one rule for every place that accepts either: a path ends with
    ``suffix`` or holds a path separator. Both ``/`` and ``\\`` count, on
    every system: neither can appear in a module or suite name, so a spec
    holding one is only ever meant as a path.

    Parameters
    ----------
    spec : str or path-like
        What the user gave (``--plugin``, ``plugins = [...]``, a suite argument).
    suffix : str, default ".py"
        The file type that names a file even without a separator (``".toml"``
        for suites).

    Returns
    -------
    bool
    """
    spec = str(spec)
    return spec.endswith(suffix) or "/" in spec or "\\" in spec


def shipped_key(path: Path, files: Mapping[str, bytes] | None) -> str | None:
    """The key under which ``path`` was shipped with a job in ``files``, if it was."""
    return next((k for k in (os.path.normpath(path), str(path.resolve())) if k in (files or {})), None)


def resolve_plugin(spec: str, base: Path | None = None,
                   files: Mapping[str, bytes] | None = None) -> tuple[ModuleType, Source]:
    """Import a plugin given as a ``.py`` path or a dotted module name.

    Parameters
    ----------
    spec : str
        A path (`is_file_spec`), relative to ``base`` when not absolute, or a
        dotted module name.
    base : Path or None
        Folder a relative path is resolved against (a suite file's folder).
    files : mapping of str to bytes, optional
        Contents of plugin files by absolute path: the files shipped with a
        job, imported from memory on a worker that cannot read them.

    Returns
    -------
    module : ModuleType
        The imported plugin.
    source : Source
        Its name (the resolved path, or the module name) and version.

    Raises
    ------
    PluginError
        The file does not exist, the module is not found, or importing it
        raised (the message names the file and line).
    """
    spec = str(spec)
    if is_file_spec(spec):
        path = Path(spec)
        if not path.is_absolute() and base is not None:
            path = base / path
        key = shipped_key(path, files)
        if key:
            return _import_file(Path(key), files[key]), Source(key)
        path = path.resolve()
        problem = plugin_file_problem(path)
        if not problem:
            raw = path.read_bytes()
            problem = _text_problem(raw)
        if problem:
            raise PluginError(f"plugin file {path} {problem}")
        preflight(path, raw)
        return _import_file(path), Source(str(path))
    if Path(spec).is_file() or not all(part.isidentifier() for part in spec.split(".")):
        if Path(spec).exists():
            raise PluginError(f"plugin file {Path(spec).resolve()} {plugin_file_problem(Path(spec)) or 'is not a .py file'}")
        raise PluginError(f"plugin {spec!r} is neither a .py file nor a module name")
    try:
        module = importlib.import_module(spec)
    except (Exception, SystemExit) as exc:
        if isinstance(exc, ModuleNotFoundError) and exc.name and spec.startswith(exc.name):
            raise PluginError(f"plugin module {spec!r} not found (give a .py path or an importable module)") from None
        raise _import_error("module", spec, exc) from None
    return module, Source(spec, str(getattr(module, "__version__", "")))


def plugin_list(plugins: Any) -> tuple:
    """``plugins=`` as a tuple; a lone string or path is refused: iterating it would give its letters.

    Raises
    ------
    PluginError
        ``plugins`` is a string or a path (the message shows the list to write).
    """
    if isinstance(plugins, (str, os.PathLike)):
        raise PluginError(f"plugins= takes a list of plugins (paths, module names or objects), got the "
                          f"string {os.fspath(plugins)!r}; write plugins=[{os.fspath(plugins)!r}]")
    return tuple(plugins or ())


def load_plugins(extra: Sequence = (), base: Path | None = None,
                 files: Mapping[str, bytes] | None = None, lenient: bool = False) -> Registry:
    """Load the built-ins, entry points, then ``extra``: the one plugin manager.

    Parameters
    ----------
    extra : sequence of str, path, module or object, default ()
        Plugin paths, dotted module names, module objects or objects with hook
        implementations (`ship`), in order.
    base : Path or None
        Folder relative plugin paths are resolved against.
    files : mapping of str to bytes, optional
        Plugin files' contents by absolute path, imported from memory (see
        `resolve_plugin`).
    lenient : bool, default False
        Leave out a component whose parameters are refused (`ParamsError`) and
        record it in ``Registry.refused`` instead of raising: `cmbench check`
        reports every such component and checks the others.

    Returns
    -------
    Registry
        Every component, validated, with the plugin that declared it.

    Raises
    ------
    PluginError
        A plugin cannot be loaded, declares a duplicate name or breaks the
        contract (the message names the plugin and the component).
    """
    extra = plugin_list(extra)
    loader = _Loader(lenient)
    for name in BUILTIN_MODULES:
        module = importlib.import_module(f"cmbench.builtins.{name}")
        loader.add(module, Source(f"cmbench.{name}", __version__))
    # The report's own page kinds (`REPORT_PAGES`) are not loaded here: the runner never imports
    # the report; `cmbench.report.kinds.page_kinds` loads them (`builtin_pages`) beside these.
    loader.registry.autoload = os.environ.get(AUTOLOAD_ENV, "").strip() in ("", "0")  # as pytest's variable
    entry_points = importlib.metadata.entry_points(group="cmbench") if loader.registry.autoload else ()
    for ep in sorted(entry_points, key=lambda e: e.name):
        dist = getattr(ep, "dist", None)
        label = f"{dist.name}:{ep.name}" if dist is not None else ep.name
        version = dist.version if dist is not None else ""
        try:
            plugin = ep.load()
        except Exception as exc:
            raise PluginError(f"entry point {ep.name} = {ep.value} ({label}) failed to load: {describe_error(exc)}") from None
        loader.add(plugin, Source(label, version))
    for spec in extra:
        before = loader.declared()
        if isinstance(spec, (str, os.PathLike)):
            plugin, source = resolve_plugin(spec, base, files)
            added, given = loader.add(plugin, source), plugin
        elif any(spec is p or (isinstance(spec, ShippedPlugin) and spec.obj is p)
                 for _, p in loader.pm.list_name_plugin()):  # (not get_plugins: a set, and objects may not hash)
            continue  # a built-in or entry-point module given again as an object
        else:
            shipped = ship(spec)
            source = Source(shipped.name, shipped.version, shipped.digest)
            added, given = loader.add(shipped.plugin(), source), shipped.obj
        if added and loader.declared() == before:
            raise PluginError(declares_nothing(source.plugin, given))
    return loader.registry


def declares_nothing(name: str, plugin: object) -> str:
    """The error of a plugin that declares no component: an unmarked hook is the usual cause."""
    hooks = [hook for hook in HOOKS if callable(getattr(plugin, hook, None))]
    marked = [hook for hook in hooks if hasattr(getattr(plugin, hook), "cmbench_impl")]
    if isinstance(plugin, ModuleType) and hooks and not marked:
        return (f"plugin {name} declares no component: {', '.join(hooks)} "
                f"{'is' if len(hooks) == 1 else 'are'} not marked with @cmbench.hookimpl")
    if marked or hooks:  # an object's methods named like hooks implement them unmarked
        return f"plugin {name} declares no component: {', '.join(marked or hooks)} returned none"
    return (f"plugin {name} declares no component; a plugin implements one of cmbench's hooks "
            f"({', '.join(HOOKS)}) with @cmbench.hookimpl, returning a list of components")


# ------------------------------------------------------------------ describing components

def split_spec(spec: str) -> tuple[list[str], str]:
    """``NAME`` or ``KIND:NAME`` (a kind singular or plural) -> (the kinds it may name, NAME)."""
    kind_part, _, name = spec.rpartition(":")
    kinds = [k.plural for k in KINDS if kind_part in ("", k.plural, k.singular)]
    if kind_part and not kinds:
        raise PluginError(f"unknown kind {kind_part!r} in {spec!r}; {choices_hint(kind_part, SINGULAR.values())}")
    return kinds, name


def find_components(registry: Registry, spec: str) -> list[tuple[str, Component]]:
    """The components ``spec`` names: ``NAME`` (in every kind that has it) or ``KIND:NAME``.

    Parameters
    ----------
    registry : Registry
    spec : str
        ``"trimmed-mean"``, or ``"estimator:trimmed-mean"`` (a kind singular or plural).

    Returns
    -------
    list of (kind, declaration)
        One item per kind that declares the name, in the order of `KINDS`.

    Raises
    ------
    PluginError
        An unknown kind, or no component of that name (with the close matches).
    """
    kinds, name = split_spec(spec)
    hits = [(k, registry.kind(k)[name]) for k in kinds if name in registry.kind(k)]
    if not hits:
        names = sorted({n for k in kinds for n in registry.kind(k)})
        what = SINGULAR[kinds[0]] if len(kinds) == 1 else "component"
        raise PluginError(f"unknown {what} {name!r}; {choices_hint(name, names)}")
    return hits


def format_range(bounds: tuple, show=lambda b: f"{b:g}") -> str:
    """A declared range as an interval: ``(0.0, 0.5, "[)")`` -> ``"[0, 0.5)"`` (``show`` writes a bound)."""
    low, high = bounds[:2]
    closure = bounds[2] if len(bounds) == 3 else "[]"
    lo = "-inf" if low is None else show(low)
    hi = "inf" if high is None else show(high)
    # a missing bound is open: the value is finite
    return f"{'(' if low is None else closure[0]}{lo}, {hi}{')' if high is None else closure[1]}"


def describe_params(decl: Component) -> list[dict]:
    """Each parameter a suite may set: ``name``, ``default`` (repr), ``choices``, ``range`` ('' when none).

    A recoverer's ``rank`` (the data set's rank hint, which a suite may override)
    is listed for every recoverer that reads it (``rank_hint``).
    """
    names = list(decl.params) + [k for k in (*decl.choices, *decl.ranges) if k not in decl.params]
    if getattr(decl, "rank_hint", False):  # a suite may set the hint for it
        names.append("rank")
    return [{"name": key,
             "default": "(the data set's rank)" if key not in decl.params else repr(decl.params[key]),
             "choices": ", ".join(map(repr, decl.choices[key])) if key in decl.choices else "",
             "range": format_range(decl.ranges[key]) if key in decl.ranges else ""}
            for key in dict.fromkeys(names)]


#: the NumPy-docstring sections `cmbench info` leaves out: how a method was chosen and measured
#: (for its developers; the source and the API reference keep them)
DEVELOPER_SECTIONS = ("Notes",)


def user_doc(doc: str) -> str:
    """A component's docstring as `cmbench info` shows it: without its `DEVELOPER_SECTIONS`.

    The rule: what a user needs to run the component (what it computes, where
    it departs from its paper, its parameters) stands in the summary,
    description and ``Parameters`` / ``Returns`` sections; how a choice was
    measured and what it replaced stands under ``Notes``, which ends at the
    next section heading (a line underlined with dashes) or at the end.
    """
    lines = doc.splitlines()
    out, skipping = [], False
    for i, line in enumerate(lines):
        underlined = i + 1 < len(lines) and re.fullmatch(r"-{3,}", lines[i + 1].strip() or "x") is not None
        if underlined and line.strip():
            skipping = line.strip() in DEVELOPER_SECTIONS
        if not skipping:
            out.append(line)
    return "\n".join(out).rstrip()


def describe_component(registry: Registry, kind: str, decl: Component) -> dict:
    """What `cmbench info` shows of a component: its identity, kind-specific fields,
    parameters and docstring.

    Returns
    -------
    dict
        ``kind`` (singular), ``name``, ``plugin`` (name and version),
        ``description``, ``fields`` (label -> text: an adversary's level and mode,
        a recoverer's modes, a data set's shape and rank), ``params``
        (`describe_params`) and ``doc`` (the callable's docstring, '' when none).
    """
    fields = {}
    if isinstance(decl, Adversary):
        fields = {"level": decl.level, "mode": decl.mode}
        if decl.placement_for() != "any":
            fields["placement"] = f"{decl.placement_for()} rows"
        if decl.needs_truth:
            fields["needs"] = "the true mean and covariance"
        if decl.adaptive:
            fields["adaptive"] = "yes (attacks each recoverer+estimator pair)"
    elif isinstance(decl, Recoverer):
        fields = {"modes": ", ".join(decl.modes), "needs structure": "yes" if decl.needs_structure else "no"}
    elif isinstance(decl, Estimator) and decl.cost != 1.0:
        fields = {"cost": f"{decl.cost:g} x the empirical mean's (a hint for sharing a large unit's cells)"}
    elif isinstance(decl, Dataset):
        shape = decl.shape_for()  # a shape callable: the size its parameters' defaults give
        if shape:
            fields["shape"] = " x ".join(map(str, shape)) + (" by default" if callable(decl.shape) else "")
        if decl.rank is not None:
            fields["rank"] = str(decl.rank)
        if decl.files:
            fields["files"] = ", ".join(f.path for f in decl.files)
    fn = decl.fn
    try:
        where = f"{fn.__module__}.{fn.__qualname__}"
    except AttributeError:
        where = repr(fn)
    fields["callable"] = where
    return {"kind": SINGULAR[kind], "name": decl.name, "plugin": str(registry.source(kind, decl.name)),
            "description": decl.description, "fields": fields, "params": describe_params(decl),
            "doc": user_doc(inspect.getdoc(fn) or "")}


def builtin_pages() -> Registry:
    """A registry of the report's built-in page kinds alone (`REPORT_PAGES`): the report of
    cubes drawn without plugins."""
    loader = _Loader()
    loader.add(importlib.import_module(REPORT_PAGES), Source(REPORT_PAGES, __version__), listed=False)
    return loader.registry
