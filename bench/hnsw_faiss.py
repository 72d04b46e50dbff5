"""FAISS's HNSW on the very vectors, queries and exact top-10 that the Rust HNSW benchmark dumped
(`BENCH_DUMP=DIR cargo bench -p ckeep-index --bench hnsw`), with the same parameters (M 16,
efConstruction 200, inner product on unit vectors), built on all cores and searched on one, so
the two implementations are compared on equal terms; then the same over 8-bit codes with twice
the candidates rescored exactly (IndexHNSWSQ inside IndexRefineFlat), beside ckeep's int8
codes walking its graph.

Usage: python bench/hnsw_faiss.py DIR NAME DIM   (run by bench/hnsw.sh in its own venv)
"""

import sys
import time

import faiss
import numpy as np

K = 10
PASSES = 5  # times the query set is searched at each ef, as in the Rust benchmark


def sweep(index, hnsw, queries, truth, efs) -> None:
    """Recall@10 and single-threaded queries/s of `index` at each beam width of `hnsw` (the
    graph inside it), widening until recall reaches 0.99."""
    faiss.omp_set_num_threads(1)
    for ef in efs:
        hnsw.efSearch = ef
        started = time.perf_counter()
        _, found = index.search(queries, K)
        for _ in range(PASSES - 1):
            index.search(queries, K)
        qps = PASSES * len(queries) / (time.perf_counter() - started)
        recall = np.mean([len(set(f) & set(t)) / K for f, t in zip(found, truth)])
        print(f"  ef {ef:>5}: recall@10 {recall:.4f}, {qps:.0f} queries/s")
        if recall >= 0.99:
            break


def main() -> None:
    folder, name, dim = sys.argv[1], sys.argv[2], int(sys.argv[3])
    base = np.fromfile(f"{folder}/{name}.base.f32", dtype="<f4").reshape(-1, dim)
    queries = np.fromfile(f"{folder}/{name}.queries.f32", dtype="<f4").reshape(-1, dim)
    truth = np.fromfile(f"{folder}/{name}.truth.u32", dtype="<u4").reshape(-1, K)
    threads = faiss.omp_get_max_threads()
    index = faiss.IndexHNSWFlat(dim, 16, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = 200
    started = time.perf_counter()
    index.add(base)
    build = time.perf_counter() - started
    print(f"faiss {faiss.__version__} {name}: {len(base)} vectors x {dim}; "
          f"build {build:.1f} s on {threads} threads")
    sweep(index, index.hnsw, queries, truth, [32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384])
    del index
    # int8: FAISS's HNSW over 8-bit scalar-quantised codes, twice the candidates rescored
    # exactly (IndexRefineFlat), as ckeep's int8 codes walking its graph are.
    sq = faiss.IndexHNSWSQ(dim, faiss.ScalarQuantizer.QT_8bit, 16, faiss.METRIC_INNER_PRODUCT)
    sq.hnsw.efConstruction = 200
    refine = faiss.IndexRefineFlat(sq)
    refine.k_factor = 2
    faiss.omp_set_num_threads(threads)
    started = time.perf_counter()
    refine.train(base)
    refine.add(base)
    build = time.perf_counter() - started
    print(f"  int8 (IndexHNSWSQ 8-bit + IndexRefineFlat, 2 x {K} rescored): build {build:.1f} s")
    sweep(refine, sq.hnsw, queries, truth, [32, 64, 128, 256, 512, 1024])


if __name__ == "__main__":
    main()
