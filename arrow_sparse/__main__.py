"""``python -m arrow_sparse`` runs the ``arrow-sparse`` command."""

import sys

from .cli import main

sys.exit(main())
