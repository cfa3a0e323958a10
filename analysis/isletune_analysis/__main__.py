"""Entry point of `python3 -m isletune_analysis`."""

import sys

from .cli import main

sys.exit(main())
