"""The basic hand-computed optima: prices and time zones, windows, precedence and shared
capacity, regions and transfers, mixed fleets, GPU counts and billing, fractional GPUs, spot,
reserved pools, licences and porting, carbon, spares, failures and checkpoints, SLA credits,
storage tiers and pauses.

Unless a case says otherwise: GPU ``G`` (100 TFLOP/s, 1 kW, ten per node, no idle draw, no
failures) at $1/GPU-h on demand, one region ``r`` in UTC at PUE 1 with free storage, a
horizon of 24 hours from Monday 2023-06-05 00:00 UTC, and a non-preemptible phase ``job``
whose work is GPU-hours on G, on 10 GPUs (10 kW, $10/h of rental) and no spare node. An hour
of 10 GPUs at price p USD/MWh costs $10 + 10 kW x p / 1000.
"""

from __future__ import annotations

from hand_cases import (
    Doc,
    F,
    G,
    case,
    instance,
    job,
    od,
    region,
    tou,
    values,
)

# ============================================================================ prices


@case("flat-price", "prices", 42.00, {"job": {"region": "r", "gpus": 10, "costs": {"energy": 2}}})
def _() -> Doc:
    # 40 GPU-h on 10 GPUs = 4 h at $50/MWh:
    # 4 x $10 + 4 x 10 kW x $50/MWh / 1000 = 40 + 2.00 = $42.00
    return instance({"r": region(50)}, [job(gpu_hours=40)])


@case("price-adder", "prices", 42.20, {"costs": {"energy": 2.20}})
def _() -> Doc:
    # $30/MWh + an adder of $25/MWh = $55/MWh: 40 + 4 x 10 kW x 55 / 1000 = 40 + 2.20 = $42.20
    return instance({"r": region(30, price_adder_usd_per_mwh=25)}, [job(gpu_hours=40)])


@case("pue", "prices", 43.00, {"costs": {"energy": 3.00}})
def _() -> Doc:
    # PUE 1.5: 10 kW of GPUs draw 15 kW at the meter: 40 + 4 x 15 x 50 / 1000 = 40 + 3 = $43.00
    return instance({"r": region(50, pue=1.5)}, [job(gpu_hours=40)])


@case("cooling-liquid", "prices", 42.30, {"costs": {"energy": 2.30}})
def _() -> Doc:
    # liquid cooling: PUE 1.15, 11.5 kW: 40 + 4 x 11.5 x 50 / 1000 = 40 + 2.30 = $42.30
    return instance({"r": region(50, pue=None, cooling="liquid")}, [job(gpu_hours=40)])


@case("tou-band", "prices", 40.80, {"job": {"hours": (2, 3, 4, 5)}})
def _() -> Doc:
    # $100/MWh but $20 in local (UTC) hours 2-6: the 4 h job takes exactly the band,
    # 40 + 4 x 10 kW x 20 / 1000 = 40 + 0.80 = $40.80
    return instance({"r": region(tou(100, (2, 6, 20)))}, [job(gpu_hours=40)])


@case("tou-band-wraps-midnight", "prices", 40.40, {"job": {"hours": (22, 23, 24, 25)}})
def _() -> Doc:
    # a band from 22:00 to 02:00 at $10/MWh over 48 h: cheap hours 0-1, 22-25, 46-47; the
    # only four consecutive ones are 22-25: 40 + 4 x 10 x 10 / 1000 = $40.40
    return instance({"r": region(tou(100, (22, 2, 10)))}, [job(gpu_hours=40)], hours=48)


@case("tou-berlin-summer", "prices", 40.80, {"job": {"hours": (22, 23, 24, 25)}})
def _() -> Doc:
    # Berlin in June is UTC+2: the local band 00-04 is 22:00-02:00 UTC, hours 0-1, 22-25 and
    # 46-47 of a 48 h horizon from 00:00 UTC; four in a row only at 22-25:
    # 40 + 4 x 10 x 20 / 1000 = $40.80
    r = region(tou(100, (0, 4, 20)), tz="Europe/Berlin")
    return instance({"r": r}, [job(gpu_hours=40)], hours=48)


@case("tou-berlin-winter", "prices", 40.80, {"job": {"hours": (1, 2, 3, 4)}})
def _() -> Doc:
    # Berlin in January is UTC+1: the local band 02-06 is 01:00-05:00 UTC, hours 1-4 (in June
    # it would be hours 0-3): 40 + 4 x 10 x 20 / 1000 = $40.80
    r = region(tou(100, (2, 6, 20)), tz="Europe/Berlin")
    return instance({"r": r}, [job(gpu_hours=40)], start="2023-01-09T00:00:00Z")


@case("tou-new-york", "prices", 40.40, {"job": {"hours": (4, 5, 6, 7)}})
def _() -> Doc:
    # New York in June is UTC-4: the local band 00-04 at $10/MWh is 04:00-08:00 UTC, hours 4-7:
    # 40 + 4 x 10 x 10 / 1000 = $40.40
    r = region(tou(100, (0, 4, 10)), tz="America/New_York")
    return instance({"r": r}, [job(gpu_hours=40)])


@case("tou-tokyo", "prices", 40.40, {"job": {"hours": (15, 16, 17, 18)}})
def _() -> Doc:
    # Tokyo is UTC+9 all year: the local band 00-04 is 15:00-19:00 UTC, hours 15-18: $40.40
    r = region(tou(100, (0, 4, 10)), tz="Asia/Tokyo")
    return instance({"r": r}, [job(gpu_hours=40)])


def _two_nights(deadline: int) -> Doc:
    """Berlin (UTC+2) $20/MWh 00-06 local = hours 0-3 (and 22-23); New York (UTC-4) $10/MWh
    00-06 local = hours 4-9; $100 otherwise."""
    return instance(
        {
            "berlin": region(tou(100, (0, 6, 20)), tz="Europe/Berlin"),
            "newyork": region(tou(100, (0, 6, 10)), tz="America/New_York"),
        },
        [job(gpu_hours=40, deadline=deadline)],
    )


@case("time-zones-new-york", "prices", 40.40, {"job": {"region": "newyork", "hours": (4, 5, 6, 7)}})
def _() -> Doc:
    # deadline hour 8: New York's night, hours 4-7: 40 + 4 x 10 x 10 / 1000 = $40.40 (Berlin's
    # hours 0-3 would cost 40 + 4 x 10 x 20 / 1000 = $40.80)
    return _two_nights(8)


@case("time-zones-berlin", "prices", 40.80, {"job": {"region": "berlin", "hours": (0, 1, 2, 3)}})
def _() -> Doc:
    # deadline hour 7: New York has three night hours before it, 40 + 10 x (3 x 10 + 100) / 1000
    # = $41.30; Berlin's hours 0-3 cost 40 + 4 x 10 x 20 / 1000 = $40.80
    return _two_nights(7)


@case("weekend", "prices", 40.80, {"job": {"hours": (24, 25, 26, 27)}})
def _() -> Doc:
    # from Friday 2023-06-09 00:00 UTC, 72 h; weekdays $100/MWh, weekends $20 (UTC); due at
    # hour 28: Saturday begins at hour 24, so hours 24-27: 40 + 4 x 10 x 20 / 1000 = $40.80
    r = region(tou(100, weekend=20))
    return instance(
        {"r": r}, [job(gpu_hours=40, deadline=28)], hours=72, start="2023-06-09T00:00:00Z"
    )


@case("weekend-local-time", "prices", 40.80, {"job": {"hours": (28, 29, 30, 31)}})
def _() -> Doc:
    # the same in New York (UTC-4): Saturday begins at 04:00 UTC Saturday, hour 28; due at 32:
    # hours 28-31, $40.80
    r = region(tou(100, weekend=20), tz="America/New_York")
    return instance(
        {"r": r}, [job(gpu_hours=40, deadline=32)], hours=72, start="2023-06-09T00:00:00Z"
    )


@case("holiday", "prices", 40.60, {"job": {"hours": (24, 25, 26, 27)}})
def _() -> Doc:
    # from Monday 2023-12-25 00:00 UTC, 48 h, $100/MWh; 2023-12-26 a holiday at $15; due at 28:
    # hours 24-27: 40 + 4 x 10 x 15 / 1000 = $40.60
    r = region(tou(100, holidays=["2023-12-26"], holiday=15))
    return instance(
        {"r": r}, [job(gpu_hours=40, deadline=28)], hours=48, start="2023-12-25T00:00:00Z"
    )


@case("weekday-band", "prices", 40.80, {"job": {"hours": (48, 49, 50, 51)}})
def _() -> Doc:
    # from Saturday 2023-06-10 00:00 UTC, 72 h; a $20 band 00-06 on weekdays only: Monday's,
    # hours 48-53; due at 52: hours 48-51, $40.80
    bands = tou(100)
    bands["tou"]["bands"] = [
        {"start_hour": 0, "end_hour": 6, "price": 20, "weekdays": [0, 1, 2, 3, 4]}
    ]
    return instance(
        {"r": region(bands)},
        [job(gpu_hours=40, deadline=52)],
        hours=72,
        start="2023-06-10T00:00:00Z",
    )


