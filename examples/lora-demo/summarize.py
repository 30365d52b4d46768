#!/usr/bin/env python3
"""Gathers a run-demo.sh directory into OUT/summary.json and prints its short form last: the sizes and
options (demo-args.json), each phase's wall time (phases.tsv), the pretraining and LoRA loss curves
(metrics.jsonl, thinned to about 30 points each, every eval loss kept), the held-out score (score.json) and
the device (the LoRA run's first log line).

  summarize.py --out DIR [--min-accuracy 0.9] [--probe build/bin/helios-probe]   (exit status 1 below it)
summary.json's "meta" (device, its driver from helios-probe --json where --probe is given, the commit of the
checkout the script sits in, the date, the machine) is what bench/results files carry.
"""
import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def curve(metrics_path, points=30):
    """{"loss": [[step, loss]...], "eval": [[step, val_loss]...]} from a run's metrics.jsonl."""
    rows = read_jsonl(metrics_path)
    losses = [(r["step"], r["loss"]) for r in rows if "loss" in r]
    evals = [(r["step"], r["val_loss"]) for r in rows if "val_loss" in r]
    every = max(1, len(losses) // points)
    thinned = [[s, round(v, 4)] for i, (s, v) in enumerate(losses) if i % every == 0 or i == len(losses) - 1]
    return {"loss": thinned, "eval": [[s, round(v, 4)] for s, v in evals]}


def device_of(log_path):
    with open(log_path, encoding="utf-8") as f:
        m = re.search(r".* on (.+)$", f.readline().strip())  # the last " on ": the device
    return m.group(1) if m else "unknown"


def driver_of(probe, device):
    """The driver string helios-probe --json gives the device named `device`, or None."""
    try:
        out = subprocess.run([probe, "--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             timeout=120).stdout
        return next((d.get("driver") for d in json.loads(out)["devices"] if d.get("name") == device), None)
    except (OSError, ValueError, KeyError, subprocess.TimeoutExpired):
        return None


def commit_of(directory):
    r = subprocess.run(["git", "-C", directory, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    return r.stdout.strip() or None


def meta(device, probe):
    return {"device": device, "driver": driver_of(probe, device) if probe else None,
            "commit": commit_of(os.path.dirname(os.path.abspath(__file__))),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} "
                       "at the end",
            "what": "examples/lora-demo/run-demo.sh: pretrain a small Llama on the default corpus (numbered "
                    "ChatML turns), export hf, LoRA on two-digit additions, export peft, score held-out "
                    "questions through helios-train sample --chat --prompts (greedy, exact answers)"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="the run-demo.sh directory")
    ap.add_argument("--min-accuracy", type=float, default=0.9)
    ap.add_argument("--probe", help="helios-probe, to name the device's driver")
    args = ap.parse_args()
    path = lambda *p: os.path.join(args.out, *p)
    with open(path("demo-args.json"), encoding="utf-8") as f:
        options = json.load(f)
    with open(path("phases.tsv"), encoding="utf-8") as f:
        seconds = {name: float(s) for name, s in (line.split("\t") for line in f if line.strip())}
    with open(path("score.json"), encoding="utf-8") as f:
        score = json.load(f)
    device = device_of(path("lora.log"))
    summary = {"meta": meta(device, args.probe), "device": device, "options": options, "seconds": seconds,
               "total_seconds": round(sum(seconds.values()), 1),
               "pretrain": curve(path("base-run", "metrics.jsonl")), "lora": curve(path("lora-run", "metrics.jsonl")),
               "heldout": {k: score[k] for k in ("questions", "exact", "accuracy")},
               "misses": score["misses"][:20], "min_accuracy": args.min_accuracy,
               "passed": score["accuracy"] >= args.min_accuracy}
    with open(path("summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
    o = options
    print(f"lora demo on {summary['device']}: {o['layers']}L {o['dim']}d, pretrain {o['pretrain_steps']} steps, "
          f"LoRA rank {o['lora_rank']} x {o['lora_steps']} steps: held-out accuracy {score['accuracy']:.3f} "
          f"({score['exact']} of {score['questions']}), {'PASS' if summary['passed'] else 'FAIL'} "
          f"(bar {args.min_accuracy}), {summary['total_seconds']:.0f} s")
    sys.exit(0 if summary["passed"] else 1)


if __name__ == "__main__":
    main()
