{{/* Chart name, overridable. */}}
{{- define "postgresql.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Prefix of every object name; 40 characters leave room for pod ordinals and revision hashes. */}}
{{- define "postgresql.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "postgresql.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Selector labels of one component: (list $ "component"). */}}
{{- define "postgresql.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "postgresql.name" $root }}
app.kubernetes.io/instance: {{ include "postgresql.fullname" $root }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/* All labels of one component: (list $ "component"); commonLabels win. */}}
{{- define "postgresql.labels" -}}
{{- $root := index . 0 }}
{{- $base := dict "helm.sh/chart" (include "postgresql.chart" $root) "app.kubernetes.io/managed-by" $root.Release.Service }}
{{- $selector := include "postgresql.selectorLabels" . | fromYaml }}
{{- toYaml (merge (deepCopy ($root.Values.commonLabels | default dict)) $selector $base) }}
{{- end }}

{{/* User affinity with a preferred anti-affinity term spreading the members: (list $ "component"). */}}
{{- define "postgresql.affinity" -}}
{{- $root := index . 0 }}
{{- $affinity := deepCopy ($root.Values.affinity | default dict) }}
{{- if $root.Values.spreadMembers }}
{{- $anti := deepCopy (get $affinity "podAntiAffinity" | default dict) }}
{{- $preferred := get $anti "preferredDuringSchedulingIgnoredDuringExecution" | default list }}
{{- $selector := include "postgresql.selectorLabels" . | fromYaml }}
{{- $term := dict "weight" 100 "podAffinityTerm" (dict "topologyKey" "kubernetes.io/hostname" "labelSelector" (dict "matchLabels" $selector)) }}
{{- $_ := set $anti "preferredDuringSchedulingIgnoredDuringExecution" (append $preferred $term) }}
{{- $_ = set $affinity "podAntiAffinity" $anti }}
{{- end }}
{{- if $affinity }}
{{- toYaml $affinity }}
{{- end }}
{{- end }}

{{/* TCP probes on the postgresql port (no exec probes). */}}
{{- define "postgresql.probes" -}}
startupProbe:
  tcpSocket:
    port: postgresql
  periodSeconds: {{ .Values.probes.startup.periodSeconds }}
  failureThreshold: {{ .Values.probes.startup.failureThreshold }}
readinessProbe:
  tcpSocket:
    port: postgresql
  periodSeconds: {{ .Values.probes.readiness.periodSeconds }}
  failureThreshold: {{ .Values.probes.readiness.failureThreshold }}
livenessProbe:
  tcpSocket:
    port: postgresql
  periodSeconds: {{ .Values.probes.liveness.periodSeconds }}
  failureThreshold: {{ .Values.probes.liveness.failureThreshold }}
{{- end }}

{{/* The image reference. */}}
{{- define "postgresql.image" -}}
{{- if .Values.image.reference }}
{{- .Values.image.reference }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (toString .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* Superuser name and password from the run's Secret. */}}
{{- define "postgresql.authEnv" -}}
{{- $secret := required "auth.existingSecret is required" .Values.auth.existingSecret -}}
- name: POSTGRES_USER
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ .Values.auth.usernameKey }}
- name: POSTGRES_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ .Values.auth.passwordKey }}
- name: PGDATA
  value: /var/lib/postgresql/data/pgdata
{{- end }}
