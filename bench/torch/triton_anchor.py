#!/usr/bin/env python3
"""The reachable-limit anchor: a Triton GEMM and a FlashAttention-2-style forward and backward, timed the
way helios-bench's PyTorch comparisons are (gemm.py's CUDA-graph replays at sustained clocks).

Why: NVIDIA's Vulkan driver compiles cooperative matrices to warp-level MMA (mma.sync); Hopper's wgmma and
the tensor-memory accelerator are out of SPIR-V's reach. `--mma v2` sets DISABLE_MMA_V3=1 before Triton
loads, so these kernels use the same instruction class a Vulkan kernel can (async copies stay on); `--mma v3`
leaves Triton free to use wgmma, for the CUDA-stack ceiling. Each result records which MMA instruction the
compiled PTX holds (read from this run's private Triton cache), so a mode that did not take effect shows.

GEMM: C = op(A) op(B), f16 or bf16 inputs, f32 accumulation, C stored as f32 (Helios' training GEMMs) or
the input type; layouts nn, nt (B stored N x K), tn (A stored K x M); a small autotuned tile menu.
Attention: q, k, v [B, H, S, D] (k, v with Hkv heads: grouped-query), causal or dense, f16/bf16; the forward
saves the log-sum-exp (base 2), the backward runs a delta pass, a dK/dV pass (each key block walks the query
blocks of every head in its group) and a dQ pass. FLOPs as attention.py counts them.

Prints one JSON object {"torch", "triton", "device", "mma", "results": [...]}; every result carries its
error against a float64 reference computed on sampled rows (GEMM) or torch's math in float32 (attention).
"""
import argparse
import glob
import json
import math
import os
import sys
import tempfile


def early_args():
    mma = "v2"
    for i, a in enumerate(sys.argv):
        if a == "--mma" and i + 1 < len(sys.argv):
            mma = sys.argv[i + 1]
        elif a.startswith("--mma="):
            mma = a.split("=", 1)[1]
    return mma


MMA = early_args()
if MMA == "v2":
    os.environ["DISABLE_MMA_V3"] = "1"
CACHE_DIR = tempfile.mkdtemp(prefix=f"triton-anchor-{MMA}-")
os.environ["TRITON_CACHE_DIR"] = CACHE_DIR

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemm import gemm_entries, time_both  # noqa: E402

# --- GEMM -----------------------------------------------------------------------------------------------


def gemm_configs():
    menu = [(128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 128, 64, 4, 4), (128, 128, 32, 4, 4),
            (128, 64, 64, 4, 4), (64, 128, 64, 4, 4), (64, 64, 64, 4, 4), (128, 256, 32, 8, 4)]
    return [triton.Config({"BM": m, "BN": n, "BK": k, "GROUP_M": 8}, num_warps=w, num_stages=s)
            for (m, n, k, w, s) in menu]


