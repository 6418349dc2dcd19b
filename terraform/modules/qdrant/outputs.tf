output "url" {
  description = "In-cluster HTTP URL of Qdrant (KGRAG_QDRANT_URL)."
  value       = "http://${helm_release.qdrant.name}.${helm_release.qdrant.namespace}.svc.cluster.local:6333"
}

output "grpc_url" {
  description = "In-cluster gRPC URL of Qdrant."
  value       = "http://${helm_release.qdrant.name}.${helm_release.qdrant.namespace}.svc.cluster.local:6334"
}

output "api_key" {
  description = "API key (KGRAG_QDRANT_API_KEY)."
  value       = local.api_key
  sensitive   = true
}

output "namespace" {
  description = "Namespace of the release."
  value       = helm_release.qdrant.namespace
}

output "chart_version" {
  description = "Installed chart version."
  value       = helm_release.qdrant.version
}
