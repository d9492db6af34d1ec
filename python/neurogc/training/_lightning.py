"""``neurogc.training.LightningCallback``: the step hook as a PyTorch Lightning callback.

Imported only when asked for (``lightning``, or the older ``pytorch_lightning``, must be
installed). A step is one training batch: ``on_train_batch_start`` opens it, ``on_train_batch_end``
closes it (and runs the boundary action); validation and data loading between batches are
outside steps.
"""

from __future__ import annotations

import os
from typing import Any

try:
    from lightning.pytorch import Callback
except ImportError:  # the package's name before Lightning 2.0
    from pytorch_lightning import Callback

from ._common import _Callbacks, rank_of


class LightningCallback(_Callbacks, Callback):
    """``Trainer(callbacks=[neurogc.training.LightningCallback(policy="every:50,gen=1")])``.

    ``policy`` and ``directory`` as for ``neurogc.training`` (the environment overrides them);
    each rank writes its own file (``steps-rank<R>.csv`` beyond rank 0)."""

    def __init__(
        self, policy: str | None = None, directory: os.PathLike | str | None = None
    ) -> None:
        Callback.__init__(self)
        _Callbacks.__init__(self, policy, directory)

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self._start(rank_of(trainer, "global_rank"))

    def on_train_batch_start(
        self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int
    ) -> None:
        self._begin()

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        self._end()

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self._close(None)

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self._close(exception)
