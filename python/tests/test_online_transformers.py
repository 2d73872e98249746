"""MfuCallback in a real transformers.Trainer (and a TRL trainer) on CPU, read back through mfu enrich."""

import json
import math
import subprocess
import warnings

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import mfu  # noqa: E402
from mfu.integrations.transformers import MfuCallback  # noqa: E402

from conftest import cli_binary  # noqa: E402
from online_util import REAL, SEQ, PaddedTokens, tiny_llama, tiny_llama_config  # noqa: E402

H100 = "NVIDIA H100 80GB HBM3"
H100_BF16 = 989.4e12
BATCH, ACCUM, STEPS, LOG_EVERY = 4, 2, 6, 2


def train(tmp_path, callback, report_to=("none",), **args):
    from transformers import Trainer, TrainingArguments

    options = dict(
        output_dir=str(tmp_path),
        per_device_train_batch_size=BATCH,
        gradient_accumulation_steps=ACCUM,
        max_steps=STEPS,
        logging_steps=LOG_EVERY,
        report_to=list(report_to),
        use_cpu=True,
        save_strategy="no",
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    options.update(args)
    targs = TrainingArguments(**options)
    trainer = Trainer(model=tiny_llama(), args=targs, train_dataset=PaddedTokens(), callbacks=[callback])
    trainer.train()
    trainer.save_state()
    return trainer


def perf_logs(trainer):
    return [e for e in trainer.state.log_history if "perf/steps" in e]


def test_logged_mfu_is_the_hand_computation(tmp_path):
    callback = MfuCallback(device=H100, dtype="bf16")
    trainer = train(tmp_path, callback)
    logs = perf_logs(trainer)
    assert [e["step"] for e in logs] == [2, 4, 6]
    fpt = mfu.online.flops_per_token(tiny_llama_config(), SEQ)
    for e in logs:
        assert e["perf/steps"] == LOG_EVERY
        # One optimizer step = ACCUM micro-batches of BATCH sequences; padding excluded, counted beside.
        assert e["perf/tokens"] == BATCH * ACCUM * REAL
        assert e["perf/tokens_padded"] == BATCH * ACCUM * SEQ
        assert e["perf/flops_per_token"] == fpt
        assert e["perf/num_devices"] == 1
        assert e["perf/peak_flops_per_device"] == H100_BF16
        assert e["perf/device_name"] == H100 and e["perf/dtype"] == "bf16"
        assert 0 < e["perf/fwd_bwd_s"] < e["perf/step_s"]
        want = e["perf/tokens"] * fpt / (1 * e["perf/step_s"]) / H100_BF16
        assert e["perf/mfu_wall_clock"] == pytest.approx(want, rel=1e-15)
        want_fb = e["perf/tokens"] * fpt / e["perf/fwd_bwd_s"] / H100_BF16
        assert e["perf/mfu_fwd_bwd"] == pytest.approx(want_fb, rel=1e-15)
        assert e["perf/tokens_per_second"] == pytest.approx(e["perf/tokens"] / e["perf/step_s"], rel=1e-15)
        assert "loss" in e  # merged into the Trainer's own training log, not a log of its own
    # The end-of-training summary is not a step.
    summary = trainer.state.log_history[-1]
    assert "train_runtime" in summary and "perf/steps" not in summary


def test_one_callback_serves_a_second_trainer(tmp_path):
    # The same callback instance given to two Trainers, one after the other: both runs log MFU.
    callback = MfuCallback(device=H100, dtype="bf16", num_devices=1)
    first = train(tmp_path / "first", callback)
    second = train(tmp_path / "second", callback)
    for trainer in (first, second):
        logs = perf_logs(trainer)
        assert [e["step"] for e in logs] == [2, 4, 6], logs
        assert all(0 < e["perf/mfu_wall_clock"] < 1 for e in logs)
    assert len(callback.history) == 6


def test_mfu_is_logged_whenever_the_trainer_logs(tmp_path):
    # Logging each epoch (8 steps of 64 samples at 4 x 2): MFU over each epoch's steps, in its log row.
    callback = MfuCallback(device=H100, dtype="bf16", num_devices=1)
    trainer = train(tmp_path / "epoch", callback, max_steps=-1, num_train_epochs=2, logging_strategy="epoch")
    logs = perf_logs(trainer)
    assert [(e["step"], e["perf/steps"]) for e in logs] == [(8, 8), (16, 8)], logs
    assert all("loss" in e and 0 < e["perf/mfu_wall_clock"] < 1 for e in logs)


def test_steps_the_trainer_never_logs_are_measured_and_said(tmp_path):
    callback = MfuCallback(device=H100, dtype="bf16", num_devices=1)
    with pytest.warns(mfu.MfuWarning, match="logged no training metrics over the last 6 step"):
        trainer = train(tmp_path / "no", callback, logging_strategy="no")
    assert perf_logs(trainer) == []
    assert [(e["step"], e["perf/steps"]) for e in callback.history] == [(6, 6)]


def test_unknown_device_omits_mfu_with_one_warning(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer = train(tmp_path, MfuCallback())
    ours = [w for w in caught if issubclass(w.category, mfu.MfuWarning)]
    assert len(ours) == 1, [str(w.message) for w in ours]
    assert "CPU" in str(ours[0].message) and "peak_flops=" in str(ours[0].message)
    logs = perf_logs(trainer)
    assert len(logs) == 3
    for e in logs:
        assert "perf/mfu_wall_clock" not in e and "perf/mfu_fwd_bwd" not in e
        assert "perf/peak_flops_per_device" not in e
        assert e["perf/tokens_per_second"] > 0 and e["perf/device_name"] == "CPU"
        assert e["perf/dtype"] == "fp32"  # the parameters' dtype: no bf16/fp16 argument


def test_trainer_state_reads_back_through_mfu_enrich_without_flags(tmp_path):
    binary = cli_binary()
    if not binary.exists():
        pytest.skip(f"{binary} is not built")
    trainer = train(tmp_path, MfuCallback(device=H100, dtype="bf16"), report_to=["tensorboard"])
    logged = {e["step"]: e for e in perf_logs(trainer)}
    out = tmp_path / "enriched.jsonl"
    subprocess.run(
        [str(binary), "enrich", str(tmp_path / "trainer_state.json"), "-o", str(out), "--quiet"],
        check=True,
        capture_output=True,
        text=True,
    )
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    got = {r["step"]: r for r in rows if r.get("mfu_wall_clock") is not None}
    assert sorted(got) == sorted(logged)
    for step, e in logged.items():
        r = got[step]
        assert r["resolved_device"] == "H100 SXM5"
        assert r["peak_flops_per_device"] == H100_BF16
        for ours, theirs in (("mfu_wall_clock", "perf/mfu_wall_clock"), ("mfu_fwd_bwd", "perf/mfu_fwd_bwd")):
            assert math.isclose(r[ours], e[theirs], rel_tol=1e-12), (step, ours, r[ours], e[theirs])

    # The same values reached TensorBoard's event files through report_to (float32 there).
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = list(tmp_path.glob("runs/*/events.out.tfevents.*"))
    assert events, list(tmp_path.rglob("*"))
    acc = EventAccumulator(str(events[0].parent))
    acc.Reload()
    # The Trainer's TensorBoard callback files training values under train/.
    scalars = {s.step: s.value for s in acc.Scalars("train/perf/mfu_wall_clock")}
    assert sorted(scalars) == sorted(logged)
    for step, e in logged.items():
        assert scalars[step] == pytest.approx(e["perf/mfu_wall_clock"], rel=1e-6)

    # And mfu enrich reads the event folder back without flags: the device name and the precision are
    # the run's text summaries. TensorBoard keeps float32, so the figures agree to 1e-7, not 1e-12.
    out = tmp_path / "from_tensorboard.jsonl"
    subprocess.run(
        [str(binary), "enrich", str(events[0].parent), "-o", str(out), "--quiet"],
        check=True,
        capture_output=True,
        text=True,
    )
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    got = {r["step"]: r for r in rows if r.get("mfu_wall_clock") is not None}
    assert sorted(got) == sorted(logged)
    for step, e in logged.items():
        assert got[step]["resolved_device"] == "H100 SXM5"
        assert math.isclose(got[step]["mfu_wall_clock"], e["perf/mfu_wall_clock"], rel_tol=1e-6)


def test_an_mlflow_run_reads_back_without_flags(tmp_path, monkeypatch):
    # MLflow keeps numbers as metrics and drops text: the device name and the precision go to the run's
    # tags, once, and the Trainer's warning about dropping them at every log is silenced.
    pytest.importorskip("mlflow")
    binary = cli_binary()
    if not binary.exists():
        pytest.skip(f"{binary} is not built")
    import logging

    store = tmp_path / "mlruns"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store.as_uri())
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "mfu")
    dropped = []

    class Catch(logging.Handler):
        def emit(self, record):
            if "MLflow" in record.getMessage() and "perf/" in record.getMessage():
                dropped.append(record.getMessage())

    handler = Catch()
    logging.getLogger("transformers.integrations.integration_utils").addHandler(handler)
    try:
        trainer = train(tmp_path / "out", MfuCallback(device=H100, dtype="bf16"), report_to=["mlflow"])
    finally:
        logging.getLogger("transformers.integrations.integration_utils").removeHandler(handler)
    assert dropped == [], dropped[:2]
    logged = {e["step"]: e for e in perf_logs(trainer)}
    out = tmp_path / "from_mlflow.jsonl"
    subprocess.run([str(binary), "enrich", str(store), "-o", str(out), "--quiet"],
                   check=True, capture_output=True, text=True)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    got = {r["step"]: r for r in rows if r.get("mfu_wall_clock") is not None}
    assert sorted(got) == sorted(logged), rows[:2]
    for step, e in logged.items():
        assert got[step]["resolved_device"] == "H100 SXM5"
        assert got[step]["peak_flops_per_device"] == H100_BF16
        assert math.isclose(got[step]["mfu_wall_clock"], e["perf/mfu_wall_clock"], rel_tol=1e-12)


