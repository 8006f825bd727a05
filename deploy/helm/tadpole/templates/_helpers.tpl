{{/* Names and labels shared by every manifest. */}}

{{- define "tadpole.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's full name, at most 63 characters (a DNS label). */}}
{{- define "tadpole.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The labels that select this release's pods (Service, PDB, InferencePool). */}}
{{- define "tadpole.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tadpole.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "tadpole.labels" -}}
{{ include "tadpole.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "tadpole.poolName" -}}
{{- default (include "tadpole.fullname" .) .Values.inferencePool.name -}}
{{- end -}}

{{/* The Secret of the API keys: an existing one, or the chart's. */}}
{{- define "tadpole.keysSecret" -}}
{{- default (printf "%s-api-keys" (include "tadpole.fullname" .)) .Values.apiKeys.existingSecret -}}
{{- end -}}

{{- define "tadpole.apiKeysEnabled" -}}
{{- if or .Values.apiKeys.existingSecret .Values.apiKeys.keys -}}true{{- end -}}
{{- end -}}

{{/* The models to pull in the init container. */}}
{{- define "tadpole.pullModels" -}}
{{- if .Values.models.pull.models -}}
{{- join " " .Values.models.pull.models -}}
{{- else -}}
{{- join " " .Values.models.preload -}}
{{- end -}}
{{- end -}}

{{/* HTTP or HTTPS, for the probes and the metrics scrape. */}}
{{- define "tadpole.scheme" -}}
{{- if .Values.tls.secretName -}}HTTPS{{- else -}}HTTP{{- end -}}
{{- end -}}

{{/* The grace period: larger than the preStop sleep and the drain together. */}}
{{- define "tadpole.gracePeriod" -}}
{{- $min := add .Values.drain.preStopSleepSeconds .Values.drain.timeoutSeconds -}}
{{- if .Values.terminationGracePeriodSeconds -}}
{{- if le (int .Values.terminationGracePeriodSeconds) (int $min) -}}
{{- fail (printf "terminationGracePeriodSeconds (%v) must be larger than drain.preStopSleepSeconds + drain.timeoutSeconds (%v): the kubelet would kill the streams the drain waits for" .Values.terminationGracePeriodSeconds $min) -}}
{{- end -}}
{{- .Values.terminationGracePeriodSeconds -}}
{{- else -}}
{{- add $min 15 -}}
{{- end -}}
{{- end -}}
