"""One rank of a two-process transformers.Trainer on gloo (CPU), launched by test_online_ranks.py the way
torchrun would (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT in the environment). Writes the rank's MFU
logs as JSON to argv[1].<rank>; argv[2:] are the ranks' device names."""

import json
import os
import sys
import warnings

warnings.simplefilter("ignore")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from transformers import Trainer, TrainingArguments  # noqa: E402

from mfu.integrations.transformers import MfuCallback  # noqa: E402
from online_util import PaddedTokens, tiny_llama  # noqa: E402

out, devices = sys.argv[1], sys.argv[2:]
rank = int(os.environ["RANK"])
args = TrainingArguments(
    output_dir=f"{out}.dir{rank}", per_device_train_batch_size=2, gradient_accumulation_steps=2, max_steps=4,
    logging_steps=2, report_to=[], use_cpu=True, save_strategy="no", disable_tqdm=True, ddp_backend="gloo",
)
callback = MfuCallback(device=devices[rank], dtype="bf16")
trainer = Trainer(model=tiny_llama(), args=args, train_dataset=PaddedTokens(), callbacks=[callback])
trainer.train()
with open(f"{out}.{rank}", "w") as f:
    json.dump([e for e in trainer.state.log_history if "perf/steps" in e], f)

# Tear the process group down before the interpreter does: left to interpreter exit, gloo's threads can
# outlive it and abort the process ("terminate called without an active exception") after all the work is
# done, which made the test flaky on CI.
import torch.distributed as dist  # noqa: E402

if dist.is_initialized():
    dist.barrier()
    dist.destroy_process_group()
# The rank's work is written; leave without the interpreter's teardown of torch's threads.
sys.stdout.flush()
os._exit(0)
