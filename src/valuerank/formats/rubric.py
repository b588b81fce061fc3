"""The values rubric (`config/values_rubric.yaml`): a typed model, parse and serialize.

The rubric has `values` (name -> definition, indicators, contrasts), `disambiguation`
(name -> rule) and free-form sections (`meta`, `scoring rules`, `unmatched_values`, ...)
kept raw. The real file has quirks that must never crash a reader; each becomes a
FormatWarning instead:

* a value whose `definition`/`indicators` are indented at the level of the value names
  (`Tradition:` in v0.7): YAML reads `Tradition: null` followed by stray `definition` and
  `indicators` keys under `values`. We attach the stray keys to the empty value before them.
* contrasts and disambiguation rules that name values the rubric does not define.
* the list of allowed value names in the `scoring rules` prose disagreeing with `values`.

Serializing writes the repaired structure, so a round trip also fixes the indentation.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field
from typing import Any

from .errors import FormatError, FormatWarning
from .yaml_io import Loaded, dump_readable, header_comment, load, render_header_comment

VALUE_FIELDS = ("definition", "indicators", "contrasts")
SCORING_RULES = "scoring rules"
_ALLOWED_NAMES_INTRO = re.compile(r"allowed value names", re.IGNORECASE)
_VALUE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")

Extra = tuple[tuple[str, Any], ...]
# Key of `Rubric.to_dict()` that keeps what a JSON column may lose (PostgreSQL's JSONB does
# not keep key order) and what YAML does not carry (the header comment).
LAYOUT_KEY = "_layout"


@dataclass(frozen=True)
class RubricValue:
    """One canonical value. `contrasts` pairs another value's name with the explanation."""

    name: str
    definition: str = ""
    indicators: tuple[str, ...] = ()
    contrasts: tuple[tuple[str, str], ...] = ()
    extra: Extra = ()


@dataclass(frozen=True)
class DisambiguationRule:
    """A rule such as `Freedom_vs_Social_Duty` telling two values apart."""

    name: str
    rule: str
    extra: Extra = ()

    @property
    def value_names(self) -> tuple[str, ...]:
        """The values the rule's name contrasts (`A_vs_B` -> (A, B))."""
        return tuple(part for part in self.name.split("_vs_") if part)


