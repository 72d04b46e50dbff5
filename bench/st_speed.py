"""The other runtimes over the inputs `cargo bench -p ckeep-embed --bench throughput` wrote to
target/embed-bench/<model>/, with the same weights, prompts, token limit, thread count and
best-of-3 timing, then the side-by-side table. Run by bench/embed_speed.sh.

- sentence-transformers on PyTorch (`encode`, batches of 32 sorted by length);
- ONNX Runtime f32, from the same weights exported by torch.onnx (what fastembed and Optimum
  run), fed batches of 32 sorted by length, padded to the longest, mean-pooled;
- ONNX Runtime int8: that model through `onnxruntime.quantization.quantize_dynamic` with its
  defaults (int8 weights, activations quantised per batch at run time), as users make one.

Usage: st_speed.py MODEL_DIR INPUTS_DIR OURS_JSON   (MODEL_DIR: a sentence-transformers folder)
"""
import json
import os
import sys
import time

import numpy as np
import onnxruntime as ort
import torch
from onnxruntime.quantization import quantize_dynamic
from sentence_transformers import SentenceTransformer

threads = int(os.environ.get("BENCH_THREADS", "2"))
torch.set_num_threads(threads)
model_dir, inputs = sys.argv[1], sys.argv[2]
ours = json.loads(sys.argv[3])
name = ours["model"]
model = SentenceTransformer(model_dir, device="cpu")
if name == "all-MiniLM-L6-v2":
    model.max_seq_length = 256
max_len = model.max_seq_length
# ckeep's input kinds as the folder's prompt names (e5: `query: `, `passage: `); none where the
# folder has none.
prompts = model.prompts or {}
prompt_of = {kind: next((n for n in names if n in prompts), None)
             for kind, names in (("Query", ("query",)), ("Document", ("passage", "document")))}
SETS = ("sentences", "passages")
kinds = ours["kinds"]


def prompt(kind: str) -> str:
    return prompts.get(prompt_of.get(kind) or "", "")


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
        level = "x86-64-v4 (AVX-512" + (" VNNI)" if "avx512_vnni" in flags else ")")
    elif {"avx2", "fma", "bmi2"} <= flags:
        level = "x86-64-v3 (AVX2+FMA, no AVX-512)"
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


def gemm_peak() -> float:
    """PyTorch's best 2048² f32 matrix product at this thread count, GFLOP/s."""
    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    for _ in range(3):
        a @ b
    times = []
    for _ in range(10):
        t = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t)
    return 2 * 2048**3 / min(times) / 1e9


def best_of_3(encode, texts):
    best, vectors = float("inf"), None
    for _ in range(3):
        t = time.perf_counter()
        vectors = encode(texts)
        best = min(best, time.perf_counter() - t)
    return best, np.asarray(vectors, dtype=np.float64)


def p50_ms(encode, query: str) -> float:
    lat = []
    for _ in range(50):
        t = time.perf_counter()
        encode([query])
        lat.append((time.perf_counter() - t) * 1e3)
    return sorted(lat)[25]


def onnx_models() -> tuple[str, str, str]:
    """The f32 export and its dynamic int8 quantisations (full 8-bit weights, ONNX Runtime's
    default, and 7-bit `reduce_range`, its advice for CPUs without VNNI), made once per model."""
    out = os.path.join("bench/results/onnx", name)
    f32, int8 = os.path.join(out, "model.onnx"), os.path.join(out, "model.int8.onnx")
    int7 = os.path.join(out, "model.int8-reduce-range.onnx")
    if not os.path.exists(int7):
        os.makedirs(out, exist_ok=True)
        bert = model[0].auto_model.eval()

        class Hidden(torch.nn.Module):
            """The encoder's last hidden states, inputs by position, as the exporter wants."""
            def __init__(self):
                super().__init__()
                self.bert = bert

            def forward(self, input_ids, attention_mask, token_type_ids):
                return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                            token_type_ids=token_type_ids).last_hidden_state

        dummy = dict(model.tokenizer(["a b c", "d"], padding=True, return_tensors="pt"))
        dummy.setdefault("token_type_ids", torch.zeros_like(dummy["input_ids"]))
        names = ["input_ids", "attention_mask", "token_type_ids"]
        axes = {n: {0: "batch", 1: "tokens"} for n in names + ["last_hidden_state"]}
        with torch.no_grad():
            torch.onnx.export(Hidden(), tuple(dummy[n] for n in names), f32, input_names=names,
                              output_names=["last_hidden_state"], dynamic_axes=axes, opset_version=17,
                              dynamo=False)
        quantize_dynamic(f32, int8)
        quantize_dynamic(f32, int7, reduce_range=True)
    return f32, int8, int7