@case("weekend-overrides-a-band", "prices", 42.00)
def _() -> Doc:
    # from Friday 2023-06-09 00:00 UTC, 48 h: $100/MWh, a band 00-04 at $10 and weekends at $50;
    # released at hour 4. Saturday's 00-04 is a weekend hour ($50, the weekend overrides the
    # band), so the cheapest 4 h are any on Saturday: 40 + 4 x 10 x 50 / 1000 = $42.00 (the
    # band winning would give $40.40)
    r = region(tou(100, (0, 4, 10), weekend=50))
    return instance(
        {"r": r}, [job(gpu_hours=40, release=4)], hours=48, start="2023-06-09T00:00:00Z"
    )


@case("holiday-local-time", "prices", 40.60, {"job": {"hours": (4, 5, 6, 7)}})
def _() -> Doc:
    # New York's 4 July 2023 (UTC-4) is 04:00 UTC 4 July to 04:00 UTC 5 July: hours 4-27 of a
    # horizon from 00:00 UTC 4 July; due at 8: hours 4-7, 40 + 4 x 10 x 15 / 1000 = $40.60
    r = region(tou(100, holidays=["2023-07-04"], holiday=15), tz="America/New_York")
    return instance(
        {"r": r}, [job(gpu_hours=40, deadline=8)], hours=48, start="2023-07-04T00:00:00Z"
    )


@case("tou-dst-spring-forward", "prices", 41.60)
def _() -> Doc:
    # Berlin, from Saturday 2023-03-25 00:00 UTC (CET, UTC+1), 48 h; $20 in local 00-04. On
    # Sunday 26 March the clocks jump from 02:00 to 03:00 (at 01:00 UTC): local 00:00, 01:00,
    # 03:00 are UTC 23:00, 00:00, 01:00 (hours 23-25), 04:00 CEST is 02:00 UTC: three cheap
    # hours, not four. Released at 3, a 4 h job takes 22-25 or 23-26:
    # 40 + 10 x (3 x 20 + 100) / 1000 = $41.60 (a fixed UTC+1 would give 23-26, $40.80)
    r = region(tou(100, (0, 4, 20)), tz="Europe/Berlin")
    return instance(
        {"r": r}, [job(gpu_hours=40, release=3)], hours=48, start="2023-03-25T00:00:00Z"
    )


@case("tou-dst-fall-back", "prices", 51.00, {"job": {"hours": (22, 23, 24, 25, 26)}})
def _() -> Doc:
    # Berlin, from Saturday 2023-10-28 00:00 UTC (CEST, UTC+2), 48 h; $20 in local 00-04. On
    # Sunday 29 October 03:00 CEST falls back to 02:00 CET (at 01:00 UTC): local 00-04 runs
    # from 22:00 UTC Saturday to 03:00 UTC Sunday, five hours (22-26). Released at 3, a 5 h
    # job: 50 + 5 x 10 x 20 / 1000 = $51.00 (a fixed UTC+2 would leave four: $51.80)
    r = region(tou(100, (0, 4, 20)), tz="Europe/Berlin")
    return instance(
        {"r": r}, [job(gpu_hours=50, release=3)], hours=48, start="2023-10-28T00:00:00Z"
    )


@case("inline-prices", "prices", 30.75, {"job": {"hours": (3, 4, 5)}})
def _() -> Doc:
    # hours at 90, 80, 70, 30, 20, 25, 60, 90 USD/MWh; a 3 h job (30 GPU-h): the runs' price
    # sums are 240, 180, 120, 75, 105, 175: hours 3-5, 30 + 10 x 75 / 1000 = $30.75
    return instance(
        {"r": region(values(90, 80, 70, 30, 20, 25, 60, 90))}, [job(gpu_hours=30)], hours=8
    )


@case("negative-prices", "prices", 19.50, {"job": {"hours": (1, 2)}, "costs": {"energy": -0.5}})
def _() -> Doc:
    # prices 50, -20, -30, 40: a 2 h job runs in hours 1-2 and is paid for its power:
    # 20 + 10 kW x (-20 - 30) / 1000 = 20 - 0.50 = $19.50
    return instance({"r": region(values(50, -20, -30, 40))}, [job(gpu_hours=20)], hours=4)


@case("inline-scale-and-adder", "prices", 21.40, {"job": {"hours": (2, 3)}})
def _() -> Doc:
    # values 10, 40, 20, 20 scaled x3 = 30, 120, 60, 60, then +$10 adder = 40, 130, 70, 70;
    # 2 h runs: 170, 200, 140: hours 2-3, 20 + 10 x 140 / 1000 = $21.40
    elec = {"values": [10, 40, 20, 20], "scale": 3}
    return instance({"r": region(elec, price_adder_usd_per_mwh=10)}, [job(gpu_hours=20)], hours=4)


# ============================================================================ windows


@case("release", "windows", 20.60, {"job": {"hours": (3, 4)}})
def _() -> Doc:
    # prices 10, 10, 10, 10, 50, 60, 70, 80, 90, 100; released at hour 3, a 2 h job:
    # hours 3-4 (10 + 50), 20 + 10 x 60 / 1000 = $20.60
    prices = values(10, 10, 10, 10, 50, 60, 70, 80, 90, 100)
    return instance({"r": region(prices)}, [job(gpu_hours=20, release=3)], hours=10)


@case("deadline", "windows", 32.10, {"job": {"hours": (2, 3, 4)}})
def _() -> Doc:
    # prices 100 down to 30 by 10 over 8 h; a 3 h job due at hour 5: runs 0-2 (270), 1-3
    # (240), 2-4 (210): hours 2-4, 30 + 10 x 210 / 1000 = $32.10
    prices = values(100, 90, 80, 70, 60, 50, 40, 30)
    return instance({"r": region(prices)}, [job(gpu_hours=30, deadline=5)], hours=8)


@case("window-exact", "windows", 42.00, {"job": {"hours": (2, 3, 4, 5)}})
def _() -> Doc:
    # released at 2, due at 6: the 4 h job fills its window, 40 + 4 x 10 x 50 / 1000 = $42.00
    return instance({"r": region(50)}, [job(gpu_hours=40, release=2, deadline=6)])


@case("deadline-date-time", "windows", 20.50, {"job": {"hours": (1, 2)}})
def _() -> Doc:
    # due at 2023-06-05T05:00+02:00 = 03:00 UTC = hour 3; prices 40, 30, 20, 10, 5, 5: hours
    # 1-2, 20 + 10 x 50 / 1000 = $20.50
    prices = values(40, 30, 20, 10, 5, 5)
    return instance(
        {"r": region(prices)},
        [job(gpu_hours=20, deadline="2023-06-05T05:00:00+02:00")],
        hours=6,
    )


@case("release-date-time", "windows", 20.90, {"job": {"hours": (6, 7)}})
def _() -> Doc:
    # released at 2023-06-05T04:00-02:00 = 06:00 UTC = hour 6; prices $5 before it, then 50,
    # 40, 60, 70: runs 6-7 (90), 7-8 (100), 8-9 (130): 20 + 10 x 90 / 1000 = $20.90
    prices = values(5, 5, 5, 5, 5, 5, 50, 40, 60, 70)
    return instance(
        {"r": region(prices)},
        [job(gpu_hours=20, release="2023-06-05T04:00:00-02:00")],
        hours=10,
    )


@case("capacity-series", "windows", 42.00, {"job": {"hours": (2, 3, 4, 5)}})
def _() -> Doc:
    # capacity 0, 0, then 10 GPUs; due at hour 6: hours 2-5, 40 + 4 x 10 x 50 / 1000 = $42.00
    return instance({"r": region(50, cap=[0, 0] + [10] * 22)}, [job(gpu_hours=40, deadline=6)])


@case("zones-rule-out-a-region", "windows", 42.00, {"job": {"region": "b"}})
def _() -> Doc:
    # the phase needs two availability zones: only b ($50/MWh, 2 zones), not a ($20, 1 zone):
    # $42.00
    return instance(
        {"a": region(20), "b": region(50, zones=2)},
        [job(gpu_hours=40, redundancy={"zones": 2})],
    )


SMALL = {**G, "memory_gb": 24}


@case("memory-allows-the-small-gpu", "windows", 34.00, {"job": {"gpu": "S"}})
def _() -> Doc:
    # S (24 GiB, as fast, $0.80/GPU-h) beside G ($1): 32 + 2 = $34.00
    r = region(50, cap={"G": 10, "S": 10}, offers_by={"G": od(1.0), "S": od(0.8)})
    return instance({"r": r}, [job(gpu_hours=40, gpu="G")], gpu_types={"G": G, "S": SMALL})


