"""``MfuCallback`` for Transformers' ``Trainer`` and the trainers built on it (TRL's ``SFTTrainer``,
``DPOTrainer``, ...): honest MFU logged through the trainer's own logging, so it reaches
``trainer_state.json`` and every ``report_to`` integration (TensorBoard, W&B, MLflow, ...).

The Trainer appends a log to ``state.log_history`` and calls the reporting callbacks before a user's
callback sees ``on_log``, so a callback that adds values in ``on_log`` reaches neither. This one finds its
Trainer when the Trainer first calls it (``on_init_end``, or ``on_train_begin`` for a callback added later)
and wraps two methods of that one instance: ``training_step`` (to count the micro-batch's tokens and time
its forward and backward) and ``log`` (to add the interval's metrics to the training log before it is
recorded anywhere). Evaluation, prediction and the end-of-training summary logs are left alone.

    from mfu.integrations.transformers import MfuCallback
    trainer = Trainer(model=model, args=args, train_dataset=ds, callbacks=[MfuCallback()])
"""

from __future__ import annotations

import logging
import sys
import warnings
from typing import Any, Optional, Sequence

try:
    import torch
    from transformers import Trainer, TrainerCallback
except ImportError as e:  # pragma: no cover - exercised without the extra installed
    raise ImportError(
        "mfu.integrations.transformers needs torch and transformers: pip install torch transformers "
        "(or, from a checkout of mfu, pip install './python[transformers]')"
    ) from e

from ._torch import TrainingMeter, is_local_zero, tf32_enabled, torch_precision

__all__ = ["MfuCallback"]


def _find_trainer() -> Optional[Trainer]:
    """The Trainer whose callback handler is calling us, from the call stack (Trainer -> CallbackHandler
    -> this callback)."""
    frame = sys._getframe(1)
    for _ in range(12):
        if frame is None:
            return None
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, Trainer):
            return candidate
        frame = frame.f_back
    return None


def _precision(trainer: Trainer, model: Any) -> Optional[str]:
    """The training precision from what the trainer says: Accelerate's ``mixed_precision``, else the
    ``bf16``/``fp16`` arguments, else the parameters' dtype (``tf32`` when it is fp32 and TF32 is on)."""
    args = trainer.args
    mixed = getattr(getattr(trainer, "accelerator", None), "mixed_precision", None)
    if mixed in ("bf16", "fp16", "fp8"):
        return mixed
    if getattr(args, "bf16", False):
        return "bf16"
    if getattr(args, "fp16", False):
        return "fp16"
    try:
        dtype = next(model.parameters()).dtype
    except (StopIteration, AttributeError, TypeError):
        return None
    tf32 = bool(getattr(args, "tf32", False)) or tf32_enabled(args.device)
    return torch_precision(dtype, tf32)


class _DroppedKeys(logging.Filter):
    """Drops Transformers' MLflow warning that a text value of one of these keys is not a metric."""

    def __init__(self, keys: list) -> None:
        super().__init__()
        self.keys = tuple(f'for key "{k}"' for k in keys)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not ("MLflow" in message and any(k in message for k in self.keys))


def _silence_mlflow_drops(keys: list) -> None:
    logger = logging.getLogger("transformers.integrations.integration_utils")
    if not any(isinstance(f, _DroppedKeys) for f in logger.filters):
        logger.addFilter(_DroppedKeys(keys))


def _is_training_log(logs: dict) -> bool:
    return "train_runtime" not in logs and not any(
        k.startswith(("eval_", "test_", "predict_")) for k in logs
    )


