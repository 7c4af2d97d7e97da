"""A guarded plugin call: `run` calls plugin code and classifies what happens.

Whatever a plugin does inside the call - return, raise ``cmbench.Undefined``,
fail, raise ``SystemExit`` or another ``BaseException``, run past its
timeout - becomes an `Outcome` (status, error, value, seconds, traceback),
never an exception that escapes into the sweep. Only two things end a call
early from outside: ``--timeout`` (SIGALRM in the main thread, an abandoned
thread elsewhere: a call inside compiled code stops when control returns to
Python) and a real Ctrl-C, which is re-raised so that the sweep stops.

A call that ends its process (``os._exit``, a segfault) cannot be caught in
the process: in a worker, the slot its `Context` names (``running``) holds the
call in progress for the parent (`cmbench.runner.executors`). The runner uses
`call`; `cmbench check` uses `run`.
"""
from __future__ import annotations

import functools
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Optional

from ..components import NotApplicable, Undefined
from ..cube import FAILED, NOT_APPLICABLE, OK, TIMEOUT, UNDEFINED
from ..errors import UserError, describe_error

__all__ = ["CallTimeout", "Context", "Outcome", "call", "describe", "run"]


class CallTimeout(BaseException):
    """A plugin call ran past ``--timeout``.

    A BaseException, so that a plugin's own ``except Exception`` cannot swallow it.
    """


@dataclass
class Outcome:
    status: str
    error: str = ""
    value: Any = None
    seconds: float = float("nan")
    traceback: str = ""  # the full Python traceback of a plugin's exception
    user_error: str = ""  # the message of a `UserError` the call raised: the user's to fix, not the plugin's


@dataclass(frozen=True)
class Context:
    """What a guarded call is told of its run.

    ``timeout``: seconds before the call is stopped (`CallTimeout`; None: no limit);
    ``post_mortem``: open the debugger where the plugin raises (``cmbench suite --pdb``;
    in-process runs only); ``running``: in a worker whose death the parent watches, the path
    of the shared slot (`cmbench.pools.Slot`) in which the call names itself while it runs,
    so that the parent can name the plugin if the call ends the process; ``tick``: called
    after each call (`cmbench.runner.ticks`), so that the progress bar moves inside a long unit.
    """

    timeout: Optional[float] = None
    post_mortem: bool = False
    running: Optional[str] = None
    tick: Optional[Callable[[], None]] = None


def post_mortem(exc: BaseException) -> None:
    import pdb

    print(f"\ncmbench --pdb: {type(exc).__name__}: {exc}", file=sys.stderr)
    pdb.post_mortem(exc.__traceback__)


def _alarm(signum, frame):
    raise CallTimeout()


# Set by the SIGINT handler `call` installs: a KeyboardInterrupt is a real Ctrl-C only then.
_SIGINT_SEEN = [False]

@functools.lru_cache(maxsize=4)
def _slot(path: str):
    """The slot at ``path``, opened once per process (every call of a worker names itself there)."""
    from ..pools import Slot

    return Slot(path)


def describe(fn: Callable) -> str:
    """'function() of /path/plugin.py': where a plugin call is, for the messages."""
    name = getattr(fn, "__qualname__", None) or repr(fn)
    code = getattr(fn, "__code__", None)
    return f"{name}() of {code.co_filename}" if code is not None else f"{name}()"


def _sigint_handler(previous: Any) -> Callable:
    def handler(signum, frame):
        _SIGINT_SEEN[0] = True
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:
            raise KeyboardInterrupt
    return handler


def interrupt(signum=None, frame=None) -> None:
    """A signal handler that stops cmbench as a Ctrl-C does (``cmbench`` installs it for SIGTERM).

    It raises KeyboardInterrupt itself, marked as a real interrupt, rather than sending
    SIGINT: a job started in the background by a non-interactive shell (``&``, a batch
    system) ignores SIGINT, and a SIGTERM passed on as SIGINT would be lost.
    """
    _SIGINT_SEEN[0] = True
    raise KeyboardInterrupt


_FN = object()  # `run`'s default ``home``: the called function itself


