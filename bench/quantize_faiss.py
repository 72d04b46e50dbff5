"""FAISS's quantised flat indexes on the very vectors, queries and exact top-10 that the Rust
quantisation benchmark used (`bench/quantize.sh`), searched on one thread and on all:

- float32: `IndexFlatIP` (the exact scan);
- int8: `IndexScalarQuantizer` (8-bit, per-dimension ranges) inside `IndexRefineFlat`, which
  rescores the best `k_factor × 10` exactly — the same oversampling as ours;
- binary: `IndexBinaryFlat` over the sign bits (Hamming distance), its best `oversample × 10`
  rescored exactly with NumPy (FAISS has no float refinement over a binary index).

Usage: python bench/quantize_faiss.py DIR NAME DIM   (run by bench/quantize.sh in its venv)
"""

import sys
import time

import faiss
import numpy as np

K = 10
OVERSAMPLES = [1, 2, 3, 5, 10, 20]


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean([len(set(f) & set(t)) / K for f, t in zip(found, truth)]))


def timed(threads: int, search) -> tuple[float, np.ndarray]:
    faiss.omp_set_num_threads(threads)
    started = time.perf_counter()
    found = search()
    return time.perf_counter() - started, found


def main() -> None:
    folder, name, dim = sys.argv[1], sys.argv[2], int(sys.argv[3])
    base = np.fromfile(f"{folder}/{name}.base.f32", dtype="<f4").reshape(-1, dim)
    queries = np.fromfile(f"{folder}/{name}.queries.f32", dtype="<f4").reshape(-1, dim)
    truth = np.fromfile(f"{folder}/{name}.truth.u32", dtype="<u4").reshape(-1, K)
    threads = faiss.omp_get_max_threads()
    nq = len(queries)

    flat = faiss.IndexFlatIP(dim)
    flat.add(base)
    one, _ = timed(1, lambda: flat.search(queries, K)[1])
    every, _ = timed(threads, lambda: flat.search(queries, K)[1])
    print(f"faiss {faiss.__version__} {name}: {len(base)} vectors x {dim}; float32 scan: "
          f"{nq / one:.1f} q/s (1 thread), {nq / every:.1f} q/s ({threads})")
    exact1, exact_all = nq / one, nq / every

    sq = faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT)
    refine = faiss.IndexRefineFlat(sq)
    refine.train(base)
    refine.add(base)
    print(f"  int8 (SQ8 + IndexRefineFlat): {sq.sa_code_size()} bytes/vector in the scan")
    for oversample in OVERSAMPLES:
        refine.k_factor = oversample
        one, found = timed(1, lambda: refine.search(queries, K)[1])
        every, _ = timed(threads, lambda: refine.search(queries, K)[1])
        print(f"    oversample {oversample:>2}: recall@10 {recall(found, truth):.4f}; "
              f"{nq / one:.1f} q/s 1 thread ({nq / one / exact1:.2f}x float32), "
              f"{nq / every:.1f} q/s {threads} ({nq / every / exact_all:.2f}x)")

    bits = faiss.IndexBinaryFlat(dim)
    bits.add(np.packbits(base > 0, axis=1, bitorder="little"))
    qbits = np.packbits(queries > 0, axis=1, bitorder="little")
    print(f"  binary (IndexBinaryFlat, Hamming, NumPy rescoring): {dim // 8} bytes/vector")

    def binary_search(oversample: int) -> np.ndarray:
        _, cands = bits.search(qbits, oversample * K)
        scores = np.einsum("qd,qcd->qc", queries, base[cands])
        order = np.argsort(-scores, axis=1)[:, :K]
        return np.take_along_axis(cands, order, axis=1)

    for oversample in OVERSAMPLES:
        one, found = timed(1, lambda: binary_search(oversample))
        every, _ = timed(threads, lambda: binary_search(oversample))
        print(f"    oversample {oversample:>2}: recall@10 {recall(found, truth):.4f}; "
              f"{nq / one:.1f} q/s 1 thread ({nq / one / exact1:.2f}x float32), "
              f"{nq / every:.1f} q/s {threads} ({nq / every / exact_all:.2f}x)")


if __name__ == "__main__":
    main()