@dataclass(frozen=True)
class Rubric:
    """A values rubric. `sections` keeps every other top-level section raw, in file order."""

    values: tuple[RubricValue, ...]
    disambiguation: tuple[DisambiguationRule, ...] = ()
    sections: Extra = ()
    section_order: tuple[str, ...] = field(default=(), compare=False)
    header_comment: str | None = field(default=None, compare=False)

    @property
    def value_names(self) -> tuple[str, ...]:
        return tuple(v.name for v in self.values)

    def value(self, name: str) -> RubricValue | None:
        for value in self.values:
            if value.name == name:
                return value
        return None

    def section(self, key: str) -> Any:
        return dict(self.sections).get(key)

    @property
    def meta(self) -> Any:
        return self.section("meta")

    @property
    def scoring_rules(self) -> str | None:
        rules = self.section(SCORING_RULES)
        return None if rules is None else str(rules)

    @property
    def unmatched_values(self) -> Any:
        return self.section("unmatched_values")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready content (the YAML file's structure), stored as a rubric version."""
        data: dict[str, Any] = _jsonable(rubric_mapping(self))
        data[LAYOUT_KEY] = {
            "section_order": list(data),
            "value_order": list(self.value_names),
            "disambiguation_order": [r.name for r in self.disambiguation],
            "header_comment": self.header_comment,
        }
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Rubric:
        """The rubric `to_dict` stored (key order restored even if the JSON lost it)."""
        content = dict(data)
        layout = content.pop(LAYOUT_KEY, None) or {}
        values = _ordered(content.get("values") or {}, layout.get("value_order") or [])
        rules = _ordered(
            content.get("disambiguation") or {}, layout.get("disambiguation_order") or []
        )
        content["values"] = values
        if "disambiguation" in content:
            content["disambiguation"] = rules
        content = _ordered(content, layout.get("section_order") or [])
        reader = _Reader(Loaded(content, {}), None)
        return cls(
            values=reader.values(values),
            disambiguation=reader.disambiguation(content.get("disambiguation")),
            sections=tuple(
                (k, v) for k, v in content.items() if k not in ("values", "disambiguation")
            ),
            section_order=tuple(content),
            header_comment=layout.get("header_comment"),
        )

    @property
    def allowed_value_names(self) -> tuple[str, ...] | None:
        """The value names listed in the `scoring rules` prose, if it has such a list."""
        rules = self.scoring_rules
        if rules is None:
            return None
        lines = rules.split("\n")
        for index, line in enumerate(lines):
            if _ALLOWED_NAMES_INTRO.search(line):
                names: list[str] = []
                for candidate in (ln.strip() for ln in lines[index + 1 :]):
                    if not candidate:
                        if names:
                            break
                        continue
                    if not _VALUE_NAME.match(candidate):
                        break
                    names.append(candidate)
                return tuple(names) if names else None
        return None


class _Reader:
    def __init__(self, loaded: Loaded, source: str | None) -> None:
        self.loaded = loaded
        self.source = source
        self.warnings: list[FormatWarning] = []

    def warn(self, message: str, *path: Any) -> None:
        self.warnings.append(FormatWarning(message, self.loaded.line(*path)))

    def fields(self, name: str, data: dict[str, Any]) -> RubricValue:
        path = ("values", name)
        definition = data.get("definition")
        indicators = data.get("indicators")
        if indicators is None:
            indicator_list: tuple[str, ...] = ()
        elif isinstance(indicators, list):
            indicator_list = tuple(str(i) for i in indicators)
        else:
            self.warn(f"value `{name}`: `indicators` should be a list; read it as one item", *path)
            indicator_list = (str(indicators),)
        return RubricValue(
            name=name,
            definition="" if definition is None else str(definition),
            indicators=indicator_list,
            contrasts=self.contrasts(name, data.get("contrasts")),
            extra=tuple((k, v) for k, v in data.items() if k not in VALUE_FIELDS),
        )

    def contrasts(self, name: str, raw: Any) -> tuple[tuple[str, str], ...]:
        if raw is None:
            return ()
        items = [raw] if isinstance(raw, dict) else raw if isinstance(raw, list) else None
        if items is None:
            self.warn(f"value `{name}`: `contrasts` is not a list; ignored", "values", name)
            return ()
        pairs: list[tuple[str, str]] = []
        for item in items:
            if isinstance(item, dict):
                pairs += [(str(k), "" if v is None else str(v)) for k, v in item.items()]
            else:
                self.warn(
                    f"value `{name}`: contrast {item!r} is not a `- Value: explanation` entry; "
                    "ignored",
                    "values",
                    name,
                )
        return tuple(pairs)

    def values(self, raw: dict[Any, Any]) -> tuple[RubricValue, ...]:
        entries: list[tuple[str, dict[str, Any]]] = []
        repaired: str | None = None  # the empty value stray keys are being attached to
        for key, value in raw.items():
            name = str(key)
            if name in VALUE_FIELDS:
                if repaired is not None and name not in entries[-1][1]:
                    entries[-1][1][name] = value
                    self.warn(
                        f"value `{repaired}` has no fields and is followed by the key "
                        f"`{name}` at the level of the value names: attached it to "
                        f"`{repaired}` (fix: "
                        f"indent `{name}` under `{repaired}:`)",
                        "values",
                        key,
                    )
                else:
                    self.warn(
                        f"stray `{name}` key directly under `values` ignored (fix: indent it "
                        "under the value it belongs to)",
                        "values",
                        key,
                    )
                continue
            if value is None:
                entries.append((name, {}))
                repaired = name
                continue
            repaired = None
            if not isinstance(value, dict):
                self.warn(
                    f"value `{name}` should be a mapping (definition, indicators, contrasts); "
                    "read it as its definition",
                    "values",
                    key,
                )
                value = {"definition": value}
            entries.append((name, {str(k): v for k, v in value.items()}))
        result = tuple(self.fields(name, data) for name, data in entries)
        for value in result:
            if not value.definition.strip():
                self.warn(f"value `{value.name}` has no definition", "values", value.name)
        return result

    def disambiguation(self, raw: Any) -> tuple[DisambiguationRule, ...]:
        if raw is None:
            return ()
        if not isinstance(raw, dict):
            self.warn(
                "`disambiguation` should be a mapping of rule name -> rule; ignored",
                "disambiguation",
            )
            return ()
        rules: list[DisambiguationRule] = []
        for key, value in raw.items():
            name = str(key)
            if isinstance(value, dict):
                data = {str(k): v for k, v in value.items()}
                rule = data.get("rule")
                extra = tuple((k, v) for k, v in data.items() if k != "rule")
            else:
                rule, extra = value, ()
            if rule is None:
                self.warn(f"disambiguation rule `{name}` has no `rule` text", "disambiguation", key)
            rules.append(DisambiguationRule(name, "" if rule is None else str(rule), extra))
        return tuple(rules)

    def check_names(self, rubric: Rubric) -> None:
        defined = set(rubric.value_names)
        for value in rubric.values:
            for other, _ in value.contrasts:
                if other not in defined:
                    self.warn(
                        f"value `{value.name}` contrasts with `{other}`, which the rubric does "
                        "not define",
                        "values",
                        value.name,
                        "contrasts",
                    )
        for rule in rubric.disambiguation:
            for other in rule.value_names:
                if other not in defined:
                    self.warn(
                        f"disambiguation rule `{rule.name}` names `{other}`, which the rubric "
                        "does not define",
                        "disambiguation",
                        rule.name,
                    )
        allowed = rubric.allowed_value_names
        if allowed is not None and set(allowed) != defined:
            missing = sorted(defined - set(allowed))
            unknown = sorted(set(allowed) - defined)
            self.warn(
                "the allowed value names in `scoring rules` differ from `values`"
                + (f"; not listed: {', '.join(missing)}" if missing else "")
                + (f"; not defined: {', '.join(unknown)}" if unknown else ""),
                SCORING_RULES,
            )


def parse_rubric(text: str, source: str | None = None) -> tuple[Rubric, list[FormatWarning]]:
    """Parse a values rubric; quirks of the file come back as warnings, never as crashes."""
    text = text.lstrip("\ufeff")
    loaded = load(text, source)
    data = loaded.data
    if not isinstance(data, dict):
        raise FormatError(
            "a values rubric must be a YAML mapping",
            source=source,
            line=1,
            hint="see config/values_rubric.yaml of the CLI for the layout",
        )
    raw_values = data.get("values")
    if not isinstance(raw_values, dict):
        raise FormatError(
            "the rubric has no `values` mapping",
            source=source,
            line=loaded.line("values") or 1,
            hint="add `values:` with one `Name:` entry (definition, indicators) per value",
        )
    reader = _Reader(loaded, source)
    rubric = Rubric(
        values=reader.values(raw_values),
        disambiguation=reader.disambiguation(data.get("disambiguation")),
        sections=tuple(
            (str(k), v) for k, v in data.items() if k not in ("values", "disambiguation")
        ),
        section_order=tuple(str(k) for k in data),
        header_comment=header_comment(text),
    )
    reader.check_names(rubric)
    return rubric, reader.warnings


def _value_mapping(value: RubricValue) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if value.definition:
        out["definition"] = value.definition
    if value.indicators:
        out["indicators"] = list(value.indicators)
    if value.contrasts:
        out["contrasts"] = [{other: text} for other, text in value.contrasts]
    for key, item in value.extra:
        out.setdefault(key, item)
    return out


def rubric_mapping(rubric: Rubric) -> dict[str, Any]:
    """The rubric as the mapping its YAML file holds, sections in file order."""
    sections: dict[str, Any] = dict(rubric.sections)
    sections["values"] = {v.name: _value_mapping(v) for v in rubric.values}
    if rubric.disambiguation or "disambiguation" in rubric.section_order:
        sections["disambiguation"] = {
            r.name: {"rule": r.rule, **{k: v for k, v in r.extra if k != "rule"}}
            for r in rubric.disambiguation
        }
    return _ordered(sections, rubric.section_order)


def serialize_rubric(rubric: Rubric) -> str:
    """The rubric as YAML (header comment kept, other comments lost, quirks repaired)."""
    return render_header_comment(rubric.header_comment) + dump_readable(rubric_mapping(rubric))


def _ordered(mapping: dict[Any, Any], order: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """`mapping` with the keys named in `order` first, in that order, then the rest."""
    items = {str(k): v for k, v in mapping.items()}
    keys = [k for k in order if k in items]
    keys += [k for k in items if k not in keys]
    return {k: items[k] for k in keys}


def _jsonable(value: Any) -> Any:
    """Plain JSON types only: YAML may have given dates, tuples or non-string keys."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime.date | datetime.datetime):
        return value.isoformat()
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


__all__ = [
    "DisambiguationRule",
    "Rubric",
    "RubricValue",
    "parse_rubric",
    "rubric_mapping",
    "serialize_rubric",
]
