"""spark-submit entry point: ``spark-submit [options] connectrt_spark.py WORKER.properties``.

Runs ``connectrt spark WORKER.properties`` in the Spark driver (see deploy/spark/README.md).
"""

import sys

from connectrt.cli import main

if __name__ == "__main__":
    sys.exit(main(["spark", *sys.argv[1:]]))