def call(fn: Callable, context: Context, *args, **kwargs) -> Outcome:
    """``run(fn, args, kwargs, context=context)``: the form the runner uses."""
    return run(fn, args, kwargs, context=context)


def run(fn: Callable, args: tuple = (), kwargs: Optional[dict] = None, *, context: Context = Context(),
        what: Optional[str] = None, home: Any = _FN) -> Outcome:
    """Run one plugin call ``fn(*args, **kwargs)``; classify its outcome instead of letting it escape.

    ``context``: the call's timeout and whether to debug where it raises (`Context`);
    ``what``: the call as a message names it (default `describe`); ``home``: the
    function whose file holds the frame a message points into (default ``fn``; None:
    the deepest frame).
    Returns an `Outcome`: ``ok`` with the value, ``undefined`` or
    ``not-applicable`` when the plugin raised `cmbench.Undefined` or
    `cmbench.NotApplicable`, ``timeout``, or ``failed`` with the message
    (and the traceback) of whatever it raised.

    Only the runner's own signals end the call early: ``--timeout`` (`CallTimeout`)
    and a real Ctrl-C (SIGINT, re-raised as KeyboardInterrupt so the sweep stops).
    Anything the plugin raises itself - including ``KeyboardInterrupt``,
    ``SystemExit`` or another ``BaseException`` - fails the call.
    """
    kwargs = kwargs or {}
    timeout = context.timeout
    home = fn if home is _FN else home
    start = time.perf_counter()
    main_thread = threading.current_thread() is threading.main_thread()
    use_alarm = timeout and main_thread
    if main_thread:
        _SIGINT_SEEN[0] = False
        previous_sigint = signal.signal(signal.SIGINT, _sigint_handler(signal.getsignal(signal.SIGINT)))
    slot = _slot(context.running) if context.running else None
    if slot is not None:
        outer = slot.value
        slot.value = (what or describe(fn)).encode("utf-8", "replace")[: len(slot) - 1]
    try:
        if use_alarm:
            previous = signal.signal(signal.SIGALRM, _alarm)
            signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                value = fn(*args, **kwargs)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)
        elif timeout:
            value = _call_in_thread(fn, timeout, args, kwargs)
        else:
            value = fn(*args, **kwargs)
        out = Outcome(OK, value=value)
    except CallTimeout:
        out = Outcome(TIMEOUT, f"stopped after --timeout {timeout:g} s")
    except Undefined as exc:
        out = Outcome(UNDEFINED, str(exc) or "undefined")
    except NotApplicable as exc:
        out = Outcome(NOT_APPLICABLE, str(exc) or "not applicable")
    except SystemExit as exc:  # a plugin's sys.exit() must not end the sweep
        out = Outcome(FAILED, f"SystemExit({exc.code!r}): the plugin called sys.exit")
    except UserError as exc:  # a data file's mistake (cmbench.data.DataError): the caller decides
        out = Outcome(FAILED, describe_error(exc, home), traceback=traceback.format_exc(), user_error=str(exc))
    except Exception as exc:  # a plugin's bug becomes a failed cell, never a dead sweep
        if context.post_mortem:
            post_mortem(exc)
        out = Outcome(FAILED, describe_error(exc, home), traceback=traceback.format_exc())
    except KeyboardInterrupt as exc:
        if _SIGINT_SEEN[0]:
            raise  # Ctrl-C: the sweep stops, finished units are kept
        out = Outcome(FAILED, f"{describe_error(exc, home)} - raised by the plugin, not a Ctrl-C")
    except BaseException as exc:  # a plugin's own BaseException subclass: still its cell only
        out = Outcome(FAILED, describe_error(exc, home))
    finally:
        if main_thread:
            signal.signal(signal.SIGINT, previous_sigint)
        if slot is not None:
            slot.value = outer
    out.seconds = time.perf_counter() - start
    if context.tick is not None:
        context.tick()
    return out


def _call_in_thread(fn, timeout, args, kwargs):
    """Off the main thread (Dask workers) no alarm exists: abandon the call at the deadline."""
    box: dict = {}

    def target():
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # handed back to the caller below
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise CallTimeout()
    if "error" in box:
        raise box["error"]
    return box["value"]
