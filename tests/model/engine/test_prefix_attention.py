"""Generation over a shared prefix kept once (mill.model.engine.prefix_attention) against the
same generation with every row holding its whole context, on tiny random models of each
family it is enabled for: the same tokens, and every step's logits within 1e-5."""

from __future__ import annotations

import pytest
import torch

from mill.model.engine import prefix_attention
from mill.model.engine.generation import generate_batch
from mill.model.engine.hf_forward import SHARED_PREFIX_MODELS, HFForward
from mill.model.engine.prefix_attention import MIN_SHARED_PREFIX, common_prefix, own_blocks


def _model(kind: str) -> torch.nn.Module:
    import transformers as tf

    torch.manual_seed(0)
    small = {"vocab_size": 97, "hidden_size": 64, "intermediate_size": 128}
    small |= {"num_hidden_layers": 2, "num_attention_heads": 4, "max_position_embeddings": 256}
    configs = {
        "gpt2": lambda: tf.GPT2Config(
            vocab_size=97,
            n_embd=64,
            n_layer=2,
            n_head=4,
            n_positions=256,
            bos_token_id=0,
            eos_token_id=0,
        ),  # fmt: skip
        "llama": lambda: tf.LlamaConfig(**small, num_key_value_heads=2),  # grouped queries
        "mistral": lambda: tf.MistralConfig(**small, num_key_value_heads=1, sliding_window=None),
        "qwen2": lambda: tf.Qwen2Config(**small, num_key_value_heads=2),
    }
    config = configs[kind]()
    config._attn_implementation = "sdpa"
    return tf.AutoModelForCausalLM.from_config(config).eval()


def _contexts(prefix: int) -> list[list[int]]:
    g = torch.Generator().manual_seed(1)
    shared = torch.randint(3, 97, (prefix,), generator=g).tolist()
    lengths = [9, 1, 4, 13, 6]  # rows of different lengths: padding inside the suffixes
    return [shared + torch.randint(3, 97, (n,), generator=g).tolist() for n in lengths]


def _run(
    forward: HFForward,
    contexts: list[list[int]],
    eos: set[int],
    token_budget: int | None,
    slots: int | None = None,
) -> tuple[list[list[int]], dict[int, list[torch.Tensor]]]:
    seen: dict[int, list[torch.Tensor]] = {}

    def choose(logits: torch.Tensor, rows: list[int]) -> list[int]:
        for slot, row in enumerate(rows):
            seen.setdefault(row, []).append(logits[slot].clone())
        return logits.argmax(-1).tolist()

    out = generate_batch(
        forward,
        contexts,
        [0] * len(contexts),
        (),
        12,
        eos,
        lambda tokens: "",
        token_budget=token_budget,
        choose=choose,
        slots=slots,
    )
    return [g.tokens for g in out], seen


