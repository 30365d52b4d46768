#!/usr/bin/env python3
"""Helios' Hugging Face tokenizers against the Python libraries, on the device host (which has tokenizers,
transformers and sentencepiece; no network). No GPU is used.

For each of GPT-2, Llama 3 (meta-llama/Llama-3.2-1B), Qwen2.5 (Qwen/Qwen2.5-0.5B) and SmolLM2
(HuggingFaceTB/SmolLM2-135M) it trains, with the `tokenizers` library, a byte-level BPE tokenizer.json that
has the published file's exact normalizer, pre-tokenizer, post-processor, decoder and BPE options (written out
below), with the model's special tokens and two added tokens of our own (one lstrip/rstrip, one normalized),
and saves it through transformers' PreTrainedTokenizerFast (tokenizer.json + tokenizer_config.json, which
AutoTokenizer must load back); and a SentencePiece BPE model with byte fallback as Llama 2's (tokenizer.model +
a LlamaTokenizer tokenizer_config.json). Then it compares Helios' ids (`helios-train tokenize --jsonl`, one
process per tokenizer) with the libraries' on 10,000 random strings (many scripts, emoji, combining marks,
whitespace runs, digits, contractions, special-token strings) and on the corpus file as one text, checks
Helios' decode against the library's, and the BOS/EOS ids against AutoTokenizer's.

    python3 bench/device/tokenizer-check.py CORPUS [--helios .dev/bin/helios-train] [--strings 10000]

Writes $OUT/tokenizer-check.json (OUT defaults to /tmp/helios-final) and prints one line per tokenizer last:
string and corpus mismatches (must be 0), token counts and encode seconds (Helios' includes loading the
tokenizer and starting the process; SentencePiece's corpus goes line by line). Exits 1 on any mismatch or
failed load.
"""
import argparse
import io
import json
import os
import random
import re
import subprocess
import sys
import time

import sentencepiece as spm
import tokenizers
import transformers

LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def byte_level(add_prefix_space, trim_offsets, use_regex):
    return {"type": "ByteLevel", "add_prefix_space": add_prefix_space, "trim_offsets": trim_offsets,
            "use_regex": use_regex}


def split(pattern):
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False}


def template(bos):
    return {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": bos, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {bos: {"id": bos, "ids": [0], "tokens": [bos]}}}


# The published tokenizer.json sections (normalizer, pre_tokenizer, post_processor, decoder, BPE options), the
# model's special tokens (the first ones of each file) and its bos / eos.
MODELS = {
    "gpt2": dict(
        normalizer=None, pre_tokenizer=byte_level(False, True, True),
        post_processor=byte_level(True, False, True), decoder=byte_level(True, True, True),
        options={"continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": False,
                 "byte_fallback": False},
        specials=["<|endoftext|>"], bos="<|endoftext|>", eos="<|endoftext|>"),
    "llama3": dict(
        normalizer=None,
        pre_tokenizer={"type": "Sequence", "pretokenizers": [split(LLAMA3_SPLIT), byte_level(False, True, False)]},
        post_processor={"type": "Sequence", "processors": [byte_level(True, False, True),
                                                           template("<|begin_of_text|>")]},
        decoder=byte_level(True, True, True),
        options={"fuse_unk": False, "byte_fallback": False, "ignore_merges": True},
        specials=["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|start_header_id|>",
                  "<|end_header_id|>", "<|eot_id|>"],
        bos="<|begin_of_text|>", eos="<|end_of_text|>"),
    "qwen2.5": dict(
        normalizer={"type": "NFC"},
        pre_tokenizer={"type": "Sequence", "pretokenizers": [split(QWEN2_SPLIT), byte_level(False, False, False)]},
        post_processor=byte_level(False, False, False), decoder=byte_level(False, False, False),
        options={"continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": False,
                 "byte_fallback": False, "ignore_merges": False},
        specials=["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<tool_call>"],
        bos=None, eos="<|endoftext|>"),
    "smollm2": dict(
        normalizer=None,
        pre_tokenizer={"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True},
                                                             byte_level(False, True, True)]},
        post_processor=byte_level(True, False, True), decoder=byte_level(True, True, True),
        options={"fuse_unk": False, "byte_fallback": False, "ignore_merges": False},
        specials=["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<repo_name>", "<reponame>"],
        bos="<|endoftext|>", eos="<|endoftext|>"),
}
CHAT_TEMPLATE = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
OUR_TOKENS = ["<|pad|>", " hello world"]  # lstrip + rstrip; a normalized (non-special) added token
SP_SPECIALS = ["<unk>", "<s>", "</s>"]

