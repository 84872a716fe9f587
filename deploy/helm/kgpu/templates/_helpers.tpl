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
{{- if or $fromValues (include "kgpu.configSets" (list . "migStrategy" "single|mixed")) -}}true{{- end -}}
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
{{- if and (not (include "kgpu.labelsOnly" .)) (or (include "kgpu.mpsMayBeUsed" .) (and .Values.dra.enabled .Values.mps.enabled)) -}}true{{- end -}}
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
  value: {{ .Values.logging.level | quote }}
- name: KGPU_LOG_FORMAT
  value: {{ .Values.logging.format | quote }}
{{- if .Values.dra.enabled }}
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
{{- if not (kindIs "invalid" .Values.cdi.nvidiaHookPath) }}
- name: NVIDIA_CDI_HOOK_PATH
  value: {{ .Values.cdi.nvidiaHookPath | quote }}
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
{{- $nfd := default dict .Values.nfd -}}
{{- if or (gt (len (omit $nfd "enabled")) 0) (eq (toString (index $nfd "enabled")) "true") -}}
{{- fail "nfd.*: kgpu's chart does not bundle node-feature-discovery (NVIDIA's chart's nfd subchart). Install it as its own release (helm install nfd oci://registry.k8s.io/nfd/charts/node-feature-discovery -n node-feature-discovery --create-namespace), move these nfd.* values there, and keep gfd.enabled: true here (kgpu writes the labels file NFD reads)" -}}
{{- end -}}
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
{{- if .Values.dra.enabled -}}
{{- fail "devicePlugin.enabled: false runs the labeller only; for DRA without the device-plugin API set dra.enabled: true and dra.devicePlugin: false instead" -}}
{{- end -}}
{{- if .Values.metrics.enabled -}}
{{- fail "metrics.enabled: the labels-only pods (devicePlugin.enabled: false) serve no metrics; set metrics.enabled: false" -}}
{{- end -}}
{{- else -}}
{{- if .Values.gfd.securityContext -}}
{{- fail "gfd.securityContext: with the device plugin on, the labels are written by the kgpu container: use securityContext (gfd.securityContext applies to labels-only pods, devicePlugin.enabled: false)" -}}
{{- end -}}
{{- if .Values.gfd.enableHostNetwork -}}
{{- fail "gfd.enableHostNetwork: with the device plugin on, the labels are written by the kgpu pods: use devicePlugin.enableHostNetwork" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* GPU Feature Discovery's settings, for whichever container writes the labels. */}}
{{- define "kgpu.gfdEnv" -}}
- name: GFD_OUTPUT_FILE
  value: {{ printf "%s/kgpu" .Values.gfd.featuresDir | quote }}
{{- with include "kgpu.gfdNoTimestamp" . }}
- name: GFD_NO_TIMESTAMP
  value: {{ . | quote }}
{{- end }}
{{- end -}}
