"""``orm``: a WSGI app as most Python web services are built: Flask, an ORM, Jinja2, gunicorn.

Served by gunicorn (1 worker, gthread, 4 threads; ``python -m neurogc.workloads serve orm``):
the worker imports this module and takes ``app``, the Flask app wrapped in
``neurogc.NeuroGCWSGIMiddleware`` with the agent options ``serve`` passed in ``NEUROGC_WORKLOAD_*``
variables (the app is built when first asked for, so in the worker, not in gunicorn's master).

What lives: a framework-sized heap built at start-up and never changed: model metadata (tables,
columns with their types, defaults, constraints and back-references to their table), a URL map
(rules with converters and defaults), configuration and a message catalogue: about
``framework_objects`` tracked objects (default 400,000), on top of what Flask, Werkzeug and
Jinja2 themselves keep (compiled templates included).

What dies, when: every request opens an ORM session with an identity map and loads rows into
model instances, each with its instance state (which points back at the instance and at the
session) and relationships in both directions: a user and their orders, each order and its
lines, each line and its product (``product.lines`` is the back-reference). ``/orders`` loads a
user's ``orders`` orders (default 30) of up to ``lines`` lines (default 8) and renders them with a
Jinja2 template, ``/product`` a product with the order lines that bought it, ``/api/orders`` the
same graph as JSON. About 1,000 to 1,500 tracked objects per request, all in reference cycles,
dropped when the response is sent.

What CPython's collector does with it: young collections free the sessions; with four threads,
the sessions still in flight at a middle-generation collection are promoted and die in the old
generation, which makes the 25 % rule run full collections that scan the framework heap (tens of
ms each) while every thread waits for the GIL.

Which recipe should win: ``freeze`` after warm-up: the framework heap never changes, so freezing
it takes it out of every later full collection, which then scans only the few promoted sessions;
young collections are left as they are. A larger threshold0 cuts the number of young collections
(and promotions) at the price of larger ones; a fixed full-collection schedule scans the framework
heap for nothing.

Options (``create_app`` keywords, ``serve --set KEY=VALUE``): ``framework_objects``, ``orders``,
``lines``.
"""

from __future__ import annotations

import json
import os
import random
import threading
from typing import Any

from flask import Flask, jsonify, render_template, request

from . import _env

DEFAULT_FRAMEWORK_OBJECTS = 400_000
DEFAULT_ORDERS = 30
DEFAULT_LINES = 8
USERS = 10_000
PRODUCTS = 5_000