@triton.autotune(configs=gemm_configs(), key=["M", "N", "K", "sam", "sak", "sbk", "sbn"])
@triton.jit
def gemm_kernel(A, B, C, M, N, K, sam, sak, sbk, sbn, scm, scn,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    # Bands of GROUP_M tile rows, so neighbouring programs share B tiles in L2.
    band = pid // (GROUP_M * tiles_n)
    first_m = band * GROUP_M
    rows_in_band = min(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % (GROUP_M * tiles_n)) % rows_in_band
    pid_n = (pid % (GROUP_M * tiles_n)) // rows_in_band
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptr = A + (rm % M)[:, None] * sam + rk[None, :] * sak
    b_ptr = B + rk[:, None] * sbk + (rn % N)[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, tl.cdiv(K, BK)):
        left = K - k0 * BK
        a = tl.load(a_ptr, mask=rk[None, :] < left, other=0.0)
        b = tl.load(b_ptr, mask=rk[:, None] < left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptr += BK * sak
        b_ptr += BK * sbk
    c = acc.to(C.dtype.element_ty)
    tl.store(C + rm[:, None] * scm + rn[None, :] * scn, c, mask=(rm[:, None] < M) & (rn[None, :] < N))


def gemm_operands(m, n, k, layout, dtype):
    a = torch.randn(k, m, device="cuda", dtype=dtype).t() if layout[0] == "t" else \
        torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(n, k, device="cuda", dtype=dtype).t() if layout[1] == "t" else \
        torch.randn(k, n, device="cuda", dtype=dtype)
    return a, b


def triton_gemm(a, b, c):
    m, k = a.shape
    n = b.shape[1]
    grid = lambda meta: (triton.cdiv(m, meta["BM"]) * triton.cdiv(n, meta["BN"]),)  # noqa: E731
    gemm_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                      c.stride(1))


def gemm_error(a, b, c, rows=64):
    idx = torch.randint(0, a.shape[0], (rows,), device="cuda")
    ref = a[idx].double() @ b.double()
    return float((c[idx].double() - ref).norm() / ref.norm())


# --- attention ------------------------------------------------------------------------------------------

LOG2E = 1.4426950408889634


@triton.jit
def fwd_kernel(Q, K, V, O, LSE, scale2, H, HKV, S,
               D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, CAUSAL: tl.constexpr):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    hk = h // (H // HKV)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rd = tl.arange(0, D)
    q_base = Q + (b * H + h) * S * D
    k_base = K + (b * HKV + hk) * S * D
    v_base = V + (b * HKV + hk) * S * D
    q = tl.load(q_base + rm[:, None] * D + rd[None, :])
    m = tl.full((BM,), float("-inf"), tl.float32)
    l = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    # Key blocks wholly below the diagonal need no mask; the diagonal block(s) do.
    full_end = pid_m * BM if CAUSAL else S
    for n0 in range(0, full_end, BN):
        kt = tl.load(k_base + (n0 + rn)[None, :] * D + rd[:, None])
        s = tl.dot(q, kt) * scale2
        m_new = tl.maximum(m, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m - m_new)
        l = l * alpha + tl.sum(p, 1)
        v = tl.load(v_base + (n0 + rn)[:, None] * D + rd[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m = m_new
    if CAUSAL:
        for n0 in range(pid_m * BM, (pid_m + 1) * BM, BN):
            kt = tl.load(k_base + (n0 + rn)[None, :] * D + rd[:, None])
            s = tl.dot(q, kt) * scale2
            s = tl.where(rm[:, None] >= (n0 + rn)[None, :], s, float("-inf"))
            m_new = tl.maximum(m, tl.max(s, 1))
            p = tl.math.exp2(s - m_new[:, None])
            alpha = tl.math.exp2(m - m_new)
            l = l * alpha + tl.sum(p, 1)
            v = tl.load(v_base + (n0 + rn)[:, None] * D + rd[None, :])
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
            m = m_new
    acc = acc / l[:, None]
    tl.store(O + (b * H + h) * S * D + rm[:, None] * D + rd[None, :], acc.to(O.dtype.element_ty))
    tl.store(LSE + (b * H + h) * S + rm, m + tl.math.log2(l))


@triton.jit
def delta_kernel(O, DO, DELTA, D: tl.constexpr, BM: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    rd = tl.arange(0, D)
    o = tl.load(O + rows[:, None] * D + rd[None, :]).to(tl.float32)
    do = tl.load(DO + rows[:, None] * D + rd[None, :]).to(tl.float32)
    tl.store(DELTA + rows, tl.sum(o * do, 1))


@triton.jit
def dkdv_kernel(Q, K, V, DO, LSE, DELTA, DK, DV, scale, scale2, H, HKV, S,
                D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, CAUSAL: tl.constexpr):
    pid_n = tl.program_id(0)
    bhk = tl.program_id(1)
    b = bhk // HKV
    hk = bhk % HKV
    group = H // HKV
    rn = pid_n * BN + tl.arange(0, BN)
    rm = tl.arange(0, BM)
    rd = tl.arange(0, D)
    kv_off = (b * HKV + hk) * S * D
    k = tl.load(K + kv_off + rn[:, None] * D + rd[None, :])
    v = tl.load(V + kv_off + rn[:, None] * D + rd[None, :])
    dk = tl.zeros((BN, D), tl.float32)
    dv = tl.zeros((BN, D), tl.float32)
    start = pid_n * BN if CAUSAL else 0
    for g in range(0, group):
        h = hk * group + g
        q_off = (b * H + h) * S * D
        r_off = (b * H + h) * S
        for m0 in range(start, S, BM):
            qt = tl.load(Q + q_off + (m0 + rm)[None, :] * D + rd[:, None])
            lse = tl.load(LSE + r_off + m0 + rm)
            st = tl.dot(k, qt) * scale2
            pt = tl.math.exp2(st - lse[None, :])
            if CAUSAL:
                pt = tl.where((m0 + rm)[None, :] >= rn[:, None], pt, 0.0)
            do = tl.load(DO + q_off + (m0 + rm)[:, None] * D + rd[None, :])
            dv += tl.dot(pt.to(do.dtype), do)
            delta = tl.load(DELTA + r_off + m0 + rm)
            dpt = tl.dot(v, tl.trans(do))
            dst = pt * (dpt - delta[None, :])
            dk += tl.dot(dst.to(qt.dtype), tl.trans(qt))
    tl.store(DK + kv_off + rn[:, None] * D + rd[None, :], (dk * scale).to(DK.dtype.element_ty))
    tl.store(DV + kv_off + rn[:, None] * D + rd[None, :], dv.to(DV.dtype.element_ty))


@triton.jit
def dq_kernel(Q, K, V, DO, LSE, DELTA, DQ, scale, scale2, H, HKV, S,
              D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, CAUSAL: tl.constexpr):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    hk = h // (H // HKV)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rd = tl.arange(0, D)
    q_off = (b * H + h) * S * D
    kv_off = (b * HKV + hk) * S * D
    q = tl.load(Q + q_off + rm[:, None] * D + rd[None, :])
    do = tl.load(DO + q_off + rm[:, None] * D + rd[None, :])
    lse = tl.load(LSE + (b * H + h) * S + rm)
    delta = tl.load(DELTA + (b * H + h) * S + rm)
    dq = tl.zeros((BM, D), tl.float32)
    end = (pid_m + 1) * BM if CAUSAL else S
    for n0 in range(0, end, BN):
        kt = tl.load(K + kv_off + (n0 + rn)[None, :] * D + rd[:, None])
        vt = tl.load(V + kv_off + (n0 + rn)[None, :] * D + rd[:, None])
        s = tl.dot(q, kt) * scale2
        p = tl.math.exp2(s - lse[:, None])
        if CAUSAL:
            p = tl.where(rm[:, None] >= (n0 + rn)[None, :], p, 0.0)
        dp = tl.dot(do, vt)
        ds = p * (dp - delta[:, None])
        dq += tl.dot(ds.to(kt.dtype), tl.trans(kt))
    tl.store(DQ + q_off + rm[:, None] * D + rd[None, :], (dq * scale).to(DQ.dtype.element_ty))


def attention_blocks(d, causal):
    # (forward BM, BN, warps, stages), (backward BM, BN, warps, stages): FA2's usual shapes for the head dim.
    if d <= 64:
        return (128, 64, 4, 3), (64, 64, 4, 2)
    return (128, 64, 8, 2), (64, 64, 8, 2)


class Attention:
    def __init__(self, b, h, hkv, s, d, causal, dtype):
        self.shape = (b, h, hkv, s, d)
        self.causal = causal
        self.scale = 1.0 / math.sqrt(d)
        self.fwd_cfg, self.bwd_cfg = attention_blocks(d, causal)
        assert s % 128 == 0, "the anchor takes sequence lengths that are multiples of 128"
        mk = lambda heads: torch.randn(b, heads, s, d, device="cuda", dtype=dtype)  # noqa: E731
        self.q, self.k, self.v, self.do = mk(h), mk(hkv), mk(hkv), mk(h)
        self.o = torch.empty_like(self.q)
        self.lse = torch.empty(b, h, s, device="cuda", dtype=torch.float32)
        self.delta = torch.empty_like(self.lse)
        self.dq, self.dk, self.dv = torch.empty_like(self.q), torch.empty_like(self.k), torch.empty_like(self.v)

    def forward(self):
        b, h, hkv, s, d = self.shape
        bm, bn, w, st = self.fwd_cfg
        fwd_kernel[(s // bm, b * h)](self.q, self.k, self.v, self.o, self.lse, self.scale * LOG2E, h, hkv, s,
                                     D=d, BM=bm, BN=bn, CAUSAL=self.causal, num_warps=w, num_stages=st)

    def backward(self):
        b, h, hkv, s, d = self.shape
        bm, bn, w, st = self.bwd_cfg
        delta_kernel[(b * h * s // 128,)](self.o, self.do, self.delta, D=d, BM=128)
        dkdv_kernel[(s // bn, b * hkv)](self.q, self.k, self.v, self.do, self.lse, self.delta, self.dk, self.dv,
                                        self.scale, self.scale * LOG2E, h, hkv, s, D=d, BM=bm, BN=bn,
                                        CAUSAL=self.causal, num_warps=w, num_stages=st)
        dq_kernel[(s // bm, b * h)](self.q, self.k, self.v, self.do, self.lse, self.delta, self.dq, self.scale,
                                    self.scale * LOG2E, h, hkv, s, D=d, BM=bm, BN=bn, CAUSAL=self.causal,
                                    num_warps=w, num_stages=st)

    def forward_backward(self):
        self.forward()
        self.backward()

    def errors(self):
        """Relative errors of o, dq, dk, dv against torch's math path in float32 (on a slice of the batch)."""
        b, h, hkv, s, d = self.shape
        self.forward_backward()
        torch.cuda.synchronize()
        q, k, v, do = (t[:1].float().requires_grad_(t is not self.do) for t in (self.q, self.k, self.v, self.do))
        kk = k.repeat_interleave(h // hkv, dim=1)
        vv = v.repeat_interleave(h // hkv, dim=1)
        att = (q @ kk.transpose(-1, -2)) * self.scale
        if self.causal:
            att = att.masked_fill(torch.ones(s, s, device="cuda", dtype=torch.bool).triu(1), float("-inf"))
        o = att.softmax(-1) @ vv
        o.backward(do)
        rel = lambda x, y: float((x[:1].float() - y).norm() / y.norm())  # noqa: E731
        return {"o": rel(self.o, o), "dq": rel(self.dq, q.grad), "dk": rel(self.dk, k.grad),
                "dv": rel(self.dv, v.grad)}


def mma_kinds():
    kinds = set()
    for path in glob.glob(os.path.join(CACHE_DIR, "**", "*.ptx"), recursive=True):
        with open(path) as f:
            text = f.read()
        if "wgmma" in text:
            kinds.add("wgmma")
        if "mma.sync" in text:
            kinds.add("mma.sync")
    return sorted(kinds)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mma", default="v2", choices=["v2", "v3"], help="v2: warp-level MMA only (the Vulkan anchor)")
    p.add_argument("--gemm", default="4096x4096x4096",
                   help="comma list of MxNxK (every --layouts) or MxNxK:layout ('' for none)")
    p.add_argument("--layouts", default="nn,nt,tn")
    p.add_argument("--dtypes", default="f16", help="comma list of f16, bf16")
    p.add_argument("--outs", default="f32", help="GEMM output types: f32, in (the input type)")
    p.add_argument("--attention", default="", help="comma list of BxHxSxD or BxHxHkvxSxD ('' for none)")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--busy-ms", type=float, default=300.0)
    p.add_argument("--json", default="")
    args = p.parse_args()

    dtypes = {"f16": torch.float16, "bf16": torch.bfloat16}
    results = []
    for dname in filter(None, args.dtypes.split(",")):
        dtype = dtypes[dname]
        for (m, n, k, layout) in gemm_entries(args.gemm, args.layouts):
            a, b = gemm_operands(m, n, k, layout, dtype)
            for out in args.outs.split(","):
                c = torch.empty(m, n, device="cuda", dtype=torch.float32 if out == "f32" else dtype)
                fn = lambda: triton_gemm(a, b, c)  # noqa: E731
                fn()
                err = gemm_error(a, b, c)
                flops = 2.0 * m * n * k
                ms, eager, calls = time_both(fn, args.warmup, args.repeat, flops, args.busy_ms)
                best = gemm_kernel.best_config
                results.append({"kind": "gemm", "M": m, "N": n, "K": k, "layout": layout, "dtype": dname,
                                "out": out, "ms": ms, "ms_eager": eager, "graph_calls": calls,
                                "tflops": flops / (ms * 1e-3) / 1e12, "rel_error": err,
                                "config": str(best)})
                print(json.dumps(results[-1]), flush=True)
            del a, b
            torch.cuda.empty_cache()
        for text in filter(None, args.attention.split(",")):
            dims = [int(x) for x in text.lower().split("x")]
            b, h, hkv, s, d = dims if len(dims) == 5 else (dims[0], dims[1], dims[1], dims[2], dims[3])
            for causal in (True, False):
                att = Attention(b, h, hkv, s, d, causal, dtype)
                errs = att.errors()
                fwd_flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
                for mode, fn, flops in (("fwd", att.forward, fwd_flops),
                                        ("fwdbwd", att.forward_backward, 3.5 * fwd_flops)):
                    ms, eager, calls = time_both(fn, args.warmup, args.repeat, flops, args.busy_ms)
                    results.append({"kind": "attention", "B": b, "H": h, "Hkv": hkv, "S": s, "D": d,
                                    "causal": causal, "mode": mode, "dtype": dname, "ms": ms, "ms_eager": eager,
                                    "graph_calls": calls, "tflops": flops / (ms * 1e-3) / 1e12,
                                    "rel_error": errs})
                    print(json.dumps(results[-1]), flush=True)
                del att
                torch.cuda.empty_cache()
    out = {"torch": torch.__version__, "triton": triton.__version__, "device": torch.cuda.get_device_name(),
           "mma": args.mma, "mma_instructions": mma_kinds(), "results": results}
    text = json.dumps(out, indent=1)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    print(json.dumps({"mma": args.mma, "mma_instructions": out["mma_instructions"]}))


if __name__ == "__main__":
    main()
