"""Rolling windows for whole-text log-likelihood (lm-eval's ``get_rolling_token_windows``
with ``context_len=1`` followed by ``make_disjoint_window``).

Every token is scored exactly once. The first window is ``[prefix] + tokens[:L-1]``
predicting ``tokens[:L]``; later windows are disjoint L-token chunks, each conditioned on
the L tokens before its predictions, so the last, partial window has full left context.
"""

from __future__ import annotations


def rolling_windows(
    tokens: list[int], prefix_token: int, max_length: int
) -> list[tuple[list[int], list[int]]]:
    """Split ``tokens`` into (context, continuation) pairs that score each token once."""
    if not tokens:
        return []
    windows: list[tuple[list[int], list[int]]] = []
    first = min(max_length, len(tokens))
    windows.append(([prefix_token] + tokens[: first - 1], tokens[:first]))
    predicted = first
    while predicted < len(tokens):
        pred_len = min(len(tokens) - predicted, max_length)
        end = predicted + pred_len
        windows.append(
            (tokens[max(end - max_length - 1, 0) : end - 1], tokens[end - pred_len : end])
        )
        predicted += pred_len
    # make_disjoint_window: the context stops where the predictions start
    return [(ctx[: len(ctx) - (len(cont) - 1)], cont) for ctx, cont in windows]
