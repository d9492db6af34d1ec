"""``growing-cache``: a large live set that keeps turning over: a session LRU cache.

What lives: an LRU cache of up to ``sessions`` web sessions (default 6,000), warmed up at
start-up by the same traffic that drives it (so the suite starts from a full, turned-over cache).
Each session is an object graph with cycles: the session and its user point at each other (the
user keeps a list of its sessions), the session and its cart point at each other, every cart item
points back at its cart, and the last rendered page (a widget tree with parent links) hangs off
the session; there are addresses, preferences, a browsing history and a 16 KiB cached page
fragment. About 70 tracked objects per session: some 400,000 in all, plus a small static product
list.

What dies, when: ``/login`` creates a session (a user, a cart of ``items`` items) and evicts the
least recently used one; ``/cart`` adds an item to a session's cart (the live set grows) and
``/page`` renders a page from one, replacing its previous page (both refresh it in the LRU
order). Half the requests are logins, so at the suite's load (~250 req/s) the whole cache turns
over in about a minute: sessions live long enough to be promoted to the old generation and die
there, as cyclic garbage that only a full collection can free; replaced pages die there too.

What CPython's collector does with it: promotions (new sessions, cart items, pages) feed the 25 %
rule, so a full collection runs every several seconds; it scans the whole cache (~100-150 ms) and
frees the tens of thousands of objects of the sessions evicted since the last one. Memory stays
bounded.

Which recipe should win: not a one-shot ``freeze``. Freezing the warm cache helps at first, but
the frozen sessions are all evicted within a minute or two and never freed (RSS grows by about
20 KiB per evicted session for as long as frozen sessions keep dying); whatever is attached to
them after the freeze (new cart items, pages, history) stays reachable from frozen garbage and is
scanned by every later full collection without ever being freed; and the unfrozen old generation
grows back to the size of the cache, so within a turnover the full collections are back to their
old size and cadence. A scheduled old-generation collection (a full collection at a cadence
matched to the turnover, in the quiet moments) keeps memory bounded with pauses no larger than
the default's. A collector switched off (or a period too long) lets the evicted sessions pile up.

Options (``create_app`` keywords, ``serve --set KEY=VALUE``): ``sessions`` (cache capacity),
``items`` (cart items per new session), ``fragment`` (bytes of cached page per session),
``products`` (size of the static product list), ``recommend`` (products scored per page).
"""

from __future__ import annotations

import collections
import random
import time
from typing import Any

from fastapi import FastAPI

from ._base import new_app, positive

DEFAULT_SESSIONS = 6_000
DEFAULT_ITEMS = 12
DEFAULT_FRAGMENT = 16_384
DEFAULT_PRODUCTS = 5_000
DEFAULT_RECOMMEND = 4_000
HISTORY = 8  # pages remembered per session


class Product:
    __slots__ = ("id", "name", "price", "category", "tags")

    def __init__(self, i: int) -> None:
        self.id = i
        self.name = f"product-{i}"
        self.price = round(1 + (i * 7919) % 20_000 / 100, 2)
        self.category = i % 17
        self.tags = [i % 5, i % 7]


class User:
    __slots__ = ("id", "name", "email", "sessions", "prefs", "addresses")

    def __init__(self, uid: int) -> None:
        self.id = uid
        self.name = f"user-{uid}"
        self.email = f"user-{uid}@example.com"
        self.sessions: list[Session] = []
        self.prefs: dict[str, Any] = {"lang": "en", "categories": [uid % 17, (uid * 3) % 17]}
        self.addresses = [
            {"kind": "home", "lines": [f"{uid} Main Street", "Springfield"]},
            {"kind": "work", "lines": [f"{uid % 100} Market Square", "Shelbyville"]},
        ]


class Cart:
    __slots__ = ("session", "items", "totals")

    def __init__(self, session: Session) -> None:
        self.session = session  # cycle: session.cart is self
        self.items: list[CartItem] = []
        self.totals: dict[str, Any] = {"sum": 0.0, "count": 0, "by_category": []}

    def add(self, product: Product, qty: int) -> CartItem:
        item = CartItem(self, product, qty)
        self.items.append(item)
        self.totals["sum"] = round(self.totals["sum"] + product.price * qty, 2)
        self.totals["count"] += qty
        return item


class CartItem:
    __slots__ = ("cart", "product_id", "name", "qty", "price", "options")

    def __init__(self, cart: Cart, product: Product, qty: int) -> None:
        self.cart = cart  # cycle: cart.items holds self
        self.product_id = product.id
        self.name = product.name
        self.qty = qty
        self.price = product.price
        self.options = [product.category, qty]


class Widget:
    """A node of a rendered page: children and a parent link (so every page is a cycle)."""

    __slots__ = ("kind", "parent", "children", "value")

    def __init__(self, kind: str, parent: Widget | None, value: Any) -> None:
        self.kind = kind
        self.parent = parent
        self.children: list[Widget] = []
        self.value = value
        if parent is not None:
            parent.children.append(self)

    def render(self) -> str:
        inner = "".join(child.render() for child in self.children)
        return f"<div class={self.kind}>{self.value}{inner}</div>"


class Session:
    __slots__ = ("id", "user", "cart", "created", "last_seen", "history", "data", "fragment")

    def __init__(self, sid: int, user: User, fragment: bytes) -> None:
        self.id = sid
        self.user = user
        user.sessions.append(self)  # cycle: user <-> session
        self.cart = Cart(self)  # cycle: session <-> cart
        self.created = self.last_seen = time.time()
        self.history: collections.deque[list[Any]] = collections.deque(maxlen=HISTORY)
        self.data: dict[str, Any] = {"csrf": f"{sid:016x}", "flags": [sid % 2, sid % 3]}
        self.fragment = fragment


