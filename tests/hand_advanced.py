"""Hand-computed optima for segments, reserved terms, hourly offer prices and re-plans
(docs/cost-model.md, "Segments", "Reserved terms", "Prices by the hour", "Re-planning").

The conventions of ``hand_basic.py`` hold: GPU ``G`` (1 kW, ten per node, no failures) on 10
GPUs at $1/GPU-h on demand ($10/h), PUE 1, free storage that writes and reads 1 GB/s per
node. A migration holds GPUs without progress; a held hour costs the configuration's rental
plus its power at the region's MEAN price over the horizon: ``rho + kW x mean / 1000``.
"""

from __future__ import annotations

from typing import Any

from hand_cases import Doc, F, G, case, instance, job, od, region, tou, values

from planner.instance.model import Instance
from planner.interfaces.replan import state_at
from planner.model.configs import build_config_space
from planner.model.costs import cost_plan
from planner.model.schedule import schedule_of

NO_RESTART = {"restart_hours": 0.0, "detect_hours": 0.0, "checkpoint": "sync"}

# ============================================================================ segments


def two_nights(**phase: Any) -> Doc:
    """Berlin (UTC+2) $20/MWh 00-06 local = hours 0-3, New York (UTC-4) $10/MWh 00-06 local =
    hours 4-7, $100 otherwise; an 8 h horizon. 80 GPU-h (8 h on 10 GPUs), due at hour 8, in
    up to two segments; a 36 GB checkpoint, links 1 GB/s, instant restarts. Mean prices:
    Berlin (4 x 20 + 4 x 100) / 8 = 60, New York 55: a held hour costs $10.60 in Berlin and
    $10.55 in New York."""
    berlin = region(tou(100, (0, 6, 20)), tz="Europe/Berlin", default_link_gb_per_s=1.0)
    ny = region(tou(100, (0, 6, 10)), tz="America/New_York", default_link_gb_per_s=1.0)
    p = job(gpu_hours=80, deadline=8, checkpoint_gb=36, options={"max_segments": 2}, **phase)
    return instance({"berlin": berlin, "newyork": ny}, [p], hours=8, failure=NO_RESTART)


BERLIN_NY = [
    ("berlin", "G", 10, "on_demand", (0, 1, 2, 3)),
    ("newyork", "G", 10, "on_demand", (4, 5, 6, 7)),
]


@case(
    "follow-the-sun",
    "segments",
    82.237,
    {"job": {"segments": BERLIN_NY, "migration": [None, 1.037]}},
)
def _() -> Doc:
    # one region: New York 0-7, 80 + 10 x (4 x 100 + 4 x 10) / 1000 = $84.40 (Berlin $84.80).
    # Berlin 0-3 then New York 4-7: 80 + 10 x (4 x 20 + 4 x 10) / 1000 = 81.20, and the move:
    #   leave: write 36 GB at 1 GB/s = 0.01 h of Berlin's GPUs     0.01 x 10.60 = 0.106
    #   move: 36 GB x $0.02 = 0.72, wait 36 s on the link           0.01 x 10.55 = 0.1055
    #   enter: read 36 GB at 1 GB/s (restart 0)                     0.01 x 10.55 = 0.1055
    #   1.037: 81.20 + 1.037 = $82.237
    return two_nights()


@case("follow-the-sun-too-dear", "segments", 84.40, {"job": {"region": "newyork", "segments": ()}})
def _() -> Doc:
    # moving out of Berlin at $0.20/GB: 36 x 0.20 = 7.20, the move 7.517 > the $3.20 saved:
    # New York alone, $84.40
    d = two_nights()
    d["regions"]["berlin"]["transfer_usd_per_gb"] = {"newyork": 0.2}
    return d


@case(
    "follow-the-sun-async-checkpoint",
    "segments",
    82.237424,
    {"job": {"segments": BERLIN_NY, "migration": [None, 1.037424]}},
)
def _() -> Doc:
    # asynchronous checkpoints: leaving waits for the snapshot of a 3.6 GB shard at 25 GB/s
    # (0.144 s) and the write (36 s): 36.144 s = 0.01004 h x 10.60 = 0.106424; the rest as
    # above: 0.106424 + 0.72 + 0.1055 + 0.1055 = 1.037424; $82.237424
    d = two_nights()
    d["failure"]["checkpoint"] = "async"
    return d


@case(
    "follow-the-sun-slow-link",
    "segments",
    83.1865,
    {"job": {"segments": BERLIN_NY, "migration": [None, 1.9865]}},
)
def _() -> Doc:
    # the link Berlin -> New York moves 0.1 GB/s: the wait is 360 s = 0.1 h x 10.55 = 1.055;
    # 0.106 + 0.72 + 1.055 + 0.1055 = 1.9865; 81.20 + 1.9865 = $83.1865 (< $84.40)
    d = two_nights()
    d["regions"]["berlin"]["link_gb_per_s"] = {"newyork": 0.1}
    return d


@case(
    "follow-the-sun-stages-the-data",
    "segments",
    83.237,
    {"job": {"segments": BERLIN_NY, "migration": [None, 2.037]}},
)
def _() -> Doc:
    # 50 GB of input at home in Berlin, staged again to New York on the move: 50 x 0.02 = 1.00
    # more (reading it takes 50 s). New York alone pays the staging too: 84.40 + 1 = $85.40;
    # Berlin alone $84.80; following: 81.20 + 1.037 + 1.00 = $83.237
    return two_nights(data={"size_gb": 50, "home_region": "berlin"}, output_gb=0)


