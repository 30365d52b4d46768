#!/usr/bin/env python3
"""PyTorch training throughput of the GPT configurations helios-train runs, for a side-by-side comparison.

The model matches engine/model/gpt.hpp's defaults: learned positions, pre-LayerNorm blocks, packed QKV with
bias, causal attention, GELU (tanh) MLP of 4x width, final LayerNorm, LM head tied to the token embedding.
Training: AdamW (betas 0.9/0.95, weight decay 0.1 on matrices), global-norm clipping at 1.0, random tokens.

Modes (comma list with --modes):
  f32   eager float32 (TF32 off unless --tf32)
  amp   eager autocast to float16 with a dynamic GradScaler (what --precision mixed does in Helios)
  bf16  eager autocast to bfloat16 (no loss scaling)
Add --compile to wrap the model in torch.compile as well (--compile-mode reduce-overhead: its CUDA graphs, so
a small model's forward and backward are replayed rather than launched kernel by kernel).

Prints one JSON object: {"torch", "device", "results": [{config, mode, batch, seq, params, tokens_per_s,
ms_per_step, peak_mem_gib}]}. Timing: CUDA events over --windows windows of --steps steps (median window)
after at least --warmup untimed steps and --warmup-s seconds.
"""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIGS = {
    # name: (layers, dim, heads, T, B, vocab)
    "tiny": (4, 128, 4, 128, 8, 256),
    "char": (6, 384, 6, 256, 64, 65),  # helios-train's char preset on the KJV corpus has 63 characters: --vocab 63
    "gpt2-small": (12, 768, 12, 1024, 16, 50304),
}


class Block(nn.Module):
    def __init__(self, dim, heads, attention):
        super().__init__()
        self.heads = heads
        self.attention = attention
        self.ln1 = nn.LayerNorm(dim, eps=1e-5)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim, eps=1e-5)
        self.fc = nn.Linear(dim, 4 * dim)
        self.mlp_proj = nn.Linear(4 * dim, dim)

    def attn(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        if self.attention == "sdpa":
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # the same math as Helios' unfused attention: scores, causal softmax, weighted sum
            att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
            mask = torch.ones(T, T, device=x.device, dtype=torch.bool).tril()
            att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
            y = att @ v
        return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp_proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, layers, dim, heads, context, vocab, attention):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(context, dim)
        self.blocks = nn.ModuleList(Block(dim, heads, attention) for _ in range(layers))
        self.ln_f = nn.LayerNorm(dim, eps=1e-5)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx, targets):
        B, T = idx.shape
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for b in self.blocks:
            x = b(x)
        logits = self.ln_f(x) @ self.wte.weight.t()  # tied head
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.view(-1))


def run(name, mode, args):
    layers, dim, heads, T, B, vocab = CONFIGS[name]
    B = args.batch or B
    T = args.seq or T
    vocab = args.vocab or vocab
    torch.manual_seed(0)
    model = GPT(layers, dim, heads, T, vocab, args.attention).cuda()
    params = sum(p.numel() for p in model.parameters())
    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=6e-4, betas=(0.9, 0.95), eps=1e-8, fused=True)
    step_model = torch.compile(model, mode=args.compile_mode) if args.compile else model
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        scaler = torch.amp.GradScaler("cuda", enabled=(mode == "amp"))
    else:
        scaler = torch.cuda.amp.GradScaler(enabled=(mode == "amp"))
    dtype = {"f32": None, "amp": torch.float16, "bf16": torch.bfloat16}[mode]
    x = torch.randint(0, vocab, (args.accum, B, T), device="cuda")
    y = torch.randint(0, vocab, (args.accum, B, T), device="cuda")

    def step():
        for mb in range(args.accum):
            with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
                loss = step_model(x[mb], y[mb]) / args.accum
            scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)

    # Warm up for at least --warmup steps and --warmup-s seconds (clocks, allocator, autotuning), then time
    # --windows windows of --steps steps each and report the median window: a single short window of eager
    # steps (launch-bound on small models) moved by +-30% between runs.
    warm_start = time.perf_counter()
    done = 0
    while done < args.warmup or time.perf_counter() - warm_start < args.warmup_s:
        step()
        done += 1
        if done % 5 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    wall = time.perf_counter()
    windows = []
    for _ in range(args.windows):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(args.steps):
            step()
        end.record()
        end.synchronize()
        windows.append(start.elapsed_time(end) / args.steps)
    ms = statistics.median(windows)
    tokens = B * T * args.accum
    return {
        "config": name,
        "mode": mode + (("+compile" + ("" if args.compile_mode == "default" else ":" + args.compile_mode))
                        if args.compile else ""),
        "attention": args.attention,
        "layers": layers, "dim": dim, "heads": heads, "vocab": vocab,
        "batch": B, "seq": T, "grad_accum": args.accum,
        "params": params,
        "tokens_per_s": round(tokens / (ms * 1e-3), 1),
        "ms_per_step": round(ms, 3),
        "ms_per_step_windows": [round(w, 3) for w in windows],
        "warmup_steps": done,
        "wall_s": round(time.perf_counter() - wall, 3),
        "peak_mem_gib": round(torch.cuda.max_memory_allocated() / 2**30, 3),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--configs", default="char,gpt2-small", help="comma list of " + ", ".join(CONFIGS))
    p.add_argument("--modes", default="f32,amp", help="comma list of f32, amp, bf16")
    p.add_argument("--batch", type=int, default=0, help="override the config's batch")
    p.add_argument("--seq", type=int, default=0, help="override the config's sequence length")
    p.add_argument("--vocab", type=int, default=0, help="override the config's vocabulary")
    p.add_argument("--accum", type=int, default=1, help="micro-batches per optimizer step")
    p.add_argument("--attention", default="sdpa", choices=["sdpa", "naive"])
    p.add_argument("--compile", action="store_true")
    p.add_argument("--compile-mode", default="default", choices=["default", "reduce-overhead", "max-autotune"],
                   help="torch.compile's mode (reduce-overhead: CUDA graphs)")
    p.add_argument("--tf32", action="store_true", help="allow TF32 matmuls in f32 mode")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--steps", type=int, default=20, help="steps per timed window")
    p.add_argument("--windows", type=int, default=3, help="timed windows; the median is reported")
    p.add_argument("--warmup-s", type=float, default=3.0, help="warm up for at least this many seconds")
    p.add_argument("--json", default="", help="also write the result to this file")
    args = p.parse_args()

    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.allow_tf32 = args.tf32
    results = []
    for name in args.configs.split(","):
        for mode in args.modes.split(","):
            results.append(run(name, mode, args))
            torch.cuda.empty_cache()
    out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(), "tf32": args.tf32,
           "results": results}
    text = json.dumps(out, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
