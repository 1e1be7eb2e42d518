"""Mill's HF engine as an lm-evaluation-harness model: ``--model mill``.

    import lm_eval
    from mill.lm_eval.model import MillLM

    lm_eval.simple_evaluate(model=MillLM(pretrained="gpt2"), tasks=["arc_easy"])

or lm-eval's own CLI with the model registered: ``python -m mill.lm_eval --model mill
--model_args pretrained=gpt2,dtype=float32 --tasks arc_easy``. Every lm-eval request becomes
one Mill request (loglikelihood -> LOGPROBS, loglikelihood_rolling -> PERPLEXITY,
generate_until -> GENERATIVE) answered by :class:`mill.model.hf.HFCausalLM` (shared-prefix
scoring, LM head on scored positions only, fp32 log-softmax, continuous-batching greedy
generation), so the answers equal lm-eval's ``hf`` model's within 1e-4 and come faster.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from mill.lm_eval.requirement import require_lm_eval

require_lm_eval()

# lm-eval fills its model registry lazily, and only while it is empty: registering "mill"
# first would hide "hf" and every other model from the same process. Fill it first.
import lm_eval.models  # noqa: E402, F401
from lm_eval.api.model import LM  # noqa: E402
from lm_eval.api.registry import register_model  # noqa: E402

from mill.lm_eval.adapters import generation_args  # noqa: E402
from mill.types import OutputType, Request, Response  # noqa: E402

_ENGINE_ARGS = (
    "revision",
    "dtype",
    "device",
    "batch_size",
    "token_budget",
    "cache_budget",
    "max_length",
    "max_gen_toks",
    "share_prefix",
    "trust_remote_code",
    "device_map",
    "fused_gelu",
)

# a child of lm-eval's logger, so lm-eval's CLI prints it beside its own lines
log = logging.getLogger("lm_eval.mill")


def available_device(device: Any) -> Any:
    """``device`` unless it is a CUDA device this machine lacks: then ``auto`` (the GPU
    torch picks, else the CPU), logged. lm-eval passes its default device (``cuda:0``) to
    every model; its ``hf`` model falls back the same way ("Device not specified")."""
    if device is None or not str(device).startswith("cuda"):
        return device
    import torch

    available = torch.cuda.is_available()
    _, _, index = str(device).partition(":")
    if available and (not index.isdigit() or int(index) < torch.cuda.device_count()):
        return device
    fallback = "cuda" if available else "cpu"
    log.info(
        "Device %r not available (Cuda Available? %s, %d GPU(s)): using %s",
        str(device), available, torch.cuda.device_count() if available else 0, fallback,
    )  # fmt: skip
    return fallback


def _arg(value: Any) -> Any:
    """lm-eval passes model_args as strings; turn numbers and booleans back."""
    if not isinstance(value, str):
        return value
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    try:
        return int(value)
    except ValueError:
        return value


@register_model("mill")
class MillLM(LM):
    """An lm-eval ``LM`` whose requests Mill's HF engine answers.

    ``pretrained`` is a Hub id or a local folder; the other arguments are
    :class:`mill.model.hf.HFCausalLM`'s (``dtype`` defaults to float32 as Mill's configs; lm-eval's
    ``batch_size`` is accepted: ``auto`` lets Mill batch by token budget). Unknown
    arguments are refused."""

    def __init__(self, pretrained: str, **kwargs: Any) -> None:
        super().__init__()
        from mill.model.hf import HFCausalLM

        unknown = sorted(set(kwargs) - set(_ENGINE_ARGS) - {"max_batch_size"})
        if unknown:
            raise ValueError(
                f"--model mill: unknown model_args {unknown}; known: pretrained, "
                f"{', '.join(_ENGINE_ARGS)}"
            )
        args = {k: _arg(v) for k, v in kwargs.items() if k in _ENGINE_ARGS and v is not None}
        args.setdefault("dtype", "float32")
        if "device" in args:
            args["device"] = available_device(args["device"])
        if args.get("batch_size") in (None, "auto") or str(args.get("batch_size")).startswith(
            "auto"
        ):
            args["batch_size"] = "auto"
        self.engine = HFCausalLM(pretrained=str(pretrained), **args)
        self.pretrained = str(pretrained)

    @classmethod
    def create_from_arg_obj(
        cls, arg_dict: dict[str, Any], additional_config: dict[str, Any] | None = None
    ) -> MillLM:
        extra = {k: v for k, v in (additional_config or {}).items() if v not in (None, "")}
        return cls(**{**extra, **arg_dict})

    @classmethod
    def create_from_arg_string(
        cls, arg_string: str, additional_config: dict[str, Any] | None = None
    ) -> MillLM:
        from lm_eval.utils import simple_parse_args_string

        return cls.create_from_arg_obj(simple_parse_args_string(arg_string), additional_config)

    def _run(self, requests: list[Request], method: str) -> list[Response]:
        answers: list[Response | None] = [None] * len(requests)

        def on_response(request: Request, response: Response) -> None:
            answers[request.doc_id] = response

        getattr(self.engine, method)(requests, on_response)
        missing = [i for i, a in enumerate(answers) if a is None]
        if missing:
            raise RuntimeError(f"Mill's engine left {len(missing)} requests unanswered")
        return answers  # type: ignore[return-value]

    def loglikelihood(self, requests: list[Any], disable_tqdm: bool = False) -> list[Any]:
        mill = [
            Request(OutputType.LOGPROBS, "lm_eval", i, 0, str(r.args[0]), str(r.args[1]))
            for i, r in enumerate(requests)
        ]
        out = []
        for request, response in zip(requests, self._run(mill, "loglikelihood"), strict=True):
            answer = (float(response.logprob or 0.0), bool(response.is_greedy))
            self.cache_hook.add_partial("loglikelihood", request.args, answer)
            out.append(answer)
        return out

    def loglikelihood_rolling(self, requests: list[Any], disable_tqdm: bool = False) -> list[Any]:
        mill = [
            Request(OutputType.PERPLEXITY, "lm_eval", i, 0, "", str(r.args[0]))
            for i, r in enumerate(requests)
        ]
        out = []
        for request, response in zip(
            requests, self._run(mill, "loglikelihood_rolling"), strict=True
        ):
            answer = float(response.logprob or 0.0)
            self.cache_hook.add_partial("loglikelihood_rolling", request.args, answer)
            out.append(answer)
        return out

    def generate_until(self, requests: list[Any], disable_tqdm: bool = False) -> list[str]:
        mill = [
            Request(
                OutputType.GENERATIVE,
                "lm_eval",
                i,
                0,
                str(r.args[0]),
                generation=generation_args(r.args[1] if len(r.args) > 1 else {}),
            )
            for i, r in enumerate(requests)
        ]
        out = []
        for request, response in zip(requests, self._run(mill, "generate_until"), strict=True):
            text = response.text or ""
            self.cache_hook.add_partial("generate_until", request.args, text)
            out.append(text)
        return out

    # ----- chat templates (lm-eval's --apply_chat_template) ---------------------------------
    def _template(self) -> Callable[[list[dict[str, str]], bool], str]:
        template = self.engine.chat_template()
        if template is None:
            raise ValueError(f"{self.pretrained} has no chat template")
        return template

    def apply_chat_template(
        self, chat_history: list[dict[str, str]], add_generation_prompt: bool = True
    ) -> str:
        return self._template()(chat_history, add_generation_prompt)

    @property
    def tokenizer_name(self) -> str:
        return self.engine.tokenizer.name_or_path.replace("/", "__")

    def chat_template(self, chat_template: bool | str = False) -> str | None:
        if not chat_template:
            return None
        return getattr(self.engine.tokenizer, "chat_template", None)

    def get_model_info(self) -> dict[str, Any]:
        """What lm-eval records under ``config`` (Mill's model identity)."""
        return {"mill_model": self.engine.identity()}
