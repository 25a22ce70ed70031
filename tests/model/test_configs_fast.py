"""The configuration space builds one configuration per layout class where dominance keeps
one (planner.model.configs.layout_class): the space is the one building every configuration and
pruning them gives, configuration for configuration, and the dropped counts agree."""

from __future__ import annotations

import copy
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from builders import DATA, tiny_dict

import planner
from planner.instance.model import Instance
from planner.instance.read import from_dict, load_document
from planner.model.configs import (
    _prune,
    build_config_space,
    enumerate_phase,
    running_config,
    with_entry,
)
from planner.model.costs import weights

INSTANCES = Path(__file__).resolve().parents[2] / "instances"


def brute_force(inst: Instance) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Every configuration built, then dominance: the labels kept per phase (in the space's
    order) and the number dropped."""
    w = weights(inst)
    kept: dict[str, list[str]] = {}
    dropped: dict[str, int] = {}
    for p in inst.active_phases:
        configs, why = enumerate_phase(inst, p)
        if why is not None:
            continue
        if p.running is not None:
            if running_config(inst, p) is None:
                continue
            configs = with_entry(inst, p, configs)
        survivors = _prune(inst, configs, w)
        dropped[p.name] = len(configs) - len(survivors)
        survivors.sort(key=lambda c: (c.region, c.gpu, c.contract, c.gpus, c.hours, c.label))
        kept[p.name] = [replace(c, index=i).label for i, c in enumerate(survivors)]
    return kept, dropped


def _variants() -> dict[str, Any]:
    week = load_document(INSTANCES / "week-7b.yaml")
    seg = copy.deepcopy(week)
    for ph in seg["phases"]:
        ph.setdefault("options", {}).update({"max_segments": 3, "segment_changes": ["region"]})
    seg_layout = copy.deepcopy(week)
    for ph in seg_layout["phases"]:
        ph.setdefault("options", {})["max_segments"] = 2
    negative = tiny_dict()
    negative["regions"]["east"]["electricity"] = {"constant": -5000}
    many = tiny_dict()
    many["phases"][1]["options"] = {
        "gpu_counts": [8, 16],
        "tensor_parallel": [1, 2, 4, 8],
        "zero": [0, 1, 2, 3],
        "recompute": ["none", "selective", "full"],
        "precision": ["bf16", "fp16"],
        "extra_spare_nodes": [0, 1],
    }
    return {
        "week-7b": week,
        "month-70b": load_document(INSTANCES / "month-70b.yaml"),
        "small-finetune": load_document(INSTANCES / "small-finetune.yaml"),
        "segments-region-only": seg,
        "segments": seg_layout,
        "negative-prices": negative,
        "many-layouts": many,
    }


VARIANTS = _variants()


@pytest.mark.parametrize("name", list(VARIANTS))
def test_the_space_is_what_pruning_every_configuration_gives(name: str) -> None:
    base = (
        INSTANCES
        if name in ("week-7b", "month-70b", "small-finetune") or name.startswith("segments")
        else DATA
    )
    inst = from_dict(copy.deepcopy(VARIANTS[name]), f"<{name}>", base)
    space = build_config_space(inst)
    kept, dropped = brute_force(inst)
    assert {p: [c.label for c in cs] for p, cs in space.by_phase.items() if cs} == kept
    assert {p: n for p, n in space.dropped.items() if p in kept} == dropped
    assert all(c.index == i for cs in space.by_phase.values() for i, c in enumerate(cs))


def test_a_running_phase_keeps_its_configuration(tmp_path: Path) -> None:
    # a re-planned phase's running configuration is never dominated, so no layout class is
    # thinned for it: the running one is among the space's and continues
    inst = planner.read(INSTANCES / "week-7b.yaml")
    res = planner.solve(inst, time_limit=30)
    assert res.plan is not None
    from planner.interfaces.replan import state_at

    start = min(p.start_hour for p in res.plan.phases if p.name == "pretrain")
    derived = inst.replace(state_at(inst, res.plan, start + 3))
    space = build_config_space(derived)
    assert any(c.continues for c in space["pretrain"])
    kept, _ = brute_force(derived)
    assert [c.label for c in space["pretrain"]] == kept["pretrain"]


def test_a_copy_with_changes_is_dataclasses_replace() -> None:
    # Config.but skips the generated __init__ (12,000-23,000 copies on the lab's quarter):
    # it must give what dataclasses.replace gives, field for field, and refuse an unknown one
    inst = planner.read(INSTANCES / "month-70b.yaml")
    for configs in build_config_space(inst).by_phase.values():
        for c in configs[:5]:
            fast = c.but(index=c.index + 7, continues=True, entry_hours=1.5)
            slow = replace(c, index=c.index + 7, continues=True, entry_hours=1.5)
            assert fast == slow and fast.__dict__ == slow.__dict__ and hash(fast) == hash(slow)
            assert fast.label == slow.label and c.index == slow.index - 7
    with pytest.raises(TypeError, match="no field 'indx'"):
        c.but(indx=1)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the second core's half needs fork")
def test_the_later_half_enumerated_beside_gives_the_same_space(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the later half of the phases enumerated in a forked child (BESIDE_PHASES), every
    phase's configurations, skipped counts and infeasibilities are those of one process, in
    the same order; a re-planned instance (running phases, with their entry migrations) and
    a phase that can never fit included."""
    import planner.beside
    import planner.model.configs as C
    from planner.interfaces.replan import state_at

    inst = planner.read(INSTANCES / "week-7b.yaml")
    res = planner.solve(inst, time_limit=30)
    assert res.plan is not None
    start = min(p.start_hour for p in res.plan.phases if p.name == "pretrain")
    derived = inst.replace(state_at(inst, res.plan, start + 3))
    d = tiny_dict()
    d["phases"].append({**copy.deepcopy(d["phases"][0]), "name": "never", "deadline": 1})
    cases = [inst, derived, from_dict(d, "<tiny>", DATA)]
    started: list[bool] = []
    real = planner.beside.Beside.__init__

    def spy(self: Any, *a: Any, **k: Any) -> None:
        real(self, *a, **k)
        started.append(self.proc is not None)

    for case in cases:
        monkeypatch.setattr(C, "BESIDE_PHASES", 10**9)
        alone = C._enumerate_all(case, True)
        monkeypatch.setattr(C, "BESIDE_PHASES", 2)
        monkeypatch.setattr(planner.beside, "may_fork", lambda: True)
        monkeypatch.setattr(planner.beside.Beside, "__init__", spy)
        split = C._enumerate_all(case, True)
        monkeypatch.undo()
        assert list(split[0]) == list(alone[0])
        assert split == alone
    assert started == [True] * len(cases)
    assert cases[2].active_phases[-1].name == "never" and alone[1]


