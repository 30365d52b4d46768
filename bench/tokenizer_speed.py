#!/usr/bin/env python3
"""How long `helios-train tokenize` takes over the default corpus (the KJV, 4.1 MB) with byte-level BPE
tokenizers of each published pre-tokenizer configuration (GPT-2, Llama 3, Qwen2, SmolLM2), and with Helios'
older GPT-2 kind (encoder.json + vocab.bpe: a hand-written scanner instead of PCRE2) on the same merges.

The tokenizers are trained here on the corpus (tests/text/hf_reference.py's trainer, MERGES merges); each is
timed as a whole process (start, load, encode, print), best of REPEATS, on this machine's CPU. The GPT-2
kind's ids must equal the tokenizer.json's (the same merges). Writes a bench/results JSON:

    python3 bench/tokenizer_speed.py [--helios build/bin/helios-train] [--corpus .deps/corpus/kjv.txt]
        [--merges 8000] [--repeats 3] --out bench/results/DATE-cpu-tokenizer-encode.json
"""
import argparse
import datetime
import importlib.util
import json
import os
import platform
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def reference():
    spec = importlib.util.spec_from_file_location("hf_reference", os.path.join(ROOT, "tests/text/hf_reference.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(helios, tokenizer, corpus, repeats):
    best, out = None, None
    for _ in range(repeats):
        start = time.perf_counter()
        r = subprocess.run([helios, "tokenize", "--tokenizer", tokenizer, "--file", corpus], capture_output=True,
                           check=True)
        elapsed = time.perf_counter() - start
        best, out = min(best or elapsed, elapsed), r.stdout
    return best, [int(x) for x in out.split()]


def gpt2_files(tj, d):
    """The GPT-2 configuration's vocabulary and merges as encoder.json + vocab.bpe."""
    enc = dict(tj["model"]["vocab"])
    enc["<|endoftext|>"] = len(enc)
    with open(os.path.join(d, "encoder.json"), "w", encoding="utf-8") as f:
        json.dump(enc, f, ensure_ascii=False)
    with open(os.path.join(d, "vocab.bpe"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in tj["model"]["merges"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--helios", default=os.path.join(ROOT, "build/bin/helios-train"))
    ap.add_argument("--corpus", default=os.path.join(ROOT, ".deps/corpus/kjv.txt"))
    ap.add_argument("--merges", type=int, default=8000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    ref = reference()
    ref.MERGES = args.merges
    lines = open(args.corpus, encoding="utf-8").read().split("\n")
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name in ("gpt2", "llama3", "qwen2", "smollm2"):
            d = os.path.join(work, name)
            os.makedirs(d)
            tj = ref.make_tokenizer(name, lines)
            ref.write(os.path.join(d, "tokenizer.json"), tj)
            seconds, ids = timed(args.helios, d, args.corpus, args.repeats)
            rows.append({"tokenizer": f"{name} (tokenizer.json)", "vocab": len(tj["model"]["vocab"]),
                         "tokens": len(ids), "seconds": round(seconds, 3),
                         "mb_per_s": round(os.path.getsize(args.corpus) / seconds / 1e6, 2)})
            if name == "gpt2":
                g = os.path.join(work, "gpt2-kind")
                os.makedirs(g)
                gpt2_files(tj, g)
                seconds, same = timed(args.helios, g, args.corpus, args.repeats)
                rows.append({"tokenizer": "gpt2 (encoder.json + vocab.bpe, hand-written scanner)",
                             "vocab": len(tj["model"]["vocab"]) + 1, "tokens": len(same),
                             "seconds": round(seconds, 3),
                             "mb_per_s": round(os.path.getsize(args.corpus) / seconds / 1e6, 2),
                             "same_ids_as_tokenizer_json": same == ids})
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "")
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    doc = {"meta": {"device": f"CPU: {cpu} ({os.cpu_count()} cores, shared)", "driver": platform.platform(),
                    "date": datetime.date.today().isoformat(), "commit": commit},
           "note": (f"helios-train tokenize --file over {os.path.basename(args.corpus)} "
                    f"({os.path.getsize(args.corpus)} bytes) as one text: the whole process (start, load, "
                    f"encode, print), best of {args.repeats}. Byte-level BPE with {args.merges} merges trained "
                    "on the corpus for each published pre-tokenizer configuration; the second row is Helios' "
                    "GPT-2 kind (encoder.json + vocab.bpe, a hand-written scanner) on the same merges."),
           "results": rows}
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    for r in rows:
        print(f"{r['tokenizer']:55} {r['tokens']:>9} tokens {r['seconds']:>7.3f} s {r['mb_per_s']:>6} MB/s")


if __name__ == "__main__":
    main()