@case("memory-rules-out-the-small-gpu", "windows", 42.00, {"job": {"gpu": "G"}})
def _() -> Doc:
    # the phase needs 30 GB per GPU (+ 1.5 GB of buffers): S holds 24 GiB = 25.77 GB, 95% of
    # it usable, 24.48 GB: only G fits, $42.00
    r = region(50, cap={"G": 10, "S": 10}, offers_by={"G": od(1.0), "S": od(0.8)})
    return instance(
        {"r": r}, [job(gpu_hours=40, gpu="G", memory_gb=30)], gpu_types={"G": G, "S": SMALL}
    )


# ============================================================================ precedence

NIGHT5 = tou(100, (0, 5, 20))


@case(
    "chain-two",
    "precedence",
    51.00,
    {"prep": {"hours": (0, 1)}, "train": {"hours": (2, 3, 4)}},
)
def _() -> Doc:
    # $20/MWh in hours 0-4, $100 after; prep (2 h) then train (3 h) fill the five cheap hours:
    # rental 5 x $10 = 50, energy 5 x 10 kW x 20 / 1000 = 1.00: $51.00
    return instance(
        {"r": region(NIGHT5)},
        [job("prep", 20), job("train", 30, predecessors=["prep"])],
    )


@case(
    "chain-too-long-for-the-night",
    "precedence",
    52.60,
    {"prep": {"hours": (0, 1)}, "train": {"hours": (2, 3, 4)}},
)
def _() -> Doc:
    # $20/MWh in hours 0-2 only: prep 0-1, train 2-4 (one cheap hour, two dear):
    # rental 50 + energy 10 x (3 x 20 + 2 x 100) / 1000 = 2.60: $52.60
    return instance(
        {"r": region(tou(100, (0, 3, 20)))},
        [job("prep", 20), job("train", 30, predecessors=["prep"])],
    )


@case(
    "chain-three",
    "precedence",
    42.00,
    {"a": {"hours": (0,)}, "b": {"hours": (1, 2)}, "c": {"hours": (3,)}},
)
def _() -> Doc:
    # a (1 h) -> b (2 h) -> c (1 h) due at hour 4: they fill hours 0-3 in order,
    # rental 4 x 10 + energy 4 x 10 x 50 / 1000 = 40 + 2 = $42.00
    return instance(
        {"r": region(50)},
        [
            job("a", 10),
            job("b", 20, predecessors=["a"]),
            job("c", 10, predecessors=["b"], deadline=4),
        ],
    )


def _diamond(cap: int) -> Doc:
    """a (1 h) -> b, c (2 h each) -> d (1 h), all on 10 GPUs, due at hour 6; prices $20 in
    hours 0-3, $100 in 4-5."""
    return instance(
        {"r": region(values(20, 20, 20, 20, 100, 100), cap=cap)},
        [
            job("a", 10),
            job("b", 20, predecessors=["a"]),
            job("c", 20, predecessors=["a"]),
            job("d", 10, predecessors=["b", "c"], deadline=6),
        ],
        hours=6,
    )


@case("diamond-shared-capacity", "precedence", 62.80, {"a": {"hours": (0,)}, "d": {"hours": (5,)}})
def _() -> Doc:
    # capacity 10: b and c cannot overlap, so a 0, b and c in 1-4, d 5: six phase-hours,
    # rental 60, energy 10 kW x (4 x 20 + 2 x 100) / 1000 = 2.80: $62.80
    return _diamond(10)


@case(
    "diamond-parallel",
    "precedence",
    61.20,
    {"a": {"hours": (0,)}, "b": {"hours": (1, 2)}, "c": {"hours": (1, 2)}, "d": {"hours": (3,)}},
)
def _() -> Doc:
    # capacity 20: b and c side by side in 1-2, d at 3, all at $20: rental 60 + energy
    # 6 x 10 x 20 / 1000 = 1.20: $61.20
    return _diamond(20)


@case("two-jobs-share-the-night", "precedence", 40.80)
def _() -> Doc:
    # two independent 2 h jobs on 10 GPUs, capacity 10, $20 in hours 0-3: one after the other
    # in the night: rental 40 + energy 4 x 10 x 20 / 1000 = 0.80: $40.80
    return instance({"r": region(tou(100, (0, 4, 20)))}, [job("a", 20), job("b", 20)])


@case("done-predecessor", "precedence", 31.50, {"train": {"hours": (0, 1, 2)}})
def _() -> Doc:
    # prep is done (its output exists): train (3 h) starts at once, due at 3:
    # 30 + 3 x 10 x 50 / 1000 = $31.50
    return instance(
        {"r": region(50)},
        [job("prep", 20, done=True), job("train", 30, predecessors=["prep"], deadline=3)],
    )


# ============================================================================ regions


@case("region-by-energy", "regions", 42.80, {"job": {"region": "b"}})
def _() -> Doc:
    # a: $1.00/GPU-h, $100/MWh: 40 + 4 x 10 x 100 / 1000 = $44.00
    # b: $1.05/GPU-h, $20/MWh: 42 + 4 x 10 x 20 / 1000 = $42.80
    return instance({"a": region(100), "b": region(20, offers=od(1.05))}, [job(gpu_hours=40)])


@case("region-by-rental", "regions", 44.00, {"job": {"region": "a"}})
def _() -> Doc:
    # b at $1.10/GPU-h: 44 + 0.80 = $44.80 > a's $44.00
    return instance({"a": region(100), "b": region(20, offers=od(1.10))}, [job(gpu_hours=40)])


def _staged(transfer_to_b: float | None) -> Doc:
    """100 GB of input data at home in a ($100/MWh); b is at $20/MWh."""
    a = region(100)
    if transfer_to_b is not None:
        a["transfer_usd_per_gb"] = {"b": transfer_to_b}
    return instance(
        {"a": a, "b": region(20)},
        [job(gpu_hours=40, data={"size_gb": 100, "home_region": "a"}, output_gb=0)],
    )


@case("data-staging-pays", "regions", 42.80, {"job": {"region": "b"}, "costs": {"transfer": 2}})
def _() -> Doc:
    # staging 100 GB to b at the default $0.02/GB = $2: b 40 + 0.80 + 2 = $42.80 < a's
    # 40 + 4 x 10 x 100 / 1000 = $44.00 (reading 100 GB at 1 GB/s takes 100 s < 4 h)
    return _staged(None)


@case("data-staging-too-dear", "regions", 44.00, {"job": {"region": "a"}})
def _() -> Doc:
    # a -> b at $0.05/GB: 100 x 0.05 = $5, b 45.80 > a's $44.00
    return _staged(0.05)


@case(
    "output-transfer",
    "regions",
    53.50,
    {"prep": {"region": "a"}, "train": {"region": "b"}, "costs": {"transfer": 1.0}},
)
def _() -> Doc:
    # prep only in a, train only in b, both at $50/MWh; prep's 50 GB output moves a -> b at
    # $0.02/GB = $1: prep 20 + 1.00, train 30 + 1.50, transfer 1: $53.50
    return instance(
        {"a": region(50), "b": region(50)},
        [
            job("prep", 20, regions=["a"], output_gb=50),
            job("train", 30, regions=["b"], predecessors=["prep"]),
        ],
    )


@case(
    "output-transfer-keeps-phases-together",
    "regions",
    52.00,
    {"prep": {"region": "b"}, "train": {"region": "b"}, "costs": {"transfer": 0}},
)
def _() -> Doc:
    # a: $0.90/GPU-h, $50/MWh; b: $1, $40/MWh; train only in b; prep's output 200 GB.
    # prep in a: 18 + 2 x 10 x 50 / 1000 = 19.00 + moving 200 GB x $0.02 = 4: $23.00
    # prep in b: 20 + 2 x 10 x 40 / 1000 = $20.80; train in b: 30 + 1.20 = 31.20: $52.00
    return instance(
        {"a": region(50, offers=od(0.9)), "b": region(40)},
        [
            job("prep", 20, output_gb=200),
            job("train", 30, regions=["b"], predecessors=["prep"]),
        ],
    )


@case("successor-retrieval", "regions", 53.00, {"costs": {"transfer": 0.50}})
def _() -> Doc:
    # the archive tier charges $0.01/GB read back: train retrieves prep's 50 GB output,
    # 50 x 0.01 = $0.50; prep 20 + 1.00, train 30 + 1.50: $53.00
    tier = {"hot": {"usd_per_gb_month": 0.0, "retrieval_usd_per_gb": 0.01}}
    return instance(
        {"r": region(50, storage=tier)},
        [job("prep", 20, output_gb=50), job("train", 30, predecessors=["prep"])],
    )


