#!/usr/bin/env python3
"""Loads the tokenizer a `helios-train export --format hf --reference-logits N` directory holds with
transformers and compares its ids with Helios' (helios_check_strings.json, written by the export). GPT-2 BPE:
AutoTokenizer (the fast tokenizer built from vocab.json + merges.txt), GPT2TokenizerFast and GPT2Tokenizer.
SentencePiece: AutoTokenizer with use_fast=False (LlamaTokenizer, legacy), where the sentencepiece module is
installed ("skipped" otherwise). Prints one JSON object; exits 1 when a loaded tokenizer's ids differ or the
directory holds no tokenizer files (a skipped tokenizer alone is not a failure).

    python3 bench/device/hf-tokenizer-check.py /tmp/hf-gpt2
"""
import json
import os
import sys

import transformers


def loaders(d):
    if os.path.exists(os.path.join(d, "vocab.json")):
        return {
            "AutoTokenizer": lambda: transformers.AutoTokenizer.from_pretrained(d),
            "GPT2TokenizerFast": lambda: transformers.GPT2TokenizerFast.from_pretrained(d),
            "GPT2Tokenizer": lambda: transformers.GPT2Tokenizer.from_pretrained(d),
        }
    if os.path.exists(os.path.join(d, "tokenizer.model")):
        return {"AutoTokenizer(use_fast=False)":
                lambda: transformers.AutoTokenizer.from_pretrained(d, use_fast=False)}
    return {}


def main():
    d = sys.argv[1]
    check = json.load(open(os.path.join(d, "helios_check_strings.json"), encoding="utf-8"))
    result = {"dir": d, "transformers": transformers.__version__, "strings": len(check["strings"]),
              "tokenizers": {}}
    ok = True
    for name, load in loaders(d).items():
        try:
            tok = load()
        except ImportError as e:  # the slow SentencePiece tokenizer needs the sentencepiece module
            result["tokenizers"][name] = {"skipped": str(e).splitlines()[0]}
            continue
        except Exception as e:  # a load that fails is a result too (and a failure)
            result["tokenizers"][name] = {"error": f"{type(e).__name__}: {e}", "ok": False}
            ok = False
            continue
        mismatches = []
        for s, ids in zip(check["strings"], check["ids"]):
            got = tok.encode(s, add_special_tokens=False)
            if got != ids:
                mismatches.append({"string": s, "helios": ids[:24], "transformers": got[:24]})
        eos = tok.eos_token_id
        result["tokenizers"][name] = {"class": type(tok).__name__, "vocab": len(tok), "eos_token_id": eos,
                                      "mismatches": mismatches, "ok": not mismatches}
        ok = ok and not mismatches
    result["ok"] = ok and bool(result["tokenizers"])
    result["compared"] = sum("ok" in t for t in result["tokenizers"].values())
    print(json.dumps(result, indent=2, ensure_ascii=False))
    sys.exit(0 if result["ok"] else 1)


if __name__ == "__main__":
    main()
