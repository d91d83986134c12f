"""A small TPC-H-shaped data set, generated deterministically (seeded random) for tests
that compare this driver's answers with DuckDB's on the same rows.

The eight tables keep TPC-H's columns, key relationships (every foreign key points at an
existing row; partsupp holds four suppliers per part; a lineitem's (partkey, suppkey) is
a partsupp row) and value domains (types, containers, segments, priorities, ship modes,
dates from 1992 to 1998, prices and discounts as DECIMAL(15,2)), at a scale that keeps a
test module fast: about 1,500 orders and 6,000 lineitems. DuckDB's tpch extension does
not load offline, hence this generator.

Departures from TPC-H, on purpose: the comment columns (``*_comment``) and
``o_clerk`` are nullable and hold NULL in about one row in eight, and customers carry an
extra nullable column ``c_nickname`` (NULL in about half the rows), so that NULL handling
can be tested on the same data. A third of the customers place no order (as in TPC-H),
which the outer-join queries rely on.

``schema()`` gives each table's columns as ``(name, sql type)``: the type text both this
driver's SQL and DuckDB read. ``generate(seed)`` gives ``{table: rows}``;
``more_orders(data, seed)`` gives a second batch of orders and their lineitems (for a
second load, so that lakehouse versions differ).
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from typing import Any

REGIONS = ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"]
NATIONS = [
    ("ALGERIA", 0), ("ARGENTINA", 1), ("BRAZIL", 1), ("CANADA", 1), ("EGYPT", 4), ("ETHIOPIA", 0),
    ("FRANCE", 3), ("GERMANY", 3), ("INDIA", 2), ("INDONESIA", 2), ("IRAN", 4), ("IRAQ", 4),
    ("JAPAN", 2), ("JORDAN", 4), ("KENYA", 0), ("MOROCCO", 0), ("MOZAMBIQUE", 0), ("PERU", 1),
    ("CHINA", 2), ("ROMANIA", 3), ("SAUDI ARABIA", 4), ("VIETNAM", 2), ("RUSSIA", 3),
    ("UNITED KINGDOM", 3), ("UNITED STATES", 1),
]  # fmt: skip
SEGMENTS = ["AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY"]
PRIORITIES = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"]
SHIP_MODES = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"]
INSTRUCTIONS = ["DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"]
TYPE_1 = ["STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"]
TYPE_2 = ["ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"]
TYPE_3 = ["TIN", "NICKEL", "BRASS", "STEEL", "COPPER"]
CONTAINER_1 = ["SM", "LG", "MED", "JUMBO", "WRAP"]
CONTAINER_2 = ["CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"]
COLORS = [
    "almond", "antique", "aquamarine", "azure", "beige", "bisque", "black", "blanched", "blue",
    "blush", "brown", "burlywood", "burnished", "chartreuse", "chiffon", "chocolate", "coral",
    "cornflower", "cornsilk", "cream", "cyan", "dark", "deep", "dim", "dodger", "drab", "firebrick",
    "floral", "forest", "frosted", "gainsboro", "ghost", "goldenrod", "green", "grey", "honeydew",
    "hot", "indian", "ivory", "khaki", "lace", "lavender", "lawn", "lemon", "light", "lime", "linen",
    "magenta", "maroon", "medium", "metallic", "midnight", "mint", "misty", "moccasin", "navajo",
    "navy", "olive", "orange", "orchid", "pale", "papaya", "peach", "peru", "pink", "plum", "powder",
    "puff", "purple", "red", "rose", "rosy", "royal", "saddle", "salmon", "sandy", "seashell", "sienna",
    "sky", "slate", "smoke", "snow", "spring", "steel", "tan", "thistle", "tomato", "turquoise",
    "violet", "wheat", "white", "yellow",
]  # fmt: skip
WORDS = [
    "furiously", "special", "requests", "quickly", "regular", "accounts", "carefully", "final",
    "deposits", "ironic", "packages", "slyly", "express", "pending", "blithely", "bold", "foxes",
    "theodolites", "instructions", "dependencies", "unusual", "Customer", "Complaints", "ideas",
]  # fmt: skip

START = dt.date(1992, 1, 1)
END = dt.date(1998, 8, 2)  # the last order date TPC-H allows
CURRENT = dt.date(1995, 6, 17)  # lineitems received after it are still open ('O' / 'N')

SCHEMA: dict[str, list[tuple[str, str]]] = {
    "region": [("r_regionkey", "INT NOT NULL"), ("r_name", "STRING"), ("r_comment", "STRING")],
    "nation": [("n_nationkey", "INT NOT NULL"), ("n_name", "STRING"), ("n_regionkey", "INT"),
               ("n_comment", "STRING")],
    "supplier": [("s_suppkey", "INT NOT NULL"), ("s_name", "STRING"), ("s_address", "STRING"),
                 ("s_nationkey", "INT"), ("s_phone", "STRING"), ("s_acctbal", "DECIMAL(15,2)"),
                 ("s_comment", "STRING")],
    "customer": [("c_custkey", "INT NOT NULL"), ("c_name", "STRING"), ("c_address", "STRING"),
                 ("c_nationkey", "INT"), ("c_phone", "STRING"), ("c_acctbal", "DECIMAL(15,2)"),
                 ("c_mktsegment", "STRING"), ("c_comment", "STRING"), ("c_nickname", "STRING")],
    "part": [("p_partkey", "INT NOT NULL"), ("p_name", "STRING"), ("p_mfgr", "STRING"),
             ("p_brand", "STRING"), ("p_type", "STRING"), ("p_size", "INT"), ("p_container", "STRING"),
             ("p_retailprice", "DECIMAL(15,2)"), ("p_comment", "STRING")],
    "partsupp": [("ps_partkey", "INT NOT NULL"), ("ps_suppkey", "INT NOT NULL"), ("ps_availqty", "INT"),
                 ("ps_supplycost", "DECIMAL(15,2)"), ("ps_comment", "STRING")],
    "orders": [("o_orderkey", "BIGINT NOT NULL"), ("o_custkey", "INT"), ("o_orderstatus", "STRING"),
               ("o_totalprice", "DECIMAL(15,2)"), ("o_orderdate", "DATE"), ("o_orderpriority", "STRING"),
               ("o_clerk", "STRING"), ("o_shippriority", "INT"), ("o_comment", "STRING")],
    "lineitem": [("l_orderkey", "BIGINT NOT NULL"), ("l_partkey", "INT"), ("l_suppkey", "INT"),
                 ("l_linenumber", "INT"), ("l_quantity", "DECIMAL(15,2)"),
                 ("l_extendedprice", "DECIMAL(15,2)"), ("l_discount", "DECIMAL(15,2)"),
                 ("l_tax", "DECIMAL(15,2)"), ("l_returnflag", "STRING"), ("l_linestatus", "STRING"),
                 ("l_shipdate", "DATE"), ("l_commitdate", "DATE"), ("l_receiptdate", "DATE"),
                 ("l_shipinstruct", "STRING"), ("l_shipmode", "STRING"), ("l_comment", "STRING")],
}  # fmt: skip

TABLES = list(SCHEMA)

SUPPLIERS = 20
CUSTOMERS = 150
PARTS = 200
ORDERS = 1500


def duckdb_type(sql_type: str) -> str:
    """The type text DuckDB reads for a column type of :data:`SCHEMA`."""
    return sql_type.replace("STRING", "VARCHAR")


def _comment(rnd: random.Random, words: int = 5, nulls: float = 0.125) -> str | None:
    if rnd.random() < nulls:
        return None
    return " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(2, words)))


def _money(rnd: random.Random, low: int, high: int) -> Decimal:
    return Decimal(rnd.randint(low * 100, high * 100)) / 100


def _phone(rnd: random.Random, nation: int) -> str:
    return f"{nation + 10}-{rnd.randint(100, 999)}-{rnd.randint(100, 999)}-{rnd.randint(1000, 9999)}"


def generate(seed: int = 18) -> dict[str, list[tuple]]:
    """Every table's rows, in :data:`SCHEMA`'s column order."""
    rnd = random.Random(seed)
    data: dict[str, list[tuple]] = {}
    data["region"] = [(i, name, _comment(rnd)) for i, name in enumerate(REGIONS)]
    data["nation"] = [(i, name, region, _comment(rnd)) for i, (name, region) in enumerate(NATIONS)]
    suppliers = []
    for key in range(1, SUPPLIERS + 1):
        nation = rnd.randrange(len(NATIONS))
        comment = _comment(rnd)
        if key % 7 == 3:  # TPC-H Q16 looks for suppliers with complaints
            comment = "slyly Customer unusual Complaints furiously"
        suppliers.append((key, f"Supplier#{key:09d}", f"addr-{rnd.randint(1, 10**6)}", nation,
                          _phone(rnd, nation), _money(rnd, -999, 9999), comment))  # fmt: skip
    data["supplier"] = suppliers
    customers = []
    for key in range(1, CUSTOMERS + 1):
        nation = rnd.randrange(len(NATIONS))
        nickname = None if rnd.random() < 0.5 else rnd.choice(COLORS)
        customers.append((key, f"Customer#{key:09d}", f"addr-{rnd.randint(1, 10**6)}", nation,
                          _phone(rnd, nation), _money(rnd, -999, 9999), rnd.choice(SEGMENTS),
                          _comment(rnd), nickname))  # fmt: skip
    data["customer"] = customers
    parts = []
    prices = {}
    for key in range(1, PARTS + 1):
        name = " ".join(rnd.sample(COLORS, 5))
        mfgr = rnd.randint(1, 5)
        brand = f"Brand#{mfgr}{rnd.randint(1, 5)}"
        ptype = f"{rnd.choice(TYPE_1)} {rnd.choice(TYPE_2)} {rnd.choice(TYPE_3)}"
        container = f"{rnd.choice(CONTAINER_1)} {rnd.choice(CONTAINER_2)}"
        price = Decimal(90000 + (key // 10) % 20001 + 100 * (key % 1000)) / 100
        prices[key] = price
        parts.append((key, name, f"Manufacturer#{mfgr}", brand, ptype, rnd.randint(1, 50), container,
                      price, _comment(rnd)))  # fmt: skip
    data["part"] = parts
    partsupp = []
    supplies: dict[int, list[int]] = {}
    for part in range(1, PARTS + 1):
        supplies[part] = [(part + i * (SUPPLIERS // 4)) % SUPPLIERS + 1 for i in range(4)]
        for supp in supplies[part]:
            partsupp.append((part, supp, rnd.randint(1, 9999), _money(rnd, 1, 1000), _comment(rnd)))
    data["partsupp"] = partsupp
    orders, lineitems = _orders(rnd, range(1, ORDERS + 1), supplies, prices)
    data["orders"] = orders
    data["lineitem"] = lineitems
    return data


def _orders(rnd: random.Random, keys: Any, supplies: dict[int, list[int]],
            prices: dict[int, Decimal]) -> tuple[list[tuple], list[tuple]]:  # fmt: skip
    orders = []
    lineitems = []
    span = (END - START).days
    for n in keys:
        key = (n // 8) * 32 + n % 8  # sparse keys, as TPC-H's
        while True:  # a third of the customers never order (custkey % 3 == 0)
            customer = rnd.randint(1, CUSTOMERS)
            if customer % 3:
                break
        ordered = START + dt.timedelta(days=rnd.randint(0, span - 151))
        total = Decimal(0)
        statuses = set()
        for line in range(1, rnd.randint(1, 7) + 1):
            part = rnd.randint(1, PARTS)
            supp = rnd.choice(supplies[part])
            quantity = Decimal(rnd.randint(1, 50))
            price = quantity * prices[part]
            discount = Decimal(rnd.randint(0, 10)) / 100
            tax = Decimal(rnd.randint(0, 8)) / 100
            shipped = ordered + dt.timedelta(days=rnd.randint(1, 121))
            committed = ordered + dt.timedelta(days=rnd.randint(30, 90))
            received = shipped + dt.timedelta(days=rnd.randint(1, 30))
            flag = rnd.choice("RA") if received <= CURRENT else "N"
            status = "O" if shipped > CURRENT else "F"
            statuses.add(status)
            total += price * (1 + tax) * (1 - discount)
            lineitems.append((key, part, supp, line, quantity, price, discount, tax, flag, status,
                              shipped, committed, received, rnd.choice(INSTRUCTIONS),
                              rnd.choice(SHIP_MODES), _comment(rnd, 3)))  # fmt: skip
        order_status = "F" if statuses == {"F"} else "O" if statuses == {"O"} else "P"
        clerk = None if rnd.random() < 0.125 else f"Clerk#{rnd.randint(1, 50):09d}"
        comment = _comment(rnd)
        if rnd.random() < 0.05:
            comment = "blithely special pending requests"  # TPC-H Q13 excludes these
        orders.append((key, customer, order_status, total.quantize(Decimal("0.01")), ordered,
                       rnd.choice(PRIORITIES), clerk, 0, comment))  # fmt: skip
    return orders, lineitems


def more_orders(data: dict[str, list[tuple]], count: int, seed: int = 1918) -> dict[str, list[tuple]]:
    """``count`` orders (and their lineitems) with keys after the last of ``data``."""
    rnd = random.Random(seed)
    supplies: dict[int, list[int]] = {}
    for part, supp, *_ in data["partsupp"]:
        supplies.setdefault(part, []).append(supp)
    prices = {row[0]: row[7] for row in data["part"]}
    first = ORDERS + 8  # the generator's keys are increasing in n
    orders, lineitems = _orders(rnd, range(first, first + count), supplies, prices)
    return {"orders": orders, "lineitem": lineitems}
