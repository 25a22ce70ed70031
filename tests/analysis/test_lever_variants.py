"""The lever-free baseline's variants without rebuilding the instance: restricted phases
enumerated on the instance itself (``variant_space``) give what rebuilding it gave.

The baseline, the attribution and ``trainplan levers`` restrict the phases' choices (GPU
types, regions, precision, counts, tiers, spares, contracts, segments). They used to build
every variant with ``Instance.replace`` and enumerate its whole space; now only the phases a
variant changes are enumerated, on the original instance. A phase's configurations depend on
the phase and the instance's sites, offers, prices and capacity only, so both ways must agree
configuration by configuration, and the greedy plans on them cost the same: checked here on
every shipped instance, the test instances with segments and a re-planned instance whose
phases are running.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from builders import DATA, assert_valid, elastic, instance_from, tiny_dict, two_nights
from hypothesis import HealthCheck, given, settings
from properties import instances

from formulations.heuristics.baseline import (
    LEVER_KEYS,
    BaselineError,
    LeverFree,
    asap_plans,
    greedy,
    lever_free,
    rematch,
)
from planner.instance import read
from planner.instance.model import Instance
from planner.interfaces.replan import state_at
from planner.model.configs import build_config_space, full_config_space, variant_space
from planner.model.costs import cost_plan

INSTANCES = Path(__file__).resolve().parents[2] / "instances"


def _instances() -> Iterator[tuple[str, Any]]:
    for name in ("week-7b", "month-70b", "small-finetune"):
        yield name, lambda n=name: read(INSTANCES / f"{n}.yaml")
    yield "tiny", lambda: instance_from(tiny_dict())
    yield "levers-tou", lambda: read(DATA / "levers_tou.yaml")
    yield "two-nights (segments)", lambda: instance_from(two_nights())
    yield "elastic (segments)", lambda: instance_from(elastic())
    yield "month-70b re-planned (running phases)", _replanned


def _replanned() -> Instance:
    inst = read(INSTANCES / "month-70b.yaml")
    old = lever_free(inst).plan
    hour = max(ph.start_hour for ph in old.phases if ph.name != old.phases[0].name)
    return inst.replace(state_at(inst, old, hour + 1))


def _switch_sets(lf: LeverFree) -> list[list[str]]:
    """Every lever off; each lever alone; the attribution's growing prefixes."""
    keys = [k for k in LEVER_KEYS if lf.restricts(k) and k != "time_shifting"]
    out: list[list[str]] = [[]]
    out += [[k] for k in keys]
    out += [keys[: i + 1] for i in range(1, len(keys))]
    return out


def _signature(c: Any) -> tuple[object, ...]:
    return (c.index, c.label, c.hours, c.rental_per_h, c.storage_per_h, c.one_time_usd, c.entry)


@pytest.mark.parametrize(
    "name, make", list(_instances()), ids=lambda x: x if isinstance(x, str) else ""
)
def test_restricted_phases_enumerate_as_the_rebuilt_instance(name: str, make: Any) -> None:
    inst = make()
    lf = lever_free(inst)
    full = full_config_space(inst)
    sets = _switch_sets(lf)
    assert sets, name
    compared = 0
    for on in sets:
        rebuilt = lf.variant(inst, on)
        old = build_config_space(rebuilt, prune=False)
        phases = lf.variant_phases(inst, on)
        new = variant_space(inst, phases)
        assert set(new.by_phase) == set(old.by_phase), (name, on)
        for p, configs in old.by_phase.items():
            assert [_signature(c) for c in new.by_phase[p]] == [_signature(c) for c in configs], (
                name,
                on,
                p,
            )
            assert new.by_phase[p] == configs, (name, on, p)  # every field, to the bit
            compared += len(configs)
        assert bool(new.infeasible) == bool(old.infeasible), (name, on)
        # the greedy plans the attribution compares: the same cost either way
        before = []
        reserved = any(c.contract == "reserved" for cs in old.by_phase.values() for c in cs)
        allows = [lambda c: c.contract != "reserved"] + ([lambda c: True] if reserved else [])
        for allow in allows if not old.infeasible else []:
            found = greedy(rebuilt, old, allow=allow, first_start_only=True)
            sched = None if found is None else rematch(inst, full, found)
            if sched is not None:
                before.append(cost_plan(inst, sched).objective)
        after = asap_plans(inst, phases, full)
        assert [p.objective for p, _ in after] == before, (name, on)
        for plan, _ in after:
            assert_valid(inst, plan)
    assert compared > 0, name


def test_a_path_outside_the_phases_is_refused() -> None:
    from formulations.heuristics.baseline import restricted_phases

    inst = instance_from(tiny_dict())
    with pytest.raises(ValueError, match="not a phase field"):
        restricted_phases(inst, {"regions.east.pue": 1.1})


