"""A small real tokenizer with a chat template: stories260k's, copied with a template added."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from mill.data.load import bundled_data_dir

CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}"
    "{% if not loop.last or add_generation_prompt %}<|end|>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def make_chat_tokenizer(folder: Path) -> Path:
    """Copy the stories260k tokenizer into ``folder`` and give it :data:`CHAT_TEMPLATE`."""
    source = bundled_data_dir().parent / "models" / "stories260k"
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copyfile(source / name, folder / name)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["chat_template"] = CHAT_TEMPLATE
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    return folder
