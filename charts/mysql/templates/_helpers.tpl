{{/* Chart name, overridable. */}}
{{- define "mysql.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Prefix of every object name; 40 characters leave room for pod ordinals and revision hashes. */}}
{{- define "mysql.fullname" -}}
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

{{- define "mysql.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Selector labels of one component: (list $ "component"). */}}
{{- define "mysql.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "mysql.name" $root }}
app.kubernetes.io/instance: {{ include "mysql.fullname" $root }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/* All labels of one component: (list $ "component"); commonLabels win. */}}
{{- define "mysql.labels" -}}
{{- $root := index . 0 }}
{{- $base := dict "helm.sh/chart" (include "mysql.chart" $root) "app.kubernetes.io/managed-by" $root.Release.Service }}
{{- $selector := include "mysql.selectorLabels" . | fromYaml }}
{{- toYaml (merge (deepCopy ($root.Values.commonLabels | default dict)) $selector $base) }}
{{- end }}


{{/* User affinity with a preferred anti-affinity term spreading one replica set: (list $ "component"). */}}
{{- define "mysql.affinity" -}}
{{- $root := index . 0 }}
{{- $affinity := deepCopy ($root.Values.affinity | default dict) }}
{{- if $root.Values.spreadMembers }}
{{- $anti := deepCopy (get $affinity "podAntiAffinity" | default dict) }}
{{- $preferred := get $anti "preferredDuringSchedulingIgnoredDuringExecution" | default list }}
{{- $selector := include "mysql.selectorLabels" . | fromYaml }}
{{- $term := dict "weight" 100 "podAffinityTerm" (dict "topologyKey" "kubernetes.io/hostname" "labelSelector" (dict "matchLabels" $selector)) }}
{{- $_ := set $anti "preferredDuringSchedulingIgnoredDuringExecution" (append $preferred $term) }}
{{- $_ = set $affinity "podAntiAffinity" $anti }}
{{- end }}
{{- if $affinity }}
{{- toYaml $affinity }}
{{- end }}
{{- end }}

{{/* Scheduling and security fields shared by every database pod: (list $ "component"). */}}
{{- define "mysql.podScheduling" -}}
{{- $root := index . 0 }}
{{- with $root.Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $root.Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (include "mysql.affinity" .) }}
affinity:
  {{- . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml $root.Values.podSecurityContext | nindent 2 }}
terminationGracePeriodSeconds: {{ $root.Values.terminationGracePeriodSeconds }}
{{- end }}

{{/* TCP probes on the mysql port (no exec probes). */}}
{{- define "mysql.probes" -}}
startupProbe:
  tcpSocket:
    port: mysql
  periodSeconds: {{ .Values.probes.startup.periodSeconds }}
  failureThreshold: {{ .Values.probes.startup.failureThreshold }}
readinessProbe:
  tcpSocket:
    port: mysql
  periodSeconds: {{ .Values.probes.readiness.periodSeconds }}
  failureThreshold: {{ .Values.probes.readiness.failureThreshold }}
livenessProbe:
  tcpSocket:
    port: mysql
  periodSeconds: {{ .Values.probes.liveness.periodSeconds }}
  failureThreshold: {{ .Values.probes.liveness.failureThreshold }}
{{- end }}

{{/* The engine's official image unless overridden. */}}
{{- define "mysql.image" -}}
{{- if .Values.image.reference }}
{{- .Values.image.reference }}
{{- else }}
{{- $isMaria := eq .Values.engine "mariadb" }}
{{- $repository := .Values.image.repository | default (ternary "mariadb" "mysql" $isMaria) }}
{{- $tag := toString .Values.image.tag | default (ternary "11.8" "8.4" $isMaria) }}
{{- printf "%s:%s" $repository $tag }}
{{- end }}
{{- end }}

{{/* Replication-related flags of the engine (GTIDs, binary log, relay log). */}}
{{- define "mysql.replicationFlags" -}}
{{- if eq .Values.engine "mariadb" }}
- --log-bin=mysql-bin
- --log-slave-updates=ON
- --binlog-format=ROW
- --relay-log=relay-bin
- --gtid-strict-mode=ON
{{- else }}
- --log-bin=binlog
- --relay-log=relay-bin
- --gtid-mode=ON
- --enforce-gtid-consistency=ON
{{- end }}
{{- end }}