@case(
    "three-segments",
    "segments",
    62.10,
    {
        "job": {
            "segments": [
                ("a", "G", 10, "on_demand", (0, 1)),
                ("b", "G", 10, "on_demand", (2, 3)),
                ("a", "G", 10, "on_demand", (4, 5)),
            ],
            "migration": [None, 1.0533333, 1.0466667],
        }
    },
)
def _() -> Doc:
    # a: $0, 0, 200, 200, 0, 0 per MWh (mean 66.667: a held hour $10.666667); b: 200, 200, 0,
    # 0, 200, 200 (mean 133.333: $11.333333). 6 h of work due at 6, up to three segments.
    # a alone: 60 + 10 x 400 / 1000 = $64.00 (b $68.00). a, b, a at $0/MWh throughout: 60 and
    #   a -> b: 0.01 x 10.666667 + 0.72 + 0.01 x 11.333333 + 0.01 x 11.333333 = 1.0533333
    #   b -> a: 0.01 x 11.333333 + 0.72 + 0.01 x 10.666667 + 0.01 x 10.666667 = 1.0466667
    # 60 + 2.10 = $62.10 (two segments leave two dear hours: 64 + 1.05 at least)
    a = region(values(0, 0, 200, 200, 0, 0), default_link_gb_per_s=1.0)
    b = region(values(200, 200, 0, 0, 200, 200), default_link_gb_per_s=1.0)
    p = job(gpu_hours=60, checkpoint_gb=36, options={"max_segments": 3})
    return instance({"a": a, "b": b}, [p], hours=6, failure=NO_RESTART)


def elastic(restart_hours: float = 0.5, changes: list[str] | None = None) -> Doc:
    """One region, free power in hours 0-3 and $500/MWh after (mean 300); 10 or 20 GPUs, two
    nodes at 0.8 scaling efficiency; 104 GPU-h at one node's efficiency, due at hour 9 of
    10; nothing to checkpoint."""
    opts: dict[str, Any] = {"max_segments": 2}
    if changes is not None:
        opts["segment_changes"] = changes
    p = job(
        gpu_hours=104,
        gpus=(10, 20),
        deadline=9,
        scaling={"per_doubling": 0.8, "reference_gpus": 10},
        options=opts,
    )
    r = region(values(0, 0, 0, 0, 500, 500, 500, 500, 500, 500), cap=20)
    return instance(
        {"r": r},
        [p],
        hours=10,
        failure={"restart_hours": restart_hours, "detect_hours": 0.0, "checkpoint": "sync"},
    )


@case(
    "elastic-gpu-count",
    "segments",
    146.50,
    {
        "job": {
            "segments": [
                ("r", "G", 20, "on_demand", (0, 1, 2, 3)),
                ("r", "G", 10, "on_demand", (4, 5, 6, 7)),
            ],
            "migration": [None, 6.5],
        }
    },
)
def _() -> Doc:
    # 10 GPUs alone need 10.4 -> 11 h > 9. 20 GPUs (16 GPU-equivalents) 6.5 -> 7 h, hours 0-6:
    # 140 + 3 x 20 kW x 0.50 = $170. Elastic: 20 GPUs in the free hours do 4 / 6.5 = 64/104 of
    # the work, 10 GPUs the rest in 40/104 x 10.4 = 4 h (4-7): 80 + 40 + 4 x 10 x 0.50 = 140,
    # and a restart of the 10 GPUs, 0.5 h x (10 + 10 kW x 300 / 1000) = 6.50: $146.50
    return elastic()


@case("elastic-restart-too-slow", "segments", 170.00, {"job": {"gpus": 20, "segments": ()}})
def _() -> Doc:
    # a 3 h restart: the move costs 3 x 13 = 39, 140 + 20 + 39 = $179 > $170: 20 GPUs alone
    return elastic(restart_hours=3.0)


@case("segment-changes-forbid-the-count", "segments", 170.00, {"job": {"gpus": 20, "segments": ()}})
def _() -> Doc:
    # only the region may change (there is one): the fixed 20-GPU run, $170.00
    return elastic(changes=["region"])


@case(
    "segments-change-the-gpu-type",
    "segments",
    52.25,
    {
        "job": {
            "segments": [
                ("r", "F", 10, "on_demand", (0,)),
                ("r", "G", 10, "on_demand", (1, 2)),
            ],
            "migration": [None, 5.25],
        }
    },
)
def _() -> Doc:
    # 40 GPU-h on G due at hour 3; F (twice as fast, 2 kW, $2.50/GPU-h) has capacity in hour 0
    # only. G alone needs 4 h, F alone 2 h: neither fits. F in hour 0 does half the work:
    # 25 + 20 kW x 50 / 1000 = 26.00; G does the other half in 2 h: 2 x 10.50 = 21.00; the
    # restart on G, 0.5 h x (10 + 10 kW x 50 / 1000) = 5.25 (nothing to checkpoint): $52.25
    r = region(50, cap={"G": 10, "F": [10, 0, 0, 0]}, offers_by={"G": od(1.0), "F": od(2.5)})
    p = job(gpu_hours=40, deadline=3, options={"max_segments": 2})
    return instance(
        {"r": r},
        [p],
        hours=4,
        gpu_types={"G": G, "F": F},
        failure={"restart_hours": 0.5, "detect_hours": 0.0, "checkpoint": "sync"},
    )


@case(
    "segments-spot-then-on-demand",
    "segments",
    70.00,
    {"job": {"migration": [None, 10.0]}},
)
def _() -> Doc:
    # preemptible, 6 h on 10 GPUs, free power, free resumes. Spot $0.50/GPU-h in hours 0-3,
    # $4 after; on demand $2. One contract: spot 4 x 5 + 2 x 40 = $100 (on demand $120).
    # Spot in 0-3 ($20), then 2 h on demand ($40) after a 0.5 h restart at $20/h ($10): $70
    offers = {
        "spot": {"usd_per_gpu_hour": {"values": [0.5] * 4 + [4.0] * 4}, "preemptions_per_hour": 0},
        **od(2.0),
    }
    p = job(gpu_hours=60, preemptible=True, resume_overhead_hours=0, options={"max_segments": 2})
    return instance(
        {"r": region(0, offers=offers)},
        [p],
        hours=8,
        failure={"restart_hours": 0.5, "detect_hours": 0.0, "checkpoint": "sync"},
    )


