"""Experiments: a grid of prompt sets x models x ops x dtypes x archs x samples, every cell an
ordinary run directory in one experiment folder; suite metrics, paired comparisons and plots.

grid (the file), cells (ids, configs), runner (the folder, one cell), schedule (cells on this
machine, a shared pool of warm GPU workers), raycells (cells as Ray tasks), progress, outcomes,
metrics, stats, report, plots; driver ties them together for the CLI.
"""
