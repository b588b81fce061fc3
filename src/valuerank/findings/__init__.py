"""Findings in the database: a run's analyses (cached by input hash), comparisons of runs,
experiments and lineage results. The statistics themselves are `valuerank.analysis`."""
