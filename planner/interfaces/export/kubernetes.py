"""``trainplan export PLAN --to kubernetes -o DIR``: per unit of the plan an Indexed
``batch/v1`` Job, the plan's checkpoint volume claim, ``launch.json`` and the launcher.

Per unit ``NN-<phase>[-r<k>].yaml``: a Job with ``completionMode: Indexed``, ``completions =
parallelism = nodes`` (one pod per node, index ``JOB_COMPLETION_INDEX``), each pod asking for
the node's GPUs (``nvidia.com/gpu`` requests and limits, whole GPUs: a slice asks for one,
to be shared by MIG or time-slicing), a node selector from the GPU-to-label map (NVIDIA GPU
Feature Discovery's ``nvidia.com/gpu.product`` by default, :data:`GPU_PRODUCT`; ``--gpu-labels
FILE`` for others), the Kueue queue label ``kueue.x-k8s.io/queue-name`` (created suspended:
Kueue admits it), the checkpoint volume mounted at ``/trainplan`` and the same environment
as the SkyPilot export (:mod:`planner.interfaces.export.layout`). A job on more than one node also
gets a headless Service of its name, so that pod ``k`` is reachable as
``<job>-<k>.<job>`` (``TRAINPLAN_MASTER_ADDR`` names pod 0).

``00-storage.yaml``: the PersistentVolumeClaim (ReadWriteMany, ``--volume-size``) shared by
the plan and its re-plans, named like the SkyPilot bucket.

A region whose ``cloud`` is ``kubernetes`` (or ``k8s``) names its kubectl context in
``cloud_region``; other regions use the current context. Kubernetes has no spot contract:
a spot phase's pods carry the label ``trainplan/contract: spot`` for the cluster's node
pools to act on.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from planner.instance.model import Instance
from planner.interfaces.export.layout import MOUNT, Layout, Unit, build_layout, manifest
from planner.interfaces.export.skypilot import (
    LAUNCH_SH,
    PLACEHOLDER_RUN,
    ExportError,
    Written,
    accelerator_name,
    dump_yaml,
    launcher_source,
    node_shape,
)
from planner.model.plan import Plan

#: SkyPilot accelerator name -> the ``nvidia.com/gpu.product`` label NVIDIA GPU Feature
#: Discovery gives its nodes (the product name nvidia-smi reports, spaces as hyphens; GFD
#: documentation and the NVIDIA GPU Operator's node labels).
GPU_PRODUCT: dict[str, str] = {
    "H100": "NVIDIA-H100-80GB-HBM3",
    "H200": "NVIDIA-H200",
    "A100": "NVIDIA-A100-SXM4-40GB",
    "A100-80GB": "NVIDIA-A100-SXM4-80GB",
    "L4": "NVIDIA-L4",
    "L40S": "NVIDIA-L40S",
    "T4": "Tesla-T4",
    "V100-32GB": "Tesla-V100-SXM2-32GB",
    "B200": "NVIDIA-B200",
}
#: The label GPU Feature Discovery puts the product name in.
PRODUCT_LABEL = "nvidia.com/gpu.product"
#: Kueue's queue label on a Job.
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
#: Regions whose ``cloud`` means "a Kubernetes cluster; cloud_region is the kubectl context".
KUBE_CLOUDS = ("kubernetes", "k8s")
DEFAULT_IMAGE = "pytorch/pytorch:latest"


def _labels(lay: Layout, u: Unit, queue: str) -> dict[str, str]:
    return {
        QUEUE_LABEL: queue,
        "app.kubernetes.io/managed-by": "trainplan",
        "trainplan/plan-id": lay.tag,
        "trainplan/phase": lay.slugs[u.phase],
        "trainplan/contract": u.config.contract.replace("_", "-"),
    }


def selector_of(inst: Instance, gpu: str, labels: dict[str, dict[str, str]]) -> dict[str, str]:
    """The node selector of a GPU type: the map's entry for the type's name, its catalog
    name or its accelerator name, else GPU Feature Discovery's product label. Raises
    :class:`ExportError` naming the GPU when there is none."""
    g = inst.gpu(gpu)
    accel = accelerator_name(inst, gpu)
    for key in (gpu, g.catalog, accel):
        if key and key in labels:
            return dict(labels[key])
    if accel in GPU_PRODUCT:
        return {PRODUCT_LABEL: GPU_PRODUCT[accel]}
    raise ExportError(
        f"GPU {gpu!r} ({accel}): no node label known; give one with --gpu-labels FILE "
        f"(a YAML mapping such as {gpu}: {{{PRODUCT_LABEL}: <product>}})"
    )


def _job(
    inst: Instance,
    lay: Layout,
    u: Unit,
    queue: str,
    image: str,
    run: str,
    labels: dict[str, dict[str, str]],
) -> list[dict[str, Any]]:
    c = u.config
    per, nodes, spare_nodes = node_shape(inst, c)
    pods = nodes + spare_nodes
    gpus = max(1, math.ceil(per))
    env = [{"name": k, "value": v} for k, v in u.envs.items()]
    env.append({"name": "TRAINPLAN_NUM_NODES", "value": str(pods)})
    if pods > 1:
        env.append({"name": "TRAINPLAN_MASTER_ADDR", "value": f"{u.job}-0.{u.job}"})
    labels_ = _labels(lay, u, queue)
    meta: dict[str, Any] = {"name": u.job, "labels": labels_}
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "nodeSelector": selector_of(inst, c.gpu, labels),
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [
            {
                "name": "train",
                "image": image,
                "command": ["/bin/sh", "-c", run],
                "env": env,
                "resources": {
                    "requests": {"nvidia.com/gpu": str(gpus)},
                    "limits": {"nvidia.com/gpu": str(gpus)},
                },
                "volumeMounts": [{"name": "trainplan", "mountPath": MOUNT}],
            }
        ],
        "volumes": [{"name": "trainplan", "persistentVolumeClaim": {"claimName": lay.bucket}}],
    }
    if pods > 1:
        pod_spec["subdomain"] = u.job
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": {
            "completionMode": "Indexed",
            "completions": pods,
            "parallelism": pods,
            "backoffLimit": 3 * pods,
            "suspend": True,
            "template": {"metadata": {"labels": dict(labels_)}, "spec": pod_spec},
        },
    }
    docs = [job]
    if pods > 1:
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": u.job, "labels": dict(labels_)},
                "spec": {"clusterIP": "None", "selector": {"job-name": u.job}},
            }
        )
    return docs


def _claim(lay: Layout, size: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": lay.bucket,
            "labels": {"app.kubernetes.io/managed-by": "trainplan"},
        },
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "resources": {"requests": {"storage": size}},
        },
    }


def _many(docs: list[dict[str, Any]]) -> str:
    return "---\n".join(dump_yaml(d) for d in docs)


def context_of(inst: Instance, region: str) -> str | None:
    """The kubectl context a region's jobs go to (its ``cloud_region`` when its cloud is
    Kubernetes), None for a region that is not a Kubernetes cluster."""
    r = inst.region(region)
    if r.cloud in KUBE_CLOUDS and r.cloud_region:
        return r.cloud_region
    return None


def export_kubernetes(
    inst: Instance,
    plan: Plan,
    directory: str | Path,
    *,
    queue: str = "trainplan",
    image: str = DEFAULT_IMAGE,
    run: str | None = None,
    labels: dict[str, dict[str, str]] | None = None,
    volume_size: str = "1Ti",
    bucket: str | None = None,
) -> Written:
    """The Kubernetes files of an admitted plan, not yet written (see
    :func:`planner.interfaces.export.skypilot.export_skypilot`)."""
    from planner.interfaces.export.names import NameError_

    try:
        lay = build_layout(inst, plan, bucket)
    except NameError_ as e:
        raise ExportError(str(e)) from None
    header = "# Written by trainplan export; launch.sh applies it (see launch.json for when).\n"
    files: dict[str, tuple[str, int]] = {
        "00-storage.yaml": (header + dump_yaml(_claim(lay, volume_size)), 0o644)
    }
    warnings: list[str] = []
    contexts: dict[str, str | None] = {}
    for u in lay.units:
        docs = _job(inst, lay, u, queue, image, run or PLACEHOLDER_RUN, labels or {})
        files[u.file] = (header + _many(docs), 0o644)
        contexts[u.job] = context_of(inst, u.config.region)
        if u.config.gpus < 1:
            warnings.append(
                f"{u.phase}: a {u.config.gpus:g} GPU slice asks for one nvidia.com/gpu "
                "(share it with MIG or time-slicing)"
            )
        if u.config.contract == "spot":
            warnings.append(
                f"{u.phase}: spot is the cluster's choice on Kubernetes; its pods carry "
                "trainplan/contract: spot"
            )
    files["launch.json"] = (
        manifest(
            lay,
            plan,
            "kubernetes",
            {u.job: "kubernetes" for u in lay.units},
            contexts,
            [{"file": "00-storage.yaml", "context": c} for c in dict.fromkeys(contexts.values())],
        ),
        0o644,
    )
    files["launch.py"] = (launcher_source(), 0o644)
    files["launch.sh"] = (LAUNCH_SH, 0o755)
    if not run:
        warnings.append(
            "no --run CMD given: every job says so and fails (give the training command)"
        )
    return Written(Path(directory), lay, files, tuple(dict.fromkeys(warnings)))
