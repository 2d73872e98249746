"""``MfuCallback`` for Lightning: honest MFU logged to every logger the Trainer has (CSVLogger's
``metrics.csv``, TensorBoard, W&B, MLflow, ...), every ``log_every_n_steps`` optimizer steps.

Numbers go through each logger's ``log_metrics`` at the trainer's ``global_step``; the device name and the
precision, which loggers of numbers cannot hold, go through ``log_hyperparams`` once, and into the rows of
a ``CSVLogger`` (which holds text), so ``mfu enrich metrics.csv`` reads the run back without flags.

    from mfu.integrations.lightning import MfuCallback
    trainer = lightning.Trainer(callbacks=[MfuCallback(flops_per_token=6 * n_params)])
"""

from __future__ import annotations

import warnings
from typing import Any, Optional, Sequence

try:
    import torch

    try:
        import lightning.pytorch as pl
        from lightning.pytorch.loggers import CSVLogger
    except ImportError:
        import pytorch_lightning as pl  # type: ignore
        from pytorch_lightning.loggers import CSVLogger  # type: ignore
except ImportError as e:  # pragma: no cover - exercised without the extra installed
    raise ImportError(
        "mfu.integrations.lightning needs torch and lightning: pip install torch lightning "
        "(or, from a checkout of mfu, pip install './python[lightning]')"
    ) from e

from ..online import normalize_precision
from ._torch import TrainingMeter, is_local_zero, tf32_enabled

__all__ = ["MfuCallback"]

_TEXT_KEYS = ("device_name", "dtype")


def _precision(trainer: "pl.Trainer", device: torch.device) -> Optional[str]:
    """The dtype of Lightning's precision string ("bf16-mixed", "16-mixed", "32-true",
    "transformer-engine", ...); "32-true" is tf32 on a GPU whose float32 matmuls use TF32."""
    spelling = str(getattr(trainer, "precision", "") or "")
    dtype = normalize_precision(spelling)
    if dtype == "fp32" and tf32_enabled(device):
        return "tf32"
    return dtype


def _model_config(pl_module: Any) -> Any:
    for owner in (pl_module, getattr(pl_module, "model", None)):
        config = getattr(owner, "config", None)
        if config is not None and (hasattr(config, "to_json_string") or isinstance(config, dict)):
            return config
    return None


class MfuCallback(pl.Callback):
    """Logs ``perf/mfu_wall_clock``, ``perf/mfu_fwd_bwd``, ``perf/tokens_per_second`` and their inputs
    (``perf/step_s``, ``perf/fwd_bwd_s``, ``perf/tokens``, ``perf/tokens_padded``, ``perf/flops_per_token``,
    ``perf/num_devices``, ``perf/peak_flops_per_device``, ``perf/steps``; ``perf/device_name`` and
    ``perf/dtype`` as hyperparameters) over the optimizer steps since the last log.

    Options are ``mfu enrich``'s, each detected when not given: ``device`` (this rank's device),
    ``dtype`` (from the Trainer's precision), ``num_devices`` (the world size), ``flops_per_token`` (else
    counted from ``model_config`` or the module's ``config`` at each batch's sequence length), ``peaks``,
    ``peak_flops``, ``model_dtype``; ``data_parallel_size`` when model parallelism replicates tokens;
    ``log_every_n_steps`` (the Trainer's by default). Tokens are counted from each training batch (a
    tensor of token ids, a tuple whose first item is one, or a dict with ``input_ids`` and optionally
    ``attention_mask``).
    """

    def __init__(
        self,
        device: Optional[str] = None,
        dtype: Optional[str] = None,
        num_devices: Optional[float] = None,
        flops_per_token: Optional[float] = None,
        model_config: Any = None,
        peaks: Optional[Sequence[str]] = None,
        peak_flops: Optional[float] = None,
        model_dtype: Optional[str] = None,
        data_parallel_size: Optional[int] = None,
        attention: str = "full",
        convention: str = "mfu",
        log_every_n_steps: Optional[int] = None,
        prefix: str = "perf/",
    ) -> None:
        self._core = TrainingMeter(
            device=device, dtype=dtype, num_devices=num_devices, flops_per_token=flops_per_token,
            model_config=model_config, peaks=peaks, peak_flops=peak_flops, model_dtype=model_dtype,
            data_parallel_size=data_parallel_size, attention=attention, convention=convention,
            prefix=prefix,
        )
        self._every = log_every_n_steps
        self._prefix = prefix
        self._stepped = False
        self._timing = False
        self._training = False
        #: Every interval's metrics, as logged (for tests and notebooks).
        self.history: list = []

    def on_train_start(self, trainer, pl_module):
        device = pl_module.device
        self._core.begin(device, _precision(trainer, device), _model_config(pl_module))
        self._training = True
        meter = self._core.meter
        text = {self._prefix + "device_name": meter.device_label}
        if meter.dtype is not None:
            text[self._prefix + "dtype"] = meter.dtype
        for logger in trainer.loggers:
            logger.log_hyperparams(text)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if self._training:
            self._core.micro_begin(batch)
            self._timing = True

    def on_after_backward(self, trainer, pl_module):
        if self._timing:
            self._core.micro_end()
            self._timing = False

    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        self._stepped = True

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if not self._training or not self._stepped:
            return  # a micro-batch of gradient accumulation: the step is not over
        self._stepped = False
        every = self._every or trainer.log_every_n_steps or 1
        # Lightning logs an optimizer step's metrics at the count of steps before it (its loop's
        # `_batches_that_stepped`, one behind `global_step` here), when `global_step` is a multiple of
        # `log_every_n_steps`: the same row, so that metrics.csv holds one row a logged step.
        completed = trainer.global_step
        epoch_loop = getattr(getattr(trainer, "fit_loop", None), "epoch_loop", None)
        step = getattr(epoch_loop, "_batches_that_stepped", completed - 1)
        metrics = self._core.step_end(completed % every == 0)
        if not metrics:
            return
        self.history.append({"step": step, **metrics})
        if not is_local_zero():
            return
        numbers = {k: v for k, v in metrics.items() if not k.endswith(_TEXT_KEYS)}
        for logger in trainer.loggers:
            logger.log_metrics(metrics if isinstance(logger, CSVLogger) else numbers, step=step)

    def on_validation_end(self, trainer, pl_module):
        if self._training and not trainer.sanity_checking:
            self._core.pause()

    def on_train_end(self, trainer, pl_module):
        self._training = False