class SessionCache:
    def __init__(
        self, sessions: int, items: int, fragment: int, products: int, recommend: int
    ) -> None:
        self.capacity = positive("sessions", sessions)
        self.items = positive("items", items, minimum=0)
        self.fragment_bytes = positive("fragment", fragment, minimum=0)
        self.n_products = positive("products", products)
        self.recommend = positive("recommend", recommend, minimum=0)
        self.products: list[Product] = []
        self.cache: collections.OrderedDict[int, Session] = collections.OrderedDict()
        self.next_id = 0
        self.evicted = 0
        self.rnd = random.Random(3)

    def build(self) -> None:
        """Warms the cache up the way traffic would (logins, carts, pages in the task file's
        proportions, recommendations cut short) until it has turned over about once, so that the
        suite starts from the steady state: full, with grown carts, rendered pages and history,
        its sessions spread over the heap."""
        self.products = [Product(i) for i in range(self.n_products)]
        recommend, self.recommend = self.recommend, min(self.recommend, 20)
        try:
            while self.next_id < 2 * self.capacity:
                self.login()
                r = self.rnd.random()
                if r < 0.4:
                    self.add_to_cart()
                elif r < 1.0:
                    self.page()
        finally:
            self.recommend = recommend

    def release(self) -> None:
        self.cache.clear()
        self.products = []

    def _fragment(self, sid: int) -> bytes:
        return (f"<div class=session id={sid}>".encode() * 64)[: self.fragment_bytes].ljust(
            self.fragment_bytes, b" "
        )

    def login(self) -> Session:
        """A new session for a new user, with a few items in its cart; evicts the LRU session."""
        sid = self.next_id
        self.next_id += 1
        session = Session(sid, User(sid), self._fragment(sid))
        for _ in range(self.items):
            session.cart.add(self.products[self.rnd.randrange(len(self.products))], 1)
        self.cache[sid] = session
        while len(self.cache) > self.capacity:
            self.cache.popitem(last=False)
            self.evicted += 1
        return session

    def pick(self) -> Session:
        """A random live session (users come back to recent sessions more often)."""
        while True:
            back = int(self.rnd.expovariate(3 / self.capacity))
            session = self.cache.get(self.next_id - 1 - back)
            if session is not None:
                self.cache.move_to_end(session.id)
                session.last_seen = time.time()
                return session

    def recommendations(self, session: Session) -> list[dict[str, Any]]:
        wanted = session.user.prefs["categories"]
        in_cart = {item.product_id for item in session.cart.items}
        n = len(self.products)
        start = self.rnd.randrange(n)
        scored = []
        for k in range(self.recommend):
            p = self.products[(start + k) % n]
            if p.id in in_cart:
                continue
            score = (3 if p.category in wanted else 0) + (1 if session.id % 5 in p.tags else 0)
            scored.append((score, -p.price, p.id))
        scored.sort(reverse=True)
        return [{"id": pid, "price": -neg} for _, neg, pid in scored[:5]]

    def page(self) -> dict[str, Any]:
        """Renders a page from a session's cart and recommendations; the page's widget tree
        (parent links: cycles) replaces the previous one in the session, for the next visit."""
        session = self.pick()
        session.history.append(["page", time.time(), len(session.history)])
        root = Widget("page", None, session.user.name)
        cart = Widget("cart", root, len(session.cart.items))
        for item in session.cart.items:
            Widget("item", cart, [item.name, item.qty, item.price])
        recs = self.recommendations(session)
        box = Widget("recommended", root, len(recs))
        for r in recs:
            Widget("rec", box, [r["id"], r["price"]])
        session.data["page"] = root
        html = root.render()
        return {
            "session": session.id,
            "bytes": len(html) + len(session.fragment),
            "cart": session.cart.totals["count"],
            "recommended": [r["id"] for r in recs],
        }

    def add_to_cart(self) -> dict[str, Any]:
        session = self.pick()
        recs = self.recommendations(session)
        product = self.products[recs[0]["id"] if recs else self.rnd.randrange(len(self.products))]
        session.cart.add(product, 1 + self.rnd.randrange(3))
        session.history.append(["cart", time.time(), product.id])
        return {"session": session.id, "items": len(session.cart.items), **session.cart.totals}

    def new_session(self) -> dict[str, Any]:
        session = self.login()
        recs = self.recommendations(session)
        return {
            "session": session.id,
            "user": session.user.name,
            "cart": session.cart.totals["count"],
            "recommended": [r["id"] for r in recs],
            "cached": len(self.cache),
            "evicted": self.evicted,
        }


def create_app(
    sessions: int = DEFAULT_SESSIONS,
    items: int = DEFAULT_ITEMS,
    fragment: int = DEFAULT_FRAGMENT,
    products: int = DEFAULT_PRODUCTS,
    recommend: int = DEFAULT_RECOMMEND,
) -> FastAPI:
    state = SessionCache(sessions, items, fragment, products, recommend)
    app = new_app("NeuroGC workload: growing-cache", state.build, state.release)

    @app.post("/login")
    async def login() -> dict[str, Any]:
        return state.new_session()

    @app.post("/cart")
    async def cart() -> dict[str, Any]:
        return state.add_to_cart()

    @app.get("/page")
    async def page() -> dict[str, Any]:
        return state.page()

    return app
