"""mfu.Meter (the library's per-step arithmetic through the binding) and device detection with each
framework's device API replaced by a stand-in that returns the names those APIs return."""

import sys
import types
import warnings

import pyarrow as pa
import pytest

import mfu
from mfu import online

H100 = "NVIDIA H100 80GB HBM3"


def test_import_mfu_loads_no_framework():
    import subprocess

    code = "import sys, mfu, mfu.online; print(sorted(m for m in ('torch', 'transformers', 'lightning', 'jax') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_meter_step_equals_enrich_bit_for_bit():
    meter = mfu.Meter(H100, "bf16", num_devices=8, flops_per_token=4.2e9)
    rows = [(1.0e6, 2.0, 1.5), (524288.0, 0.73, 0.61), (3.0, 1e-3, None)]
    table = pa.table({
        "tokens": [r[0] for r in rows], "step_time": [r[1] for r in rows], "fwd_bwd_time": [r[2] for r in rows],
    })
    enriched = mfu.enrich(table, device=H100, dtype="bf16", num_devices=8, flops_per_token=4.2e9).to_pylist()
    for (tokens, step_time, fwd_bwd), row in zip(rows, enriched):
        got = meter.step(tokens, step_time, fwd_bwd)
        assert 0 < got["perf/mfu_wall_clock"] < 1
        assert got["perf/mfu_wall_clock"] == row["mfu_wall_clock"]
        assert got["perf/tokens_per_second"] == row["tokens_per_second"]
        assert got.get("perf/mfu_fwd_bwd") == row["mfu_fwd_bwd"]
        assert got["perf/peak_flops_per_device"] == row["peak_flops_per_device"] == 989.4e12


def test_an_interval_is_a_ratio_of_sums():
    meter = mfu.Meter(H100, "bf16", num_devices=2, flops_per_token=1e9)
    meter.update(1000, 1.0)
    meter.update(3000, 0.5)  # a fast step: the mean of ratios would overstate the interval
    m = meter.compute()
    assert m["perf/steps"] == 2 and m["perf/tokens"] == 2000 and m["perf/step_s"] == 0.75
    assert m["perf/mfu_wall_clock"] == pytest.approx(4000 * 1e9 / (2 * 1.5) / 989.4e12, rel=1e-15)
    assert meter.compute() == {}


def test_flops_per_token_from_a_config_and_the_batch_length():
    config = {"model_type": "llama", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 128}
    meter = mfu.Meter(H100, "bf16", model_config=config)
    # 6 x (matmul weights: LM head 32x128 + 2 layers x (q 32x32 + k, v 2x32x16 + o 32x32 + MLP 3x32x64))
    # + 12 x L x H x d x S.
    n = 32 * 128 + 2 * (32 * 32 + 2 * 32 * 16 + 32 * 32 + 3 * 32 * 64)
    for seq in (16, 64):
        assert meter.step(100, 1.0, seq_len=seq)["perf/flops_per_token"] == 6 * n + 12 * 2 * 4 * 8 * seq
    # An explicit figure always wins.
    assert meter.step(100, 1.0, seq_len=16, flops_per_token=5.0)["perf/flops_per_token"] == 5.0


def test_unknown_device_omits_mfu_with_one_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        meter = mfu.Meter("Acme Tensor Engine X9", "bf16", flops_per_token=1e9)
        m = [meter.step(100, 0.1) for _ in range(3)]
    assert len([w for w in caught if issubclass(w.category, mfu.MfuWarning)]) == 1
    assert "Acme Tensor Engine X9" in str(caught[0].message) and "peak_flops=" in str(caught[0].message)
    assert all("perf/mfu_wall_clock" not in x and x["perf/tokens_per_second"] == 1000 for x in m)
    assert meter.unresolved is not None


def test_device_without_a_rate_for_the_precision_omits_mfu():
    with pytest.warns(mfu.MfuWarning, match="no bf16 rate"):
        meter = mfu.Meter("Tesla T4", "bf16", flops_per_token=1e9)
    assert "perf/mfu_wall_clock" not in meter.step(100, 0.1)


@pytest.mark.parametrize(
    "spelling, dtype",
    [("bf16-mixed", "bf16"), ("16-mixed", "fp16"), ("32-true", "fp32"), ("bf16-true", "bf16"),
     ("transformer-engine", "fp8"), ("torch.bfloat16", "bf16"), ("fp8", "fp8"), ("no", "no"), ("nonsense", None)],
)
def test_precisions_trainers_spell(spelling, dtype):
    assert online.normalize_precision(spelling) == dtype


def fake_torch(cuda=None, xpu=None, mps=False):
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(
        is_available=lambda: cuda is not None, current_device=lambda: 0, get_device_name=lambda i=0: cuda
    )
    torch.xpu = types.SimpleNamespace(
        is_available=lambda: xpu is not None, current_device=lambda: 0, get_device_name=lambda i=0: xpu
    )
    torch.backends = types.SimpleNamespace(mps=types.SimpleNamespace(is_available=lambda: mps))
    return torch


