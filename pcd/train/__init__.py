"""Pruning runs on real networks: data, models, objectives, metrics, export, the run itself."""
