"""planner: parallel-plan search and cost model for distributed LLM training."""
__version__ = "0.2.0"
# Version of the --json contract (planner/commands/contract.py): bump it with every change to its models.
# Here, on the bottom floor, so that printing JSON loads nothing and inputs can read old files' versions.
SCHEMA_VERSION = "37"