@case("read-passes-retrieval", "regions", 44.00, {"costs": {"transfer": 2.0}})
def _() -> Doc:
    # 100 GB read twice from a tier charging $0.01/GB: 100 x 2 x 0.01 = $2 (200 s of reading);
    # 40 + 2 + 2 = $44.00
    tier = {"hot": {"usd_per_gb_month": 0.0, "retrieval_usd_per_gb": 0.01}}
    return instance(
        {"r": region(50, storage=tier)},
        [job(gpu_hours=40, data={"size_gb": 100, "read_passes": 2}, output_gb=0)],
    )


@case("io-bound", "regions", 105.00, {"job": {"hours": tuple(range(10))}})
def _() -> Doc:
    # 36,000 GB read at 1 GB/s on one node = 36,000 s = 10 h > 4 h of compute: n = 10 h,
    # due at 10: rental 100 + energy 10 x 10 x 50 / 1000 = 5: $105.00
    return instance(
        {"r": region(50)},
        [job(gpu_hours=40, deadline=10, data={"size_gb": 36000}, output_gb=0)],
    )


# ============================================================================ fleets

FLEET = {"G": G, "F": F}


def _fleet(f_price: float, electricity: float | dict[str, object] = 50, **phase: object) -> Doc:
    """G at $1/GPU-h and F (twice as fast, 2 kW) at ``f_price``, 10 of each."""
    r = region(
        electricity,
        cap={"G": 10, "F": 10},
        offers_by={"G": od(1.0), "F": od(f_price)},
    )
    return instance({"r": r}, [job(gpu_hours=40, **phase)], gpu_types=FLEET)


@case("fleet-slow-and-cheap", "fleets", 42.00, {"job": {"gpu": "G"}})
def _() -> Doc:
    # G: 4 h, 40 + 4 x 10 x 50 / 1000 = $42.00; F: 2 h x 10 x $2.50 = 50 + 2 x 20 kW x 50 /
    # 1000 = 2: $52.00
    return _fleet(2.5)


@case("fleet-deadline-needs-the-fast-gpu", "fleets", 52.00, {"job": {"gpu": "F", "hours": (0, 1)}})
def _() -> Doc:
    # due at hour 2: only F (2 h) fits: $52.00
    return _fleet(2.5, deadline=2)


@case("fleet-fast-gpu-fits-the-night", "fleets", 42.80, {"job": {"gpu": "F", "hours": (0, 1)}})
def _() -> Doc:
    # $20/MWh in hours 0-1, $200 after. G: 4 h from 0, 40 + 10 x (2 x 20 + 2 x 200) / 1000
    # = $44.40; F at $2.10: 2 h in the night, 42 + 20 x 2 x 20 / 1000 = 0.80: $42.80
    return _fleet(2.1, tou(200, (0, 2, 20)))


@case("fleet-work-measured-on-the-fast-gpu", "fleets", 84.00, {"job": {"gpu": "G"}})
def _() -> Doc:
    # 40 GPU-h measured on F = 80 G-hours: G 8 h, 80 + 8 x 10 x 50 / 1000 = $84.00; F 4 h at
    # $2.10: 84 + 4 x 20 x 50 / 1000 = $88.00
    d = _fleet(2.1)
    d["phases"][0]["work"]["gpu"] = "F"
    return d


# ============================================================================ counts


def _counts(cap: int, **offer: object) -> Doc:
    """10 or 20 GPUs, $20/MWh in hours 0-1 and $200 after."""
    return instance(
        {"r": region(tou(200, (0, 2, 20)), cap=cap, offers=od(1.0, **offer))},
        [job(gpu_hours=40, gpus=(10, 20))],
    )


@case("more-gpus-fit-the-night", "counts", 40.80, {"job": {"gpus": 20, "hours": (0, 1)}})
def _() -> Doc:
    # 20 GPUs do 40 GPU-h in 2 h, the cheap ones: 40 + 2 x 20 kW x 20 / 1000 = $40.80
    # (10 GPUs for 4 h: 40 + 10 x (2 x 20 + 2 x 200) / 1000 = $44.40)
    return _counts(20)


@case("capacity-allows-fewer-gpus", "counts", 44.40, {"job": {"gpus": 10, "hours": (0, 1, 2, 3)}})
def _() -> Doc:
    # capacity 10: 10 GPUs from hour 0, $44.40
    return _counts(10)


@case("min-rental-prefers-fewer-gpus", "counts", 44.40, {"job": {"gpus": 10}})
def _() -> Doc:
    # a 4 h minimum rental: 20 GPUs pay 4 x $20 = 80 + 0.80 = $80.80; 10 GPUs $44.40
    return _counts(20, min_rental_hours=4)


@case("min-rental", "counts", 62.00, {"costs": {"rental": 60}})
def _() -> Doc:
    # a 6 h minimum rental for a 4 h job: 6 x $10 + 4 x 10 x 50 / 1000 = 60 + 2 = $62.00
    return instance({"r": region(50, offers=od(1.0, min_rental_hours=6))}, [job(gpu_hours=40)])


@case("billing-blocks", "counts", 82.50, {"costs": {"rental": 80}})
def _() -> Doc:
    # billed in 4 h blocks, a 5 h job touches two: 8 x $10 = 80 + 5 x 10 x 50 / 1000 = $82.50
    offers = od(1.0, billing_granularity_hours=4)
    return instance({"r": region(50, offers=offers)}, [job(gpu_hours=50)])


@case("billing-blocks-aligned", "counts", 41.40, {"job": {"hours": (4, 5, 6, 7)}})
def _() -> Doc:
    # 4 h blocks; prices 60, 60, 20, 20, 20, 20, then 50 (12 h). Hours 2-5 (the cheapest
    # power, 0.80) touch two blocks: $80.80. Hours 0-3: 40 + 10 x 160 / 1000 = 41.60;
    # hours 4-7: 40 + 10 x 140 / 1000 = $41.40; hours 8-11: 40 + 2.00.
    offers = od(1.0, billing_granularity_hours=4)
    prices = values(60, 60, 20, 20, 20, 20, 50, 50, 50, 50, 50, 50)
    return instance({"r": region(prices, offers=offers)}, [job(gpu_hours=40)], hours=12)


@case("scaling-out-costs-efficiency", "counts", 63.00, {"job": {"gpus": 20, "hours": (0, 1, 2)}})
def _() -> Doc:
    # MFU measured on one node (10 GPUs); two nodes keep 0.8 per doubling: 20 GPUs do 16 GPU
    # equivalents, 40 / 16 = 2.5 h -> 3 h. Due at hour 3, only they fit:
    # 3 x $20 + 3 x 20 kW x 50 / 1000 = 60 + 3 = $63.00
    return instance(
        {"r": region(50, cap=20)},
        [
            job(
                gpu_hours=40,
                gpus=(10, 20),
                deadline=3,
                scaling={"per_doubling": 0.8, "reference_gpus": 10},
            )
        ],
    )


@case("mfu-measured-on-two-nodes", "counts", 42.00, {"job": {"hours": (0, 1, 2, 3)}})
def _() -> Doc:
    # 50 GPU-h whose MFU was measured on 20 GPUs (two nodes, 0.8 per doubling): one node runs
    # at eff(10) / eff(20) = 1 / 0.8 = 1.25 x the MFU: 50 / 12.5 = 4 h, due at 4:
    # 40 + 2 = $42.00 (at the MFU itself it would need 5 h)
    return instance(
        {"r": region(50)},
        [
            job(
                gpu_hours=50,
                deadline=4,
                scaling={"per_doubling": 0.8, "reference_gpus": 20},
            )
        ],
    )


# ============================================================================ fractions


@case("fraction-beats-minimum-rental", "fractions", 2.10, {"job": {"gpus": 0.5}})
def _() -> Doc:
    # 2 GPU-h; 4 h minimum rental. 1 GPU: 2 h, billed 4 x $1 = 4 + 2 x 1 kW x 50 / 1000 = 0.10
    # = $4.10. Half a GPU: 4 h, 4 x $0.50 = 2 + 4 x 0.5 kW x 50 / 1000 = 0.10: $2.10
    return instance(
        {"r": region(50, offers=od(1.0, min_rental_hours=4))},
        [job(gpu_hours=2, gpus=(1, 0.5))],
    )


@case(
    "fraction-too-slow-for-the-deadline", "fractions", 2.10, {"job": {"gpus": 1, "hours": (0, 1)}}
)
def _() -> Doc:
    # due at hour 3: half a GPU needs 4 h; 1 GPU 2 h: 2 x $1 + 2 x 1 kW x 50 / 1000 = $2.10
    return instance({"r": region(50)}, [job(gpu_hours=2, gpus=(1, 0.5), deadline=3)])


