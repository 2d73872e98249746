"""The training meter over two ranks on gloo (two processes on CPU): peaks gathered once at the start, the
interval's tokens summed over ranks in one collective, MFU omitted on every rank when any rank's peak is
unknown, the mean peak when the ranks' devices differ."""

import json
import time

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"
PEAK = {H100: 989.4e12, A100: 312e12}
FPT = 1.0e9


def _worker(rank, world, init, out, devices):
    import warnings

    warnings.simplefilter("ignore")
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    try:
        from mfu.integrations._torch import TrainingMeter

        meter = TrainingMeter(device=devices[rank], dtype="bf16", flops_per_token=FPT)
        meter.begin(torch.device("cpu"), None, None)
        logged = []
        for step in range(1, 5):
            # Rank r trains on 10 * (r + 1) real tokens per micro-batch, two micro-batches a step.
            for _ in range(2):
                mask = torch.zeros(1, 32, dtype=torch.long)
                mask[0, : 10 * (rank + 1)] = 1
                meter.micro_begin({"input_ids": torch.ones(1, 32, dtype=torch.long), "attention_mask": mask})
                time.sleep(0.001)
                meter.micro_end()
            metrics = meter.step_end(step % 2 == 0)
            if metrics:
                logged.append(metrics)
        with open(f"{out}.{rank}", "w") as f:
            json.dump(logged, f)
    finally:
        dist.destroy_process_group()


def run_ranks(tmp_path, devices):
    init = f"file://{tmp_path}/pg"
    out = str(tmp_path / "logged")
    ctx = mp.start_processes(_worker, args=(2, init, out, devices), nprocs=2, join=False, start_method="spawn")
    deadline = time.monotonic() + 120
    while not ctx.join(timeout=1):
        if time.monotonic() > deadline:
            for p in ctx.processes:
                p.kill()
            pytest.fail("the ranks hung")
    return [json.load(open(f"{out}.{r}")) for r in range(2)]


def test_both_ranks_known(tmp_path):
    ranks = run_ranks(tmp_path, [H100, H100])
    for logged in ranks:
        assert len(logged) == 2
        for m in logged:
            # Tokens summed over the ranks: (10 + 20) x 2 micro-batches per step.
            assert m["perf/tokens"] == 60 and m["perf/tokens_padded"] == 128
            assert m["perf/num_devices"] == 2
            assert m["perf/peak_flops_per_device"] == PEAK[H100]
            want = 60 * FPT / (2 * m["perf/step_s"]) / PEAK[H100]
            assert m["perf/mfu_wall_clock"] == pytest.approx(want, rel=1e-15)
    # Every rank logs the same figures: the slowest rank's time, the same totals.
    assert ranks[0] == ranks[1]


def test_one_rank_unknown_omits_mfu_everywhere(tmp_path):
    ranks = run_ranks(tmp_path, [H100, "Acme Tensor Engine X9"])
    for logged in ranks:
        assert len(logged) == 2
        for m in logged:
            assert "perf/mfu_wall_clock" not in m and "perf/peak_flops_per_device" not in m
            assert m["perf/tokens_per_second"] > 0


def test_different_known_devices_use_the_mean_peak(tmp_path):
    ranks = run_ranks(tmp_path, [H100, A100])
    for logged in ranks:
        for m in logged:
            assert m["perf/peak_flops_per_device"] == (PEAK[H100] + PEAK[A100]) / 2
            assert m["perf/device_name"] == f"{H100};{A100}"


def run_trainer_ranks(tmp_path, devices):
    """Two processes of a real Trainer on gloo, as torchrun would start them."""
    import os
    import socket
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = str(tmp_path / "trainer")
    script = os.path.join(os.path.dirname(__file__), "ddp_trainer.py")
    procs = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2",
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([sys.executable, script, out, *devices], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    try:
        for p in procs:
            output, _ = p.communicate(timeout=300)
            assert p.returncode == 0, output[-3000:]
    finally:
        for p in procs:
            p.kill()
    return [json.load(open(f"{out}.{r}")) for r in range(2)]


def test_a_real_trainer_on_two_ranks(tmp_path):
    pytest.importorskip("transformers")
    from online_util import REAL, SEQ

    ranks = run_trainer_ranks(tmp_path, [H100, A100])
    assert ranks[0] == ranks[1]
    logged = ranks[0]
    assert [e["step"] for e in logged] == [2, 4]
    for e in logged:
        # 2 ranks x 2 micro-batches x 2 sequences of REAL tokens per optimizer step.
        assert e["perf/tokens"] == 2 * 2 * 2 * REAL and e["perf/tokens_padded"] == 2 * 2 * 2 * SEQ
        assert e["perf/num_devices"] == 2
        assert e["perf/peak_flops_per_device"] == (PEAK[H100] + PEAK[A100]) / 2
        want = e["perf/tokens"] * e["perf/flops_per_token"] / (2 * e["perf/step_s"]) / e["perf/peak_flops_per_device"]
        assert e["perf/mfu_wall_clock"] == pytest.approx(want, rel=1e-15)


def test_a_real_trainer_with_one_unknown_rank(tmp_path):
    pytest.importorskip("transformers")
    ranks = run_trainer_ranks(tmp_path, [H100, "Acme Tensor Engine X9"])
    for logged in ranks:
        assert [e["step"] for e in logged] == [2, 4]
        assert all("perf/mfu_wall_clock" not in e and e["perf/tokens_per_second"] > 0 for e in logged)
