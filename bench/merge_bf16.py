#!/usr/bin/env python3
"""Merges bench/device/bf16.sh's helios-bench files into one bench/results-style JSON: per GEMM and attention
shape the f16 and bf16 times and their ratio (f16 time / bf16 time: >= 0.95 meets the target), with the
device, driver and commit from the helios-bench headers; prints the table and the worst ratio last."""
import argparse
import glob
import json
import os


def load(path):
    with open(path) as f:
        return json.load(f)


def gemm_rows(directory):
    rows = {}
    meta = None
    for path in sorted(glob.glob(os.path.join(directory, "gemm_*.json"))):
        _, model, layout, dtype, out = os.path.basename(path)[:-5].split("_")
        doc = load(path)
        meta = meta or doc
        for r in doc.get("results", []):
            key = (model, layout, r["M"], r["N"], r["K"])
            entry = rows.setdefault(key, {"model": model, "layout": layout, "M": r["M"], "N": r["N"], "K": r["K"]})
            entry[dtype] = {"us": r.get("us"), "tflops": r.get("tflops"), "out": out, "ok": r.get("ok"),
                            "kernel": r.get("kernel_name"), "error": r.get("error")}
    return list(rows.values()), meta


def attention_rows(directory):
    rows = {}
    for path in sorted(glob.glob(os.path.join(directory, "attention_*.json"))):
        qkv = os.path.basename(path)[len("attention_"):-5]
        for r in load(path).get("results", []):
            key = (r["B"], r["H"], r.get("Hkv", r["H"]), r["S"], r["D"], r["causal"], r["mode"])
            entry = rows.setdefault(key, {"B": r["B"], "H": r["H"], "Hkv": r.get("Hkv", r["H"]), "S": r["S"],
                                          "D": r["D"], "causal": r["causal"], "mode": r["mode"]})
            entry[qkv] = {"us": r.get("us"), "tflops": r.get("tflops"), "ok": r.get("ok"), "error": r.get("error")}
    return list(rows.values())


def ratio(entry, half="f16"):
    a, b = entry.get(half, {}).get("us"), entry.get("bf16", {}).get("us")
    return a / b if a and b else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    gemms, meta = gemm_rows(args.dir)
    attention = attention_rows(args.dir)
    for e in gemms + attention:
        e["bf16_speed_vs_f16"] = ratio(e)
    meta = meta or {}
    ratios = [e["bf16_speed_vs_f16"] for e in gemms + attention if e["bf16_speed_vs_f16"] is not None]
    doc = {
        "meta": {"device": meta.get("device"), "driver": meta.get("driver"), "commit": meta.get("commit"),
                 "date": meta.get("date")},
        "note": "bench/device/bf16.sh: helios-bench gemm (--kernel auto, f16 vs bf16 operands; forward NT writes "
                "16-bit C, NN and TN f32) at every GEMM of a GPT-2-small (16 x 1024 tokens) and a Qwen2.5-0.5B "
                "(8 x 1024) training step, and helios-bench attention --kernel coop (f16 vs bf16 q/k/v, causal) "
                "at both models' attention shapes. bf16_speed_vs_f16 = f16 time / bf16 time (target >= 0.95).",
        "summary": {"worst_ratio": min(ratios) if ratios else None, "shapes": len(ratios),
                    "meets_0.95": bool(ratios) and min(ratios) >= 0.95},
        "gemm": gemms,
        "attention": attention,
    }
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    for e in gemms:
        f16, bf16 = e.get("f16", {}), e.get("bf16", {})
        print("gemm {model:5} {layout} {M:>6}x{N:<6}x{K:<6}".format(**e),
              "f16 {:>9.1f} us  bf16 {:>9.1f} us  ratio {}{}".format(
                  f16.get("us") or 0, bf16.get("us") or 0,
                  "{:.3f}".format(e["bf16_speed_vs_f16"]) if e["bf16_speed_vs_f16"] else "-",
                  "" if f16.get("ok", True) is not False and bf16.get("ok", True) is not False else "  WRONG"))
    for e in attention:
        f16, bf16 = e.get("f16", {}), e.get("bf16", {})
        print("attention B{B} H{H}/{Hkv} S{S} D{D} {mode:6}".format(**e),
              "f16 {:>9.1f} us  bf16 {:>9.1f} us  ratio {}".format(
                  f16.get("us") or 0, bf16.get("us") or 0,
                  "{:.3f}".format(e["bf16_speed_vs_f16"]) if e["bf16_speed_vs_f16"] else "-"))
    s = doc["summary"]
    print("SUMMARY bf16 vs f16 on {}: worst {} over {} shapes; target 0.95 {}".format(
        doc["meta"]["device"], "{:.3f}".format(s["worst_ratio"]) if s["worst_ratio"] else "-", s["shapes"],
        "met" if s["meets_0.95"] else "NOT met"))


if __name__ == "__main__":
    main()