@case("fraction-carries-its-share-of-the-node", "fractions", 2.11, {"job": {"gpus": 0.5}})
def _() -> Doc:
    # a node draws 1 kW beside its GPUs. 1 GPU: one node, 1 + 1 = 2 kW for 2 h: 2 + 2 x 2 x
    # 50 / 1000 = $2.20. Half a GPU: 0.5 kW + 0.5/10 of a node's 1 kW = 0.55 kW for 4 h:
    # 4 x 0.50 + 4 x 0.55 x 50 / 1000 = 2 + 0.11 = $2.11
    gpu = {**G, "node_overhead_w": 1000}
    return instance({"r": region(50)}, [job(gpu_hours=2, gpus=(1, 0.5))], gpu_types={"G": gpu})


@case(
    "fractions-share-a-gpu",
    "fractions",
    4.20,
    {"a": {"gpus": 0.5, "hours": (0, 1, 2, 3)}, "b": {"gpus": 0.5, "hours": (0, 1, 2, 3)}},
)
def _() -> Doc:
    # one GPU of capacity, a 4 h minimum rental; two jobs of 2 GPU-h due at 4. Half a GPU each
    # (4 h) side by side in hours 0-3: each 4 x 0.50 + 4 x 0.5 kW x 50 / 1000 = 2.10: $4.20
    # (a whole GPU each, one after the other, pays 4 x $1 + 0.10 = 4.10 each: $8.20)
    return instance(
        {"r": region(50, cap=1, offers=od(1.0, min_rental_hours=4))},
        [job("a", 2, gpus=(1, 0.5), deadline=4), job("b", 2, gpus=(1, 0.5), deadline=4)],
    )


# ============================================================================ spot

SPOT_FAILURE = {"detect_hours": 0.05, "restart_hours": 0.1, "spare_swap_hours": 0.05}


def _spot(preempt: float, preemptible: bool = True, **failure: float) -> Doc:
    offers = {**od(1.0), "spot": {"usd_per_gpu_hour": 0.5, "preemptions_per_hour": preempt}}
    return instance(
        {"r": region(50, offers=offers)},
        [job(gpu_hours=40, preemptible=preemptible, resume_overhead_hours=0.25)],
        failure={**SPOT_FAILURE, **failure},
    )


@case("spot-without-preemptions", "spot", 22.00, {"job": {"contract": "spot"}})
def _() -> Doc:
    # spot at $0.50/GPU-h, never preempted: 4 x $5 + 4 x 10 x 50 / 1000 = 20 + 2 = $22.00
    return _spot(0.0)


@case("spot-needs-a-preemptible-phase", "spot", 42.00, {"job": {"contract": "on_demand"}})
def _() -> Doc:
    # the phase may not pause: on demand, $42.00
    return _spot(0.0, preemptible=False)


@case(
    "spot-with-preemptions",
    "spot",
    22.33502538,
    {"job": {"contract": "spot"}, "costs": {"failure": 0.33502538}},
)
def _() -> Doc:
    # 0.1 preemptions/h; nothing to checkpoint, so a preemption loses its downtime
    # L = D = detect 0.05 + restart 0.10 = 0.15 h; failures per running hour
    # f = 0.1 / (1 - 0.1 x 0.15) = 0.1015228; each costs L x (rho + E) = 0.15 x (5 + 0.50):
    # 0.1015228 x 0.825 = 0.0837563 per hour, x 4 h = 0.3350254; 22 + 0.3350254 = $22.3350254
    return _spot(0.1)


@case("spot-preempted-too-often", "spot", 42.00, {"job": {"contract": "on_demand"}})
def _() -> Doc:
    # 0.5 preemptions/h, a restart of 1 h (detect 0): L = 1, f = 0.5 / (1 - 0.5) = 1 per hour,
    # costing 1 x (5 + 0.50) = 5.50: spot $11.00/h > on demand $10.50/h: $42.00
    return _spot(0.5, detect_hours=0.0, restart_hours=1.0)


@case(
    "spot-takes-the-cheap-hours", "spot", 15.15, {"job": {"contract": "spot", "hours": (2, 7, 11)}}
)
def _() -> Doc:
    # a preemptible 3 h job, free to resume, prices 50 but 5 in hours 2, 7, 11: spot runs
    # exactly those: 3 x $5 + 3 x 10 x 5 / 1000 = 15 + 0.15 = $15.15
    prices = [50.0] * 24
    for t in (2, 7, 11):
        prices[t] = 5.0
    offers = {**od(1.0), "spot": {"usd_per_gpu_hour": 0.5, "preemptions_per_hour": 0}}
    return instance(
        {"r": region({"values": prices}, offers=offers)},
        [job(gpu_hours=30, preemptible=True, resume_overhead_hours=0.0)],
    )


# ============================================================================ reserved


def _reserved(gpu_hours: float, **reserved: object) -> Doc:
    """T = 20 h, free power, on demand $2.00/GPU-h, reserved $1.20/GPU-h for the horizon."""
    offers = {**od(2.0), "reserved": {"usd_per_gpu_hour": 1.2, **reserved}}
    return instance(
        {"r": region(0, offers=offers)}, [job(gpu_hours=gpu_hours, deadline=20)], hours=20
    )


@case("reserved-pays-above-utilisation", "reserved", 240.00, {"reserved": (("r", "G", 10),)})
def _() -> Doc:
    # 13 h on 10 GPUs: on demand 13 x $20 = $260; 10 GPUs reserved for 20 h x $1.20 = $240
    return _reserved(130)


@case(
    "reserved-idle-too-much", "reserved", 220.00, {"reserved": (), "job": {"contract": "on_demand"}}
)
def _() -> Doc:
    # 11 h: on demand $220 < the reservation's $240
    return _reserved(110)


@case("reserved-min-gpus", "reserved", 260.00, {"reserved": ()})
def _() -> Doc:
    # at least 20 GPUs reserved: 20 x 20 x 1.20 = $480 > on demand $260
    return _reserved(130, min_gpus=20)


@case("reserved-pool-shared", "reserved", 240.00, {"reserved": (("r", "G", 10),)})
def _() -> Doc:
    # two 8 h jobs on 10 GPUs, capacity 10: on demand 2 x 8 x $20 = $320; one pool of 10
    # GPUs for 20 h, used by both in turn: $240
    offers = {**od(2.0), "reserved": {"usd_per_gpu_hour": 1.2}}
    return instance(
        {"r": region(0, offers=offers)},
        [job("a", 80, deadline=20), job("b", 80, deadline=20)],
        hours=20,
    )


@case("reserved-with-licence", "reserved", 305.00, {"reserved": (("r", "G", 10),)})
def _() -> Doc:
    # a licence of $0.50/GPU-h on every GPU-hour held: on demand 130 x 2.50 = $325;
    # reserved 240 + 130 x 0.50 = $305
    d = _reserved(130)
    d["phases"][0]["licence_usd_per_gpu_hour"] = 0.5
    return d


# ============================================================================ licence, porting


@case("licence", "porting", 62.00, {"costs": {"rental": 60}})
def _() -> Doc:
    # $0.50/GPU-h licence on $1/GPU-h: 4 x 10 x 1.50 = 60 + 4 x 10 x 50 / 1000 = $62.00
    return instance({"r": region(50)}, [job(gpu_hours=40, licence_usd_per_gpu_hour=0.5)])


def _ported(**phase: object) -> Doc:
    """G at $1 and F (family amd, porting $100) at $1: F does the work in half the hours."""
    d = _fleet(1.0, **phase)
    d["gpu_types"]["F"]["family"] = "amd"
    d["families"] = {"amd": {"porting_usd": 100}}
    return d


@case("porting-avoided", "porting", 42.00, {"job": {"gpu": "G"}})
def _() -> Doc:
    # F: 2 h x $10 + 2 x 20 kW x 50 / 1000 = 22 + porting 100 = $122; G: $42.00
    return _ported()


@case("porting-paid", "porting", 122.00, {"job": {"gpu": "F"}, "costs": {"porting": 100}})
def _() -> Doc:
    # due at hour 2: only F fits, 22 + 100 = $122.00
    return _ported(deadline=2)


@case("porting-once-per-family", "porting", 38.00, {"prep": {"gpu": "F"}, "train": {"gpu": "F"}})
def _() -> Doc:
    # porting to F's family $5. prep 20 GPU-h: G 2 h $21, F 1 h 10 + 20 x 50 / 1000 = $11;
    # train 30 GPU-h: G 3 h $31.50, F 1.5 h -> 2 h, 20 + 2 = $22. Both on F: 11 + 22 + 5 =
    # $38.00 (one porting for both); both on G $52.50; mixed $47.50 or $48.00
    d = _ported()
    d["families"]["amd"]["porting_usd"] = 5
    d["phases"] = [job("prep", 20), job("train", 30, predecessors=["prep"])]
    return d


# ============================================================================ carbon


