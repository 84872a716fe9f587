#!/usr/bin/env bash
# Installs the npm packages the deployment checks use (tests/deploy/package-lock.json: the
# Kubernetes OpenAPI validators and a YAML parser), after scripts/install-deps.sh has installed
# the Debian packages. Everything works offline afterwards. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../tests/deploy"
if ! command -v npm >/dev/null; then
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends nodejs npm
fi
# npm records what it installed in node_modules/.package-lock.json; reinstall only on a change.
if [ -f node_modules/.package-lock.json ] && [ node_modules/.package-lock.json -nt package-lock.json ]; then
  echo "install-deploy-deps: node modules up to date"
  exit 0
fi
npm ci --no-audit --no-fund --loglevel=error
