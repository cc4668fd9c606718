"""`python -m kgen` is the `kgen` command (useful where kgen runs from a checkout)."""

from kgen.cli import main

main()
