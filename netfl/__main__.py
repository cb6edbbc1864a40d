import sys

from netfl.cli import main

sys.exit(main())
