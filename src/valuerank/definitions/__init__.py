"""Scenario definitions: pure logic over `valuerank.formats.definition_model.Definition`.

Modules (import them directly; this package imports nothing so that it stays light):

* `expansion` — expand a definition into scenarios (modes "first", "all", "random").
* `rules` — parse and apply the `# Matching Rules` section.
* `sampling` — deterministic nested sampling of scenarios.
* `diff` — structured diff of two definitions.
* `hashing` — content hash of a definition version.
* `errors` — `DefinitionError`.
"""
