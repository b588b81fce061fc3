"""ValueRank: measure how AI models prioritise human values in moral dilemmas."""

__version__ = "0.1.0"
