#!/bin/sh
# Run connectrt in a Spark driver, its connector tasks on the cluster's executors.
#
#   deploy/spark/submit.sh spark://spark-master:7077 deploy/spark/worker.properties
#
# Executors need Python 3.11+ with connectrt, its dependencies (confluent-kafka, orjson...) and
# your connector plugins. This ships a packed virtualenv (venv-pack) as the executors' Python;
# with connectrt pip-installed on every node, drop --archives and the PYSPARK_PYTHON settings.
set -eu
MASTER=${1:?usage: submit.sh MASTER WORKER.properties}
PROPS=${2:?usage: submit.sh MASTER WORKER.properties}
HERE=$(cd "$(dirname "$0")" && pwd)
ENV_ARCHIVE=${ENV_ARCHIVE:-connectrt-env.tar.gz}   # venv-pack -o connectrt-env.tar.gz
TASKS=${TASKS:-8}                                   # connector tasks you plan to run

exec spark-submit \
    --master "$MASTER" \
    --deploy-mode client \
    --name connectrt \
    --archives "$ENV_ARCHIVE#environment" \
    --conf spark.pyspark.python=./environment/bin/python \
    --conf spark.pyspark.driver.python="$(command -v python3)" \
    --conf spark.task.maxFailures=4 \
    --conf spark.cores.max=$((TASKS + 1)) \
    --conf spark.executor.cores=1 \
    "$HERE/connectrt_spark.py" "$PROPS"
