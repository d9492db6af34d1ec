"""``python -m neurogc.training``: check step policy specs, print steps.csv's columns.

python -m neurogc.training validate SPEC [SPEC ...]   # each as the CSV names it; exit 2 if bad
python -m neurogc.training columns                    # one line, comma-separated
python -m neurogc.training policies
"""

from __future__ import annotations

import sys

from . import COLUMNS, POLICIES, StepPolicyError, validate_policy

USAGE = "usage: python -m neurogc.training {validate SPEC [SPEC ...] | columns | policies}"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["columns"] and len(args) == 1:
        print(",".join(COLUMNS))
        return 0
    if args[:1] == ["policies"] and len(args) == 1:
        print(POLICIES)
        return 0
    if args[:1] == ["validate"] and len(args) > 1:
        status = 0
        for spec in args[1:]:
            try:
                print(validate_policy(spec))
            except StepPolicyError as e:
                print(f"python -m neurogc.training: {e}", file=sys.stderr)
                status = 2
        return status
    print(USAGE, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
