"""`orkeon jobs`: many runs of one step each, sliced into shards for the CI engines that
already exist, and folded back into one report (docs/scale.md).

    joblist.py   reading and checking the job list (`orkeon jobs validate`)
    shards.py    which shard a job belongs to: a stable hash of its id
    jobdir.py    a job's folder `OUT/ID/`: job.json, "finished", the definition's fingerprint
    clone.py     a git workspace, cloned shallow into `OUT/ID/workspace`
    execute.py   `orkeon jobs run`: one shard's jobs, K at a time, in one event loop
    collect.py   a job folder read into one row; rows added up into the report
    render.py    the report as Markdown, HTML or JUnit XML
    matrix.py    what GitHub Actions, GitLab CI and Kubernetes need to run the shards
    commands.py  the four commands, as the command line calls them
"""
