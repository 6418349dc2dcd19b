output "endpoint" {
  description = "HTTPS URL of the domain (KGRAG_OPENSEARCH_URL)."
  value       = "https://${aws_opensearch_domain.this.endpoint}"
}

output "domain_arn" {
  description = "Domain ARN."
  value       = aws_opensearch_domain.this.arn
}

output "engine_version" {
  description = "Engine version of the domain."
  value       = aws_opensearch_domain.this.engine_version
}

output "master_user_name" {
  description = "Master user (KGRAG_OPENSEARCH_USER)."
  value       = var.master_user_name
}

output "master_user_password" {
  description = "Master user password (KGRAG_OPENSEARCH_PASSWORD)."
  value       = local.master_password
  sensitive   = true
}

output "security_group_id" {
  description = "Security group of the domain."
  value       = aws_security_group.this.id
}
