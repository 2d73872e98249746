"""Honest MFU while a run trains: a framework-free meter and device detection.

The arithmetic is the library's (``mfu::compute::step_metrics``, the row loop of ``mfu enrich``) and the peak
comes from the same table and matcher, so the figure logged during a run is the figure ``mfu enrich``
computes afterwards from the run's log. The meter logs under names the read stage recognises (``perf/step_s``,
``perf/tokens``, ``perf/device_name``, ...), so the log reads back without flags.

Nothing here imports torch, JAX or any framework at import time; :func:`detect_device` imports only what is
already loaded or asked for.
"""

from __future__ import annotations

import json
import math
import os
import sys
import warnings as _warnings
from typing import Any, Dict, Mapping, Optional, Sequence, Union

from . import _mfu

__all__ = [
    "Meter", "check_options", "detect_device", "normalize_precision", "flops_per_token", "METRIC_NAMES",
]

#: The keys a meter's dict may hold (after its prefix, ``perf/`` by default), and what each is.
METRIC_NAMES: Dict[str, str] = {
    "mfu_wall_clock": "model FLOP/s per device over the interval's wall-clock time / the dense peak",
    "mfu_fwd_bwd": "the same over forward and backward time only",
    "tokens_per_second": "tokens trained on per second, all devices",
    "step_s": "wall-clock seconds per optimizer step (mean over the interval)",
    "fwd_bwd_s": "forward + backward seconds per optimizer step (mean over the interval)",
    "tokens": "tokens trained on per optimizer step, all data-parallel ranks, padding excluded",
    "tokens_padded": "the same with padding counted",
    "flops_per_token": "model FLOPs per token, forward and backward (token-weighted over the interval)",
    "num_devices": "devices the FLOPs are divided over",
    "peak_flops_per_device": "dense peak FLOP/s of one device for the precision (mean over ranks)",
    "device_name": "the device name(s) resolved, ';'-joined for ranks that differ",
    "dtype": "the training precision",
    "steps": "optimizer steps the values stand for",
}


def _mfu_warning() -> type:
    # MfuWarning lives in the package root; imported late so this module has no import cycle.
    from . import MfuWarning

    return MfuWarning


def normalize_precision(spelling: Any) -> Optional[str]:
    """The dtype a trainer's precision spelling means: ``bf16`` for ``torch.bfloat16``, ``bf16-mixed``,
    ``bf16-true``; ``fp16`` for ``16-mixed``; ``fp8`` for ``transformer-engine``; ``no`` for Accelerate's
    "no" (the model's own dtype); None when mfu does not know it."""
    if spelling is None:
        return None
    return _mfu.precision(str(spelling))


def _config_json(config: Any) -> str:
    """A model configuration as JSON text: a Transformers config object, a dict, or a path to a
    ``config.json``."""
    if isinstance(config, (str, os.PathLike)):
        with open(config, encoding="utf-8") as f:
            return f.read()
    if isinstance(config, Mapping):
        return json.dumps(dict(config))
    if hasattr(config, "to_json_string"):
        return config.to_json_string(use_diff=False)
    if hasattr(config, "to_dict"):
        return json.dumps(config.to_dict(), default=str)
    raise TypeError(
        f"model_config must be a Transformers config, a dict or a path to config.json, not {type(config).__name__}"
    )


def flops_per_token(
    model_config: Any,
    seq_len: int,
    *,
    attention: str = "full",
    recompute: str = "none",
    convention: str = "mfu",
) -> float:
    """Model FLOPs per token (forward and backward) by ``mfu flops``' convention, from a Transformers config
    object (``model.config``), a dict or a path to ``config.json``, at sequence length ``seq_len``. With
    ``convention`` ("torchtitan", "megatron", "nanogpt", "hf", ...; ``mfu flops --compare`` lists them),
    the way that framework counts, to compare with the MFU it logs."""
    return _mfu.flops_per_token(
        _config_json(model_config), int(seq_len), attention, recompute, "model_config", convention
    )[0]