def _ten_hours(**phase: Any) -> Doc:
    """two_nights over a 10 h horizon (the job still due at hour 8). Berlin's mean price
    (4 x 20 + 6 x 100) / 10 = 68 (a held hour $10.68), New York's (4 x 100 + 6 x 10) / 10 =
    46 ($10.46): following the nights runs 81.20 and moves for 0.01 x 10.68 + 0.72 +
    2 x 0.01 x 10.46 = 1.036."""
    d = two_nights(**phase)
    d["horizon"]["hours"] = 10
    return d


@case(
    "segments-archive-in-the-last-region",
    "segments",
    83.984,
    {"job": {"segments": BERLIN_NY, "migration": [None, 1.036]}},
)
def _() -> Doc:
    # New York stores at $0.73/GB-month (Berlin free); a 730 GB output is archived where the
    # phase ends, from hour 8 to 10. Following: 81.20 + 1.036, New York's running storage
    # 4 h x 2 x 36 GB x 0.73 / 730 = 0.288, the archive 2 h x 730 x 0.73 / 730 = 1.46:
    # $83.984. Berlin alone $84.80; New York alone 84.40 + 0.576 + 1.46 = $86.436
    d = _ten_hours(output_gb=730)
    d["regions"]["newyork"]["storage"] = {"hot": {"usd_per_gb_month": 0.73}}
    return d


@case(
    "segments-hand-on-from-the-last-region",
    "segments",
    94.736,
    {"job": {"segments": BERLIN_NY}, "eval": {"region": "berlin"}},
)
def _() -> Doc:
    # a successor (1 h, Berlin only) takes the job's 50 GB output from where the job ends: New
    # York's archive charges $0.01/GB to read it back (0.50) and the move to Berlin $0.02/GB
    # (1.00). The successor runs in hour 8 or 9 at $100: 10 + 1.00 = 11.00.
    # Following: 81.20 + 1.036 + 0.50 + 1.00 + 11 = $94.736; Berlin alone 84.80 + 11 =
    # $95.80; New York alone 84.40 + 1.50 + 11 = $96.90
    d = _ten_hours(output_gb=50)
    d["regions"]["newyork"]["storage"] = {
        "hot": {"usd_per_gb_month": 0.0, "retrieval_usd_per_gb": 0.01}
    }
    d["phases"].append(job("eval", 10, regions=["berlin"], predecessors=["job"]))
    return d


@case(
    "segments-at-pue-1-58",
    "segments",
    82.94286,
    {"job": {"segments": BERLIN_NY, "migration": [None, 1.04686]}},
)
def _() -> Doc:
    # PUE 1.58: 15.8 kW at the meter. Power 1.58 x 1.20 = 1.896; a held hour $10 + 15.8 x
    # 0.060 = 10.948 in Berlin, 10 + 15.8 x 0.055 = 10.869 in New York: the move
    # 0.10948 + 0.72 + 2 x 0.10869 = 1.04686; 80 + 1.896 + 1.04686 = $82.94286
    # (New York alone: 80 + 1.58 x 4.40 = $86.952)
    d = two_nights()
    for r in d["regions"].values():
        r["pue"] = 1.58
    return d


@case("segments-residency", "segments", 84.80, {"job": {"region": "berlin", "segments": ()}})
def _() -> Doc:
    # the data may stay in Berlin only: no segment in New York, Berlin alone $84.80
    return two_nights(data={"residency": ["berlin"]})


@case(
    "segments-each-pay-a-minimum-rental", "segments", 170.00, {"job": {"gpus": 20, "segments": ()}}
)
def _() -> Doc:
    # elastic with a 5 h minimum rental per segment: 20 GPUs 4 h billed 5 (100), 10 GPUs 4 h
    # billed 5 (50): 150 + 20 + 6.50 = $176.50; 20 GPUs 5 h then 10 GPUs 3 h: 100 + 50 + 10 +
    # 15 + 6.50 = $181.50; 20 GPUs alone (7 h, billed 7): $170.00
    d = elastic()
    d["regions"]["r"]["offers"]["G"]["on_demand"]["min_rental_hours"] = 5
    return d


@case(
    "segments-park-between-contracts",
    "segments",
    50.80,
    {
        "job": {
            "segments": [
                ("r", "G", 10, "spot", (0, 1, 2, 3)),
                ("r", "G", 10, "on_demand", (6, 7)),
            ],
            "migration": [None, 10.0],
        }
    },
)
def _() -> Doc:
    # preemptible, 6 h, free power and resumes; 730 GB of input at $0.10/GB-month: $0.10 an
    # hour running or parked. Spot $0.50 in hours 0-3, $4 after; on demand $2, 2, 2, 2, 3, 3,
    # 1, 1 (mean 2.00). Spot 0-3 (20), on demand 6-7 (2 x 10 = 20), the restart 0.5 h x
    # 10 x 2.00 = 10, running storage 6 x 0.10 = 0.60, parked in 4-5: 0.20: $50.80.
    # (On demand in 4-5: 20 + 60 + 10 + 0.60 = $90.60; spot alone 20 + 80 + ...: > $100)
    offers = {
        "spot": {"usd_per_gpu_hour": {"values": [0.5] * 4 + [4.0] * 4}, "preemptions_per_hour": 0},
        **od({"values": [2, 2, 2, 2, 3, 3, 1, 1]}),
    }
    p = job(
        gpu_hours=60,
        preemptible=True,
        resume_overhead_hours=0,
        data={"size_gb": 730},
        output_gb=0,
        options={"max_segments": 2},
    )
    tier = {"hot": {"usd_per_gb_month": 0.1}}
    return instance(
        {"r": region(0, offers=offers, storage=tier)},
        [p],
        hours=8,
        failure={"restart_hours": 0.5, "detect_hours": 0.0, "checkpoint": "sync"},
    )


