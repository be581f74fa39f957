{{/*
Names and labels shared by every template (helm create conventions).
*/}}

{{/* Chart name, overridable; DNS labels are at most 63 characters. */}}
{{- define "dbbench.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name: "<release>-<chart>", or just the release name when it already
contains the chart name. Truncated to 63 characters because some name fields
are DNS labels.
*/}}
{{- define "dbbench.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* "<fullname>-<suffix>", still 63-character safe. Call with (list . "suffix"). */}}
{{- define "dbbench.suffixedName" -}}
{{- $root := index . 0 }}
{{- $suffix := index . 1 }}
{{- printf "%s-%s" (include "dbbench.fullname" $root | trunc (int (sub 62 (len $suffix))) | trimSuffix "-") $suffix }}
{{- end }}

{{/* Chart name and version, as used by the helm.sh/chart label. */}}
{{- define "dbbench.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object, without a component (callers add theirs). */}}
{{- define "dbbench.baseLabels" -}}
helm.sh/chart: {{ include "dbbench.chart" . }}
app.kubernetes.io/name: {{ include "dbbench.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: dbbench
{{- end }}

{{/* Labels of the operator's own objects. */}}
{{- define "dbbench.labels" -}}
{{ include "dbbench.baseLabels" . }}
app.kubernetes.io/component: operator
{{- end }}

{{/* Selector labels: stable across upgrades, so never the version. */}}
{{- define "dbbench.selectorLabels" -}}
app.kubernetes.io/name: {{ include "dbbench.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{/* The operator's ServiceAccount name. */}}
{{- define "dbbench.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "dbbench.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Operator image reference; the tag defaults to the chart's appVersion. */}}
{{- define "dbbench.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* Runner image reference handed to the operator (DBBENCH_RUNNER_IMAGE). */}}
{{- define "dbbench.runnerImage" -}}
{{- printf "%s:%s" .Values.runner.image.repository (default .Chart.AppVersion .Values.runner.image.tag) }}
{{- end }}

{{/*
Watched namespaces, comma-joined (the schema keeps them unique). Empty means
all namespaces (kopf --all-namespaces, cluster-wide bindings).
*/}}
{{- define "dbbench.watchNamespaces" -}}
{{- .Values.watchNamespaces | join "," }}
{{- end }}

{{/* Names of the ClusterRoles the chart creates. */}}
{{- define "dbbench.clusterScopeRoleName" -}}
{{- include "dbbench.suffixedName" (list . "cluster") }}
{{- end }}
{{- define "dbbench.operatorRoleName" -}}
{{- include "dbbench.suffixedName" (list . "operator") }}
{{- end }}

{{/* The results service: its name, selector and key Secret. */}}
{{- define "dbbench.resultsName" -}}
{{- include "dbbench.suffixedName" (list . "results") }}
{{- end }}
{{- define "dbbench.resultsKeySecret" -}}
{{- if .Values.results.existingSecret }}
{{- .Values.results.existingSecret }}
{{- else }}
{{- include "dbbench.suffixedName" (list . "results-key") }}
{{- end }}
{{- end }}
{{/* The key's name inside that Secret. */}}
{{- define "dbbench.resultsKeyKey" -}}
{{- if .Values.results.existingSecret }}{{ .Values.results.existingSecretKey }}{{ else }}key{{ end }}
{{- end }}
{{/*
The service key, base64 as in the Secret's data: the Secret's current value
(lookup; kept across upgrades), or one generated once per render and shared by
every template of that render (memoized in .Values, so the Secret and the
checksums below agree). With an existingSecret that lookup cannot see
(`helm template`, a client-side dry run), its name stands in.
*/}}
{{- define "dbbench.resultsKeyData" -}}
{{- $secret := lookup "v1" "Secret" .Release.Namespace (include "dbbench.resultsKeySecret" .) }}
{{- $key := include "dbbench.resultsKeyKey" . }}
{{- if and $secret $secret.data (index $secret.data $key) }}
{{- index $secret.data $key }}
{{- else if .Values.results.existingSecret }}
{{- printf "%s/%s" .Values.results.existingSecret $key | b64enc }}
{{- else }}
{{- if not (hasKey .Values.results "generatedKeyOfThisRender") }}
{{- $_ := set .Values.results "generatedKeyOfThisRender" (randAlphaNum 64 | b64enc) }}
{{- end }}
{{- .Values.results.generatedKeyOfThisRender }}
{{- end }}
{{- end }}
{{/* Pod annotation: a new key value (rotated, re-created) restarts the pods that read it. */}}
{{- define "dbbench.resultsKeyChecksum" -}}
{{- include "dbbench.resultsKeyData" . | sha256sum | trunc 16 | quote }}
{{- end }}
{{- define "dbbench.resultsSelectorLabels" -}}
app.kubernetes.io/name: {{ include "dbbench.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: results
{{- end }}
{{/* Where the operator and runner pods reach the results service (no cluster domain assumed). */}}
{{- define "dbbench.resultsUrl" -}}
{{- printf "http://%s.%s.svc:%v" (include "dbbench.resultsName" .) .Release.Namespace .Values.results.service.port }}
{{- end }}

{{/* What `dbbench fetch/report/compare` need to read results through the
browser's Service (the API server's service proxy); only with the browser. */}}
{{- define "dbbench.resultsReaderRules" -}}
{{- if .Values.results.browser.enabled }}
  - apiGroups: [""]
    resources: [services]
    verbs: [get, list]
  - apiGroups: [""]
    resources: [services/proxy]
    # The API server authorizes the proxy by the name in its path, `<name>:<port>`.
    resourceNames: [{{ include "dbbench.suffixedName" (list . "browser") | quote }}, {{ printf "%s:http" (include "dbbench.suffixedName" (list . "browser")) | quote }}]
    verbs: [get]
{{- end }}
{{- end }}
