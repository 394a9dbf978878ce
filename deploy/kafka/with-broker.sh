#!/usr/bin/env bash
# Run a command with a Kafka broker: start it (deploy/kafka/launcher.py), export
# VIGIL_KAFKA_BOOTSTRAP, run the command, stop the broker whatever the command's outcome.
# Usage: deploy/kafka/with-broker.sh STATE_DIR COMMAND [ARGS...]
set -euo pipefail
state="$1"; shift
here="$(cd "$(dirname "$0")" && pwd)"
py="${VIGIL_PYTHON:-$(dirname "$1")/python}"
[ -x "$py" ] || py=python3
if [ -n "${VIGIL_KAFKA_BOOTSTRAP:-}" ]; then
  echo "with-broker: using VIGIL_KAFKA_BOOTSTRAP=$VIGIL_KAFKA_BOOTSTRAP"
  # Fails at once, saying how, when nothing listens there (a stale variable).
  "$py" "$here/launcher.py" start --state-dir "$state" >/dev/null
  exec "$@"
fi
"$py" "$here/launcher.py" start --state-dir "$state"
trap '"$py" "$here/launcher.py" stop --state-dir "$state"' EXIT
VIGIL_KAFKA_BOOTSTRAP="$(cat "$state/bootstrap")"
export VIGIL_KAFKA_BOOTSTRAP
"$@"
