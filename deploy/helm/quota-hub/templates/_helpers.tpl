{{/* The chart's name, overridable. */}}
{{- define "quota-hub.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Every object's name starts with this: the release's, so two releases in one namespace never collide. */}}
{{- define "quota-hub.fullname" -}}
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

{{- define "quota-hub.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "quota-hub.selectorLabels" -}}
app.kubernetes.io/name: {{ include "quota-hub.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "quota-hub.labels" -}}
helm.sh/chart: {{ include "quota-hub.chart" . }}
{{ include "quota-hub.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: quota
{{- end -}}

{{/* The image: pinned by digest when one is given (the tag is then ignored), else by tag. */}}
{{- define "quota-hub.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/* The pods' service account: the chart's, a named one, or none (the namespace's default). */}}
{{- define "quota-hub.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "quota-hub.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The servers' URL inside the cluster, as the CronJobs reach it. */}}
{{- define "quota-hub.url" -}}
{{- printf "http://%s.%s.svc:%v%s" (include "quota-hub.fullname" .) .Release.Namespace .Values.service.port .Values.baseUrl -}}
{{- end -}}

{{/* The Secret with the imported tokens' secrets (keys `refresh`, `metrics`). */}}
{{- define "quota-hub.tokensSecret" -}}
{{- .Values.tokens.existingSecret | default (printf "%s-tokens" (include "quota-hub.fullname" .)) -}}
{{- end -}}

{{/* The pods' security settings, the server's and the CronJobs'. */}}
{{- define "quota-hub.podSecurity" -}}
automountServiceAccountToken: {{ .Values.serviceAccount.automountToken }}
{{- with (include "quota-hub.serviceAccountName" .) }}
serviceAccountName: {{ . }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{- define "quota-hub.checks" -}}
{{- if and (eq .Values.database.type "sqlite") (gt (int .Values.replicas) 1) -}}
{{- fail (printf "replicas: %v replicas need database.type postgres (SQLite has one writer: one replica)" .Values.replicas) -}}
{{- end -}}
{{- $r := .Values.database.sqlite.replication -}}
{{- if and $r.enabled (ne .Values.database.type "sqlite") -}}
{{- fail "database.sqlite.replication: Litestream replicates the SQLite file; PostgreSQL has its own (docs/postgres.md, point-in-time recovery)" -}}
{{- end -}}
{{- if and $r.enabled (ne (len $r.replicas) 1) -}}
{{- fail "database.sqlite.replication.replicas: give one replica (its url and settings; Litestream 0.5 keeps one per database)" -}}
{{- end -}}
{{- end -}}

{{- /* Litestream's configuration: the one database, its one replica (SFTP without concurrent
       writes unless asked), the control socket quota-hub asks for the lag, and metrics. */ -}}
{{- define "quota-hub.litestream" -}}
{{- $r := .Values.database.sqlite.replication -}}
{{- $replica := deepCopy (index $r.replicas 0) -}}
{{- if and (hasPrefix "sftp://" $replica.url) (not (hasKey $replica "concurrent-writes")) -}}
{{- $_ := set $replica "concurrent-writes" false -}}
{{- end -}}
{{- if not (hasKey $replica "sync-interval") -}}
{{- $_ := set $replica "sync-interval" $r.syncInterval -}}
{{- end -}}
addr: ":9090"
socket:
  enabled: true
  path: /run/litestream/litestream.sock
dbs:
  - path: /data/quota.db
    monitor-interval: {{ $r.monitorInterval }}
    replica:
      {{- toYaml $replica | nindent 6 }}
{{- end -}}

{{- /* What Litestream's containers share: the image, its configuration, the data and socket
       volumes, the credentials. */ -}}
{{- define "quota-hub.litestreamContainer" -}}
{{- $r := .Values.database.sqlite.replication -}}
image: {{ $r.image | quote }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
{{- with $r.secretName }}
envFrom:
  - secretRef: {name: {{ . }}}
{{- end }}
securityContext:
  {{- toYaml .Values.securityContext | nindent 2 }}
resources:
  {{- toYaml $r.resources | nindent 2 }}
volumeMounts:
  - {name: data, mountPath: /data}
  - {name: litestream-config, mountPath: /etc/litestream, readOnly: true}
  - {name: litestream-run, mountPath: /run/litestream}
  {{- if $r.filesSecretName }}
  - {name: litestream-secret, mountPath: /etc/litestream/secret, readOnly: true}
  {{- end }}
{{- end -}}
