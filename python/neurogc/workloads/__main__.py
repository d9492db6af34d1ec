"""``python -m neurogc.workloads``: list the bundled workloads or serve one with the NeuroGC agent.

    python -m neurogc.workloads list [--json]
    python -m neurogc.workloads serve NAME --port P [--host 127.0.0.1] [--policy SPEC]
        [--interval SECS] [--csv FILE] [--gc-events-csv FILE] [--no-agent] [--set KEY=VALUE ...]

ASGI workloads run in uvicorn in this process (lifespan on) behind ``neurogc.install``; the WSGI
one (``orm``) replaces this process with gunicorn (1 worker, gthread, 4 threads), the agent's
options passed to the worker in ``NEUROGC_WORKLOAD_*`` variables. ``--set`` overrides one of the
workload's sizes (its ``create_app`` keyword options).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import json
import math
import os
import sys
from typing import Any

from . import WORKLOADS, UnknownWorkload, Workload, _env, get, tasks_path

PROG = "python -m neurogc.workloads"


class UsageError(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="The GC workload suite's bundled workloads.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="workloads: " + ", ".join(WORKLOADS),
    )
    sub = p.add_subparsers(dest="command", metavar="{list,serve}")
    sub.required = True
    ls = sub.add_parser("list", help="list the workloads")
    ls.add_argument("--json", action="store_true", help="a JSON array instead of a table")
    s = sub.add_parser("serve", help="serve one workload with the NeuroGC agent")
    s.add_argument("name", metavar="NAME", help="workload: " + ", ".join(WORKLOADS))
    s.add_argument("--port", type=int, required=True, help="TCP port to listen on")
    s.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    s.add_argument("--policy", default="default", help="NeuroGC policy spec (default: default)")
    s.add_argument("--interval", type=float, default=1.0, help="sample interval, seconds")
    s.add_argument("--csv", default=None, help="append samples to this CSV file")
    s.add_argument(
        "--gc-events-csv", default=None, help="append one row per collection to this CSV file"
    )
    s.add_argument("--no-agent", action="store_true", help="run without the NeuroGC agent")
    s.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one of the workload's sizes (repeatable; see its module docstring)",
    )
    return p


def _entry(w: Workload) -> dict[str, Any]:
    return {
        "name": w.name,
        "kind": w.kind,
        "story": w.story,
        "expects": list(w.expects),
        "tasks": str(tasks_path(w.name)),
    }


def cmd_list(as_json: bool) -> int:
    entries = [_entry(w) for w in WORKLOADS.values()]
    if as_json:
        print(json.dumps(entries, indent=2))
        return 0
    name_w = max(len(e["name"]) for e in entries)
    exp_w = max(len(", ".join(e["expects"])) for e in entries)
    print(f"{'NAME':<{name_w}}  KIND  {'EXPECTS':<{exp_w}}  TASKS")
    for e in entries:
        print(
            f"{e['name']:<{name_w}}  {e['kind']:<4}  {', '.join(e['expects']):<{exp_w}}  {e['tasks']}"
        )
    print()
    for e in entries:
        print(f"{e['name']}: {e['story']}\n")
    return 0


def _parse_value(text: str) -> Any:
    for convert in (int, float):
        try:
            value = convert(text)
        except ValueError:
            continue
        if isinstance(value, float) and not math.isfinite(value):
            break
        return value
    raise UsageError(f"--set: value {text!r} is not a number")


def parse_options(items: list[str], workload: Workload, create_app: Any) -> dict[str, Any]:
    """``--set KEY=VALUE`` items checked against ``create_app``'s keyword options."""
    known = [
        name
        for name, p in inspect.signature(create_app).parameters.items()
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    options: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise UsageError(f"--set {item!r}: expected KEY=VALUE")
        if key not in known:
            raise UsageError(
                f"--set {item!r}: workload {workload.name} has no option {key!r}; "
                f"known: {', '.join(known) or 'none'}"
            )
        options[key] = _parse_value(text.strip())
    return options


def _check_output(flag: str, path: str | None) -> None:
    if path is None:
        return
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise UsageError(f"{flag} {path}: is a directory")
    if not os.path.isdir(parent):
        raise UsageError(f"{flag} {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise UsageError(f"{flag} {path}: not writable")


def _check_common(args: argparse.Namespace) -> None:
    if not 0 < args.port < 65536:
        raise UsageError(f"--port {args.port}: must be between 1 and 65535")
    if not (math.isfinite(args.interval) and args.interval > 0):
        raise UsageError(f"--interval {args.interval}: must be a positive number of seconds")
    if not args.no_agent:
        import neurogc

        try:
            neurogc.validate_policy(args.policy)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    _check_output("--csv", args.csv)
    _check_output("--gc-events-csv", args.gc_events_csv)


def _require(*modules: str, extra: str) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise UsageError(
            f"this workload needs {', '.join(missing)} (pip install 'neurogc[{extra}]')"
        )


def serve_asgi(w: Workload, args: argparse.Namespace) -> int:
    _require("fastapi", "uvicorn", extra="demo")
    module = importlib.import_module(w.module)
    options = parse_options(args.set, w, module.create_app)
    from ._base import serve_with_agent

    try:
        app = module.create_app(**options)
        serve_with_agent(app, args)
    except (ValueError, OSError) as exc:
        raise UsageError(str(exc)) from None
    return 0


def serve_wsgi(w: Workload, args: argparse.Namespace) -> int:
    _require("flask", "gunicorn", extra="orm")
    module = importlib.import_module(w.module)  # cheap: the app is built in the worker
    options = parse_options(args.set, w, module.create_app)
    try:
        module.check_options(**options)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    env = dict(os.environ)
    env[_env.AGENT] = "0" if args.no_agent else "1"
    env[_env.POLICY] = args.policy
    env[_env.INTERVAL] = repr(args.interval)
    env[_env.OPTIONS] = json.dumps(options)
    for key, value in ((_env.CSV, args.csv), (_env.GC_EVENTS_CSV, args.gc_events_csv)):
        if value is None:
            env.pop(key, None)
        else:
            env[key] = os.path.abspath(value)
    argv = [
        sys.executable,
        "-m",
        "gunicorn",
        "-w",
        "1",
        "-k",
        "gthread",
        "--threads",
        "4",
        "-b",
        f"{args.host}:{args.port}",
        "--log-level",
        "warning",
        # No worker timeout: a server the suite stops (SIGSTOP) between its turns would otherwise
        # find its worker "silent" when continued and have it killed and restarted.
        "--timeout",
        "0",
        # The worker quits on the master's signal alone (see gunicorn_conf's docstring).
        "-c",
        "python:neurogc.workloads.gunicorn_conf",
        f"{w.module}:app",
    ]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvpe(argv[0], argv, env)
    return 1  # not reached


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "list":
            return cmd_list(args.json)
        try:
            w = get(args.name)
        except UnknownWorkload as exc:
            raise UsageError(str(exc)) from None
        _check_common(args)
        return serve_wsgi(w, args) if w.kind == "wsgi" else serve_asgi(w, args)
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
