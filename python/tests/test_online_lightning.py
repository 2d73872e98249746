"""MfuCallback in a real Lightning Trainer on CPU, its CSVLogger's metrics.csv read back through mfu enrich."""

import json
import math
import subprocess
import warnings

import pytest

torch = pytest.importorskip("torch")
pl = pytest.importorskip("lightning.pytorch")
pytest.importorskip("transformers")

import mfu  # noqa: E402
from mfu.integrations.lightning import MfuCallback  # noqa: E402

from conftest import cli_binary  # noqa: E402
from online_util import REAL, SEQ, PaddedTokens, tiny_llama, tiny_llama_config  # noqa: E402

H100 = "NVIDIA H100 80GB HBM3"
H100_BF16 = 989.4e12
BATCH, ACCUM, STEPS, LOG_EVERY = 4, 2, 6, 2


class TinyLM(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.model = tiny_llama()

    def training_step(self, batch, batch_idx):
        loss = self.model(**batch).loss
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


def fit(tmp_path, callback, **kwargs):
    from lightning.pytorch.loggers import CSVLogger

    trainer = pl.Trainer(
        accelerator="cpu",
        devices=1,
        max_steps=STEPS,
        accumulate_grad_batches=ACCUM,
        log_every_n_steps=LOG_EVERY,
        logger=CSVLogger(str(tmp_path), name="run", version=0),
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[callback],
        **kwargs,
    )
    loader = torch.utils.data.DataLoader(PaddedTokens(), batch_size=BATCH)
    trainer.fit(TinyLM(), loader)
    return trainer


def test_lightning_logs_the_hand_computation_and_reads_back(tmp_path):
    callback = MfuCallback(device=H100)
    fit(tmp_path, callback, precision="bf16-true")
    logs = callback.history
    # Lightning's own step for optimizer steps 2, 4 and 6: the steps before each, as its train_loss has.
    assert [e["step"] for e in logs] == [1, 3, 5]
    fpt = mfu.online.flops_per_token(tiny_llama_config(), SEQ)
    for e in logs:
        assert e["perf/steps"] == LOG_EVERY
        assert e["perf/tokens"] == BATCH * ACCUM * REAL
        assert e["perf/tokens_padded"] == BATCH * ACCUM * SEQ
        assert e["perf/dtype"] == "bf16"  # Lightning's "bf16-true"
        assert e["perf/peak_flops_per_device"] == H100_BF16
        want = e["perf/tokens"] * fpt / e["perf/step_s"] / H100_BF16
        assert e["perf/mfu_wall_clock"] == pytest.approx(want, rel=1e-15)
        assert 0 < e["perf/fwd_bwd_s"] < e["perf/step_s"]

    binary = cli_binary()
    if not binary.exists():
        pytest.skip(f"{binary} is not built")
    metrics = tmp_path / "run" / "version_0" / "metrics.csv"
    out = tmp_path / "enriched.jsonl"
    subprocess.run([str(binary), "enrich", str(metrics), "-o", str(out), "--quiet"],
                   check=True, capture_output=True, text=True)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    got = {r["step"]: r for r in rows if r.get("mfu_wall_clock") is not None}
    assert sorted(got) == [e["step"] for e in logs]
    # One row a logged step: Lightning's loss and mfu's figures merged, no row without a device.
    assert all(r.get("train_loss") is not None for r in got.values()), rows
    assert len(rows) == len(logs), rows
    for e in logs:
        r = got[e["step"]]
        assert r["resolved_device"] == "H100 SXM5"
        assert math.isclose(r["mfu_wall_clock"], e["perf/mfu_wall_clock"], rel_tol=1e-12)
        assert math.isclose(r["mfu_fwd_bwd"], e["perf/mfu_fwd_bwd"], rel_tol=1e-12)


def test_lightning_unknown_device_one_warning(tmp_path):
    callback = MfuCallback()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit(tmp_path, callback)
    ours = [w for w in caught if issubclass(w.category, mfu.MfuWarning)]
    assert len(ours) == 1, [str(w.message) for w in ours]
    for e in callback.history:
        assert "perf/mfu_wall_clock" not in e and e["perf/tokens_per_second"] > 0
        assert e["perf/dtype"] == "fp32"  # "32-true"
