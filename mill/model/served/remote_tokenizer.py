"""The served model's own tokenizer over HTTP (``model.tokenizer=remote``)."""

from __future__ import annotations

from typing import Any

from mill.errors import ModelError
from mill.model.served.api_client import JSONClient


class RemoteTokenizer:
    """The served model's own tokenizer, over HTTP (``model.tokenizer=remote``): vLLM's and
    SGLang's ``/tokenize`` + ``/detokenize``, llama.cpp's ``llama-server``'s (other fields,
    same routes) or llama-cpp-python's ``/extras/tokenize`` + ``/extras/detokenize`` (all at
    the server's root). Just what :class:`TokenizingLM` calls; one request per distinct
    text, so a local tokenizer is much faster."""

    ROUTES = {
        "vllm": ("/tokenize", "/detokenize"),
        "llama-server": ("/tokenize", "/detokenize"),
        "llama.cpp": ("/extras/tokenize", "/extras/detokenize"),
    }

    def __init__(self, client: JSONClient, model: str) -> None:
        self.client = client
        self.model = model
        self.bos_token_id: int | None = None
        self.eos_token_id: int | None = None
        self.model_max_length = 0
        self._cache: dict[tuple[str, bool], list[int]] = {}
        for flavour in self.ROUTES:
            self.flavour = flavour
            path = self.ROUTES[flavour][0]
            # a text must give tokens: llama-server answers vLLM's fields with no tokens
            # retried through transient failures: a 503 is no answer about the route
            what = f"model.tokenizer=remote: probing {path}"
            probe, _ = client.settle(
                "POST", path, self._body("a", False), what, at_root=True, probe=True
            )
            if not isinstance(probe, dict) or not probe.get("tokens"):
                continue
            # the empty text tokenizes to the BOS token alone, where the model has one
            empty, _ = client.settle(
                "POST", path, self._body("", True), what, at_root=True, probe=True
            )
            if isinstance(empty, dict) and "tokens" in empty:
                self.bos_token_id = int(empty["tokens"][0]) if empty["tokens"] else None
                return
        raise ModelError(
            f"model.tokenizer=remote: the server at model.base_url={client.base_url} has no "
            "/tokenize (vLLM, SGLang, llama-server) or /extras/tokenize (llama-cpp-python) "
            "route; set model.tokenizer to the served model's Hugging Face tokenizer"
        )

    def _body(self, text: str, special: bool) -> dict[str, Any]:
        if self.flavour == "vllm":
            return {"model": self.model, "prompt": text, "add_special_tokens": special}
        if self.flavour == "llama-server":
            return {"content": text, "add_special": special}
        return {"model": self.model, "input": text}  # llama-cpp-python always adds its BOS

    def _tokenize(self, text: str, special: bool) -> list[int]:
        path = self.ROUTES[self.flavour][0]
        result = self.client.request_sync(
            "POST", path, self._body(text, special), "tokenizing (model.tokenizer=remote)", True
        )
        tokens = [int(t) for t in result["tokens"]]
        if self.flavour == "llama.cpp" and not special and tokens[:1] == [self.bos_token_id]:
            tokens = tokens[1:]
        return tokens

    def __call__(
        self, texts: list[str], add_special_tokens: bool = True, verbose: bool = True
    ) -> dict[str, list[list[int]]]:
        """``transformers``' call for a batch of texts; ``verbose`` (its length warning) is
        accepted and has nothing to say: the server's tokenizer has no length limit here."""
        out = []
        for text in texts:
            key = (text, bool(add_special_tokens))
            if key not in self._cache:
                self._cache[key] = self._tokenize(text, bool(add_special_tokens))
            out.append(list(self._cache[key]))
        return {"input_ids": out}

    def decode(self, tokens: list[int], skip_special_tokens: bool = False) -> str:
        if skip_special_tokens:
            tokens = [t for t in tokens if t not in (self.bos_token_id, self.eos_token_id)]
        if not tokens:
            return ""
        body: dict[str, Any] = {"model": self.model, "tokens": [int(t) for t in tokens]}
        result = self.client.request_sync(
            "POST",
            self.ROUTES[self.flavour][1],
            body,
            "detokenizing (model.tokenizer=remote)",
            True,
        )
        for key in ("prompt", "text", "content"):  # vLLM, llama-cpp-python, llama-server
            if key in result:
                return str(result[key])
        return ""
