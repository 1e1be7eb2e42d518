"""The SLURM launcher preset (hydra-submitit-launcher) composes with Mill's config, and a
submitit sweep (its local executor: jobs in other processes) ends with Mill's summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from tests.helpers import run_mill

pytest.importorskip("hydra_plugins.hydra_submitit_launcher")


@pytest.fixture()
def compose_hydra():
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig

    import mill.cli  # noqa: F401  (registers the mill_resource resolver)

    def _compose(*overrides: str):
        GlobalHydra.instance().clear()
        with initialize_config_module("mill.conf", version_base="1.3"):
            cfg = compose("mill", overrides=list(overrides), return_hydra_config=True)
        HydraConfig.instance().set_config(cfg)
        return cfg

    yield _compose
    GlobalHydra.instance().clear()


def test_slurm_preset_composes(compose_hydra, tmp_path: Path) -> None:
    cfg = compose_hydra(
        "hydra/launcher=slurm",
        "hydra.launcher.partition=gpu",
        "hydra.launcher.gpus_per_node=8",
        "runner=dp",
        f"hydra.sweep.dir={tmp_path}",
    )
    launcher = cfg.hydra.launcher
    assert launcher._target_ == (
        "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"
    )
    assert (launcher.partition, launcher.gpus_per_node, launcher.tasks_per_node) == ("gpu", 8, 1)
    assert launcher.timeout_min == 240 and launcher.mem_gb == 64 and launcher.nodes == 1
    assert launcher.submitit_folder == f"{tmp_path}/.submitit/%j"
    assert cfg.runner.num_processes == "auto"  # one worker per GPU the job was given
    assert list(cfg.hydra.callbacks) == ["sweep_summary"]
    # the plugin's own launcher class accepts every setting of the preset
    from hydra.utils import instantiate

    built = instantiate(OmegaConf.to_container(launcher, resolve=True))
    assert type(built).__name__ == "SlurmLauncher"
    assert built.params["partition"] == "gpu" and built.params["timeout_min"] == 240


@pytest.mark.slow
def test_submitit_sweep_is_summarized(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    proc = run_mill(
        "-m",
        "hydra/launcher=submitit_local",
        "task=arc_easy",
        "model=fake",
        "task.limit=2",
        f"hydra.sweep.dir={sweep}",
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((sweep / "summary.json").read_text())
    assert [(j["job"], j["status"]) for j in summary["jobs"]] == [("0_arc_easy_fake", "succeeded")]
    assert (sweep / ".submitit").is_dir()  # the job really ran through submitit
    results = json.loads((sweep / "0_arc_easy_fake" / "results.json").read_text())
    acc = results["tasks"]["arc_easy"]["metrics"]["acc"]
    assert summary["jobs"][0]["metrics"]["arc_easy"]["acc"]["value"] == acc["value"]
