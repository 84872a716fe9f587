#!/usr/bin/env bash
# Validates kgpu's deployment files without a cluster or a Docker engine (ctest runs each mode as
# its own test; see tests/deploy/CMakeLists.txt):
#   validate-deploy.sh static                      every deploy/static manifest against the Kubernetes schemas
#   validate-deploy.sh examples                    every deploy/examples file (DRA claims and pods, v1 and
#                                                  v1beta1/) likewise
#   validate-deploy.sh helm RENDERER VALUES.yaml   render the chart with VALUES, validate every object and
#                                                  check tests/deploy/expect/<VALUES name>.txt
#   validate-deploy.sh values RENDERER             render with each tests/deploy/values file and check its
#                                                  expectations only (values whose objects have no offline schema)
#   validate-deploy.sh dockerfile                  structure and file/package checks of deploy/Dockerfile
#   validate-deploy.sh negative RENDERER           the checkers reject known-bad inputs (they can fail)
#   validate-deploy.sh notes RENDERER              the chart's NOTES.txt (NFD warning, labels-only mode)
#   validate-deploy.sh nvidia RENDERER             NVIDIA's own values files (tests/deploy/nvidia: device
#                                                  plugin v0.17.4/v0.20.0 and DRA driver v25.8.1/head
#                                                  defaults, unchanged, and shapes of them) render what
#                                                  NVIDIA's chart means or fail naming the key
#   validate-deploy.sh capabilities RENDERER       DRA API versions follow .Capabilities (--api-versions)
#   validate-deploy.sh values-doc                  every value the schema accepts is in the chart's README
#   validate-deploy.sh slices                      the ResourceSlices kgpu writes (tests/fixtures/golden/dra,
#                                                  made by the production path) against the v1 schema; and a
#                                                  slice with a bad taint effect must be refused
#   validate-deploy.sh dra-allocator               the DRA allocation simulator's unit tests (tests/deploy/
#                                                  dra-allocator: kube-scheduler 1.34's allocation rules)
#   validate-deploy.sh dra-allocation              the simulator on kgpu's own data: every golden fleet, the
#                                                  static DeviceClasses, deploy/examples and quickstart-shaped claims
# Tools: node + tests/deploy/node_modules (scripts/install-deploy-deps.sh), python3, and the
# helm-render binary built from tests/deploy/helm-render by CMake.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
deploy_tests="$root/tests/deploy"
chart="$root/deploy/helm/kgpu"

need_node_modules() {
  if [ ! -d "$deploy_tests/node_modules/kubernetes-models" ]; then
    echo "validate-deploy: $deploy_tests/node_modules is missing; run scripts/install-deploy-deps.sh" >&2
    exit 1
  fi
}
validate() { node "$deploy_tests/validate-manifests.js" "$@"; }

# Runs a command that must fail, and whose output must contain every given text.
expect_failure() {
  local what="$1"; shift
  local -a texts=()
  while [ "$1" != "--" ]; do texts+=("$1"); shift; done
  shift
  local out rc=0
  out="$("$@" 2>&1)" || rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "FAIL: $what: expected a failure, got success" >&2
    echo "$out" >&2
    return 1
  fi
  for t in "${texts[@]}"; do
    if ! grep -qF -- "$t" <<<"$out"; then
      echo "FAIL: $what: output lacks '$t':" >&2
      echo "$out" >&2
      return 1
    fi
  done
  echo "ok: $what fails as expected"
}

