#!/usr/bin/env bash
# Install the Debian packages the test suite needs, only those missing. Needs root (or sudo).
set -euo pipefail
want=()
command -v java >/dev/null 2>&1 || want+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || want+=(maven)
command -v promtool >/dev/null 2>&1 || want+=(prometheus)
command -v prometheus-alertmanager >/dev/null 2>&1 || command -v alertmanager >/dev/null 2>&1 || want+=(prometheus-alertmanager)
[ -x /usr/bin/chromium ] || want+=(chromium)
if [ ${#want[@]} -eq 0 ]; then
  echo "system-deps: all present"
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "system-deps: installing ${want[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${want[@]}"
