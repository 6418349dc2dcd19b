variable "identifier" {
  description = "RDS instance identifier (lowercase letters, digits, hyphens)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,62}$", var.identifier)) && !endswith(var.identifier, "-") && !strcontains(var.identifier, "--")
    error_message = "identifier must start with a letter, use lowercase letters, digits and single hyphens, and not end with a hyphen."
  }
}

variable "engine_version" {
  description = "PostgreSQL version (major, or major.minor); kgrag is built and tested against PostgreSQL 17."
  type        = string
  default     = "17"

  validation {
    condition     = can(regex("^1[7-9](\\.[0-9]+)?$", var.engine_version))
    error_message = "engine_version must be PostgreSQL 17 or later, e.g. \"17\" or \"17.6\"."
  }
}

variable "instance_class" {
  description = "DB instance class."
  type        = string
  default     = "db.r7g.large"

  validation {
    condition     = startswith(var.instance_class, "db.")
    error_message = "instance_class must be an RDS class (db.*)."
  }
}

variable "allocated_storage_gb" {
  description = "Initial gp3 storage in GiB."
  type        = number
  default     = 100

  validation {
    condition     = var.allocated_storage_gb >= 20
    error_message = "allocated_storage_gb must be at least 20."
  }
}

variable "max_allocated_storage_gb" {
  description = "Upper bound for storage autoscaling in GiB (0 disables it)."
  type        = number
  default     = 1000
}

variable "database_name" {
  description = "Database created at launch."
  type        = string
  default     = "kgrag"

  validation {
    condition     = can(regex("^[a-zA-Z_][a-zA-Z0-9_]{0,62}$", var.database_name))
    error_message = "database_name must be a valid PostgreSQL identifier."
  }
}

variable "username" {
  description = "Master user name."
  type        = string
  default     = "kgrag"

  validation {
    condition     = can(regex("^[a-zA-Z][a-zA-Z0-9_]{0,62}$", var.username)) && !contains(["admin", "postgres", "rdsadmin"], var.username)
    error_message = "username must be a valid identifier and not a reserved name."
  }
}

variable "vpc_id" {
  description = "VPC of the instance."
  type        = string
}

variable "subnet_ids" {
  description = "Private subnets for the DB subnet group (two or more availability zones)."
  type        = list(string)

  validation {
    condition     = length(var.subnet_ids) >= 2
    error_message = "A DB subnet group needs at least two subnets."
  }
}

variable "allowed_security_group_ids" {
  description = "Security groups (e.g. the EKS cluster security group) allowed to reach PostgreSQL."
  type        = list(string)
  default     = []
}

variable "multi_az" {
  description = "Standby in a second availability zone (synchronous replication, automatic failover)."
  type        = bool
  default     = true
}

variable "backup_retention_days" {
  description = "Automated backups and point-in-time recovery window, in days. PostgreSQL is kgrag's source of truth."
  type        = number
  default     = 14

  validation {
    condition     = var.backup_retention_days >= 1 && var.backup_retention_days <= 35
    error_message = "backup_retention_days must be between 1 and 35 (PITR needs at least 1)."
  }
}

variable "deletion_protection" {
  description = "Refuse to delete the instance (turn off explicitly before destroying)."
  type        = bool
  default     = true
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
