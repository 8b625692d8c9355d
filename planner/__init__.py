"""planner: parallel-plan search and cost model for distributed LLM training."""
__version__ = "0.2.0"
