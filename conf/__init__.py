"""Mill's Hydra configs (installed as ``mill.conf``)."""
