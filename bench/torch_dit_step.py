#!/usr/bin/env python3
"""The torch reference for the CUDA backend's speed (issue 21): one DiT step as engine/cpu/dit.cpp and
engine/cuda/cuda_dit.cpp compute it, written in plain torch, bf16, random weights, with
F.scaled_dot_product_attention; timed like bench/engine_bench_cuda.cpp (CUDA events, the median of
--reps after a warm-up), eagerly and, unless --no-compile, through torch.compile (one block compiled,
run for every block). Only scripts/device-check runs it, on the GPU machine, whose python3 has torch;
the product never needs Python.

The step, for N image rows attending to the L text rows' keys and values (made once per image):
  per block: h = LN(x) * (1 + scale1); q, k, v = h Wq, h Wk, h Wv; RMS-norm q and k per head; RoPE
  (interleaved pairs); attention over [text K/V; own K/V]; x += tanh-gate1 * (attn Wo);
  h = LN(x) * (1 + scale2); x += tanh-gate2 * ((silu(h Wgate) * (h Wproj)) Wout)
  then img_in before the blocks and LN + proj_out after them.

usage: torch_dit_step.py [--dims real|tiny] [--image-tokens N] [--text-tokens L] [--reps R]
                         [--no-compile] [--device cuda|cpu] [--json FILE]
"""
import argparse
import json
import sys
import time

import torch
import torch.nn.functional as F

DIMS = {  # layers, heads, head_dim, mlp_ratio: the real model's, and a tiny one for a smoke run
    "real": (32, 32, 128, 3),
    "tiny": (2, 4, 32, 3),
}


def attention(q, k, v):
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v)
    # torch < 2.0 (a smoke run only; the JSON says so): the same softmax attention, materialised.
    scores = (q.float() @ k.float().transpose(-1, -2)) / q.shape[-1] ** 0.5
    return (scores.softmax(-1) @ v.float()).to(q.dtype)


def rms_norm(x, weight, eps):
    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, (x.shape[-1],), weight, eps)
    return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * weight


def rope(x, cos, sin):
    """Interleaved pairs (x0, x1) -> (x0 c - x1 s, x0 s + x1 c); x [1, H, N, d], cos/sin [N, d/2]."""
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)


