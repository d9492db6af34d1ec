"""Every call of a named function is one step, with no change to the script.

``neurogc sweep --step-function MODULE:QUALNAME`` sets ``NEUROGC_STEP_FUNCTION`` and puts the
bootstrap (``neurogc/_bootstrap/sitecustomize.py``, as ``neurogc run`` does) on ``PYTHONPATH``;
the bootstrap calls :func:`install_from_environment` before the script runs. The function is
wrapped with the step hook's own decorator (``neurogc.training.Steps()(fn)``: policy and folder
from ``NEUROGC_STEP_POLICY``/``NEUROGC_STEPS_DIR``) as soon as the module defines it:

- ``MODULE`` is a module's import name (``mypkg.train``), or, for a function of the script that
  runs as ``__main__``, ``__main__`` or the script's file name without ``.py`` (``train`` for
  ``python train.py``; ``python -m mypkg.train`` is ``mypkg.train``);
- ``QUALNAME`` is a module-level function (``train_step``) or a method (``Trainer.step``,
  static and class methods too); a function defined inside another (``<locals>``) cannot be
  reached.

Until the function is defined, a trace function (``sys.settrace``) watches for the module's code
starting, and then for the line after the definition; it is removed once the function is wrapped
(so the training itself runs untraced), or when the module's code ends without defining it (which
is said on stderr). A script that already calls the hook needs none of this: a call of the
wrapped function while another hook is active is not counted twice.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any, Callable

ENV_STEP_FUNCTION = "NEUROGC_STEP_FUNCTION"

_PREFIX = "neurogc: --step-function"


class StepFunctionError(ValueError):
    """A ``MODULE:QUALNAME`` that does not name a function the hook can wrap."""


def parse(target: str) -> tuple[str, list[str]]:
    """``MODULE:QUALNAME`` as (module, qualname parts); errors name the target."""
    module, colon, qualname = target.strip().partition(":")
    parts = qualname.split(".") if qualname else []
    if not colon or not module or not parts or not all(p.isidentifier() for p in parts):
        if "<locals>" in qualname:
            raise StepFunctionError(
                f"{target!r}: a function defined inside another function cannot be wrapped; "
                "name a module-level function or a method (MODULE:Class.method)"
            )
        raise StepFunctionError(
            f"{target!r} is not MODULE:QUALNAME (e.g. train:train_step, mypkg.loop:Trainer.step)"
        )
    if not all(p.isidentifier() for p in module.split(".")):
        raise StepFunctionError(f"{target!r}: {module!r} is not a module name")
    return module, parts


def _wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
    from ._hook import Steps, active

    steps = Steps()
    stepped = steps(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        current = active()
        if current is not None and current is not steps:
            return fn(*args, **kwargs)  # the script's own hook counts its steps
        return stepped(*args, **kwargs)

    wrapper.__neurogc_step_function__ = True  # type: ignore[attr-defined]
    wrapper.gc_steps = steps  # type: ignore[attr-defined]
    return wrapper


def _wrap_in(namespace: Any, parts: list[str]) -> bool:
    """Wraps ``parts`` inside ``namespace`` (a module's globals dict); False while it is not there
    yet."""
    get = namespace.get if isinstance(namespace, dict) else None
    owner: Any = None
    obj = get(parts[0]) if get else None
    for part in parts[1:]:
        if obj is None:
            return False
        owner, obj = obj, getattr(obj, part, None)
    if obj is None:
        return False
    name = parts[-1]
    if owner is None:
        if getattr(obj, "__neurogc_step_function__", False):
            return True
        if not callable(obj):
            raise StepFunctionError(f"{'.'.join(parts)} is a {type(obj).__name__}, not a function")
        namespace[name] = _wrap(obj)
        return True
    raw = vars(owner).get(name, obj) if hasattr(owner, "__dict__") else obj
    if isinstance(raw, (staticmethod, classmethod)):
        if getattr(raw.__func__, "__neurogc_step_function__", False):
            return True
        setattr(owner, name, type(raw)(_wrap(raw.__func__)))
        return True
    if getattr(raw, "__neurogc_step_function__", False):
        return True
    if not callable(raw):
        raise StepFunctionError(f"{'.'.join(parts)} is a {type(raw).__name__}, not a function")
    setattr(owner, name, _wrap(raw))
    return True


class _Watcher:
    """Watches for the module's code, then wraps the function the line after it is defined."""

    def __init__(self, target: str, module: str, parts: list[str]) -> None:
        self.target = target
        self.module = module
        self.parts = parts
        self.done = False

    def _is_module(self, frame: Any) -> bool:
        if frame.f_code.co_name != "<module>":
            return False
        g = frame.f_globals
        name = g.get("__name__")
        if name == self.module:
            return True
        if name != "__main__":
            return False
        spec = g.get("__spec__")
        if spec is not None:
            return spec.name == self.module
        path = g.get("__file__") or ""
        stem = os.path.splitext(os.path.basename(path))[0]
        return self.module == stem

    def global_trace(self, frame: Any, event: str, arg: Any) -> Any:
        if self.done or event != "call" or not self._is_module(frame):
            return None
        return self.local_trace

    def local_trace(self, frame: Any, event: str, arg: Any) -> Any:
        if self.done:
            return None
        try:
            wrapped = _wrap_in(frame.f_globals, self.parts)
        except Exception as e:  # never break the script: say why and stop watching
            self._stop(frame, f"{_PREFIX} {self.target}: {e}; no steps recorded")
            return None
        if wrapped:
            self._stop(frame, None)
            return None
        if event == "return":
            self._stop(
                frame,
                f"{_PREFIX} {self.target}: {self.module} ran to its end without defining "
                f"{'.'.join(self.parts)}; no steps recorded",
            )
            return None
        return self.local_trace

    def _stop(self, frame: Any, message: str | None) -> None:
        self.done = True
        sys.settrace(None)
        frame.f_trace = None
        if message:
            print(message, file=sys.stderr)


def install(target: str) -> None:
    """Wraps ``target`` (``MODULE:QUALNAME``) now if its module is loaded and defines it, else
    as soon as the module defines it. Raises :class:`StepFunctionError` for a malformed target."""
    module, parts = parse(target)
    loaded = sys.modules.get(module)
    if loaded is not None and module != "__main__" and _wrap_in(vars(loaded), parts):
        return
    sys.settrace(_Watcher(target, module, parts).global_trace)


def install_from_environment() -> None:
    """What the bootstrap calls: ``NEUROGC_STEP_FUNCTION``, if set. Never raises: a bad target is
    said on stderr and the script runs without steps."""
    target = os.environ.get(ENV_STEP_FUNCTION, "").strip()
    if not target:
        return
    try:
        install(target)
    except Exception as e:
        print(f"{_PREFIX}: {e}; no steps recorded", file=sys.stderr)