class MfuCallback(TrainerCallback):
    """Logs ``perf/mfu_wall_clock``, ``perf/mfu_fwd_bwd``, ``perf/tokens_per_second`` and what they were
    computed from (``perf/step_s``, ``perf/fwd_bwd_s``, ``perf/tokens``, ``perf/tokens_padded``,
    ``perf/flops_per_token``, ``perf/num_devices``, ``perf/peak_flops_per_device``, ``perf/device_name``,
    ``perf/dtype``, ``perf/steps``) whenever the Trainer logs its training metrics, over the steps since it
    last did; steps it never logs are measured into :attr:`history`, and a warning says so.

    Options are ``mfu enrich``'s, each detected when not given: ``device`` (this rank's device name),
    ``dtype``, ``num_devices`` (the world size), ``flops_per_token`` (else counted from ``model_config``,
    else from ``model.config``, at each batch's sequence length), ``peaks``, ``peak_flops``,
    ``model_dtype``; ``data_parallel_size`` when tensor, context or pipeline parallelism replicate tokens
    across ranks; ``attention`` ("full" or "causal") as in ``mfu flops``.
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
        prefix: str = "perf/",
    ) -> None:
        self._core = TrainingMeter(
            device=device, dtype=dtype, num_devices=num_devices, flops_per_token=flops_per_token,
            model_config=model_config, peaks=peaks, peak_flops=peak_flops, model_dtype=model_dtype,
            data_parallel_size=data_parallel_size, attention=attention, convention=convention,
            prefix=prefix,
        )
        self._trainer: Optional[Trainer] = None
        self._mlflow_tagged = False
        self._training = False
        #: Every interval's metrics, as logged (for tests and notebooks).
        self.history: list = []

    # ---- attaching to the Trainer ----
    def _attach(self, trainer: Optional[Trainer]) -> None:
        # One callback may serve one Trainer after another: it follows the latest, and a Trainer it
        # wrapped before is not wrapped twice.
        if trainer is None or trainer is self._trainer:
            return
        self._trainer = trainer
        if getattr(trainer, "_mfu_callback", None) is self:
            return
        trainer._mfu_callback = self
        original_step = trainer.training_step
        original_log = trainer.log
        core = self._core

        def training_step(*args: Any, **kwargs: Any) -> Any:
            inputs = args[1] if len(args) > 1 else kwargs.get("inputs")
            active = self._training and self._trainer is trainer
            if active:
                core.micro_begin(inputs)
            try:
                return original_step(*args, **kwargs)
            finally:
                if active:
                    core.micro_end()

        def log(logs: dict, *args: Any, **kwargs: Any) -> Any:
            # MFU over the steps since the Trainer last logged, whenever it logs (every logging_steps,
            # each epoch, or at a step the user chose): every rank logs at the same points.
            if self._trainer is trainer and self._training and _is_training_log(logs):
                metrics = core.flush()
                if metrics:
                    self._tag_mlflow(trainer, metrics)
                    logs.update(metrics)
                    self.history.append({"step": trainer.state.global_step, **metrics})
            return original_log(logs, *args, **kwargs)

        trainer.training_step = training_step
        trainer.log = log

    def _tag_mlflow(self, trainer: Any, metrics: dict) -> None:
        """Where the Trainer reports to MLflow, which keeps numbers as metrics and drops text: the device
        name and the precision as tags of the run, once, and the Trainer's warnings about dropping them
        at every log silenced (the tags hold them)."""
        if self._mlflow_tagged or "mlflow" not in (getattr(trainer.args, "report_to", None) or []):
            return
        mlflow = sys.modules.get("mlflow")
        text = {k: v for k, v in metrics.items() if isinstance(v, str)}
        if mlflow is None or not text or not is_local_zero():
            return
        try:
            if mlflow.active_run() is None:
                return
            mlflow.set_tags(text)
        except Exception as e:  # the tracking server's trouble must not stop training
            warnings.warn(f"mfu: could not tag the MLflow run with {sorted(text)}: {e}", stacklevel=2)
            return
        self._mlflow_tagged = True
        _silence_mlflow_drops(list(text))

    def on_init_end(self, args, state, control, **kwargs):
        self._attach(_find_trainer())

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self._attach(_find_trainer())
        self._training = False
        self._mlflow_tagged = False
        if self._trainer is None:
            from .. import MfuWarning

            warnings.warn(
                "mfu: MfuCallback could not find its Trainer; nothing is logged (pass it in "
                "Trainer(callbacks=[...]) or trainer.add_callback)",
                MfuWarning,
                stacklevel=2,
            )
            return
        model = model if model is not None else self._trainer.model
        inner = getattr(model, "module", model)
        config = getattr(inner, "config", None)
        self._core.begin(args.device, _precision(self._trainer, inner), config)
        self._training = True

    def on_step_end(self, args, state, control, **kwargs):
        if self._training:
            self._core.step_end(False)

    def on_evaluate(self, args, state, control, **kwargs):
        if self._training:
            self._core.pause()

    def on_save(self, args, state, control, **kwargs):
        if self._training:
            self._core.pause()

    def on_train_end(self, args, state, control, **kwargs):
        if self._training and self._core.steps:
            # Steps the Trainer never logged (logging_strategy="no", logging_steps beyond the run):
            # measured all the same, and said.
            unlogged = self._core.steps
            metrics = self._core.flush()
            if metrics:
                self.history.append({"step": state.global_step, **metrics})
            if is_local_zero():
                from .. import MfuWarning

                warnings.warn(
                    f"mfu: the Trainer logged no training metrics over the last {unlogged} step(s) "
                    f"(logging_strategy={getattr(args, 'logging_strategy', '?')!s}, logging_steps="
                    f"{getattr(args, 'logging_steps', '?')}), so their MFU is not in its log: it is in "
                    "MfuCallback.history",
                    MfuWarning,
                    stacklevel=2,
                )
        self._training = False