mode="${1:-}"
case "$mode" in
  slices)
    need_node_modules
    out="$(mktemp -d)"
    trap 'rm -rf "$out"' EXIT
    # Each golden file holds {"v1": [slices...], "v1beta1": [...]}: the v1 ones, one document each.
    # kubernetes-models 5 has no resource.k8s.io/v1beta1 (the v1beta1 ones differ only by "basic").
    to_docs() {
      node -e 'const g = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
               if (!Array.isArray(g.v1) || g.v1.length === 0) { console.error(process.argv[1] + ": no v1 slices"); process.exit(1); }
               process.stdout.write(g.v1.map((s) => JSON.stringify(s)).join("\n---\n") + "\n");' "$1"
    }
    for f in "$root"/tests/fixtures/golden/dra/*.json; do
      to_docs "$f" > "$out/$(basename "$f" .json).yaml"
    done
    validate "$out"/*.yaml
    # The schema judges taints: a tainted golden exists, and an effect Kubernetes does not know fails.
    grep -q '"taints"' "$out"/*.yaml || { echo "FAIL: no golden ResourceSlice has a device taint" >&2; exit 1; }
    sed 's/"effect":"NoSchedule"/"effect":"Evict"/' "$out/gh200-x4.yaml" > "$out/bad-effect.yaml.txt"
    expect_failure "a taint effect Kubernetes does not know" "/effect must be equal to one of the allowed values" -- \
      validate "$out/bad-effect.yaml.txt"
    # And partitionable devices (dynamic MIG, issue 42): counter sets and what each device consumes.
    grep -q '"sharedCounters"' "$out"/*.yaml && grep -q '"consumesCounters"' "$out"/*.yaml ||
      { echo "FAIL: no golden ResourceSlice has shared counters and devices consuming them" >&2; exit 1; }
    sed 's/"counterSet":"gpu-0-counter-set"/"counterSet":7/' "$out/hgx-h100-dynamic-mig.yaml" > "$out/bad-counter-set.yaml.txt"
    expect_failure "a counterSet that is no string" "counterSet must be string" -- validate "$out/bad-counter-set.yaml.txt"
    ;;
  dra-allocator)
    need_node_modules
    node --test "$deploy_tests"/dra-allocator/*.test.js
    ;;
  dra-allocation)
    need_node_modules
    node --test "$deploy_tests/dra-allocator/check-repo-data.js"
    ;;
  static)
    need_node_modules
    validate "$root"/deploy/static/*.yaml
    # The plain manifest promises exactly one host path: the kubelet's device-plugins folder.
    n=$(grep -c 'hostPath:' "$root/deploy/static/kgpu.yaml")
    if [ "$n" -ne 1 ]; then
      echo "FAIL: deploy/static/kgpu.yaml mounts $n host paths; it must mount only device-plugins" >&2
      exit 1
    fi
    if grep -q 'privileged: true' "$root/deploy/static/kgpu.yaml"; then
      echo "FAIL: deploy/static/kgpu.yaml must not be privileged" >&2
      exit 1
    fi
    # The DRA manifest must say what the chart's DRA mode says (tests/deploy/expect/static-kgpu-dra.txt).
    node "$deploy_tests/check-expectations.js" "$root/deploy/static/kgpu-dra.yaml" "$deploy_tests/expect/static-kgpu-dra.txt"
    ;;
  examples)
    need_node_modules
    # resource.k8s.io/v1 claims, and their v1beta1 forms for Kubernetes 1.32/1.33 (checked in
    # their v1 form plus v1beta1's own request rules: validate-manifests.js).
    validate "$root"/deploy/examples/*.yaml "$root"/deploy/examples/v1beta1/*.yaml
    # Every v1 example has its v1beta1 form, and no v1beta1 file is without its v1 example; an
    # example of a feature no v1beta1-only cluster has says so in a "# v1-only: <why>" line.
    for f in "$root"/deploy/examples/*.yaml "$root"/deploy/examples/v1beta1/*.yaml; do
      name="$(basename "$f")"
      if grep -q '^# v1-only: ' "$root/deploy/examples/$name" 2>/dev/null && [ ! -f "$root/deploy/examples/v1beta1/$name" ]; then
        continue
      fi
      if [ ! -f "$root/deploy/examples/$name" ] || [ ! -f "$root/deploy/examples/v1beta1/$name" ]; then
        echo "FAIL: deploy/examples/$name and deploy/examples/v1beta1/$name must both exist" >&2
        exit 1
      fi
    done
    # Claims and DeviceClasses name only attributes/capacities kgpu publishes (its golden slices).
    node "$deploy_tests/check-claim-attributes.js" "$root"/tests/fixtures/golden/dra/*.json -- \
      "$root"/deploy/examples/*.yaml "$root"/deploy/examples/v1beta1/*.yaml "$root/deploy/static/kgpu-dra.yaml"
    ;;
  helm)
    renderer="$2"
    values="$3"
    need_node_modules
    out="$(mktemp -d)"
    trap 'rm -rf "$out"' EXIT
    rendered="$out/$(basename "$values")"
    "$renderer" -f "$values" --name kgpu --namespace kube-system "$chart" > "$rendered"
    validate "$rendered"
    # Each example must show that it changes what it claims to: tests/deploy/expect/<example>.txt.
    expect="$deploy_tests/expect/$(basename "$values" .yaml).txt"
    if [ ! -f "$expect" ]; then
      echo "FAIL: no expectations file $expect for example $(basename "$values")" >&2
      exit 1
    fi
    node "$deploy_tests/check-expectations.js" "$rendered" "$expect"
    ;;
  values)
    renderer="$2"
    need_node_modules
    out="$(mktemp -d)"
    trap 'rm -rf "$out"' EXIT
    for values in "$deploy_tests"/values/*.yaml; do
      rendered="$out/$(basename "$values")"
      "$renderer" -f "$values" --name kgpu --namespace kube-system "$chart" > "$rendered"
      node "$deploy_tests/check-expectations.js" "$rendered" "$deploy_tests/expect/$(basename "$values" .yaml).txt"
    done
    ;;
  values-doc)
    # Every value the chart accepts is in its README (values table or NVIDIA migration table).
    python3 "$deploy_tests/check_values_doc.py" "$chart"
    # ... and the check can fail: a README without metrics.gpuTelemetry.
    out="$(mktemp -d)"
    trap 'rm -rf "$out"' EXIT
    cp "$chart/values.yaml" "$chart/values.schema.json" "$out/"
    grep -v 'metrics.gpuTelemetry' "$chart/README.md" > "$out/README.md"
    expect_failure "README without a value" "does not document \`metrics.gpuTelemetry\`" -- \
      python3 "$deploy_tests/check_values_doc.py" "$out"
    ;;
  notes)
    # What `helm install` prints: a warning when the labels need node-feature-discovery and the
    # cluster serves no NFD API (helm-render --api-versions plays the cluster's API list).
    renderer="$2"
    with_labels="$chart/examples/mps-labels-metrics.yaml"
    warning="WARNING: node labels need node-feature-discovery"
    notes="$("$renderer" --notes -f "$with_labels" --name kgpu --namespace kube-system "$chart")"
    if ! grep -qF "$warning" <<<"$notes"; then
      echo "FAIL: NOTES lack the NFD warning without an NFD API:" >&2; echo "$notes" >&2; exit 1
    fi
    notes="$("$renderer" --notes --api-versions nfd.k8s-sigs.io/v1alpha1 -f "$with_labels" --name kgpu --namespace kube-system "$chart")"
    if grep -qF "$warning" <<<"$notes"; then
      echo "FAIL: NOTES warn about NFD although the cluster serves its API:" >&2; echo "$notes" >&2; exit 1
    fi
    notes="$("$renderer" --notes -f "$chart/examples/default.yaml" --name kgpu --namespace kube-system "$chart")"
    if grep -qF "$warning" <<<"$notes"; then
      echo "FAIL: NOTES warn about NFD without gfd.enabled:" >&2; echo "$notes" >&2; exit 1
    fi
    if ! grep -qF "kgpu devices --live" <<<"$notes"; then
      echo "FAIL: NOTES do not say how to check the node:" >&2; echo "$notes" >&2; exit 1
    fi
    notes="$("$renderer" --notes -f "$chart/examples/labels-only.yaml" --name kgpu --namespace kube-system "$chart")"
    if ! grep -qF "Labels only (devicePlugin.enabled: false)" <<<"$notes"; then
      echo "FAIL: NOTES do not say the pods only write labels:" >&2; echo "$notes" >&2; exit 1
    fi
    echo "ok: NOTES"
    ;;
  nvidia)
    # What `helm get values --all` gives from NVIDIA's releases, used unchanged (issue 41).
    renderer="$2"
    need_node_modules
    nvidia="$deploy_tests/nvidia"
    out="$(mktemp -d)"
    trap 'rm -rf "$out"' EXIT
    render() { "$renderer" "$@" --name kgpu --namespace kube-system "$chart"; }
    for v in v0.17.4 v0.20.0; do
      render -f "$nvidia/dp-$v-defaults.yaml" > "$out/dp-$v.yaml"
      validate "$out/dp-$v.yaml"
      node "$deploy_tests/check-expectations.js" "$out/dp-$v.yaml" "$deploy_tests/expect/nvidia-dp-defaults.txt"
      notes="$(render --notes -f "$nvidia/dp-$v-defaults.yaml")"
      grep -qF "WARNING: image.repository nvcr.io/nvidia/k8s-device-plugin is NVIDIA's default image" <<<"$notes" ||
        { echo "FAIL: NOTES of NVIDIA's $v defaults do not name NVIDIA's image:" >&2; echo "$notes" >&2; exit 1; }
      echo "ok: NVIDIA's device plugin chart $v defaults render"
    done
    for v in v25.8.1 head; do
      # NVIDIA's default resources.computeDomains.enabled: true is what kgpu cannot do: by name.
      expect_failure "NVIDIA's DRA chart $v defaults" "resources.computeDomains.enabled" \
        "set resources.computeDomains.enabled: false" -- render -f "$nvidia/dra-$v-defaults.yaml"
      render -f "$nvidia/dra-$v-defaults.yaml" -f "$nvidia/no-compute-domains.yaml" > "$out/dra-$v.yaml"
      validate "$out/dra-$v.yaml"
      node "$deploy_tests/check-expectations.js" "$out/dra-$v.yaml" "$deploy_tests/expect/nvidia-dra-defaults.txt"
      notes="$(render --notes -f "$nvidia/dra-$v-defaults.yaml" -f "$nvidia/no-compute-domains.yaml")"
      for t in "DRA: kgpu is the DRA driver gpu.nvidia.com" "is NVIDIA's default image"; do
        grep -qF "$t" <<<"$notes" || { echo "FAIL: NOTES of NVIDIA's DRA $v defaults lack '$t':" >&2; echo "$notes" >&2; exit 1; }
      done
      echo "ok: NVIDIA's DRA chart $v defaults render DRA with ComputeDomains off"
    done
    render -f "$nvidia/dra-gates.yaml" > "$out/dra-gates.yaml"
    validate "$out/dra-gates.yaml"
    node "$deploy_tests/check-expectations.js" "$out/dra-gates.yaml" "$deploy_tests/expect/nvidia-dra-gates.txt"
    notes="$(render --notes -f "$nvidia/dra-gates.yaml")"
    grep -qF "DRA is on because these are NVIDIA's DRA chart values" <<<"$notes" ||
      { echo "FAIL: NOTES do not say why DRA is on:" >&2; echo "$notes" >&2; exit 1; }
    expect_failure "NVIDIA's DRA chart values with its GPUs off" "resources.gpus.enabled: false" \
      "kubeletPlugin, resources.gpus, resources.computeDomains" "remove NVIDIA's DRA chart values" -- \
      render -f "$nvidia/dra-no-gpus.yaml"
    expect_failure "NVIDIA's image pinned" "image.repository: \"nvcr.io/nvidia/k8s-device-plugin\" is NVIDIA's image" \
      "v0.17.4" "set image.repository to your kgpu image" -- render -f "$nvidia/dp-pinned-image.yaml"
    ;;
  capabilities)
    # As NVIDIA's DRA chart: the DeviceClasses' version is the newest resource.k8s.io version the
    # cluster serves unless one is set; a set one the cluster does not serve is warned about.
    renderer="$2"
    dra="$chart/examples/dra.yaml"
    render() { "$renderer" "$@" --name kgpu --namespace kube-system "$chart"; }
    version_of() { render "$@" | awk '/^apiVersion: resource.k8s.io/ { print $2; exit }'; }
    check() {
      local want="$1"; shift
      local got; got="$(version_of "$@")"
      [ "$got" = "$want" ] || { echo "FAIL: DeviceClasses are '$got' with $*, expected $want" >&2; exit 1; }
      echo "ok: $want with $*"
    }
    check resource.k8s.io/v1 -f "$dra"
    check resource.k8s.io/v1beta1 -f "$dra" --api-versions resource.k8s.io/v1beta1 --kube-version v1.32.0
    check resource.k8s.io/v1beta2 -f "$dra" --api-versions resource.k8s.io/v1beta1 --api-versions resource.k8s.io/v1beta2
    check resource.k8s.io/v1 -f "$dra" --api-versions resource.k8s.io/v1beta2 --api-versions resource.k8s.io/v1
    check resource.k8s.io/v1beta1 -f "$deploy_tests/values/from-nvidia-dra-v1beta1.yaml" --api-versions resource.k8s.io/v1
    out="$(mktemp -d)"
    trap 'rm -rf "$out"' EXIT
    printf 'resourceApiVersion: resource.k8s.io/v1beta2\n' > "$out/v1beta2.yaml"
    warning="WARNING: the DeviceClasses are resource.k8s.io/v1beta2, which this cluster does not serve"
    notes="$(render --notes -f "$dra" -f "$out/v1beta2.yaml" --api-versions resource.k8s.io/v1beta1 --kube-version v1.32.0)"
    grep -qF "$warning" <<<"$notes" && grep -qF "Kubernetes 1.32" <<<"$notes" ||
      { echo "FAIL: NOTES do not warn about v1beta2 on 1.32:" >&2; echo "$notes" >&2; exit 1; }
    notes="$(render --notes -f "$dra" -f "$out/v1beta2.yaml" --api-versions resource.k8s.io/v1beta1 --api-versions resource.k8s.io/v1beta2)"
    if grep -qF "WARNING: the DeviceClasses" <<<"$notes"; then
      echo "FAIL: NOTES warn although the cluster serves v1beta2:" >&2; echo "$notes" >&2; exit 1
    fi
    echo "ok: NOTES warn about DeviceClasses the cluster does not serve"
    ;;
  dockerfile)
    python3 "$deploy_tests/lint_dockerfile.py" "$root"
    ;;
  negative)
    renderer="$2"
    need_node_modules
    expect_failure "broken DaemonSet" "privileged must be boolean" "volumeMount missing has no volume" \
      "no toleration for nvidia.com/gpu" -- validate "$deploy_tests/bad/broken-daemonset.yaml"
    expect_failure "unknown kind" "unknown apiVersion/kind apps/v1/DaemonSett" -- \
      validate "$deploy_tests/bad/unknown-kind.yaml"
    expect_failure "ambiguous default config" "config.default is required" -- \
      "$renderer" -f "$deploy_tests/bad/values-ambiguous-default.yaml" "$chart"
    expect_failure "broken DRA claims" "count must be integer" "needs exactly one of exactly and firstAvailable" \
      "matchAttribute nvlinkIsland is not a fully qualified" "cel must have required property expression" -- \
      validate "$deploy_tests/bad/broken-claims.yaml"
    expect_failure "broken v1beta1 claims and extendedResourceName" \
      "exactly is resource.k8s.io/v1beta2 and v1" "needs exactly one of deviceClassName and firstAvailable" \
      "schema (in its resource.k8s.io/v1 form): data/spec/devices/requests/0/exactly/count must be integer" \
      "extendedResourceName kubernetes.io/gpu is not an extended resource name" \
      "extendedResourceName in resource.k8s.io/v1beta1" -- \
      validate "$deploy_tests/bad/claims-v1beta1-broken.yaml"
    expect_failure "claims naming what kgpu does not publish" "attribute gpu.nvidia.com/migProfile" \
      "capacity kgpu.io/memory" "matchAttribute kgpu.io/nvswitchIsland" "deviceClassName nvidia-mig" -- \
      node "$deploy_tests/check-claim-attributes.js" "$root"/tests/fixtures/golden/dra/*.json -- \
      "$deploy_tests/bad/claims-unpublished-names.yaml"
    expect_failure "bad DeviceClass API version" "dra.deviceClassApiVersion" "v1alpha3" -- \
      "$renderer" -f "$deploy_tests/bad/values-dra-bad-api-version.yaml" "$chart"
    expect_failure "bad DRA driver name" "dra.driver" "is not a DNS subdomain" -- \
      "$renderer" -f "$deploy_tests/bad/values-dra-bad-driver.yaml" "$chart"
    expect_failure "unknown DRA vendor" "dra.vendors" "\"habana\" is not nvidia, amd or intel" -- \
      "$renderer" -f "$deploy_tests/bad/values-dra-bad-vendor.yaml" "$chart"
    # DeviceClass extendedResourceName (KEP-5004): v1 only, a valid name, and never next to the
    # device-plugin API's own nvidia.com/gpu.
    expect_failure "extendedResourceName on a v1beta1 DeviceClass" "dra.extendedResourceName" \
      "resource.k8s.io/v1beta1 is for Kubernetes 1.32/1.33, which have no such field" -- \
      "$renderer" -f "$deploy_tests/bad/values-dra-ern-v1beta1.yaml" "$chart"
    expect_failure "extendedResourceName next to the device-plugin API" "dra.extendedResourceName" \
      "dra.gpus" "dra.devicePlugin: true" "two providers of one resource" -- \
      "$renderer" -f "$deploy_tests/bad/values-dra-ern-device-plugin.yaml" "$chart"
    expect_failure "extendedResourceName in kubernetes.io" "\"kubernetes.io/gpu\" is not an extended resource name" \
      "kubernetes.io domain" -- "$renderer" -f "$deploy_tests/bad/values-dra-ern-format.yaml" "$chart"
    # NVIDIA's DRA chart values kgpu cannot honour: refused with what to do instead (issue 29).
    expect_failure "NVIDIA DRA ComputeDomains" "resources.computeDomains.enabled" \
      "does not implement NVIDIA's ComputeDomains" -- \
      "$renderer" -f "$deploy_tests/bad/values-nvidia-dra-compute-domains.yaml" "$chart"
    expect_failure "NVIDIA DRA feature gate" "featureGates.PassthroughSupport: true is not supported" \
      "kgpu does not publish VFIO" -- \
      "$renderer" -f "$deploy_tests/bad/values-nvidia-dra-feature-gate.yaml" "$chart"
    expect_failure "NVIDIA's DynamicMIG gate against kgpu's key" "featureGates.DynamicMIG: false contradicts dra.migDynamic" -- \
      "$renderer" -f "$deploy_tests/bad/values-dra-mig-dynamic-contradiction.yaml" "$chart"
    expect_failure "dynamic MIG without DRA" "dra.migDynamic: dynamic MIG is a DRA feature" -- \
      "$renderer" -f "$deploy_tests/bad/values-dra-mig-dynamic-without-dra.yaml" "$chart"
    expect_failure "NVIDIA DRA kubelet folders" "kubeletPlugin.kubeletPluginsDirectoryPath" \
      "/var/lib/k0s/kubelet/plugins" "the only one the chart mounts" -- \
      "$renderer" -f "$deploy_tests/bad/values-nvidia-dra-kubelet-root.yaml" "$chart"
    expect_failure "NVIDIA DRA webhook" "webhook.enabled: kgpu has no admission webhook" -- \
      "$renderer" -f "$deploy_tests/bad/values-nvidia-dra-webhook.yaml" "$chart"
    expect_failure "NVIDIA DRA switch against kgpu's" "resources.gpus.enabled: false" "contradicts dra.enabled: true" -- \
      "$renderer" -f "$deploy_tests/bad/values-nvidia-dra-contradiction.yaml" "$chart"
    # values.schema.json refuses unknown keys and wrong types (Helm validates it before rendering);
    # NVIDIA chart keys kgpu cannot honour fail with what to use instead (issue 30).
    expect_failure "misspelled key" "values don't meet the specifications" \
      "Additional property migStrategyy is not allowed" -- \
      "$renderer" -f "$deploy_tests/bad/values-unknown-key.yaml" "$chart"
    expect_failure "wrong type" "metrics.port: Invalid type. Expected: integer, given: string" -- \
      "$renderer" -f "$deploy_tests/bad/values-wrong-type.yaml" "$chart"
    expect_failure "NVIDIA's nfd subchart values" "does not bundle node-feature-discovery" \
      "helm install nfd oci://registry.k8s.io/nfd/charts/node-feature-discovery" -- \
      "$renderer" -f "$deploy_tests/bad/values-nvidia-nfd.yaml" "$chart"
    expect_failure "no device plugin and no labels" "deploys nothing" "gfd.enabled: true for labels only" -- \
      "$renderer" -f "$deploy_tests/bad/values-nothing-deployed.yaml" "$chart"
    expect_failure "NVIDIA's GFD DaemonSet name" "kgpu has no separate GFD DaemonSet" "use nameOverride" -- \
      "$renderer" -f "$deploy_tests/bad/values-gfd-name.yaml" "$chart"
    expect_failure "legacy DaemonSet API" "apps/v1 DaemonSets only" -- \
      "$renderer" -f "$deploy_tests/bad/values-legacy-api.yaml" "$chart"
    expect_failure "allowDefaultNamespace: false in default" "refused by allowDefaultNamespace: false" -- \
      "$renderer" -f "$deploy_tests/bad/values-default-namespace.yaml" --namespace default "$chart"
    "$renderer" -f "$deploy_tests/bad/values-default-namespace.yaml" --namespace kube-system "$chart" >/dev/null
    echo "ok: allowDefaultNamespace: false renders into kube-system"
    expect_failure "MPS layouts" 'no container runs "mps-daemon"' "is not a host folder mounted at the same path" \
      "env CONFIG_FILE differs" "has no /dev/shm mount" -- validate "$deploy_tests/bad/mps-daemonset.yaml"
    out="$(mktemp -d)"
    trap 'rm -rf "$out"' EXIT
    "$renderer" -f "$chart/examples/default.yaml" --name kgpu --namespace kube-system "$chart" > "$out/default.yaml"
    expect_failure "CPU-manager expectations on the default rendering" \
      "privileged is undefined, expected true" "PASS_DEVICE_SPECS].value is undefined" -- \
      node "$deploy_tests/check-expectations.js" "$out/default.yaml" "$deploy_tests/expect/cpu-manager.txt"
    expect_failure "DRA expectations on the default rendering" \
      "KGPU_DRA].value is undefined" "no object DeviceClass/gpu.nvidia.com" -- \
      node "$deploy_tests/check-expectations.js" "$out/default.yaml" "$deploy_tests/expect/dra.txt"
    expect_failure "bad Dockerfile" "kgpu-no-such-package-xyz not found" "no/such/file does not exist" \
      "non-root USER" "NVIDIA_VISIBLE_DEVICES=all" -- \
      python3 "$deploy_tests/lint_dockerfile.py" "$root" "$deploy_tests/bad/Dockerfile"
    ;;
  *)
    sed -n '2,21p' "$0" >&2
    exit 2
    ;;
esac