FRAGMENTS = [
    "a", "Z", "the", " the", "The", "é", "ß", "Ω", "ж", "中", "字", "日本語", "한국어", "ไทย", "हिन्दी", "עברית", "عربي",
    "😀", "🏽", "👨\u200d👩\u200d👧", "🇩🇪", "e\u0301", "cafe\u0301", "café", "\u1100\u1161", "\u0301", "0", "7", "42",
    "1234567", "٣", "１２", "²", "½", "Ⅻ", "'", "'s", "'S", "'ll", "'LL", "'t", "'re", "'ve", "'m", "'d", "'ſ", " ",
    "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\r", "\u00a0", "\u3000", "\u2028", "\u0085", "\u180e", "\u200b",
    "\x0b", "\x0c", "\x1c", "\x1f", "!", "?", ",", ".", "...", "—", "“", "”", "$", "_", "-", "/", "\x7f", "<", ">",
    "|", "<|", "|>", "hello world", " hello world", "▁", "God", " God", "\x00"]
SPECIAL_STRINGS = sorted({t for m in MODELS.values() for t in m["specials"]} | set(OUR_TOKENS) | set(SP_SPECIALS))
# Assigned in Unicode 13 or earlier: every library's tables agree on them.
RANGES = [(0x21, 0x7E), (0xA1, 0x17F), (0x250, 0x2AF), (0x300, 0x36F), (0x391, 0x3A9), (0x3B1, 0x3C9),
          (0x410, 0x44F), (0x5D0, 0x5EA), (0x627, 0x64A), (0x660, 0x669), (0x905, 0x939), (0x966, 0x96F),
          (0xE01, 0xE2E), (0x1E00, 0x1EFF), (0x2000, 0x200A), (0x2010, 0x2027), (0x2070, 0x2079),
          (0x2150, 0x2188), (0x2200, 0x22FF), (0x3041, 0x3096), (0x30A1, 0x30FA), (0x4E00, 0x9FA5),
          (0xAC00, 0xD7A3), (0xFF10, 0xFF5A), (0x1F300, 0x1F64F)]


def random_strings(n, rng):
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(0, 24)):
            r = rng.random()
            if r < 0.15:
                lo, hi = rng.choice(RANGES)
                parts.append(chr(rng.randint(lo, hi)))
            elif r < 0.22:
                parts.append(rng.choice(SPECIAL_STRINGS))
            else:
                parts.append(rng.choice(FRAGMENTS))
        out.append("".join(parts))
    return out


def train_hf(name, spec, training, vocab_size):
    skeleton = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
                "normalizer": spec["normalizer"], "pre_tokenizer": spec["pre_tokenizer"],
                "post_processor": None, "decoder": spec["decoder"],
                "model": {"type": "BPE", "dropout": None, "unk_token": None, "vocab": {}, "merges": []}}
    tok = tokenizers.Tokenizer.from_str(json.dumps(skeleton))
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=spec["specials"], show_progress=False,
        initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(training, trainer=trainer)
    tok.add_tokens([tokenizers.AddedToken(OUR_TOKENS[0], lstrip=True, rstrip=True, special=True, normalized=False),
                    tokenizers.AddedToken(OUR_TOKENS[1], special=False, normalized=True)])
    j = json.loads(tok.to_str())
    j["model"].update(spec["options"])
    post = spec["post_processor"]
    if post and post.get("type") == "Sequence":  # the template's BOS id as trained
        for p in post["processors"]:
            if p["type"] == "TemplateProcessing":
                for t in p["special_tokens"].values():
                    t["ids"] = [tok.token_to_id(t["id"])]
    j["post_processor"] = post
    return tokenizers.Tokenizer.from_str(json.dumps(j))


def save_hf(tok, spec, d):
    """Through transformers, as a user would (by hand where that fails, said in the result); AutoTokenizer
    must load it back."""
    os.makedirs(d, exist_ok=True)
    saved = {}
    try:
        cls = getattr(transformers, "PreTrainedTokenizerFast", None) or getattr(transformers, "TokenizersBackend")
        kwargs = {"tokenizer_object": tok, "eos_token": spec["eos"], "chat_template": CHAT_TEMPLATE}
        if spec["bos"]:
            kwargs["bos_token"] = spec["bos"]
        cls(**kwargs).save_pretrained(d)
    except Exception as e:
        saved["transformers_save_error"] = f"{type(e).__name__}: {e}"
        tok.save(os.path.join(d, "tokenizer.json"))
        with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
            json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": spec["bos"],
                       "eos_token": spec["eos"], "chat_template": CHAT_TEMPLATE}, f, indent=2)
    saved["files"] = sorted(os.listdir(d))
    auto = transformers.AutoTokenizer.from_pretrained(d)
    saved.update({"class": type(auto).__name__, "bos": auto.bos_token_id, "eos": auto.eos_token_id})
    return saved, auto


