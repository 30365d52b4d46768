#!/usr/bin/env python3
"""Joins helios-bench attention JSON with bench/torch/attention.py JSON from the same device run.

Each Helios row gets SDPA's f16 and f32 rows of the same (B, H, S, D, causal, mode) and the time ratios
helios_us / sdpa_us (below 1: Helios is faster). Usage:
  merge_attention.py --helios H.json --torch T.json --out RESULT.json [--note TEXT]
"""
import argparse
import json


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--helios", required=True)
    p.add_argument("--torch", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--note", default="")
    args = p.parse_args()
    h = json.load(open(args.helios))
    t = json.load(open(args.torch))
    ref = {(r["B"], r["H"], r["S"], r["D"], r["causal"], r["mode"], r["dtype"]): r for r in t["results"]}
    for r in h["results"]:
        for dtype in ("f16", "f32"):
            s = ref.get((r["B"], r["H"], r["S"], r["D"], r["causal"], r["mode"], dtype))
            if s and isinstance(r.get("us"), (int, float)):
                r[f"sdpa_{dtype}_us"] = s["ms"] * 1e3
                r[f"sdpa_{dtype}_us_eager"] = s.get("ms_eager", s["ms"]) * 1e3
                r[f"sdpa_{dtype}_tflops"] = s["tflops"]
                r[f"time_ratio_to_sdpa_{dtype}"] = r["us"] / (s["ms"] * 1e3)
        if isinstance(r.get("us"), (int, float)):
            print(f'B{r["B"]} H{r["H"]} S{r["S"]} D{r["D"]} {"causal" if r["causal"] else "dense ":6} {r["mode"]:6} '
                  f'helios {r["us"]:9.1f} us {r["tflops"]:6.1f} TFLOP/s | SDPA f16 {r.get("sdpa_f16_us", 0):8.1f} us '
                  f'(x{r.get("time_ratio_to_sdpa_f16", 0):.1f}) f32 {r.get("sdpa_f32_us", 0):8.1f} us '
                  f'(x{r.get("time_ratio_to_sdpa_f32", 0):.1f})')
    meta = {k: h[k] for k in ("device", "driver", "vulkan_api", "commit", "date") if k in h}
    json.dump({"meta": meta, "torch": {k: t[k] for k in ("torch", "device")}, "note": args.note, "helios": h},
              open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
