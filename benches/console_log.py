"""A torchtitan-style console log of a given size, and the Python `re` loop a user would write to pull
the same fields out of it (the anchor benches/console.sh times mfu against): every number of each step
line and its wall time (`re`), or only the step, the loss and a step time (`re-minimal`, the loop of
the first measurements, kept to compare with them).

`gen` repeats a few values (50 token rates, 11 MFU figures, one step time); `gen-noisy` draws each
step's duration (0.8 to 1.3 s, to the millisecond) and token rate (5,000 to 9,999) at random, as a
real run's jitter does, so the commands that count figures by distinct value (`summary`, `goodput`,
`audit` of a log read in windows) meet thousands of them; `gen-distinct` draws the token rate from
ten million values, so that nearly every row's figures differ: their worst case.

    python3 benches/console_log.py gen OUT.log SIZE_MB
    python3 benches/console_log.py gen-noisy OUT.log SIZE_MB
    python3 benches/console_log.py gen-distinct OUT.log SIZE_MB
    python3 benches/console_log.py re LOG
    python3 benches/console_log.py re-minimal LOG
"""
import re
import sys
from datetime import datetime

HEAD = (
    "[rank0]:[titan] 2026-04-18 22:15:35,952 - root - INFO - CUDA capacity: NVIDIA H100 80GB HBM3 with 79.11GiB memory\n"
    "[rank0]:[titan] 2026-04-18 22:15:35,963 - root - INFO - Building device mesh with parallelism: pp=1, "
    "dp_replicate=1, dp_shard=8, cp=1, tp=1, ep=1, etp=1\n"
    "[rank0]:[titan] 2026-04-18 22:15:36,647 - root - INFO - Trainer is initialized with local batch size 8, "
    "global batch size 64, gradient accumulation steps 1, sequence length 2048, total steps 100000 (warmup 500)\n"
    "[rank0]:[titan] 2026-04-18 22:15:36,647 - root - INFO - Training starts at step 1\n"
)

LINE = (
    "[rank0]:[titan] 2026-04-18 {h:02d}:{m:02d}:{s:02d},{ms:03d} - root - INFO - \x1b[31mstep: {step:>5}  "
    "\x1b[32mloss: {loss:8.5f}  \x1b[38;2;180;60;0mgrad_norm: {gn:7.4f}  \x1b[38;2;54;234;195mmemory: "
    "{mem:5.2f}GiB({pct:5.2f}%)  \x1b[34mtps: {tps:,}  \x1b[36mtflops: {tf:6.2f}  \x1b[35mmfu: {mfu:5.2f}%\x1b[39m\n"
)


def write_log(path, size_mb, line_of):
    """HEAD, then `line_of(step)` for steps 1, 2, ... until the log is `size_mb` megabytes."""
    target = size_mb * 1024 * 1024
    written = 0
    step = 0
    with open(path, "w") as out:
        out.write(HEAD)
        while written < target:
            step += 1
            line = line_of(step)
            out.write(line)
            written += len(line)


def gen(path, size_mb):
    def line_of(step):
        t = step % 86400
        return LINE.format(
            h=t // 3600, m=t // 60 % 60, s=t % 60, ms=step % 1000, step=step,
            loss=2.0 + (step * 7919 % 1000) / 1000, gn=1.0 + (step % 97) / 100,
            mem=35.12 + (step % 7) / 100, pct=44.36, tps=6900 + step % 50,
            tf=325.67 + (step % 13) / 10, mfu=32.93 + (step % 11) / 100,
        )
    write_log(path, size_mb, line_of)


def gen_noisy(path, size_mb, rates=5000, lowest=5000):
    # A linear congruential generator: the same log on every machine.
    state = {"lcg": 12345, "clock_ms": 0}

    def line_of(step):
        state["lcg"] = (state["lcg"] * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        state["clock_ms"] += 800 + (state["lcg"] >> 33) % 501
        clock_ms = state["clock_ms"]
        tps = lowest + (state["lcg"] >> 17) % rates
        t = clock_ms // 1000 % 86400
        return LINE.format(
            h=t // 3600, m=t // 60 % 60, s=t % 60, ms=clock_ms % 1000, step=step,
            loss=2.0 + (step * 7919 % 1000) / 1000, gn=1.0 + (step % 97) / 100,
            mem=35.12 + (step % 7) / 100, pct=44.36, tps=tps,
            tf=tps * 0.0472, mfu=tps * 0.00477,
        )
    write_log(path, size_mb, line_of)


# What a user writes: strip colours, one pattern for the step line, the batch line for tokens.
COLOUR = re.compile(r"\x1b\[[0-9;]*m")
STEP_LINE = re.compile(
    r"step:\s*(\d+)\s+loss:\s*([-\d.]+)\s+grad_norm:\s*([-\d.]+)\s+memory:\s*([\d.]+)GiB\(([\d.]+)%\)"
    r"\s+tps:\s*([\d,]+)\s+tflops:\s*([\d.]+)\s+mfu:\s*([\d.]+)%"
)
BATCH = re.compile(r"local batch size (\d+), global batch size (\d+).*sequence length (\d+)")


def pull(path):
    """The fields mfu writes: each step line's numbers and its wall time, tokens and step time."""
    colour, step_line, batch = COLOUR, STEP_LINE, BATCH  # locals, as the loop was measured
    stamp = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})")
    names = ("step", "loss", "grad_norm", "memory", "memory_pct", "tps", "tflops", "mfu")
    columns = {name: [] for name in names + ("wall_time", "step_time", "tokens")}
    local = seq = global_batch = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = colour.sub("", line)
            m = step_line.search(line)
            if m:
                values = m.groups()
                columns["step"].append(int(values[0]))
                for name, value in zip(names[1:], values[1:]):
                    columns[name].append(float(value.replace(",", "")))
                s = stamp.search(line)
                columns["wall_time"].append(datetime.fromisoformat(s.group(1)).timestamp() if s else None)
                columns["step_time"].append(local * seq / columns["tps"][-1])
                columns["tokens"].append(global_batch * seq)
                continue
            b = batch.search(line)
            if b:
                local, global_batch, seq = int(b.group(1)), int(b.group(2)), int(b.group(3))
    print(f"{len(columns['step'])} steps, last wall time {columns['wall_time'][-1]}, tokens {columns['tokens'][-1]}")


def pull_minimal(path):
    """The least a user could pull: step, loss and a step time from the rate, no wall time."""
    colour, step_line, batch = COLOUR, STEP_LINE, BATCH  # locals, as the loop was measured
    steps, losses, step_times, tokens = [], [], [], []
    local = seq = global_batch = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = colour.sub("", line)
            m = step_line.search(line)
            if m:
                tps = float(m.group(6).replace(",", ""))
                steps.append(int(m.group(1)))
                losses.append(float(m.group(2)))
                step_times.append(local * seq / tps)
                tokens.append(global_batch * seq)
                continue
            b = batch.search(line)
            if b:
                local, global_batch, seq = int(b.group(1)), int(b.group(2)), int(b.group(3))
    print(f"{len(steps)} steps, last step time {step_times[-1]:.6f} s, tokens {tokens[-1]}")


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == "gen-noisy":
        gen_noisy(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == "gen-distinct":
        gen_noisy(sys.argv[2], int(sys.argv[3]), rates=10_000_000, lowest=100_000)
    elif sys.argv[1] == "re-minimal":
        pull_minimal(sys.argv[2])
    else:
        pull(sys.argv[2])
