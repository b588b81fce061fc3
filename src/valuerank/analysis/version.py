"""The analysis code's version, apart from the statistics: a cached result is served while
its stored version is this one, and reading the cache must not load scipy to learn it."""

# Bump whenever a figure would come out differently: cached analyses of another version are
# recomputed.
CODE_VERSION = "1.4.0"
