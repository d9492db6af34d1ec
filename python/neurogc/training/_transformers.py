"""``neurogc.training.TransformersCallback``: the step hook as a Hugging Face Trainer callback.

Imported only when asked for (``transformers`` must be installed). A step is one optimizer step:
``on_step_begin`` opens it, ``on_step_end`` closes it (and runs the boundary action); evaluation,
logging and checkpoints between steps are outside steps.
"""

from __future__ import annotations

import os
from typing import Any

from transformers import TrainerCallback

from ._common import _Callbacks, rank_of


class TransformersCallback(_Callbacks, TrainerCallback):
    """``Trainer(..., callbacks=[neurogc.training.TransformersCallback(policy="learned")])``.

    ``policy`` and ``directory`` as for ``neurogc.training`` (the environment overrides them);
    each process writes its own file (``steps-rank<R>.csv`` beyond process 0)."""

    def __init__(
        self, policy: str | None = None, directory: os.PathLike | str | None = None
    ) -> None:
        _Callbacks.__init__(self, policy, directory)

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._start(rank_of(args, "process_index"))

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._begin()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._end()

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._close(None)