@case("carbon-price", "carbon", 44.00, {"emissions_t": 0.02, "costs": {"carbon": 2}})
def _() -> Doc:
    # 500 gCO2/kWh, $100/t: 40 kWh x 500 g = 0.02 t = $2: 40 + 2 + 2 = $44.00
    return instance(
        {"r": region(50, carbon_intensity={"constant": 500})},
        [job(gpu_hours=40)],
        objective={"carbon_usd_per_tonne": 100},
    )


@case("carbon-price-moves-the-job", "carbon", 42.20, {"job": {"region": "b"}})
def _() -> Doc:
    # $50/t. a: $40/MWh, 800 g: 40 + 1.60 + 0.032 t x 50 = $43.20;
    # b: $50/MWh, 100 g: 40 + 2.00 + 0.004 t x 50 = $42.20
    return instance(
        {
            "a": region(40, carbon_intensity={"constant": 800}),
            "b": region(50, carbon_intensity={"constant": 100}),
        },
        [job(gpu_hours=40)],
        objective={"carbon_usd_per_tonne": 50},
    )


@case("carbon-weight", "carbon", 46.00, {"costs": {"carbon": 2, "total": 44}})
def _() -> Doc:
    # carbon weighted 2: the objective 40 + 2 + 2 x 2 = $46.00 (the total stays $44.00)
    return instance(
        {"r": region(50, carbon_intensity={"constant": 500})},
        [job(gpu_hours=40)],
        objective={"carbon_usd_per_tonne": 100, "weights": {"carbon": 2}},
    )


@case("rental-weight", "carbon", 22.00, {"costs": {"rental": 40, "total": 42}})
def _() -> Doc:
    # rental weighted 0.5: 0.5 x 40 + 2 = $22.00
    return instance({"r": region(50)}, [job(gpu_hours=40)], objective={"weights": {"rental": 0.5}})


def _cap(cap: float) -> Doc:
    """Issue 22's carbon cap: hours 0-11 at $0/MWh and 500 g, 12-23 at $500/MWh and 100 g;
    4 GPUs of 1 kW, a 4 h job on 4 GPUs."""
    r = region(
        tou(0, (12, 24, 500)),
        cap=4,
        carbon_intensity=tou(500, (12, 24, 100)),
    )
    return instance(
        {"r": r},
        [job(gpu_hours=16, gpus=(4,))],
        objective={"carbon_cap_tonnes": cap},
    )


@case("carbon-cap-binds", "carbon", 24.00, {"emissions_t": 0.0016})
def _() -> Doc:
    # cap 0.002 t: hours 0-3 emit 16 kWh x 500 g = 0.008 t, too much; a run in 12-23 emits
    # 16 x 100 g = 0.0016 t and costs 16 + 16 kWh x $0.50 = $24.00 (a run across hour 12
    # emits at least 4 x 500 + 12 x 100 g = 0.0032 t)
    return _cap(0.002)


@case("carbon-cap-slack", "carbon", 16.00, {"emissions_t": 0.008})
def _() -> Doc:
    # cap 0.01 t: hours 0-11 (free power, 0.008 t) are allowed: $16.00
    return _cap(0.01)


@case("carbon-cap-moves-the-job", "carbon", 44.00, {"job": {"region": "clean"}})
def _() -> Doc:
    # cap 0.01 t. dirty: $20/MWh, 500 g: 40 + 0.80 = $40.80 but 40 kWh x 500 g = 0.02 t;
    # clean: $100/MWh, 50 g: 40 + 4.00 = $44.00, 0.002 t
    return instance(
        {
            "dirty": region(20, carbon_intensity={"constant": 500}),
            "clean": region(100, carbon_intensity={"constant": 50}),
        },
        [job(gpu_hours=40)],
        objective={"carbon_cap_tonnes": 0.01},
    )


@case(
    "carbon-cap-with-pauses",
    "carbon",
    31.50,
    {"job": {"hours": (3, 9, 15)}, "emissions_t": 0.0015},
)
def _() -> Doc:
    # a preemptible 3 h job, free to resume, $50/MWh; 500 g/kWh but 50 g in hours 3, 9 and 15;
    # cap 0.002 t: the three clean hours emit 3 x 10 kWh x 50 g = 0.0015 t (one dirty hour
    # instead adds 5 kg): 30 + 3 x 10 x 50 / 1000 = $31.50
    ci = [500.0] * 24
    for t in (3, 9, 15):
        ci[t] = 50.0
    return instance(
        {"r": region(50, carbon_intensity={"values": ci})},
        [job(gpu_hours=30, preemptible=True, resume_overhead_hours=0.0)],
        objective={"carbon_cap_tonnes": 0.002},
    )


@case("carbon-cap-zero", "carbon", 44.00, {"job": {"region": "nodata"}, "emissions_t": 0.0})
def _() -> Doc:
    # cap 0 t: a region without carbon data counts no emissions. dirty: $20/MWh, 500 g,
    # $40.80 but 0.02 t; nodata: $100/MWh: 40 + 4.00 = $44.00
    return instance(
        {
            "dirty": region(20, carbon_intensity={"constant": 500}),
            "nodata": region(100),
        },
        [job(gpu_hours=40)],
        objective={"carbon_cap_tonnes": 0.0},
    )


# ============================================================================ spares


def _spares(rate: float) -> Doc:
    """8 GPUs on one 8-GPU node at $1/GPU-h, free power, nothing to checkpoint; failures
    noticed at once, a restart 10 h, a swap to a spare node 0.1 h; 0 or 1 spare node."""
    gpu = {**G, "gpus_per_node": 8, "failures_per_gpu_hour": rate}
    return instance(
        {"r": region(0, cap=16)},
        [job(gpu_hours=80, gpus=(8,), spares=(0, 1))],
        gpu_types={"G": gpu},
        failure={"restart_hours": 10, "spare_swap_hours": 0.1, "detect_hours": 0},
    )


@case("spare-pays", "spares", 160.965795, {"job": {"spare_gpus": 8}}, tol=1e-5)
def _() -> Doc:
    # lambda = 8 x 0.0075 = 0.06/h, 10 h of work. No spare: L = D = 10 h, f = 0.06 / 0.4 =
    # 0.15, 10 x (8 + 0.15 x 10 x 8) = $200. A spare node (8 more GPUs, $16/h): L = 0.1 h,
    # f = 0.06 / (1 - 0.006) = 0.0603622, 10 x (16 + 0.0603622 x 0.1 x 16) = 160 + 0.965795
    # = $160.965795
    return _spares(0.0075)


@case("spare-does-not-pay", "spares", 133.333333, {"job": {"spare_gpus": 0}}, tol=1e-5)
def _() -> Doc:
    # lambda = 0.04/h. No spare: f = 0.04 / 0.6 = 0.0666667, 10 x (8 + 0.0666667 x 80) =
    # 80 + 53.333333 = $133.333333; with a spare 10 x (16 + 0.04 / 0.996 x 1.6) = $160.64
    return _spares(0.005)


@case("required-spare-draws-idle-power", "spares", 82.40, {"job": {"spare_gpus": 10}})
def _() -> Doc:
    # one spare node required; idle 100 W per GPU, 500 W per node beside the GPUs.
    # rental (10 + 10) x $1 = $20/h; power 10 x 1 kW + 10 spares x 0.1 + 2 nodes x 0.5 = 12 kW:
    # 4 x 20 + 4 x 12 x 50 / 1000 = 80 + 2.40 = $82.40
    gpu = {**G, "idle_power_w": 100, "node_overhead_w": 500}
    return instance(
        {"r": region(50, cap=20)},
        [job(gpu_hours=40, redundancy={"spare_nodes": 1})],
        gpu_types={"G": gpu},
    )


# ============================================================================ failures

FAILING = {**G, "failures_per_gpu_hour": 0.001}
RESTART = {"detect_hours": 0.05, "restart_hours": 0.1, "spare_swap_hours": 0.05}


@case("failures-without-checkpoint", "failures", 42.06309464, {"costs": {"failure": 0.06309464}})
def _() -> Doc:
    # lambda = 10 x 0.001 = 0.01/h; nothing to checkpoint: L = D = 0.05 + 0.10 = 0.15 h;
    # f = 0.01 / (1 - 0.0015) = 0.0100150; per hour f x L x (rho + E) = 0.0100150 x 0.15 x
    # 10.50 = 0.0157737; 4 h: 0.0630946; 42 + 0.0630946 = $42.0630946
    return instance(
        {"r": region(50)},
        [job(gpu_hours=40)],
        gpu_types={"G": FAILING},
        failure=RESTART,
    )


def _checkpointed(scheme: str, **extra: object) -> Doc:
    """39.5 GPU-h (3.95 h of compute), lambda = 0.01/h, a 36 GB checkpoint on one node, a
    tier writing and reading 1 GB/s at $0.73/GB-month (two checkpoints kept:
    2 x 36 x 0.73 / 730 = $0.072 per running hour)."""
    tier = {"hot": {"usd_per_gb_month": 0.73}}
    phase = job(gpu_hours=39.5, checkpoint_gb=36, **extra)
    phase["options"]["checkpoint"] = [scheme] if scheme != "choose" else ["sync", "async"]
    return instance(
        {"r": region(50, storage=tier)},
        [phase],
        gpu_types={"G": FAILING},
        failure={**RESTART, "checkpoint": "sync" if scheme == "choose" else scheme},
    )


