import sys

from depthcert.cli import main

sys.exit(main())
