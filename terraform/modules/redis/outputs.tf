output "primary_endpoint" {
  description = "Primary endpoint host name."
  value       = aws_elasticache_replication_group.this.primary_endpoint_address
}

output "reader_endpoint" {
  description = "Reader endpoint host name."
  value       = aws_elasticache_replication_group.this.reader_endpoint_address
}

output "port" {
  description = "Port."
  value       = aws_elasticache_replication_group.this.port
}

output "auth_token" {
  description = "AUTH token."
  value       = random_password.auth.result
  sensitive   = true
}

output "url" {
  description = "rediss:// URL with the AUTH token (KGRAG_REDIS_URL)."
  value       = "rediss://:${random_password.auth.result}@${aws_elasticache_replication_group.this.primary_endpoint_address}:${aws_elasticache_replication_group.this.port}/0"
  sensitive   = true
}

output "security_group_id" {
  description = "Security group of the cache."
  value       = aws_security_group.this.id
}
