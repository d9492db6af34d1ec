"""``churn``: a small live heap and a lot of short-lived cyclic garbage per request.

What lives: next to nothing: the app and a few hundred templates of element names and attributes.

What dies, when: ``/parse`` parses a generated document into a tree of ``nodes`` elements
(default 1,200): every element has a parent link, a list of children, an attribute dict holding a
list of classes: reference cycles, some 5,000 tracked objects per request. The tree is rendered,
summarised, and dropped when the request ends. ``/json`` builds a nested document of dicts and
lists whose entries point back at their parents (again cycles), walks it and drops it.

What CPython's collector does with it: the young generation fills every 700 net allocations, so a
request runs several young collections while its tree is being built; the part of the tree alive
at that moment is promoted to the middle generation, and some of it to the old one, where it dies
a moment later. Young collections dominate (hundreds per second, each scanning the live part of a
tree); full collections are frequent but cheap, since the old generation holds little but
garbage from the last few requests.

Which recipe should win: thresholds. A larger threshold0 (``threshold:50000,20,20``) lets whole
trees die before any collection sees them, so each collection finds mostly garbage: fewer
collections, less scanning in all. ``freeze`` does nothing useful (there is no big live heap to
freeze); a periodic schedule with the collector off lets garbage pile up between collections,
larger pauses for no gain.

Options (``create_app`` keywords, ``serve --set KEY=VALUE``): ``nodes`` (elements per parsed
document), ``fields`` (entries per JSON document).
"""

from __future__ import annotations

import random
from typing import Any

from fastapi import FastAPI

from ._base import new_app, positive

DEFAULT_PIECES = 48
DEFAULT_NODES = 25
DEFAULT_FIELDS = 20
TAGS = ("div", "span", "p", "a", "li", "ul", "section", "em", "strong", "img")
CLASSES = tuple(f"c{i}" for i in range(40))


class Element:
    __slots__ = ("tag", "parent", "children", "attrs", "text")

    def __init__(self, tag: str, parent: Element | None, attrs: dict[str, Any], text: str) -> None:
        self.tag = tag
        self.parent = parent  # the back-reference that makes every tree a cycle
        self.children: list[Element] = []
        self.attrs = attrs
        self.text = text
        if parent is not None:
            parent.children.append(self)

    def render(self, out: list[str]) -> None:
        classes = " ".join(self.attrs["class"])
        out.append(f'<{self.tag} id="{self.attrs["id"]}" class="{classes}">{self.text}')
        for child in self.children:
            child.render(out)
        out.append(f"</{self.tag}>")


def parse(nodes: int, rnd: random.Random) -> Element:
    """A document of ``nodes`` elements, as a parser would build it: depth-first, with a stack."""
    root = Element("html", None, {"id": "root", "class": ["page"]}, "")
    stack = [root]
    for i in range(nodes - 1):
        parent = stack[-1]
        el = Element(
            TAGS[rnd.randrange(len(TAGS))],
            parent,
            {"id": f"n{i}", "class": [CLASSES[rnd.randrange(40)], CLASSES[i % 40]]},
            f"text {i}" if i % 3 else "",
        )
        r = rnd.random()
        if r < 0.3 and len(stack) < 30:
            stack.append(el)
        elif r < 0.55 and len(stack) > 1:
            stack.pop()
    return root


def build_json(fields: int, rnd: random.Random) -> dict[str, Any]:
    """A nested document whose objects point back at their parents."""
    doc: dict[str, Any] = {"kind": "order", "lines": [], "parent": None}
    section = doc
    for i in range(fields):
        entry = {"n": i, "sku": f"sku-{rnd.randrange(10_000)}", "qty": 1 + i % 4, "tags": [i % 7]}
        entry["parent"] = section
        if i % 20 == 0:
            section = {"kind": "section", "lines": [], "parent": doc}
            doc["lines"].append(section)
        section["lines"].append(entry)
    return doc


def walk_json(node: dict[str, Any]) -> int:
    total = node.get("qty", 0)
    for child in node.get("lines", ()):
        total += walk_json(child)
    return total


def create_app(
    pieces: int = DEFAULT_PIECES, nodes: int = DEFAULT_NODES, fields: int = DEFAULT_FIELDS
) -> FastAPI:
    pieces = positive("pieces", pieces)
    nodes = positive("nodes", nodes)
    fields = positive("fields", fields)
    rnd = random.Random(4)
    app = new_app("NeuroGC workload: churn")

    @app.get("/parse")
    async def parse_page() -> dict[str, Any]:
        size = 0
        counts: dict[str, int] = {}
        for _ in range(pieces):
            root = parse(nodes, rnd)
            out: list[str] = []
            root.render(out)
            size += len("".join(out))
            stack = [root]
            while stack:
                el = stack.pop()
                counts[el.tag] = counts.get(el.tag, 0) + 1
                stack.extend(el.children)
        return {"bytes": size, "elements": sum(counts.values()), "tags": counts}

    @app.get("/json")
    async def json_doc() -> dict[str, Any]:
        sections = quantity = 0
        for _ in range(pieces):
            doc = build_json(fields, rnd)
            sections += len(doc["lines"])
            quantity += walk_json(doc)
        return {"sections": sections, "quantity": quantity}

    return app
