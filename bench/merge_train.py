#!/usr/bin/env python3
"""Joins helios-train run directories (metrics.jsonl) with bench/torch/gpt_train.py JSON from the same run.

Helios tokens/s is measured the way bench/torch/gpt_train.py measures PyTorch: after a warm-up of at least 5
steps and 3 seconds (clocks, pipeline creation), the median over windows of 10 consecutive steps of tokens
over the wall time the window took (the GPU runs ahead of the CPU, so per-step CPU times alone do not
measure throughput; a window's span does). tokens_per_s_after_step5 keeps the earlier measure: every step
after the fifth, warm-up included.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess


def device_meta():
    """Device, driver, commit and date for the JSON (nvidia-smi where present, else helios-probe; commit from
    $HELIOS_COMMIT)."""
    meta = {"commit": os.environ.get("HELIOS_COMMIT"),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout.strip().splitlines()
        if out:
            name, driver = [x.strip() for x in out[0].split(",")]
            meta.update({"device": name, "driver": "NVIDIA " + driver})
    except (OSError, subprocess.SubprocessError, ValueError):
        pass
    if "device" not in meta:  # no NVIDIA GPU (e.g. lavapipe): what helios-probe reports
        try:
            probe = os.environ.get("HELIOS_PROBE", "helios-probe")
            out = subprocess.run([probe, "--json"], capture_output=True, text=True, timeout=60).stdout
            dev = json.loads(out)["devices"][0]
            meta.update({"device": dev.get("name"), "driver": dev.get("driver")})
        except (OSError, subprocess.SubprocessError, ValueError, KeyError, IndexError):
            pass
    return meta


def steady_rate(records, tokens_per_step, warmup_steps=5, warmup_s=3.0, window=10):
    """Median tokens/s over windows of `window` steps after the warm-up; None when no whole window is left."""
    if not records:
        return None
    start = records[0]["elapsed_s"]
    warm = [r for r in records if r["step"] > warmup_steps and r["elapsed_s"] - start >= warmup_s]
    rates = []
    for i in range(0, len(warm) - window, window):  # window steps between records i and i + window
        span = warm[i + window]["elapsed_s"] - warm[i]["elapsed_s"]
        if span > 0:
            rates.append(tokens_per_step * window / span)
    return statistics.median(rates) if rates else None


def run_config(run):
    """config.json of a run's current checkpoint (RUN/checkpoints/latest), or RUN/config.json (older runs)."""
    latest = os.path.join(run, "checkpoints", "latest")
    if os.path.exists(latest):
        return os.path.join(run, "checkpoints", open(latest).read().strip(), "config.json")
    return os.path.join(run, "config.json")


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--runs", required=True, help="folder holding <config>-<precision>/metrics.jsonl")
    p.add_argument("--torch", action="append", default=[])
    p.add_argument("--out", required=True)
    args = p.parse_args()

    torch_rows = {}
    torch_meta = {}
    for path in args.torch:
        if not os.path.exists(path):
            continue
        t = json.load(open(path))
        torch_meta = {k: t.get(k) for k in ("torch", "device")}
        for r in t["results"]:
            torch_rows[(r["config"], r["mode"])] = r

    rows = []
    for name in sorted(os.listdir(args.runs)):
        metrics = os.path.join(args.runs, name, "metrics.jsonl")
        if not os.path.exists(metrics):
            continue
        config, precision = name.rsplit("-", 1)
        records = [json.loads(line) for line in open(metrics) if line.strip()]
        steady = [r for r in records if r.get("step", 0) > 5]
        train = json.load(open(run_config(os.path.join(args.runs, name))))["train"]
        tokens_per_step = train["batch"] * train.get("seq_len", train.get("context", 0)) * train.get("grad_accum", 1)
        rate = after5 = None
        if len(steady) >= 2 and tokens_per_step:
            after5 = tokens_per_step * (len(steady) - 1) / (steady[-1]["elapsed_s"] - steady[0]["elapsed_s"])
            rate = steady_rate(records, tokens_per_step) or after5
        row = {"config": config, "precision": precision, "steps": len(records), "tokens_per_step": tokens_per_step,
               "tokens_per_s": rate, "tokens_per_s_after_step5": after5,
               "submits_per_step": statistics.median([r["submits"] for r in steady]) if steady else None,
               "dispatches_per_step": statistics.median([r["dispatches"] for r in steady]) if steady else None,
               "final_loss": records[-1]["loss"] if records else None}
        # "<config>_<variant>" runs (e.g. char_unfused) compare with the same PyTorch config.
        mode = "amp" if precision == "mixed" else "f32"
        ref = torch_rows.get((config.split("_")[0], mode))
        if ref and row["tokens_per_s"]:
            row["torch_tokens_per_s"] = ref["tokens_per_s"]
            row["ratio_to_torch"] = row["tokens_per_s"] / ref["tokens_per_s"]
        compiled = torch_rows.get((config.split("_")[0], mode + "+compile"))
        if compiled and row["tokens_per_s"]:
            row["torch_compile_tokens_per_s"] = compiled["tokens_per_s"]
            row["ratio_to_torch_compile"] = row["tokens_per_s"] / compiled["tokens_per_s"]
        graphs = torch_rows.get((config.split("_")[0], mode + "+compile:reduce-overhead"))
        if graphs and row["tokens_per_s"]:  # torch.compile replaying CUDA graphs: no launch gaps
            row["torch_compile_graphs_tokens_per_s"] = graphs["tokens_per_s"]
            row["ratio_to_torch_compile_graphs"] = row["tokens_per_s"] / graphs["tokens_per_s"]
        rows.append(row)
        print(f'{config:11} {precision:6} helios {row["tokens_per_s"] or 0:12.0f} tok/s  '
              f'torch {row.get("torch_tokens_per_s", 0):12.0f} (x{row.get("ratio_to_torch", 0):.2f})  '
              f'compile {row.get("torch_compile_tokens_per_s", 0):12.0f} (x{row.get("ratio_to_torch_compile", 0):.2f})  '
              f'graphs {row.get("torch_compile_graphs_tokens_per_s", 0):12.0f} '
              f'(x{row.get("ratio_to_torch_compile_graphs", 0):.2f})  '
              f'dispatches/step {row["dispatches_per_step"]}')
    json.dump({"meta": device_meta(), "torch": torch_meta, "torch_results": list(torch_rows.values()), "helios": rows},
              open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
