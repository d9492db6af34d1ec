"""What the framework callbacks share: a hook started with the training and closed with it."""

from __future__ import annotations

import os
from typing import Any

from ._hook import Steps


class _Callbacks:
    """Owns one :class:`Steps` per training run: started at train start (with the rank the
    framework knows), a step per batch, closed at train end or on an exception."""

    def __init__(self, policy: str | None, directory: os.PathLike | str | None) -> None:
        self.policy = policy
        self.directory = directory
        self.gc_steps: Steps | None = None

    def _start(self, rank: int | None) -> None:
        self._close(None)
        self.gc_steps = Steps(self.policy, self.directory, rank=rank).start()

    def _begin(self) -> None:
        if self.gc_steps is not None:
            self.gc_steps.begin()

    def _end(self) -> None:
        if self.gc_steps is not None:
            self.gc_steps.end()

    def _close(self, error: BaseException | None) -> None:
        if self.gc_steps is not None:
            self.gc_steps.close(error)
            self.gc_steps = None


def rank_of(obj: Any, *names: str) -> int | None:
    for name in names:
        value = getattr(obj, name, None)
        if isinstance(value, int):
            return value
    return None