def block(x, w, text_k, text_v, cos, sin, mod, heads, eps):
    n, dim = x.shape
    d = dim // heads
    scale1, gate1, scale2, gate2 = mod
    h = F.layer_norm(x, (dim,), eps=eps) * (1 + scale1)
    q = (h @ w["q"].t()).view(1, n, heads, d).transpose(1, 2)
    k = (h @ w["k"].t()).view(1, n, heads, d).transpose(1, 2)
    v = (h @ w["v"].t()).view(1, n, heads, d).transpose(1, 2)
    q = rope(rms_norm(q, w["norm_q"], eps), cos, sin)
    k = rope(rms_norm(k, w["norm_k"], eps), cos, sin)
    a = attention(q, torch.cat((text_k, k), dim=2), torch.cat((text_v, v), dim=2))
    x = x + gate1 * (a.transpose(1, 2).reshape(n, dim) @ w["o"].t())
    h = F.layer_norm(x, (dim,), eps=eps) * (1 + scale2)
    m = F.silu(h @ w["gate"].t()) * (h @ w["proj"].t())
    return x + gate2 * (m @ w["out"].t())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dims", choices=DIMS, default="real")
    p.add_argument("--image-tokens", type=int, default=4096)  # 1024 x 1024
    p.add_argument("--text-tokens", type=int, default=200)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--no-compile", action="store_true")
    p.add_argument("--device", default="cuda")
    p.add_argument("--json")
    args = p.parse_args()
    layers, heads, d, ratio = DIMS[args.dims]
    dim, mlp, n, l = heads * d, heads * d * ratio, args.image_tokens, args.text_tokens
    dev, bf = torch.device(args.device), torch.bfloat16
    if dev.type == "cuda" and not torch.cuda.is_available():
        print("torch_dit_step: torch sees no CUDA device", file=sys.stderr)
        return 2
    g = torch.Generator(device=dev).manual_seed(7)

    def linear(out, inp):
        return ((torch.rand(out, inp, generator=g, device=dev) * 2 - 1) / inp ** 0.5).to(bf)

    def norm(size):
        return (1 + 0.2 * (torch.rand(size, generator=g, device=dev) - 0.5)).to(bf)

    blocks = [{"q": linear(dim, dim), "k": linear(dim, dim), "v": linear(dim, dim), "o": linear(dim, dim),
               "gate": linear(mlp, dim), "proj": linear(mlp, dim), "out": linear(dim, mlp),
               "norm_q": norm(d), "norm_k": norm(d)} for _ in range(layers)]
    img_in, proj_out, out_norm = linear(dim, 64), linear(64, dim), norm(dim)
    text_k = [torch.randn(1, heads, l, d, generator=g, device=dev).to(bf) for _ in range(layers)]
    text_v = [torch.randn(1, heads, l, d, generator=g, device=dev).to(bf) for _ in range(layers)]
    mods = [tuple((0.1 * torch.randn(dim, generator=g, device=dev)).to(bf) for _ in range(4)) for _ in range(layers)]
    mods = [(s1, torch.tanh(g1), s2, torch.tanh(g2)) for s1, g1, s2, g2 in mods]
    angle = torch.rand(n, d // 2, generator=g, device=dev) * 6.283
    cos, sin = angle.cos().to(bf), angle.sin().to(bf)
    tokens = torch.randn(n, 64, generator=g, device=dev).to(bf)

    def step(run_block):
        x = tokens @ img_in.t()
        for i in range(layers):
            x = run_block(x, blocks[i], text_k[i], text_v[i], cos, sin, mods[i], heads, 1e-6)
        return (F.layer_norm(x, (dim,), eps=1e-6) * out_norm) @ proj_out.t()

    def timed(run_block):
        with torch.no_grad():
            step(run_block)  # warm-up (and, compiled, the compile)
            if dev.type != "cuda":
                times = []
                for _ in range(args.reps):
                    t = time.perf_counter()
                    step(run_block)
                    times.append(time.perf_counter() - t)
            else:
                torch.cuda.synchronize()
                times = []
                for _ in range(args.reps):
                    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record()
                    step(run_block)
                    stop.record()
                    stop.synchronize()
                    times.append(start.elapsed_time(stop) / 1e3)
        times.sort()
        return times[len(times) // 2]

    flops = layers * (2.0 * n * (4 * dim * dim + 3 * dim * mlp) + 4.0 * n * (l + n) * dim) + 2.0 * n * 128 * dim
    result = {"torch": torch.__version__, "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
              "dims": args.dims, "image_tokens": n, "text_tokens": l, "reps": args.reps, "step_flops": flops,
              "sdpa": hasattr(F, "scaled_dot_product_attention"),
              "reference": hasattr(F, "scaled_dot_product_attention") and dev.type == "cuda"}
    result["eager_step_s"] = timed(block)
    print(f"torch {torch.__version__} eager DiT step (N {n}, L {l}, {layers} blocks): "
          f"{result['eager_step_s'] * 1e3:.2f} ms, {flops / result['eager_step_s'] / 1e12:.1f} TFLOP/s", flush=True)
    if not args.no_compile and hasattr(torch, "compile"):
        t = time.perf_counter()
        result["compiled_step_s"] = timed(torch.compile(block))
        result["compile_s"] = time.perf_counter() - t
        print(f"torch.compile DiT step: {result['compiled_step_s'] * 1e3:.2f} ms, "
              f"{flops / result['compiled_step_s'] / 1e12:.1f} TFLOP/s (compiled in {result['compile_s']:.0f} s)", flush=True)
    elif not args.no_compile:
        print("torch_dit_step: this torch has no torch.compile (eager only)")
    if dev.type == "cuda":
        result["peak_device_bytes"] = torch.cuda.max_memory_allocated(dev)
    if not result["reference"]:
        print("torch_dit_step: not a reference run (no CUDA, or a torch without scaled_dot_product_attention)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
