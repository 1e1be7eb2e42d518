"""The benchmark and parity tools: Mill measured from outside, side by side with its peers.

They live beside the package, not in it (as vLLM keeps its benchmarks): the wheel ships
``mill`` alone. Each tool is a module run as ``python -m benchmarks.<tool>`` from the
repository root (they read ``../shared`` beside the checkout and write nothing but their own
work folders):

* parity: ``parity`` (Mill vs lm-evaluation-harness 0.4.13 request by request),
  ``lmeval_bridge_parity`` (``task=lm_eval`` vs ``lm_eval.simple_evaluate``);
* speed: ``benchmark`` (work time), ``whole_process`` (whole processes, with the floor of
  ``floor_driver``; generation next to ``generate_batch_driver``, transformers' continuous
  batching, and llama.cpp's ``llama-server``), ``lmeval_bridge_speed``, ``bench_served``,
  ``bench_judge``, ``training_speed``, ``sandbox_speed``;
* another arithmetic: ``llama_cpp_distance`` (Mill's SmolLM2 requests scored again by
  llama.cpp's library on the Q4_1 GGUF, in ``llama_cpp_loglik_driver``);
* memory: ``memory_check``, ``rss_growth``;
* generation engines: ``cb_library`` (transformers' continuous batching against Mill's HF
  engine), ``cb_before_after`` (two checkouts' whole runs);
* same behaviour: ``before_after`` (two revisions' run folders, file by file, byte for byte
  but for what legitimately varies);
* what they share: ``driver_common`` (standard library only), ``workloads``,
  ``side_by_side``, ``humaneval_programs``, and the two drivers ``mill_driver`` and
  ``lmeval_driver``; the real model servers on 127.0.0.1 are the tests' own
  (``tests/support/servers.py``), which the served benchmarks start too.

Nothing in ``mill`` imports this package (a contract in pyproject.toml), and this
``__init__`` imports nothing: ``lmeval_driver`` runs in lm-eval's own interpreter, where only
the standard library and this package's own files are sure to be importable.
"""
