"""sentence-transformers on PyTorch embedding the texts bench/e5_speed.sh wrote, with the same
multilingual-e5-small weights (bench/e5_hf.py), prompts and thread count as ckeep: best of three
timed passes of `encode` alone (model loading not counted). Prints one JSON object per input set
with seconds, texts, tokens (the model's tokenizer, prompt and special tokens included) and the
worst cosine to ckeep's vectors of the same texts."""
import json
import os
import sys
import time

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

threads = int(os.environ.get("BENCH_THREADS", "2"))
torch.set_num_threads(threads)
model_dir, work = sys.argv[1], sys.argv[2]
model = SentenceTransformer(model_dir, device="cpu")
for name, prompt in (("passages", "passage"), ("questions", "query")):
    texts = open(os.path.join(work, f"{name}.txt"), encoding="utf-8").read().splitlines()
    tokens = sum(len(model.tokenizer(model.prompts[prompt] + t, truncation=True, max_length=512)["input_ids"])
                 for t in texts)
    best, vectors = None, None
    for _ in range(3):
        started = time.perf_counter()
        vectors = model.encode(texts, prompt_name=prompt, batch_size=32, normalize_embeddings=True)
        elapsed = time.perf_counter() - started
        best = elapsed if best is None else min(best, elapsed)
    ours = np.array(json.load(open(os.path.join(work, f"{name}.ckeep.json")))["vectors"], dtype=np.float32)
    worst = float(np.min(np.sum(ours * vectors, axis=1) / np.linalg.norm(ours, axis=1)))
    print(json.dumps({"set": name, "texts": len(texts), "tokens": tokens, "seconds": round(best, 3),
                      "worst_cosine_to_ckeep": round(worst, 6)}))
