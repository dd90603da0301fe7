"""Reading a YAML document safely into plain values, remembering the line of every field.

Aliases (``*name``) repeat what an anchor (``&name``) holds, so a small file can stand for an enormous document
("billion laughs") or an endless one (an alias inside its own anchor). The composed node tree is measured
before any value is built, each distinct node once: a document that refers to itself, nests deeper than
``MAX_DEPTH`` levels or expands to more than ``MAX_VALUES`` values is refused. Merge keys (``<<: *defaults``)
work as YAML defines them: the mapping's own keys win over merged ones, and of several merged mappings
(``<<: [*a, *b]``) the earlier wins. A key written twice in one mapping is a mistake.

Every mistake raises ExperimentError naming the file, the field and its line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from tuner.errors import ExperimentError

FieldPath = tuple[str | int, ...]

MAX_VALUES = 1_000_000
"""Mappings, lists and scalars a document may hold, each counted as often as aliases repeat it."""
MAX_DEPTH = 64
"""Levels of mappings and lists within one another."""
MERGE_TAG = "tag:yaml.org,2002:merge"
INT_TAG = "tag:yaml.org,2002:int"
FLOAT_TAG = "tag:yaml.org,2002:float"
OCTAL = re.compile(r"[-+]?0[0-7]+")
_PLAIN = SafeConstructor()

try:
    from yaml.cyaml import CParser  # type: ignore[attr-defined]
except ImportError:  # PyYAML built without libyaml
    _Loader: type[yaml.SafeLoader] = yaml.SafeLoader
else:

    class _Loader(Composer, CParser, SafeConstructor, Resolver):  # type: ignore[no-redef]
        """SafeLoader with libyaml's parser, several times faster. The composer stays PyYAML's: libyaml's
        recurses in C and crashes the process on deeply nested input, where this one raises RecursionError."""

        def __init__(self, stream: str):
            CParser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)


def field_name(path: FieldPath) -> str:
    """``kernels[0].parameters.TILE_WIDTH``: a field's path as a reader writes it."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


@dataclass
class Document:
    """A document's values and the line where each field stands."""

    file: str
    value: Any = None
    """The document's values (mappings as dicts, lists, scalars); None for a document without any."""
    lines: dict[FieldPath, int] = field(default_factory=dict)

    def error(self, path: FieldPath, message: str) -> ExperimentError:
        """A mistake at ``path``, placed at the line of the field or of the nearest field around it."""
        line = next((self.lines[path[:i]] for i in range(len(path), -1, -1) if path[:i] in self.lines), None)
        return ExperimentError(self.file, field_name(path), message, line)


def read_document(text: str, file: str) -> Document:
    """The values of the YAML document ``text``; ``file`` names it in error messages."""
    document = Document(file)
    loader = None
    try:
        loader = _Loader(text)
        node = loader.get_single_node()
        if node is not None:
            _Extent(document).measure(node, (), 0)
            document.value = _Builder(document, loader).value(node, ())
    except yaml.reader.ReaderError as exc:
        raise _forbidden_character(text, file, exc) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if "nesting depth" in problem:  # the libyaml of PyYAML 6.0.4 and later refuses it while scanning
            raise _too_deep(file) from None
        raise ExperimentError(file, "", f"is not valid YAML ({problem})", mark.line + 1 if mark else None) from None
    except RecursionError:
        raise _too_deep(file) from None
    finally:
        if loader is not None:
            loader.dispose()
    return document


def _too_deep(file: str) -> ExperimentError:
    return ExperimentError(file, "", f"nests its lists and mappings far deeper than the {MAX_DEPTH} levels an "
                                     f"experiment may have")


def _forbidden_character(text: str, file: str, exc: yaml.reader.ReaderError) -> ExperimentError:
    character = chr(exc.character) if isinstance(exc.character, int) else str(exc.character)
    position = text.find(character)
    line = text.count("\n", 0, position) + 1 if position >= 0 else None
    column = position - text.rfind("\n", 0, position) if position >= 0 else None
    where = f" in column {column}" if column else ""
    return ExperimentError(file, "", f"holds the control character U+{ord(character):04X}{where}, which YAML does "
                                     f"not allow in a file; remove it", line)


def _surprising_number(node: yaml.Node) -> str | None:
    """Why a plain number is refused: YAML 1.1 (PyYAML's) reads ``0100`` as octal (64) and ``1:04`` as base 60
    (64), which nobody writing a size or a tile means; None for any other scalar."""
    if node.tag not in (INT_TAG, FLOAT_TAG) or not isinstance(node, yaml.ScalarNode):
        return None
    text = node.value.replace("_", "")
    reading = SafeConstructor.construct_yaml_int if node.tag == INT_TAG else SafeConstructor.construct_yaml_float
    if ":" in text:
        return (f"holds {node.value}, which YAML reads as a base-60 number ({reading(_PLAIN, node)}); write the "
                f"number itself, or quote it where text is meant")
    if node.tag == INT_TAG and OCTAL.fullmatch(text):
        return (f"holds {node.value}, which YAML reads as an octal number ({reading(_PLAIN, node)}); write it "
                f"without the leading zero, or quote it where text is meant")
    return None


