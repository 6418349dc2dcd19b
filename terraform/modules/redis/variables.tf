variable "name" {
  description = "Replication group ID (lowercase letters, digits, hyphens; max 40)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,39}$", var.name)) && !endswith(var.name, "-") && !strcontains(var.name, "--")
    error_message = "name must start with a letter, use lowercase letters, digits and single hyphens (max 40), and not end with a hyphen."
  }
}

variable "engine" {
  description = "redis (Redis OSS) or valkey (its protocol-compatible successor on ElastiCache)."
  type        = string
  default     = "redis"

  validation {
    condition     = contains(["redis", "valkey"], var.engine)
    error_message = "engine must be redis or valkey."
  }
}

variable "engine_version" {
  description = <<-EOT
    Engine version. kgrag runs Redis 7.4 elsewhere; ElastiCache offers Redis OSS up to 7.1 and Valkey
    7.2/8.x, all of which serve kgrag's cache (plain GET/SET/EXPIRE/DEL and SCAN).
  EOT
  type        = string
  default     = "7.1"

  validation {
    condition     = can(regex("^[0-9]+\\.[0-9]+$", var.engine_version))
    error_message = "engine_version must look like 7.1."
  }
}

variable "node_type" {
  description = "Cache node type."
  type        = string
  default     = "cache.r7g.large"

  validation {
    condition     = startswith(var.node_type, "cache.")
    error_message = "node_type must be an ElastiCache node type (cache.*)."
  }
}

variable "replicas" {
  description = "Read replicas besides the primary (>= 1 enables automatic failover and Multi-AZ)."
  type        = number
  default     = 1

  validation {
    condition     = var.replicas >= 0 && var.replicas <= 5
    error_message = "replicas must be between 0 and 5."
  }
}

variable "vpc_id" {
  description = "VPC of the cache."
  type        = string
}

variable "subnet_ids" {
  description = "Private subnets for the cache subnet group."
  type        = list(string)

  validation {
    condition     = length(var.subnet_ids) >= 1
    error_message = "Give at least one subnet."
  }
}

variable "allowed_security_group_ids" {
  description = "Security groups (e.g. the EKS cluster security group) allowed to reach the cache."
  type        = list(string)
  default     = []
}

variable "snapshot_retention_days" {
  description = "Daily snapshots kept (0: none; the cache is rebuildable, so this is optional)."
  type        = number
  default     = 1
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