@case(
    "segments-under-a-carbon-cap",
    "segments",
    84.037,
    {
        "job": {
            "segments": [
                ("berlin", "G", 10, "on_demand", (0, 1, 2, 3, 4, 5)),
                ("newyork", "G", 10, "on_demand", (6, 7)),
            ]
        },
        "emissions_t": 0.012,
    },
)
def _() -> Doc:
    # follow-the-sun with 100 gCO2/kWh in Berlin, 300 in New York (10 kWh an hour: 1 kg and 3
    # kg) and a cap of 0.0125 t. Berlin 0-3 + New York 4-7 emits 4 + 12 = 16 kg: too much;
    # Berlin 0-4 + New York 5-7: 5 + 9 = 14 kg, too much; Berlin 0-5 + New York 6-7: 6 + 6 =
    # 12 kg: 80 + 10 x (4 x 20 + 2 x 100 + 2 x 10) / 1000 = 83.00 + the move 1.037 = $84.037
    # (Berlin 0-6 + New York 7: 83.90 + 1.037; Berlin alone, 8 kg: $84.80)
    d = two_nights()
    d["regions"]["berlin"]["carbon_intensity"] = {"constant": 100}
    d["regions"]["newyork"]["carbon_intensity"] = {"constant": 300}
    d["objective"] = {"carbon_cap_tonnes": 0.0125}
    return d


# ============================================================================ terms


def _terms(*terms: dict[str, Any], price: float = 0.4, **phase: Any) -> Doc:
    """On demand $1/GPU-h and a reserved offer at ``price`` with ``terms``; $50/MWh; a 4 h
    job on 10 GPUs ($42.00 on demand)."""
    offers = {**od(1.0), "reserved": {"usd_per_gpu_hour": price, "terms": list(terms)}}
    return instance({"r": region(50, offers=offers)}, [job(gpu_hours=40, **phase)])


@case(
    "term-in-the-horizon",
    "terms",
    34.00,
    {"job": {"contract": "reserved", "term": "mid"}, "reserved_terms": (("r", "G", "mid", 10),)},
)
def _() -> Doc:
    # a term of 8 h from hour 8 at $0.40: 10 GPUs x 8 h x 0.40 = 32 + 4 x 10 x 50 / 1000 = 2:
    # $34.00 (on demand $42.00); the job runs inside hours 8-15
    return _terms({"name": "mid", "start": 8, "hours": 8})


@case("term-prorated", "terms", 34.00, {"reserved_terms": (("r", "G", "late", 10),)})
def _() -> Doc:
    # a 16 h term from hour 16 (to hour 32, past the horizon): prorated, this plan pays its 8
    # slots inside, 10 x 8 x 0.40 = 32: $34.00
    return _terms({"name": "late", "start": 16, "hours": 16})


@case("term-not-prorated", "terms", 42.00, {"reserved_terms": (), "job": {"contract": "on_demand"}})
def _() -> Doc:
    # prorate false: the whole term, 8 slots + 8 h outside at the mean price inside, 10 x 16 x
    # 0.40 = $64 > on demand: $42.00
    return _terms({"name": "late", "start": 16, "hours": 16, "prorate": False})


@case(
    "term-by-the-hour-not-prorated", "terms", 34.00, {"reserved_terms": (("r", "G", "late", 10),)}
)
def _() -> Doc:
    # a 16 h term from hour 16, not prorated, at $0.10 in hours 16-19 and $0.30 in 20-23 (the
    # slots inside): 4 x 0.10 + 4 x 0.30 = 1.60, and its 8 h past the horizon at the mean
    # inside, 0.20: 1.60; 10 GPUs x 3.20 = 32 + 2 = $34.00
    price = {"values": [0.4] * 16 + [0.1] * 4 + [0.3] * 4}
    return _terms(
        {"name": "late", "start": 16, "hours": 16, "prorate": False, "usd_per_gpu_hour": price}
    )


@case("term-min-gpus", "terms", 42.00, {"reserved_terms": ()})
def _() -> Doc:
    # at least 20 GPUs: 20 x 8 x 0.40 = $64 > $40 of rental on demand: $42.00
    return _terms({"name": "mid", "start": 8, "hours": 8, "min_gpus": 20})


@case(
    "terms-side-by-side",
    "terms",
    38.00,
    {"job": {"term": "short", "hours": (4, 5, 6, 7)}, "reserved_terms": (("r", "G", "short", 10),)},
)
def _() -> Doc:
    # a day at $0.30: 10 x 24 x 0.30 = $72; four hours from hour 4 at $0.90: 10 x 4 x 0.90 =
    # $36: the short one, 36 + 2 = $38.00
    return _terms(
        {"name": "day", "start": 0, "hours": 24, "usd_per_gpu_hour": 0.3},
        {"name": "short", "start": 4, "hours": 4, "usd_per_gpu_hour": 0.9},
    )


@case("term-bought-before-the-horizon", "terms", 26.00, {"job": {"hours": (0, 1, 2, 3)}})
def _() -> Doc:
    # from hour -10 for 14 h at $0.60: slots 0-3 inside, 10 x 4 x 0.60 = 24 + 2 = $26.00
    return _terms({"name": "old", "start": -10, "hours": 14, "usd_per_gpu_hour": 0.6})


@case("term-start-as-date-time", "terms", 22.00, {"job": {"hours": (7, 8, 9, 10)}})
def _() -> Doc:
    # from 06:30 UTC for 5 h: the first whole slot is hour 7, the end 11.5 rounds down to 11:
    # slots 7-10, 10 x 4 x 0.50 = 20 + 2 = $22.00
    return _terms(
        {"name": "t", "start": "2023-06-05T06:30:00Z", "hours": 5, "usd_per_gpu_hour": 0.5}
    )


