output "cluster_name" {
  description = "EKS cluster name (aws eks update-kubeconfig --name ...)."
  value       = module.cluster.cluster_name
}

output "cluster_endpoint" {
  description = "Kubernetes API endpoint."
  value       = module.cluster.cluster_endpoint
}

output "kafka_bootstrap" {
  description = "KGRAG_KAFKA_BOOTSTRAP."
  value       = module.kafka.bootstrap
}

output "kafka_bootstrap_tls" {
  description = "TLS bootstrap servers of MSK."
  value       = module.kafka.bootstrap_brokers_tls
}

output "opensearch_url" {
  description = "KGRAG_OPENSEARCH_URL."
  value       = module.opensearch.endpoint
}

output "postgres_address" {
  description = "RDS PostgreSQL host name."
  value       = module.postgres.address
}

output "postgres_instance_arn" {
  description = "RDS instance ARN (snapshots, point-in-time restore)."
  value       = module.postgres.instance_arn
}

output "postgres_dsn" {
  description = "KGRAG_PG_DSN."
  value       = module.postgres.dsn
  sensitive   = true
}

output "redis_endpoint" {
  description = "ElastiCache primary endpoint."
  value       = module.redis.primary_endpoint
}

output "s3_bucket" {
  description = "KGRAG_S3_BUCKET."
  value       = module.object_storage.bucket_name
}

output "s3_app_role_arn" {
  description = "IAM role the kgrag pods assume (EKS Pod Identity) for S3."
  value       = module.object_storage.app_role_arn
}

output "qdrant_url" {
  description = "KGRAG_QDRANT_URL."
  value       = module.qdrant.url
}

output "neo4j_uri" {
  description = "KGRAG_NEO4J_URI."
  value       = local.neo4j_uri
}

output "kgrag_namespace" {
  description = "Namespace of the kgrag release."
  value       = helm_release.kgrag.namespace
}

output "query_api_url" {
  description = "In-cluster URL of the query API."
  value       = "http://${local.release}-query-api.${local.namespace}.svc.cluster.local:8000"
}

output "connector_gateway_url" {
  description = "In-cluster URL of the connector gateway."
  value       = "http://${local.release}-connector-gateway.${local.namespace}.svc.cluster.local:8080"
}

output "kgrag_values" {
  description = "The (non-secret) values given to the kgrag chart."
  value       = yamlencode(local.kgrag_values)
}
