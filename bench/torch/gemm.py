#!/usr/bin/env python3
"""cuBLAS (through torch) GEMM timings for the same shapes and layouts helios-bench gemm runs.

Prints one JSON object: {"torch": version, "device": name, "results": [{shape, layout, dtype, out, ms, tflops}]}.
f32 runs with TF32 off; f16 inputs run with f16 output (torch.matmul) and f32 output (mm with out_dtype,
where this torch has it). Timing ("ms"): back-to-back calls captured in a CUDA graph and replayed, CUDA
events between replays queued right behind 300 ms of warm-up replays, median of the repeats divided by the
calls per replay: the GPU's time per call at sustained clocks without the CPU's launch overhead, as
helios-bench times back-to-back dispatches. "ms_eager": CUDA events
around one eager call (includes PyTorch's dispatch gap on small shapes; the earlier figure).
"""
import argparse
import json
import statistics
import time

import torch


def parse_shapes(text):
    shapes = []
    for item in text.split(","):
        m, n, k = (int(x) for x in item.lower().split("x"))
        shapes.append((m, n, k))
    return shapes


def gemm_entries(text, layouts):
    """(m, n, k, layout) for each "MxNxK" entry under every layout of the comma list `layouts`, or for each
    "MxNxK:layout" entry under its own layout only (a training step's GEMMs, each in the layout it runs)."""
    out = []
    for item in filter(None, text.split(",")):
        shape, _, own = item.partition(":")
        (m, n, k), = parse_shapes(shape)
        out += [(m, n, k, layout) for layout in ([own] if own else layouts.split(","))]
    return out


def operands(m, n, k, layout, dtype):
    # NN: A MxK, B KxN. NT: B stored NxK. TN: A stored KxM. Views keep the stored layout.
    a = torch.randn(k, m, device="cuda", dtype=dtype).t() if layout[0] == "t" else torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(n, k, device="cuda", dtype=dtype).t() if layout[1] == "t" else torch.randn(k, n, device="cuda", dtype=dtype)
    return a, b


def median_event_ms(run, repeat, per=1):
    # Median over `repeat` of the CUDA-event time around run(), divided by `per`.
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / per)
    return statistics.median(times)


def time_ms(fn, warmup, repeat):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    return median_event_ms(fn, repeat)


def time_graph_ms(fn, warmup, repeat, calls, busy_ms=300.0):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the capture stream, as graph capture requires
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    # Replays keep the GPU busy for busy_ms first: under work that leaves it idle half the time the H100 runs
    # at 600-1400 MHz (nvidia-smi), and a synchronisation after every replay does. The timed replays follow
    # the last warm-up batch with no synchronisation between them, events between replays.
    batch, start = 1, time.perf_counter()
    while (time.perf_counter() - start) * 1e3 < busy_ms:
        for _ in range(batch):
            graph.replay()
        torch.cuda.synchronize()
        batch = min(batch * 2, 4096)
    for _ in range(max(batch // 2, 1)):
        graph.replay()
    events = [torch.cuda.Event(enable_timing=True) for _ in range(repeat + 1)]
    events[0].record()
    for i in range(repeat):
        graph.replay()
        events[i + 1].record()
    events[-1].synchronize()
    ms = statistics.median(events[i].elapsed_time(events[i + 1]) / calls for i in range(repeat))
    del graph
    return ms


def time_both(fn, warmup, repeat, flops, busy_ms):
    """(graph ms, eager ms, calls per replay): many calls per replay where launch gaps matter, a few for big
    products (their outputs stay allocated in the graph's pool); eager timing stands in where capture fails."""
    eager = time_ms(fn, warmup, repeat)
    calls = 20 if flops < 1e11 else 3
    try:
        return time_graph_ms(fn, warmup, repeat, calls, busy_ms), eager, calls
    except Exception:
        return eager, eager, 0


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--shapes", default="4096x4096x4096", help="comma list of MxNxK or MxNxK:layout")
    p.add_argument("--layouts", default="nn")
    p.add_argument("--dtypes", default="f32", help="comma list of f32, f16 (f16 = f16 inputs)")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--busy-ms", type=float, default=300.0, help="busy replays before the timed ones")
    p.add_argument("--outs", default="f16,f32", help="output types to time for f16 inputs")
    args = p.parse_args()

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    results = []
    for dtype_name in args.dtypes.split(","):
        dtype = torch.float32 if dtype_name == "f32" else torch.float16
        for (m, n, k, layout) in gemm_entries(args.shapes, args.layouts):
            a, b = operands(m, n, k, layout, dtype)
            flops = 2.0 * m * n * k
            outs = [("f32", lambda: torch.matmul(a, b))] if dtype_name == "f32" else [("f16", lambda: torch.matmul(a, b))]
            if dtype_name == "f16":
                try:
                    torch.mm(a, b, out_dtype=torch.float32)
                    outs.append(("f32", lambda: torch.mm(a, b, out_dtype=torch.float32)))
                except (TypeError, RuntimeError):
                    pass
            for out_name, fn in outs:
                if dtype_name == "f16" and out_name not in args.outs.split(","):
                    continue
                ms, eager, calls = time_both(fn, args.warmup, args.repeat, flops, args.busy_ms)
                results.append({"M": m, "N": n, "K": k, "layout": layout, "dtype": dtype_name, "out": out_name,
                                "ms": ms, "ms_eager": eager, "graph_calls": calls,
                                "tflops": flops / (ms * 1e-3) / 1e12})
            del a, b
            torch.cuda.empty_cache()
    print(json.dumps({"torch": torch.__version__, "device": torch.cuda.get_device_name(),
                      "cuda": torch.version.cuda, "results": results}, indent=1))


if __name__ == "__main__":
    main()
