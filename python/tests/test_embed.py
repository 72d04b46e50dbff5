"""Embedder from Python: the CLI's vectors to the last bit, as one float32 matrix."""

from __future__ import annotations

import numpy as np
import pytest

import ckeep
from conftest import MODEL, MULTILINGUAL, cli

TEXTS = ["Owls hunt at night.", "今天天气很好。", "桜は春に咲く。", "", "a " * 600]


@pytest.mark.parametrize("model", [MODEL, MULTILINGUAL, f"{MODEL}@int8", f"{MULTILINGUAL}@int8"])
@pytest.mark.parametrize("kind", ["passage", "query"])
def test_vectors_equal_ckeep_embed_json(model: str, kind: str) -> None:
    embedder = ckeep.Embedder(model)
    got = embedder.embed(TEXTS, kind=kind)
    assert got.dtype == np.float32 and got.shape == (len(TEXTS), embedder.dim)
    assert got.flags["C_CONTIGUOUS"] and got.flags["OWNDATA"] is False or got.base is not None
    args = ["embed", "--model", model, *TEXTS]
    if kind == "query":
        args.insert(1, "--query")
    want = np.array(cli(*args)["vectors"], dtype=np.float32)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("model", [MODEL, MULTILINGUAL])
def test_int8_vectors_stay_within_a_cosine_of_0_995_of_f32(model: str) -> None:
    f32 = ckeep.Embedder(model).embed(TEXTS)
    int8 = ckeep.Embedder(f"{model}@int8").embed(TEXTS)
    cosines = (f32 * int8).sum(axis=1)  # both L2-normalised
    assert cosines.min() >= 0.995 and not np.array_equal(f32, int8), cosines


def test_query_and_passage_prompts_differ_for_e5() -> None:
    e5 = ckeep.Embedder(MULTILINGUAL)
    q, p = e5.embed("相似度", kind="query"), e5.embed("相似度", kind="passage")
    assert not np.array_equal(q, p)
    assert e5.info["name"] == MULTILINGUAL and e5.dim == 384


def test_bad_arguments_raise_clear_errors(tmp_path) -> None:
    with pytest.raises(ckeep.ModelError):
        ckeep.Embedder(str(tmp_path / "no-model-here"))
    with pytest.raises(ckeep.UsageError, match="kind"):
        ckeep.Embedder(MODEL).embed(["x"], kind="sideways")
    assert ckeep.Embedder(MODEL).embed([]).shape == (0, 384)
