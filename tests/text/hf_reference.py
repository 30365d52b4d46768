#!/usr/bin/python3
"""A Python reference of the Hugging Face `tokenizers` library's encoding of a tokenizer.json with a BPE model,
for test_text to compare Helios' engine/text/hf with (the CI machine has no `tokenizers`). It is written from
the library's documented behaviour, not from Helios' code: regular expressions run in Python's `regex`
module on the patterns exactly as the files write them (its \\s, like Oniguruma's, is White_Space; the
pipeline works on code points, not bytes), added tokens are found by scanning, merges by taking the lowest
(rank, position) pair again and again.

    hf_reference.py run CORPUS.json STRINGS.json OUTDIR CONFIG...
        For each named configuration: trains a small BPE on the strings of CORPUS.json (a JSON list) with
        that configuration's normalizer and pre-tokenizer (a byte-level BPE trainer written here), writes
        OUTDIR/CONFIG/tokenizer.json (+ tokenizer_config.json, generation_config.json) and OUTDIR/CONFIG/
        ids.json: the ids of every string of STRINGS.json.
    hf_reference.py encode DIR STRINGS.json OUT.json
        The ids of every string with DIR/tokenizer.json.
"""
import collections
import heapq
import json
import os
import sys
import unicodedata

import regex

GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
          r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
         r"|\s*[\r\n]+|\s+(?!\S)|\s+")
# tiktoken's cl100k written with possessive quantifiers, as some tokenizer.json files carry it.
POSSESSIVE = (r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*"
              r"|\s*[\r\n]|\s+(?!\S)|\s+")

WORD_CHAR = regex.compile(r"[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]")  # Rust regex's \w
SPACE = regex.compile(r"\s")


def byte_chars():
    printable = [b for b in range(256) if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF]
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


BYTE_CHAR = byte_chars()


def split_spans(text, pattern, behavior, invert=False):
    """The pieces of `text` cut by `pattern` (a compiled regex, or a function of one character)."""
    segs, prev = [], 0
    if callable(pattern):
        for i, c in enumerate(text):
            if pattern(c):
                if prev < i:
                    segs.append((text[prev:i], False))
                segs.append((c, True))
                prev = i + 1
    else:
        for m in pattern.finditer(text):
            if m.start() > prev:
                segs.append((text[prev:m.start()], False))
            segs.append((m.group(), True))
            prev = m.end()
    if prev < len(text):
        segs.append((text[prev:], False))
    if invert:
        segs = [(s, not f) for s, f in segs]
    out = []
    if behavior == "Isolated":
        out = [s for s, _ in segs]
    elif behavior == "Removed":
        out = [s for s, f in segs if not f]
    elif behavior == "Contiguous":
        last = None
        for s, f in segs:
            if out and f == last:
                out[-1] += s
            else:
                out.append(s)
            last = f
    elif behavior == "MergedWithPrevious":
        last = False
        for s, f in segs:
            if f and not last and out:
                out[-1] += s
            else:
                out.append(s)
            last = f
    elif behavior == "MergedWithNext":
        last = False
        for s, f in reversed(segs):
            if f and not last and out:
                out[-1] = s + out[-1]
            else:
                out.append(s)
            last = f
        out.reverse()
    return [s for s in out if s]


def compile_pattern(p):
    if "String" in p:
        return regex.compile(regex.escape(p["String"]))
    return regex.compile(p["Regex"])


def flatten(spec, key):
    """A stage's steps: a Sequence's, in order, or the one step (none for null)."""
    if spec is None:
        return []
    if spec["type"] == "Sequence":
        return [s for sub in spec[key] for s in flatten(sub, key)]
    return [spec]


class Normalizer:
    def __init__(self, spec):
        self.steps = []
        for s in flatten(spec, "normalizers"):
            self._add(s)

    def _add(self, spec):
        t = spec["type"]
        if t in ("NFC", "NFD", "NFKC", "NFKD"):
            self.steps.append(lambda s, form=t: unicodedata.normalize(form, s))
        elif t == "Prepend":
            self.steps.append(lambda s, p=spec["prepend"]: p + s if s else s)
        elif t == "Replace":
            pattern = compile_pattern(spec["pattern"])
            self.steps.append(lambda s, r=pattern, c=spec["content"]: r.sub(lambda m: c, s))
        else:
            raise ValueError("normalizer " + t)

    def __call__(self, s):
        for step in self.steps:
            s = step(s)
        return s


