#!/usr/bin/env python3
"""PyTorch scaled_dot_product_attention timings for the shapes helios-bench attention runs.

Prints one JSON object: {"torch", "device", "results": [{B, H, Hkv, S, D, causal, mode, dtype, ms, tflops}]}, with
FlashAttention's FLOP count (4 B H S^2 D forward, 3.5x that for forward + backward, halved when causal), the
same count helios-bench uses. dtype f16 is SDPA's flash path; f32 is what the f32 Helios kernel computes.
Timing ("ms"): back-to-back calls replayed from a CUDA graph (gemm.py's time_both): the GPU's time per
call, as helios-bench times back-to-back dispatches; "ms_eager": CUDA events around one eager call (gemm.py's
time_ms; includes PyTorch's launch gaps, which dominate small shapes).
"""
import argparse
import json

import torch
import torch.nn.functional as F

from gemm import time_both


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--shapes", default="1x8x512x64", help="comma list of BxHxSxD or BxHxHkvxSxD (grouped-query)")
    p.add_argument("--dtypes", default="f16,f32")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--busy-ms", type=float, default=300.0, help="busy replays before the timed ones")
    args = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    results = []
    for text in args.shapes.split(","):
        dims = [int(x) for x in text.lower().split("x")]
        b, h, hkv, s, d = dims if len(dims) == 5 else (dims[0], dims[1], dims[1], dims[2], dims[3])
        gqa = {"enable_gqa": True} if hkv != h else {}
        for dtype_name in args.dtypes.split(","):
            dtype = torch.float16 if dtype_name == "f16" else torch.float32
            q = torch.randn(b, h, s, d, device="cuda", dtype=dtype, requires_grad=True)
            k, v = (torch.randn(b, hkv, s, d, device="cuda", dtype=dtype, requires_grad=True) for _ in range(2))
            do = torch.randn(b, h, s, d, device="cuda", dtype=dtype)
            for causal in (True, False):
                fwd_flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)

                def forward():
                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, **gqa)

                def forward_backward():
                    forward().backward(do)

                for mode, fn, flops in (("fwd", lambda: forward(), fwd_flops),
                                        ("fwdbwd", forward_backward, 3.5 * fwd_flops)):
                    ms, eager, calls = time_both(fn, args.warmup, args.repeat, flops, args.busy_ms)
                    results.append({"B": b, "H": h, "Hkv": hkv, "S": s, "D": d, "causal": causal, "mode": mode,
                                    "dtype": dtype_name, "ms": ms, "ms_eager": eager, "graph_calls": calls,
                                    "tflops": flops / (ms * 1e-3) / 1e12})
    print(json.dumps({"torch": torch.__version__, "device": torch.cuda.get_device_name(), "results": results},
                     indent=1))


if __name__ == "__main__":
    main()
