import os
import sys

# `python -m fxls` (how editors start the server) puts the working directory, the user's
# workspace, first on sys.path: a numpy.py or argparse.py there would run here
if not sys.flags.safe_path and sys.path and sys.path[0] == os.getcwd():
    del sys.path[0]

from fxls.cli import main

sys.exit(main())
