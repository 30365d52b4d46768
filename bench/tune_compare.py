#!/usr/bin/env python3
"""Merges bench/device/tune.sh's runs into one document for bench/results/: the before/after table of the
GEMM and attention shapes (helios-tune --compare: policy and tuned record timed alternately in one process,
sustained timing), its geometric mean and smallest speed-up, the tuner's per-shape summaries and records,
GPT-2 small's tuning time against its budget, and helios-train's tokens/s without and with that record.
Prints the summary lines as well."""
import argparse
import json
import re


def load(path):
    with open(path) as f:
        return json.load(f)


def tokens_per_second(path):
    """helios-train's 'done: ... | 12.3k tok/s (last 20 steps)' and whether it named a tuned record."""
    text = open(path).read()
    m = re.search(r"([\d.]+)([kM]?) tok/s \(last", text)
    rate = float(m.group(1)) * {"": 1, "k": 1e3, "M": 1e6}[m.group(2)] if m else None
    tuning = re.search(r"tuning: (.*)", text)
    return {"tokens_per_s": rate, "tuning": tuning.group(1) if tuning else None}


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--shapes", required=True, help="helios-tune --compare --json of the shape set")
    p.add_argument("--gpt2", required=True, help="helios-tune --preset gpt2-small --json")
    p.add_argument("--train", nargs=2, required=True, metavar=("POLICY", "TUNED"))
    p.add_argument("--gpu", default="")
    p.add_argument("--records", nargs=2, metavar=("SHAPES", "GPT2"), help="the tuning files written")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    shapes, gpt2 = load(a.shapes), load(a.gpt2)
    cmp = shapes.get("compare", {})
    rows = cmp.get("rows", [])
    policy, tuned = (tokens_per_second(x) for x in a.train)
    doc = {"meta": {"device": shapes.get("device"), "driver": a.gpu},
           "note": "bench/device/tune.sh: the hand-tuned policy vs the tuned record, both timed alternately in "
                   "one helios-tune process (sustained timing); GPT-2 small tuned under --budget, then trained "
                   "without and with the record",
           "summary": {"problems": len(rows), "geomean_speedup": cmp.get("geomean"), "min_speedup": cmp.get("min"),
                       "all_at_least_1": all(r["speedup"] >= 1.0 for r in rows),
                       "gpt2_tune_seconds": gpt2.get("seconds"), "gpt2_tune_budget": gpt2.get("budget_seconds"),
                       "train_tokens_per_s_policy": policy["tokens_per_s"],
                       "train_tokens_per_s_tuned": tuned["tokens_per_s"]},
           "before_after": rows,
           "tuner_shapes": shapes.get("results", []),
           "tuner_gpt2": gpt2.get("results", []),
           "train": {"policy": policy, "tuned": tuned}}
    if a.records:
        doc["records"] = {"shapes": load(a.records[0]), "gpt2": load(a.records[1])}
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    s = doc["summary"]
    print(f"before/after: {s['problems']} problems, geomean {s['geomean_speedup']}, min {s['min_speedup']}")
    print(f"gpt2-small tuning: {s['gpt2_tune_seconds']} s searched (budget {s['gpt2_tune_budget']} s)")
    print(f"gpt2-small training: {policy['tokens_per_s']} tok/s policy, {tuned['tokens_per_s']} tok/s tuned "
          f"({tuned['tuning']})")


if __name__ == "__main__":
    main()
