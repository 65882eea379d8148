"""spark-submit entry point: ``spark-submit [options] connectrt_spark.py WORKER.properties
[key=value ...]``.

Runs ``connectrt spark WORKER.properties`` in the Spark driver (see deploy/spark/README.md).
Each ``key=value`` argument overrides that worker setting (``submit.sh`` passes ``listeners``
and ``rest.advertised.host.name`` this way): the file and the overrides are written to a
temporary file for the run, removed when the driver exits.
"""

import os
import sys
import tempfile

from connectrt.cli import main


def _run(props: str, overrides: list[str]) -> int:
    if not overrides:
        return int(main(["spark", props]) or 0)
    for item in overrides:
        if "=" not in item:
            print(f"error: {item!r} is not key=value", file=sys.stderr)
            return 2
    with open(props, encoding="utf-8") as f:
        text = f.read()
    # Later lines win in a .properties file: the overrides go last.
    merged = text.rstrip("\n") + "\n# overrides from the command line\n" + "\n".join(overrides)
    fd, path = tempfile.mkstemp(prefix="connectrt-worker-", suffix=".properties")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(merged + "\n")
        return int(main(["spark", path]) or 0)
    finally:
        os.unlink(path)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: connectrt_spark.py WORKER.properties [key=value ...]", file=sys.stderr)
        sys.exit(2)
    sys.exit(_run(sys.argv[1], sys.argv[2:]))
