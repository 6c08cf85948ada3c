{{- define "quota-hub.labels" -}}
app.kubernetes.io/name: quota-hub
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "quota-hub.fullname" -}}
{{- printf "%s-quota-hub" .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{- define "quota-hub.url" -}}
{{- printf "http://%s.%s.svc:%v%s" (include "quota-hub.fullname" .) .Release.Namespace .Values.service.port .Values.baseUrl -}}
{{- end -}}
