{{/* Chart name, truncated to the 63 characters Kubernetes allows in a label. */}}
{{- define "kgpu.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kgpu.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "kgpu.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride -}}
{{- end -}}

{{- define "kgpu.selectorLabels" -}}
{{- if .Values.selectorLabelsOverride -}}
{{- toYaml .Values.selectorLabelsOverride -}}
{{- else -}}
app.kubernetes.io/name: {{ include "kgpu.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
{{- end -}}

{{- define "kgpu.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "kgpu.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "kgpu.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "kgpu.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* "true" when the pods get configs from a ConfigMap (the chart's or an existing one). */}}
{{- define "kgpu.hasConfig" -}}
{{- if or .Values.config.name .Values.config.map -}}true{{- end -}}
{{- end -}}

{{- define "kgpu.configMapName" -}}
{{- if .Values.config.name -}}
{{- .Values.config.name -}}
{{- else -}}
{{- printf "%s-configs" (include "kgpu.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The config for nodes without the per-node label: config.default, else "default" if present, else the only key. */}}
{{- define "kgpu.defaultConfig" -}}
{{- if .Values.config.default -}}
{{- .Values.config.default -}}
{{- else if hasKey .Values.config.map "default" -}}
default
{{- else if eq (len .Values.config.map) 1 -}}
{{- keys .Values.config.map | first -}}
{{- else if .Values.config.name -}}
{{- fail "config.default is required with config.name (kgpu cannot read the existing ConfigMap's keys at render time)" -}}
{{- else -}}
{{- fail "config.default is required when config.map has several keys and none is named \"default\"" -}}
{{- end -}}
{{- end -}}

{{/* Least privilege: a host folder is mounted and a capability granted only when the values or
     a config may need it. The embedded configs (config.map) are read at render time; an existing
     ConfigMap (config.name) cannot be, so then every feature counts as possibly used. */}}
{{- define "kgpu.configsUnknown" -}}
{{- if .Values.config.name -}}true{{- end -}}
{{- end -}}

{{/* Every embedded config's text, one after the other (empty without config.map). */}}
{{- define "kgpu.configText" -}}
{{- range $name, $text := .Values.config.map }}
{{ $text }}
{{- end -}}
{{- end -}}

{{/* "true" when a config may set `key` (YAML `key: v` or JSON `"key": "v"`) to a value matching `values`.
     Called with (list $ key values-regex). */}}
{{- define "kgpu.configSets" -}}
{{- $root := index . 0 -}}
{{- $pattern := printf `%s["']?\s*:\s*["']?[^\n]*(%s)` (index . 1) (index . 2) -}}
{{- if or (include "kgpu.configsUnknown" $root) (regexMatch $pattern (include "kgpu.configText" $root)) -}}true{{- end -}}
{{- end -}}

{{/* Whether MIG may be in use: migStrategy single/mixed in the values or a config. */}}
{{- define "kgpu.migMayBeEnabled" -}}
{{- $fromValues := and .Values.migStrategy (ne (toString .Values.migStrategy) "none") -}}
{{- if or $fromValues (include "kgpu.configSets" (list . "migStrategy" "single|mixed")) (include "kgpu.draMigDynamic" .) -}}true{{- end -}}
{{- end -}}

{{/* Whether a device list strategy matching `strategies` may be in use. Called with (list $ regex). */}}
{{- define "kgpu.deviceListMayUse" -}}
{{- $root := index . 0 -}}
{{- $fromValues := regexMatch (index . 1) (toString (default "" $root.Values.deviceListStrategy)) -}}
{{- if or $fromValues (include "kgpu.configSets" (list $root "deviceListStrategy" (index . 1))) -}}true{{- end -}}
{{- end -}}

{{/* CDI specs are written to /var/run/cdi only under the cdi-annotations / cdi-cri strategies. */}}
{{- define "kgpu.cdiMayBeUsed" -}}
{{- include "kgpu.deviceListMayUse" (list . "cdi-annotations|cdi-cri") -}}
{{- end -}}

{{/* The MPS folders are mounted only when mps.enabled and a config may share GPUs with MPS
     (`sharing.mps`; only a config file can turn MPS on). */}}
{{- define "kgpu.mpsMayBeUsed" -}}
{{- if and .Values.mps.enabled (or (include "kgpu.configsUnknown" .) (regexMatch `(^|[\s{,"'])mps["']?\s*:` (include "kgpu.configText" .))) -}}true{{- end -}}
{{- end -}}

{{/* "true" when the pods run `kgpu mps-daemon` (the mps-control-daemon container) and get the MPS
     root (mps.root mounted at its host path, MPS_ROOT): a config may share GPUs with MPS, or DRA is
     on, whose claims may ask for MPS in their opaque config (GpuConfig sharing.strategy MPS) and
     whose per-claim control daemons `kgpu mps-daemon` runs (requests under <mps.root>/dra-requests/).
     Never with mps.enabled false. The one place that decides it: every MPS part of the chart uses it. */}}
{{- define "kgpu.mpsDaemon" -}}
{{- if and (not (include "kgpu.labelsOnly" .)) (or (include "kgpu.mpsMayBeUsed" .) (and (include "kgpu.draEnabled" .) .Values.mps.enabled)) -}}true{{- end -}}
{{- end -}}

{{/* The container securityContext: the user's, else NVIDIA's rules, least privilege by default.
     runAsUser 0: the kubelet's device-plugins folder is root-owned, so creating the plugin sockets
     needs uid 0 (the image itself defaults to a non-root user for ad-hoc `kgpu devices` runs); every
     capability is still dropped, so root here has no privileges beyond owning that folder. */}}
{{- define "kgpu.securityContext" -}}
{{- if .Values.securityContext -}}
{{- toYaml .Values.securityContext -}}
{{- else if .Values.compatWithCPUManager -}}
privileged: true
runAsUser: 0
{{- else if or (include "kgpu.migMayBeEnabled" .) (include "kgpu.deviceListMayUse" (list . "volume-mounts")) -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsUser: 0
capabilities:
  drop: ["ALL"]
  add: ["SYS_ADMIN"]
{{- else -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsUser: 0
capabilities:
  drop: ["ALL"]
{{- end -}}
{{- end -}}

{{/* dra.vendors as the daemon's comma list (KGPU_DRA_VENDORS), checked. */}}
{{- define "kgpu.draVendors" -}}
{{- $vendors := list -}}
{{- range .Values.dra.vendors -}}
{{- $vendor := toString . -}}
{{- if not (has $vendor (list "nvidia" "amd" "intel")) -}}
{{- fail (printf "dra.vendors: %q is not nvidia, amd or intel" $vendor) -}}
{{- end -}}
{{- $vendors = append $vendors $vendor -}}
{{- end -}}
{{- if not $vendors -}}
{{- fail "dra.vendors: name at least one of nvidia, amd, intel" -}}
{{- end -}}
{{- join "," ($vendors | uniq) -}}
{{- end -}}

{{/* The driver names kgpu publishes ResourceSlices under, one per dra.vendors entry, as a comma
     list: dra.driver for NVIDIA, AMD's and Intel's DRA driver names for AMD and Intel GPUs (the
     daemon's defaults for kgpu.dra.amdDriver / kgpu.dra.intelDriver). */}}
{{- define "kgpu.draDriverNames" -}}
{{- $names := dict "nvidia" (include "kgpu.draDriver" .) "amd" "gpu.amd.com" "intel" "gpu.intel.com" -}}
{{- $drivers := list -}}
{{- range splitList "," (include "kgpu.draVendors" .) -}}
{{- $drivers = append $drivers (get $names .) -}}
{{- end -}}
{{- join "," $drivers -}}
{{- end -}}

{{/* dra.gpus as the daemon's comma list (KGPU_DRA_GPUS); entries are GPU indexes or UUIDs. */}}
{{- define "kgpu.draGpus" -}}
{{- $entries := list -}}
{{- range .Values.dra.gpus -}}
{{- $entry := toString . | trim -}}
{{- if or (eq $entry "") (contains "," $entry) -}}
{{- fail (printf "dra.gpus: %q is not a GPU index or UUID" (toString .)) -}}
{{- end -}}
{{- $entries = append $entries $entry -}}
{{- end -}}
{{- join "," $entries -}}
{{- end -}}

{{/* The GPUs published for dynamic MIG as the daemon's comma list (KGPU_DRA_MIG_DYNAMIC): dra.migDynamic
     (GPU indexes or UUIDs, or [all]), or all for NVIDIA's featureGates.DynamicMIG: true; empty: none. */}}
{{- define "kgpu.draMigDynamic" -}}
{{- $gate := toString (get (default dict .Values.featureGates) "DynamicMIG") -}}
{{- $entries := list -}}
{{- range .Values.dra.migDynamic -}}
{{- $entry := toString . | trim -}}
{{- if or (eq $entry "") (contains "," $entry) -}}
{{- fail (printf "dra.migDynamic: %q is not a GPU index or UUID, nor all" (toString .)) -}}
{{- end -}}
{{- $entries = append $entries $entry -}}
{{- end -}}
{{- if and (has "all" $entries) (gt (len $entries) 1) -}}
{{- fail "dra.migDynamic: either [all] or a list of GPU indexes and UUIDs, not both" -}}
{{- end -}}
{{- if and $entries (eq $gate "false") -}}
{{- fail "featureGates.DynamicMIG: false contradicts dra.migDynamic (kgpu's key for dynamic MIG); keep one of them" -}}
{{- end -}}
{{- if and (not $entries) (eq $gate "true") -}}
{{- $entries = list "all" -}}
{{- end -}}
{{- join "," $entries -}}
{{- end -}}

{{/* dra.driver, checked: a DRA driver name is a DNS subdomain (it is also quoted into the
     DeviceClasses' CEL selectors). */}}
{{- define "kgpu.draDriver" -}}
{{- $driver := toString .Values.dra.driver -}}
{{- if not (regexMatch `^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$` $driver) -}}
{{- fail (printf "dra.driver: %q is not a DNS subdomain (e.g. gpu.nvidia.com)" $driver) -}}
{{- end -}}
{{- if gt (len $driver) 63 -}}
{{- fail (printf "dra.driver: %q is longer than 63 characters" $driver) -}}
{{- end -}}
{{- $driver -}}
{{- end -}}

{{/* The environment `kgpu plugin` and `kgpu mps-daemon` share: everything that decides which config
     is loaded and what it plans (config file and per-node label selection, MIG, DRA share, driver
     root, MPS root, ...), so that both containers see the same config and agree on the MPS
     resources and their paths. Container-specific variables (metrics, labels, health, NVIDIA
     runtime) are set in daemonset.yaml. */}}
{{- define "kgpu.configEnv" -}}
- name: NODE_NAME
  valueFrom:
    fieldRef:
      fieldPath: spec.nodeName
- name: KGPU_LOG_LEVEL
  value: {{ include "kgpu.logLevel" . | quote }}
- name: KGPU_LOG_FORMAT
  value: {{ .Values.logging.format | quote }}
{{- if and .Values.dra.migDynamic (not (include "kgpu.draEnabled" .)) }}
{{- fail "dra.migDynamic: dynamic MIG is a DRA feature; set dra.enabled: true" }}
{{- end }}
{{- if include "kgpu.draEnabled" . }}
# DRA driver (kgpu plugin --dra); it reads ResourceClaims and writes ResourceSlices
# through the API server with this pod's service account. Part of the config: it
# decides which GPUs the device-plugin API (and so its MPS daemons) serves.
- name: KGPU_DRA
  value: "true"
- name: KGPU_DRA_DRIVER
  value: {{ include "kgpu.draDriver" . | quote }}
{{- $vendors := include "kgpu.draVendors" . }}
{{- if ne $vendors "nvidia" }}
- name: KGPU_DRA_VENDORS
  value: {{ $vendors | quote }}
{{- end }}
{{- with .Values.dra.gpus }}
- name: KGPU_DRA_GPUS
  value: {{ include "kgpu.draGpus" $ | quote }}
{{- end }}
{{- if not .Values.dra.devicePlugin }}
- name: KGPU_DEVICE_PLUGIN
  value: "false"
{{- end }}
{{- if .Values.dra.deviceMetadata }}
- name: KGPU_DRA_DEVICE_METADATA
  value: "true"
{{- end }}
{{- with include "kgpu.draMigDynamic" . }}
# Dynamic MIG: these GPUs are published as their full device plus every MIG placement;
# prepare creates the allocated placement's instance, unprepare destroys it.
- name: KGPU_DRA_MIG_DYNAMIC
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- if include "kgpu.mpsDaemon" . }}
# A host path, mounted at the same path in the containers: the paths kgpu computes
# (readiness markers, pipes, the mounts it hands to the kubelet / CDI) are the same
# files inside and outside.
- name: MPS_ROOT
  value: {{ .Values.mps.root | quote }}
{{- end }}
{{- if include "kgpu.hasConfig" . }}
# The daemon starts with the default config and switches to the file named by its
# Node's label (see README, "Per-node configuration").
- name: CONFIG_FILE
  value: /available-configs/{{ include "kgpu.defaultConfig" . }}
- name: KGPU_CONFIG_DIR
  value: /available-configs
- name: KGPU_CONFIG_DEFAULT
  value: {{ include "kgpu.defaultConfig" . | quote }}
- name: KGPU_NODE_CONFIG_LABEL
  value: {{ .Values.perNodeConfig.label | quote }}
{{- end }}
{{- if not (kindIs "invalid" .Values.compatWithCPUManager) }}
- name: PASS_DEVICE_SPECS
  value: {{ .Values.compatWithCPUManager | toString | quote }}
{{- end }}
{{- if not (kindIs "invalid" .Values.migStrategy) }}
- name: MIG_STRATEGY
  value: {{ .Values.migStrategy | quote }}
{{- end }}
{{- if not (kindIs "invalid" .Values.failOnInitError) }}
- name: FAIL_ON_INIT_ERROR
  value: {{ .Values.failOnInitError | toString | quote }}
{{- end }}
{{- if not (kindIs "invalid" .Values.deviceListStrategy) }}
- name: DEVICE_LIST_STRATEGY
  value: {{ .Values.deviceListStrategy | quote }}
{{- end }}
{{- if not (kindIs "invalid" .Values.deviceIDStrategy) }}
- name: DEVICE_ID_STRATEGY
  value: {{ .Values.deviceIDStrategy | quote }}
{{- end }}
{{- if not (kindIs "invalid" .Values.nvidiaDriverRoot) }}
- name: NVIDIA_DRIVER_ROOT
  value: {{ .Values.nvidiaDriverRoot | quote }}
- name: CONTAINER_DRIVER_ROOT
  value: /driver-root
{{- end }}
{{- if not (kindIs "invalid" .Values.nvidiaDevRoot) }}
- name: NVIDIA_DEV_ROOT
  value: {{ .Values.nvidiaDevRoot | quote }}
{{- end }}
{{- if not (kindIs "invalid" .Values.gdsEnabled) }}
- name: GDS_ENABLED
  value: {{ .Values.gdsEnabled | toString | quote }}
{{- end }}
{{- if not (kindIs "invalid" .Values.mofedEnabled) }}
- name: MOFED_ENABLED
  value: {{ .Values.mofedEnabled | toString | quote }}
{{- end }}
{{- if not (kindIs "invalid" .Values.gdrcopyEnabled) }}
- name: GDRCOPY_ENABLED
  value: {{ .Values.gdrcopyEnabled | toString | quote }}
{{- end }}
{{- if not (kindIs "invalid" .Values.deviceDiscoveryStrategy) }}
- name: DEVICE_DISCOVERY_STRATEGY
  value: {{ .Values.deviceDiscoveryStrategy | quote }}
{{- end }}
{{- with include "kgpu.cdiHookPath" . }}
- name: NVIDIA_CDI_HOOK_PATH
  value: {{ . | quote }}
{{- end }}
{{- end -}}

{{/* The config folder (ConfigMap files), mounted alike in every kgpu container. */}}
{{- define "kgpu.configMounts" -}}
{{- if include "kgpu.hasConfig" . }}
- name: available-configs
  mountPath: /available-configs
  readOnly: true
{{- end }}
{{- if not (kindIs "invalid" .Values.nvidiaDriverRoot) }}
- name: driver-root
  mountPath: /driver-root
  readOnly: true
{{- end }}
{{- end -}}

{{/* "true" when the pods run no device plugin, only the labeller (devicePlugin.enabled: false). */}}
{{- define "kgpu.labelsOnly" -}}
{{- if and .Values.devicePlugin (eq (toString .Values.devicePlugin.enabled) "false") -}}true{{- end -}}
{{- end -}}

{{/* gfd.noTimestamp, else the top-level noTimestamp NVIDIA's GFD template reads; "" when neither is set. */}}
{{- define "kgpu.gfdNoTimestamp" -}}
{{- if not (kindIs "invalid" .Values.gfd.noTimestamp) -}}{{ .Values.gfd.noTimestamp }}
{{- else if not (kindIs "invalid" .Values.noTimestamp) -}}{{ .Values.noTimestamp }}
{{- end -}}
{{- end -}}

{{- define "kgpu.gfdSleepInterval" -}}
{{- if not (kindIs "invalid" .Values.gfd.sleepInterval) -}}{{ .Values.gfd.sleepInterval }}
{{- else if not (kindIs "invalid" .Values.sleepInterval) -}}{{ .Values.sleepInterval }}
{{- end -}}
{{- end -}}

{{/* Values of NVIDIA's nvidia-device-plugin chart that kgpu cannot honour: a render error naming
     what to do instead, never a silent no-op (values.schema.json accepts them only for this).
     Values equal to NVIDIA's own defaults mean nothing and pass. */}}
{{- define "kgpu.nvidiaCompat" -}}
{{- include "kgpu.nvidiaDraCompat" . -}}
{{- $_ := include "kgpu.draExtendedResourceName" . -}}
{{- /* NVIDIA's chart deploys its nfd subchart under the condition "nfd.enabled,gfd.enabled" (the
     first one given decides): nfd.* values mean something only then, and kgpu cannot honour them. */ -}}
{{- $nfd := default dict .Values.nfd -}}
{{- $nfdDeployed := .Values.gfd.enabled -}}
{{- if hasKey $nfd "enabled" -}}{{- $nfdDeployed = eq (toString (get $nfd "enabled")) "true" -}}{{- end -}}
{{- if and $nfdDeployed (or (gt (len (omit $nfd "enabled")) 0) (eq (toString (get $nfd "enabled")) "true")) -}}
{{- fail "nfd.*: kgpu's chart does not bundle node-feature-discovery, which NVIDIA's chart deploys with these values as its nfd subchart (nfd.enabled, or gfd.enabled without nfd.enabled). Install it as its own release (helm install nfd oci://registry.k8s.io/nfd/charts/node-feature-discovery -n node-feature-discovery --create-namespace), move these nfd.* values there, set nfd.enabled: false here (or remove nfd.*) and keep gfd.enabled: true (kgpu writes the labels file NFD reads)" -}}
{{- end -}}
{{- $_ := include "kgpu.image" . -}}
{{- if .Values.legacyDaemonsetAPI -}}
{{- fail "legacyDaemonsetAPI: kgpu's chart renders apps/v1 DaemonSets only (Kubernetes 1.19+); remove legacyDaemonsetAPI" -}}
{{- end -}}
{{- if and (eq (include "kgpu.namespace" .) "default") (not .Values.namespaceOverride) (eq (toString .Values.allowDefaultNamespace) "false") -}}
{{- fail "Running in the 'default' namespace is refused by allowDefaultNamespace: false. Use --namespace (e.g. kube-system), or set allowDefaultNamespace: true" -}}
{{- end -}}
{{- with .Values.cdi.featureFlags -}}
{{- fail "cdi.featureFlags: kgpu's CDI specs have no feature flags (NVIDIA 0.20's nvcdi options); remove cdi.featureFlags" -}}
{{- end -}}
{{- if and .Values.gfd.nameOverride (ne .Values.gfd.nameOverride "gpu-feature-discovery") -}}
{{- fail "gfd.nameOverride: kgpu has no separate GFD DaemonSet (the labels are written by the kgpu pods); use nameOverride / fullnameOverride" -}}
{{- end -}}
{{- if .Values.gfd.namespaceOverride -}}
{{- fail "gfd.namespaceOverride: kgpu has no separate GFD DaemonSet (the labels are written by the kgpu pods); use namespaceOverride" -}}
{{- end -}}
{{- if include "kgpu.labelsOnly" . -}}
{{- if not .Values.gfd.enabled -}}
{{- fail "devicePlugin.enabled: false with gfd.enabled: false deploys nothing; set gfd.enabled: true for labels only, or devicePlugin.enabled: true" -}}
{{- end -}}
{{- if include "kgpu.draEnabled" . -}}
{{- fail "devicePlugin.enabled: false runs the labeller only; for DRA without the device-plugin API set dra.enabled: true and dra.devicePlugin: false instead" -}}
{{- end -}}
{{- if .Values.metrics.enabled -}}
{{- fail "metrics.enabled: the labels-only pods (devicePlugin.enabled: false) serve no metrics; set metrics.enabled: false" -}}
{{- end -}}
{{- else -}}
{{- if and .Values.gfd.enabled (include "kgpu.gfdSecurityContext" .) -}}
{{- fail "gfd.securityContext: with the device plugin on, the labels are written by the kgpu container: use securityContext (gfd.securityContext applies to labels-only pods, devicePlugin.enabled: false)" -}}
{{- end -}}
{{- if .Values.gfd.enableHostNetwork -}}
{{- fail "gfd.enableHostNetwork: with the device plugin on, the labels are written by the kgpu pods: use devicePlugin.enableHostNetwork" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* gfd.securityContext as YAML, "" when not set or NVIDIA's default (privileged: true, for its own
     GFD container): kgpu's labeller then gets its least-privilege one. */}}
{{- define "kgpu.gfdSecurityContext" -}}
{{- $sc := .Values.gfd.securityContext -}}
{{- if and $sc (not (deepEqual $sc (dict "privileged" true))) -}}{{ toYaml $sc }}{{- end -}}
{{- end -}}

{{/* NVIDIA's images: its device plugin, GFD and DRA driver images run none of kgpu's commands. */}}
{{- define "kgpu.nvidiaImages" -}}
{{- list "nvcr.io/nvidia/k8s-device-plugin" "nvcr.io/nvidia/gpu-feature-discovery" "nvcr.io/nvidia/k8s-dra-driver-gpu" "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu" | join "," -}}
{{- end -}}

{{/* "true" when image.repository is NVIDIA's default image of one of its charts with no tag: a
     value equal to NVIDIA's default (as `helm get values --all` gives it), replaced by kgpu's own
     image, which NOTES says. */}}
{{- define "kgpu.nvidiaDefaultImage" -}}
{{- $repository := toString .Values.image.repository -}}
{{- if and (has $repository (splitList "," (include "kgpu.nvidiaImages" .))) (not .Values.image.tag) -}}true{{- end -}}
{{- end -}}

{{/* The kgpu container image. NVIDIA's image with NVIDIA's default (empty) tag is kgpu's default
     image; NVIDIA's image pinned to a tag, or any other image of NVIDIA's registries' device
     plugin paths, fails the render naming image.repository. */}}
{{- define "kgpu.image" -}}
{{- $repository := toString .Values.image.repository -}}
{{- if include "kgpu.nvidiaDefaultImage" . -}}
{{- $repository = "kgpu/kgpu" -}}
{{- else if or (has $repository (splitList "," (include "kgpu.nvidiaImages" .))) (hasPrefix "registry.k8s.io/dra-driver-nvidia/" $repository) (hasPrefix "nvcr.io/nvidia/k8s-" $repository) -}}
{{- fail (printf "image.repository: %q is NVIDIA's image (with image.tag %q), which runs none of kgpu's commands; set image.repository to your kgpu image (built from deploy/Dockerfile) and image.tag to its tag, or remove image.* for kgpu's default" $repository (toString .Values.image.tag)) -}}
{{- end -}}
{{- printf "%s:%s" $repository (toString (.Values.image.tag | default .Chart.AppVersion)) -}}
{{- end -}}

{{/* "true" when the labels go to the node's NodeFeature object: gfd.useNodeFeatureAPI, else the
     nfd.enableNodeFeatureApi that NVIDIA's v0.17/v0.18 chart passes to GFD as
     GFD_USE_NODE_FEATURE_API (read where labels are written at all: gfd.enabled or labels-only). */}}
{{- define "kgpu.gfdNodeFeatureApi" -}}
{{- if or .Values.gfd.enabled (include "kgpu.labelsOnly" .) -}}
{{- $nfd := default dict .Values.nfd -}}
{{- if not (kindIs "invalid" .Values.gfd.useNodeFeatureAPI) -}}
{{- if .Values.gfd.useNodeFeatureAPI }}true{{ end -}}
{{- else if kindIs "bool" (get $nfd "enableNodeFeatureApi") -}}
{{- if get $nfd "enableNodeFeatureApi" }}true{{ end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* GPU Feature Discovery's settings, for whichever container writes the labels. With the NodeFeature
     API: GFD's NAMESPACE (where the object lives) and POD_NAME (whose DaemonSet owns it). */}}
{{- define "kgpu.gfdEnv" -}}
- name: GFD_OUTPUT_FILE
  value: {{ printf "%s/kgpu" .Values.gfd.featuresDir | quote }}
{{- with include "kgpu.gfdNoTimestamp" . }}
- name: GFD_NO_TIMESTAMP
  value: {{ . | quote }}
{{- end }}
{{- if include "kgpu.gfdNodeFeatureApi" . }}
- name: GFD_USE_NODE_FEATURE_API
  value: "true"
- name: NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
{{- end }}
{{- end -}}

{{/* ---- NVIDIA's DRA driver chart (dra-driver-nvidia-gpu) values, under NVIDIA's names ----
     Each one either reaches the kgpu value with the same meaning (through the helpers below, the
     only readers of those kgpu values), or fails the render naming what to use instead. Values
     equal to NVIDIA's defaults that mean nothing for kgpu pass. README, "Migrating from NVIDIA's
     DRA driver chart". */}}

{{/* The keys of NVIDIA's DRA driver chart that its device-plugin chart (and kgpu's own values)
     do not have, as a comma list of those given ("" when none): a values file with any of them was
     written for NVIDIA's DRA chart. */}}
{{- define "kgpu.nvidiaDraKeys" -}}
{{- $given := list -}}
{{- range $key := list "featureGates" "logVerbosity" "kubeletPlugin" "resourceApiVersion" "gpuResourcesEnabledOverride" "nvidiaCDIHookPath" "webhook" "controller" "altProcDevices" -}}
{{- if not (kindIs "invalid" (index $.Values $key)) -}}{{- $given = append $given $key -}}{{- end -}}
{{- end -}}
{{- $resources := default dict .Values.resources -}}
{{- range $key := list "gpus" "computeDomains" -}}
{{- if hasKey $resources $key -}}{{- $given = append $given (printf "resources.%s" $key) -}}{{- end -}}
{{- end -}}
{{- join ", " $given -}}
{{- end -}}

{{/* NVIDIA's resources.gpus.enabled as "true" or "false", as NVIDIA's DRA chart reads it: when a
     values file of that chart leaves it out, NVIDIA's default true; "" for other values files. */}}
{{- define "kgpu.nvidiaDraGpus" -}}
{{- $resources := default dict .Values.resources -}}
{{- $gpus := default dict (get $resources "gpus") -}}
{{- if hasKey $gpus "enabled" -}}{{ toString (get $gpus "enabled") }}
{{- else if include "kgpu.nvidiaDraKeys" . -}}true
{{- end -}}
{{- end -}}

{{/* "true" when kgpu is a DRA driver: dra.enabled, or NVIDIA's resources.gpus.enabled (given, or
     NVIDIA's default true in a values file of its DRA chart). A values file of NVIDIA's DRA chart
     never becomes a plain device plugin: resources.gpus.enabled: false there (NVIDIA would serve
     no GPU, and kgpu has no ComputeDomains) fails the render. */}}
{{- define "kgpu.draEnabled" -}}
{{- $nvidia := include "kgpu.nvidiaDraGpus" . -}}
{{- if and (eq $nvidia "false") .Values.dra.enabled -}}
{{- fail "resources.gpus.enabled: false (NVIDIA's DRA chart) contradicts dra.enabled: true; keep one of them (kgpu's key is dra.enabled)" -}}
{{- end -}}
{{- if eq $nvidia "false" -}}
{{- fail (printf "resources.gpus.enabled: false: with it NVIDIA's DRA chart serves no GPU, and kgpu has no ComputeDomains, so these values (NVIDIA's DRA chart: %s) ask kgpu for nothing it does. For kgpu as the DRA driver set resources.gpus.enabled: true (or dra.enabled: true); for kgpu's device plugin remove NVIDIA's DRA chart values" (include "kgpu.nvidiaDraKeys" .)) -}}
{{- end -}}
{{- if or .Values.dra.enabled (eq $nvidia "true") -}}true{{- end -}}
{{- end -}}

{{/* The resource.k8s.io versions the cluster serves (.Capabilities.APIVersions), newest first, as
     a comma list; "" when it lists none (`helm template` without --api-versions). */}}
{{- define "kgpu.servedDraApiVersions" -}}
{{- $served := list -}}
{{- range $v := list "resource.k8s.io/v1" "resource.k8s.io/v1beta2" "resource.k8s.io/v1beta1" -}}
{{- if $.Capabilities.APIVersions.Has $v -}}{{- $served = append $served $v -}}{{- end -}}
{{- end -}}
{{- join "," $served -}}
{{- end -}}

{{/* The DeviceClasses' API version: dra.deviceClassApiVersion, or NVIDIA's resourceApiVersion;
     when neither is set, as NVIDIA's DRA chart: the newest version the cluster serves
     (.Capabilities.APIVersions: v1, then v1beta2, then v1beta1), resource.k8s.io/v1 when the
     cluster lists none (offline rendering). Checked. */}}
{{- define "kgpu.draApiVersion" -}}
{{- $apiVersion := toString (default "" .Values.dra.deviceClassApiVersion) -}}
{{- with .Values.resourceApiVersion -}}
{{- if and $apiVersion (ne $apiVersion (toString .)) -}}
{{- fail (printf "resourceApiVersion (NVIDIA's DRA chart) %q contradicts dra.deviceClassApiVersion %q; keep one of them (kgpu's key is dra.deviceClassApiVersion)" (toString .) $apiVersion) -}}
{{- end -}}
{{- $apiVersion = toString . -}}
{{- end -}}
{{- if not $apiVersion -}}
{{- $apiVersion = first (append (splitList "," (include "kgpu.servedDraApiVersions" .) | compact) "resource.k8s.io/v1") -}}
{{- end -}}
{{- if not (has $apiVersion (list "resource.k8s.io/v1" "resource.k8s.io/v1beta2" "resource.k8s.io/v1beta1")) -}}
{{- fail (printf "dra.deviceClassApiVersion: %q is not resource.k8s.io/v1, v1beta2 or v1beta1" $apiVersion) -}}
{{- end -}}
{{- $apiVersion -}}
{{- end -}}

{{/* A warning for NOTES ("" when none): the DeviceClasses' API version is one the cluster does
     not serve although it serves another resource.k8s.io version (e.g. v1beta2 on Kubernetes 1.32,
     which serves v1beta1 only). */}}
{{- define "kgpu.draApiVersionWarning" -}}
{{- if and (include "kgpu.draEnabled" .) .Values.dra.deviceClasses -}}
{{- $apiVersion := include "kgpu.draApiVersion" . -}}
{{- $served := include "kgpu.servedDraApiVersions" . -}}
{{- if and $served (not (has $apiVersion (splitList "," $served))) -}}
WARNING: the DeviceClasses are {{ $apiVersion }}, which this cluster does not serve (it serves {{ $served | replace "," ", " }}{{ if eq $served "resource.k8s.io/v1beta1" }}: Kubernetes 1.32{{ end }}); the API server will refuse them. Set dra.deviceClassApiVersion (or NVIDIA's resourceApiVersion) to {{ first (splitList "," $served) }}, or leave both empty to follow the cluster.
{{- end -}}
{{- end -}}
{{- end -}}

{{/* dra.extendedResourceName, checked ("" when not set): a valid extended resource name (a
     domain-prefixed name outside kubernetes.io, without the "requests." prefix, that is a label
     key once "requests." is put in front, as the API server checks it), on a v1 DeviceClass the
     chart creates, and no second provider of the name on the node. */}}
{{- define "kgpu.draExtendedResourceName" -}}
{{- $name := toString (default "" .Values.dra.extendedResourceName) -}}
{{- if $name -}}
{{- $key := "dra.extendedResourceName" -}}
{{- if not (include "kgpu.draEnabled" .) -}}
{{- fail (printf "%s: %q names DRA's GPUs for pods' extended resource requests; it needs dra.enabled: true" $key $name) -}}
{{- end -}}
{{- if not .Values.dra.deviceClasses -}}
{{- fail (printf "%s: the chart creates no DeviceClass with dra.deviceClasses: false; set spec.extendedResourceName on your own gpu.nvidia.com DeviceClass instead" $key) -}}
{{- end -}}
{{- if not (has "nvidia" (splitList "," (include "kgpu.draVendors" .))) -}}
{{- fail (printf "%s: it is set on the DeviceClass gpu.nvidia.com, which needs nvidia in dra.vendors" $key) -}}
{{- end -}}
{{- $apiVersion := include "kgpu.draApiVersion" . -}}
{{- if ne $apiVersion "resource.k8s.io/v1" -}}
{{- fail (printf "%s: DeviceClass spec.extendedResourceName needs Kubernetes 1.34+ (feature gate DRAExtendedResource) and resource.k8s.io/v1 DeviceClasses; %s is for Kubernetes 1.32/1.33, which have no such field: set dra.deviceClassApiVersion: resource.k8s.io/v1 or remove %s" $key $apiVersion $key) -}}
{{- end -}}
{{- $problem := "" -}}
{{- $parts := splitList "/" $name -}}
{{- if not (contains "/" $name) -}}
{{- $problem = "is not domain-prefixed (e.g. nvidia.com/gpu)" -}}
{{- else if contains "kubernetes.io/" $name -}}
{{- $problem = "is in the kubernetes.io domain, which is reserved for Kubernetes' own resources" -}}
{{- else if hasPrefix "requests." $name -}}
{{- $problem = "starts with \"requests.\" (reserved for quota names)" -}}
{{- else if ne (len $parts) 2 -}}
{{- $problem = "has more than one \"/\"" -}}
{{- else if or (gt (len (printf "requests.%s" (index $parts 0))) 253) (not (regexMatch `^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$` (index $parts 0))) -}}
{{- $problem = "has a domain that is not a lower-case DNS subdomain" -}}
{{- else if or (gt (len (index $parts 1)) 63) (not (regexMatch `^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$` (index $parts 1))) -}}
{{- $problem = "has a name part that is not 1-63 letters, digits, '-', '_' or '.' starting and ending with a letter or digit" -}}
{{- end -}}
{{- if $problem -}}
{{- fail (printf "%s: %q is not an extended resource name: it %s" $key $name $problem) -}}
{{- end -}}
{{- if and (eq $name "nvidia.com/gpu") (not (include "kgpu.labelsOnly" .)) .Values.dra.devicePlugin .Values.dra.gpus -}}
{{- fail (printf "%s: nvidia.com/gpu is also what kgpu's device-plugin API serves for the GPUs outside dra.gpus (dra.devicePlugin: true): the kubelet would see two providers of one resource on the node. Set dra.devicePlugin: false, or empty dra.gpus (DRA then serves every NVIDIA GPU and the device-plugin API none), or choose another name" $key) -}}
{{- end -}}
{{- $name -}}
{{- end -}}
{{- end -}}

{{/* The CDI hook path: cdi.nvidiaHookPath, or NVIDIA's DRA chart's nvidiaCDIHookPath; "" when neither. */}}
{{- define "kgpu.cdiHookPath" -}}
{{- $kgpu := "" -}}
{{- if not (kindIs "invalid" .Values.cdi.nvidiaHookPath) -}}{{- $kgpu = toString .Values.cdi.nvidiaHookPath -}}{{- end -}}
{{- $nvidia := toString (default "" .Values.nvidiaCDIHookPath) -}}
{{- if and $kgpu $nvidia (ne $kgpu $nvidia) -}}
{{- fail (printf "nvidiaCDIHookPath (NVIDIA's DRA chart) %q contradicts cdi.nvidiaHookPath %q; keep one of them (kgpu's key is cdi.nvidiaHookPath)" $nvidia $kgpu) -}}
{{- end -}}
{{- default $nvidia $kgpu -}}
{{- end -}}

{{/* The log level: logging.level, or NVIDIA's logVerbosity (klog -v) mapped onto it: 0-4 info
     (NVIDIA's default is 4), 5-6 debug, 7 and more trace. */}}
{{- define "kgpu.logLevel" -}}
{{- $level := toString .Values.logging.level -}}
{{- if not (kindIs "invalid" .Values.logVerbosity) -}}
{{- $v := toString .Values.logVerbosity -}}
{{- if not (regexMatch `^[0-9]+$` $v) -}}
{{- fail (printf "logVerbosity (NVIDIA's DRA chart): %q is not a number 0 or more" $v) -}}
{{- end -}}
{{- $mapped := "info" -}}
{{- if ge (atoi $v) 7 -}}{{- $mapped = "trace" -}}{{- else if ge (atoi $v) 5 -}}{{- $mapped = "debug" -}}{{- end -}}
{{- if and (ne $level "info") (ne $level $mapped) -}}
{{- fail (printf "logVerbosity (NVIDIA's DRA chart) %s means logging.level %s, which contradicts logging.level %s; keep one of them" $v $mapped $level) -}}
{{- end -}}
{{- $level = $mapped -}}
{{- end -}}
{{- $level -}}
{{- end -}}

{{/* A pod-level value that NVIDIA's DRA chart has under kubeletPlugin.<key>: that one when given
     and not empty, else kgpu's top-level <key>; as YAML, "" when empty. An empty NVIDIA value
     (v25.8's default kubeletPlugin.tolerations: []) keeps kgpu's own default, which tolerates the
     nvidia.com/gpu taint. Called with (list $ key). For keys whose kgpu default is empty
     (nodeSelector, podAnnotations, podSecurityContext) both set and different fail the render. */}}
{{- define "kgpu.podValue" -}}
{{- $root := index . 0 -}}
{{- $key := index . 1 -}}
{{- $value := index $root.Values $key -}}
{{- $plugin := default dict $root.Values.kubeletPlugin -}}
{{- if get $plugin $key -}}
{{- $nvidia := get $plugin $key -}}
{{- if and (has $key (list "nodeSelector" "podAnnotations" "podSecurityContext")) $value $nvidia (not (deepEqual $value $nvidia)) -}}
{{- fail (printf "kubeletPlugin.%s (NVIDIA's DRA chart) contradicts %s; keep one of them (kgpu's key is %s)" $key $key $key) -}}
{{- end -}}
{{- $value = $nvidia -}}
{{- end -}}
{{- if $value -}}{{ toYaml $value }}{{- end -}}
{{- end -}}

{{/* The kgpu container's resources: resources without NVIDIA's resources.gpus / resources.computeDomains
     switches, or NVIDIA's kubeletPlugin.containers.gpus.resources; as YAML, "" when empty. */}}
{{- define "kgpu.containerResources" -}}
{{- $kgpu := omit (default dict .Values.resources) "gpus" "computeDomains" -}}
{{- $nvidia := dict -}}
{{- with .Values.kubeletPlugin -}}{{- with .containers -}}{{- with .gpus -}}{{- $nvidia = default dict .resources -}}{{- end -}}{{- end -}}{{- end -}}
{{- if and $kgpu $nvidia (not (deepEqual $kgpu $nvidia)) -}}
{{- fail "kubeletPlugin.containers.gpus.resources (NVIDIA's DRA chart) contradicts resources; keep one of them (kgpu's key is resources)" -}}
{{- end -}}
{{- with (default $nvidia $kgpu) -}}{{ toYaml . }}{{- end -}}
{{- end -}}

{{/* NVIDIA DRA chart values kgpu cannot honour: a render error naming what to do instead. */}}
{{- define "kgpu.nvidiaDraCompat" -}}
{{- $resources := default dict .Values.resources -}}
{{- $domains := default dict (get $resources "computeDomains") -}}
{{- if eq (toString (get $domains "enabled")) "true" -}}
{{- fail "resources.computeDomains.enabled: kgpu does not implement NVIDIA's ComputeDomains (driver compute-domain.nvidia.com, IMEX channels for multi-node NVLink); set resources.computeDomains.enabled: false. kgpu serves GPUs only (resources.gpus.enabled / dra.enabled)" -}}
{{- end -}}
{{- with .Values.altProcDevices -}}
{{- fail "altProcDevices: kgpu has no alternate /proc/devices (a mock-NVML testing aid of NVIDIA's chart); remove altProcDevices" -}}
{{- end -}}
{{- $webhook := default dict .Values.webhook -}}
{{- if eq (toString (get $webhook "enabled")) "true" -}}
{{- fail "webhook.enabled: kgpu has no admission webhook; it checks a claim's opaque config (GpuConfig, MigDeviceConfig) when it prepares the claim and refuses a bad one with the reason, which the pod's events show. Set webhook.enabled: false" -}}
{{- end -}}
{{- /* featureGates: per gate, the values that match what kgpu does (NVIDIA's defaults included),
     then why others do not. The ComputeDomain gates mean nothing without ComputeDomains (refused above). */ -}}
{{- $gates := dict
  "TimeSlicingSettings" (list "true" "false" "kgpu always applies a claim's timeSlicingConfig")
  "MPSSupport" (list "true" "false" "kgpu serves MPS claims while mps.enabled")
  "NVMLDeviceHealthCheck" (list "true" "false" "kgpu always watches GPU health (health.disableHealthChecks turns XIDs off)")
  "PassthroughSupport" (list "false" "kgpu does not publish VFIO (passthrough) devices")
  "DynamicMIG" (list "true" "false" "kgpu publishes every MIG placement with dra.migDynamic")
  "DeviceMetadata" (list "false" "kgpu does not write device metadata")
  "IMEXDaemonsWithDNSNames" (list "true" "false" "ComputeDomains only")
  "ComputeDomainCliques" (list "true" "false" "ComputeDomains only")
  "CrashOnNVLinkFabricErrors" (list "true" "false" "ComputeDomains only") -}}
{{- range $gate, $value := (default dict .Values.featureGates) -}}
{{- $known := get $gates $gate -}}
{{- if not $known -}}
{{- fail (printf "featureGates.%s: not a feature gate of NVIDIA's DRA driver that kgpu knows; remove it" $gate) -}}
{{- end -}}
{{- if not (has (toString $value) (initial $known)) -}}
{{- fail (printf "featureGates.%s: %v is not supported: %s; remove it" $gate $value (last $known)) -}}
{{- end -}}
{{- end -}}
{{- if and (eq (toString (get (default dict .Values.featureGates) "MPSSupport")) "true") (not .Values.mps.enabled) -}}
{{- fail "featureGates.MPSSupport: true contradicts mps.enabled: false (kgpu's key for MPS)" -}}
{{- end -}}
{{- $plugin := default dict .Values.kubeletPlugin -}}
{{- $paths := dict "kubeletRegistrarDirectoryPath" "/var/lib/kubelet/plugins_registry" "kubeletPluginsDirectoryPath" "/var/lib/kubelet/plugins" -}}
{{- range $key, $want := $paths -}}
{{- $got := toString (default $want (get $plugin $key)) -}}
{{- if ne (trimSuffix "/" $got) $want -}}
{{- fail (printf "kubeletPlugin.%s: %q is not supported; kgpu's DRA sockets are under the kubelet root /var/lib/kubelet (%s), the only one the chart mounts" $key $got $want) -}}
{{- end -}}
{{- end -}}
{{- $metrics := default dict (get $plugin "metrics") -}}
{{- if or (not (has (toString (default ":8080" (get $metrics "gpuHttpEndpoint"))) (list ":8080"))) (ne (toString (default "/metrics" (get $metrics "metricsPath"))) "/metrics") -}}
{{- fail "kubeletPlugin.metrics: kgpu's metrics are its own (metrics.enabled, metrics.port; path /metrics), not NVIDIA's DRA request metrics; remove kubeletPlugin.metrics and set metrics.*" -}}
{{- end -}}
{{- $policy := default dict (get $plugin "networkPolicy") -}}
{{- if eq (toString (get $policy "enabled")) "true" -}}
{{- fail "kubeletPlugin.networkPolicy.enabled: kgpu's chart creates no NetworkPolicy; set it false and write one for the kgpu pods if you need it (they reach only the API server; metrics.port is served when metrics.enabled)" -}}
{{- end -}}
{{- $containers := default dict (get $plugin "containers") -}}
{{- $gpus := default dict (get $containers "gpus") -}}
{{- with get $gpus "env" -}}
{{- fail "kubeletPlugin.containers.gpus.env: NVIDIA's environment variables mean nothing to kgpu; set kgpu's values (or a config in config.map) instead" -}}
{{- end -}}
{{- $sc := get $gpus "securityContext" -}}
{{- if and $sc (not (deepEqual $sc (dict "privileged" true))) -}}
{{- fail "kubeletPlugin.containers.gpus.securityContext: kgpu computes a least-privilege securityContext (NVIDIA's default privileged: true is not needed); to override it use securityContext" -}}
{{- end -}}
{{- $port := get $gpus "healthcheckPort" -}}
{{- if and (not (kindIs "invalid" $port)) (gt (int $port) 0) (ne (int $port) 51516) -}}
{{- fail "kubeletPlugin.containers.gpus.healthcheckPort: kgpu has no gRPC health port; its probes are HTTP /healthz and /readyz on metrics.port with metrics.enabled" -}}
{{- end -}}
{{- $init := default dict (get $containers "init") -}}
{{- if or (get $init "securityContext") (get $init "resources") -}}
{{- fail "kubeletPlugin.containers.init: kgpu runs no init container; remove it" -}}
{{- end -}}
{{- end -}}