def _key_text(node: yaml.Node) -> str:
    return str(node.value) if isinstance(node, yaml.ScalarNode) else "?"


def _children(node: yaml.Node, path: FieldPath) -> list[tuple[yaml.Node, FieldPath]]:
    """The nodes inside ``node`` with the path of the field each one is (a key counts at its mapping's path)."""
    if isinstance(node, yaml.SequenceNode):
        return [(item, (*path, i)) for i, item in enumerate(node.value)]
    if isinstance(node, yaml.MappingNode):
        children = []
        for key, value in node.value:
            merged = key.tag == MERGE_TAG
            children += [(key, path), (value, path if merged else (*path, _key_text(key)))]
        return children
    return []


class _Extent:
    """The values and depth every node expands to through aliases, each distinct node measured once."""

    def __init__(self, document: Document):
        self.document = document
        self.known: dict[int, tuple[int, int]] = {}
        """id(node) -> (values, levels below it)."""
        self.open: set[int] = set()
        """The nodes being measured: those around the current one."""

    def measure(self, node: yaml.Node, path: FieldPath, depth: int) -> tuple[int, int]:
        self.document.lines.setdefault(path, node.start_mark.line + 1)
        if depth > MAX_DEPTH:
            raise self.document.error(path, f"nests deeper than {MAX_DEPTH} levels of lists and mappings")
        key = id(node)
        if key in self.open:
            raise self.document.error(path, "refers to itself: an alias (*name) stands inside the value of its "
                                            "own anchor (&name), so the value would never end")
        extent = self.known.get(key)
        if extent is None:
            self.open.add(key)
            values, below = 1, 0
            for child, child_path in _children(node, path):
                child_values, child_below = self.measure(child, child_path, depth + 1)
                values, below = values + child_values, max(below, child_below + 1)
            self.open.discard(key)
            extent = self.known[key] = (values, below)
        if depth + extent[1] > MAX_DEPTH:
            raise self.document.error(path, f"nests deeper than {MAX_DEPTH} levels of lists and mappings "
                                            f"(through its aliases)")
        if extent[0] > MAX_VALUES:
            raise self.document.error(path, f"expands to {extent[0]:,} values through its aliases (*name), more "
                                            f"than the {MAX_VALUES:,} an experiment may hold")
        return extent


class _Builder:
    """Plain values from a measured node tree, recording each field's line."""

    def __init__(self, document: Document, loader: Any):
        self.document, self.loader = document, loader
        self.lines = document.lines

    def value(self, node: yaml.Node, path: FieldPath) -> Any:
        self.lines[path] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            return [self.value(item, (*path, i)) for i, item in enumerate(node.value)]
        return self._scalar(node, path)

    def _scalar(self, node: yaml.Node, path: FieldPath) -> Any:
        surprise = _surprising_number(node)
        if surprise is not None:
            raise self.document.error(path, surprise)
        try:
            return self.loader.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError) as exc:  # e.g. an unknown tag, 2001-02-30, an integer of 5000 digits
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise self.document.error(path, f"holds a value YAML cannot read ({problem})") from None

    def _key(self, node: yaml.Node, path: FieldPath) -> str:
        if not isinstance(node, yaml.ScalarNode):
            raise self.document.error(path, "keys must be text, found a list or mapping")
        key = self._scalar(node, path)
        if not isinstance(key, str):
            raise self.document.error(path, f"keys must be text, found {key!r}")
        return key

    def _mapping(self, node: yaml.MappingNode, path: FieldPath) -> dict[str, Any]:
        merges = [(k, v) for k, v in node.value if k.tag == MERGE_TAG]
        if len(merges) > 1:
            self.lines[(*path, "<<")] = merges[1][0].start_mark.line + 1
            raise self.document.error((*path, "<<"), "appears twice in the same mapping; to merge several "
                                                     "mappings, list them: <<: [*first, *second]")
        result: dict[str, Any] = {}
        for _, merged in merges:
            sources = merged.value if isinstance(merged, yaml.SequenceNode) else [merged]
            if not all(isinstance(source, yaml.MappingNode) for source in sources):
                self.lines[(*path, "<<")] = merged.start_mark.line + 1
                raise self.document.error((*path, "<<"), "a merge key takes a mapping or a list of mappings "
                                                         "(such as <<: *defaults)")
            for source in reversed(sources):  # the earlier of several merged mappings wins
                result.update(self.value(source, path))
        self.lines[path] = node.start_mark.line + 1
        own: set[str] = set()
        for key_node, value_node in node.value:
            if key_node.tag == MERGE_TAG:
                continue
            key = self._key(key_node, path)
            if key in own:
                self.lines[(*path, key)] = key_node.start_mark.line + 1
                raise self.document.error((*path, key), "appears twice in the same mapping")
            own.add(key)
            result[key] = self.value(value_node, (*path, key))
        return result