def fake_torch_xla(monkeypatch, hw, version=None):
    xla = types.ModuleType("torch_xla")
    core = types.ModuleType("torch_xla.core")
    xm = types.ModuleType("torch_xla.core.xla_model")
    xm.xla_device = lambda: "xla:0"
    xm.xla_device_hw = lambda device: hw
    internal = types.ModuleType("torch_xla._internal")
    internal.tpu = types.SimpleNamespace(version=lambda: version)
    xla.core, core.xla_model, xla._internal = core, xm, internal
    for name, module in [("torch_xla", xla), ("torch_xla.core", core), ("torch_xla.core.xla_model", xm),
                         ("torch_xla._internal", internal)]:
        monkeypatch.setitem(sys.modules, name, module)


def fake_jax(monkeypatch, platform, kind):
    jax = types.ModuleType("jax")
    jax.devices = lambda: [types.SimpleNamespace(platform=platform, device_kind=kind)]
    monkeypatch.setitem(sys.modules, "jax", jax)


def resolves(name):
    return mfu.lookup(name)["device"]


@pytest.mark.parametrize(
    "name, entry",
    [(H100, "H100 SXM5"), ("NVIDIA A100-SXM4-40GB", "A100 SXM4"), ("AMD Instinct MI300X", "Instinct MI300X"),
     ("AMD Instinct MI250X/MI250", "Instinct MI250X (GCD)")],
)
def test_detects_cuda_and_rocm_names(monkeypatch, name, entry):
    monkeypatch.delenv("TPU_ACCELERATOR_TYPE", raising=False)
    monkeypatch.setitem(sys.modules, "torch", fake_torch(cuda=name))
    assert online.detect_device() == name
    assert resolves(name) == entry


def test_detects_xpu_and_mps(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", fake_torch(xpu="Intel(R) Data Center GPU Max 1550"))
    assert online.detect_device() == "Intel(R) Data Center GPU Max 1550"
    assert resolves(online.detect_device()) == "Data Center GPU Max 1550"
    monkeypatch.setitem(sys.modules, "torch", fake_torch(mps=True))
    assert online.detect_device() == "Apple MPS"
    assert resolves("Apple MPS") is None  # not in the table: MFU omitted, never guessed


@pytest.mark.parametrize(
    "accelerator_type, entry",
    [("v4-32", "TPU v4"), ("v5litepod-8", "TPU v5e"), ("v5p-8", "TPU v5p"), ("v6e-8", "TPU v6e")],
)
def test_detects_tpus_under_torch_xla(monkeypatch, accelerator_type, entry):
    monkeypatch.setitem(sys.modules, "torch", fake_torch())
    fake_torch_xla(monkeypatch, "TPU", version=int(accelerator_type[1]))
    monkeypatch.setenv("TPU_ACCELERATOR_TYPE", accelerator_type)
    assert resolves(online.detect_device()) == entry


def test_torch_xla_version_alone(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", fake_torch())
    monkeypatch.delenv("TPU_ACCELERATOR_TYPE", raising=False)
    fake_torch_xla(monkeypatch, "TPU", version=4)
    assert resolves(online.detect_device()) == "TPU v4"
    fake_torch_xla(monkeypatch, "TPU", version=5)  # v5e or v5p: neither is guessed
    assert resolves(online.detect_device()) is None


@pytest.mark.parametrize(
    "kind, entry",
    [("TPU v4", "TPU v4"), ("TPU v5 lite", "TPU v5e"), ("TPU v5", "TPU v5p"), ("TPU v6 lite", "TPU v6e")],
)
def test_detects_tpus_under_jax(monkeypatch, kind, entry):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    fake_jax(monkeypatch, "tpu", kind)
    assert online.detect_device() == kind
    assert resolves(kind) == entry


@pytest.mark.parametrize(
    "target, entry",
    [("trn1", "Trainium (NeuronCore-v2)"), ("trn2", "Trainium2 (logical core)"), ("inf2", "Inferentia2 (NeuronCore-v2)")],
)
def test_detects_neuron_cores(monkeypatch, target, entry):
    monkeypatch.setitem(sys.modules, "torch", fake_torch())
    fake_torch_xla(monkeypatch, "NEURON")
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", target)
    assert resolves(online.detect_device()) == entry


def test_neuron_from_the_instance_type(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "torch", fake_torch())
    fake_torch_xla(monkeypatch, "NEURON")
    monkeypatch.delenv("NEURON_PLATFORM_TARGET_OVERRIDE", raising=False)
    product = tmp_path / "product_name"
    product.write_text("trn1.32xlarge\n")
    monkeypatch.setattr(online, "_DMI_PRODUCT", str(product))
    assert online.detect_device() == "AWS Trainium"
    monkeypatch.setattr(online, "_DMI_PRODUCT", str(tmp_path / "absent"))
    assert resolves(online.detect_device()) is None


def test_cpu_when_nothing_else(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", fake_torch())
    monkeypatch.delitem(sys.modules, "jax", raising=False)
    monkeypatch.delenv("TPU_ACCELERATOR_TYPE", raising=False)
    assert online.detect_device() == "CPU"


@pytest.mark.parametrize(
    "module, extra",
    [("mfu.integrations.transformers", "./python[transformers]"), ("mfu.integrations.lightning", "./python[lightning]")],
)
def test_an_integration_without_its_framework_says_what_to_install(module, extra):
    # Never `pip install 'mfu[...]'`: the package index's `mfu` is another project.
    import subprocess

    # torch made unimportable in a fresh interpreter: what a user without the extra sees.
    code = f"import sys; sys.modules['torch'] = None\ntry:\n    import {module}\nexcept ImportError as e:\n    print(e)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert extra in out.stdout and "'mfu[" not in out.stdout, out
