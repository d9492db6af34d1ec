"""The environment through which ``python -m neurogc.workloads serve`` hands the agent's options
(and the workload's ``--set`` options) to a WSGI workload imported by a gunicorn worker."""

AGENT = "NEUROGC_WORKLOAD_AGENT"  # "0": serve without the agent
POLICY = "NEUROGC_WORKLOAD_POLICY"
INTERVAL = "NEUROGC_WORKLOAD_INTERVAL"
CSV = "NEUROGC_WORKLOAD_CSV"
GC_EVENTS_CSV = "NEUROGC_WORKLOAD_GC_EVENTS_CSV"
OPTIONS = "NEUROGC_WORKLOAD_OPTIONS"  # a JSON object of create_app keyword options
