import sys

from fxls.cli import main

sys.exit(main())
