#!/usr/bin/env python3
"""PyTorch training throughput and peak memory of today's open model shapes, beside helios-train's.

Models are built by transformers from the configurations below (the published config.json values of each
model, random weights), so the comparison runs the same architecture Helios imports. Training draws random
tokens (batch x seq), computes the causal LM loss over every token and takes one optimizer step per batch.

Modes (comma list with --modes):
  bf16       every parameter in bfloat16, AdamW(fused) on them (no master weights, no loss scaling)
  amp-bf16   float32 parameters, autocast to bfloat16, AdamW(fused)
  lora       PEFT LoRA (rank --rank, alpha 2*rank, every attention and MLP projection) over a bfloat16 base,
             adapters in float32 (PEFT's default upcast), autocast to bfloat16, AdamW(fused) on the adapters
Add --compile to run torch.compile on the model as well.

Prints one JSON object {"torch", "transformers", "peft", "device", "results": [...]}; each result has
tokens_per_s, ms_per_step (median of --windows windows of --steps steps, CUDA events, after --warmup-s
seconds of warm-up) and peak_mem_gib (torch.cuda.max_memory_allocated over the timed windows).
"""
import argparse
import json
import statistics
import time

import torch

CONFIGS = {
    # Published config.json values (architecture fields only).
    "smollm2-135m": dict(arch="llama", hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                         num_attention_heads=9, num_key_value_heads=3, vocab_size=49152,
                         max_position_embeddings=8192, rms_norm_eps=1e-5, rope_theta=100000.0,
                         tie_word_embeddings=True),
    "smollm2-1.7b": dict(arch="llama", hidden_size=2048, intermediate_size=8192, num_hidden_layers=24,
                         num_attention_heads=32, num_key_value_heads=32, vocab_size=49152,
                         max_position_embeddings=8192, rms_norm_eps=1e-5, rope_theta=130000.0,
                         tie_word_embeddings=True),
    "qwen2.5-0.5b": dict(arch="qwen2", hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                         num_attention_heads=14, num_key_value_heads=2, vocab_size=151936,
                         max_position_embeddings=32768, rms_norm_eps=1e-6, rope_theta=1000000.0,
                         tie_word_embeddings=True),
    "llama-3.2-1b": dict(arch="llama", hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                         num_attention_heads=32, num_key_value_heads=8, head_dim=64, vocab_size=128256,
                         max_position_embeddings=131072, rms_norm_eps=1e-5, rope_theta=500000.0,
                         rope_scaling={"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                       "original_max_position_embeddings": 8192, "rope_type": "llama3"},
                         tie_word_embeddings=True),
}
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def make_config(name):
    import transformers
    fields = dict(CONFIGS[name])
    arch = fields.pop("arch")
    cls = transformers.Qwen2Config if arch == "qwen2" else transformers.LlamaConfig
    return cls(**fields, attn_implementation="sdpa")


def make_model(name, dtype):
    import transformers
    torch.manual_seed(0)
    config = make_config(name)
    try:
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=dtype)
    except TypeError:  # transformers before 4.56 spells it torch_dtype
        model = transformers.AutoModelForCausalLM.from_config(config, torch_dtype=dtype)
    return model.cuda()


def run(name, mode, args):
    base_dtype = {"bf16": torch.bfloat16, "amp-bf16": torch.float32, "lora": torch.bfloat16}[mode]
    model = make_model(name, base_dtype)
    params = sum(p.numel() for p in model.parameters())
    if mode == "lora":
        import peft
        cfg = peft.LoraConfig(r=args.rank, lora_alpha=2 * args.rank, lora_dropout=0.0,
                              target_modules=LORA_TARGETS, task_type="CAUSAL_LM")
        model = peft.get_peft_model(model, cfg)
    if args.checkpointing:
        model.gradient_checkpointing_enable()
        if mode == "lora":
            model.enable_input_require_grads()
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=1e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0, fused=True)
    step_model = torch.compile(model) if args.compile else model
    autocast = mode in ("amp-bf16", "lora")
    vocab = CONFIGS[name]["vocab_size"]
    B, T = args.batch, args.seq
    x = torch.randint(0, vocab, (B, T), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            loss = step_model(input_ids=x, labels=x).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    warm_start = time.perf_counter()
    done = 0
    while done < args.warmup or time.perf_counter() - warm_start < args.warmup_s:
        step()
        done += 1
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    windows = []
    for _ in range(args.windows):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(args.steps):
            loss = step()
        end.record()
        end.synchronize()
        windows.append(start.elapsed_time(end) / args.steps)
    ms = statistics.median(windows)
    result = {
        "config": name, "mode": mode + ("+compile" if args.compile else ""),
        "checkpointing": args.checkpointing, "batch": B, "seq": T, "params": params,
        "trainable": sum(p.numel() for p in trainable),
        "tokens_per_s": round(B * T / (ms * 1e-3), 1), "ms_per_step": round(ms, 3),
        "ms_per_step_windows": [round(w, 3) for w in windows], "warmup_steps": done,
        "peak_mem_gib": round(torch.cuda.max_memory_allocated() / 2**30, 3),
        "final_loss": float(loss),
    }
    del model, opt, step_model
    torch.cuda.empty_cache()
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--configs", default="qwen2.5-0.5b", help="comma list of " + ", ".join(CONFIGS))
    p.add_argument("--modes", default="bf16", help="comma list of bf16, amp-bf16, lora")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--rank", type=int, default=16, help="LoRA rank")
    p.add_argument("--checkpointing", action="store_true", help="activation (gradient) checkpointing")
    p.add_argument("--compile", action="store_true")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--warmup-s", type=float, default=3.0)
    p.add_argument("--steps", type=int, default=5, help="steps per timed window")
    p.add_argument("--windows", type=int, default=3)
    p.add_argument("--json", default="")
    args = p.parse_args()

    import transformers
    try:
        import peft
        peft_version = peft.__version__
    except ImportError:
        peft_version = None
    results = []
    for name in args.configs.split(","):
        for mode in args.modes.split(","):
            r = run(name, mode, args)
            print(json.dumps(r), flush=True)
            results.append(r)
    out = {"torch": torch.__version__, "transformers": transformers.__version__, "peft": peft_version,
           "device": torch.cuda.get_device_name(), "results": results}
    if args.json:
        with open(args.json, "w") as f:
            f.write(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
