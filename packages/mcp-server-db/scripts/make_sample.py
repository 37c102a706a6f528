"""Generate the bundled sample database, deterministically: `python scripts/make_sample.py [out.db]`."""

from __future__ import annotations

import random
import sqlite3
import sys
from pathlib import Path

SCHEMA = """
CREATE TABLE customers (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE,
    country TEXT NOT NULL DEFAULT 'US',
    created_at TEXT NOT NULL
);
CREATE TABLE products (
    id INTEGER PRIMARY KEY,
    sku TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    category TEXT NOT NULL,
    price_cents INTEGER NOT NULL CHECK (price_cents > 0)
);
CREATE TABLE orders (
    id INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers(id),
    status TEXT NOT NULL DEFAULT 'new' CHECK (status IN ('new', 'paid', 'shipped', 'cancelled')),
    ordered_at TEXT NOT NULL
);
CREATE INDEX ix_orders_customer ON orders(customer_id);
CREATE INDEX ix_orders_ordered_at ON orders(ordered_at);
CREATE TABLE order_items (
    order_id INTEGER NOT NULL REFERENCES orders(id) ON DELETE CASCADE,
    product_id INTEGER NOT NULL REFERENCES products(id),
    quantity INTEGER NOT NULL CHECK (quantity > 0),
    unit_price_cents INTEGER NOT NULL,
    PRIMARY KEY (order_id, product_id)
);
CREATE INDEX ix_order_items_product ON order_items(product_id);
CREATE VIEW order_totals AS
    SELECT o.id AS order_id, o.customer_id, SUM(i.quantity * i.unit_price_cents) AS total_cents
    FROM orders o JOIN order_items i ON i.order_id = o.id GROUP BY o.id;
CREATE TABLE schema_comments (
    table_name TEXT NOT NULL,
    column_name TEXT,
    comment TEXT NOT NULL,
    PRIMARY KEY (table_name, column_name)
);
"""

COMMENTS = [
    ("customers", None, "People who have placed or may place orders"),
    ("customers", "country", "ISO 3166-1 alpha-2 code"),
    ("products", "price_cents", "List price in US cents"),
    ("orders", "status", "new, paid, shipped or cancelled"),
    ("order_items", "unit_price_cents", "Price paid per unit, in cents, at order time"),
]

FIRST = ["Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "Ken", "Radia", "Linus", "Margaret"]
LAST = ["Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Knuth", "Allen", "Thompson", "Perlman", "Hamilton"]
COUNTRIES = ["US", "GB", "DE", "FR", "NL", "JP", "BR", "IN", "CA", "AU"]
CATEGORIES = ["books", "games", "tools", "garden", "kitchen"]
STATUSES = ["new", "paid", "shipped", "cancelled"]


def build(path: Path) -> None:
    rng = random.Random(4)  # noqa: S311 - sample data, not secrets
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    db.executemany("INSERT INTO schema_comments VALUES (?, ?, ?)", COMMENTS)
    for cid in range(1, 121):
        name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        email = f"{name.lower().replace(' ', '.')}{cid}@example.com"
        created = f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        db.execute("INSERT INTO customers VALUES (?, ?, ?, ?, ?)", (cid, name, email, rng.choice(COUNTRIES), created))
    for pid in range(1, 41):
        category = rng.choice(CATEGORIES)
        db.execute(
            "INSERT INTO products VALUES (?, ?, ?, ?, ?)",
            (pid, f"SKU-{pid:04d}", f"{category.title()} item {pid}", category, rng.randint(199, 9999)),
        )
    for oid in range(1, 301):
        ordered = f"2026-{rng.randint(1, 10):02d}-{rng.randint(1, 28):02d}"
        db.execute("INSERT INTO orders VALUES (?, ?, ?, ?)", (oid, rng.randint(1, 120), rng.choice(STATUSES), ordered))
        for pid in rng.sample(range(1, 41), rng.randint(1, 4)):
            price = db.execute("SELECT price_cents FROM products WHERE id = ?", (pid,)).fetchone()[0]
            db.execute("INSERT INTO order_items VALUES (?, ?, ?, ?)", (oid, pid, rng.randint(1, 5), price))
    db.commit()
    db.execute("VACUUM")
    db.close()


if __name__ == "__main__":
    default = Path(__file__).resolve().parent.parent / "src" / "mcp_server_db" / "sample.db"
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else default)
