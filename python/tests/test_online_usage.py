"""Wrong usage of mfu.Meter and the trainer callbacks is refused where it is written, with the argument
named and what it accepts; what the user gives outright wins; a meter that cannot compute MFU says so once,
pointing at the user's line (issue 40)."""

import math
import warnings

import pytest

import mfu
from mfu import online

H100 = "NVIDIA H100 80GB HBM3"

BAD = [
    (dict(num_devices=0), "num_devices=0"),
    (dict(num_devices=-2), "num_devices=-2"),
    (dict(flops_per_token=-1), "flops_per_token=-1"),
    (dict(peak_flops=-5), "peak_flops=-5"),
    (dict(seq_len=0), "seq_len=0"),
    (dict(dtype="bf17"), "dtype='bf17'"),
    (dict(model_dtype="fp99"), "model_dtype='fp99'"),
    (dict(attention="causl"), "attention=\"causl\": expected one of full, causal"),
    (dict(convention="megatorn"), "unknown convention 'megatorn': expected one of mfu, torchtitan"),
    (dict(model_config="/no/such/config.json"), "model_config='/no/such/config.json': no such file"),
    (dict(model_config=42), "model_config: a int"),
    (dict(peaks=["/no/such/peaks.csv"]), "peaks: '/no/such/peaks.csv': no such file"),
    (dict(peaks="/no/such/peaks.csv"), "peaks: '/no/such/peaks.csv': no such file"),
]


@pytest.mark.parametrize("options,message", BAD)
def test_the_meter_refuses_wrong_usage_when_built(options, message):
    kwargs = dict(device=H100, dtype="bf16", flops_per_token=1e9)
    kwargs.update(options)
    with pytest.raises(ValueError) as e:
        mfu.Meter(**kwargs)
    assert message in str(e.value), str(e.value)


@pytest.mark.parametrize("options,message", BAD + [(dict(data_parallel_size=0), "data_parallel_size=0")])
def test_the_callbacks_refuse_wrong_usage_when_built(options, message):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from mfu.integrations.transformers import MfuCallback

    options = {k: v for k, v in options.items() if k != "seq_len"}  # not a callback option
    if not options:
        return
    with pytest.raises(ValueError) as e:
        MfuCallback(device=H100, **options)
    assert message in str(e.value), str(e.value)


def test_a_step_refuses_tokens_and_times_that_cannot_be():
    meter = mfu.Meter(H100, "bf16", flops_per_token=1e9)
    for tokens, step_time, message in [
        (-1, 1.0, "tokens=-1"),
        (math.nan, 1.0, "tokens=nan"),
        (None, 1.0, "tokens=None"),
        (1000, 0.0, "step_time=0.0"),
        (1000, -1.0, "step_time=-1.0"),
        (1000, math.inf, "step_time=inf"),
    ]:
        with pytest.raises(ValueError) as e:
            meter.step(tokens, step_time)
        assert message in str(e.value)
        with pytest.raises(ValueError):
            meter.update(tokens, step_time)
    with pytest.raises(ValueError, match="fwd_bwd_time=0"):
        meter.step(1000, 1.0, 0)
    # Zero tokens is a step that trained on nothing: MFU 0, not an error.
    assert meter.step(0, 1.0)["perf/mfu_wall_clock"] == 0.0


def test_what_the_user_gives_outright_wins_over_the_model_config():
    config = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 688, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 1000}
    counted = mfu.flops_per_token(config, 128)  # at the package's top level, as the docs show it
    assert counted != 5e7
    # The meter's own figure wins over the config, at construction and at every step's seq_len.
    meter = mfu.Meter(H100, "bf16", flops_per_token=5e7, model_config=config, seq_len=128)
    assert meter.step(1000, 1.0, seq_len=128)["perf/flops_per_token"] == 5e7
    # A step's own figure wins over both.
    assert meter.step(1000, 1.0, seq_len=128, flops_per_token=6e7)["perf/flops_per_token"] == 6e7
    # Without an explicit figure, the config counts at the step's length.
    meter = mfu.Meter(H100, "bf16", model_config=config)
    assert meter.step(1000, 1.0, seq_len=128)["perf/flops_per_token"] == counted


def test_a_meter_that_cannot_compute_mfu_warns_once_at_the_users_line():
    meter = mfu.Meter(H100, "bf16")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = meter.step(1000, 1.0)  # the line the warning must name
        meter.step(1000, 1.0)
        meter.update(1000, 1.0)
        meter.compute()
    assert "perf/mfu_wall_clock" not in first and first["perf/tokens_per_second"] == 1000.0
    said = [w for w in caught if issubclass(w.category, mfu.MfuWarning)]
    assert len(said) == 1, [str(w.message) for w in said]
    assert "no flops_per_token and no model_config" in str(said[0].message)
    assert said[0].filename == __file__, said[0].filename
    # A model config without a sequence length says so.
    meter = mfu.Meter(H100, "bf16", model_config={"model_type": "llama", "hidden_size": 64,
                                                  "intermediate_size": 128, "num_hidden_layers": 1,
                                                  "num_attention_heads": 2, "vocab_size": 100})
    with pytest.warns(mfu.MfuWarning, match="a model_config but no seq_len"):
        meter.step(1000, 1.0)


def test_check_options_is_the_one_rule():
    online.check_options(dtype="bf16-mixed", num_devices=8, attention="causal", convention="megatron")
    with pytest.raises(ValueError, match="data_parallel_size=0"):
        online.check_options(data_parallel_size=0)
