"""The served backend: models behind an OpenAI-compatible server (``model=openai_completions``,
``model=openai_chat``).

- :mod:`.openai_api`: the backends, :class:`~.openai_api.OpenAICompletions` and
  :class:`~.openai_api.OpenAIChat` (request semantics are the HF backend's,
  :mod:`mill.model.tokenizing`);
- :mod:`.openai_protocol`: what Mill asks the server and how it reads the answers;
- :mod:`.openai_transport`: prompts grouped into HTTP requests and sent concurrently;
- :mod:`.api_client`: HTTP itself (JSON requests, bounded concurrency, retries, deadlines,
  the redaction of secrets), standard library only;
- :mod:`.remote_tokenizer`: the served model's own tokenizer over HTTP
  (``model.tokenizer=remote``).
"""
