"""lm-eval's own command line with Mill's engine registered as ``--model mill``:

    python -m mill.lm_eval --model mill --model_args pretrained=gpt2 --tasks arc_easy

Everything else (tasks, --num_fewshot, --limit, --output_path, --log_samples, ...) is
lm-eval 0.4.13's CLI, unchanged.
"""

from __future__ import annotations

import sys

from mill.errors import MillError


def main() -> None:
    try:
        from mill.lm_eval import require_lm_eval

        require_lm_eval()
    except MillError as err:
        print(f"mill.lm_eval: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    from lm_eval.__main__ import cli_evaluate

    import mill.lm_eval.model  # noqa: F401 - registers --model mill

    cli_evaluate()


if __name__ == "__main__":
    main()