def test_precision_from_the_trainer_arguments(tmp_path):
    trainer = train(tmp_path, MfuCallback(device=H100), bf16=True)
    assert {e["perf/dtype"] for e in perf_logs(trainer)} == {"bf16"}
    assert all(e["perf/peak_flops_per_device"] == H100_BF16 for e in perf_logs(trainer))


def test_evaluation_is_not_training_time(tmp_path):
    import time
    from transformers import TrainerCallback

    class SlowEval(TrainerCallback):
        """Stands for a long evaluation: 0.5 s spent after step 2, before step 3 starts."""

        def on_evaluate(self, args, state, control, **kwargs):
            time.sleep(0.5)

    class Clock(TrainerCallback):
        """The span from the start of training to the last step's end, as the trainer saw it."""

        def on_train_begin(self, args, state, control, **kwargs):
            self.begin = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            self.end = time.perf_counter()

    from transformers import Trainer, TrainingArguments

    callback, clock = MfuCallback(device=H100, dtype="bf16"), Clock()
    targs = TrainingArguments(
        output_dir=str(tmp_path), per_device_train_batch_size=BATCH, max_steps=4, logging_steps=4,
        eval_strategy="steps", eval_steps=2, report_to=[], use_cpu=True, save_strategy="no",
        disable_tqdm=True, per_device_eval_batch_size=BATCH,
    )
    trainer = Trainer(model=tiny_llama(), args=targs, train_dataset=PaddedTokens(),
                      eval_dataset=PaddedTokens(8, seed=1), callbacks=[SlowEval(), clock, callback])
    # SlowEval runs before MfuCallback's on_evaluate, so the pause ends after the sleep.
    trainer.train()
    (e,) = perf_logs(trainer)
    assert e["perf/steps"] == 4
    # The 0.5 s evaluation pause is not in the interval: the steps' time is the span the trainer saw
    # less at least the pause, however slow the steps were on a loaded machine (0.1 s for the
    # callbacks' clocks, which read a moment apart).
    span = clock.end - clock.begin
    assert e["perf/step_s"] * 4 < span - 0.4, (e, span)


