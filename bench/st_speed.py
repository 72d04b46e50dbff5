"""sentence-transformers on PyTorch over the inputs `cargo bench -p ckeep-embed --bench throughput`
wrote to target/embed-bench/, with the same model directory, thread count and best-of-3 timing.
Prints one JSON object in the same shape as the Rust benchmark."""
import json
import os
import sys
import time

import torch
from sentence_transformers import SentenceTransformer

threads = int(os.environ.get("BENCH_THREADS", "2"))
torch.set_num_threads(threads)
model_dir, inputs = sys.argv[1], sys.argv[2]
model = SentenceTransformer(model_dir, device="cpu")
model.max_seq_length = 256
report = {}
for name in ("sentences", "passages"):
    texts = [json.loads(l) for l in open(os.path.join(inputs, f"{name}.jsonl"))]
    tokens = sum(min(len(model.tokenizer(t)["input_ids"]), 256) for t in texts)
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        model.encode(texts, batch_size=32, normalize_embeddings=True)
        best = min(best, time.perf_counter() - t)
    report[name] = {"texts": len(texts), "tokens": tokens, "seconds": best,
                    "texts_per_s": len(texts) / best, "tokens_per_s": tokens / best}
lat = []
for _ in range(50):
    t = time.perf_counter()
    model.encode(["What causes the seasons on Earth?"])
    lat.append((time.perf_counter() - t) * 1e3)
report["query_ms_p50"] = sorted(lat)[25]
print(json.dumps(report))
