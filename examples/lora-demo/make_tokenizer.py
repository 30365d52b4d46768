#!/usr/bin/env python3
"""Writes a byte-level tokenizer with ChatML's special tokens as a Hugging Face tokenizer directory.

The demo pretrains its own small model, so it needs a tokenizer that both Helios (tokenizer.json BPE) and
transformers (PreTrainedTokenizerFast) read, and that has the chat template's special tokens: every byte is
one token (ids 0-255, spelled as GPT-2's byte-level pre-tokenizer spells bytes, no merges), then
<|im_start|> 256, <|im_end|> 257, <|endoftext|> 258. Digits are single tokens, so an answer's ids are its
digits. tokenizer_config.json names the ChatML template, EOS <|im_end|> and pad <|endoftext|>.

  make_tokenizer.py OUT_DIR
"""
import argparse
import json
import os

SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>"]
CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
          "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
          "{% endif %}")


def byte_spelling():
    """GPT-2's byte-level alphabet: printable Latin-1 bytes stand for themselves, the other bytes take the
    code points from U+0100 on, in byte order."""
    kept = set(range(ord("!"), ord("~") + 1)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    spelled, extra = {}, 0
    for b in range(256):
        if b in kept:
            spelled[b] = chr(b)
        else:
            spelled[b] = chr(256 + extra)
            extra += 1
    return spelled


def tokenizer_json():
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    vocab = {s: b for b, s in byte_spelling().items()}
    added = [{"id": 256 + i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, s in enumerate(SPECIALS)]
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
            "pre_tokenizer": byte_level, "post_processor": None, "decoder": byte_level,
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                      "vocab": vocab, "merges": []}}


def tokenizer_config():
    decoder = {str(256 + i): {"content": s, "single_word": False, "lstrip": False, "rstrip": False,
                              "normalized": False, "special": True} for i, s in enumerate(SPECIALS)}
    return {"tokenizer_class": "PreTrainedTokenizerFast", "chat_template": CHATML, "eos_token": "<|im_end|>",
            "pad_token": "<|endoftext|>", "bos_token": None, "added_tokens_decoder": decoder,
            "model_max_length": 4096, "clean_up_tokenization_spaces": False}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="the directory to write (created; files in it are replaced)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, doc in (("tokenizer.json", tokenizer_json()), ("tokenizer_config.json", tokenizer_config())):
        with open(os.path.join(args.out, name), "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False, indent=1)
    print(f"{args.out}: byte-level tokenizer, vocabulary {256 + len(SPECIALS)}, ChatML template")


if __name__ == "__main__":
    main()
