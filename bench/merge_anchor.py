#!/usr/bin/env python3
"""Puts each Helios GEMM and attention result beside the reachable-limit anchor from the same device call.

For every GEMM shape and layout, and every attention shape, mask and mode, Helios' time is set beside the
Triton kernels of bench/torch/triton_anchor.py on warp-level MMA (`--mma v2`, what SPIR-V's cooperative
matrices compile to on NVIDIA) and on wgmma (`--mma v3`), beside cuBLAS (bench/torch/gemm.py) or SDPA
(bench/torch/attention.py), and beside the device's own MMA ceiling (helios-bench peak: the fastest correct
f16 x f16 -> f32 configuration it lists). Two fractions are given:
  fraction_of_anchor  Helios' throughput / the warp-MMA anchor's on the same shape (1.0: parity)
  fraction_of_peak    Helios' TFLOP/s / the measured f16 -> f32 MMA peak
All sides count FLOPs alike (2 M N K; attention 4 B H S^2 D forward, 3.5x that forward + backward, halved
when causal), so a throughput ratio is the inverse time ratio. Writes one JSON file ("benchmark": "anchor",
read by bench/results_md.py for its summary table) and prints the table last. Usage:
  merge_anchor.py --peak P.json --helios-gemm H.json [...] --helios-attention A.json [...]
                  --anchor-v2 T2.json --anchor-v3 T3.json --torch-gemm G.json --torch-attention S.json
                  --out RESULT.json [--note TEXT]
Every input but --peak and --out may be left out or repeated; a missing side leaves its columns empty.
"""
import argparse
import json

META_KEYS = ("device", "driver", "vulkan_api", "commit", "date")


def load(paths):
    docs = []
    for path in paths or []:
        with open(path) as f:
            docs.append(json.load(f))
    return docs


def measured_peak(peak):
    """The fastest correct float16 -> float32 MMA row of a helios-bench peak result, and the bandwidth."""
    rows = [r for r in peak.get("results", []) if r.get("ok") and r.get("A") == "float16" and r.get("C") == "float32"]
    best = max(rows, key=lambda r: r["tflops"], default=None)
    copy = next((b for b in peak.get("bandwidth", []) if b.get("ok")), None)
    return {"f16_f32_tflops": best["tflops"] if best else None,
            "f16_f32_kernel": best["kernel"] if best else None,
            "bandwidth_gbps": copy["gbps"] if copy else None}


def gemm_key(r, out):
    return (r["M"], r["N"], r["K"], r["layout"], out)


def attention_key(r):
    return (r["B"], r["H"], r.get("Hkv", r["H"]), r["S"], r["D"], bool(r["causal"]), r["mode"])


def index(docs, key, keep=lambda r: True):
    out = {}
    for d in docs:
        for r in d.get("results", []):
            if keep(r):
                out[key(r)] = r
    return out


def ratio(a, b):
    return a / b if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b else None


def tflops_of(r):
    return r.get("tflops") if r else None


def gemm_rows(helios_docs, v2, v3, cublas, peak_tflops):
    rows = []
    for h in helios_docs:
        for r in h.get("results", []):
            if not r.get("ok") or not isinstance(r.get("tflops"), (int, float)):
                continue
            key = gemm_key(r, h.get("out", "f32"))
            a2, a3, cb = v2.get(key), v3.get(key), cublas.get(key)
            rows.append({"M": r["M"], "N": r["N"], "K": r["K"], "layout": r["layout"], "out": key[4],
                         "helios_tflops": r["tflops"], "anchor_v2_tflops": tflops_of(a2),
                         "anchor_v3_tflops": tflops_of(a3), "cublas_tflops": tflops_of(cb),
                         "fraction_of_anchor": ratio(r["tflops"], tflops_of(a2)),
                         "fraction_of_peak": ratio(r["tflops"], peak_tflops),
                         "helios_kernel": r.get("kernel_name", "")})
    return rows


def attention_rows(helios_docs, v2, v3, sdpa, peak_tflops):
    rows = []
    for h in helios_docs:
        for r in h.get("results", []):
            if not r.get("ok") or not isinstance(r.get("us"), (int, float)):
                continue
            key = attention_key(r)
            a2, a3, s = v2.get(key), v3.get(key), sdpa.get(key)
            us = lambda x: x["ms"] * 1e3 if x else None  # noqa: E731
            rows.append({"B": key[0], "H": key[1], "Hkv": key[2], "S": key[3], "D": key[4], "causal": key[5],
                         "mode": key[6], "helios_us": r["us"], "helios_tflops": r["tflops"],
                         "anchor_v2_us": us(a2), "anchor_v3_us": us(a3), "sdpa_us": us(s),
                         "fraction_of_anchor": ratio(us(a2), r["us"]),
                         "fraction_of_peak": ratio(r["tflops"], peak_tflops)})
    return rows