@pytest.mark.parametrize("kind", sorted(SHARED_PREFIX_MODELS))
@pytest.mark.parametrize("token_budget", [None, 20], ids=["one-prefill", "chunked-prefill"])
def test_shared_prefix_generation_equals_unshared(kind: str, token_budget: int | None) -> None:
    model = _model(kind)
    contexts = _contexts(40)
    plain = HFForward(model, torch.device("cpu"), share_prefix=False)
    shared = HFForward(model, torch.device("cpu"), share_prefix=True)
    assert not plain.can_share_generation_prefix() and shared.can_share_generation_prefix()
    tokens, _ = _run(plain, contexts, set(), token_budget)
    # a row that stops early (its third token is EOS) is dropped from the batch mid-way
    eos = {tokens[1][2]}
    want, want_logits = _run(plain, contexts, eos, token_budget)
    got, got_logits = _run(shared, contexts, eos, token_budget)
    assert got == want
    assert len(set(map(len, got))) > 1  # rows retired at different steps
    for row, steps in want_logits.items():
        assert len(got_logits[row]) == len(steps)
        for a, b in zip(steps, got_logits[row], strict=True):
            assert torch.allclose(a, b, atol=1e-5, rtol=0), (kind, row)
    assert model.config._attn_implementation == "sdpa"  # restored after the batch


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
@pytest.mark.parametrize("slots", [None, 16], ids=["one-wave", "rows-join"])
def test_blocked_reads_of_many_rows_equal_unshared(
    kind: str, slots: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Enough rows for several blocks (``own_blocks``), rows of many lengths, some stopping
    early, and (``rows-join``) rows taking freed slots between older ones: the same tokens
    and logits as the unshared generation."""
    model = _model(kind)
    g = torch.Generator().manual_seed(2)
    shared_part = torch.randint(3, 97, (40,), generator=g).tolist()
    lengths = torch.randint(1, 40, (40,), generator=g).tolist()
    contexts = [shared_part + torch.randint(3, 97, (n,), generator=g).tolist() for n in lengths]
    plain = HFForward(model, torch.device("cpu"), share_prefix=False)
    shared = HFForward(model, torch.device("cpu"), share_prefix=True)
    tokens, _ = _run(plain, contexts, set(), None, slots=slots)
    eos = {tokens[3][2], tokens[7][5]}
    want, want_logits = _run(plain, contexts, eos, None, slots=slots)
    seen: list[list[tuple[int, int, int]]] = []

    def spy(widths: list[int]) -> list[tuple[int, int, int]]:
        seen.append(own_blocks(widths))
        return seen[-1]

    monkeypatch.setattr(prefix_attention, "own_blocks", spy)
    got, got_logits = _run(shared, contexts, eos, None, slots=slots)
    assert got == want
    assert max(map(len, seen)) > 1 and len(set(map(len, got))) > 1
    for row, steps in want_logits.items():
        for a, b in zip(steps, got_logits[row], strict=True):
            assert torch.allclose(a, b, atol=1e-5, rtol=0), (kind, row)


def test_own_blocks_cover_the_slots_with_each_blocks_widest() -> None:
    assert own_blocks([5, 3, 9]) == [(0, 3, 9)]  # fewer than 8 rows: one block
    widths = list(range(100, 0, -1))  # 100 slots, longest first: 8 blocks of 13, 9 at the end
    blocks = own_blocks(widths)
    assert len(blocks) == 8 and blocks[0] == (0, 13, 100) and blocks[-1] == (91, 100, 9)
    assert [b[0] for b in blocks[1:]] == [b[1] for b in blocks[:-1]]
    assert own_blocks([1] * 20) == [(0, 8, 1), (8, 16, 1), (16, 20, 1)]
    shared = prefix_attention.SharedPrefix(None, None)
    shared.set_valid(torch.arange(4)[None] <= torch.tensor([3, 1] * 8)[:, None])
    assert shared.blocks == [(0, 8, 4), (8, 16, 4)]
    shared.set_pad(torch.zeros(16, dtype=torch.long))  # a prefill: no decoding step's blocks
    assert shared.blocks == []


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
def test_half_precision_steps_stay_close(kind: str) -> None:
    """bf16: a step's scores round to bf16 before the fp32 softmax (as eager attention's
    do), so logits move by bf16 rounding, not more."""
    model = _model(kind).to(torch.bfloat16)
    contexts = _contexts(40)
    _, want = _run(HFForward(model, torch.device("cpu"), share_prefix=False), contexts, set(), 20)
    _, got = _run(HFForward(model, torch.device("cpu"), share_prefix=True), contexts, set(), 20)
    assert got.keys() == want.keys()
    for row, steps in want.items():
        for a, b in zip(steps, got[row], strict=True):
            assert a.dtype == b.dtype
            assert torch.allclose(a.float(), b.float(), atol=2e-2, rtol=0), (kind, row)


def test_short_or_missing_prefix_is_not_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    model = _model("gpt2")
    forward = HFForward(model, torch.device("cpu"))
    calls: list[int] = []
    real = forward.shared_prefix

    def spy(tokens: list[int]):  # type: ignore[no-untyped-def]
        calls.append(len(tokens))
        return real(tokens)

    monkeypatch.setattr(forward, "shared_prefix", spy)
    _run(forward, _contexts(MIN_SHARED_PREFIX - 1), set(), None)
    assert calls == []
    _run(forward, _contexts(MIN_SHARED_PREFIX), set(), None)
    assert calls == [MIN_SHARED_PREFIX]


def test_common_prefix_leaves_each_row_a_token() -> None:
    assert common_prefix([[1, 2, 3, 4], [1, 2, 3, 5], [1, 2, 3, 4, 6]]) == 3
    assert common_prefix([[1, 2, 3], [1, 2, 3, 4]]) == 2  # the shorter row keeps its last
    assert common_prefix([[1, 2], [1, 2]]) == 1
    assert common_prefix([[5], [6]]) == 0
    assert common_prefix([]) == 0


def test_the_backend_shares_a_common_prefix_unless_told_not_to(
    gpt2, caplog: pytest.LogCaptureFixture
) -> None:
    """``model.share_prefix`` reaches generation; ``mill.log`` says when a prefix is shared;
    the generations are the same either way."""
    import logging

    from mill.model.random import random_gpt2
    from mill.types import GenerationArgs, OutputType, Request

    shots = "Question: what is two and two?\nAnswer: four.\n\n" * 4
    questions = ["Is the sky blue?", "Why?", "How many legs has a cat?"]
    args = GenerationArgs(until=("\n\n",), max_gen_toks=6)
    reqs = [
        Request(OutputType.GENERATIVE, "t", i, 0, f"{shots}Question: {q}\nAnswer:", generation=args)
        for i, q in enumerate(questions)
    ]
    with caplog.at_level(logging.INFO, logger="mill.model.hf"):
        shared = gpt2.generate_until(reqs)
    assert "3 contexts share their first" in caplog.text
    caplog.clear()
    plain_model = random_gpt2(n_layer=2, n_embd=64, seed=0, share_prefix=False)
    assert not plain_model._forward.can_share_generation_prefix()
    with caplog.at_level(logging.INFO, logger="mill.model.hf"):
        plain = plain_model.generate_until(reqs)
    assert "share their first" not in caplog.text
    assert [r.output_tokens for r in shared] == [r.output_tokens for r in plain]
    assert [r.text for r in shared] == [r.text for r in plain]


def test_the_contexts_of_several_prompts_share_each_prompt(
    gpt2, caplog: pytest.LogCaptureFixture
) -> None:
    """Two tasks' few-shot prompts in one generation call (a suite such as BBH): each task's
    contexts generate as a part with its prompt kept once, two lone contexts with neither;
    the generations equal those of a model that shares nothing."""
    import logging

    from mill.model.engine.generation import MIN_PREFIX_PART, prefix_parts
    from mill.model.random import random_gpt2
    from mill.types import GenerationArgs, OutputType, Request

    shots = {
        "add": "Question: what is two and two?\nAnswer: four.\n\n" * 3,
        "colour": "Question: which colour is the sky?\nAnswer: blue.\n\n" * 3,
    }
    prompts = [f"{shots[t]}Question: case {i} of {t}?\nAnswer:" for t in shots for i in range(8)]
    prompts += ["Alone, one.", "Alone, two."]
    args = GenerationArgs(until=("\n\n",), max_gen_toks=4)
    reqs = [
        Request(OutputType.GENERATIVE, "t", i, 0, p, generation=args) for i, p in enumerate(prompts)
    ]
    assert MIN_PREFIX_PART == 8
    tokens = [gpt2._encode(p) for p in prompts]
    assert prefix_parts(gpt2._forward, tokens) == [
        list(range(8)),
        list(range(8, 16)),
        [16, 17],
    ]
    assert prefix_parts(gpt2._forward, tokens[:8] + tokens[16:]) == [list(range(10))]  # too few
    with caplog.at_level(logging.INFO, logger="mill.model.hf"):
        shared = gpt2.generate_until(reqs)
    assert caplog.text.count("8 contexts share their first") == 2
    plain = random_gpt2(n_layer=2, n_embd=64, seed=0, share_prefix=False).generate_until(reqs)
    assert [r.output_tokens for r in shared] == [r.output_tokens for r in plain]
    assert [r.request_id for r in shared] == [r.id for r in reqs]


@pytest.mark.slow  # 8 generations of 4 model families, seconds together
@pytest.mark.parametrize("kind", sorted(SHARED_PREFIX_MODELS))
@pytest.mark.parametrize("prefix", [0, 40], ids=["prompts-only", "prefix-and-prompts"])
def test_repeats_read_one_kept_prompt_and_equal_unshared(
    kind: str, prefix: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sampled repeats of a context: its prompt's keys and values go once into a
    PromptTable entry that every repeat's steps read (each slot holds only generated
    tokens), with or without a prefix shared by all rows. Three slots for 5 contexts x 3
    repeats, one row stopping early: rows join and leave, entries are freed and taken
    again. The same tokens and every step's logits within 1e-5 of each row holding its
    whole context."""
    from mill.model.engine import kv

    placed: list[int] = []
    place = kv.PromptTable.place

    def counting(self: kv.PromptTable, prefill: object, row: int, tokens: int) -> int:
        entry = place(self, prefill, row, tokens)
        placed.append(entry)
        return entry

    monkeypatch.setattr(kv.PromptTable, "place", counting)
    model = _model(kind)
    contexts = [c for c in _contexts(prefix) for _ in range(3)]
    plain = HFForward(model, torch.device("cpu"), share_prefix=False)
    shared = HFForward(model, torch.device("cpu"), share_prefix=True)
    tokens, _ = _run(plain, contexts, set(), None, slots=3)
    eos = {tokens[4][2]}
    want, want_logits = _run(plain, contexts, eos, None, slots=3)
    assert not placed  # the plain path copies each repeat's context into its slot
    got, got_logits = _run(shared, contexts, eos, None, slots=3)
    assert len(placed) == 5  # one entry per context, not per repeat
    assert max(placed) <= 3  # entries freed after a context's last repeat and reused
    assert got == want
    assert len(set(map(len, got))) > 1
    for row, steps in want_logits.items():
        assert len(got_logits[row]) == len(steps)
        for a, b in zip(steps, got_logits[row], strict=True):
            assert torch.allclose(a, b, atol=1e-5, rtol=0), (kind, row)
