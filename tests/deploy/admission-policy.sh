#!/usr/bin/env bash
# Evaluates kgpu's ResourceSlice admission policy (ValidatingAdmissionPolicy) offline with
# check-admission-policy.js: the static DRA manifest's, and the chart's rendered with the DRA
# examples and test values (each against the service account and drivers of its own DaemonSet);
# that the static policy is the chart's; and that the checker rejects a weaker policy.
# Usage: admission-policy.sh RENDERER   (the helm-render binary CMake builds)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
chart="$root/deploy/helm/kgpu"
renderer="$1"
if [ ! -d "$here/node_modules/@marcbachmann/cel-js" ]; then
  echo "admission-policy: $here/node_modules lacks @marcbachmann/cel-js; run scripts/install-deploy-deps.sh" >&2
  exit 1
fi
check() { node "$here/check-admission-policy.js" "$@"; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

check "$root/deploy/static/kgpu-dra.yaml"
for values in "$chart/examples/dra.yaml" "$chart/examples/dra-only.yaml" "$chart/examples/dra-amd.yaml" \
  "$here/values/dra-custom-account.yaml" "$here/values/dra-v1beta1.yaml"; do
  rendered="$out/$(basename "$values")"
  "$renderer" -f "$values" --name kgpu --namespace kube-system "$chart" > "$rendered"
  check "$rendered"
done
# The static manifest (NVIDIA only, kube-system/kgpu) carries the chart's policy, unchanged.
check --same-spec "$out/dra-only.yaml" "$root/deploy/static/kgpu-dra.yaml"

# The checker can fail: a policy that checks only the written object (so a token may delete or
# take over another node's slice), not the driver, and whose binding only warns.
rc=0
msg="$(check --user system:serviceaccount:kube-system:kgpu --drivers gpu.nvidia.com \
  "$here/bad/admission-policy-weak.yaml" 2>&1)" || rc=$?
for text in 'DELETE "delete node-b'"'"'s slice": allowed, expected denied' \
  'UPDATE "take over node-b'"'"'s slice": allowed, expected denied' \
  'CREATE "create a dra.example.com slice": allowed, expected denied' \
  'no message says "user extra authentication.kubernetes.io/node-name"' \
  'validationActions lack Deny' 'does not match DELETE'; do
  if [ "$rc" -eq 0 ] || ! grep -qF -- "$text" <<<"$msg"; then
    echo "FAIL: the checker let a weak policy through (rc $rc), or its output lacks '$text':" >&2
    echo "$msg" >&2
    exit 1
  fi
done
echo "ok: a weak policy is rejected"
# ... and a policy differing from the chart's fails --same-spec.
sed "s/\['gpu.nvidia.com'\]/['gpu.nvidia.com', 'gpu.amd.com']/" "$root/deploy/static/kgpu-dra.yaml" > "$out/drift.yaml"
if check --same-spec "$out/dra-only.yaml" "$out/drift.yaml" >"$out/drift.log" 2>&1 \
  || ! grep -qF "ValidatingAdmissionPolicy spec differs" "$out/drift.log"; then
  echo "FAIL: --same-spec did not notice a policy that differs from the chart's:" >&2
  cat "$out/drift.log" >&2
  exit 1
fi
echo "ok: a static policy that drifts from the chart's is noticed"