@case("term-priced-by-the-hour", "terms", 30.00, {"reserved_terms": (("r", "G", "t", 10),)})
def _() -> Doc:
    # a 6 h term from hour 0 priced $0.20 in hours 0-3 and $1.00 after: 10 x (4 x 0.20 +
    # 2 x 1.00) = $28 for the term, + 2: $30.00
    return _terms(
        {
            "name": "t",
            "start": 0,
            "hours": 6,
            "usd_per_gpu_hour": {"values": [0.2] * 4 + [1.0] * 20},
        }
    )


@case("term-shared-by-two-jobs", "terms", 40.00, {"reserved_terms": (("r", "G", "t", 10),)})
def _() -> Doc:
    # two 4 h jobs, capacity 10; a term of 8 h from 0 at $0.45: 10 x 8 x 0.45 = $36 for both in
    # turn (on demand $80): 36 + 8 x 10 x 50 / 1000 = $40.00
    offers = {
        **od(1.0),
        "reserved": {
            "usd_per_gpu_hour": 0.45,
            "terms": [{"name": "t", "start": 0, "hours": 8}],
        },
    }
    return instance({"r": region(50, offers=offers)}, [job("a", 40), job("b", 40)])


@case(
    "segments-into-a-term",
    "terms",
    44.30,
    {
        "job": {
            "segments": [
                ("r", "G", 10, "on_demand", (2, 3)),
                ("r", "G", 10, "reserved", tuple(range(4, 10))),
            ],
            "migration": [None, 0.30],
        },
        "reserved_terms": (("r", "G", "t", 10),),
    },
)
def _() -> Doc:
    # 8 h due at hour 10; a term of hours 4-11 at $0.25 (10 x 8 x 0.25 = $20 whatever is used).
    # On demand alone: 80 + 4 = $84. The term holds 6 h before the deadline: on demand in 2-3
    # (20), then the term in 4-9 (20), power 8 x 0.50 = 4, and the restart onto the reserved
    # GPUs, 0.1 h x (10 x 0.25 + 10 kW x 50 / 1000) = 0.30: $44.30
    offers = {
        **od(1.0),
        "reserved": {"usd_per_gpu_hour": 0.25, "terms": [{"name": "t", "start": 4, "hours": 8}]},
    }
    p = job(gpu_hours=80, deadline=10, options={"max_segments": 2})
    return instance(
        {"r": region(50, offers=offers)},
        [p],
        failure={"restart_hours": 0.1, "detect_hours": 0.0, "checkpoint": "sync"},
    )


# ============================================================================ hourly prices


@case("on-demand-by-the-hour", "hourly", 42.00, {"job": {"hours": (3, 4, 5, 6)}})
def _() -> Doc:
    # on demand $2/GPU-h but $1 in hours 3-6: 4 x 10 x 1 = 40 + 2 = $42.00
    price = {"values": [2.0] * 3 + [1.0] * 4 + [2.0] * 17}
    return instance({"r": region(50, offers=od(price))}, [job(gpu_hours=40)])


@case("on-demand-time-of-use-local", "hourly", 42.00, {"job": {"hours": (22, 23, 24, 25)}})
def _() -> Doc:
    # on demand $2/GPU-h but $1 from 00 to 04 Berlin time (UTC+2: 22:00-02:00 UTC); 48 h:
    # hours 22-25, $42.00
    price = tou(2.0, (0, 4, 1.0))
    r = region(50, tz="Europe/Berlin", offers=od(price))
    return instance({"r": r}, [job(gpu_hours=40)], hours=48)


@case("blocks-billed-at-their-first-hour", "hourly", 42.00, {"job": {"hours": (0, 1, 2, 3)}})
def _() -> Doc:
    # 4 h blocks billed at the price of their first hour: $1, 3, 3, 3 | 3, 1, 1, 1 | 2, 2, 2, 2.
    # Block 0 costs 4 x 10 x 1 = 40, block 1 120 (though hours 5-7 are at $1), block 2 80:
    # hours 0-3, 40 + 2 = $42.00
    price = {"values": [1, 3, 3, 3, 3, 1, 1, 1, 2, 2, 2, 2]}
    offers = od(price, billing_granularity_hours=4)
    return instance({"r": region(50, offers=offers)}, [job(gpu_hours=40)], hours=12)


@case("minimum-rental-at-the-mean-price", "hourly", 95.333333, {"job": {"hours": (0, 1, 2, 3)}})
def _() -> Doc:
    # $1/GPU-h in hours 0-3, $3 after; a 6 h minimum. Hours 0-3: 4 x 10 x 1 = 40, and the 2
    # owed hours at the mean price (4 x 1 + 20 x 3) / 24 = 2.666667: 2 x 10 x 2.666667 =
    # 53.333333; + 2 of power: $95.333333
    price = {"values": [1.0] * 4 + [3.0] * 20}
    offers = od(price, min_rental_hours=6)
    return instance({"r": region(50, offers=offers)}, [job(gpu_hours=40)])


@case("another-block-beats-the-owed-minimum", "hourly", 41.00, {"job": {"hours": (1, 2)}})
def _() -> Doc:
    # 2 h blocks, a 3 h minimum, $1/GPU-h in hours 0-3 and $9 after (mean (4 + 36) / 8 = $5);
    # 2 h on 10 GPUs. Hours 0-1 (block 0): 2 x 10 x 1 = 20 and 1 owed hour at the mean, 50:
    # 70. Hours 1-2 touch blocks 0 and 1 (4 billed hours >= 3, none owed): 20 + 20 = 40. With
    # 1 of power (20 kWh at $50/MWh): $41.00. (A bound that counted the fewest blocks, 1, and
    # the owed hour, 20 + 50 = 70, was above this plan.)
    price = {"values": [1.0] * 4 + [9.0] * 4}
    offers = od(price, billing_granularity_hours=2, min_rental_hours=3)
    return instance({"r": region(50, offers=offers)}, [job(gpu_hours=20)], hours=8)