class PreTokenizer:
    def __init__(self, spec):
        self.steps = flatten(spec, "pretokenizers")

    @staticmethod
    def _run(spec, piece, first):
        t = spec["type"]
        if t == "Split":
            parts = split_spans(piece, compile_pattern(spec["pattern"]), spec["behavior"], spec.get("invert", False))
        elif t == "Digits":
            parts = split_spans(piece, lambda c: unicodedata.category(c)[0] == "N",
                                "Isolated" if spec.get("individual_digits") else "Contiguous")
        elif t == "ByteLevel":
            if spec.get("add_prefix_space", True) and not piece.startswith(" "):
                piece = " " + piece
            parts = split_spans(piece, regex.compile(GPT2), "Isolated") if spec.get("use_regex", True) else [piece]
            parts = ["".join(BYTE_CHAR[b] for b in p.encode("utf-8")) for p in parts]
        elif t == "Metaspace":
            r = spec["replacement"]
            piece = piece.replace(" ", r)
            scheme = spec.get("prepend_scheme", "always")
            if (scheme == "always" or (scheme == "first" and first)) and not piece.startswith(r):
                piece = r + piece
            parts = split_spans(piece, lambda c: c == r, "MergedWithNext") if spec.get("split", True) else [piece]
        else:
            raise ValueError("pre-tokenizer " + t)
        return [(p, first and i == 0) for i, p in enumerate(parts)]

    def __call__(self, piece, first):
        pieces = [(piece, first)] if piece else []
        for spec in self.steps:
            pieces = [q for p, f in pieces for q in self._run(spec, p, f)]
        return [p for p, _ in pieces]


class Bpe:
    def __init__(self, spec):
        self.vocab = spec["vocab"]
        self.prefix = spec.get("continuing_subword_prefix") or ""
        self.suffix = spec.get("end_of_word_suffix") or ""
        self.unk = spec.get("unk_token")
        self.fuse_unk = spec.get("fuse_unk", False)
        self.byte_fallback = spec.get("byte_fallback", False)
        self.ignore_merges = spec.get("ignore_merges", False)
        self.ranks = {}
        rank = 0
        for m in spec["merges"]:
            if isinstance(m, str):
                if m.startswith("#version"):
                    continue
                a, b = m.split(" ")
            else:
                a, b = m
            self.ranks[(self.vocab[a], self.vocab[b])] = (rank, self.vocab[a + b[len(self.prefix):]])
            rank += 1
        self.cache = {}

    def symbols(self, word):
        ids, unk = [], None
        for i, c in enumerate(word):
            s = (self.prefix if i > 0 else "") + c + (self.suffix if i == len(word) - 1 else "")
            if s in self.vocab:
                if unk is not None:
                    ids.append(unk)
                    unk = None
                ids.append(self.vocab[s])
                continue
            if self.byte_fallback:
                names = ["<0x%02X>" % b for b in s.encode("utf-8")]
                if all(n in self.vocab for n in names):
                    ids.extend(self.vocab[n] for n in names)
                    continue
            if self.unk is not None:
                if unk is not None and not self.fuse_unk:
                    ids.append(unk)
                unk = self.vocab[self.unk]
        if unk is not None:
            ids.append(unk)
        return ids

    def __call__(self, word):
        if not word:
            return []
        if self.ignore_merges and word in self.vocab:
            return [self.vocab[word]]
        if word not in self.cache:
            self.cache[word] = self.merge(self.symbols(word))
        return self.cache[word]

    def merge(self, ids):
        """Merges the pair of lowest (rank, position) until none has a merge: a heap of candidate pairs keyed by
        the left symbol's first position, entries checked against the current neighbours when taken."""
        nxt = {i: i + 1 for i in range(len(ids) - 1)}
        prv = {i + 1: i for i in range(len(ids) - 1)}
        sym = dict(enumerate(ids))
        heap = [(self.ranks[(ids[i], ids[i + 1])][0], i) for i in range(len(ids) - 1) if (ids[i], ids[i + 1]) in self.ranks]
        heapq.heapify(heap)
        while heap:
            rank, i = heapq.heappop(heap)
            if i not in sym or i not in nxt:
                continue
            j = nxt[i]
            m = self.ranks.get((sym[i], sym[j]))
            if m is None or m[0] != rank:
                continue
            sym[i] = m[1]
            del sym[j]
            if j in nxt:
                nxt[i] = nxt[j]
                prv[nxt[j]] = i
                del nxt[j]
            else:
                del nxt[i]
            for a in ([prv[i]] if i in prv else []) + [i]:
                if a in nxt and (sym[a], sym[nxt[a]]) in self.ranks:
                    heapq.heappush(heap, (self.ranks[(sym[a], sym[nxt[a]])][0], a))
        return [sym[i] for i in sorted(sym)]