# ---- device detection -------------------------------------------------------------------------------


def _torch():
    return sys.modules.get("torch")


def detect_device(framework: Optional[str] = None) -> str:
    """The name of the accelerator this process trains on, as the peak table spells it where it can:
    ``torch.cuda.get_device_name()`` for NVIDIA and ROCm GPUs, the XPU's name, the TPU's version (torch_xla,
    ``TPU_ACCELERATOR_TYPE`` or JAX's ``device_kind``), AWS Trainium or Inferentia under Neuron, ``Apple
    MPS``, else ``CPU``. ``framework`` ("torch" or "jax") says which to ask; by default whichever is loaded,
    torch first. Never raises: a detection that fails falls through to the next."""
    torch = _torch()
    if framework == "torch" and torch is None:
        import torch  # noqa: F811
    use_jax = framework == "jax" or (framework is None and torch is None and "jax" in sys.modules)
    if use_jax:
        name = _jax_device()
        if name:
            return name
    if torch is not None:
        name = _torch_device(torch)
        if name:
            return name
    if framework is None and "jax" in sys.modules:
        name = _jax_device()
        if name:
            return name
    tpu = os.environ.get("TPU_ACCELERATOR_TYPE")
    if tpu:
        return _tpu_name(tpu)
    neuron = _neuron_device()
    if neuron:
        return neuron
    return "CPU"


def _torch_device(torch: Any) -> Optional[str]:
    try:
        if torch.cuda.is_available():
            return torch.cuda.get_device_name(torch.cuda.current_device())
    except Exception:
        pass
    try:
        xpu = getattr(torch, "xpu", None)
        if xpu is not None and xpu.is_available():
            return xpu.get_device_name(xpu.current_device())
    except Exception:
        pass
    xla = _torch_xla_device()
    if xla:
        return xla
    neuron = _neuron_device()
    if neuron:
        return neuron
    try:
        if torch.backends.mps.is_available():
            return "Apple MPS"
    except Exception:
        pass
    return None


def _torch_xla_device() -> Optional[str]:
    """The device under torch_xla: a TPU from its accelerator type (``TPU_ACCELERATOR_TYPE``) or torch_xla's
    TPU version, an AWS Neuron core from the Neuron platform."""
    if "torch_xla" not in sys.modules:
        return None
    try:
        import torch_xla.core.xla_model as xm  # type: ignore

        kind = xm.xla_device_hw(xm.xla_device())
    except Exception:
        return None
    if kind == "NEURON":
        return _neuron_device(loaded=True)
    if kind != "TPU":
        return None
    tpu_type = os.environ.get("TPU_ACCELERATOR_TYPE")
    if tpu_type:
        return _tpu_name(tpu_type)
    try:
        from torch_xla._internal import tpu  # type: ignore

        version = int(tpu.version())
    except Exception:
        return None
    # The version alone cannot tell v5e from v5p: a name that matches both equally, so MFU is omitted and
    # the warning names the two (set TPU_ACCELERATOR_TYPE, or pass device=).
    return _TPU_BY_VERSION.get(version, "TPU v5e or v5p" if version == 5 else f"TPU v{version}")


#: torch_xla's TPU versions that name one chip (v5 is v5e or v5p, so it is not here).
_TPU_BY_VERSION = {2: "TPU v2", 3: "TPU v3", 4: "TPU v4", 6: "TPU v6 lite"}


def _tpu_name(accelerator_type: str) -> str:
    """``v5litepod-8`` -> ``TPU v5litepod``; ``v4-32`` -> ``TPU v4``; ``v6e-8`` -> ``TPU v6e``: the chip,
    without the slice size."""
    chip = accelerator_type.strip().rsplit("-", 1)[0] if "-" in accelerator_type else accelerator_type
    return chip if chip.lower().startswith("tpu") else f"TPU {chip}"