def train_sp(training, d, vocab_size):
    os.makedirs(d, exist_ok=True)
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(training), model_writer=model, model_type="bpe", vocab_size=vocab_size,
        byte_fallback=True, split_digits=True, normalization_rule_name="identity", add_dummy_prefix=True,
        remove_extra_whitespaces=False, allow_whitespace_only_pieces=True, character_coverage=0.9995,
        max_sentence_length=1 << 16, num_threads=os.cpu_count() or 4, minloglevel=2)
    with open(os.path.join(d, "tokenizer.model"), "wb") as f:
        f.write(model.getvalue())
    config = {"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
              "add_bos_token": True, "add_eos_token": False, "legacy": True,
              "added_tokens_decoder": {str(i): {"content": t, "lstrip": False, "normalized": False, "rstrip": False,
                                                "single_word": False, "special": True}
                                       for i, t in enumerate(SP_SPECIALS)}}
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=2)
    return spm.SentencePieceProcessor(model_proto=model.getvalue())


def sp_reference(sp, text):
    """transformers' LlamaTokenizer (legacy): special-token strings cut out, each stretch encoded alone."""
    ids = []
    for part in re.split("(" + "|".join(re.escape(t) for t in SP_SPECIALS) + ")", text):
        if part in SP_SPECIALS:
            ids.append(SP_SPECIALS.index(part))
        elif part:
            ids.extend(sp.encode(part))
    return ids


def helios(exe, d, args, stdin):
    start = time.time()
    r = subprocess.run([exe, "tokenize", "--tokenizer", d] + args, input=stdin, capture_output=True)
    if r.returncode != 0:
        raise RuntimeError(f"helios-train tokenize {args}: {r.stderr.decode(errors='replace')[-500:]}")
    return r.stdout.decode("utf-8"), time.time() - start


def first_mismatch(strings, ours, theirs):
    bad = [i for i in range(len(theirs)) if i >= len(ours) or ours[i] != theirs[i]]
    if not bad:
        return 0, None
    i = bad[0]
    return len(bad), {"string": strings[i], "helios": ours[i][:32], "library": theirs[i][:32]}


def lines_of(out):
    """Helios' output lines (split at \\n only: its JSON leaves U+0085 and U+2028 unescaped)."""
    return out.split("\n")[:-1] if out.endswith("\n") else out.split("\n")


def helios_jsonl(exe, d, strings):
    out, seconds = helios(exe, d, ["--jsonl"], "".join(json.dumps(s) + "\n" for s in strings).encode())
    return [json.loads(l) for l in lines_of(out)], seconds