def onnx_encoder(path: str, kind: str):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    wanted = {i.name for i in session.get_inputs()}
    pre = prompt(kind)

    def encode(texts):
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = [None] * len(texts)
        for start in range(0, len(order), 32):
            batch = order[start:start + 32]
            enc = model.tokenizer([pre + texts[i] for i in batch], padding=True, truncation=True,
                                  max_length=max_len, return_tensors="np")
            feed = {k: v.astype(np.int64) for k, v in enc.items() if k in wanted}
            if "token_type_ids" in wanted and "token_type_ids" not in feed:
                feed["token_type_ids"] = np.zeros_like(feed["input_ids"])
            hidden = session.run(None, feed)[0]
            mask = enc["attention_mask"][..., None].astype(np.float32)
            pooled = (hidden * mask).sum(1) / mask.sum(1)
            pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
            for i, v in zip(batch, pooled):
                out[i] = v
        return np.stack(out)
    return encode


def torch_encoder(kind: str):
    prompt_name = prompt_of.get(kind)
    return lambda texts: model.encode(texts, batch_size=32, normalize_embeddings=True, prompt_name=prompt_name)


def min_cosine(a, b) -> float:
    return float(((a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)).min())


config = model[0].auto_model.config
layers, h, inter = config.num_hidden_layers, config.hidden_size, config.intermediate_size
texts = {s: [json.loads(l) for l in open(os.path.join(inputs, f"{s}.jsonl"), encoding="utf-8")] for s in SETS}
lengths = {s: [min(len(model.tokenizer(prompt(kinds[s]) + t)["input_ids"]), max_len) for t in texts[s]] for s in SETS}
tokens = {s: sum(lengths[s]) for s in SETS}
# FLOPs per token: the linear layers, and attention's two products over the text's length.
mflop = {s: (2 * layers * (4 * h * h + 2 * h * inter)
             + 4 * layers * h * sum(n * n for n in lengths[s]) / tokens[s]) / 1e6 for s in SETS}
f32_path, int8_path, int7_path = onnx_models()
mine = {s: np.array(json.load(open(os.path.join(inputs, f"{s}.vectors.json"))), dtype=np.float64) for s in SETS}
query = ours["query"]
runtimes = {}
for runtime, make in (("PyTorch f32", torch_encoder),
                      ("ONNX Runtime f32", lambda k: onnx_encoder(f32_path, k)),
                      ("ONNX Runtime int8", lambda k: onnx_encoder(int8_path, k)),
                      ("ONNX Runtime int8, reduce_range", lambda k: onnx_encoder(int7_path, k))):
    row = {}
    for s in SETS:
        seconds, vectors = best_of_3(make(kinds[s]), texts[s])
        row[s] = (tokens[s] / seconds, min_cosine(vectors, mine[s]))
    row["query"] = p50_ms(make("Query" if "Query" in kinds.values() else "Document"), query)
    runtimes[runtime] = row
for label, suffix in (("ckeep f32", ""), ("ckeep int8", "_int8")):
    row = {s: (ours[s + suffix]["tokens_per_s"], ours[s + suffix].get("min_cosine_to_f32", 1.0)) for s in SETS}
    row["query"] = ours["query_ms_p50" + suffix]
    runtimes[label] = row

peak = max(gemm_peak(), ours["gemm_peak_gflops"])
print(f"{name}, {threads} threads; CPU: {cpu_level()}")
print(f"kernels: {our_kernels()}; PyTorch {torch.__version__} {torch.backends.cpu.get_cpu_capability()}"
      + (" (capped by BENCH_ISA=avx2)" if os.environ.get("ATEN_CPU_CAPABILITY") else "")
      + f"; ONNX Runtime {ort.__version__}")
print(f"matrix-product peak measured here (best of PyTorch and faer, 2048^2): {peak:.0f} GFLOP/s")
print(f"inputs: {len(texts['sentences'])} short texts ({kinds['sentences'].lower()}, {tokens['sentences'] / len(texts['sentences']):.0f} tokens each), "
      f"{len(texts['passages'])} passages ({tokens['passages'] / len(texts['passages']):.0f} tokens each); one query {query!r}\n")
print("| runtime | short tokens/s | ÷ PyTorch | passages tokens/s | ÷ PyTorch | share of f32 peak (short, passages) | query p50 ms | least cosine to ckeep f32 |")
print("|---|---|---|---|---|---|---|---|")
base = runtimes["PyTorch f32"]
for runtime, row in runtimes.items():
    (st, sc), (pt, pc) = row["sentences"], row["passages"]
    share = ", ".join(f"{tps * mflop[s] / 1e3 / peak:.0%}" for s, tps in (("sentences", st), ("passages", pt)))
    print(f"| {runtime} | {st:,.0f} | **{st / base['sentences'][0]:.2f}x** | {pt:,.0f} | **{pt / base['passages'][0]:.2f}x** "
          f"| {share} | {row['query']:.2f} | {min(sc, pc):.4f} |")
f32, int8 = runtimes["ckeep f32"], runtimes["ckeep int8"]
print(f"\nckeep int8 ÷ ckeep f32: short {int8['sentences'][0] / f32['sentences'][0]:.2f}x, "
      f"passages {int8['passages'][0] / f32['passages'][0]:.2f}x, query {f32['query'] / int8['query']:.2f}x")
