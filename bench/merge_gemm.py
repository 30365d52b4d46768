#!/usr/bin/env python3
"""Joins helios-bench gemm JSON with bench/torch/gemm.py JSON from the same device run.

Each Helios row gets the matching cuBLAS row (same M, N, K, layout, input and output dtype) and the ratio
helios_tflops / cublas_tflops. The best Helios tiling per (shape, layout) is marked. Usage:
  merge_gemm.py --helios H.json [--helios H2.json ...] --torch T.json [--torch T2.json] --out RESULT.json
"""
import argparse
import json


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--helios", action="append", required=True)
    p.add_argument("--torch", action="append", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--note", default="")
    args = p.parse_args()

    torch_rows, torch_meta = {}, {}
    for path in args.torch:
        t = json.load(open(path))
        torch_meta = {k: t[k] for k in ("torch", "device", "cuda") if k in t}
        for r in t["results"]:
            torch_rows[(r["M"], r["N"], r["K"], r["layout"], r["dtype"], r["out"])] = r

    runs = []
    for path in args.helios:
        h = json.load(open(path))
        best = {}
        for r in h["results"]:
            key = (r["M"], r["N"], r["K"], r["layout"], h["dtype"], h["out"])
            ref = torch_rows.get(key)
            if ref and isinstance(r.get("tflops"), (int, float)):
                r["cublas_tflops"] = ref["tflops"]
                r["cublas_us"] = ref["ms"] * 1e3
                r["cublas_us_eager"] = ref.get("ms_eager", ref["ms"]) * 1e3  # one eager call, launch gap included
                r["ratio_to_cublas"] = r["tflops"] / ref["tflops"]
            if r.get("ok") and isinstance(r.get("tflops"), (int, float)) and (key not in best or r["tflops"] > best[key]["tflops"]):
                best[key] = r
        for r in best.values():
            r["best_for_shape"] = True
        runs.append(h)

    meta = {k: runs[0][k] for k in ("device", "driver", "vulkan_api", "commit", "date") if k in runs[0]}
    json.dump({"meta": meta, "torch": torch_meta, "note": args.note, "runs": runs}, open(args.out, "w"), indent=1)
    for h in runs:
        for r in h["results"]:
            if r.get("best_for_shape"):
                print(f'{h["kernel"]:5} {h["dtype"]}->{h["out"]} {r["M"]}x{r["N"]}x{r["K"]} {r["layout"]} '
                      f'{r["tile"]:24} {r["tflops"]:7.1f} TFLOP/s  cuBLAS {r.get("cublas_tflops", 0):7.1f}  '
                      f'ratio {r.get("ratio_to_cublas", 0):.2f}  {h.get("label", "")} {r.get("kernel_name", "")}')


if __name__ == "__main__":
    main()