def _jax_device() -> Optional[str]:
    """JAX's ``device_kind`` of its first device ("TPU v4", "TPU v5 lite", "NVIDIA H100 80GB HBM3"); None
    on the CPU."""
    try:
        import jax  # type: ignore

        device = jax.devices()[0]
        if device.platform == "cpu":
            return None
        kind = device.device_kind
        if device.platform == "tpu" and not kind.lower().startswith("tpu"):
            kind = f"TPU {kind}"
        return kind
    except Exception:
        return None


#: Where EC2 (Nitro) instances give their instance type without a network call.
_DMI_PRODUCT = "/sys/devices/virtual/dmi/id/product_name"
_NEURON_CHIPS = {"trn1": "AWS Trainium", "trn1n": "AWS Trainium", "trn2": "AWS Trainium2",
                 "trn2u": "AWS Trainium2", "inf2": "AWS Inferentia2"}


def _neuron_device(loaded: bool = False) -> Optional[str]:
    """AWS Trainium or Inferentia under the Neuron SDK: the chip from the Neuron platform target
    (``NEURON_PLATFORM_TARGET_OVERRIDE``), else from the instance type (trn1, trn2, inf2). ``loaded``: the
    XLA device already said it is a Neuron core."""
    if not loaded and "torch_neuronx" not in sys.modules:
        return None
    family = os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE", "").strip().lower()
    if not family:
        try:
            with open(_DMI_PRODUCT, encoding="ascii") as f:
                family = f.read().strip().split(".")[0].lower()
        except OSError:
            family = ""
    return _NEURON_CHIPS.get(family, "AWS Neuron device (chip unknown: set NEURON_PLATFORM_TARGET_OVERRIDE)")


# ---- the meter ----------------------------------------------------------------------------------------


def _positive(name: str, value: Any) -> Optional[float]:
    if value is None:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r}: must be a positive number") from None
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name}={value!r}: must be a positive number")
    return v


#: The precisions mfu knows, for the error that names them.
_PRECISIONS = (
    "bf16, fp16, fp32, tf32, fp8, fp6, fp4, int8, or a spelling of one (torch.bfloat16, bf16-mixed, "
    "16-mixed, amp_bf16, transformer-engine, ...)"
)


def check_options(
    *,
    dtype: Optional[str] = None,
    model_dtype: Optional[str] = None,
    num_devices: Optional[float] = None,
    data_parallel_size: Optional[float] = None,
    flops_per_token: Optional[float] = None,
    peak_flops: Optional[float] = None,
    seq_len: Optional[int] = None,
    model_config: Any = None,
    peaks: Any = None,
    attention: str = "full",
    convention: str = "mfu",
) -> None:
    """Refuses wrong usage where it is written, before any training: a ``ValueError`` naming the argument
    and what it accepts. What :class:`Meter` and the trainer callbacks check when they are built."""
    for name, value in (
        ("num_devices", num_devices),
        ("data_parallel_size", data_parallel_size),
        ("flops_per_token", flops_per_token),
        ("peak_flops", peak_flops),
        ("seq_len", seq_len),
    ):
        _positive(name, value)
    for name, value in (("dtype", dtype), ("model_dtype", model_dtype)):
        if value is not None and normalize_precision(value) is None:
            raise ValueError(f"{name}={value!r}: not a precision mfu knows; give {_PRECISIONS}")
    _mfu.check_counting(str(attention), "none", str(convention))
    if isinstance(model_config, (str, os.PathLike)):
        if not os.path.isfile(model_config):
            raise ValueError(
                f"model_config={os.fspath(model_config)!r}: no such file; give a Transformers config, a dict "
                "or the path of a config.json"
            )
    elif model_config is not None and not (
        isinstance(model_config, Mapping)
        or hasattr(model_config, "to_json_string")
        or hasattr(model_config, "to_dict")
    ):
        raise ValueError(
            f"model_config: a {type(model_config).__name__}; give a Transformers config, a dict or the path "
            "of a config.json"
        )
    for path in _paths_of(peaks):
        if not os.path.isfile(path):
            raise ValueError(
                f"peaks: {os.fspath(path)!r}: no such file; give CSV files of peak entries, as mfu enrich "
                "--peaks takes"
            )