def test_a_configuration_built_fast_is_the_one_its_init_builds() -> None:
    # Config.built skips the dataclass __init__: the same fields, the same defaults, equal
    # and hashing alike, for every configuration of a shipped instance's unpruned space
    from dataclasses import MISSING, fields

    from planner.instance import read
    from planner.model.configs import Config, full_config_space

    inst = read(INSTANCES / "month-70b.yaml")
    required = [f.name for f in fields(Config) if f.default is MISSING]
    checked = 0
    for cs in full_config_space(inst).by_phase.values():
        for c in cs:
            values = {k: getattr(c, k) for k in required}
            assert Config.built(values) == Config(**values)  # defaults taken
            every = {f.name: getattr(c, f.name) for f in fields(Config)}
            fast = Config.built(every)
            assert fast == c and fast.__dict__ == c.__dict__
            checked += 1
    assert checked > 100


@pytest.mark.parametrize("name", ["week-7b", "month-70b", "many-layouts", "segments"])
def test_the_unpruned_space_built_per_layout_class_is_the_one_built_per_layout(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The unpruned space builds a layout class's configurations in one pass over regions,
    offers and tiers (_Slot.every_layout); with every layout a class of its own (as before)
    the space is the same, configuration for configuration and field for field, in the same
    order, with the same dropped counts and infeasibilities."""
    import planner.model.configs as C

    def read_it() -> Instance:
        base = INSTANCES if name in ("week-7b", "month-70b", "segments") else DATA
        return from_dict(copy.deepcopy(VARIANTS[name]), f"<{name}>", base)

    grouped = build_config_space(read_it(), prune=False)
    # a class of more than one layout is built at once: the grouping is exercised
    assert max(len(g) for g in _layout_groups(read_it())) > 1
    layouts: list[object] = []

    def one_each(p: Any, lay: Any) -> tuple[object, ...]:
        layouts.append(lay)
        return (len(layouts),)

    monkeypatch.setattr(C, "layout_class", one_each)
    alone = build_config_space(read_it(), prune=False)
    assert layouts, "the per-layout build never asked for a class"
    assert grouped.by_phase.keys() == alone.by_phase.keys()
    for p, cs in grouped.by_phase.items():
        assert [c.__dict__ for c in cs] == [c.__dict__ for c in alone.by_phase[p]], p
    assert grouped.dropped == alone.dropped and grouped.infeasible == alone.infeasible


def _layout_groups(inst: Instance) -> list[list[object]]:
    """The layout classes of every phase's GPU types and counts (fitting layouts)."""
    import planner.model.configs as C
    from planner.model.workload import phase_model

    out: list[list[object]] = []
    for p in inst.active_phases:
        m = phase_model(inst, p)
        for gname in p.gpu_types or tuple(inst.spec.gpu_types):
            g = inst.gpu(gname)
            for count in C.gpu_counts(p, g):
                classes = C._layout_classes(inst, p, m, gname, count, False, True, C._Seen())
                out += [list(v) for v in classes.values()]
    return out