class Tokenizer:
    def __init__(self, tj):
        self.normalizer = Normalizer(tj.get("normalizer"))
        self.pre = PreTokenizer(tj.get("pre_tokenizer"))
        self.model = Bpe(tj["model"])
        self.added, next_id = {}, len(self.model.vocab)
        for t in tj.get("added_tokens") or []:
            if not t["content"] or t["content"] in self.added:
                continue
            tid = self.model.vocab.get(t["content"])
            if tid is None:
                tid, next_id = next_id, next_id + 1
            self.added[t["content"]] = dict(t, id=tid)
        self.raw = self._patterns(lambda t: not t["normalized"])
        self.normalized = self._patterns(lambda t: t["normalized"])

    def _patterns(self, keep):
        pats = [((self.normalizer(c) if t["normalized"] else c), t) for c, t in self.added.items() if keep(t)]
        return sorted([p for p in pats if p[0]], key=lambda p: -len(p[0]))

    @staticmethod
    def cut(text, patterns):
        out, start_offset, pos = [], 0, 0
        while pos < len(text):
            hit = next(((p, t) for p, t in patterns if text.startswith(p, pos)), None)
            if hit is None:
                pos += 1
                continue
            p, t = hit
            start, stop = pos, pos + len(p)
            pos = stop
            if t.get("single_word"):
                if (start > 0 and WORD_CHAR.match(text[start - 1])) or (stop < len(text) and WORD_CHAR.match(text[stop])):
                    continue
            if t.get("lstrip"):
                s = start
                while s > 0 and SPACE.match(text[s - 1]):
                    s -= 1
                start = max(s, start_offset)
            if t.get("rstrip"):
                while stop < len(text) and SPACE.match(text[stop]):
                    stop += 1
                pos = stop
            if start_offset < start:
                out.append((start_offset, text[start_offset:start], None))
            out.append((start, text[start:stop], t["id"]))
            start_offset = stop
        if start_offset < len(text):
            out.append((start_offset, text[start_offset:], None))
        return out

    def encode(self, text):
        ids = []
        for at, part, tid in self.cut(text, self.raw):
            if tid is not None:
                ids.append(tid)
                continue
            for at2, part2, tid2 in self.cut(self.normalizer(part), self.normalized):
                if tid2 is not None:
                    ids.append(tid2)
                    continue
                for piece in self.pre(part2, at == 0 and at2 == 0):
                    ids.extend(self.model(piece))
        return ids


# --- a small BPE trainer and the configurations -------------------------------------------------------------

def added(content, special=True, **flags):
    return dict({"content": content, "single_word": False, "lstrip": False, "rstrip": False,
                 "normalized": not special, "special": special}, **flags)


def split(pattern):
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False}


def byte_level(add_prefix_space=False, use_regex=True, trim_offsets=True):
    return {"type": "ByteLevel", "add_prefix_space": add_prefix_space, "trim_offsets": trim_offsets,
            "use_regex": use_regex}


