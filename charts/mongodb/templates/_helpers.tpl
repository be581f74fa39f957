{{/* Chart name, overridable. */}}
{{- define "mongodb.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Prefix of every object name; 40 characters leave room for -shard31 and pod ordinals. */}}
{{- define "mongodb.fullname" -}}
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

{{- define "mongodb.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Selector labels of one component: (list $ "component"). */}}
{{- define "mongodb.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "mongodb.name" $root }}
app.kubernetes.io/instance: {{ include "mongodb.fullname" $root }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/* All labels of one component: (list $ "component"); commonLabels win. */}}
{{- define "mongodb.labels" -}}
{{- $root := index . 0 }}
{{- $base := dict "helm.sh/chart" (include "mongodb.chart" $root) "app.kubernetes.io/managed-by" $root.Release.Service }}
{{- $selector := include "mongodb.selectorLabels" . | fromYaml }}
{{- toYaml (merge (deepCopy ($root.Values.commonLabels | default dict)) $selector $base) }}
{{- end }}

{{- define "mongodb.image" -}}
{{- if .Values.image.reference }}
{{- .Values.image.reference }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (toString .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The label every shard pod carries: what spreads them apart or holds them together. */}}
{{- define "mongodb.shardMemberLabel" -}}
dbbench.io/shard-member: "true"
{{- end }}

{{/* User affinity merged with ours: (list $ "component" "role").
Every replica set: a preferred anti-affinity term spreading its members over
nodes (spreadMembers). Shards (role shardsvr) with shardPlacement spread: also
a lighter term spreading all shard pods apart, one node per shard member where
the pool has the nodes; with colocated: a required pod affinity holding every
shard pod on one node (the first lands anywhere, the others follow it) and no
spreading at all. */}}
{{- define "mongodb.affinity" -}}
{{- $root := index . 0 }}
{{- $role := index . 2 }}
{{- $affinity := deepCopy ($root.Values.affinity | default dict) }}
{{- $colocated := and (eq $role "shardsvr") (eq $root.Values.shardPlacement "colocated") }}
{{- $shards := merge (dict "app.kubernetes.io/instance" (include "mongodb.fullname" $root)) (include "mongodb.shardMemberLabel" $root | fromYaml) }}
{{- if and $root.Values.spreadMembers (not $colocated) }}
{{- $anti := deepCopy (get $affinity "podAntiAffinity" | default dict) }}
{{- $preferred := get $anti "preferredDuringSchedulingIgnoredDuringExecution" | default list }}
{{- $selector := include "mongodb.selectorLabels" (list $root (index . 1)) | fromYaml }}
{{- $preferred = append $preferred (dict "weight" 100 "podAffinityTerm" (dict "topologyKey" "kubernetes.io/hostname" "labelSelector" (dict "matchLabels" $selector))) }}
{{- if eq $role "shardsvr" }}
{{- $preferred = append $preferred (dict "weight" 50 "podAffinityTerm" (dict "topologyKey" "kubernetes.io/hostname" "labelSelector" (dict "matchLabels" $shards))) }}
{{- end }}
{{- $_ := set $anti "preferredDuringSchedulingIgnoredDuringExecution" $preferred }}
{{- $_ = set $affinity "podAntiAffinity" $anti }}
{{- end }}
{{- if $colocated }}
{{- $together := deepCopy (get $affinity "podAffinity" | default dict) }}
{{- $required := get $together "requiredDuringSchedulingIgnoredDuringExecution" | default list }}
{{- $term := dict "topologyKey" "kubernetes.io/hostname" "labelSelector" (dict "matchLabels" $shards) }}
{{- $_ := set $together "requiredDuringSchedulingIgnoredDuringExecution" (append $required $term) }}
{{- $_ = set $affinity "podAffinity" $together }}
{{- end }}
{{- if $affinity }}
{{- toYaml $affinity }}
{{- end }}
{{- end }}

{{/* The nodeSelector of a role's pods: (list $ "role"). The component's own
(shardNodeSelector, configServer.nodeSelector, mongos.nodeSelector) when it is
a map, even an empty one (any node); otherwise nodeSelector. */}}
{{- define "mongodb.nodeSelector" -}}
{{- $root := index . 0 }}
{{- $role := index . 1 }}
{{- $own := "" }}
{{- if eq $role "shardsvr" }}
{{- $own = $root.Values.shardNodeSelector }}
{{- else if eq $role "configsvr" }}
{{- $own = $root.Values.configServer.nodeSelector }}
{{- else if eq $role "mongos" }}
{{- $own = $root.Values.mongos.nodeSelector }}
{{- end }}
{{- if kindIs "map" $own }}
{{- toYaml $own }}
{{- else }}
{{- toYaml ($root.Values.nodeSelector | default dict) }}
{{- end }}
{{- end }}

{{/* Scheduling and security fields shared by every database pod: (list $ "component" "role"). */}}
{{- define "mongodb.podScheduling" -}}
{{- $root := index . 0 }}
{{- with (include "mongodb.nodeSelector" (list $root (index . 2)) | fromYaml) }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $root.Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (include "mongodb.affinity" .) }}
affinity:
  {{- . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml $root.Values.podSecurityContext | nindent 2 }}
terminationGracePeriodSeconds: {{ $root.Values.terminationGracePeriodSeconds }}
{{- end }}

{{/* TCP probes on the mongodb port (no exec probes: no shell in the hot path). */}}
{{- define "mongodb.probes" -}}
startupProbe:
  tcpSocket:
    port: mongodb
  periodSeconds: {{ .Values.probes.startup.periodSeconds }}
  failureThreshold: {{ .Values.probes.startup.failureThreshold }}
readinessProbe:
  tcpSocket:
    port: mongodb
  periodSeconds: {{ .Values.probes.readiness.periodSeconds }}
  failureThreshold: {{ .Values.probes.readiness.failureThreshold }}
livenessProbe:
  tcpSocket:
    port: mongodb
  periodSeconds: {{ .Values.probes.liveness.periodSeconds }}
  failureThreshold: {{ .Values.probes.liveness.failureThreshold }}
{{- end }}

{{/* Init container copying the keyFile from the Secret with owner 999 and mode 0400:
(list $ resources). Idempotent: a restarted pod re-runs it on the same emptyDir,
where the 0400 file from the first run cannot be overwritten, only replaced.
It gets the database container's resources, so the pod keeps its QoS class. */}}
{{- define "mongodb.keyfileInit" -}}
{{- $root := index . 0 }}
- name: keyfile
  image: {{ include "mongodb.image" $root }}
  imagePullPolicy: {{ $root.Values.image.pullPolicy }}
  command:
    - sh
    - -c
    - rm -f /keyfile/keyfile.tmp && install -m 0400 /keyfile-secret/keyfile /keyfile/keyfile.tmp && mv -f /keyfile/keyfile.tmp /keyfile/keyfile
  {{- with index . 1 }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- toYaml $root.Values.containerSecurityContext | nindent 4 }}
  volumeMounts:
    - name: keyfile-secret
      mountPath: /keyfile-secret
      readOnly: true
    - name: keyfile
      mountPath: /keyfile
{{- end }}

{{- define "mongodb.keyfileVolumes" -}}
- name: keyfile-secret
  secret:
    secretName: {{ required "auth.existingSecret is required" .Values.auth.existingSecret }}
    defaultMode: 0400
    items:
      - key: {{ .Values.auth.keyFileKey }}
        path: keyfile
- name: keyfile
  emptyDir:
    medium: Memory
    sizeLimit: 1Mi
{{- end }}

{{/* The replica sets to deploy as a list of dicts: suffix, component, replSet, role, withInitdb. */}}
{{- define "mongodb.sets" -}}
{{- $sets := list }}
{{- if eq .Values.topology "sharded" }}
{{- $sets = append $sets (dict "suffix" "-cfg" "component" "configsvr" "replSet" "cfg" "role" "configsvr") }}
{{- range $i := until (int .Values.shards) }}
{{- $sets = append $sets (dict "suffix" (printf "-shard%d" $i) "component" (printf "shard%d" $i) "replSet" (printf "shard%d" $i) "role" "shardsvr") }}
{{- end }}
{{- else if eq .Values.topology "replicaSet" }}
{{- $sets = append $sets (dict "suffix" "" "component" "mongod" "replSet" .Values.replicaSetName "role" "") }}
{{- else }}
{{- $sets = append $sets (dict "suffix" "" "component" "mongod" "replSet" "" "role" "") }}
{{- end }}
{{- toYaml (dict "sets" $sets) }}
{{- end }}
