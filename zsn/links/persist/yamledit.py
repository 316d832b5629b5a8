"""Surgical edits of a block-style YAML file (netplan's), everything else byte-exact.

PyYAML's composer gives every node its position in the text; an edit replaces the
lines (or, for inline values, the characters) of one node and nothing else, so
comments, blank lines, quoting and the order of everything untouched stay as they
were. New keys take the indentation of their siblings.

Text is not meaning: an anchor shared through aliases (``eth1: &e {...}`` and
``eth2: *e``), a merge key (``<<: *base``) or a flow collection can make an edit of
one place change another, or land in the wrong block. So every edit is checked as
data: the document read back after it must equal the document read before with just
the intended change made. Anything else refuses the edit (`UnsafeEdit`), naming the
line of the construct that made the difference. The same expected document is the
document's `YamlDocument.intent` (`zsn.meaning`), which the plan's `FileEdit` reads
back once more with `YAML` before anything is written. `inline` and `block` are the
format's one renderer: no key or string value holds a control character or a line
break.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import yaml

from zsn.errors import ParseError, ValidationError
from zsn.meaning import Entry, Format, Intent, Reading, Section, leaves, one_line

Path = tuple[str, ...]
_PLAIN_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+\-/]*")


def _load(text: str) -> Any:
    return yaml.load(text, Loader=yaml.SafeLoader)


def inline(value: Any) -> str:
    """`value` as one line of YAML: plain where that reads back the same, else quoted."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(inline(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{inline(k)}: {inline(v)}" for k, v in value.items()) + "}"
    text = one_line(str(value), "a YAML value")
    if _PLAIN_RE.fullmatch(text) and _load(text) == text:
        return text
    return json.dumps(text)


def block(mapping: dict[str, Any], indent: int, step: int) -> list[str]:
    """A mapping as block-style lines (nested mappings as blocks, the rest inline)."""
    lines = []
    for key, value in mapping.items():
        if isinstance(value, dict) and value:
            lines.append(f"{' ' * indent}{inline(key)}:\n")
            lines.extend(block(value, indent + step, step))
        else:
            lines.append(f"{' ' * indent}{inline(key)}: {inline(value)}\n")
    return lines


def _last_line(node: yaml.Node) -> int:
    """The last line (0-based) holding part of `node`."""
    if isinstance(node, yaml.ScalarNode) or getattr(node, "flow_style", False):
        line = node.end_mark.line
        if node.end_mark.column == 0 and line > node.start_mark.line:
            line -= 1  # a block scalar ends at the start of the next line
        return int(line)
    if not node.value:
        return int(node.start_mark.line)
    last = node.value[-1]
    return _last_line(last[1] if isinstance(node, yaml.MappingNode) else last)


def _refuse_duplicate_keys(node: yaml.Node | None, source: str) -> None:
    """A key twice in one mapping: YAML readers keep the last, an edit would go to the
    first; netplan refuses such a file, and so does zsn."""
    pending = [node] if node is not None else []
    visited: set[int] = set()
    while pending:
        current = pending.pop()
        if id(current) in visited:  # an alias: the same node again (maybe recursive)
            continue
        visited.add(id(current))
        if isinstance(current, yaml.MappingNode):
            seen: set[object] = set()
            for key, value in current.value:
                marker = key.value if isinstance(key, yaml.ScalarNode) else id(key)
                if marker in seen:
                    raise ParseError(f"the key {str(marker)!r} is there twice",
                                     key.start_mark.line + 1, source)
                seen.add(marker)
                pending.append(value)
        elif isinstance(current, yaml.SequenceNode):
            pending.extend(current.value)


class UnsafeEdit(ValidationError):
    """An edit whose text would not mean what was asked (see the module docstring)."""


def _plain(value: Any) -> Any:
    """`value` as YAML reads it back: tuples are lists."""
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _with_set(data: Any, path: Path, value: Any) -> Any:
    """`data` with ``path`` holding `value`, as `YamlDocument.set` means it (mappings
    made on the way, a mapping merged key by key)."""
    if not path:
        if isinstance(value, dict) and isinstance(data, dict):
            merged = dict(data)
            for key, item in value.items():
                merged[key] = _with_set(merged.get(key), (), item)
            return merged
        return _plain(value)
    result = dict(data) if isinstance(data, dict) else {}
    result[path[0]] = _with_set(result.get(path[0]), path[1:], value)
    return result


def _with_deleted(data: Any, path: Path, keep: int) -> Any:
    """`data` without ``path``, mappings it leaves empty dropped down to `keep` levels,
    as `YamlDocument.delete` means it."""
    result = copy.deepcopy(data)
    parents = [result]
    for key in path[:-1]:
        parents.append(parents[-1][key])
    level = len(path) - 1
    while level > keep and len(parents[level]) == 1:
        level -= 1
    del parents[level][path[level]]
    return result


