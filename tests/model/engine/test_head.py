"""The scored-positions head: an online log-sum-exp over vocabulary tiles equals a full
fp32 ``log_softmax`` (lm-eval's arithmetic) to rounding, with the same argmax."""

from __future__ import annotations

from contextlib import nullcontext

import pytest
import torch
import torch.nn.functional as F

from mill.model.engine.head import argmax_tiles, rows_of_product, score_positions
from mill.model.hf import HFCausalLM


class LinearHead:
    """An LM head given by its weight and bias (``Head`` protocol)."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, tile: int | None):
        self.weight, self.bias, self.vocab_tile = weight, bias, tile
        self.vocab_size = weight.shape[0]
        self.calls = 0

    def logits(self, hidden: torch.Tensor, lo: int = 0, hi: int | None = None) -> torch.Tensor:
        self.calls += 1
        bias = None if self.bias is None else self.bias[lo:hi]
        return F.linear(hidden, self.weight[lo:hi], bias)

    def loaded(self) -> nullcontext[None]:
        return nullcontext()


def _reference(weight, bias, hidden, rows, targets):
    lsm = torch.log_softmax(F.linear(hidden, weight, bias), -1)
    return lsm[rows, targets], lsm.argmax(-1)[rows] == targets


@pytest.mark.slow  # real model, seconds of compute
@pytest.mark.parametrize("tile", [None, 1, 7, 64, 1000, 5000])
def test_tiles_equal_a_full_log_softmax(tile: int | None) -> None:
    gen = torch.Generator().manual_seed(0)
    vocab, dim, positions = 1000, 32, 40
    weight = torch.randn(vocab, dim, generator=gen)
    bias = torch.randn(vocab, generator=gen)
    hidden = torch.randn(positions, dim, generator=gen)
    rows = torch.tensor([3, 0, 3, 39, 17, 17, 17, 5])  # unsorted, repeated rows
    argmax = F.linear(hidden, weight, bias).argmax(-1)
    targets = torch.tensor([argmax[3], 999, 0, argmax[39], 500, argmax[17], 1, 998])
    head = LinearHead(weight, bias, tile)
    got, greedy = score_positions(head, hidden, rows, targets)
    want, want_greedy = _reference(weight, bias, hidden, rows, targets)
    torch.testing.assert_close(got, want, rtol=0, atol=2e-5)
    assert greedy is not None and greedy.tolist() == want_greedy.tolist()
    assert greedy.tolist() == [True, False, False, True, False, True, False, False]
    tiles = -(-vocab // (tile or vocab))
    assert head.calls % tiles == 0 and head.calls >= tiles  # every tile of each block once


def test_ties_keep_the_first_index_and_unscored_rows_cost_nothing() -> None:
    weight = torch.zeros(10, 4)
    weight[2] = weight[7] = torch.ones(4)  # tokens 2 and 7 tie for the max in every row
    hidden = torch.ones(6, 4)
    head = LinearHead(weight, None, tile=3)
    got, greedy = score_positions(head, hidden, torch.tensor([1, 1]), torch.tensor([2, 7]))
    assert greedy is not None and greedy.tolist() == [True, False]  # torch's argmax: first
    torch.testing.assert_close(got[0], got[1])
    _, none = score_positions(head, hidden, torch.tensor([4]), torch.tensor([0]), greedy=False)
    assert none is None


@pytest.mark.slow  # real model, seconds of compute
def test_real_model_head_on_cpu_tiles_the_vocabulary() -> None:
    from mill.model.random import random_gpt2

    model: HFCausalLM = random_gpt2(n_layer=1, n_embd=32, seed=3)
    fwd = model._forward
    assert fwd.vocab_tile is not None and fwd.vocab_tile < fwd.vocab_size  # 50257 tokens
    hidden = torch.randn(50, 32, generator=torch.Generator().manual_seed(1))
    rows = torch.arange(50)
    targets = torch.randint(0, fwd.vocab_size, (50,), generator=torch.Generator().manual_seed(2))
    got, greedy = score_positions(fwd, hidden, rows, targets)
    lsm = torch.log_softmax(model.model.lm_head(hidden).float(), -1)
    torch.testing.assert_close(got, lsm[rows, targets], rtol=0, atol=1e-5)
    assert greedy is not None and greedy.tolist() == (lsm.argmax(-1) == targets).tolist()


@pytest.mark.parametrize("tile", [1, 3, 7, 10, 64])
def test_argmax_tiles_equals_argmax_with_ties_to_the_first_index(tile: int) -> None:
    gen = torch.Generator().manual_seed(4)
    logits = torch.randn(20, 10, generator=gen)
    logits[0, 2] = logits[0, 8] = logits[0].max() + 1  # a tie across tiles: 2 wins
    logits[1, 5] = logits[1, 6] = logits[1].max() + 1  # a tie inside or across tiles
    logits[2] = 0.0  # all equal: token 0
    got = argmax_tiles(lambda lo, hi: logits[:, lo:hi], 10, tile)
    assert got.tolist() == logits.argmax(-1).tolist()
    assert got[:3].tolist() == [2, 5, 0]


@pytest.mark.parametrize("tile", [1, 4, 7, 100])
def test_rows_of_product_is_the_contiguous_product_tile_by_tile(tile: int) -> None:
    """Tiles that divide the vocabulary and that leave a short last tile: the ``[rows,
    vocab]`` block is ``hidden @ weight.T``, laid out row by row (the sampler's passes
    read it contiguously); one tile for the whole vocabulary: the same values."""
    gen = torch.Generator().manual_seed(5)
    weight, hidden = torch.randn(28, 16, generator=gen), torch.randn(6, 16, generator=gen)
    got = rows_of_product(weight, hidden, tile)
    assert got.shape == (6, 28) and got.is_contiguous() == (tile < 28)
    torch.testing.assert_close(got, hidden @ weight.T, rtol=0, atol=1e-5)


@pytest.mark.slow  # real model, seconds of compute
def test_a_greedy_step_on_cpu_is_the_argmax_of_the_logits() -> None:
    """Enough rows for the tiled head (CPU_GREEDY_MIN_ROWS) and too few for it: the
    tokens of ``next_argmax`` are the argmax of ``next_logits``' fp32 logits."""
    from mill.model.engine.head import CPU_GREEDY_MIN_ROWS
    from mill.model.random import random_gpt2

    fwd = random_gpt2(n_layer=1, n_embd=32, seed=3)._forward
    for rows in (CPU_GREEDY_MIN_ROWS - 1, 40):
        ids = torch.randint(
            0, fwd.vocab_size, (rows, 5), generator=torch.Generator().manual_seed(rows)
        )
        positions = torch.arange(5).expand(rows, 5)
        logits, _ = fwd.next_logits(ids, None, positions, None)
        tokens, past = fwd.next_argmax(ids, None, positions, None)
        assert tokens.tolist() == logits.argmax(-1).tolist()
        assert past.get_seq_length() == 5
