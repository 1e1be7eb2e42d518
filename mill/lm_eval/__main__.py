"""lm-eval's own command line with Mill's engine registered as ``--model mill``:

    python -m mill.lm_eval --model mill --model_args pretrained=gpt2 --tasks arc_easy

Everything else (tasks, --num_fewshot, --limit, --output_path, --log_samples, ...) is
lm-eval 0.4.13's CLI, unchanged, except the default batch size: ``auto`` (Mill batches by
token budget) where lm-eval's is 1, which would cap each of Mill's forward passes at one
context. An explicit ``--batch_size`` (or a ``--config`` file) is kept.
"""

from __future__ import annotations

import sys

from mill.errors import MillError


def default_batch_size(argv: list[str]) -> list[str]:
    """``argv`` with ``--batch_size auto`` added for ``--model mill`` unless it sets a batch
    size or a config file."""
    model = None
    for i, arg in enumerate(argv):
        if arg == "--model" and i + 1 < len(argv):
            model = argv[i + 1]
        elif arg.startswith("--model="):
            model = arg.split("=", 1)[1]
    given = {a.split("=", 1)[0] for a in argv}
    short_b = any(a.startswith("-b") and not a.startswith("--") for a in argv)
    if model != "mill" or short_b or given & {"--batch_size", "-b", "--config", "-C"}:
        return argv
    return [*argv, "--batch_size", "auto"]


def main() -> None:
    try:
        from mill.lm_eval.requirement import require_lm_eval

        require_lm_eval()
    except MillError as err:
        print(f"mill.lm_eval: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    from lm_eval.__main__ import cli_evaluate

    import mill.lm_eval.model  # noqa: F401 - registers --model mill

    sys.argv[1:] = default_batch_size(sys.argv[1:])
    cli_evaluate()


if __name__ == "__main__":
    main()