def merge(peak, helios_gemm, helios_attention, anchor_v2, anchor_v3, torch_gemm, torch_attention, note=""):
    """The anchor result from loaded documents (the inputs' JSON objects)."""
    limit = measured_peak(peak)
    is_gemm = lambda r: r.get("kind", "gemm") == "gemm" and r.get("dtype", "f16") == "f16"  # noqa: E731
    is_att = lambda r: r.get("kind", "attention") == "attention" and r.get("dtype", "f16") == "f16"  # noqa: E731
    gkey = lambda r: gemm_key(r, r.get("out", "f32"))  # noqa: E731
    first = (helios_gemm + helios_attention + [peak])[0]
    triton = next((d for d in anchor_v2 + anchor_v3), {})
    torch_doc = next((d for d in torch_gemm + torch_attention), {})
    return {
        "benchmark": "anchor",
        "meta": {k: first[k] for k in META_KEYS if k in first},
        "torch": torch_doc.get("torch", triton.get("torch")),
        "triton": triton.get("triton"),
        "mma_instructions": {d.get("mma"): d.get("mma_instructions") for d in anchor_v2 + anchor_v3},
        "note": note,
        "peak": limit,
        "gemm": gemm_rows(helios_gemm, index(anchor_v2, gkey, is_gemm), index(anchor_v3, gkey, is_gemm),
                          index(torch_gemm, gkey, is_gemm), limit["f16_f32_tflops"]),
        "attention": attention_rows(helios_attention, index(anchor_v2, attention_key, is_att),
                                    index(anchor_v3, attention_key, is_att),
                                    index(torch_attention, attention_key, is_att), limit["f16_f32_tflops"]),
    }


def num(v, spec):
    return format(v, spec) if isinstance(v, (int, float)) else "-"


def table_lines(doc):
    """The merged result as aligned text: the device's peak, then one line per GEMM and attention row."""
    p = doc["peak"]
    lines = [f"measured peak: f16 -> f32 MMA {num(p['f16_f32_tflops'], '.1f')} TFLOP/s ({p['f16_f32_kernel']}), "
             f"bandwidth {num(p['bandwidth_gbps'], '.0f')} GB/s",
             f"{'GEMM':<22} {'lay':>3} {'Helios':>8} {'warpMMA':>8} {'frac':>5} {'wgmma':>8} {'cuBLAS':>8} "
             f"{'of peak':>7}   (TFLOP/s)"]
    for r in doc["gemm"]:
        lines.append(f"{r['M']}x{r['N']}x{r['K']:<8} {r['layout']:>3} {num(r['helios_tflops'], '8.1f')} "
                     f"{num(r['anchor_v2_tflops'], '8.1f')} {num(r['fraction_of_anchor'], '5.2f')} "
                     f"{num(r['anchor_v3_tflops'], '8.1f')} {num(r['cublas_tflops'], '8.1f')} "
                     f"{num(r['fraction_of_peak'], '7.2f')}")
    lines.append(f"{'attention':<26} {'mode':>6} {'Helios':>8} {'warpMMA':>8} {'frac':>5} {'wgmma':>8} "
                 f"{'SDPA':>8} {'of peak':>7}   (us)")
    for r in doc["attention"]:
        shape = f"B{r['B']} H{r['H']}/{r['Hkv']} S{r['S']} D{r['D']} {'causal' if r['causal'] else 'dense'}"
        lines.append(f"{shape:<26} {r['mode']:>6} {num(r['helios_us'], '8.1f')} {num(r['anchor_v2_us'], '8.1f')} "
                     f"{num(r['fraction_of_anchor'], '5.2f')} {num(r['anchor_v3_us'], '8.1f')} "
                     f"{num(r['sdpa_us'], '8.1f')} {num(r['fraction_of_peak'], '7.2f')}")
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--peak", required=True, help="helios-bench peak JSON")
    p.add_argument("--helios-gemm", action="append", default=[])
    p.add_argument("--helios-attention", action="append", default=[])
    p.add_argument("--anchor-v2", action="append", default=[], help="triton_anchor.py --mma v2 --json")
    p.add_argument("--anchor-v3", action="append", default=[], help="triton_anchor.py --mma v3 --json")
    p.add_argument("--torch-gemm", action="append", default=[], help="bench/torch/gemm.py output")
    p.add_argument("--torch-attention", action="append", default=[], help="bench/torch/attention.py output")
    p.add_argument("--out", required=True)
    p.add_argument("--note", default="")
    a = p.parse_args()
    (peak,) = load([a.peak])
    doc = merge(peak, load(a.helios_gemm), load(a.helios_attention), load(a.anchor_v2), load(a.anchor_v3),
                load(a.torch_gemm), load(a.torch_attention), a.note)
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("\n".join(table_lines(doc)))


if __name__ == "__main__":
    main()
