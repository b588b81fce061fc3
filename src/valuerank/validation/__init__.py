"""Multi-model validation: tasks carry Response-Awareness (RA) tags — assumptions such as
`#COMPLETION_DRIVE_IMPL: Using JWT tokens for stateless authentication` —, several models
validate each tag (validated / partial / rejected, confidence 0–100, notes), and the
consensus of `valuerank.consensus` summarises them per tag and per task.

`store` writes and reads tasks, tags and validations; `requests` asks models through the
queue (the `validate` job of `valuerank.pipeline`); `reads` builds the API's views (cached,
see `cache`); `rules` holds the pure summary rules; `events` the live updates.
"""
