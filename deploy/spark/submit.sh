#!/bin/sh
# Run connectrt on a Spark cluster: the worker (herder, REST API, internal topics) in the Spark
# driver, in client mode on this host; every connector task a long-running Spark task on an
# executor, with the Python environment shipped with the job. See docs/spark/cluster.md.
#
#   connectrt pack-env -o connectrt-env.tar.gz        # once per connectrt/plugin version
#   deploy/spark/submit.sh spark://spark-master:7077 deploy/spark/worker.properties \
#       [more spark-submit options...]
#
# MASTER is anything spark-submit takes: spark://host:7077 (standalone), yarn,
# k8s://https://api-server:6443. Settings, from the environment:
#   ENV_ARCHIVE    the packed environment (default connectrt-env.tar.gz); ENV_ARCHIVE=none uses
#                  the Python that PYSPARK_PYTHON names on every node instead
#   DRIVER_PYTHON  the driver's Python, with connectrt installed (default: python3 on PATH)
#   DRIVER_HOST    the address executors reach the driver on (spark.driver.host; default:
#                  Spark's choice, this host's address)
#   REST_LISTENER  the REST API's listener (default http://0.0.0.0:8083: every interface)
#   REST_ADVERTISED_HOST  the host name the REST API gives out (default: unset)
#   FILES          comma-separated files every executor gets in its working directory
#                  (--files): files connectors name by a relative path, truststores...
#   TASKS          connector tasks you plan to run (default 8): spark.cores.max is TASKS + 1
#   EXECUTOR_CORES cores per executor (default 1)
#   SPARK_SUBMIT   the spark-submit command (default: $SPARK_HOME/bin/spark-submit, or
#                  spark-submit on PATH)
# Worker settings in the file that spark-submit also sets (spark.master, spark.archives...)
# give way to spark-submit's.
set -eu
usage="usage: submit.sh MASTER WORKER.properties [spark-submit options...]"
MASTER=${1:?$usage}
PROPS=${2:?$usage}
shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
ENV_ARCHIVE=${ENV_ARCHIVE:-connectrt-env.tar.gz}
DRIVER_PYTHON=${DRIVER_PYTHON:-$(command -v python3 || true)}
if [ -z "$DRIVER_PYTHON" ]; then
    echo "error: no python3 on PATH: set DRIVER_PYTHON to a Python with connectrt" >&2
    exit 1
fi
REST_LISTENER=${REST_LISTENER:-http://0.0.0.0:8083}
TASKS=${TASKS:-8}
EXECUTOR_CORES=${EXECUTOR_CORES:-1}
if [ -z "${SPARK_SUBMIT:-}" ]; then
    if [ -n "${SPARK_HOME:-}" ] && [ -x "$SPARK_HOME/bin/spark-submit" ]; then
        SPARK_SUBMIT=$SPARK_HOME/bin/spark-submit
    else
        SPARK_SUBMIT=spark-submit
    fi
fi

set -- --master "$MASTER" \
    --deploy-mode client \
    --name connectrt \
    --conf spark.pyspark.driver.python="$DRIVER_PYTHON" \
    --conf spark.task.maxFailures=4 \
    --conf spark.cores.max=$((TASKS + 1)) \
    --conf spark.executor.cores="$EXECUTOR_CORES" \
    "$@"
if [ "$ENV_ARCHIVE" != none ]; then
    if [ ! -f "$ENV_ARCHIVE" ]; then
        echo "error: $ENV_ARCHIVE not found: run 'connectrt pack-env -o $ENV_ARCHIVE'" >&2
        exit 1
    fi
    # Unpacked as ./environment in every executor's working directory; its bin/python runs
    # the executors' Python workers (pyspark's venv-pack / conda-pack recipe).
    set -- "$@" --archives "$ENV_ARCHIVE#environment" \
        --conf spark.pyspark.python=./environment/bin/python
fi
if [ -n "${DRIVER_HOST:-}" ]; then
    set -- "$@" --conf spark.driver.host="$DRIVER_HOST"
fi
if [ -n "${FILES:-}" ]; then
    set -- "$@" --files "$FILES"
fi
set -- "$@" "$HERE/connectrt_spark.py" "$PROPS" "listeners=$REST_LISTENER"
if [ -n "${REST_ADVERTISED_HOST:-}" ]; then
    set -- "$@" "rest.advertised.host.name=$REST_ADVERTISED_HOST"
fi
exec "$SPARK_SUBMIT" "$@"
