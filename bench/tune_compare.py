#!/usr/bin/env python3
"""Merges bench/device/tune.sh's runs into one document for bench/results/: per GEMM problem and attention
shape the default policy's and the tuned record's time (helios-bench, same call, sustained timing), the
speed-up, the geometric means, the tuner's own summaries and the record it wrote."""
import argparse
import json
import math


def load(path):
    with open(path) as f:
        return json.load(f)


def rows(doc, key):
    return {key(r): r for r in doc.get("results", []) if "us" in r}


def compare(default, tuned, key, name):
    d, t = rows(default, key), rows(tuned, key)
    out = []
    for k in d:
        if k not in t:
            continue
        entry = {"problem": name(d[k]), "default_us": d[k]["us"], "tuned_us": t[k]["us"],
                 "speedup": d[k]["us"] / t[k]["us"], "ok": bool(d[k].get("ok", True) and t[k].get("ok", True))}
        for side, r in (("default", d[k]), ("tuned", t[k])):
            if "kernel_name" in r:
                entry[side + "_kernel"] = r["kernel_name"]
        out.append(entry)
    return out


def summary(entries):
    if not entries:
        return {}
    s = [e["speedup"] for e in entries]
    return {"count": len(s), "geomean_speedup": math.exp(sum(map(math.log, s)) / len(s)), "min_speedup": min(s),
            "all_at_least_1": all(x >= 1.0 for x in s)}


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--record", required=True)
    p.add_argument("--gemm", nargs=2, required=True, metavar=("DEFAULT", "TUNED"))
    p.add_argument("--attention", nargs=2, required=True, metavar=("DEFAULT", "TUNED"))
    p.add_argument("--tune", nargs="*", default=[])
    p.add_argument("--out", required=True)
    a = p.parse_args()
    gd, gt = load(a.gemm[0]), load(a.gemm[1])
    ad, at = load(a.attention[0]), load(a.attention[1])
    gemm = compare(gd, gt, lambda r: (r["M"], r["N"], r["K"], r["layout"]),
                   lambda r: f'{r["layout"]}:{r["M"]}x{r["N"]}x{r["K"]}')
    attention = compare(ad, at, lambda r: (r["B"], r["H"], r["S"], r["D"], r["causal"], r["mode"]),
                        lambda r: f'B{r["B"]}H{r["H"]}S{r["S"]}D{r["D"]}{"c" if r["causal"] else "d"}_{r["mode"]}')
    doc = {"meta": {k: gd.get(k) for k in ("device", "driver", "commit", "date") if k in gd},
           "note": "bench/device/tune.sh: default policy vs the tuned record, helios-bench sustained timing, "
                   "both sides in the same device call",
           "gemm": {"summary": summary(gemm), "problems": gemm},
           "attention": {"summary": summary(attention), "shapes": attention},
           "tuner": [load(t) for t in a.tune],
           "record": load(a.record)}
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
