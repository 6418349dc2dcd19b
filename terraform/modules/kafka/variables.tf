variable "name" {
  description = "MSK cluster name."
  type        = string

  validation {
    condition     = can(regex("^[a-zA-Z][a-zA-Z0-9-]{0,63}$", var.name))
    error_message = "name must start with a letter and contain only letters, digits and hyphens (max 64)."
  }
}

variable "kafka_version" {
  description = "Apache Kafka version as MSK names it (KRaft metadata mode). kgrag is built and tested against Kafka 4.1."
  type        = string
  default     = "4.1.x.kraft"

  validation {
    condition     = can(regex("^[0-9]+\\.[0-9]+\\.([0-9]+|x)(\\.kraft)?$", var.kafka_version))
    error_message = "kafka_version must look like 4.1.x.kraft or 3.9.x."
  }
}

variable "vpc_id" {
  description = "VPC of the brokers."
  type        = string
}

variable "subnet_ids" {
  description = "Private subnets for the brokers, one per availability zone (2 or 3)."
  type        = list(string)

  validation {
    condition     = length(var.subnet_ids) >= 2 && length(var.subnet_ids) <= 3
    error_message = "MSK needs 2 or 3 client subnets."
  }
}

variable "broker_count" {
  description = "Number of brokers; a multiple of the number of subnets."
  type        = number
  default     = 3

  validation {
    condition     = var.broker_count >= 2 && floor(var.broker_count) == var.broker_count
    error_message = "broker_count must be a whole number >= 2."
  }
}

variable "broker_instance_type" {
  description = "Broker instance type."
  type        = string
  default     = "kafka.m7g.large"

  validation {
    condition     = startswith(var.broker_instance_type, "kafka.")
    error_message = "broker_instance_type must be an MSK instance type (kafka.*)."
  }
}

variable "broker_volume_size_gb" {
  description = "EBS storage per broker in GiB."
  type        = number
  default     = 500

  validation {
    condition     = var.broker_volume_size_gb >= 1 && var.broker_volume_size_gb <= 16384
    error_message = "broker_volume_size_gb must be between 1 and 16384."
  }
}

variable "default_partitions" {
  description = "Partitions of the kgrag topics (documents.changed, documents.deleted, chunks.changed, acl.changed, *.dlq). Consumers per group never exceed it."
  type        = number
  default     = 12

  validation {
    condition     = var.default_partitions >= 1 && var.default_partitions <= 1000
    error_message = "default_partitions must be between 1 and 1000."
  }
}

variable "replication_factor" {
  description = "Default replication factor of new topics (min.insync.replicas is one less, at least 1)."
  type        = number
  default     = 3

  validation {
    condition     = var.replication_factor >= 1 && var.replication_factor <= 5
    error_message = "replication_factor must be between 1 and 5."
  }
}

variable "client_broker_encryption" {
  description = <<-EOT
    Encryption between clients and brokers: TLS (port 9094 only), TLS_PLAINTEXT (both 9094 and 9092) or
    PLAINTEXT. The kgrag contract has only KGRAG_KAFKA_BOOTSTRAP today; a TLS-only cluster needs the
    services' Kafka client to be configured for TLS.
  EOT
  type        = string
  default     = "TLS"

  validation {
    condition     = contains(["TLS", "TLS_PLAINTEXT", "PLAINTEXT"], var.client_broker_encryption)
    error_message = "client_broker_encryption must be TLS, TLS_PLAINTEXT or PLAINTEXT."
  }
}

variable "allowed_security_group_ids" {
  description = "Security groups (e.g. the EKS cluster security group) allowed to reach the brokers."
  type        = list(string)
  default     = []
}

variable "allowed_cidr_blocks" {
  description = "CIDR blocks allowed to reach the brokers."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for c in var.allowed_cidr_blocks : can(cidrhost(c, 0))])
    error_message = "allowed_cidr_blocks must contain valid CIDR blocks."
  }
}

variable "log_retention_days" {
  description = "CloudWatch retention of the broker logs."
  type        = number
  default     = 14
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
