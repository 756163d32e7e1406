"""`python -m synaptum_lite`: the operator's command line (see `synaptum_lite.cli`)."""

import sys

from .cli import main

sys.exit(main())
