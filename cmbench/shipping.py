"""Plugin objects shipped to worker processes by value (cloudpickle), and rebuilt there.

This is the one module of cmbench that unpickles, and it unpickles only bytes
that an executor delivered in memory with a job's suite (`cmbench.bundle`),
which that executor itself sent pickled (multiprocessing and Dask both pickle
their tasks): never a file, never a cache entry. It reads no file.
"""
from __future__ import annotations

import hashlib
import inspect
import os
import sys
from dataclasses import dataclass, field
from types import ModuleType, SimpleNamespace

from .errors import PluginError, describe_error


@dataclass(frozen=True)
class ShippedPlugin:
    """A plugin given as a Python object, shipped to worker processes by value.

    An estimator defined in a notebook cell lives in no file and no importable
    module: a worker process (local or on a cluster) cannot import it by name.
    So the object is pickled with cloudpickle when the suite loads (functions and
    classes of ``__main__`` by value; a module given as an object by value
    too), and a worker registers the unpickled copy under the same name. The
    digest of the pickled bytes is the plugin's code identity in cache keys, so
    that an edited cell recomputes its cells. (cloudpickle names a class it
    pickles by value with a per-session id: a notebook's plugin *class* gets a
    new digest in each kernel session, and its cells are recomputed once.)

    Attributes
    ----------
    name : its plugin name, ``<what digest>`` (e.g. ``<__main__ 1a2b3c4d>``).
    payload : the pickled object.
    digest : SHA-256 of ``payload``.
    version : the object's ``__version__``, if any.
    """

    name: str  # equal plugins have the same name and digest
    payload: bytes = field(repr=False, compare=False)
    digest: str
    version: str = field(default="", compare=False)
    obj: object = field(default=None, repr=False, compare=False)  # the original, in the client only

    def __reduce__(self):  # the original object never travels: only its pickled bytes
        return (ShippedPlugin, (self.name, self.payload, self.digest, self.version))

    def __str__(self) -> str:
        return self.name

    def plugin(self) -> object:
        """The object to register: the original in the client, else the unpickled copy (once per process)."""
        if self.obj is not None:
            return self.obj
        if self.digest not in _UNPICKLED:
            import pickle

            try:
                _UNPICKLED[self.digest] = pickle.loads(self.payload)
            except Exception as exc:
                raise PluginError(f"plugin {self.name} cannot be rebuilt in this process: "
                                  f"{describe_error(exc)}") from None
        return _UNPICKLED[self.digest]


_UNPICKLED: dict = {}


def ship(obj: object) -> ShippedPlugin:
    """A plugin object as a `ShippedPlugin` (a `ShippedPlugin` as it is).

    Parameters
    ----------
    obj : module or object
        A module object, or any object whose attributes implement hooks: a
        class instance, a ``types.SimpleNamespace(register_estimators=...)``.
        On an object that is not a module, a method named like a hook
        (``register_estimators``) implements it even without ``@cmbench.hookimpl``.

    Raises
    ------
    PluginError
        The object cannot be pickled (it holds a lock, an open file, ...): the
        message names it and says why.
    """
    if isinstance(obj, ShippedPlugin):
        return obj
    if isinstance(obj, (str, os.PathLike)):
        raise TypeError("a plugin path or module name is not shipped by value")
    import cloudpickle

    target = obj
    if isinstance(obj, ModuleType):
        # a module is pickled by reference (a worker's ``__main__`` is not the notebook's): its
        # hook implementations travel instead, as a namespace, the module's code by value
        base = obj.__name__
        by_value = (obj.__name__ != "__main__" and obj.__name__ in sys.modules
                    and obj.__name__ not in cloudpickle.list_registry_pickle_by_value())
        target = SimpleNamespace(**{n: getattr(obj, n) for n in dir(obj)
                                    if inspect.isroutine(getattr(obj, n, None))
                                    and hasattr(getattr(obj, n), "cmbench_impl")})
    else:
        cls = type(obj)
        base = cls.__name__ if cls.__module__ in ("builtins", "types") else f"{cls.__module__}.{cls.__name__}"
        base = "namespace" if cls is SimpleNamespace else base
        by_value = False
    try:
        if by_value:
            cloudpickle.register_pickle_by_value(obj)
        try:
            payload = cloudpickle.dumps(target)
        finally:
            if by_value:
                cloudpickle.unregister_pickle_by_value(obj)
    except Exception as exc:
        raise PluginError(f"plugin object {base} cannot be shipped to worker processes (cloudpickle: "
                          f"{type(exc).__name__}: {exc}); define it in a .py file and give its path") from None
    digest = hashlib.sha256(payload).hexdigest()
    return ShippedPlugin(f"<{base} {digest[:8]}>", payload, digest,
                         str(getattr(obj, "__version__", "") or ""), obj)
