import sys

from chperf.cli import main

sys.exit(main())