def _indirections(text: str) -> list[tuple[int, str]]:
    """Where the text shares or merges nodes, or writes a collection inline: (line,
    what), in order."""
    found: list[tuple[int, str]] = []
    try:
        events = list(yaml.parse(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError:
        return found
    for event in events:
        line = event.start_mark.line + 1 if event.start_mark is not None else 0
        anchor = getattr(event, "anchor", None)
        if isinstance(event, yaml.AliasEvent):
            found.append((line, f"an alias (*{anchor})"))
        elif anchor:
            found.append((line, f"an anchor (&{anchor})"))
        elif isinstance(event, yaml.ScalarEvent) and event.value == "<<" and event.implicit[0]:
            found.append((line, "a merge key (<<)"))
        elif isinstance(event, yaml.CollectionStartEvent) and event.flow_style:
            found.append((line, "a collection written inline"))
    return found


def _is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null"


class YamlDocument:
    """One YAML file's text with `set` and `delete` by key path."""

    def __init__(self, text: str, source: str = "YAML", step: int = 2):
        self.text = text
        self.source = source
        self.step = step
        self.intent = Intent(YAML)
        """What the edits since `text` mean: the whole document as data (`zsn.meaning`)."""
        root = self._root()
        _refuse_duplicate_keys(root, source)
        if isinstance(root, yaml.MappingNode) and root.value and not root.flow_style:
            first_value = root.value[0][1]
            if isinstance(first_value, yaml.MappingNode) and first_value.value \
                    and not first_value.flow_style:
                self.step = first_value.value[0][0].start_mark.column or step

    def _root(self) -> yaml.Node | None:
        try:
            return yaml.compose(self.text, Loader=yaml.SafeLoader)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark is not None else None
            reason = str(getattr(exc, "problem", None) or exc).splitlines()[0]
            raise ParseError(reason, line, self.source) from exc
        except RecursionError:
            raise ParseError("nested too deeply", None, self.source) from None

    def data(self) -> Any:
        return _load(self.text)

    @property
    def _lines(self) -> list[str]:
        lines = self.text.splitlines(keepends=True)
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        return lines

    @staticmethod
    def _entry(node: yaml.Node, key: str) -> tuple[yaml.Node, yaml.Node] | None:
        if not isinstance(node, yaml.MappingNode):
            return None
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
                return key_node, value_node
        return None

    def _check_meaning(self, before_text: str, expected: Any, what: str) -> None:
        """Refuse (`UnsafeEdit`, text restored) an edit whose result does not read back
        as `expected`: the document before it with only the intended change."""
        try:
            if _load(self.text) == expected:
                return
        except yaml.YAMLError:
            pass  # e.g. an alias whose anchor went: not what was asked either
        after_text, self.text = self.text, before_text
        places = _indirections(before_text) or _indirections(after_text)
        line, construct = places[0] if places else (None, "the file's layout")
        where = f"{self.source}:{line}: " if line else f"{self.source}: "
        raise UnsafeEdit(f"{where}{what} would change more of the file's meaning than "
                         f"asked, because of {construct}; zsn does not edit this file "
                         "(rewrite that part without anchors, aliases or merge keys, or "
                         "edit it by hand)")

    # -- set -----------------------------------------------------------------------
    def set(self, path: Path, value: Any) -> None:
        """Make ``path`` hold `value` (creating the mappings on the way); refused when
        the text would then mean more than that (`UnsafeEdit`)."""
        before_text = self.text
        try:
            expected = _with_set(_load(before_text), path, value)
        except yaml.YAMLError as exc:  # composed, but not a document of values (a list as a key)
            raise ParseError(str(getattr(exc, "problem", None) or exc).splitlines()[0], None,
                             self.source) from None
        self._set(path, value)
        self._check_meaning(before_text, expected, f"setting {'.'.join(path)}")
        self.intent.whole(_meaning(expected))

    def _set(self, path: Path, value: Any) -> None:
        root = self._root()
        if root is None or _is_null(root):
            nested: Any = value
            for key in reversed(path):
                nested = {key: nested}
            self.text = (self.text if self.text.endswith("\n") or not self.text
                         else self.text + "\n") + "".join(block(nested, 0, self.step))
            return
        node: yaml.Node = root
        parent_key: yaml.Node | None = None
        for depth, key in enumerate(path):
            if _is_null(node) and parent_key is not None:
                self._fill_null(parent_key, node, path[depth:], value)
                return
            if not isinstance(node, yaml.MappingNode):
                raise ParseError(f"'{'.'.join(path[:depth])}' is not a mapping",
                                 node.start_mark.line + 1, self.source)
            entry = self._entry(node, key)
            if entry is None:
                self._insert(node, parent_key, path[depth:], value)
                return
            parent_key, child = entry
            if depth == len(path) - 1:
                self._replace(parent_key, child, value)
                return
            node = child

    def _nested(self, keys: Path, value: Any) -> dict[str, Any]:
        nested: Any = value
        for key in reversed(keys[1:]):
            nested = {key: nested}
        return {keys[0]: nested}

    def _insert(self, mapping: yaml.MappingNode, owner_key: yaml.Node | None, keys: Path,
                value: Any) -> None:
        addition = self._nested(keys, value)
        if mapping.flow_style:
            current = _load(self._span(mapping)) or {}
            current.update(addition)
            self._replace_span(mapping, inline(current))
            return
        indent = mapping.value[0][0].start_mark.column if mapping.value else (
            (owner_key.start_mark.column if owner_key is not None else 0) + self.step)
        lines = self._lines
        at = _last_line(mapping) + 1
        lines[at:at] = block(addition, indent, self.step)
        self.text = "".join(lines)

    def _fill_null(self, key: yaml.Node, null: yaml.Node, keys: Path, value: Any) -> None:
        """``name:`` with nothing after it: put a block mapping under it."""
        lines = self._lines
        at = key.start_mark.line + 1
        lines[at:at] = block(self._nested(keys, value), key.start_mark.column + self.step,
                             self.step)
        self.text = "".join(lines)

    def _span(self, node: yaml.Node) -> str:
        return self.text[node.start_mark.index:node.end_mark.index]

    def _replace_span(self, node: yaml.Node, replacement: str) -> None:
        self.text = (self.text[:node.start_mark.index] + replacement
                     + self.text[node.end_mark.index:])

    def _replace(self, key: yaml.Node, old: yaml.Node, value: Any) -> None:
        if isinstance(value, dict):
            # Only leaves are replaced whole; a mapping is merged key by key.
            for sub_key, sub_value in value.items():
                self._set(self._path_of(key) + (sub_key,), sub_value)
            return
        if isinstance(old, yaml.ScalarNode) and not _is_null(old) or \
                getattr(old, "flow_style", False):
            self._replace_span(old, inline(value))
            return
        if isinstance(old, yaml.SequenceNode) and isinstance(value, list | tuple) and value:
            indent = old.start_mark.column
            first, last = old.start_mark.line, _last_line(old)
            lines = self._lines
            lines[first:last + 1] = [f"{' ' * indent}- {inline(item)}\n" for item in value]
            self.text = "".join(lines)
            return
        # A block collection or a bare null replaced by one inline value: rewrite the
        # key's line (keeping what stands before the key) and drop the old block.
        lines = self._lines
        first, last = key.start_mark.line, _last_line(old)
        head = lines[first][:key.end_mark.column]
        lines[first:last + 1] = [f"{head}: {inline(value)}\n"]
        self.text = "".join(lines)

    def _path_of(self, target: yaml.Node) -> Path:
        def walk(node: yaml.Node, trail: Path) -> Path | None:
            if isinstance(node, yaml.MappingNode):
                for key_node, value_node in node.value:
                    here = (*trail, str(key_node.value))
                    if key_node is target or key_node.start_mark.index == \
                            target.start_mark.index:
                        return here
                    found = walk(value_node, here)
                    if found is not None:
                        return found
            return None

        root = self._root()
        found = walk(root, ()) if root is not None else None
        if found is None:
            raise ParseError("lost track of a key while editing", None, self.source)
        return found

    # -- delete --------------------------------------------------------------------
    def delete(self, path: Path, keep: int = 1) -> bool:
        """Remove ``path``; a mapping left empty goes too, up to `keep` levels (so
        ``network:`` stays). Returns False when there was nothing to remove; refused
        when the text would then mean more than that (`UnsafeEdit`)."""
        before_text = self.text
        if not self._delete(path, keep):
            return False
        expected = _with_deleted(_load(before_text), path, keep)
        self._check_meaning(before_text, expected, f"removing {'.'.join(path)}")
        self.intent.whole(_meaning(expected))
        return True

    def _delete(self, path: Path, keep: int) -> bool:
        parents: list[tuple[yaml.Node, yaml.Node]] = []
        node = self._root()
        for step in path:
            if node is None:
                return False
            entry = self._entry(node, step)
            if entry is None:
                return False
            parents.append((node, entry[0]))
            node = entry[1]
        level = len(path) - 1
        mapping, key_node = parents[level]
        while level > keep and isinstance(mapping, yaml.MappingNode) and len(mapping.value) == 1:
            level -= 1
            mapping, key_node = parents[level]
        value = self._entry(mapping, str(key_node.value))
        assert value is not None
        if isinstance(mapping, yaml.MappingNode) and mapping.flow_style:
            current = _load(self._span(mapping))
            current.pop(str(key_node.value), None)
            self._replace_span(mapping, inline(current))
            return True
        lines = self._lines
        del lines[key_node.start_mark.line:_last_line(value[1]) + 1]
        self.text = "".join(lines)
        return True


def _meaning(data: Any) -> list[tuple[str, list[tuple[str, str]]]]:
    """A document as one section of its leaves (`zsn.meaning.leaves`)."""
    return [("", leaves(data))]


class _Yaml:
    """A YAML file as zsn reads it (`zsn.meaning.Format`): its data, leaf by leaf."""

    name = "YAML"

    def key(self, key: str) -> str:
        return key

    def read(self, text: str, source: str) -> Reading:
        from zsn.decode import from_yaml

        data = from_yaml(text, Any, source)
        return [Section(header, [Entry(k, v) for k, v in items])
                for header, items in _meaning(data)]


YAML: Format = _Yaml()