def test_trl_sft_trainer(tmp_path):
    trl = pytest.importorskip("trl")
    from datasets import Dataset

    g = torch.Generator().manual_seed(0)
    rows = [{"input_ids": torch.randint(1, 128, (REAL,), generator=g).tolist()} for _ in range(32)]
    config = trl.SFTConfig(
        output_dir=str(tmp_path), per_device_train_batch_size=BATCH, gradient_accumulation_steps=ACCUM,
        max_steps=4, logging_steps=2, report_to=[], use_cpu=True, save_strategy="no", disable_tqdm=True,
        max_length=SEQ, dataset_kwargs={"skip_prepare_dataset": False},
    )
    from transformers import PreTrainedTokenizerFast
    from tokenizers import Tokenizer, models

    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({"<pad>": 0, "<unk>": 1}, unk_token="<unk>")))
    tok.pad_token = "<pad>"
    tok.eos_token = "<unk>"
    trainer = trl.SFTTrainer(
        model=tiny_llama(), args=config, train_dataset=Dataset.from_list(rows), processing_class=tok,
        callbacks=[MfuCallback(device=H100, dtype="bf16")],
    )
    trainer.train()
    logs = perf_logs(trainer)
    assert [e["step"] for e in logs] == [2, 4]
    fpt_at = {n: mfu.online.flops_per_token(tiny_llama_config(), n) for n in range(1, SEQ + 2)}
    for e in logs:
        assert e["perf/tokens"] > 0 and e["perf/tokens"] <= e["perf/tokens_padded"]
        assert e["perf/flops_per_token"] in fpt_at.values() or min(fpt_at.values()) <= e["perf/flops_per_token"]
        want = e["perf/tokens"] * e["perf/flops_per_token"] / e["perf/step_s"] / H100_BF16
        assert e["perf/mfu_wall_clock"] == pytest.approx(want, rel=1e-15)


