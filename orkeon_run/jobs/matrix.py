"""`orkeon jobs matrix`: what each CI engine needs to run the shards of a job list
(docs/scale.md has a whole workflow for each).

- github: the matrix as one line of JSON, `{"include": [{"shard": "1/8", "jobs": 27}, …]}`,
  for `strategy.matrix: ${{ fromJSON(…) }}`. Shards that hold no job are left out.
  GitHub runs at most 256 jobs from one matrix: more shards are refused.
- gitlab: a hidden job `.orkeon-shards` holding `parallel:matrix` with one `SHARD` value
  per shard that holds a job, for a job to `extends:`. GitLab makes at most 200 jobs
  from one `parallel:matrix`: more shards are refused.
- kubernetes: an Indexed Job manifest: `completions` N, `parallelism`, one pod per index
  running shard `JOB_COMPLETION_INDEX + 1` of N. Every index runs (an empty shard exits
  0 at once); a pod that exits 1, 2 or 3 fails its index for good, one that exits 4 (the
  provider), 130 or is killed is retried (twice) and resumes its shard.
"""

from __future__ import annotations

import json
import shlex
from collections import Counter
from pathlib import PurePosixPath

from ..errors import InputError
from .joblist import JobList
from .shards import shard_of

APPARMOR = "container.apparmor.security.beta.kubernetes.io"
# What the shell sandbox (bubblewrap: user, PID and mount namespaces) needs in a pod, and
# nothing more: no privilege, every capability dropped (docs/scale.md, "Kubernetes").
SANDBOX_CONTEXT = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "Unconfined"},
    "procMount": "Unmasked",
}
# One shard runs --concurrency jobs at a time: each a model's session, its tools, and the
# audit's build and test. Edit them for heavy builds.
RESOURCES = {
    "requests": {"cpu": "1", "memory": "2Gi"},
    "limits": {"cpu": "2", "memory": "4Gi"},
}
GITHUB_MAX = 256
GITLAB_MAX = 200
ENGINES = ("github", "gitlab", "kubernetes")


def counts(jobs: JobList, shards: int) -> Counter[int]:
    """How many jobs each shard holds (shards holding none are absent)."""
    return Counter(shard_of(job.id, shards) for job in jobs.jobs)


def github(jobs: JobList, shards: int) -> str:
    if shards > GITHUB_MAX:
        raise InputError(
            f"--shards: GitHub Actions runs at most {GITHUB_MAX} jobs from one matrix; "
            f"ask for {GITHUB_MAX} shards or fewer (each shard runs --concurrency jobs at a time)"
        )
    held = counts(jobs, shards)
    include = [{"shard": f"{i}/{shards}", "jobs": held[i]} for i in sorted(held)]
    return json.dumps({"include": include}, separators=(",", ":")) + "\n"


def gitlab(jobs: JobList, shards: int) -> str:
    if shards > GITLAB_MAX:
        raise InputError(
            f"--shards: GitLab makes at most {GITLAB_MAX} jobs from one parallel:matrix; "
            f"ask for {GITLAB_MAX} shards or fewer (each shard runs --concurrency jobs at a time)"
        )
    held = counts(jobs, shards)
    doc = {
        ".orkeon-shards": {
            "parallel": {"matrix": [{"SHARD": [f"{i}/{shards}" for i in sorted(held)]}]}
        }
    }
    head = (
        f"# orkeon jobs matrix: {jobs.name}, {len(jobs.jobs)} jobs, {len(held)} of {shards} "
        "shards hold some; a job runs them with `extends: .orkeon-shards` and $SHARD\n"
    )
    return head + _yaml(doc)


def kubernetes(
    jobs: JobList,
    shards: int,
    *,
    image: str,
    concurrency: int,
    parallelism: int | None,
    name: str = "orkeon-jobs",
) -> str:
    list_name = PurePosixPath(jobs.name).name if jobs.name != "jobs (stdin)" else "jobs.jsonl"
    index = "$((JOB_COMPLETION_INDEX + 1))"
    script = (
        f'shard="{index}"; exec orkeon jobs run {shlex.quote("/jobs/" + list_name)} '
        f'--shard "$shard/{shards}" --concurrency {concurrency} --out "/out/shard-$shard"'
    )
    manifest = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "completionMode": "Indexed",
            "completions": shards,
            "parallelism": parallelism or shards,
            "backoffLimitPerIndex": 2,
            "podFailurePolicy": {
                "rules": [
                    {
                        "action": "FailIndex",
                        "onExitCodes": {
                            "containerName": "orkeon",
                            "operator": "In",
                            "values": [1, 2, 3],
                        },
                    }
                ]
            },
            "template": {
                # Kubernetes before 1.30 reads a container's AppArmor profile only here
                # (later ones too); the runtime's default profile forbids the mounts the
                # shell sandbox makes.
                "metadata": {"annotations": {f"{APPARMOR}/orkeon": "unconfined"}},
                "spec": {
                    "restartPolicy": "Never",
                    # The pod in a user namespace of its own: the sandbox nests its own in
                    # it, and the pod's /proc may be unmasked for the sandbox to mount one.
                    "hostUsers": False,
                    "containers": [
                        {
                            "name": "orkeon",
                            "image": image,
                            "command": ["sh", "-c", script],
                            "securityContext": SANDBOX_CONTEXT,
                            "resources": RESOURCES,
                            "envFrom": [{"secretRef": {"name": "orkeon-keys", "optional": True}}],
                            "volumeMounts": [
                                {"name": "jobs", "mountPath": "/jobs", "readOnly": True},
                                {"name": "out", "mountPath": "/out"},
                            ],
                        }
                    ],
                    "volumes": [
                        {"name": "jobs", "configMap": {"name": "orkeon-jobs"}},
                        {"name": "out", "persistentVolumeClaim": {"claimName": "orkeon-out"}},
                    ],
                },
            },
        },
    }
    head = (
        f"# orkeon jobs matrix: {jobs.name}, {len(jobs.jobs)} jobs, {shards} shards; "
        "pod JOB_COMPLETION_INDEX runs shard JOB_COMPLETION_INDEX + 1\n"
    )
    return head + _yaml(manifest)


def _yaml(doc: object) -> str:
    import yaml  # PyYAML (~100 ms) only for a matrix written as YAML

    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, width=4096)
