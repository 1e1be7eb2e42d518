"""``mill``: the Hydra entry point. Thin: compose the config, run one job, report errors.

Errors a user can fix (MillError) print as one line on stderr; a single run then exits 2.
In a multirun sweep a failing job is recorded and the sweep goes on; ``mill`` exits 2 at
the end if any job failed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

_failures: list[str] = []
_sweeps: dict[Path, str] = {}  # multirun folder -> progress mode, reported at the end


def _resource(path: str) -> str:
    from importlib import resources

    return str(resources.files("mill.resources").joinpath(path))


if not OmegaConf.has_resolver("mill_resource"):
    OmegaConf.register_new_resolver("mill_resource", _resource)


@hydra.main(version_base="1.3", config_path="pkg://mill.conf", config_name="mill")
def _job(cfg: DictConfig) -> float | None:
    from hydra.core.hydra_config import HydraConfig

    from mill.errors import MillError
    from mill.runner.job import run_job

    hydra_cfg = HydraConfig.get()
    output_dir = Path(hydra_cfg.runtime.output_dir)
    multirun = str(hydra_cfg.mode) == "RunMode.MULTIRUN"
    if multirun and "command" not in cfg:
        _sweeps[Path(str(hydra_cfg.sweep.dir))] = str(
            OmegaConf.select(cfg, "report.progress", default="auto")
        )
    try:
        if "command" in cfg:  # mill -cn compare / -cn report (mill.report.command)
            from mill.report.command import run_command

            return run_command(cfg)
        results = run_job(cfg, output_dir, HydraConfig.instance().cfg)
    except MillError as err:
        print(f"mill: error: {err}", file=sys.stderr)
        if not multirun:
            raise SystemExit(2) from None
        _failures.append(f"{output_dir}: {err}")
        return None
    first = next(iter(results["tasks"].values()))["metrics"]
    value = next(iter(first.values()))["value"] if first else None
    return value


def main() -> None:
    """Console-script entry point."""
    _job()
    if _sweeps:
        from mill.report.rebuild import report_after_sweep

        for sweep, mode in _sweeps.items():
            report_after_sweep(sweep, mode)
    if _failures:
        print(f"mill: {len(_failures)} job(s) failed:", file=sys.stderr)
        for line in _failures:
            print(f"  {line}", file=sys.stderr)
        raise SystemExit(2)


if __name__ == "__main__":
    main()