def test_trl_packing_counts_each_document_at_its_own_length(tmp_path):
    # packing=True: one row of several 12-token documents, position_ids restarting at each, no mask.
    # Attention does not cross documents, so a token's FLOPs are those at its document's length (12),
    # not at the packed row's (84 or more).
    trl = pytest.importorskip("trl")
    from datasets import Dataset
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    g = torch.Generator().manual_seed(0)
    rows = [{"input_ids": torch.randint(1, 128, (REAL,), generator=g).tolist()} for _ in range(32)]
    config = trl.SFTConfig(
        output_dir=str(tmp_path), per_device_train_batch_size=2, gradient_accumulation_steps=1,
        max_steps=4, logging_steps=2, report_to=[], use_cpu=True, save_strategy="no", disable_tqdm=True,
        max_length=64, packing=True,
    )
    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({"<pad>": 0, "<unk>": 1}, unk_token="<unk>")))
    tok.pad_token = "<pad>"
    tok.eos_token = "<unk>"
    trainer = trl.SFTTrainer(
        model=tiny_llama(), args=config, train_dataset=Dataset.from_list(rows), processing_class=tok,
        callbacks=[MfuCallback(device=H100, dtype="bf16")],
    )
    trainer.train()
    logs = perf_logs(trainer)
    assert [e["step"] for e in logs] == [2, 4]
    per_document = mfu.flops_per_token(tiny_llama_config(), REAL)
    for e in logs:
        assert e["perf/tokens"] > REAL
        assert e["perf/flops_per_token"] == pytest.approx(per_document, rel=1e-12)


def test_values_reach_wandb_and_read_back_from_its_run_folder(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    binary = cli_binary()
    if not binary.exists():
        pytest.skip(f"{binary} is not built")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    callback = MfuCallback(device=H100, dtype="bf16")
    train(tmp_path / "out", callback, report_to=["wandb"])
    import wandb

    wandb.finish()
    out = tmp_path / "enriched.jsonl"
    subprocess.run([str(binary), "enrich", str(tmp_path / "wandb"), "-o", str(out), "--quiet"],
                   check=True, capture_output=True, text=True)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    got = [r for r in rows if r.get("mfu_wall_clock") is not None]
    # W&B's history holds the Trainer's train/perf/* values; mfu reads them back with no flags.
    assert [r["train/global_step"] for r in got] == [e["step"] for e in callback.history]
    for r, e in zip(got, callback.history):
        assert r["resolved_device"] == "H100 SXM5"
        assert math.isclose(r["mfu_wall_clock"], e["perf/mfu_wall_clock"], rel_tol=1e-12)
