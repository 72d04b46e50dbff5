"""FAISS's HNSW on the very vectors, queries and exact top-10 that the Rust HNSW benchmark dumped
(`BENCH_DUMP=DIR cargo bench -p ckeep-index --bench hnsw`), with the same parameters (M 16,
efConstruction 200, inner product on unit vectors), built on all cores and searched on one, so
the two implementations are compared on equal terms.

Usage: python bench/hnsw_faiss.py DIR NAME DIM   (run by bench/hnsw.sh in its own venv)
"""

import sys
import time

import faiss
import numpy as np

K = 10
PASSES = 5  # times the query set is searched at each ef, as in the Rust benchmark


def main() -> None:
    folder, name, dim = sys.argv[1], sys.argv[2], int(sys.argv[3])
    base = np.fromfile(f"{folder}/{name}.base.f32", dtype="<f4").reshape(-1, dim)
    queries = np.fromfile(f"{folder}/{name}.queries.f32", dtype="<f4").reshape(-1, dim)
    truth = np.fromfile(f"{folder}/{name}.truth.u32", dtype="<u4").reshape(-1, K)
    index = faiss.IndexHNSWFlat(dim, 16, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = 200
    started = time.perf_counter()
    index.add(base)
    build = time.perf_counter() - started
    print(f"faiss {faiss.__version__} {name}: {len(base)} vectors x {dim}; "
          f"build {build:.1f} s on {faiss.omp_get_max_threads()} threads")
    faiss.omp_set_num_threads(1)
    for ef in [32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]:
        index.hnsw.efSearch = ef
        started = time.perf_counter()
        _, found = index.search(queries, K)
        for _ in range(PASSES - 1):
            index.search(queries, K)
        qps = PASSES * len(queries) / (time.perf_counter() - started)
        recall = np.mean([len(set(f) & set(t)) / K for f, t in zip(found, truth)])
        print(f"  ef {ef:>5}: recall@10 {recall:.4f}, {qps:.0f} queries/s")
        if recall >= 0.99:
            break


if __name__ == "__main__":
    main()
