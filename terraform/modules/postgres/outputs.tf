output "address" {
  description = "Host name of the instance."
  value       = aws_db_instance.this.address
}

output "port" {
  description = "Port of the instance."
  value       = aws_db_instance.this.port
}

output "database_name" {
  description = "Database name."
  value       = aws_db_instance.this.db_name
}

output "username" {
  description = "Master user name."
  value       = aws_db_instance.this.username
}

output "password" {
  description = "Master user password."
  value       = random_password.master.result
  sensitive   = true
}

output "dsn" {
  description = "libpq URL with TLS required (KGRAG_PG_DSN)."
  value       = "postgresql://${aws_db_instance.this.username}:${random_password.master.result}@${aws_db_instance.this.address}:${aws_db_instance.this.port}/${aws_db_instance.this.db_name}?sslmode=require"
  sensitive   = true
}

output "instance_arn" {
  description = "ARN of the instance (for snapshots and PITR restores)."
  value       = aws_db_instance.this.arn
}

output "security_group_id" {
  description = "Security group of the instance."
  value       = aws_security_group.this.id
}
