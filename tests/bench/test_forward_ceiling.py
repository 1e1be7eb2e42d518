"""benchmarks.forward_ceiling: the op kinds, and a run on stories260k (a Llama)."""

from __future__ import annotations

import argparse
import re

import pytest

from benchmarks.forward_ceiling import fused, kind, main, shape, shares
from benchmarks.side_by_side import model_dir


def test_ops_are_sorted_into_products_attention_and_the_rest() -> None:
    assert kind("aten::mm") == kind("aten::addmm") == "products"
    assert kind("aten::_scaled_dot_product_flash_attention_for_cpu") == "attention"
    assert kind("aten::mul") == kind("aten::cat") == "rest"
    split = shares({"aten::mm": 3.0, "aten::mul": 0.5, "aten::_scaled_dot_product_x": 0.5})
    assert split == {"products": 0.75, "attention": 0.125, "rest": 0.125}
    assert shares({}) == {"products": 0.0, "attention": 0.0, "rest": 0.0}


def test_a_shape_is_rows_by_tokens() -> None:
    assert shape("4x400") == (4, 400)
    with pytest.raises(argparse.ArgumentTypeError, match="ROWSxTOKENS"):
        shape("400")


@pytest.mark.slow
def test_the_fused_forward_equals_the_eager_one_and_the_model_is_restored(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import torch
    import transformers
    from transformers.models.llama import modeling_llama as ml

    assert main(["--model", "stories260k", "--shapes", "2x16", "3x8", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    split = r"products \d+% \(\d+ GFLOP/s; a 2048 x 2048 product: \d+ GFLOP/s\), attention \d+%"
    assert re.search(split + r", the rest \d+%", out)
    rows = re.findall(
        r"^\| (\d+) x (\d+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| (\S+) \|$", out, re.M
    )
    assert [(r[0], r[1]) for r in rows] == [("2", "16"), ("3", "8")]
    assert all(float(r[5]) < 1e-4 for r in rows), rows  # the same function, fused

    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir("stories260k"))
    own = ml.apply_rotary_pos_emb
    with fused(model):
        assert ml.apply_rotary_pos_emb is not own
        assert "forward" in vars(model.model.norm)
    assert ml.apply_rotary_pos_emb is own
    assert not any("forward" in vars(m) for m in model.modules())
    ids = torch.tensor([[1, 2, 3]])
    with torch.inference_mode():
        assert model.model(ids).last_hidden_state.shape == (1, 3, model.config.hidden_size)
