"""What the framework callbacks share: counting tokens, timing device work, gathering over ranks.

One :class:`TrainingMeter` per run. The callbacks tell it where a micro-batch's forward and backward begin and
end and where an optimizer step ends; at a logging step it synchronises the device once, gathers the
interval's totals over the ranks in one collective, and hands them to :class:`mfu.Meter`, whose arithmetic
is the library's. Between logging steps nothing waits for the device: token counts stay device tensors and
GPU time is taken with events.
"""

from __future__ import annotations

import math
import time
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence

import torch

from ..online import Meter, check_options, detect_device

_now = time.perf_counter


def _distributed() -> bool:
    return torch.distributed.is_available() and torch.distributed.is_initialized()


def world_size() -> int:
    return torch.distributed.get_world_size() if _distributed() else 1


def is_local_zero() -> bool:
    return not _distributed() or torch.distributed.get_rank() == 0


def _comm_device(device: torch.device) -> torch.device:
    """Where a collective's tensor must live: the GPU for NCCL, the CPU for gloo."""
    if _distributed() and torch.distributed.get_backend() == "nccl":
        return device if device.type == "cuda" else torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def synchronize(device: torch.device) -> None:
    """Waits for the device's queued work (the one synchronisation per logging interval)."""
    kind = device.type
    if kind == "cuda":
        torch.cuda.synchronize(device)
    elif kind == "xpu":
        torch.xpu.synchronize(device)
    elif kind == "mps":
        torch.mps.synchronize()
    elif kind == "xla":
        import torch_xla.core.xla_model as xm  # type: ignore

        xm.wait_device_ops()


#: Event pairs a RegionTimer holds before it folds the finished ones into its total.
_MAX_PAIRS = 256


