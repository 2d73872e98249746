"""The cost of measuring while training, on CPU: `mfu.Meter.step` per call, and the framework callbacks' own
work per optimizer step (counting a micro-batch's tokens, timing its forward and backward, closing the
step; a logging step every `--log-every` steps, with its one synchronisation and the meter's arithmetic).

    python benches/online.py [--steps 20000] [--accum 2] [--log-every 10]

Prints microseconds per call and per optimizer step, the median of five rounds. A benchmark, not a test:
the figures go to docs/online.md.
"""

import argparse
import statistics
import time
import warnings


def per_call(fn, n):
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--accum", type=int, default=2)
    parser.add_argument("--log-every", type=int, default=10)
    args = parser.parse_args()

    import mfu

    meter = mfu.Meter("NVIDIA H100 80GB HBM3", "bf16", num_devices=8, flops_per_token=4.2e9)
    step = [per_call(lambda: meter.step(524288, 0.73, 0.61), args.steps) for _ in range(5)]
    update = [per_call(lambda: meter.update(524288, 0.73, 0.61), args.steps) for _ in range(5)]
    print(f"Meter.step:   {statistics.median(step):.2f} us per call (rounds: {', '.join(f'{x:.2f}' for x in step)})")
    print(f"Meter.update: {statistics.median(update):.2f} us per call")

    import torch
    from mfu.integrations._torch import TrainingMeter

    warnings.simplefilter("ignore")
    ids = torch.ones(8, 2048, dtype=torch.long)
    mask = torch.ones(8, 2048, dtype=torch.long)
    batch = {"input_ids": ids, "attention_mask": mask}
    config = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
              "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32000}

    def callback_rounds(log_every):
        core = TrainingMeter(device="NVIDIA H100 80GB HBM3", dtype="bf16", model_config=config)
        core.begin(torch.device("cpu"), None, None)
        rounds = []
        for _ in range(5):
            start = time.perf_counter()
            for k in range(1, args.steps + 1):
                for _ in range(args.accum):
                    core.micro_begin(batch)
                    core.micro_end()
                core.step_end(log_every > 0 and k % log_every == 0)
            rounds.append((time.perf_counter() - start) / args.steps * 1e6)
        return rounds

    quiet = callback_rounds(0)
    logging = callback_rounds(args.log_every)
    print(
        f"callback, a step of {args.accum} micro-batches, no logging step: {statistics.median(quiet):.2f} us per step "
        f"(rounds: {', '.join(f'{x:.2f}' for x in quiet)})"
    )
    print(
        f"callback, a logging step every {args.log_every}: {statistics.median(logging):.2f} us per step "
        f"(rounds: {', '.join(f'{x:.2f}' for x in logging)})"
    )


if __name__ == "__main__":
    main()
