"""spark-submit needs a Python file to run: this one runs the groupscope command line."""
import sys

from streaming.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