def compare(name, d, exe, strings, corpus, encode_lib, decode_lib, extra, corpus_by_lines=False):
    """Ids of the strings and of the corpus (one text; line by line for SentencePiece, whose encoder takes
    minutes over 4 MB at once), the library's ids decoded by both, and Helios' --info."""
    ours, _ = helios_jsonl(exe, d, strings)
    theirs = [encode_lib(s) for s in strings]
    n_bad, example = first_mismatch(strings, ours, theirs)
    decoded, _ = helios(exe, d, ["--jsonl", "--decode"], "".join(json.dumps(t) + "\n" for t in theirs).encode())
    dec_bad = sum(json.loads(a) != decode_lib(t) for a, t in zip(lines_of(decoded), theirs))
    if corpus_by_lines:
        lines = corpus["text"].split("\n")
        corpus_ours, helios_s = helios_jsonl(exe, d, lines)
        start = time.time()
        corpus_theirs = [encode_lib(l) for l in lines]
    else:
        corpus_out, helios_s = helios(exe, d, ["--file", corpus["path"]], b"")
        corpus_ours = [int(x) for x in corpus_out.split()]
        start = time.time()
        corpus_theirs = encode_lib(corpus["text"])
    lib_s = time.time() - start
    tokens = sum(map(len, corpus_theirs)) if corpus_by_lines else len(corpus_theirs)
    info = json.loads(helios(exe, d, ["--info"], b"")[0])
    return dict({"tokenizer": name, "strings": len(strings), "mismatches": n_bad, "first_mismatch": example,
                 "decode_mismatches": dec_bad, "corpus_tokens": tokens, "corpus_by_lines": corpus_by_lines,
                 "corpus_match": corpus_ours == corpus_theirs, "helios_corpus_s": round(helios_s, 2),
                 "library_corpus_s": round(lib_s, 2), "helios_info": info}, **extra)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus")
    ap.add_argument("--helios", default=".dev/bin/helios-train")
    ap.add_argument("--strings", type=int, default=10000)
    ap.add_argument("--vocab", type=int, default=8000)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    args = ap.parse_args()
    out_dir = os.environ.get("OUT", "/tmp/helios-final")
    work = "/tmp/helios-tokenizer-check"
    os.makedirs(out_dir, exist_ok=True)
    rng = random.Random(args.seed)
    text = open(args.corpus, encoding="utf-8").read()
    corpus = {"path": args.corpus, "text": text}
    strings = random_strings(args.strings, rng)
    training = text.splitlines() + random_strings(3000, rng)
    results, ok = [], True
    for name, spec in MODELS.items():
        d = os.path.join(work, name)
        try:
            tok = train_hf(name, spec, training, args.vocab)
            saved, auto = save_hf(tok, spec, d)
            lib = tokenizers.Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
            auto_bad = sum(auto.encode(s, add_special_tokens=False) != lib.encode(s, add_special_tokens=False).ids
                           for s in strings[:500])
            r = compare(name, d, args.helios, strings, corpus,
                        lambda s: lib.encode(s, add_special_tokens=False).ids,
                        lambda ids: lib.decode(ids, skip_special_tokens=False),
                        {"vocab": lib.get_vocab_size(), "saved": saved, "autotokenizer_vs_tokenizers": auto_bad})
            info = r["helios_info"]
            r["special_ids_match"] = info["bos"] == saved["bos"] and saved["eos"] in info["eos"]
        except Exception as e:  # a failure is a result too
            r = {"tokenizer": name, "error": f"{type(e).__name__}: {e}"}
        results.append(r)
    d = os.path.join(work, "llama2-sentencepiece")
    try:
        sp = train_sp(training, d, args.vocab)
        r = compare("llama2-sentencepiece", d, args.helios, strings, corpus, lambda s: sp_reference(sp, s),
                    lambda ids: sp_decode(sp, ids), {"vocab": sp.get_piece_size()}, corpus_by_lines=True)
        r["special_ids_match"] = r["helios_info"]["bos"] == 1 and r["helios_info"]["eos"] == [2]
    except Exception as e:
        r = {"tokenizer": "llama2-sentencepiece", "error": f"{type(e).__name__}: {e}"}
    results.append(r)
    for r in results:
        r["ok"] = ("error" not in r and r["mismatches"] == 0 and r["corpus_match"] and r["decode_mismatches"] == 0
                   and r["special_ids_match"] and r.get("autotokenizer_vs_tokenizers", 0) == 0
                   and "transformers_save_error" not in r.get("saved", {}))
        ok = ok and r["ok"]
    summary = {"seed": args.seed, "tokenizers_version": tokenizers.__version__,
               "transformers_version": transformers.__version__, "sentencepiece_version": spm.__version__,
               "corpus": args.corpus, "corpus_bytes": len(text.encode()), "results": results, "ok": ok}
    with open(os.path.join(out_dir, "tokenizer-check.json"), "w") as f:
        json.dump(summary, f, indent=2, ensure_ascii=False)
    print(f"tokenizers {tokenizers.__version__}, transformers {transformers.__version__}, sentencepiece "
          f"{spm.__version__}; {args.strings} strings (seed {args.seed}), corpus {len(text.encode())} bytes")
    print(f"{'tokenizer':22} {'vocab':>6} {'str mism':>8} {'dec mism':>8} {'corpus tok':>10} {'corpus':>6} "
          f"{'helios s':>8} {'lib s':>6} ok")
    for r in results:
        if "error" in r:
            print(f"{r['tokenizer']:22} ERROR {r['error'][:200]}")
            continue
        print(f"{r['tokenizer']:22} {r['vocab']:>6} {r['mismatches']:>8} {r['decode_mismatches']:>8} "
              f"{r['corpus_tokens']:>10} {'same' if r['corpus_match'] else 'DIFF':>6} {r['helios_corpus_s']:>8} "
              f"{r['library_corpus_s']:>6} {'yes' if r['ok'] else 'NO'}")
    print("ALL OK" if ok else "MISMATCHES (see tokenizer-check.json)")
    sys.exit(0 if ok else 1)


def sp_decode(sp, ids):
    """Helios' decode of SentencePiece ids: added tokens as their strings, runs of model ids through SentencePiece."""
    out, run = "", []
    for i in ids:
        if i < len(SP_SPECIALS):
            out += sp.decode(run) + SP_SPECIALS[i]
            run = []
        else:
            run.append(i)
    return out + sp.decode(run)


if __name__ == "__main__":
    main()
