"""``cycle-leak``: long-lived cyclic structures with big payloads that die slowly.

What lives: a document store holding the ``documents`` most recent documents (default 600),
filled at start-up. A document is an object graph with cycles (the document and its revisions
point at each other, every section points back at its document, the access-control entry too)
and its latest revision holds a ``payload`` of bytes (default 64 KiB): about 105 tracked objects
and 64 KiB of memory per document, some 38 MiB in all.

What dies, when: ``/upload`` (half the requests) stores a new document and retires the oldest
one; ``/doc`` reads a random document (word statistics over a slice of its text, its outline).
At the suite's load (~160 req/s, 80 uploads/s) a document lives about 8 s before it is retired,
long after it was promoted to the old generation; retired, it is cyclic garbage, and its 64 KiB
come back only when a full collection frees it.

What CPython's collector does with it: every upload keeps ~105 tracked objects, so the young and
middle collections run steadily and promote the documents; CPython starts a full collection
after ten middle collections (some 70,000 tracked objects kept) once the promoted objects reach a
quarter of the old generation: here every ~700 uploads, 80-95 ms each, freeing some 800 retired
documents (~83,000 objects). RSS saw-tooths and stays bounded.

Which recipe should win: a policy that still runs full collections now and then, timed well.
``freeze`` moves the store to the permanent generation; every document alive at freeze time is
retired within seconds and never freed (measured: peak RSS 1.3x the default's within 30 s). With
the collector off (``gc-off``), or thresholds so high that full collections never come
(``threshold:50000,500,1000``), nothing retired is ever freed: RSS grows by ~5 MiB/s for as long
as the service runs. ``periodic`` keeps it bounded.

Options (``create_app`` keywords, ``serve --set KEY=VALUE``): ``documents``, ``payload`` (bytes
per document), ``sections`` (per document), ``read`` (bytes of text analysed per ``/doc``).
"""

from __future__ import annotations

import collections
import random
from typing import Any

from fastapi import FastAPI

from ._base import new_app, positive

DEFAULT_DOCUMENTS = 600
DEFAULT_PAYLOAD = 64 * 1024
DEFAULT_SECTIONS = 96
DEFAULT_READ = 65_536
WORDS = (
    b"garbage collector generation reference cycle object heap pause freeze threshold young old "
    b"request latency memory payload document revision section owner store retire promote scan "
).split()


class Revision:
    __slots__ = ("document", "number", "parent", "payload", "author")

    def __init__(self, document: Document, number: int, parent: Revision | None, payload: bytes):
        self.document = document  # cycle: document.revisions holds self
        self.number = number
        self.parent = parent
        self.payload = payload
        self.author = f"author-{number % 50}"


class Section:
    __slots__ = ("document", "title", "offset", "length", "notes")

    def __init__(self, document: Document, i: int, offset: int, length: int) -> None:
        self.document = document  # cycle: document.sections holds self
        self.title = f"Section {i}"
        self.offset = offset
        self.length = length
        self.notes: list[str] = [f"note {i}"]


class Acl:
    __slots__ = ("document", "readers")

    def __init__(self, document: Document, owner: int) -> None:
        self.document = document  # cycle: document.acl is self
        self.readers = [owner, owner + 1]


class Document:
    __slots__ = ("id", "title", "revisions", "sections", "meta", "acl")

    def __init__(self, did: int, payload: bytes, sections: int) -> None:
        self.id = did
        self.title = f"document {did}"
        draft = Revision(self, 1, None, b"")
        self.revisions = [draft, Revision(self, 2, draft, payload)]
        step = max(len(payload) // sections, 1)
        self.sections = [Section(self, i, i * step, step) for i in range(sections)]
        self.meta: dict[str, Any] = {"size": len(payload), "tags": [did % 7, did % 11]}
        self.acl = Acl(self, did % 100)

    @property
    def payload(self) -> bytes:
        return self.revisions[-1].payload


class DocumentStore:
    def __init__(self, documents: int, payload: int, sections: int, read: int) -> None:
        self.capacity = positive("documents", documents)
        self.payload_bytes = positive("payload", payload)
        self.sections = positive("sections", sections)
        self.read = positive("read", read)
        self.docs: collections.deque[Document] = collections.deque()
        self.next_id = 0
        self.retired = 0
        self.rnd = random.Random(5)
        self.corpus = b""

    def build(self) -> None:
        rnd = random.Random(6)
        words = [WORDS[rnd.randrange(len(WORDS))] for _ in range(self.payload_bytes // 4)]
        self.corpus = b" ".join(words)[: self.payload_bytes]
        for _ in range(self.capacity):
            self.upload()

    def release(self) -> None:
        self.docs.clear()

    def upload(self) -> Document:
        """A new document (its own copy of the text, rotated) and the oldest one retired."""
        did = self.next_id
        self.next_id += 1
        k = (did * 7919) % len(self.corpus)
        doc = Document(did, self.corpus[k:] + self.corpus[:k], self.sections)
        self.docs.append(doc)
        while len(self.docs) > self.capacity:
            self.docs.popleft()
            self.retired += 1
        return doc

    def read_doc(self) -> dict[str, Any]:
        doc = self.docs[self.rnd.randrange(len(self.docs))]
        text = doc.payload
        start = self.rnd.randrange(max(len(text) - self.read, 1))
        counts: dict[bytes, int] = {}
        pairs: dict[tuple[bytes, bytes], int] = {}
        previous = b""
        for word in text[start : start + self.read].split():
            counts[word] = counts.get(word, 0) + 1
            pair = (previous, word)
            pairs[pair] = pairs.get(pair, 0) + 1
            previous = word
        top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
        top_pairs = sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
        outline = [
            {"title": s.title, "offset": s.offset, "notes": len(s.notes)} for s in doc.sections
        ]
        return {
            "id": doc.id,
            "title": doc.title,
            "revision": doc.revisions[-1].number,
            "top": [[w.decode(), n] for w, n in top],
            "pairs": [[a.decode(), b.decode(), n] for (a, b), n in top_pairs],
            "sections": len(outline),
        }


def create_app(
    documents: int = DEFAULT_DOCUMENTS,
    payload: int = DEFAULT_PAYLOAD,
    sections: int = DEFAULT_SECTIONS,
    read: int = DEFAULT_READ,
) -> FastAPI:
    store = DocumentStore(documents, payload, sections, read)
    app = new_app("NeuroGC workload: cycle-leak", store.build, store.release)

    @app.get("/doc")
    async def doc() -> dict[str, Any]:
        return store.read_doc()

    @app.post("/upload")
    async def upload() -> dict[str, Any]:
        doc = store.upload()
        return {"id": doc.id, "bytes": len(doc.payload), "retired": store.retired}

    return app
