"""What users and their tools touch: the command line (``cli``), the SkyPilot and Kubernetes
export, scenario grids, the report, re-plans from a running plan, what launched runs report
(``runstatus``) and ``trainplan init`` (``starter``)."""
