variable "domain_name" {
  description = "OpenSearch domain name (3-28 characters: lowercase letters, digits, hyphens; starts with a letter)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{2,27}$", var.domain_name))
    error_message = "domain_name must be 3-28 characters of lowercase letters, digits and hyphens, starting with a letter."
  }
}

variable "engine_version" {
  description = "Engine version; kgrag is built and tested against OpenSearch 2.19."
  type        = string
  default     = "OpenSearch_2.19"

  validation {
    condition     = can(regex("^OpenSearch_[0-9]+\\.[0-9]+$", var.engine_version))
    error_message = "engine_version must look like OpenSearch_2.19."
  }
}

variable "vpc_id" {
  description = "VPC of the domain."
  type        = string
}

variable "subnet_ids" {
  description = "Private subnets, one per availability zone used (the first instance_count/zone count ones are used)."
  type        = list(string)

  validation {
    condition     = length(var.subnet_ids) >= 1 && length(var.subnet_ids) <= 3
    error_message = "Give 1 to 3 subnets."
  }
}

variable "instance_type" {
  description = "Data node instance type."
  type        = string
  default     = "r7g.large.search"

  validation {
    condition     = endswith(var.instance_type, ".search")
    error_message = "instance_type must be an OpenSearch instance type (*.search)."
  }
}

variable "instance_count" {
  description = "Number of data nodes; a multiple of the number of subnets when zone awareness is on."
  type        = number
  default     = 3

  validation {
    condition     = var.instance_count >= 1 && floor(var.instance_count) == var.instance_count
    error_message = "instance_count must be a whole number >= 1."
  }
}

variable "dedicated_master" {
  description = "Dedicated cluster manager nodes (3 of them) of this type; null for none."
  type        = string
  default     = null
}

variable "volume_size_gb" {
  description = "gp3 EBS volume per data node in GiB."
  type        = number
  default     = 100

  validation {
    condition     = var.volume_size_gb >= 10
    error_message = "volume_size_gb must be at least 10."
  }
}

variable "master_user_name" {
  description = "Fine-grained access control master user (KGRAG_OPENSEARCH_USER)."
  type        = string
  default     = "kgrag"
}

variable "master_user_password" {
  description = "Master user password (KGRAG_OPENSEARCH_PASSWORD); generated when null."
  type        = string
  default     = null
  sensitive   = true

  validation {
    condition     = var.master_user_password == null || length(coalesce(var.master_user_password, "x")) >= 8
    error_message = "master_user_password must be at least 8 characters."
  }
}

variable "allowed_security_group_ids" {
  description = "Security groups (e.g. the EKS cluster security group) allowed to reach the domain on 443."
  type        = list(string)
  default     = []
}

variable "create_service_linked_role" {
  description = "Create the OpenSearch service-linked role (once per account; false if it already exists)."
  type        = bool
  default     = false
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
