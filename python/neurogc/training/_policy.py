"""Step policies: their spec strings, parsed once at construction into a :class:`StepPolicy`.

A spec is ``NAME[:ARG][,key=value...]``, as the agent's service policies are written. Sizes read
as ``neurogc``'s (``512M``, ``1.5G``, ``1048576``: binary units), durations as ``100ms``, ``0.5s``
or a bare number of seconds. A bad spec is a :class:`StepPolicyError` that names it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The step policies, as one line for help texts and error messages.
POLICIES = (
    "default | disable | every:N[,gen=1|2] | freeze:WARMUP_STEPS | learned[,budget=FRACTION]"
    " (all but default take the memory guard's rss=SIZE, young=COUNT, check=DURATION)"
)

NAMES = ("default", "disable", "every", "freeze", "learned")

_GUARD_KEYS = ("rss", "young", "check")
_KEYS = {
    "default": (),
    "disable": _GUARD_KEYS,
    "every": ("gen", *_GUARD_KEYS),
    "freeze": _GUARD_KEYS,
    "learned": ("budget", *_GUARD_KEYS),
}
_ARG = {"every": "N", "freeze": "WARMUP_STEPS"}

#: The guard's young-generation budget when ``young=`` is not given (as the agent's guard).
DEFAULT_YOUNG = 1_000_000
#: How often the guard's watcher reads RSS during a step when ``check=`` is not given.
DEFAULT_CHECK_S = 0.1
#: learned: the share of step time its full collections may take when ``budget=`` is not given.
DEFAULT_BUDGET = 0.05


class StepPolicyError(ValueError):
    """A step policy spec that does not parse; the message names the spec and what is wrong."""

    def __init__(self, spec: str, problem: str, source: str | None = None) -> None:
        where = f" (from {source})" if source else ""
        super().__init__(f"bad step policy {spec!r}{where}: {problem}; known: {POLICIES}")
        self.spec = spec
        self.problem = problem


@dataclass(frozen=True)
class StepPolicy:
    """A parsed step policy. ``spec`` is the text as given (spaces removed); the CSV's ``policy``
    column and ``steps.json`` carry it."""

    spec: str
    name: str
    #: every: collect at every ``interval``-th step boundary
    interval: int = 0
    #: every: the generation collected (1: young + middle, as torchtitan; 2: full, as Megatron)
    gen: int = 2
    #: freeze: steps before the freeze
    warmup: int = 0
    #: learned: the share of step time its full collections may take, amortised
    budget: float = DEFAULT_BUDGET
    #: guard: RSS budget in bytes (None: twice the RSS at start, at least 256 MiB above it)
    rss: int | None = None
    #: guard: young-generation count budget
    young: int = DEFAULT_YOUNG
    #: guard: seconds between RSS reads during a step
    check: float = DEFAULT_CHECK_S

    @property
    def guarded(self) -> bool:
        """Every policy but ``default`` carries the memory guard."""
        return self.name != "default"

    @property
    def disables_gc(self) -> bool:
        """Policies that turn CPython's automatic collection off and collect at boundaries."""
        return self.name in ("disable", "every", "learned")


_SIZE = re.compile(r"^([0-9]*\.?[0-9]+(?:e[0-9]+)?)([kmgt]?)(?:i?b)?$", re.IGNORECASE)
_SCALE = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_DURATION = re.compile(r"^([0-9]*\.?[0-9]+)(ms|s|m)?$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """Bytes from ``512M``, ``1.5G``, ``800KiB``, ``1048576``; ValueError if not a positive size."""
    m = _SIZE.match(text.strip())
    if not m:
        raise ValueError(f"{text!r} is not a size (e.g. 512M, 1.5G, 1048576)")
    value = float(m.group(1)) * _SCALE[m.group(2).lower()]
    if not value >= 1 or value >= 2**63:
        raise ValueError(f"{text!r} must be a positive size")
    return int(value)


def parse_duration(text: str) -> float:
    """Seconds from ``100ms``, ``0.5s``, ``2m`` or a bare number of seconds."""
    m = _DURATION.match(text.strip())
    if not m:
        raise ValueError(f"{text!r} is not a duration (e.g. 100ms, 0.5s, 2)")
    unit = (m.group(2) or "s").lower()
    return float(m.group(1)) * {"ms": 1e-3, "s": 1.0, "m": 60.0}[unit]


def _count(text: str, what: str, low: int) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise ValueError(f"{what} {text!r} is not a whole number") from None
    if value < low:
        raise ValueError(f"{what} must be at least {low}, not {value}")
    return value


def parse_policy(spec: str, source: str | None = None) -> StepPolicy:
    """Parses a step policy spec; raises :class:`StepPolicyError` naming it (and ``source``, the
    environment variable it came from, if any)."""
    if not isinstance(spec, str):
        raise StepPolicyError(repr(spec), "a step policy is a string", source)
    text = "".join(spec.split())
    try:
        return _parse(text)
    except ValueError as e:
        raise StepPolicyError(spec, str(e), source) from None


def _parse(text: str) -> StepPolicy:
    if not text:
        raise ValueError("empty spec")
    head, *options = text.split(",")
    name, colon, arg = head.partition(":")
    name = name.lower()
    if name not in _KEYS:
        raise ValueError(f"unknown policy {name!r}")
    fields: dict = {}
    wants = _ARG.get(name)
    if wants and not colon:
        raise ValueError(f"{name} needs {wants}: {name}:{wants}")
    if colon and not wants:
        raise ValueError(f"{name} takes no ':' argument")
    if name == "every":
        fields["interval"] = _count(arg, "N", 1)
    elif name == "freeze":
        fields["warmup"] = _count(arg, "WARMUP_STEPS", 1)
    seen = set()
    for option in options:
        key, eq, value = option.partition("=")
        key = key.lower()
        if not eq or not key or not value:
            raise ValueError(f"option {option!r} is not key=value")
        if key not in _KEYS[name]:
            allowed = ", ".join(_KEYS[name]) or "none"
            raise ValueError(f"{name} has no option {key!r} (options: {allowed})")
        if key in seen:
            raise ValueError(f"option {key!r} given twice")
        seen.add(key)
        if key == "gen":
            if value not in ("1", "2"):
                raise ValueError(f"gen must be 1 or 2, not {value!r}")
            fields["gen"] = int(value)
        elif key == "rss":
            fields["rss"] = parse_size(value)
        elif key == "young":
            fields["young"] = _count(value, "young", 1)
        elif key == "check":
            check = parse_duration(value)
            if not 0.01 <= check <= 3600:
                raise ValueError(f"check {value!r} must be between 10ms and 1h")
            fields["check"] = check
        elif key == "budget":
            try:
                budget = float(value)
            except ValueError:
                raise ValueError(f"budget {value!r} is not a number") from None
            if not 0 < budget <= 1:
                raise ValueError(f"budget must be a fraction in (0, 1], not {value}")
            fields["budget"] = budget
    return StepPolicy(spec=text, name=name, **fields)
