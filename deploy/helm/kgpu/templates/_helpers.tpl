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
app.kubernetes.io/name: {{ include "kgpu.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
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

{{/* Whether MIG may be in use, as NVIDIA's chart decides it (a config file may always turn it on). */}}
{{- define "kgpu.migMayBeEnabled" -}}
{{- if or (include "kgpu.hasConfig" .) (and .Values.migStrategy (ne (toString .Values.migStrategy) "none")) -}}true{{- end -}}
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
{{- else if or (include "kgpu.migMayBeEnabled" .) (contains "volume-mounts" (toString .Values.deviceListStrategy)) -}}
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
