"""The report commands' settings (``mill report``, ``mill compare``, ``mill runs``), typed by
their declarations in :data:`mill.schema.COMMANDS`: what the commands read instead of
casting their config's values (``trust_edited=no`` is refused, never read as true)."""

from __future__ import annotations

from typing import Any

from mill.schema import typed_command


def command_settings(cfg: Any, command: str) -> Any:
    """``cfg`` (the command's config: a DictConfig or a mapping) with its settings checked
    and typed; missing values (``???``) stay missing for the command to name."""
    from omegaconf import DictConfig, OmegaConf

    node = (
        OmegaConf.to_container(cfg, resolve=True, throw_on_missing=False)
        if isinstance(cfg, DictConfig)
        else dict(cfg)
    )
    assert isinstance(node, dict)
    return OmegaConf.create(typed_command(command, {str(k): v for k, v in node.items()}))
