"""The HF engine: how :class:`~mill.model.hf.HFCausalLM` runs a ``transformers`` model.

Results are lm-evaluation-harness 0.4.13's (``_loglikelihood_tokens``, ``generate_until``);
the engine is faster because it does less work for the same numbers:

* **Shared prefixes.** The choices of a question run their context once; short contexts
  and their choices pack into one row with a block-diagonal mask; contexts of different
  docs that share a long prefix (fixed few-shot exemplars) run it once and continue from
  its cache (:mod:`.scoring`). In generation a prefix every row shares is computed, stored
  and read once for the whole decode batch through an attention function of its own
  (:mod:`.prefix_attention`), and identical prompts (sampled repeats) are prefilled once.
* **The head only on scored positions.** The LM head and log-softmax run in fp32 on the
  hidden states of scored positions only, each once, a tile of vocabulary at a time with an
  online log-sum-exp (:mod:`.head`); lm-eval's full ``[batch, seq, vocab]`` log-softmax is
  never built.
* **Continuous batching.** Generation decodes rows in slots of one preallocated KV cache
  written in place (:mod:`.kv`); a row that stops frees its slot and the next waiting
  context is prefilled into it, so the batch stays full until the queue is empty
  (:mod:`.generation`).

Batches are formed by a token budget over length-sorted work, not a batch size
(:mod:`.batching`); the decode batch's KV budget defaults from the model's shape and the
memory there is (:mod:`.memory`). :mod:`.hf_forward` is the torch side the backend calls
(hidden states, the head on selected positions, KV-cache surgery); :mod:`.kernels` fuses
GPT-2's tanh GELU. Every module here imports torch; the backend imports them only when a
model is instantiated, so ``import mill`` stays free of torch.
"""