@case(
    "preemptions-by-the-hour", "hourly", 22.00, {"job": {"contract": "spot", "hours": (0, 1, 2, 3)}}
)
def _() -> Doc:
    # spot $0.50 is never preempted in hours 0-3, 0.5 times an hour after (a preemption loses
    # L = 0.15 h: f = 0.5 / 0.925 = 0.54 per hour, 0.54 x 0.15 x 5.50 = $0.45 an hour):
    # hours 0-3 cost no failure: 20 + 2 = $22.00
    offers = {
        **od(1.0),
        "spot": {
            "usd_per_gpu_hour": 0.5,
            "preemptions_per_hour": {"values": [0.0] * 4 + [0.5] * 20},
        },
    }
    return instance(
        {"r": region(50, offers=offers)},
        [job(gpu_hours=40, preemptible=True, resume_overhead_hours=0.25)],
        failure={"detect_hours": 0.05, "restart_hours": 0.1},
    )


@case("spot-price-by-the-hour", "hourly", 100.00, {"job": {"contract": "spot"}})
def _() -> Doc:
    # preemptible, 6 h, free power and resumes; spot $0.50 in hours 0-3 and $4 after, on
    # demand $2: spot 4 x 5 + 2 x 40 = $100 < on demand $120 (one contract only)
    offers = {
        **od(2.0),
        "spot": {"usd_per_gpu_hour": {"values": [0.5] * 4 + [4.0] * 4}, "preemptions_per_hour": 0},
    }
    return instance(
        {"r": region(0, offers=offers)},
        [job(gpu_hours=60, preemptible=True, resume_overhead_hours=0)],
        hours=8,
    )


@case("reserved-pool-priced-by-the-hour", "hourly", 240.00, {"reserved": (("r", "G", 10),)})
def _() -> Doc:
    # 20 h, free power; on demand $2; the whole-horizon reservation at $1.00 in hours 0-9 and
    # $1.40 after: 10 x (10 x 1.00 + 10 x 1.40) = $240 < 13 h on demand, $260
    offers = {**od(2.0), "reserved": {"usd_per_gpu_hour": {"values": [1.0] * 10 + [1.4] * 10}}}
    return instance({"r": region(0, offers=offers)}, [job(gpu_hours=130, deadline=20)], hours=20)


@case("carbon-by-the-hour", "hourly", 42.40, {"job": {"hours": (4, 5, 6, 7)}, "emissions_t": 0.004})
def _() -> Doc:
    # 800 gCO2/kWh in hours 0-3, 100 after, at $100/t; due at hour 8: hours 4-7,
    # 40 + 2 + 40 kWh x 100 g = 0.004 t x 100 = 0.40: $42.40
    r = region(50, carbon_intensity={"values": [800] * 4 + [100] * 20})
    return instance(
        {"r": r},
        [job(gpu_hours=40, deadline=8)],
        objective={"carbon_usd_per_tonne": 100},
    )


@case(
    "failures-at-the-hours-rental",
    "hourly",
    42.06309464,
    {"job": {"hours": (0, 1, 2, 3)}, "costs": {"failure": 0.06309464}},
)
def _() -> Doc:
    # on demand $1/GPU-h in hours 0-3, $3 after (mean 2.67); lambda = 0.01/h, L = D = 0.15 h:
    # a failure in hour t costs L x (rho_t + E_t), at the hour's rental, not the mean:
    # 4 x 0.0100150 x 0.15 x (10 + 0.50) = 0.06309464; 40 + 2 + 0.06309464 = $42.06309464
    price = {"values": [1.0] * 4 + [3.0] * 20}
    return instance(
        {"r": region(50, offers=od(price))},
        [job(gpu_hours=40)],
        gpu_types={"G": {**G, "failures_per_gpu_hour": 0.001}},
        failure={"detect_hours": 0.05, "restart_hours": 0.1, "spare_swap_hours": 0.05},
    )


@case("preemption-series-with-checkpoints", "hourly", 22.00, {"job": {"contract": "spot"}})
def _() -> Doc:
    # spot $0.50 preempted 0.2 times an hour in hours 0-11 and never after (mean 0.1); a 36 GB
    # synchronous checkpoint. The interval is set once, at the mean rate (M = 36,000 s):
    # Daly(36 s) = 1609.96894 x 1.00750912 - 36 = 1586.05839 s, overhead 36 / 1622.05839 =
    # 0.02219402: 3.9 h of compute / 0.97780598 = 3.9885 -> 4 h. In hours 12-23 nothing is
    # preempted: 4 x 5 + 4 x 10 x 50 / 1000 = $22.00 (on demand: 4 h, $42.00)
    offers = {
        **od(1.0),
        "spot": {
            "usd_per_gpu_hour": 0.5,
            "preemptions_per_hour": {"values": [0.2] * 12 + [0.0] * 12},
        },
    }
    return instance(
        {"r": region(50, offers=offers)},
        [job(gpu_hours=39, checkpoint_gb=36, preemptible=True, resume_overhead_hours=0.25)],
        failure={"detect_hours": 0.05, "restart_hours": 0.1, "checkpoint": "sync"},
    )


# ============================================================================ re-plans


def two_regions(capacity_a: int | list[int] = 10, **phase: Any) -> Doc:
    """Regions a ($20/MWh: a held hour $10.20) and b ($50/MWh: $10.50), both UTC, 10 GPUs at
    $1/GPU-h; a non-preemptible job of 80 GPU-h (8 h) in a 12 h horizon, a 36 GB checkpoint,
    tiers and links at 1 GB/s, instant restarts."""
    a = region(20, cap=capacity_a, default_link_gb_per_s=1.0)
    b = region(50, default_link_gb_per_s=1.0)
    p = job(gpu_hours=80, checkpoint_gb=36, **phase)
    return instance({"a": a, "b": b}, [p], hours=12, failure=NO_RESTART)


