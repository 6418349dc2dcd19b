{{/* vim: set filetype=mustache: */}}

{{- define "kgrag.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Fully qualified app name; truncated to leave room for "-<service>" suffixes.
*/}}
{{- define "kgrag.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "kgrag.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kgrag.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kgrag.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kgrag.labels" -}}
helm.sh/chart: {{ include "kgrag.chart" . }}
{{ include "kgrag.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: kgrag
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
Per-service names and labels. Call with (dict "root" $ "name" $name).
*/}}
{{- define "kgrag.componentName" -}}
{{- printf "%s-%s" (include "kgrag.fullname" .root) .name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kgrag.componentSelectorLabels" -}}
{{ include "kgrag.selectorLabels" .root }}
app.kubernetes.io/component: {{ .name }}
{{- end -}}

{{- define "kgrag.componentLabels" -}}
{{ include "kgrag.labels" .root }}
app.kubernetes.io/component: {{ .name }}
{{- end -}}

{{- define "kgrag.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "kgrag.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "kgrag.configMapName" -}}
{{- printf "%s-config" (include "kgrag.fullname" .) -}}
{{- end -}}

{{- define "kgrag.secretName" -}}
{{- if .Values.secrets.existingSecret -}}
{{- .Values.secrets.existingSecret -}}
{{- else -}}
{{- printf "%s-secrets" (include "kgrag.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "kgrag.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/*
Non-secret configuration (the ConfigMap's data). Empty values are left out.
*/}}
{{- define "kgrag.configData" -}}
{{- $c := .Values.config -}}
{{- $data := dict
  "KGRAG_RUNTIME" $c.runtime
  "KGRAG_DATA_DIR" "/data"
  "KGRAG_HOST" "0.0.0.0"
  "KGRAG_OPS_HOST" "0.0.0.0"
  "KGRAG_KAFKA_BOOTSTRAP" $c.kafka.bootstrap
  "KGRAG_KAFKA_GROUP_PREFIX" $c.kafka.groupPrefix
  "KGRAG_KAFKA_TOPIC_PREFIX" $c.kafka.topicPrefix
  "KGRAG_KAFKA_TOPIC_PARTITIONS" (toString $c.kafka.topicPartitions)
  "KGRAG_KAFKA_REPLICATION_FACTOR" (toString $c.kafka.replicationFactor)
  "KGRAG_OPENSEARCH_URL" $c.opensearch.url
  "KGRAG_QDRANT_URL" $c.qdrant.url
  "KGRAG_NEO4J_URI" $c.neo4j.uri
  "KGRAG_S3_ENDPOINT" $c.s3.endpoint
  "KGRAG_S3_BUCKET" $c.s3.bucket
  "AWS_REGION" $c.s3.region
  "KGRAG_AUTH_ISSUER" $c.auth.issuer
  "KGRAG_AUTH_AUDIENCE" $c.auth.audience
  "KGRAG_REDIS_NAMESPACE" $c.redis.namespace
  "KGRAG_LLM_BASE_URL" $c.llm.baseUrl
  "KGRAG_LLM_MODEL" $c.llm.model
  "KGRAG_READY_MAX_LAG" (toString $c.readyMaxLag)
-}}
{{- range $k, $v := $c.extra }}
{{- $_ := set $data $k (toString $v) -}}
{{- end }}
{{- range $k := keys $data | sortAlpha }}
{{- $v := get $data $k }}
{{- if and $v (ne (toString $v) "<nil>") }}
{{ $k }}: {{ $v | toString | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
Secret data (base64). Empty values are left out.
*/}}
{{- define "kgrag.secretData" -}}
{{- range $k, $v := .Values.secrets.values }}
{{- if $v }}
{{ $k }}: {{ $v | toString | b64enc | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
The consumers may not outnumber the partitions: extra consumers in a group sit idle.
Call with (dict "root" $ "name" $name "svc" $svc).
*/}}
{{- define "kgrag.checkPartitions" -}}
{{- $parts := int .root.Values.config.kafka.topicPartitions -}}
{{- if eq .svc.kind "consumer" -}}
{{- if gt (int .svc.replicas) $parts -}}
{{- fail (printf "services.%s.replicas (%d) is above config.kafka.topicPartitions (%d): extra consumers would sit idle" .name (int .svc.replicas) $parts) -}}
{{- end -}}
{{- if and .svc.autoscaling .svc.autoscaling.enabled (gt (int .svc.autoscaling.maxReplicas) $parts) -}}
{{- fail (printf "services.%s.autoscaling.maxReplicas (%d) is above config.kafka.topicPartitions (%d): extra consumers would sit idle" .name (int .svc.autoscaling.maxReplicas) $parts) -}}
{{- end -}}
{{- end -}}
{{- if not (has .svc.kind (list "http" "consumer")) -}}
{{- fail (printf "services.%s.kind must be http or consumer, not %q" .name (toString .svc.kind)) -}}
{{- end -}}
{{- end -}}

{{/*
Volumes and mounts for the read-only root filesystem.
*/}}
{{- define "kgrag.volumes" -}}
- name: tmp
  emptyDir:
    {{- with .Values.tmpVolume.medium }}
    medium: {{ . }}
    {{- end }}
    sizeLimit: {{ .Values.tmpVolume.sizeLimit }}
- name: data
  emptyDir:
    sizeLimit: {{ .Values.dataVolume.sizeLimit }}
{{- end -}}

{{- define "kgrag.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
- name: data
  mountPath: /data
{{- end -}}

{{/*
envFrom: the ConfigMap and the Secret. Call with (dict "root" $ "configMap" name "secret" name).
*/}}
{{- define "kgrag.envFrom" -}}
- configMapRef:
    name: {{ .configMap }}
- secretRef:
    name: {{ .secret }}
{{- end -}}

{{- define "kgrag.envMap" -}}
{{- range $k, $v := . }}
- name: {{ $k }}
  value: {{ $v | toString | quote }}
{{- end }}
{{- end -}}