class RegionTimer:
    """Total time of many regions of device work (forward and backward of each micro-batch), read once per
    interval: CUDA or XPU events on those devices (no synchronisation per region), the host clock on the
    CPU, and nothing elsewhere (an asynchronous device without events cannot be timed honestly per
    region, so fwd+bwd time is omitted there)."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        kind = device.type
        self._event: Optional[Callable[[], Any]] = None
        if kind == "cuda":
            self._event = lambda: torch.cuda.Event(enable_timing=True)
        elif kind == "xpu" and hasattr(torch.xpu, "Event"):
            self._event = lambda: torch.xpu.Event(enable_timing=True)
        self.measurable = self._event is not None or kind == "cpu"
        self._pairs: List[Any] = []
        self._host = 0.0
        self._open: Any = None

    def start(self) -> None:
        if self._event is not None:
            event = self._event()
            event.record()
            self._open = event
        else:
            self._open = _now()

    def stop(self) -> None:
        if self._open is None:
            return
        if self._event is not None:
            end = self._event()
            end.record()
            self._pairs.append((self._open, end))
            if len(self._pairs) >= _MAX_PAIRS:
                self._fold()
        else:
            self._host += _now() - self._open
        self._open = None

    def _fold(self) -> None:
        """Adds the regions the device has finished to the running total and lets their events go, without
        waiting for the device: a long interval (an epoch between two logs) holds a bounded number."""
        done = 0
        while done < len(self._pairs) and self._pairs[done][1].query():
            a, b = self._pairs[done]
            self._host += a.elapsed_time(b) / 1e3
            done += 1
        del self._pairs[:done]

    def take(self) -> Optional[float]:
        """Seconds timed since the last take (the device already synchronised), or None if unmeasurable."""
        if not self.measurable:
            return None
        seconds = self._host + sum(a.elapsed_time(b) for a, b in self._pairs) / 1e3
        self._pairs, self._host = [], 0.0
        return seconds


#: Where a packed batch's documents are told apart, the sequence length each is counted at is its own.
PACKED = -1


class TokenCounter:
    """Tokens of the training forwards, kept on the device until the interval is read: the non-padding
    count (an attention mask's sum) per sequence length, and the padded count (the batch's shape).

    A padding-free packed batch (TRL's ``packing=True``: one row of several documents, ``position_ids``
    restarting at each, no attention mask) is counted per document, since attention does not cross them:
    its tokens, and the sum over them of ``2 * position + 1``, which is the sum of each document's length
    squared (a document of n tokens has positions 0 to n - 1, and 1 + 3 + ... + (2n - 1) = n²), on the
    device with no synchronisation."""

    def __init__(self) -> None:
        self._by_len: Dict[int, Any] = {}
        self.padded = 0
        self.unknown = 0
        self._packed_tokens: Any = 0
        self._packed_squares: Any = 0

    def add(self, inputs: Any) -> Optional[int]:
        """Counts one micro-batch; gives its sequence length, or None when no tokens could be found."""
        ids = mask = None
        if isinstance(inputs, torch.Tensor):
            ids = inputs
        elif isinstance(inputs, dict) or hasattr(inputs, "keys"):
            ids = inputs.get("input_ids")
            mask = inputs.get("attention_mask")
            if ids is None and inputs.get("inputs_embeds") is not None:
                ids = inputs["inputs_embeds"][..., 0]
        elif isinstance(inputs, (list, tuple)) and inputs and isinstance(inputs[0], torch.Tensor):
            ids = inputs[0]
        if not isinstance(ids, torch.Tensor) or ids.dim() == 0:
            self.unknown += 1
            return None
        seq_len = int(ids.shape[-1])
        self.padded += ids.numel()
        positions = inputs.get("position_ids") if isinstance(inputs, dict) or hasattr(inputs, "keys") else None
        if mask is None and isinstance(positions, torch.Tensor) and positions.shape == ids.shape:
            self._packed_tokens = self._packed_tokens + ids.numel()
            self._packed_squares = self._packed_squares + (2 * positions.to(torch.int64) + 1).sum()
            return PACKED
        if isinstance(mask, torch.Tensor) and mask.shape == ids.shape:
            count = mask.sum()
        else:
            count = ids.numel()
        self._by_len[seq_len] = self._by_len.get(seq_len, 0) + count
        return seq_len

    def take(self) -> Dict[int, float]:
        """Tokens per sequence length since the last take (a packed batch's under :data:`PACKED`, with the
        sum of its documents' squared lengths in :attr:`packed_squares`): one device-to-host copy for all
        of them."""
        by_len, self._by_len = self._by_len, {}
        squares, self._packed_squares = self._packed_squares, 0
        if not isinstance(self._packed_tokens, int) or self._packed_tokens:
            by_len[PACKED] = self._packed_tokens
            by_len[PACKED - 1] = squares  # read back with the rest, then moved out below
        self._packed_tokens = 0
        self.padded = 0
        self.packed_squares = 0.0
        if not by_len:
            return {}
        lengths = list(by_len)
        values = [by_len[n] for n in lengths]
        tensors = [v for v in values if isinstance(v, torch.Tensor)]
        if tensors:
            host = torch.stack([t.to(torch.float64) for t in tensors]).tolist()
            it = iter(host)
            values = [next(it) if isinstance(v, torch.Tensor) else float(v) for v in values]
        out = dict(zip(lengths, map(float, values)))
        self.packed_squares = out.pop(PACKED - 1, 0.0)
        return out


class TrainingMeter:
    """A run's meter for a framework callback: the options of ``mfu enrich`` (``device``, ``dtype``,
    ``num_devices``, ``flops_per_token``, ``model_config``, ``peaks``, ``peak_flops``, ``model_dtype``) plus
    ``data_parallel_size`` (the ranks that see distinct tokens: the world size unless tensor, context or
    pipeline parallelism replicate them)."""

    def __init__(
        self,
        *,
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
        # Wrong usage is refused here, where the callback is built, not once training has begun.
        check_options(
            dtype=dtype, model_dtype=model_dtype, num_devices=num_devices,
            data_parallel_size=data_parallel_size, flops_per_token=flops_per_token,
            peak_flops=peak_flops, model_config=model_config, peaks=peaks, attention=attention,
            convention=convention,
        )
        self.options = dict(
            device=device, dtype=dtype, num_devices=num_devices, flops_per_token=flops_per_token,
            model_config=model_config, peaks=peaks, peak_flops=peak_flops, model_dtype=model_dtype,
            data_parallel_size=data_parallel_size, attention=attention, convention=convention,
            prefix=prefix,
        )
        self.meter: Optional[Meter] = None
        self.tokens = TokenCounter()
        self._warned_packed = False
        self.timer: Optional[RegionTimer] = None
        self.device = torch.device("cpu")

    def begin(self, device: torch.device, dtype: Optional[str], model_config: Any) -> None:
        """At the start of training: every rank's device name gathered once, the peak resolved once."""
        o = self.options
        self.device = device
        self.timer = RegionTimer(device)
        name = o["device"] or detect_device()
        names = [name]
        if _distributed():
            names = [None] * world_size()
            torch.distributed.all_gather_object(names, name)
        device_arg = names[0] if len(set(names)) == 1 else names
        self.world = world_size()
        self.replication = 1.0
        if o["data_parallel_size"]:
            self.replication = self.world / float(o["data_parallel_size"])
        config = o["model_config"] if o["model_config"] is not None else model_config
        if o["flops_per_token"] is not None:
            config = None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self.meter = Meter(
                device_arg,
                o["dtype"] or dtype,
                num_devices=o["num_devices"] or self.world,
                flops_per_token=o["flops_per_token"],
                model_config=config,
                attention=o["attention"],
                convention=o["convention"],
                peaks=o["peaks"],
                peak_flops=o["peak_flops"],
                model_dtype=o["model_dtype"],
                prefix=o["prefix"],
            )
        if is_local_zero():
            for w in caught:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        # This meter's missing FLOPs are said once below, where the callback knows why.
        self.meter._warned_no_flops = True
        self._config_ok = config is not None
        problem = None
        if config is not None:
            try:
                self.meter.flops_per_token_at(1)
            except ValueError as e:
                self._config_ok = False
                problem = str(e)
        elif o["flops_per_token"] is None:
            problem = "no flops_per_token and no model config to count them from"
        if problem and is_local_zero():
            from .. import MfuWarning

            warnings.warn(
                f"mfu: FLOPs per token unknown, MFU omitted ({problem}): give flops_per_token= or model_config=",
                MfuWarning,
                stacklevel=3,
            )
        self.steps = 0
        self.interval_start = _now()
        self.last_step_end = self.interval_start
        self.paused = 0.0

    def _packed_flops(self, tokens: float, squares: float) -> float:
        """The model FLOPs of packed documents from their tokens and the sum of their squared lengths:
        n tokens at (a + c n) each make a n + c n², summed over the documents. A count that is not linear
        in the length (attention windows) is taken at the token-weighted mean length instead, and said."""
        linear = _linear_count(self.meter)
        if linear is not None:
            a, c = linear
            return a * tokens + c * squares
        if not self._warned_packed and is_local_zero():
            from .. import MfuWarning

            self._warned_packed = True
            warnings.warn(
                "mfu: packed documents under a FLOPs count not linear in the sequence length (attention "
                "windows): counted at their token-weighted mean length",
                MfuWarning,
                stacklevel=2,
            )
        mean = max(1, round(squares / tokens)) if tokens else 1
        return tokens * self.meter.flops_per_token_at(mean)

    # Micro-batches: forward and backward.
    def micro_begin(self, inputs: Any) -> None:
        self.tokens.add(inputs)
        if self.timer is not None:
            self.timer.start()

    def micro_end(self) -> None:
        if self.timer is not None:
            self.timer.stop()

    def pause(self) -> None:
        """Evaluation or a checkpoint just ended: the time since the last step ended is not training."""
        now = _now()
        self.paused += now - self.last_step_end
        self.last_step_end = now

    def step_end(self, log: bool) -> Optional[Dict[str, Any]]:
        """An optimizer step ended; at a logging step, the interval's metrics."""
        self.steps += 1
        if not log or self.meter is None:
            self.last_step_end = _now()
            return None
        return self.flush()

    def flush(self) -> Optional[Dict[str, Any]]:
        """The metrics of the steps since the last flush (a collective where the run is distributed: every
        rank calls it at the same point), or None when no step ended since."""
        if self.steps == 0 or self.meter is None:
            return None
        synchronize(self.device)
        now = _now()
        wall = now - self.interval_start - self.paused
        fwd_bwd = self.timer.take() if self.timer is not None else None
        padded = float(self.tokens.padded)
        by_len = self.tokens.take()
        tokens = sum(by_len.values())
        flops = None
        if self._config_ok:
            flops = sum(t * self.meter.flops_per_token_at(n) for n, t in by_len.items() if n != PACKED)
            if PACKED in by_len:
                flops += self._packed_flops(by_len[PACKED], self.tokens.packed_squares)
        if self.world > 1:
            local = [tokens, padded, math.nan if flops is None else flops, wall,
                     math.nan if fwd_bwd is None else fwd_bwd]
            t = torch.tensor(local, dtype=torch.float64, device=_comm_device(self.device))
            parts = [torch.empty_like(t) for _ in range(self.world)]
            torch.distributed.all_gather(parts, t)
            rows = torch.stack(parts).tolist()
            tokens = sum(r[0] for r in rows) / self.replication
            padded = sum(r[1] for r in rows) / self.replication
            flops = None if flops is None else sum(r[2] for r in rows) / self.replication
            wall = max(r[3] for r in rows)
            fwd_bwd = None if any(math.isnan(r[4]) for r in rows) else max(r[4] for r in rows)
        if wall > 0:
            # A clock too coarse to see the interval measures nothing; it never stops the training.
            self.meter.add_interval(
                self.steps, tokens, wall, fwd_bwd or None, tokens_padded=padded, model_flops=flops
            )
        self.steps = 0
        self.paused = 0.0
        self.interval_start = self.last_step_end = _now()
        return self.meter.compute()


def _linear_count(meter: Meter) -> Optional[tuple]:
    """(a, c) where the meter's FLOPs per token at sequence length n are a + c * n for every n (mfu's
    count without attention windows), else None."""
    f1, f2 = meter.flops_per_token_at(1), meter.flops_per_token_at(2)
    c = f2 - f1
    a = f1 - c
    far = meter.flops_per_token_at(8192)
    return (a, c) if math.isclose(far, a + c * 8192, rel_tol=1e-9) else None


def tf32_enabled(device: torch.device) -> bool:
    """Whether float32 matrix multiplies run as TF32 on this device (CUDA only)."""
    if device.type != "cuda":
        return False
    return bool(torch.backends.cuda.matmul.allow_tf32) or torch.get_float32_matmul_precision() != "highest"


def torch_precision(dtype: Any, tf32: bool = False) -> Optional[str]:
    """The precision a model whose parameters are ``dtype`` trains in without autocast."""
    if dtype == torch.bfloat16:
        return "bf16"
    if dtype == torch.float16:
        return "fp16"
    if dtype == torch.float32:
        return "tf32" if tf32 else "fp32"
    if dtype == torch.float64:
        return "fp64"
    return None
