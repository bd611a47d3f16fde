"""`python -m policylab.cli`: the same command as `policylab`."""

from policylab.cli import main

main()
