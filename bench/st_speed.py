"""sentence-transformers on PyTorch over the inputs `cargo bench -p ckeep-embed --bench throughput`
wrote to target/embed-bench/, with the same model directory, thread count and best-of-3 timing;
then the side-by-side table. Run by bench/embed_speed.sh."""
import json
import os
import sys
import time

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

MFLOP_PER_TOKEN = 21.5  # all-MiniLM-L6-v2: 2 x 10.6M weights per token, plus attention

threads = int(os.environ.get("BENCH_THREADS", "2"))
torch.set_num_threads(threads)
model_dir, inputs = sys.argv[1], sys.argv[2]
ours = json.loads(sys.argv[3])
model = SentenceTransformer(model_dir, device="cpu")
model.max_seq_length = 256

# The machine's practical matrix-product peak at this thread count (PyTorch's GEMM; the Rust
# benchmark measures faer's, and the larger of the two is used).
a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
for _ in range(3):
    a @ b
times = []
for _ in range(10):
    t = time.perf_counter()
    a @ b
    times.append(time.perf_counter() - t)
peak = 2 * 2048**3 / min(times) / 1e9

rows = []
for name in ("sentences", "passages"):
    texts = [json.loads(l) for l in open(os.path.join(inputs, f"{name}.jsonl"))]
    tokens = sum(min(len(model.tokenizer(t)["input_ids"]), 256) for t in texts)
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        vectors = model.encode(texts, batch_size=32, normalize_embeddings=True)
        best = min(best, time.perf_counter() - t)
    mine = np.array(json.load(open(os.path.join(inputs, f"{name}.vectors.json"))), dtype=np.float64)
    cos = (mine * vectors).sum(1) / np.linalg.norm(mine, axis=1) / np.linalg.norm(vectors, axis=1)
    torch_tps = tokens / best
    o = ours[name]
    rows.append((name, len(texts), tokens / len(texts), torch_tps, o["tokens_per_s"], cos.min()))

lat = []
for _ in range(50):
    t = time.perf_counter()
    model.encode(["What causes the seasons on Earth?"])
    lat.append((time.perf_counter() - t) * 1e3)
torch_lat = sorted(lat)[25]

def cpu_flags() -> set[str]:
    """The CPU's feature flags, from /proc/cpuinfo."""
    lines = open("/proc/cpuinfo").read().splitlines()
    return set(next((l.split(":", 1)[1].split() for l in lines if l.startswith("flags")), []))


def cpu_level() -> str:
    """The CPU's model and x86-64 feature level, from /proc/cpuinfo."""
    info = open("/proc/cpuinfo").read()
    model_name = next((l.split(":", 1)[1].strip() for l in info.splitlines() if l.startswith("model name")), "?")
    flags = cpu_flags()
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        level = "x86-64-v4 (AVX-512)"
    elif {"avx2", "fma", "bmi2"} <= flags:
        level = "x86-64-v3 (AVX2+FMA)"
    else:
        level = "below x86-64-v3 (no AVX2)"
    return f"{model_name}, {os.cpu_count()} logical CPUs, {level}"


def our_kernels() -> str:
    """What ckeep's two kinds of kernels run here: faer's f32 matrix products pick AVX-512 on
    any CPU that has it; our own (int8 products, element-wise passes) also, unless capped by
    CKEEP_SIMD=avx2."""
    flags = cpu_flags()
    faer = "AVX-512" if "avx512f" in flags else "AVX2+FMA"
    if os.environ.get("CKEEP_SIMD") == "avx2" or "avx512bw" not in flags:
        own = "AVX2 (capped by CKEEP_SIMD=avx2)" if "avx512bw" in flags else "AVX2"
    else:
        own = "AVX-512 VNNI" if "avx512_vnni" in flags else "AVX-512 BW"
    return f"ckeep f32 matrix products (faer) {faer}; ckeep int8 products and element-wise passes {own}"


peak = max(peak, ours["gemm_peak_gflops"])
print(f"all-MiniLM-L6-v2, {threads} threads; CPU: {cpu_level()}")
print(f"kernels: {our_kernels()}; PyTorch {torch.__version__} "
      f"{torch.backends.cpu.get_cpu_capability()}"
      + (" (capped by BENCH_ISA=avx2)" if os.environ.get("ATEN_CPU_CAPABILITY") else ""))
print(f"matrix-product peak measured here (best of PyTorch and faer, 2048^2): {peak:.0f} GFLOP/s\n")
print("| input | texts | tokens/text | PyTorch tokens/s | ckeep tokens/s | ckeep / PyTorch | ckeep GFLOP/s (share of peak) | min cosine |")
print("|---|---|---|---|---|---|---|---|")
for name, n, per, t_tps, o_tps, c in rows:
    gf = o_tps * MFLOP_PER_TOKEN / 1e3
    print(f"| {name} | {n} | {per:.0f} | {t_tps:,.0f} | {o_tps:,.0f} | **{o_tps / t_tps:.2f}x** | {gf:.0f} ({gf / peak:.0%}) | {c:.7f} |")
print(f"| single query latency (p50) | 1 | 9 | {torch_lat:.2f} ms | {ours['query_ms_p50']:.2f} ms | **{torch_lat / ours['query_ms_p50']:.2f}x** | | |")
torch_tps = {name: t_tps for name, _, _, t_tps, _, _ in rows}
print("\nckeep --precision int8 (int8 weights and activations; kernels as above), same inputs and run;")
print("its vectors compared with ckeep's own f32 vectors:\n")
print("| input | PyTorch tokens/s | ckeep int8 tokens/s | int8 / PyTorch | int8 / ckeep f32 | min cosine to f32 |")
print("|---|---|---|---|---|---|")
for name in ("sentences", "passages"):
    q = ours[f"{name}_int8"]
    print(f"| {name} | {torch_tps[name]:,.0f} | {q['tokens_per_s']:,.0f} | **{q['tokens_per_s'] / torch_tps[name]:.2f}x** "
          f"| {q['tokens_per_s'] / ours[name]['tokens_per_s']:.2f}x | {q['min_cosine_to_f32']:.4f} |")
print(f"| single query latency (p50) | {torch_lat:.2f} ms | {ours['query_ms_p50_int8']:.2f} ms | **{torch_lat / ours['query_ms_p50_int8']:.2f}x** "
      f"| {ours['query_ms_p50'] / ours['query_ms_p50_int8']:.2f}x | |")
