#!/usr/bin/python3
"""GPT-2's byte-level BPE as OpenAI's encoder.py does it, for test_text to compare Helios' encoder with.

    gpt2_reference.py train CORPUS.json MERGES OUTDIR   trains MERGES merges on the strings of CORPUS.json (a
                                                        JSON list) and writes OUTDIR/encoder.json, vocab.bpe
    gpt2_reference.py encode OUTDIR STRINGS.json OUT.json
                                                        writes {"pieces": [[...]], "ids": [[...]]} per string

The pre-tokenizer is the original regular expression
    's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+
run by Python's re, whose classes lack \\p{..}: \\p{L} and \\p{N} become explicit classes built from
unicodedata's categories (L*, N*), and \\s the White_Space property's characters.
"""
import json
import re
import sys
import unicodedata

WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


def category_class(prefix):
    parts, start = [], None
    for cp in range(0x110001):
        inside = cp < 0x110000 and unicodedata.category(chr(cp)).startswith(prefix)
        if inside and start is None:
            start = cp
        elif not inside and start is not None:
            a, b = re.escape(chr(start)), re.escape(chr(cp - 1))
            parts.append(a if start == cp - 1 else a + "-" + b)
            start = None
    return "".join(parts)


L, N = category_class("L"), category_class("N")
PATTERN = re.compile(
    "'s|'t|'re|'ve|'m|'ll|'d"
    f"| ?[{L}]+| ?[{N}]+| ?[^{WHITE_SPACE}{L}{N}]+"
    f"|[{WHITE_SPACE}]+(?![^{WHITE_SPACE}])|[{WHITE_SPACE}]+")


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


BYTE_ENCODER = bytes_to_unicode()


def words(text):
    for piece in PATTERN.findall(text):
        yield piece, "".join(BYTE_ENCODER[b] for b in piece.encode("utf-8"))


def get_pairs(word):
    return {(word[i], word[i + 1]) for i in range(len(word) - 1)}


def bpe(token, ranks):
    word = tuple(token)
    pairs = get_pairs(word)
    if not pairs:
        return [token]
    while True:
        bigram = min(pairs, key=lambda pair: ranks.get(pair, float("inf")))
        if bigram not in ranks:
            break
        first, second = bigram
        new_word, i = [], 0
        while i < len(word):
            try:
                j = word.index(first, i)
                new_word.extend(word[i:j])
                i = j
            except ValueError:
                new_word.extend(word[i:])
                break
            if word[i] == first and i < len(word) - 1 and word[i + 1] == second:
                new_word.append(first + second)
                i += 2
            else:
                new_word.append(word[i])
                i += 1
        word = tuple(new_word)
        if len(word) == 1:
            break
        pairs = get_pairs(word)
    return list(word)


def train(corpus, merges):
    counts = {}
    for text in corpus:
        for _, w in words(text):
            counts[tuple(w)] = counts.get(tuple(w), 0) + 1
    encoder = {BYTE_ENCODER[b]: i for i, b in enumerate(sorted(BYTE_ENCODER, key=lambda b: BYTE_ENCODER[b]))}
    merge_list = []
    for _ in range(merges):
        pairs = {}
        for w, c in counts.items():
            for p in zip(w, w[1:]):
                pairs[p] = pairs.get(p, 0) + c
        if not pairs:
            break
        best = max(sorted(pairs), key=lambda p: pairs[p])
        merge_list.append(best)
        encoder.setdefault(best[0] + best[1], len(encoder))
        merged = {}
        for w, c in counts.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            merged[tuple(out)] = merged.get(tuple(out), 0) + c
        counts = merged
    encoder["<|endoftext|>"] = len(encoder)
    return encoder, merge_list


def main():
    if sys.argv[1] == "train":
        corpus = json.load(open(sys.argv[2], encoding="utf-8"))
        encoder, merges = train(corpus, int(sys.argv[3]))
        with open(sys.argv[4] + "/encoder.json", "w", encoding="utf-8") as f:
            json.dump(encoder, f, ensure_ascii=False)
        with open(sys.argv[4] + "/vocab.bpe", "w", encoding="utf-8") as f:
            f.write("#version: 0.2\n" + "".join(a + " " + b + "\n" for a, b in merges))
    else:
        encoder = json.load(open(sys.argv[2] + "/encoder.json", encoding="utf-8"))
        lines = open(sys.argv[2] + "/vocab.bpe", encoding="utf-8").read().split("\n")[1:]
        ranks = {tuple(l.split(" ")): i for i, l in enumerate(l for l in lines if l)}
        out = {"pieces": [], "ids": []}
        for text in json.load(open(sys.argv[3], encoding="utf-8")):
            pieces, ids = [], []
            for piece, w in words(text):
                pieces.append(piece)
                ids.extend(encoder[t] for t in bpe(w, ranks))
            out["pieces"].append(pieces)
            out["ids"].append(ids)
        json.dump(out, open(sys.argv[4], "w", encoding="utf-8"))


if __name__ == "__main__":
    main()