RUNNING_A = {"gpu": "G", "region": "a", "contract": "on_demand", "gpus": 10, "tier": "hot"}


def _running(capacity_a: int | list[int] = 10, **running: Any) -> Doc:
    """two_regions re-planned at hour 3: 3/8 of the work done on 10 GPUs in a; 5 h left."""
    return two_regions(
        capacity_a,
        release=3,
        progress={"fraction": 0.375},
        running={**RUNNING_A, **running},
    )


@case("progress-fraction", "replan", 40.80, {"job": {"region": "a", "hours": (0, 1, 2, 3)}})
def _() -> Doc:
    # half the work done, nothing running: 4 h left, due at hour 4, on a (cheaper power):
    # 4 x ($10 + 10 kW x $20/MWh / 1000) = 4 x 10.20 = $40.80
    return two_regions(progress={"fraction": 0.5}, deadline=4)


@case("progress-flops", "replan", 61.20, {"job": {"region": "a", "hours": tuple(range(6))}})
def _() -> Doc:
    # the work is 80 GPU-h x 3600 s x 100 TFLOP/s x 0.40 MFU = 1.152e19 FLOPs; 2.88e18 done
    # is a quarter: 6 h left, due at 6: 6 x 10.20 = $61.20
    return two_regions(progress={"flops": 2.88e18}, deadline=6)


@case(
    "replan-goes-on",
    "replan",
    51.00,
    {"job": {"region": "a", "hours": (3, 4, 5, 6, 7), "segments": ()}},
)
def _() -> Doc:
    # running on a, nothing changed: the run goes on from its release at no cost, hours 3-7:
    # 5 x ($10 + 10 kW x 20 / 1000) = 5 x 10.20 = $51.00
    return _running()


@case(
    "replan-lost-region-migrates",
    "replan",
    53.532,
    {"job": {"region": "b", "hours": (3, 4, 5, 6, 7), "migration": [1.032]}},
)
def _() -> Doc:
    # a has no capacity from hour 3: the rest runs on b, 5 x 10.50 = 52.50, after
    #   leave a: write 36 GB at 1 GB/s = 0.01 h x 10.20             0.102
    #   move: 36 GB x $0.02 = 0.72, wait 0.01 h x 10.50 = 0.105       0.825
    #   enter b: read 36 GB = 0.01 h x 10.50                          0.105
    # 1.032: $53.532
    return _running([10, 10, 10] + [0] * 9)


@case(
    "replan-zero-cost-migration",
    "replan",
    52.50,
    {"job": {"region": "b", "migration": [0.0]}},
)
def _() -> Doc:
    # as above with a checkpoint of 0 GB: the migration costs nothing but happens (the plan
    # states it, from the running configuration, at 0): 5 x 10.50 = $52.50
    d = _running([10, 10, 10] + [0] * 9)
    d["phases"][0]["checkpoint_gb"] = 0
    return d


@case(
    "replan-break-costs-a-write-and-a-restart",
    "replan",
    51.204,
    {"job": {"region": "a", "hours": (4, 5, 6, 7, 8), "migration": [0.204]}},
)
def _() -> Doc:
    # a has no capacity in hour 3 only. Wait on a: a break on the running configuration is a
    # write (0.01 h) and a read (0.01 h) of a's GPUs, 0.02 x 10.20 = 0.204, + 5 x 10.20 =
    # $51.204; on b from hour 3: $53.532
    return _running([10, 10, 10, 0] + [10] * 8)


def _hand_plan_on_a(inst: Instance, hours: range) -> Any:
    """The plan that runs the job on a in ``hours`` (costed, not solved)."""
    space = build_config_space(inst)
    (a,) = [c for c in space["job"] if c.region == "a"]
    return cost_plan(inst, schedule_of({"job": (a, hours)}))


@case(
    "state-at-a-lost-region",
    "replan",
    53.532,
    {"job": {"region": "b", "hours": (3, 4, 5, 6, 7), "migration": [1.032]}},
)
def _() -> Instance:
    # the plan on a in hours 0-7, re-planned at hour 3 when a is lost from hour 3: hours 0-2
    # did 3/8 of the work, the checkpoint is on a's configuration: the figure of
    # replan-lost-region-migrates, $53.532
    from builders import instance_from

    old = _hand_plan_on_a(instance_from(two_regions()), range(8))
    lost = instance_from(two_regions([10, 10, 10] + [0] * 9))
    return lost.replace(state_at(lost, old, 3))


def _chain_old_plan(inst: Instance) -> Any:
    space = build_config_space(inst)
    (prep,) = [c for c in space["prep"] if c.region == "a"]
    (main,) = [c for c in space["job"] if c.region == "a"]
    return cost_plan(inst, schedule_of({"prep": (prep, range(2)), "job": (main, range(2, 10))}))


@case(
    "state-at-after-a-finished-phase",
    "replan",
    51.00,
    {"job": {"region": "a", "hours": (5, 6, 7, 8, 9), "segments": ()}},
)
def _() -> Instance:
    # prep (2 h) then the job (8 h), planned on a in hours 0-1 and 2-9; at hour 5 prep is done
    # and the job has done 3/8: it goes on on a from hour 5 at no cost, 5 x 10.20 = $51.00
    from builders import instance_from

    d = two_regions(predecessors=["prep"])
    d["phases"].insert(0, job("prep", 20))
    inst = instance_from(d)
    return inst.replace(state_at(inst, _chain_old_plan(inst), 5))


