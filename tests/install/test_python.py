"""The installed Python module against NumPy float64: matmul (float32, float16, batched), attention (causal,
grouped-query) and a few training steps whose loss must stay finite and fall.
Usage: PYTHONPATH=<prefix>/lib/python3.X/site-packages python3 test_python.py WORKDIR"""
import math
import os
import sys

import numpy as np

import helios

rng = np.random.default_rng()
failures = []


def check(ok, what):
    print(("ok  " if ok else "FAIL") + ": " + what)
    if not ok:
        failures.append(what)


def rel_error(got, ref):
    return float(np.max(np.abs(got.astype(np.float64) - ref)) / max(np.max(np.abs(ref)), 1e-30))


def test_devices():
    devices = helios.devices()
    check(len(devices) > 0 and all(d["name"] for d in devices), f"devices(): {[d['name'] for d in devices]}")
    check(helios.device()["name"] in [d["name"] for d in devices], "device() is one of devices()")


def test_matmul():
    a = rng.standard_normal((67, 83), dtype=np.float32)
    b = rng.standard_normal((83, 45), dtype=np.float32)
    c = helios.matmul(a, b)
    check(c.dtype == np.float32 and c.shape == (67, 45), "matmul f32 shape and dtype")
    check(rel_error(c, a.astype(np.float64) @ b.astype(np.float64)) < 1e-5, "matmul f32 vs float64")

    bt = np.ascontiguousarray(b.T)
    check(rel_error(helios.matmul(a, bt, transpose_b=True), a.astype(np.float64) @ b) < 1e-5, "matmul B^T")

    batch_a = rng.standard_normal((3, 17, 29), dtype=np.float32)
    batched = helios.matmul(batch_a, b[:29, :31].copy())
    check(batched.shape == (3, 17, 31) and rel_error(batched, batch_a.astype(np.float64) @ b[:29, :31]) < 1e-5,
          "matmul batched, B shared")

    ah, bh = a.astype(np.float16), b.astype(np.float16)
    ch = helios.matmul(ah, bh)
    # f16 inputs, f32 accumulation, the result rounded to f16 (relative step 2^-11).
    check(ch.dtype == np.float16 and rel_error(ch, ah.astype(np.float64) @ bh.astype(np.float64)) < 2e-3,
          "matmul f16 vs float64")

    try:
        helios.matmul(a, a)
        check(False, "matmul refuses mismatched shapes")
    except ValueError:
        check(True, "matmul refuses mismatched shapes")
    try:
        helios.matmul(a.astype(np.int32), b)
        check(False, "matmul refuses int32")
    except TypeError:
        check(True, "matmul refuses int32")


def attention_reference(q, k, v, causal, scale):
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    groups = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, groups, axis=1), np.repeat(v, groups, axis=1)
    s = scale * q @ np.swapaxes(k, -1, -2)
    tq, tk = q.shape[2], k.shape[2]
    if causal:
        i = np.arange(tq)[:, None]
        j = np.arange(tk)[None, :]
        s = np.where(j <= i + tk - tq, s, -np.inf)
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    return (p / p.sum(axis=-1, keepdims=True)) @ v


def test_attention():
    q = rng.standard_normal((2, 4, 37, 16), dtype=np.float32)
    k = rng.standard_normal((2, 2, 45, 16), dtype=np.float32)
    v = rng.standard_normal((2, 2, 45, 16), dtype=np.float32)
    for causal in (False, True):
        o = helios.attention(q, k, v, causal=causal)
        ref = attention_reference(q, k, v, causal, 1 / math.sqrt(16))
        check(o.shape == q.shape and rel_error(o, ref) < 1e-5,
              f"attention causal={causal} (grouped-query, Tq != Tk) vs float64")
    oh = helios.attention(q.astype(np.float16), k.astype(np.float16), v.astype(np.float16), scale=0.3)
    ref = attention_reference(q.astype(np.float16), k.astype(np.float16), v.astype(np.float16), False, 0.3)
    check(oh.dtype == np.float16 and rel_error(oh, ref) < 2e-3, "attention f16 vs float64")


def test_train(work):
    text = os.path.join(work, "python-text.txt")
    with open(text, "w") as f:
        f.write("the quick brown fox jumps over the lazy dog. " * 200)
    config = {"data": text, "steps": 12, "batch": 4, "seq_len": 32, "warmup": 2, "lr": 0.003,
              "eval_every": 0, "time_every": 0, "gpt": {"layers": 1, "dim": 32, "heads": 2, "context": 32}}
    result = helios.train(dict(config))
    loss = result["loss"]
    print(f"trained {result['model']}: loss {loss[0]:.3f} -> {loss[-1]:.3f}")
    check(len(loss) == 12 and all(math.isfinite(x) for x in loss), "train: 12 finite losses")
    check(loss[-1] < loss[0] - 0.5 and np.mean(loss[-4:]) < np.mean(loss[:4]), "train: the loss falls")
    check(result["config"]["steps"] == 12 and result["parameters"] > 0 and result["data"] == text,
          "train: config, parameters and data")


test_devices()
test_matmul()
test_attention()
test_train(sys.argv[1] if len(sys.argv) > 1 else ".")
print(f"{len(failures)} failed" if failures else "all passed")
sys.exit(1 if failures else 0)
