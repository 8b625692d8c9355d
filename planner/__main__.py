"""`python -m planner` runs the command line."""
import sys

from planner.commands.main import main

sys.exit(main())
