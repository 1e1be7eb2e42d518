"""The torch side of :class:`~mill.model.hf.HFCausalLM`: hidden states, a fp32 LM head on
selected positions only, and KV-cache surgery."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from mill.model.generation import Stepper
from mill.model.scoring import Forward


class HFForward(Forward, Stepper):
    """Runs a ``transformers`` causal LM's body and head separately."""

    def __init__(self, model: torch.nn.Module, device: torch.device) -> None:
        self.model = model
        self.body = model.base_model
        self.head = model.get_output_embeddings()
        config = model.config
        self.softcap = getattr(config, "final_logit_softcapping", None)
        self.logit_scale = getattr(config, "logit_scale", None)
        self._device = device

    @property
    def device(self) -> torch.device:
        return self._device

    def hidden(self, input_ids, attention_mask, position_ids, past, use_cache):  # type: ignore[override]
        from transformers import DynamicCache

        if use_cache and past is None:
            past = DynamicCache(config=self.model.config)
        out = self.body(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            past_key_values=past,
            use_cache=use_cache or past is not None,
        )
        return out.last_hidden_state, out.past_key_values

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """fp32 logits of the LM head for the given hidden states."""
        # a model dispatched with device_map: the head may sit on another GPU, or be
        # offloaded (accelerate's hook loads its weights for the call and drops them after)
        hook = getattr(self.head, "_hf_hook", None)
        if hook is not None:
            (hidden,), _ = hook.pre_forward(self.head, hidden)
        try:
            weight = self.head.weight.float()
            bias = getattr(self.head, "bias", None)
            bias = None if bias is None else bias.float()
            logits = F.linear(hidden.float().to(weight.device), weight, bias)
        finally:
            if hook is not None:
                hook.post_forward(self.head, None)
        if self.logit_scale:
            logits = logits * self.logit_scale
        if self.softcap:
            logits = torch.tanh(logits / self.softcap) * self.softcap
        return logits

    def head_logprobs(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(self.logits(hidden), dim=-1)

    def expand_cache(self, past, indices):  # type: ignore[override]
        past.batch_select_indices(indices)
        return past

    def select_cache(self, past, keep):  # type: ignore[override]
        past.batch_select_indices(keep)
        return past

    def next_logits(self, input_ids, attention_mask, position_ids, past):  # type: ignore[override]
        with torch.inference_mode():
            hidden, past = self.hidden(input_ids, attention_mask, position_ids, past, True)
            return self.logits(hidden[:, -1]), past