def check_options(
    framework_objects: int = DEFAULT_FRAMEWORK_OBJECTS,
    orders: int = DEFAULT_ORDERS,
    lines: int = DEFAULT_LINES,
) -> dict[str, int]:
    """The options, checked (ValueError names the bad one)."""
    checked = {}
    for name, value, minimum in (
        ("framework_objects", framework_objects, 0),
        ("orders", orders, 1),
        ("lines", lines, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
            raise ValueError(f"option {name}: expected an integer, got {value!r}")
        if value < minimum:
            raise ValueError(f"option {name}: must be >= {minimum}, got {value!r}")
        checked[name] = int(value)
    return checked


# --- the framework-sized heap --------------------------------------------------------------------


class Column:
    __slots__ = ("table", "name", "type", "nullable", "default", "info")

    def __init__(self, table: Table, name: str, kind: str, i: int) -> None:
        self.table = table  # back-reference: metadata is full of cycles, all of them live
        self.name = name
        self.type = kind
        self.nullable = bool(i % 3)
        self.default = None if i % 4 else i
        self.info = {"doc": f"{table.name}.{name}", "constraints": [kind, i % 5]}


class Table:
    __slots__ = ("name", "columns", "indexes", "foreign_keys")

    def __init__(self, name: str, n_columns: int) -> None:
        self.name = name
        kinds = ("INTEGER", "VARCHAR", "NUMERIC", "BOOLEAN", "TIMESTAMP")
        self.columns = [Column(self, f"c{i}", kinds[i % 5], i) for i in range(n_columns)]
        self.indexes = [[c.name] for c in self.columns[::4]]
        self.foreign_keys: list[Column] = []


class Rule:
    __slots__ = ("rule", "endpoint", "methods", "defaults", "converters")

    def __init__(self, i: int) -> None:
        self.rule = f"/section{i % 40}/page{i}/<int:id>"
        self.endpoint = f"views.page{i}"
        self.methods = {"GET", "HEAD"} if i % 3 else {"GET", "HEAD", "POST"}
        self.defaults = {"lang": "en", "page": [i]}
        self.converters = [("id", "int", [0, None])]


def build_framework(objects: int, seed: int = 7) -> dict[str, Any]:
    """About ``objects`` tracked objects: 40 % model metadata, 20 % URL rules, 40 % messages."""
    rnd = random.Random(seed)
    columns = 30
    tables = [Table(f"t{i}", columns) for i in range(int(objects * 0.4) // (3 * columns + 12))]
    for t in tables:
        if tables:
            t.foreign_keys.append(tables[rnd.randrange(len(tables))].columns[0])
    rules = [Rule(i) for i in range(int(objects * 0.2) // 6)]
    messages = {f"msg.{i}": [f"message {i}", f"messages {i}"] for i in range(int(objects * 0.4))}
    config = {
        "DATABASE": {"pool": {"size": 10, "overflow": [5, 10]}, "echo": False},
        "FEATURES": [{"name": f"f{i}", "enabled": bool(i % 2), "rollout": [i]} for i in range(200)],
    }
    return {"tables": tables, "rules": rules, "messages": messages, "config": config}


# --- a small ORM ---------------------------------------------------------------------------------


class Database:
    """Rows as a database driver returns them: fresh tuples per fetch, made up from the keys."""

    def fetch_user(self, uid: int) -> tuple:
        return (uid, f"user{uid}", f"user{uid}@example.com", f"User {uid}", uid % 3 == 0)

    def fetch_orders(self, uid: int, n: int) -> list[tuple]:
        return [
            (uid * 100 + k, uid, f"2026-{1 + k % 12:02d}-{1 + k % 28:02d}", k % 4) for k in range(n)
        ]

    def fetch_lines(self, oid: int, n: int) -> list[tuple]:
        count = 1 + oid % n
        return [
            (oid * 10 + k, oid, (oid * 7 + k * 13) % PRODUCTS, 1 + (oid + k) % 3)
            for k in range(count)
        ]

    def fetch_product(self, pid: int) -> tuple:
        return (pid, f"Product {pid}", round(1 + (pid * 7919) % 20_000 / 100, 2), f"sku-{pid:05d}")

    def fetch_lines_of_product(self, pid: int, n: int) -> list[tuple]:
        return [((pid * 31 + k) * 10, pid * 31 + k, pid, 1 + k % 3) for k in range(n)]

    def fetch_order(self, oid: int) -> tuple:
        uid = (oid // 100) % USERS
        return (oid, uid, f"2026-{1 + oid % 12:02d}-{1 + oid % 28:02d}", oid % 4)


class InstanceState:
    """Per-instance bookkeeping, as SQLAlchemy keeps it: the instance, its session, the values
    as loaded (to find changes at flush)."""

    __slots__ = ("obj", "session", "key", "committed", "modified")

    def __init__(self, obj: Model, session: Session, key: tuple, committed: dict[str, Any]):
        self.obj = obj  # instance <-> state: a cycle per instance
        self.session = session
        self.key = key
        self.committed = committed
        self.modified = False


class Model:
    columns: tuple[str, ...] = ()

    def __init__(self, session: Session, row: tuple) -> None:
        values = dict(zip(self.columns, row))
        self._state = InstanceState(self, session, (type(self).__name__, row[0]), values)
        for name, value in values.items():
            setattr(self, name, value)


class User(Model):
    columns = ("id", "login", "email", "name", "admin")

    def __init__(self, session: Session, row: tuple) -> None:
        super().__init__(session, row)
        self.orders: list[Order] = []


class Order(Model):
    columns = ("id", "user_id", "date", "status")

    def __init__(self, session: Session, row: tuple) -> None:
        super().__init__(session, row)
        self.user: User | None = None
        self.lines: list[OrderLine] = []

    @property
    def total(self) -> float:
        return round(sum(line.quantity * line.product.price for line in self.lines), 2)


class OrderLine(Model):
    columns = ("id", "order_id", "product_id", "quantity")

    def __init__(self, session: Session, row: tuple) -> None:
        super().__init__(session, row)
        self.order: Order | None = None
        self.product: Product | None = None


class Product(Model):
    columns = ("id", "name", "price", "sku")

    def __init__(self, session: Session, row: tuple) -> None:
        super().__init__(session, row)
        self.lines: list[OrderLine] = []  # the back-reference of OrderLine.product


class Session:
    """A unit of work with an identity map: one instance per row, relationships both ways."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.identity_map: dict[tuple, Model] = {}
        self.loaded = 0

    def _instance(self, cls: type, row: tuple) -> Any:
        key = (cls.__name__, row[0])
        obj = self.identity_map.get(key)
        if obj is None:
            obj = cls(self, row)
            self.identity_map[key] = obj
            self.loaded += 1
        return obj

    def user(self, uid: int) -> User:
        return self._instance(User, self.db.fetch_user(uid))

    def product(self, pid: int) -> Product:
        return self._instance(Product, self.db.fetch_product(pid))

    def order(self, oid: int) -> Order:
        order = self._instance(Order, self.db.fetch_order(oid))
        if order.user is None:
            order.user = self.user(order.user_id)
            order.user.orders.append(order)
        return order

    def orders_of(self, user: User, n: int, lines: int) -> list[Order]:
        orders = [self._instance(Order, row) for row in self.db.fetch_orders(user.id, n)]
        for order in orders:
            order.user = user
            user.orders.append(order)
            self.lines_of(order, lines)
        return orders

    def lines_of(self, order: Order, n: int) -> None:
        for row in self.db.fetch_lines(order.id, n):
            line = self._instance(OrderLine, row)
            line.order = order
            order.lines.append(line)
            line.product = self.product(line.product_id)
            line.product.lines.append(line)

    def close(self) -> None:
        """Like SQLAlchemy's: forgets the identity map; the instances keep their cycles."""
        self.identity_map = {}


# --- the app -------------------------------------------------------------------------------------


def create_app(
    framework_objects: int = DEFAULT_FRAMEWORK_OBJECTS,
    orders: int = DEFAULT_ORDERS,
    lines: int = DEFAULT_LINES,
) -> Flask:
    """The Flask app (not wrapped); builds the framework heap."""
    opts = check_options(framework_objects, orders, lines)
    app = Flask(__name__, template_folder="templates")
    app.config["FRAMEWORK"] = build_framework(opts["framework_objects"])
    db = Database()
    local = threading.local()

    def rnd() -> random.Random:
        r = getattr(local, "rnd", None)
        if r is None:
            r = local.rnd = random.Random(threading.get_ident())
        return r

    def load_orders() -> tuple[Session, User, list[Order]]:
        session = Session(db)
        user = session.user(rnd().randrange(USERS))
        return session, user, session.orders_of(user, opts["orders"], opts["lines"])

    @app.route("/health")
    def health() -> Any:
        return {"status": "ok"}

    @app.route("/orders")
    def orders_page() -> Any:
        session, user, found = load_orders()
        try:
            return render_template(
                "orders.html",
                user=user,
                orders=found,
                total=round(sum(o.total for o in found), 2),
                loaded=session.loaded,
                lang=request.args.get("lang", "en"),
            )
        finally:
            session.close()

    @app.route("/product")
    def product_page() -> Any:
        session = Session(db)
        try:
            product = session.product(rnd().randrange(PRODUCTS))
            for row in db.fetch_lines_of_product(product.id, opts["orders"] * 2):
                line = session._instance(OrderLine, row)
                line.product = product
                product.lines.append(line)
                line.order = session.order(line.order_id)
                line.order.lines.append(line)
            buyers = {}
            for line in product.lines:
                user = line.order.user
                buyers[user.id] = user
            return render_template(
                "product.html",
                product=product,
                lines=product.lines,
                buyers=sorted(buyers.values(), key=lambda u: u.id),
            )
        finally:
            session.close()

    @app.route("/api/orders")
    def orders_api() -> Any:
        session, user, found = load_orders()
        try:
            return jsonify(
                {
                    "user": {"id": user.id, "login": user.login, "email": user.email},
                    "orders": [
                        {
                            "id": o.id,
                            "date": o.date,
                            "status": o.status,
                            "total": o.total,
                            "lines": [
                                {
                                    "product": line.product.name,
                                    "sku": line.product.sku,
                                    "quantity": line.quantity,
                                    "price": line.product.price,
                                }
                                for line in o.lines
                            ],
                        }
                        for o in found
                    ],
                }
            )
        finally:
            session.close()

    # Compile the templates now, as a warmed-up worker would have them.
    with app.app_context():
        for name in ("orders.html", "product.html"):
            app.jinja_env.get_template(name)
    return app


def _from_environment() -> Any:
    """The app gunicorn serves: options and the agent's settings from ``serve``'s variables."""
    options = json.loads(os.environ.get(_env.OPTIONS) or "{}")
    flask_app = create_app(**options)
    if os.environ.get(_env.AGENT, "1") == "0":
        return flask_app
    import neurogc

    return neurogc.NeuroGCWSGIMiddleware(
        flask_app,
        policy=os.environ.get(_env.POLICY) or "default",
        interval=float(os.environ.get(_env.INTERVAL) or 1.0),
        csv=os.environ.get(_env.CSV) or None,
        gc_events_csv=os.environ.get(_env.GC_EVENTS_CSV) or None,
        metrics_path=None,
    )


_app_lock = threading.Lock()


def __getattr__(name: str) -> Any:
    # ``app`` is built when gunicorn's worker first asks for it, so importing this module (to
    # check options, or in gunicorn's master) stays cheap.
    if name == "app":
        with _app_lock:
            if "app" not in globals():
                globals()["app"] = _from_environment()
        return globals()["app"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