# Daly's interval for a sync checkpoint of 36 s at M = 3600 / 0.01 = 360,000 s:
#   sqrt(2 delta M) = sqrt(2 x 36 x 360000) = 5091.16882; r = delta / 2M = 5e-5;
#   x (1 + sqrt(r)/3 + r/9) = x 1.00236258 -> 5103.19711; - delta: tau = 5067.19711 s;
#   overhead 36 / (5067.19711 + 36) = 0.00705440: 3.95 h / (1 - 0.00705440) = 3.978 -> 4 h;
#   reload 36 s = 0.01 h: D = 0.05 + 0.10 + 0.01 = 0.16 h;
#   L = (5067.19711 + 36) / 2 / 3600 + 0.16 = 0.70877738 + 0.16 = 0.86877738 h;
#   f = 0.01 / (1 - 0.01 x 0.86877738) = 0.01008764 per running hour.


@case(
    "daly-sync",
    "failures",
    42.65608433,
    {"job": {"hours": (0, 1, 2, 3)}, "costs": {"storage": 0.288}},
)
def _() -> Doc:
    # failure per hour f L (rho + E) = 0.01008764 x 0.86877738 x 10.50 = 0.09202108; 4 h:
    # 0.36808433; storage 4 x 0.072 = 0.288; 40 + 2 + 0.288 + 0.36808433 = $42.65608433
    return _checkpointed("sync", deadline=4)


# Asynchronous: the stall is the snapshot of a 3.6 GB shard (36 GB / 10 GPUs) at 25 GB/s,
#   delta = 0.144 s; the write behind it, 36 s, is the lag. Daly(0.144 s, 360,000 s):
#   sqrt(2 x 0.144 x 360000) = sqrt(103680) = 321.99379; r = 0.144 / 720000 = 2e-7;
#   x (1 + sqrt(2e-7)/3 + 2e-7/9) = x 1.00014909 -> 322.04180; - 0.144: tau = 321.89780 s
#   (>= the 36 s lag); overhead 0.144 / 322.04180 = 0.00044715: 3.95 / 0.99955 -> 4 h;
#   L = (321.89780 + 0.144) / 2 / 3600 + 36 / 3600 + 0.16 = 0.04472803 + 0.01 + 0.16
#     = 0.21472803 h; f = 0.01 / (1 - 0.0021472803) = 0.01002152;
#   failure per hour 0.01002152 x 0.21472803 x 10.50 = 0.02259496; 4 h: 0.09037984;
#   42 + 0.288 + 0.09037984 = $42.37837984


@case("daly-async", "failures", 42.37837984, {"job": {"checkpoint": "async"}})
def _() -> Doc:
    return _checkpointed("async")


@case("checkpoint-scheme-chosen", "failures", 42.37837984, {"job": {"checkpoint": "async"}})
def _() -> Doc:
    # sync or async allowed: async loses 0.21 h per failure against sync's 0.87 h in the
    # same 4 h: the async figure, $42.37837984
    return _checkpointed("choose")


@case("sla-credit-capped", "failures", 42.03304957, {"costs": {"failure": 0.03304957}})
def _() -> Doc:
    # an SLA crediting 200% of the downtime for half the failures. Nothing to checkpoint, so
    # L = D = 0.15 h and the credit is capped at the rental lost: 0.5 x min(2 x 0.15, 0.15)
    # x $10 = $0.75 per failure. Per hour f (L (rho + E) - credit) = 0.0100150 x (0.15 x 10.50
    # - 0.75) = 0.0100150 x 0.825 = 0.00826239; 4 h 0.03304957: $42.03304957
    return instance(
        {"r": region(50, sla={"provider_fault_share": 0.5, "credit_multiplier": 2.0})},
        [job(gpu_hours=40)],
        gpu_types={"G": FAILING},
        failure=RESTART,
    )


@case("sla-credit-uncapped", "failures", 42.62380389)
def _() -> Doc:
    # daly-sync with an SLA crediting 100% of the downtime for half the failures:
    # min(1 x D, L) = D = 0.16 h < L, credit 0.5 x 0.16 x $10 = $0.80 per failure. Per hour
    # 0.01008764 x (0.86877738 x 10.50 - 0.80) = 0.01008764 x 8.32216249 = 0.08395096; 4 h:
    # 0.33580384; 42 + 0.288 + 0.33580384 = $42.62380384
    d = _checkpointed("sync", deadline=4)
    d["regions"]["r"]["sla"] = {"provider_fault_share": 0.5, "credit_multiplier": 1.0}
    return d


@case(
    "sla-no-credit-for-preemptions",
    "failures",
    22.33502538,
    {"job": {"contract": "spot"}},
)
def _() -> Doc:
    # spot-with-preemptions under an SLA: a preemption is not the provider's fault (share 0
    # for spot), so the failure cost stays 0.3350254: $22.3350254
    d = _spot(0.1)
    d["regions"]["r"]["sla"] = {"provider_fault_share": 0.5, "credit_multiplier": 2.0}
    return d


@case(
    "daly-spot-preemptions",
    "failures",
    22.88159559,
    {"job": {"contract": "spot"}, "costs": {"failure": 0.88159559}},
)
def _() -> Doc:
    # spot at $0.50 preempted 0.1 times an hour, a 36 GB sync checkpoint (36 s), 39 GPU-h.
    # M = 3600 / 0.1 = 36,000 s: sqrt(2 x 36 x 36000) = 1609.96894; r = 36 / 72000 = 5e-4;
    # x (1 + sqrt(5e-4)/3 + 5e-4/9) = x 1.00750912 -> 1622.05839; tau = 1586.05839 s;
    # overhead 36 / 1622.05839 = 0.02219402: 3.9 / 0.97780598 = 3.9885 -> 4 h;
    # D = 0.05 + 0.10 + 36 s = 0.16 h; L = 1622.05839 / 7200 + 0.16 = 0.38528589 h;
    # f = 0.1 / (1 - 0.038528589) = 0.10400725; per hour f L (5 + 0.50) = 0.22039890;
    # 4 h: 0.88159559; 20 + 2 + 0.88159559 = $22.88159559 (on demand: no failures, $42.00)
    offers = {**od(1.0), "spot": {"usd_per_gpu_hour": 0.5, "preemptions_per_hour": 0.1}}
    return instance(
        {"r": region(50, offers=offers)},
        [job(gpu_hours=39, checkpoint_gb=36, preemptible=True, resume_overhead_hours=0.25)],
        failure={**RESTART, "checkpoint": "sync"},
    )


@case("checkpoint-write-time-given", "failures", 42.94835870, {"costs": {"storage": 0.576}})
def _() -> Doc:
    # daly-sync with a 72 GB checkpoint whose write takes 36 s (failure.checkpoint_write_s):
    # the interval is daly-sync's, tau = 5067.19711 s (4 h); the reload still reads 72 GB at
    # 1 GB/s, 0.02 h: D = 0.17 h, L = 0.70877738 + 0.17 = 0.87877738 h,
    # f = 0.01 / (1 - 0.0087877738) = 0.01008866; per hour f L x 10.50 = 0.09308968; 4 h:
    # 0.37235870; storage 4 x 2 x 72 x 0.73 / 730 = 0.576: 42 + 0.576 + 0.37235870 =
    # $42.94835870
    d = _checkpointed("sync", deadline=4)
    d["phases"][0]["checkpoint_gb"] = 72
    d["failure"]["checkpoint_write_s"] = 36
    return d


@case("in-memory-checkpoint", "failures", 42.36997907, {"job": {"checkpoint": "in_memory"}})
def _() -> Doc:
    # in memory: the stall is the 3.6 GB shard to host memory at 25 GB/s, 0.144 s; one peer
    # copy at 25 GB/s another 0.144 s (the lag); a reload reads the shard from a peer, 0.144 s.
    # tau = max(Daly(0.144 s) = 321.89780, 0.144) = 321.89780 s (4 h);
    # D = 0.05 + 0.10 + 0.144 / 3600 = 0.15004 h; L = 322.04180 / 7200 + 0.144 / 3600 +
    # 0.15004 = 0.04472803 + 0.00004 + 0.15004 = 0.19480803 h; f = 0.01 / (1 - 0.0019480803)
    # = 0.01001952; per hour f L x 10.50 = 0.02049477; 4 h: 0.08197907;
    # 42 + 0.288 + 0.08197907 = $42.36997907
    return _checkpointed("in_memory")


