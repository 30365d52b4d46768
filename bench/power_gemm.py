#!/usr/bin/env python3
"""Summarises bench/device/power-gemm.sh: for each phase (one helios-bench variant, or cuBLAS through torch),
the GEMM's TFLOP/s and the nvidia-smi samples taken while it ran under load (from BUSY_MS/2 after the phase
started to its end, power above half the phase's peak): median SM clock and power, FLOP per SM clock cycle
(TFLOP/s over 132 SMs x clock) and TFLOP/s per kW, and the throttle reasons seen (0x4: software power cap);
each Helios phase's ratio to the cuBLAS phase, in TFLOP/s and in TFLOP/s per kW."""
import argparse
import datetime
import json
import statistics


def stamp(text):
    return datetime.datetime.strptime(text.strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--phases", required=True)
    p.add_argument("--smi", required=True)
    p.add_argument("--busy-ms", type=float, default=2000)
    p.add_argument("--sms", type=int, default=132)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    samples = []
    for line in open(a.smi):
        f = [x.strip() for x in line.split(",")]
        try:
            samples.append((stamp(f[0]), float(f[1]), float(f[2]), float(f[3]), f[4]))
        except (ValueError, IndexError):
            continue
    phases, meta = [], {}
    for line in open(a.phases):
        label, start, end, path = line.rstrip("\n").split("\t")
        r = json.load(open(path))
        row = r["results"][0]
        for key in ("device", "driver", "commit", "date"):
            if key in r and key not in meta:
                meta[key] = r[key]
        t0, t1 = stamp(start) + a.busy_ms / 2000.0, stamp(end)
        window = [s for s in samples if t0 <= s[0] <= t1]
        peak = max((s[2] for s in window), default=0)
        busy = [s for s in window if s[2] >= peak / 2]
        phase = {"phase": label, "M": row["M"], "N": row["N"], "K": row["K"], "layout": row["layout"],
                 "tflops": row["tflops"], "kernel": row.get("kernel_name", "cuBLAS (torch.matmul)"),
                 "samples": len(busy)}
        if busy:
            clock = statistics.median(s[1] for s in busy)
            power = statistics.median(s[2] for s in busy)
            phase.update({"sm_clock_mhz": clock, "sm_clock_min_mhz": min(s[1] for s in busy),
                          "power_w": power, "temperature_c": max(s[3] for s in busy),
                          "throttle_reasons": sorted({s[4] for s in busy}),
                          "flop_per_sm_cycle": row["tflops"] * 1e12 / (a.sms * clock * 1e6),
                          "tflops_per_kw": row["tflops"] / power * 1e3})
        phases.append(phase)
        print(f"{label:24s} {row['tflops']:7.1f} TFLOP/s  clock {phase.get('sm_clock_mhz', 0):6.0f} MHz "
              f"(min {phase.get('sm_clock_min_mhz', 0):.0f})  {phase.get('power_w', 0):5.0f} W  "
              f"{phase.get('flop_per_sm_cycle', 0):6.0f} FLOP/SM/cycle  {phase.get('tflops_per_kw', 0):5.0f} TFLOP/s/kW "
              f"{','.join(phase.get('throttle_reasons', []))}")
    cublas = next((ph for ph in phases if ph["phase"] == "cublas"), None)
    for ph in phases:
        if cublas and ph is not cublas:
            ph["ratio_to_cublas"] = ph["tflops"] / cublas["tflops"]
            if "tflops_per_kw" in ph and "tflops_per_kw" in cublas:
                ph["energy_ratio_to_cublas"] = ph["tflops_per_kw"] / cublas["tflops_per_kw"]
    json.dump({"meta": meta, "phases": phases}, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
