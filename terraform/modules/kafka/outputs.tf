output "cluster_arn" {
  description = "MSK cluster ARN."
  value       = aws_msk_cluster.this.arn
}

output "bootstrap_brokers" {
  description = "Plaintext bootstrap servers (host:9092,...); empty when client_broker_encryption is TLS."
  value       = aws_msk_cluster.this.bootstrap_brokers
}

output "bootstrap_brokers_tls" {
  description = "TLS bootstrap servers (host:9094,...); empty when client_broker_encryption is PLAINTEXT."
  value       = aws_msk_cluster.this.bootstrap_brokers_tls
}

output "bootstrap" {
  description = "The bootstrap string to give kgrag (KGRAG_KAFKA_BOOTSTRAP): plaintext when enabled, else TLS."
  value       = var.client_broker_encryption == "TLS" ? aws_msk_cluster.this.bootstrap_brokers_tls : aws_msk_cluster.this.bootstrap_brokers
}

output "kafka_version" {
  description = "Kafka version of the cluster."
  value       = aws_msk_cluster.this.kafka_version
}

output "default_partitions" {
  description = "Partitions of the kgrag topics (the chart's config.kafka.topicPartitions)."
  value       = var.default_partitions
}

output "replication_factor" {
  description = "Replication factor of the kgrag topics."
  value       = var.replication_factor
}

output "security_group_id" {
  description = "Security group of the brokers."
  value       = aws_security_group.this.id
}
