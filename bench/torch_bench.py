#!/usr/bin/env python3
"""bench/torch_bench.py -- the fusions of `kiln bench gpu`, run through
PyTorch eager and torch.compile on the same GPU, for the ratios in
docs/backends.md ("Measured performance").

Each figure is the median of --reps timed runs (CUDA events) after warm-up,
the same protocol as `kiln bench gpu`.  Prints a table and writes JSON
(--json FILE).  Run next to the kiln binary on the GPU machine:

    python3 bench/torch_bench.py --json torch.json
    python3 bench/torch_bench.py --kiln-json kiln.json --json torch.json
        (adds kiln / torch ratios to the table when kiln's JSON is given)
"""
import argparse
import json
import statistics
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--json", help="write the rows as JSON to this file")
    ap.add_argument("--kiln-json", help="kiln bench gpu --json output to compare")
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    args = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        print(f"torch_bench: PyTorch not available: {e}", file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print("torch_bench: no CUDA device", file=sys.stderr)
        return 1
    dev = torch.device("cuda")
    q = args.quick

    def timed(fn, reps=args.reps):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        ms = []
        for _ in range(reps):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            ms.append(s.elapsed_time(e))
        return statistics.median(ms)

    rows = []

    def row(name, value, unit, note=""):
        rows.append({"name": name, "value": value, "unit": unit, "note": note})
        print(f"{name:34s} {value:12.3f} {unit:8s} {note}", flush=True)

    # ceiling: device-to-device copy of 1 GiB, bytes read + written
    nb = (64 << 20) if q else (1 << 30)
    src = torch.ones(nb, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    ms = timed(lambda: dst.copy_(src))
    ceiling = 2 * nb / (ms * 1e-3) / 1e9
    row("ceiling_d2d_copy", ceiling, "GB/s", "torch copy_")
    del src, dst

    def variants(name, fn, inputs, bytes_moved):
        modes = [("eager", fn)]
        if not args.no_compile:
            try:
                modes.append(("compile", torch.compile(fn)))
            except Exception as e:  # noqa: BLE001 - report and continue
                print(f"torch_bench: torch.compile unavailable: {e}", file=sys.stderr)
        for mode, f in modes:
            try:
                ms_ = timed(lambda: f(*inputs))
            except Exception as e:  # noqa: BLE001
                print(f"torch_bench: {name} {mode} failed: {e}", file=sys.stderr)
                continue
            gbs = bytes_moved / (ms_ * 1e-3) / 1e9
            row(f"{name}_{mode}", gbs, "GB/s", f"{ms_:.3f} ms, {gbs / ceiling:.3f} x ceiling")

    n = (1 << 22) if q else (1 << 28)
    a, b, c = (torch.randn(n, device=dev) for _ in range(3))
    variants("relu_fma_f32_2^28", lambda a, b, c: torch.relu(a * b + c), (a, b, c), 16.0 * n)
    del a, b, c
    m = 1024 if q else 8192
    x, bias = torch.randn(m, m, device=dev), torch.randn(m, device=dev)
    variants("bias_add_8192^2", lambda x, b: x + b, (x, bias), 4.0 * (2 * m * m + m))
    del x, bias
    s = 2048 if q else 16384
    x = torch.randn(s, s, device=dev)
    variants("sum_inner_16384^2", lambda x: x.sum(dim=1, keepdim=True), (x,), 4.0 * (s * s + s))
    variants("sum_outer_16384^2", lambda x: x.sum(dim=0, keepdim=True), (x,), 4.0 * (s * s + s))
    del x

    mm = 1024 if q else 4096
    A = torch.randn(mm, mm, device=dev).to(torch.bfloat16)
    B = torch.randn(mm, mm, device=dev).to(torch.bfloat16)
    flops = 2.0 * mm ** 3
    try:  # bf16 inputs, f32 accumulation in cuBLAS, result widened like kiln's f32
        ms_ = timed(lambda: torch.relu((A @ B).float()))
        row("matmul_bf16_eager", flops / (ms_ * 1e-3) / 1e12, "TFLOP/s", f"{ms_:.3f} ms")
    except Exception as e:  # noqa: BLE001
        print(f"torch_bench: matmul eager failed: {e}", file=sys.stderr)
    if not args.no_compile:
        try:
            f = torch.compile(lambda A, B: torch.relu((A @ B).float()))
            ms_ = timed(lambda: f(A, B))
            row("matmul_bf16_compile", flops / (ms_ * 1e-3) / 1e12, "TFLOP/s", f"{ms_:.3f} ms")
        except Exception as e:  # noqa: BLE001
            print(f"torch_bench: matmul compile failed: {e}", file=sys.stderr)

    if args.kiln_json:
        with open(args.kiln_json) as fh:
            kiln = {r["name"]: r for r in json.load(fh)["rows"]}
        print("\nkiln vs torch (ratio > 1: kiln faster)")
        for r in rows:
            base = r["name"].rsplit("_", 1)[0]
            k = kiln.get(base) or kiln.get(r["name"]) or kiln.get(base + "_default")
            if k and k["unit"] == r["unit"] and r["value"] > 0:
                ratio = k["value"] / r["value"]
                r["kiln_ratio"] = ratio
                print(f"{r['name']:34s} kiln {k['value']:10.3f} / torch {r['value']:10.3f} "
                      f"{r['unit']} = {ratio:6.3f}")
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "reps": args.reps, "quick": q, "rows": rows}
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1, sort_keys=True)
            fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