@case(
    "state-at-inside-segments",
    "replan",
    20.20,
    {"job": {"region": "newyork", "hours": (6, 7), "segments": ()}},
)
def _() -> Instance:
    # follow-the-sun's plan (Berlin 0-3, New York 4-7) re-planned at hour 6: 4/8 + 2/8 of the
    # work done, running on New York's configuration, which goes on in hours 6-7:
    # 2 x (10 + 10 kW x 10 / 1000) = $20.20 (Berlin's hours 6-7 cost $100/MWh)
    from builders import instance_from

    inst = instance_from(two_nights())
    space = build_config_space(inst)
    (b,) = [c for c in space["job"] if c.region == "berlin"]
    (n,) = [c for c in space["job"] if c.region == "newyork"]
    old = cost_plan(inst, schedule_of({}, segments={"job": [(b, range(4)), (n, range(4, 8))]}))
    return inst.replace(state_at(inst, old, 6))


@case(
    "replan-spot-goes-on",
    "replan",
    26.00,
    {"job": {"contract": "spot", "hours": (3, 4, 5, 6, 7), "segments": ()}},
)
def _() -> Doc:
    # preemptible, running on spot in a ($0.50/GPU-h, never preempted): it goes on in hours
    # 3-7, 5 x ($5 + 10 kW x 20 / 1000) = $26.00 (a later start costs a write and a read, a
    # pause a resume)
    d = _running(contract="spot")
    d["regions"]["a"]["offers"]["G"]["spot"] = {"usd_per_gpu_hour": 0.5, "preemptions_per_hour": 0}
    d["phases"][0]["preemptible"] = True
    d["phases"][0]["resume_overhead_hours"] = 0.25
    return d


def _reserved_replan(terms: bool) -> Instance:
    """20 h, $50/MWh; on demand $2/GPU-h, reserved $1.20 (the whole horizon, or one term
    covering it); 130 GPU-h (13 h) and nothing to checkpoint, instant restarts. The plan
    reserves 10 GPUs and runs hours 0-12; re-planned at hour 5 (5/13 done), its commitment
    stays paid: a free term of 10 GPUs."""
    from builders import instance_from

    reserved: dict[str, Any] = {"usd_per_gpu_hour": 1.2}
    if terms:
        reserved["terms"] = [{"name": "all", "start": 0, "hours": 20}]
    offers = {**od(2.0), "reserved": reserved}
    inst = instance_from(
        instance(
            {"r": region(50, offers=offers)},
            [job(gpu_hours=130, deadline=20)],
            hours=20,
            failure=NO_RESTART,
        )
    )
    space = build_config_space(inst)
    (c,) = [c for c in space["job"] if c.contract == "reserved"]
    key = ("r", "G", "all") if terms else ("r", "G")
    old = cost_plan(inst, schedule_of({"job": (c, range(13))}, reserved={key: 10}))
    return inst.replace(state_at(inst, old, 5))


@case(
    "replan-reserved-term-stays-paid",
    "replan",
    4.00,
    {"job": {"contract": "reserved", "term": "committed-all", "hours": tuple(range(5, 13))}},
)
def _() -> Instance:
    # the rest, 8 h, on the committed term at $0: power 8 x 10 kW x 50 / 1000 = $4.00; the
    # move from term "all" to "committed-all" (the same GPUs renamed) writes and reads a
    # checkpoint of 0 GB and restarts in 0 h: $0 (the plan states it)
    return _reserved_replan(terms=True)


@case(
    "replan-reserved-pool-stays-paid",
    "replan",
    4.00,
    {"job": {"contract": "reserved", "term": "committed", "hours": tuple(range(5, 13))}},
)
def _() -> Instance:
    # the same with the offer's whole-horizon reservation: the commitment becomes the free
    # term "committed" of 10 GPUs; the rest costs its power, $4.00
    return _reserved_replan(terms=False)


@case("progress-of-an-io-bound-phase", "replan", 52.50, {"job": {"region": "b"}})
def _() -> Doc:
    # half of an I/O-bound job done: 36,000 GB read at 1 GB/s was 10 h, compute 4 h; the rest
    # reads half, 5 h (> 2 h of compute): 5 x 10 + 5 x 10 kW x 50 / 1000 = $52.50 (region b:
    # a has no capacity)
    d = two_regions(0, progress={"fraction": 0.5}, data={"size_gb": 36000}, output_gb=0)
    d["phases"][0]["work"]["gpu_hours"] = 40
    return d


@case(
    "replan-running-count-no-longer-allowed",
    "replan",
    61.404,
    {"job": {"region": "a", "gpus": 20, "hours": (3, 4, 5), "migration": [0.204]}},
)
def _() -> Doc:
    # running on 10 GPUs, but only 20 are allowed now (capacity 20 in a): 5 h of 10 GPUs'
    # work is 2.5 -> 3 h on 20. Leaving the running 10: write 36 GB on one node = 0.01 h x
    # 10.20 = 0.102; entering 20 GPUs: read 36 GB on two nodes at 2 GB/s = 0.005 h x (20 +
    # 20 kW x 20 / 1000) = 0.005 x 20.40 = 0.102; 3 x 20.40 = 61.20: $61.404
    d = _running(20)
    d["phases"][0]["options"]["gpu_counts"] = [20]
    return d


@case(
    "state-at-a-second-time",
    "replan",
    20.40,
    {"job": {"region": "a", "hours": (2, 3), "segments": ()}},
)
def _() -> Instance:
    # half the work was done before this horizon (progress 0.5: 4 h left); the plan runs a in
    # hours 0-3. Re-planned at hour 2, its two hours did 2/4 of what was left: progress
    # 0.5 + 0.5 x 2/4 = 0.75, 2 h left, going on on a: 2 x 10.20 = $20.40
    from builders import instance_from

    inst = instance_from(two_regions(progress={"fraction": 0.5}))
    ups = state_at(inst, _hand_plan_on_a(inst, range(4)), 2)
    assert ups["phases.job.progress"] == {"fraction": 0.75}
    return inst.replace(ups)
