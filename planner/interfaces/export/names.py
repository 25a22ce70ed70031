"""Names an export gives what it launches: cluster and job names, storage folders and the
bucket, safe for every target and unique per plan and re-plan.

- A *slug* of a phase name is its ASCII transliteration (NFKD, accents dropped), lower case,
  every run of other characters one ``-``, at most :data:`SLUG_CHARS` characters. When the
  slug is not the name itself in that form (characters dropped, cut to length) or two
  phases would share it, a short hash of the full name is appended, so ``stage-one-
  pretraining-a`` and ``-b`` stay apart after the cut and a name in another script
  (``预训练``) becomes ``p-<hash>``, not ``phase``. Two slugs that still collide are refused.
- A *plan tag* is a hash of the plan's content: a re-plan (other hours, its ``replan``
  block) gets another tag, so its jobs never reuse the names of the plan it continues.
- Job names ``tp-<tag>-<slug>[-r<k>]``: at most 40 characters of ``[a-z0-9-]``, starting
  with a letter and ending with a letter or digit: a valid SkyPilot cluster and managed-job
  name and a Kubernetes DNS-1123 label (63) with room for the pod index.
- The bucket ``trainplan-<instance slug>-<hash>`` belongs to the run (the instance's name
  and horizon start), so that a re-plan mounts the checkpoints of the plan it continues;
  3-63 characters of ``[a-z0-9-]`` (S3 and GCS bucket rules).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable

#: Characters of a phase's slug before the hash is appended.
SLUG_CHARS = 15
#: Longest job or cluster name (SkyPilot's and Kubernetes' limits with room for suffixes).
MAX_JOB_CHARS = 40
#: A valid bucket name (S3 and GCS): 3-63 lower-case letters, digits and hyphens, starting
#: and ending with a letter or digit.
BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$")


class NameError_(ValueError):
    """Names that cannot be made unique (the message names the phases)."""


def digest(text: str, n: int = 6) -> str:
    """The first ``n`` hex digits of the SHA-256 of ``text`` (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:n]


def ascii_slug(text: str) -> str:
    """``text`` transliterated to ASCII (NFKD, combining marks dropped), lower case, every run
    of characters outside ``[a-z0-9]`` one ``-``, trimmed of hyphens."""
    flat = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", flat.lower()).strip("-")


def _plain(text: str) -> bool:
    """The slug of ``text`` loses nothing: ``text`` is already lower-case ASCII of letters,
    digits and single hyphens."""
    return re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", text) is not None


def phase_slugs(names: Iterable[str]) -> dict[str, str]:
    """A unique slug per phase name (see the module docstring); raises :class:`NameError_`
    when two still collide."""
    names = list(dict.fromkeys(names))
    base = {n: ascii_slug(n)[:SLUG_CHARS].strip("-") for n in names}
    counts: dict[str, int] = {}
    for s in base.values():
        counts[s] = counts.get(s, 0) + 1
    out: dict[str, str] = {}
    for n in names:
        s = base[n]
        kept = _plain(n) and s == n and counts[s] == 1 and not s[0].isdigit()
        if not s or s[0].isdigit():
            s = f"p-{s}" if s else "p"
        out[n] = s if kept else f"{s}-{digest(n)}"
    seen: dict[str, str] = {}
    for n, s in out.items():
        if s in seen:
            raise NameError_(
                f"phases {seen[s]!r} and {n!r} get the same name {s!r}; rename one of them"
            )
        seen[s] = n
    return out


def plan_tag(plan_json: str) -> str:
    """Six hex digits of the plan's content: another plan, or a re-plan, gets another tag."""
    return digest(plan_json)


def job_name(tag: str, slug: str, run: int | None = None) -> str:
    """``tp-<tag>-<slug>[-r<run>]``, at most :data:`MAX_JOB_CHARS` characters."""
    name = f"tp-{tag}-{slug}" + (f"-r{run}" if run is not None else "")
    if len(name) > MAX_JOB_CHARS or re.fullmatch(r"[a-z][a-z0-9-]*[a-z0-9]", name) is None:
        raise NameError_(f"no job name of at most {MAX_JOB_CHARS} characters for {name!r}")
    return name


def bucket_name(instance_name: str, horizon_start: str) -> str:
    """The run's bucket: ``trainplan-<instance slug>-<hash of name and start>``."""
    slug = ascii_slug(instance_name)[:24].strip("-") or "run"
    return f"trainplan-{slug}-{digest(instance_name + '|' + horizon_start, 10)}"


def check_bucket(name: str) -> str | None:
    """Why ``name`` is not a valid bucket name, or None."""
    if BUCKET_RE.fullmatch(name) is None or "--" in name:
        return (
            "expected 3-63 lower-case letters, digits and single hyphens, starting and ending "
            "with a letter or digit"
        )
    return None
