"""Plan search: the space of legal plans, cost-model tables over it, CP-SAT over the tables, and a
plain enumerator (the test oracle). `suggest.run` is the entry point."""
