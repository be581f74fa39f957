import sys

from dbbench_runner.cli import main

sys.exit(main())