@pytest.mark.parametrize("name", ["week-7b", "month-70b", "small-finetune"])
def test_the_price_sheet_gpu_is_the_first_ranked_with_a_configuration(name: str) -> None:
    """The baseline's GPU type per phase, read off the unpruned space, is the first of the
    price-sheet ranking with which the phase alone, on that type alone, has a configuration
    (the definition, enumerated here per type)."""
    from formulations.heuristics.baseline import _price_sheet_gpu, price_sheet_ranking
    from planner.model.configs import enumerate_phase

    inst = read(INSTANCES / f"{name}.yaml")
    for p in inst.active_phases:
        ranking = [g for _, g in price_sheet_ranking(inst, p)]
        alone = [
            g for g in ranking if enumerate_phase(inst, p.model_copy(update={"gpu_types": (g,)}))[0]
        ]
        want = alone[0] if alone else (ranking[0] if ranking else None)
        assert _price_sheet_gpu(inst, p) == want, p.name


def _enumerations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The phases :func:`variant_space` enumerates from here on (the others it narrows)."""
    from planner.model import configs

    seen: list[str] = []
    real = configs._phase_enumerated

    def counted(inst: Instance, p: Any, prefilter: bool) -> Any:
        seen.append(p.name)
        return real(inst, p, prefilter)

    monkeypatch.setattr(configs, "_phase_enumerated", counted)
    return seen


def test_a_narrowed_phase_is_read_off_the_unpruned_space(monkeypatch: pytest.MonkeyPatch) -> None:
    # month-70b: tiers, spares, contracts, counts, precision and types narrowed one by one and
    # all at once: the unpruned configurations that have the values left, no enumeration, and
    # the same space, field by field, as the rebuilt instance's
    inst = read(INSTANCES / "month-70b.yaml")
    lf = lever_free(inst)
    full = full_config_space(inst)
    seen = _enumerations(monkeypatch)
    for on in ([k for k in LEVER_KEYS if k != key] for key in LEVER_KEYS if lf.restricts(key)):
        phases = lf.variant_phases(inst, on)
        new = variant_space(inst, phases)
        assert seen == [], on
        old = build_config_space(lf.variant(inst, on), prune=False)
        assert new.by_phase == old.by_phase, on
        seen.clear()
    # all levers off: still read off, and fewer configurations than the unpruned space
    new = variant_space(inst, lf.variant_phases(inst, []))
    assert seen == [] and new.size < full.size


def test_stage_zero_taken_away_is_enumerated(monkeypatch: pytest.MonkeyPatch) -> None:
    # layouts() leaves ZeRO stages above 0 out of one data-parallel rank when stage 0 is
    # allowed; without stage 0 they are in: not a narrowing of the unpruned space
    inst = instance_from(tiny_dict())
    p = inst.phase("finetune")
    assert 0 in p.options.zero and len(p.options.zero) > 1
    one_rank = [c for c in full_config_space(inst)[p.name] if c.layout.dp * c.layout.cp == 1]
    assert one_rank and {c.layout.zero for c in one_rank} == {0}
    seen = _enumerations(monkeypatch)
    stages = tuple(z for z in p.options.zero if z != 0)
    q = p.model_copy(update={"options": p.options.model_copy(update={"zero": stages})})
    new = variant_space(inst, {p.name: q})
    assert seen == [p.name]
    seen.clear()
    old = build_config_space(inst.replace({f"phases.{p.name}.options.zero": list(stages)}), False)
    assert new.by_phase[p.name] == old.by_phase[p.name]


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(instances())
def test_random_instances_narrow_as_the_rebuilt_instance(d: dict[str, Any]) -> None:
    # counts, fractions, spares, contracts, tiers, regions and GPU types drawn at random,
    # re-planned phases and phases in segments among them: every lever set's space, narrowed
    # or enumerated, is the rebuilt instance's, field by field
    from planner.instance.read import from_dict

    inst = from_dict(d, "<property>", None)
    try:
        lf = lever_free(inst)
    except BaselineError:
        return
    for on in _switch_sets(lf):
        new = variant_space(inst, lf.variant_phases(inst, on))
        old = build_config_space(lf.variant(inst, on), prune=False)
        assert new.by_phase == old.by_phase, on
        assert bool(new.infeasible) == bool(old.infeasible), on


def test_a_running_phase_is_enumerated() -> None:
    # a re-planned phase's entry migrations start from its running configuration as the
    # narrowed phase can run it: such a phase is enumerated, and the space is the rebuilt one
    inst = _replanned()
    lf = lever_free(inst)
    phases = lf.variant_phases(inst, [])
    running = [n for n, p in phases.items() if p.running is not None]
    assert running
    new = variant_space(inst, phases)
    assert not set(running) & set(new.positions)
    old = build_config_space(lf.variant(inst, []), prune=False)
    assert new.by_phase == old.by_phase