def _paths_of(peaks: Any) -> list:
    """``peaks`` as a list of paths: one path, or a sequence of them."""
    if peaks is None:
        return []
    if isinstance(peaks, (str, os.PathLike)):
        return [peaks]
    return list(peaks)


def _check_step(tokens: Any, step_time: Any, fwd_bwd_time: Any) -> None:
    """A step's tokens (0 or more) and times (above 0), refused with the argument named otherwise."""
    try:
        t = float(tokens)
    except (TypeError, ValueError):
        t = math.nan
    if not (math.isfinite(t) and t >= 0):
        raise ValueError(f"tokens={tokens!r}: must be a number of tokens, 0 or more")
    for name, value in (("step_time", step_time), ("fwd_bwd_time", fwd_bwd_time)):
        if value is not None:
            _positive(name, value)


class Meter:
    """MFU and throughput of a training loop, step by step or over an interval, by the library's arithmetic.

    ``device`` is this process's accelerator (detected when None), or a list of names, one per rank (their
    mean peak is used when every one is known); ``dtype`` the training precision in any spelling mfu reads;
    ``num_devices`` the devices the work is divided over (the world size); ``flops_per_token`` the model
    FLOPs per token, or ``model_config`` (a Transformers config, a dict or a config.json path) with the
    sequence length given here or per step. ``peaks``, ``peak_flops`` and ``model_dtype`` are ``mfu
    enrich``'s options. When the peak is unknown MFU is omitted, never guessed, and one ``MfuWarning`` says
    which device and what to pass; throughput is still given.

    ``step(...)`` gives one step's metrics; ``update(...)`` adds a step to the current interval and
    ``compute()`` gives the interval's metrics (ratios of sums, never means of ratios) and starts a new one.
    Keys carry ``prefix`` (``perf/``), and read back through ``mfu enrich`` without flags.
    """

    def __init__(
        self,
        device: Union[str, Sequence[str], None] = None,
        dtype: Optional[str] = None,
        *,
        num_devices: float = 1,
        flops_per_token: Optional[float] = None,
        model_config: Any = None,
        seq_len: Optional[int] = None,
        attention: str = "full",
        convention: str = "mfu",
        peaks: Optional[Sequence[Union[str, "os.PathLike[str]"]]] = None,
        peak_flops: Optional[float] = None,
        model_dtype: Optional[str] = None,
        prefix: str = "perf/",
        warn: bool = True,
    ) -> None:
        check_options(
            dtype=dtype, model_dtype=model_dtype, num_devices=num_devices,
            flops_per_token=flops_per_token, peak_flops=peak_flops, seq_len=seq_len,
            model_config=model_config, peaks=peaks, attention=attention, convention=convention,
        )
        if device is None:
            device = detect_device()
        self.device = device
        self.dtype = None if dtype is None else str(dtype)
        self.num_devices = _positive("num_devices", num_devices)
        self.prefix = prefix
        self._flops_per_token = _positive("flops_per_token", flops_per_token)
        # What the user gives outright wins over a count from the model config.
        self._explicit_flops_per_token = self._flops_per_token
        self._warned_no_flops = not warn
        self._config = None if model_config is None else _config_json(model_config)
        self._attention = attention
        self._convention = convention
        self._seq_len = None if seq_len is None else int(seq_len)
        self._fpt_cache: Dict[int, float] = {}
        if self._config is not None and self._flops_per_token is None and self._seq_len is not None:
            self._flops_per_token = self.flops_per_token_at(self._seq_len)
        peak_paths = [os.fspath(p) for p in _paths_of(peaks)] or None
        resolved, peak, why, hint = _mfu.resolve(
            device, self.dtype, peak_paths, _positive("peak_flops", peak_flops), model_dtype
        )
        self.resolved_device: Optional[str] = resolved
        self.peak_flops_per_device: Optional[float] = peak
        #: Why MFU is omitted (None when the peak is known), and what to pass.
        self.unresolved: Optional[str] = None if why is None else f"{why}: {hint}"
        if why is not None and warn:
            _warnings.warn(
                f"mfu: MFU omitted, {why} (device {self.device_label!r}, dtype {self.dtype!r}): "
                f"{_python_hint(hint)}",
                _mfu_warning(),
                stacklevel=2,
            )
        self._warned_above_one = False
        self._reset()

    @property
    def device_label(self) -> str:
        d = self.device
        return d if isinstance(d, str) else ";".join(d)

    def flops_per_token_at(self, seq_len: int) -> float:
        """FLOPs per token at ``seq_len`` from the model config (cached per length)."""
        if self._config is None:
            raise ValueError("no model_config to count FLOPs per token from: give flops_per_token")
        fpt = self._fpt_cache.get(seq_len)
        if fpt is None:
            fpt = _mfu.flops_per_token(
                self._config, int(seq_len), self._attention, "none", "model_config", self._convention
            )[0]
            self._fpt_cache[seq_len] = fpt
        return fpt

    def _fpt(self, seq_len: Optional[int], flops_per_token: Optional[float]) -> Optional[float]:
        # The step's own figure, then the meter's explicit one, then the model config's count.
        if flops_per_token is not None:
            return _positive("flops_per_token", flops_per_token)
        if self._explicit_flops_per_token is not None:
            return self._explicit_flops_per_token
        if self._config is not None and seq_len is not None:
            return self.flops_per_token_at(int(seq_len))
        return self._flops_per_token

    def _reset(self) -> None:
        self._steps = 0
        self._tokens = 0.0
        self._padded: Optional[float] = 0.0
        self._flops = 0.0
        self._flops_known = True
        self._time = 0.0
        self._fwd_bwd: Optional[float] = 0.0

    def step(
        self,
        tokens: float,
        step_time: float,
        fwd_bwd_time: Optional[float] = None,
        seq_len: Optional[int] = None,
        *,
        flops_per_token: Optional[float] = None,
        tokens_padded: Optional[float] = None,
    ) -> Dict[str, Any]:
        """One step's metrics: ``tokens`` trained on by all devices, ``step_time`` wall-clock seconds,
        ``fwd_bwd_time`` seconds of forward and backward (optional), ``seq_len`` the batch's sequence
        length when FLOPs per token come from the model config."""
        _check_step(tokens, step_time, fwd_bwd_time)
        fpt = self._fpt(seq_len, flops_per_token)
        return self._metrics(1, tokens, tokens_padded, fpt, step_time, fwd_bwd_time)

    def update(
        self,
        tokens: float,
        step_time: float,
        fwd_bwd_time: Optional[float] = None,
        seq_len: Optional[int] = None,
        *,
        flops_per_token: Optional[float] = None,
        tokens_padded: Optional[float] = None,
    ) -> None:
        """Adds one step to the current interval (see :meth:`compute`)."""
        _check_step(tokens, step_time, fwd_bwd_time)
        fpt = self._fpt(seq_len, flops_per_token)
        self.add_interval(1, tokens, step_time, fwd_bwd_time, tokens_padded=tokens_padded,
                          model_flops=None if fpt is None else tokens * fpt)

    def add_interval(
        self,
        steps: int,
        tokens: float,
        step_time: float,
        fwd_bwd_time: Optional[float] = None,
        *,
        tokens_padded: Optional[float] = None,
        model_flops: Optional[float] = None,
    ) -> None:
        """Adds totals over ``steps`` optimizer steps: tokens, seconds, fwd+bwd seconds, padded tokens, and
        the model FLOPs (tokens x FLOPs per token, summed where the sequence length varied); without
        ``model_flops``, the meter's own FLOPs per token."""
        _check_step(tokens, step_time, fwd_bwd_time)
        self._steps += int(steps)
        self._tokens += float(tokens)
        self._time += float(step_time)
        if tokens_padded is None or self._padded is None:
            self._padded = None
        else:
            self._padded += float(tokens_padded)
        if fwd_bwd_time is None or self._fwd_bwd is None:
            self._fwd_bwd = None
        else:
            self._fwd_bwd += float(fwd_bwd_time)
        if model_flops is None:
            if self._flops_per_token is None:
                self._flops_known = False
            else:
                self._flops += float(tokens) * self._flops_per_token
        else:
            self._flops += float(model_flops)

    def compute(self) -> Dict[str, Any]:
        """The current interval's metrics, Σ FLOPs / Σ time (per-step means of tokens and times, so that a
        row reads back as one step), and a new interval started. Empty when no step was added."""
        k = self._steps
        if k == 0:
            return {}
        if not self._flops_known:
            fpt = None
        elif self._tokens > 0:
            fpt = self._flops / self._tokens  # token-weighted where the sequence length varied
        else:
            fpt = self._flops_per_token
        out = self._metrics(
            k,
            self._tokens / k,
            None if self._padded is None else self._padded / k,
            fpt,
            self._time / k,
            None if self._fwd_bwd is None else self._fwd_bwd / k,
        )
        self._reset()
        return out

    def _metrics(
        self,
        steps: int,
        tokens: Optional[float],
        tokens_padded: Optional[float],
        fpt: Optional[float],
        step_time: Optional[float],
        fwd_bwd_time: Optional[float],
    ) -> Dict[str, Any]:
        tps, _achieved, mfu, mfu_fb = _mfu.step_metrics(
            step_time, tokens, self.num_devices, fpt, self.peak_flops_per_device, fwd_bwd_time
        )
        if fpt is None and not self._warned_no_flops:
            self._warned_no_flops = True
            why = (
                "a model_config but no seq_len"
                if self._config is not None
                else "no flops_per_token and no model_config"
            )
            _warnings.warn(
                f"mfu: MFU omitted, FLOPs per token unknown ({why}): give flops_per_token=, or "
                "model_config= with seq_len= (here or per step)",
                _mfu_warning(),
                stacklevel=3,
            )
        p = self.prefix
        out: Dict[str, Any] = {}
        if mfu is not None:
            out[p + "mfu_wall_clock"] = mfu
            if mfu > 1 and not self._warned_above_one:
                self._warned_above_one = True
                _warnings.warn(
                    f"mfu: MFU {mfu:.3f} is above 1 on {self.device_label!r} in {self.dtype}: the FLOPs per "
                    f"token ({fpt:.4g}) or the device count ({self.num_devices:g}) is wrong",
                    _mfu_warning(),
                    stacklevel=3,
                )
        if mfu_fb is not None:
            out[p + "mfu_fwd_bwd"] = mfu_fb
        if tps is not None:
            out[p + "tokens_per_second"] = tps
        if step_time is not None:
            out[p + "step_s"] = step_time
        if fwd_bwd_time is not None:
            out[p + "fwd_bwd_s"] = fwd_bwd_time
        if tokens is not None:
            out[p + "tokens"] = tokens
        if tokens_padded is not None:
            out[p + "tokens_padded"] = tokens_padded
        if fpt is not None:
            out[p + "flops_per_token"] = fpt
        if self.num_devices is not None:
            out[p + "num_devices"] = self.num_devices
        if self.peak_flops_per_device is not None:
            out[p + "peak_flops_per_device"] = self.peak_flops_per_device
        out[p + "device_name"] = self.device_label
        if self.dtype is not None:
            out[p + "dtype"] = self.dtype
        out[p + "steps"] = steps
        return out


def _python_hint(hint: str) -> str:
    """The library's hint in Python's terms: ``--peak-flops F`` is ``peak_flops=F``."""
    for flag, name in (
        ("--peak-flops", "peak_flops="),
        ("--peaks", "peaks=["),
        ("--device", "device="),
        ("--dtype", "dtype="),
        ("--model-dtype", "model_dtype="),
    ):
        hint = hint.replace(flag + " ", name)
    return hint.replace("peaks=[FILE", "peaks=[FILE]")