@case("async-interval-waits-for-the-write", "failures", 42.53161329)
def _() -> Doc:
    # daly-async with a write of 1000 s: Daly's 321.89780 s is shorter than the lag, so the
    # interval is the lag, tau = 1000 s; overhead 0.144 / 1000.144 (4 h); D = 0.16 h (the
    # reload reads 36 GB in 36 s); L = 1000.144 / 7200 + 1000 / 3600 + 0.16 = 0.13890889 +
    # 0.27777778 + 0.16 = 0.57668667 h; f = 0.01 / (1 - 0.0057668667) = 0.01005800; per hour
    # f L x 10.50 = 0.06090332; 4 h: 0.24361329; 42 + 0.288 + 0.24361329 = $42.53161329
    d = _checkpointed("async")
    d["failure"]["checkpoint_write_s"] = 1000
    return d


# ============================================================================ storage


@case("running-checkpoint-storage", "storage", 42.80, {"costs": {"storage": 0.80}})
def _() -> Doc:
    # a 100 GB checkpoint, two kept, at $0.73/GB-month: 200 x 0.73 / 730 = $0.20 per running
    # hour; no failures, so no checkpoint is ever written in vain: 42 + 4 x 0.20 = $42.80
    tier = {"hot": {"usd_per_gb_month": 0.73}}
    return instance({"r": region(50, storage=tier)}, [job(gpu_hours=40, checkpoint_gb=100)])


@case("compressed-checkpoint-storage", "storage", 42.40, {"costs": {"storage": 0.40}})
def _() -> Doc:
    # compressed 2:1: 2 x 50 GB x 0.73 / 730 = $0.10 per hour, 42 + 0.40 = $42.40
    tier = {"hot": {"usd_per_gb_month": 0.73}}
    return instance(
        {"r": region(50, storage=tier)},
        [job(gpu_hours=40, checkpoint_gb=100)],
        storage={"compression_ratio": 2.0},
    )


@case("cheaper-tier", "storage", 42.08, {"job": {"tier": "cold"}})
def _() -> Doc:
    # hot $0.73, cold $0.073/GB-month (both 1 GB/s): 200 GB on cold = $0.02/h: 42 + 0.08
    tiers = {"hot": {"usd_per_gb_month": 0.73}, "cold": {"usd_per_gb_month": 0.073}}
    return instance({"r": region(50, storage=tiers)}, [job(gpu_hours=40, checkpoint_gb=100)])


@case("archive-pushes-the-job-late", "storage", 42.00, {"job": {"hours": (20, 21, 22, 23)}})
def _() -> Doc:
    # a 73 GB output archived at $0.73/GB-month, $0.073 per hour from the job's end to the
    # horizon's: at flat prices it ends at hour 24 and pays no archive: $42.00
    tier = {"hot": {"usd_per_gb_month": 0.73}}
    return instance({"r": region(50, storage=tier)}, [job(gpu_hours=40, output_gb=73)])


def _archive(output_gb: float, policy: str) -> Doc:
    """$20/MWh in hours 0-3, $100 after; tiers hot $0.73 and cold $0.073/GB-month."""
    tiers = {"hot": {"usd_per_gb_month": 0.73}, "cold": {"usd_per_gb_month": 0.073}}
    return instance(
        {"r": region(tou(100, (0, 4, 20)), storage=tiers)},
        [job(gpu_hours=40, output_gb=output_gb)],
        storage={"archive": policy},
    )


@case("archive-cheap-night-first", "storage", 41.53, {"job": {"hours": (0, 1, 2, 3)}})
def _() -> Doc:
    # 365 GB archived on the cheapest tier: 365 x 0.073 / 730 = $0.0365/h. Night, hours 0-3:
    # 40 + 0.80 + 20 h x 0.0365 = 0.73: $41.53; late, hours 20-23: 40 + 4.00 = $44.00
    return _archive(365, "cheapest")


@case("archive-hottest-runs-late", "storage", 44.00, {"job": {"hours": (20, 21, 22, 23)}})
def _() -> Doc:
    # archived on the hottest tier: 365 x 0.73 / 730 = $0.365/h: the night costs 40 + 0.80 +
    # 7.30 = $48.10, the last hours $44.00
    return _archive(365, "hottest")


@case(
    "model-phase-checkpoint-and-output",
    "storage",
    42.112,
    {"job": {"hours": (20, 21, 22, 23)}, "costs": {"storage": 0.112}},
)
def _() -> Doc:
    # a training phase of a 1e9-parameter model, 5.76e18 FLOPs = 40 GPU-h at 100 TFLOP/s x
    # 0.40 MFU (4 h on 10 GPUs; ZeRO-0, no recomputation, tp 1: no layout factor). Its
    # checkpoint is (2 + 12) bytes x 1e9 = 14 GB, two kept at $0.73/GB-month: 28 x 0.73 / 730
    # = $0.028 per running hour; its output, the bf16 weights, 2 GB archived at $0.002/h
    # after it ends: it ends at hour 24. 40 + 2 + 4 x 0.028 = $42.112
    tier = {"hot": {"usd_per_gb_month": 0.73}}
    p = job(gpu_hours=40, options={"zero": [0], "recompute": ["none"], "tensor_parallel": [1]})
    p.pop("kind")
    p["model"] = "m"
    p["work"] = {"flops": 5.76e18}
    return instance({"r": region(50, storage=tier)}, [p], models={"m": {"params": 1e9}})


# ============================================================================ pauses


def _pauses(resume: float) -> Doc:
    """A preemptible 3 h job; prices $50/MWh but $5 in hours 2, 7 and 11."""
    prices = [50.0] * 24
    for t in (2, 7, 11):
        prices[t] = 5.0
    return instance(
        {"r": region({"values": prices})},
        [job(gpu_hours=30, preemptible=True, resume_overhead_hours=resume)],
    )


@case("pauses-free", "pauses", 30.15, {"job": {"hours": (2, 7, 11)}})
def _() -> Doc:
    # resuming costs nothing: the three $5 hours, 30 + 3 x 10 x 5 / 1000 = $30.15
    return _pauses(0.0)


@case("pauses-cost-a-resume", "pauses", 31.05)
def _() -> Doc:
    # a resume holds the GPUs 0.25 h at the mean price (21 x 50 + 3 x 5) / 24 = 44.375:
    # 0.25 x (10 + 10 x 44.375 / 1000) = $2.6109375. Three cheap hours: 30.15 + 2 x 2.61 =
    # $35.37; two runs (a cheap hour and its neighbour, one more): 30 + 0.60 + 2.61 = $33.21;
    # one run around a cheap hour: 30 + 10 x (50 + 5 + 50) / 1000 = $31.05
    return _pauses(0.25)


def _parked(usd_per_gb_month: float) -> Doc:
    """A preemptible 2 h job, free to resume, 730 GB of input on a tier at
    ``usd_per_gb_month`` (no output archived); prices $50/MWh but $5 in hours 2 and 5."""
    tier = {"hot": {"usd_per_gb_month": usd_per_gb_month}}
    return instance(
        {"r": region(values(50, 50, 5, 50, 50, 5, 50, 50), storage=tier)},
        [
            job(
                gpu_hours=20,
                preemptible=True,
                resume_overhead_hours=0.0,
                data={"size_gb": 730},
                output_gb=0,
            )
        ],
        hours=8,
    )


@case("pause-parking-cheap", "pauses", 20.50, {"job": {"hours": (2, 5)}})
def _() -> Doc:
    # data 730 GB x $0.10 / 730 = $0.10/h held, running or parked. Hours 2 and 5: 20 + 10 x
    # 10 / 1000 = 0.10 + running 2 x 0.10 + parked hours 3-4, 2 x 0.10 = $20.50; one run
    # (1-2, 2-3, 4-5 or 5-6): 20 + 0.55 + 0.20 = $20.75
    return _parked(0.1)


@case("pause-parking-dear", "pauses", 22.55)
def _() -> Doc:
    # at $1/GB-month, $1/h: the pause costs 20 + 0.10 + 2 + 2 = $24.10; one run $22.55
    return _parked(1.0)


@case("pause-pays-its-resume", "pauses", 23.64583333, {"job": {"hours": (2, 12)}})
def _() -> Doc:
    # a preemptible 2 h job; $500/MWh but $0 in hours 2 and 12 (mean 22 x 500 / 24 =
    # 458.333); a resume holds the GPUs 0.25 h: 0.25 x (10 + 10 x 458.333 / 1000) = 3.6458333.
    # Hours 2 and 12: 20 + 0 + 3.6458333 = $23.6458333; one run (a free hour and a dear one):
    # 20 + 10 x 500 / 1000 = $25.00
    prices = [500.0] * 24
    prices[2] = prices[12] = 0.0
    return instance(
        {"r": region({"values": prices})},
        [job(gpu_hours=20, preemptible=True, resume_overhead_hours=0.25)],
    )
