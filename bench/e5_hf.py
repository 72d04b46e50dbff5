"""Writes multilingual-e5-small as a sentence-transformers directory from the packed E5S1 image
that `ckeep model pull multilingual-e5-small` installs: every Q4_0 matrix dequantised to f32
(w = (q - 8) * scale, llama.cpp's block layout), the f32 tensors as they are, BERT's tensor
names, mean pooling, L2 normalisation, 512 tokens, and the `query: ` / `passage: ` prompts.
This is the Python reference our benchmarks run beside ckeep on the same weights. It checks the
result against ../shared/models/reference_embeddings_e5.json before it returns.

Usage: python e5_hf.py MODEL_DIR OUT_DIR   (MODEL_DIR holds model.e5s1 and tokenizer.json)
"""
import json
import os
import shutil
import struct
import sys

import numpy as np
from safetensors.numpy import save_file


def read_image(path):
    """The header and the tensor directory {name: (dtype, count, offset, nbytes)} of an image."""
    b = open(path, "rb").read()
    if b[:4] != b"E5S1":
        sys.exit(f"{path}: not an E5S1 image")
    (version, hidden, layers, heads, ffn, vocab, positions, types, eps, qk, pieces) = struct.unpack_from(
        "<I7ifii", b, 4)
    p = 4 + struct.calcsize("<I7ifii")
    p += 16  # bos, eos, pad, unk ids: tokenizer.json has them
    (blob,) = struct.unpack_from("<Q", b, p)
    p += 8 + (pieces + 1) * 4 + pieces * 4 + blob
    (_, norm_bytes) = struct.unpack_from("<iI", b, p)
    p += 8 + norm_bytes
    (count,) = struct.unpack_from("<i", b, p)
    p += 4
    tensors = {}
    for _ in range(count):
        (name_len,) = struct.unpack_from("<H", b, p)
        name = b[p + 2:p + 2 + name_len].decode()
        p += 2 + name_len
        dtype = b[p]
        cnt, off, nbytes = struct.unpack_from("<IQQ", b, p + 1)
        p += 1 + 20
        tensors[name] = (dtype, cnt, off, nbytes)
    shape = dict(hidden=hidden, layers=layers, heads=heads, ffn=ffn, vocab=vocab,
                 positions=positions, types=types, eps=eps)
    return b, shape, tensors


def tensor(b, entry, rows, cols):
    dtype, cnt, off, nbytes = entry
    assert cnt == rows * cols, (cnt, rows, cols)
    if dtype == 0:
        return np.frombuffer(b, "<f4", cnt, off).reshape(rows, cols).copy()
    blocks = np.frombuffer(b, np.dtype([("d", "<f2"), ("qs", "u1", 16)]), cnt // 32, off)
    scale = blocks["d"].astype(np.float32)[:, None]
    low = (blocks["qs"] & 0x0F).astype(np.float32) - 8
    high = (blocks["qs"] >> 4).astype(np.float32) - 8
    return (np.concatenate([low, high], axis=1) * scale).reshape(rows, cols)


def convert(model_dir, out):
    b, s, t = read_image(os.path.join(model_dir, "model.e5s1"))
    h, f = s["hidden"], s["ffn"]
    w = {
        "embeddings.word_embeddings.weight": tensor(b, t["emb.word"], s["vocab"], h),
        "embeddings.position_embeddings.weight": tensor(b, t["emb.pos"], s["positions"], h),
        "embeddings.token_type_embeddings.weight": tensor(b, t["emb.type"], s["types"], h),
        "embeddings.LayerNorm.weight": tensor(b, t["emb.ln.w"], 1, h)[0],
        "embeddings.LayerNorm.bias": tensor(b, t["emb.ln.b"], 1, h)[0],
    }
    names = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
             "ao": "attention.output.dense", "fi": "intermediate.dense", "fo": "output.dense"}
    dims = {"q": (h, h), "k": (h, h), "v": (h, h), "ao": (h, h), "fi": (f, h), "fo": (h, f)}
    for i in range(s["layers"]):
        for short, name in names.items():
            rows, cols = dims[short]
            w[f"encoder.layer.{i}.{name}.weight"] = tensor(b, t[f"l{i}.{short}.w"], rows, cols)
            w[f"encoder.layer.{i}.{name}.bias"] = tensor(b, t[f"l{i}.{short}.b"], 1, rows)[0]
        for short, name in {"aln": "attention.output.LayerNorm", "oln": "output.LayerNorm"}.items():
            w[f"encoder.layer.{i}.{name}.weight"] = tensor(b, t[f"l{i}.{short}.w"], 1, h)[0]
            w[f"encoder.layer.{i}.{name}.bias"] = tensor(b, t[f"l{i}.{short}.b"], 1, h)[0]
    os.makedirs(os.path.join(out, "1_Pooling"), exist_ok=True)
    save_file({k: np.ascontiguousarray(v) for k, v in w.items()}, os.path.join(out, "model.safetensors"))
    shutil.copy(os.path.join(model_dir, "tokenizer.json"), out)
    files = {
        "config.json": {
            "architectures": ["BertModel"], "model_type": "bert", "hidden_size": h,
            "num_hidden_layers": s["layers"], "num_attention_heads": s["heads"],
            "intermediate_size": f, "vocab_size": s["vocab"],
            "max_position_embeddings": s["positions"], "type_vocab_size": s["types"],
            "layer_norm_eps": s["eps"], "hidden_act": "gelu", "pad_token_id": 1},
        # The fast tokenizer as tokenizer.json has it (BertTokenizerFast would replace its
        # normaliser).
        "tokenizer_config.json": {
            "tokenizer_class": "XLMRobertaTokenizer", "model_max_length": 512,
            "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "sep_token": "</s>",
            "pad_token": "<pad>", "cls_token": "<s>", "mask_token": "<mask>"},
        "modules.json": [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}],
        "sentence_bert_config.json": {"max_seq_length": 512, "do_lower_case": False},
        "1_Pooling/config.json": {"word_embedding_dimension": h, "pooling_mode_mean_tokens": True},
        "config_sentence_transformers.json": {
            "prompts": {"query": "query: ", "passage": "passage: "}, "default_prompt_name": None},
    }
    for name, value in files.items():
        with open(os.path.join(out, name), "w") as fh:
            json.dump(value, fh)


def check(out):
    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer(out, device="cpu")
    here = os.path.dirname(os.path.abspath(__file__))
    data = os.environ.get("CKEEP_DATA", os.path.join(here, "../../shared/data"))
    ref = json.load(open(os.path.join(data, "../models/reference_embeddings_e5.json")))
    worst = 1.0
    for item in ref["items"]:
        v = model.encode([item["text"]], prompt_name=item["kind"])[0]
        want = np.array(item["embedding"], dtype=np.float64)
        worst = min(worst, float(v @ want / np.linalg.norm(want)))
    if worst < 0.9999:
        sys.exit(f"{out}: cosine {worst} to the reference embeddings; the conversion is wrong")
    return worst


if __name__ == "__main__":
    model_dir, out = sys.argv[1], sys.argv[2]
    if not os.path.exists(os.path.join(out, "model.safetensors")):
        convert(model_dir, out)
    print(f"{out}: worst cosine to the reference embeddings {check(out):.6f}", file=sys.stderr)