LLAMA2_DECODER = {"type": "Sequence", "decoders": [
    {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"},
    {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
LLAMA2_NORMALIZER = {"type": "Sequence", "normalizers": [
    {"type": "Prepend", "prepend": "\u2581"}, {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}
LLAMA2_SPECIALS = [added("<unk>"), added("<s>"), added("</s>")]

# name: (normalizer, pre_tokenizer, decoder, BPE options, added tokens, byte-level, post_processor)
CONFIGS = {
    "gpt2": (None, byte_level(), byte_level(), {}, [added("<|endoftext|>")], True, byte_level()),
    "gpt2-ignore-merges": (None, byte_level(), byte_level(), {"ignore_merges": True},
                           [added("<|endoftext|>"), added(" hello world", special=False)], True, None),
    "gpt2-prefix-space": (None, byte_level(add_prefix_space=True), byte_level(),
                          {"continuing_subword_prefix": "##", "end_of_word_suffix": "</w>"},
                          [added("<|endoftext|>", lstrip=True, rstrip=True)], True, None),
    "llama3": (None, {"type": "Sequence", "pretokenizers": [split(LLAMA3), byte_level(use_regex=False)]},
               byte_level(), {"ignore_merges": True},
               [added("<|begin_of_text|>"), added("<|end_of_text|>"), added("<|eot_id|>"),
                added("<|start_header_id|>"), added("<|end_header_id|>"), added("<|pad|>", lstrip=True)],
               True, "bos"),
    "qwen2": ({"type": "NFC"}, {"type": "Sequence", "pretokenizers": [split(QWEN2), byte_level(use_regex=False)]},
              byte_level(), {}, [added("<|endoftext|>"), added("<|im_start|>"), added("<|im_end|>"),
                                 added("cafe\u0301", special=False)], True, byte_level()),
    "smollm2": (None, {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True},
                                                               byte_level()]},
                byte_level(), {}, [added("<|endoftext|>"), added("<|im_start|>"), added("<|im_end|>"),
                                   added("God", special=False, single_word=True)], True, None),
    "possessive": (None, {"type": "Sequence", "pretokenizers": [split(POSSESSIVE), byte_level(use_regex=False)]},
                   byte_level(), {"ignore_merges": True}, [added("<|endoftext|>")], True, None),
    "llama2": (LLAMA2_NORMALIZER, None, LLAMA2_DECODER,
               {"byte_fallback": True, "fuse_unk": True, "unk_token": "<unk>"}, LLAMA2_SPECIALS, False, "bos"),
    "llama2-unk": (LLAMA2_NORMALIZER, None, LLAMA2_DECODER, {"fuse_unk": True, "unk_token": "<unk>"},
                   LLAMA2_SPECIALS, False, None),
    "mistral-metaspace": (None, {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first",
                                 "split": False},
                          LLAMA2_DECODER, {"byte_fallback": True, "fuse_unk": True, "unk_token": "<unk>"},
                          LLAMA2_SPECIALS, False, None),
}
MERGES = 400


def train(words, alphabet, n_merges, prefix, suffix):
    """Byte-pair merges over `words` (a Counter of strings): the most frequent adjacent pair, ties to the
    smaller pair, merged into a + b without b's continuing-subword prefix."""
    vocab = {}
    for c in alphabet:
        vocab.setdefault(c, len(vocab))
    seqs, counts = [], []
    for w, n in words.items():
        syms = [(prefix if i else "") + c + (suffix if i == len(w) - 1 else "") for i, c in enumerate(w)]
        for s in syms:
            vocab.setdefault(s, len(vocab))
        seqs.append(syms)
        counts.append(n)
    pairs, where = collections.Counter(), collections.defaultdict(set)
    for k, syms in enumerate(seqs):
        for a, b in zip(syms, syms[1:]):
            pairs[(a, b)] += counts[k]
            where[(a, b)].add(k)
    heap = [(-n, p) for p, n in pairs.items()]  # stale entries are skipped when their count moved on
    heapq.heapify(heap)
    merges = []
    while len(merges) < n_merges and heap:
        n, best = heapq.heappop(heap)
        if -n != pairs[best] or n == 0:
            continue
        a, b = best
        new = a + b[len(prefix):]
        merges.append([a, b])
        vocab.setdefault(new, len(vocab))
        touched = set()
        for k in where.pop(best):
            syms, out, i = seqs[k], [], 0
            for x, y in zip(syms, syms[1:]):
                pairs[(x, y)] -= counts[k]
                touched.add((x, y))
            while i < len(syms):
                if i + 1 < len(syms) and syms[i] == a and syms[i + 1] == b:
                    out.append(new)
                    i += 2
                else:
                    out.append(syms[i])
                    i += 1
            seqs[k] = out
            for x, y in zip(out, out[1:]):
                pairs[(x, y)] += counts[k]
                where[(x, y)].add(k)
                touched.add((x, y))
        for p in touched:
            if pairs[p] > 0:
                heapq.heappush(heap, (-pairs[p], p))
    return vocab, merges


def make_tokenizer(name, corpus):
    normalizer, pre, decoder, options, specials, byte_level_alphabet, post = CONFIGS[name]
    prefix, suffix = options.get("continuing_subword_prefix", ""), options.get("end_of_word_suffix", "")
    norm, pt = Normalizer(normalizer), PreTokenizer(pre)
    words = collections.Counter()
    for text in corpus:
        for piece in pt(norm(text), True):  # without a pre-tokenizer, trained on the words (merges stay short)
            words.update([piece] if byte_level_alphabet else split_spans(piece, lambda c: c == "\u2581", "MergedWithNext"))
    if byte_level_alphabet:
        alphabet = [BYTE_CHAR[b] for b in range(256)]
    else:  # Llama 2's: the special pieces, the 256 byte tokens, then the training text's characters
        alphabet = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
        chars = collections.Counter(c for w, n in words.items() for c in w for _ in range(n))
        alphabet += [c for c, n in sorted(chars.items(), key=lambda kv: (-kv[1], kv[0])) if n > 1][:150]
        words = collections.Counter({w: n for w, n in words.items() if all(c in alphabet for c in w)})
    n_merges = MERGES
    vocab, merges = train(words, alphabet, n_merges, prefix, suffix)
    # Entries the merges do not build for these pieces: with ignore_merges such a piece is that one token, without
    # it the merges' several.
    merged = Bpe({"vocab": vocab, "merges": merges, "continuing_subword_prefix": prefix, "end_of_word_suffix": suffix})
    for w, _ in words.most_common(400):
        if len(w) > 2 and len(merged(w)) > 1 and len(vocab) < len(alphabet) + n_merges + 40:
            vocab.setdefault(w, len(vocab))
    model = dict({"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merges if name != "qwen2" else [" ".join(m) for m in merges]}, **options)
    added_tokens, next_id = [], len(vocab)
    for t in specials:
        tid = vocab.get(t["content"])
        if tid is None:
            tid, next_id = next_id, next_id + 1
        added_tokens.append(dict({"id": tid}, **t))
    post_processor = post
    if post == "bos":
        bos = specials[1]["content"] if not byte_level_alphabet else specials[0]["content"]
        bos_id = next(t["id"] for t in added_tokens if t["content"] == bos)
        post_processor = {"type": "TemplateProcessing",
                          "single": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                          "pair": [], "special_tokens": {bos: {"id": bos, "ids": [bos_id], "tokens": [bos]}}}
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added_tokens,
            "normalizer": normalizer, "pre_tokenizer": pre, "post_processor": post_processor, "decoder": decoder,
            "model": model}


def config_files(name, tj):
    """tokenizer_config.json and generation_config.json as the models publish them."""
    ids = {t["content"]: t["id"] for t in tj["added_tokens"]}
    first = tj["added_tokens"][0]["content"]
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 2048,
              "chat_template": "{% for m in messages %}{{ m['content'] }}{% endfor %}",
              "added_tokens_decoder": {str(t["id"]): {k: t[k] for k in t if k != "id"} for t in tj["added_tokens"]}}
    generation = None
    if name == "llama3":
        config.update(bos_token="<|begin_of_text|>", eos_token="<|eot_id|>")
        generation = {"eos_token_id": [ids["<|end_of_text|>"], ids["<|eot_id|>"]]}
    elif name.startswith("llama2") or name.startswith("mistral"):
        config.update(bos_token="<s>", eos_token="</s>", unk_token="<unk>", add_bos_token=True, add_eos_token=False)
        generation = {"eos_token_id": ids["</s>"]}
    elif name == "qwen2":
        config.update(bos_token=None, eos_token={"content": "<|im_end|>", "__type": "AddedToken"})
    else:
        config.update(bos_token=first, eos_token=first)
    return config, generation


def write(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False)


def main():
    if sys.argv[1] == "run":
        corpus = json.load(open(sys.argv[2], encoding="utf-8"))
        strings = json.load(open(sys.argv[3], encoding="utf-8"))
        for name in sys.argv[5:]:
            out = os.path.join(sys.argv[4], name)
            os.makedirs(out, exist_ok=True)
            tj = make_tokenizer(name, corpus)
            write(os.path.join(out, "tokenizer.json"), tj)
            config, generation = config_files(name, tj)
            write(os.path.join(out, "tokenizer_config.json"), config)
            if generation:
                write(os.path.join(out, "generation_config.json"), generation)
            tok = Tokenizer(tj)
            write(os.path.join(out, "ids.json"), [tok.encode(s) for s in strings])
    elif sys.argv[1] == "encode":
        tok = Tokenizer(json.load(open(os.path.join(sys.argv[2], "tokenizer.json"), encoding="utf-8")))
        write(sys.argv[4], [tok.encode(s) for s in json.load(open(sys.argv[3], encoding="utf-8"))])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
