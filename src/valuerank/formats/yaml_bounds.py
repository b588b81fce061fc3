"""A YAML loader with bounds, for every document a user hands us (HTTP or CLI).

PyYAML's safe loader refuses to build objects, but not to build *too much*:
- an alias repeats its anchor's whole subtree, so a few hundred bytes of anchors that alias
  each other ("billion laughs") stand for billions of nodes; anything that walks the result
  (our line map, validation, JSON) then runs for minutes and grows to gigabytes;
- nesting is composed recursively, so `[[[[...` 50,000 deep ends in RecursionError;
- an alias to its own anchor makes a cyclic structure that no walker ends on.

The loader counts as it composes and stops at the first node past a bound, so a hostile
document fails in milliseconds with `YamlTooComplex` (a MarkedYAMLError naming the line).
Events come from libyaml's C parser where PyYAML was built with it: the same events and marks
as the pure-Python parser, several times faster, so a large legitimate file does not hold the
server for seconds either.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

# Far above what a definition, rubric, scenarios file or manifest needs (they nest < 10 deep
# and use no aliases), far below what costs noticeable time or memory.
MAX_DEPTH = 64
MAX_ALIAS_NODES = 10_000  # nodes that aliases add when expanded, over the whole document
MAX_CHARS = 16 * 1024 * 1024


class YamlTooComplex(yaml.MarkedYAMLError):
    """The document passes one of the bounds; `problem` says which, `problem_mark` where."""

    def __init__(self, problem: str, mark: Any = None) -> None:
        # `mark` is PyYAML's Mark or libyaml's: both have the 0-based `line`.
        super().__init__(problem=problem, problem_mark=mark)


def _check_size(text: str) -> None:
    if len(text) > MAX_CHARS:
        raise YamlTooComplex(f"the document is larger than {MAX_CHARS // 1024**2} MiB")


class _BoundedComposer(Composer):
    """The composer of SafeLoader, counting depth and alias expansion as it goes."""

    def _start_bounds(self) -> None:
        Composer.__init__(self)
        self._depth = 0
        self._alias_nodes = 0
        # Expanded size of every finished node (by identity); a node absent here is still
        # being composed, so an alias to it would make a cycle.
        self._sizes: dict[int, int] = {}

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event = self.peek_event()  # type: ignore[attr-defined]  # from the parser beside it
        if isinstance(event, AliasEvent):
            node = super().compose_node(parent, index)
            size = self._sizes.get(id(node))
            if size is None:
                raise YamlTooComplex(
                    problem=f"the alias *{event.anchor} refers to a node that contains it",
                    mark=event.start_mark,
                )
            self._alias_nodes += size
            if self._alias_nodes > MAX_ALIAS_NODES:
                raise YamlTooComplex(
                    problem=f"aliases expand to more than {MAX_ALIAS_NODES} nodes",
                    mark=event.start_mark,
                )
            return node
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise YamlTooComplex(
                problem=f"nested more than {MAX_DEPTH} levels deep",
                mark=event.start_mark,
            )
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        self._sizes[id(node)] = 1 + self._children_size(node)
        return node

    def _children_size(self, node: Node | None) -> int:
        if isinstance(node, SequenceNode):  # a scalar, or a collection of finished nodes
            return sum(self._sizes[id(item)] for item in node.value)
        if isinstance(node, MappingNode):
            return sum(self._sizes[id(k)] + self._sizes[id(v)] for k, v in node.value)
        return 0


class PurePythonBoundedLoader(_BoundedComposer, Reader, Scanner, Parser, SafeConstructor, Resolver):
    """The bounded loader on PyYAML's own (pure-Python) parser."""

    def __init__(self, text: str) -> None:
        _check_size(text)
        Reader.__init__(self, text)
        Scanner.__init__(self)
        Parser.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self._start_bounds()


def _libyaml_loader() -> type[PurePythonBoundedLoader] | None:
    """The bounded loader on libyaml's parser (the same events and marks, several times
    faster), or None where PyYAML was built without libyaml (the PyPI wheels have it)."""
    try:
        from yaml.cyaml import CParser  # type: ignore[attr-defined]
    except ImportError:  # pragma: no cover - depends on how PyYAML was built
        return None

    class LibyamlBoundedLoader(_BoundedComposer, CParser, SafeConstructor, Resolver):
        def __init__(self, text: str) -> None:
            _check_size(text)
            CParser.__init__(self, text)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            self._start_bounds()

    return LibyamlBoundedLoader  # type: ignore[return-value]  # the same interface


_DEFAULT_LOADER = _libyaml_loader() or PurePythonBoundedLoader


def bounded_loader(text: str) -> PurePythonBoundedLoader:
    """A bounded loader for `text`, on the fastest parser this PyYAML has."""
    return _DEFAULT_LOADER(text)
