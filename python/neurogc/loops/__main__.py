"""``python -m neurogc.loops``: run a bundled training loop under a step policy, or list them.

    python -m neurogc.loops list [--json]
    python -m neurogc.loops NAME --steps N [--policy SPEC] [--dir DIR] [--seed S]
        [--set KEY=VALUE ...] [--json]

``NEUROGC_STEP_POLICY`` and ``NEUROGC_STEPS_DIR`` override ``--policy`` and ``--dir`` (as they do
for any script using the hook). Exit status: 0 done, 2 bad usage or policy, 3 a package the loop
needs is missing.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from neurogc.training import POLICIES, StepPolicyError

from . import LOOPS, UnknownLoop, get

PROG = "python -m neurogc.loops"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Run a bundled training loop under a GC step policy (docs/training.md).",
        epilog="loops: " + ", ".join(LOOPS) + f"; policies: {POLICIES}",
    )
    p.add_argument("name", metavar="NAME", help="a loop, or 'list'")
    p.add_argument("--steps", type=int, default=None, help="training steps to run (required)")
    p.add_argument("--policy", default=None, help="step policy (default: default; env wins)")
    p.add_argument("--dir", default=None, help="write steps.csv and steps.json here (env wins)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="change one of the loop's sizes (see list)",
    )
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    return p


def _options(loop_options: dict[str, Any], pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or key not in loop_options:
            known = ", ".join(f"{k}={v}" for k, v in loop_options.items())
            raise ValueError(f"--set {pair!r}: not KEY=VALUE with KEY one of {known}")
        kind = type(loop_options[key])
        try:
            out[key] = kind(float(value)) if kind is int else kind(value)
        except ValueError:
            raise ValueError(f"--set {pair!r}: {value!r} is not a {kind.__name__}") from None
    return out


def _list(as_json: bool) -> int:
    rows = []
    for loop in LOOPS.values():
        options = loop.load().OPTIONS
        rows.append(
            {
                "name": loop.name,
                "summary": loop.summary,
                "requires": list(loop.requires),
                "available": loop.available,
                "options": options,
            }
        )
    if as_json:
        print(json.dumps(rows))
        return 0
    for row in rows:
        missing = "" if row["available"] else f" [needs {', '.join(row['requires'])}]"
        print(f"{row['name']:<11} {row['summary']}{missing}")
        print(" " * 12 + "options: " + ", ".join(f"{k}={v}" for k, v in row["options"].items()))
    return 0


def _report(name: str, result: dict[str, Any], csv: str | None) -> str:
    gc = result.get("gc", {})
    rest = ", ".join(f"{k} {v}" for k, v in result.items() if k != "gc")
    in_n, in_ms = gc.get("in_step_gc", [0, 0, 0]), gc.get("in_step_gc_ms", [0, 0, 0])
    b_n = gc.get("boundary_collections", [0, 0, 0])
    lines = [
        f"{name}: {gc.get('steps')} steps under {gc.get('policy')!r} ({rest})",
        f"  step time    median {gc.get('step_ms_median')} ms, p99 {gc.get('step_ms_p99')} ms, "
        f"max {gc.get('step_ms_max')} ms, total {gc.get('step_ms_sum')} ms",
        f"  inside steps {sum(in_n)} collections (gen0/1/2: {in_n[0]}/{in_n[1]}/{in_n[2]}), "
        f"{sum(in_ms):.1f} ms",
        f"  boundaries   {sum(b_n)} collections (gen0/1/2: {b_n[0]}/{b_n[1]}/{b_n[2]}), "
        f"{gc.get('boundary_ms', 0):.1f} ms; guard {gc.get('guard_collections', 0)}",
        f"  outside      {gc.get('outside_gc', 0)} collections, {gc.get('outside_gc_ms', 0):.1f} ms;"
        f" peak RSS {gc.get('rss_max', 0) / 2**20:.1f} MiB",
    ]
    if csv:
        lines.append(f"  rows         {csv}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.name == "list":
        return _list(args.json)
    try:
        loop = get(args.name)
        if args.steps is None or args.steps < 1:
            raise ValueError("--steps N (at least 1) is required")
        module = loop.load() if loop.available else None
        if module is None:
            print(
                f"{PROG}: {loop.name} needs {', '.join(loop.missing)}, which is not installed",
                file=sys.stderr,
            )
            return 3
        options = _options(module.OPTIONS, args.set)
    except (UnknownLoop, ValueError) as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    try:
        result = module.train(
            args.steps, policy=args.policy, directory=args.dir, seed=args.seed, **options
        )
    except StepPolicyError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    csv_path = _csv_path(args.dir)
    if args.json:
        print(json.dumps({"loop": loop.name, **result, "csv": csv_path}))
    else:
        print(_report(loop.name, result, csv_path))
    return 0


def _csv_path(directory: str | None) -> str | None:
    import os

    chosen = os.environ.get("NEUROGC_STEPS_DIR", "").strip() or directory
    return None if not chosen else os.path.join(chosen, "steps.csv")


if __name__ == "__main__":
    sys.exit(main())
