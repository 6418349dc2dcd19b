variable "region" {
  description = "AWS region of the whole deployment."
  type        = string
  default     = "eu-west-1"

  validation {
    condition     = can(regex("^[a-z]{2}(-gov)?-[a-z]+-[0-9]$", var.region))
    error_message = "region must be an AWS region name such as eu-west-1."
  }
}

variable "name" {
  description = "Name prefix of every resource (and the EKS cluster name)."
  type        = string
  default     = "kgrag-example"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{2,20}$", var.name))
    error_message = "name must be 3-21 characters of lowercase letters, digits and hyphens, starting with a letter."
  }
}

variable "vpc_id" {
  description = "Existing VPC to deploy into."
  type        = string

  validation {
    condition     = can(regex("^vpc-[0-9a-f]+$", var.vpc_id))
    error_message = "vpc_id must be a VPC ID (vpc-...)."
  }
}

variable "private_subnet_ids" {
  description = "Private subnets in three availability zones (EKS nodes and every data store)."
  type        = list(string)

  validation {
    condition     = length(var.private_subnet_ids) == 3
    error_message = "Give exactly three private subnets, one per availability zone."
  }
}

variable "kubernetes_version" {
  description = "EKS Kubernetes version."
  type        = string
  default     = "1.33"
}

variable "node_pools" {
  description = "EKS managed node groups (see modules/kubernetes-cluster)."
  type = map(object({
    instance_types = list(string)
    capacity_type  = optional(string, "ON_DEMAND")
    min_size       = number
    max_size       = number
    desired_size   = number
    disk_size_gb   = optional(number, 50)
    labels         = optional(map(string), {})
  }))
  default = {
    default = {
      instance_types = ["m7i.xlarge"]
      min_size       = 3
      max_size       = 9
      desired_size   = 3
    }
  }
}

variable "api_public_access_cidrs" {
  description = "CIDRs allowed to reach the Kubernetes API publicly; empty keeps the endpoint private."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for c in var.api_public_access_cidrs : can(cidrhost(c, 0))])
    error_message = "api_public_access_cidrs must contain valid CIDR blocks."
  }
}

variable "kafka_client_broker_encryption" {
  description = <<-EOT
    MSK client encryption. TLS_PLAINTEXT keeps a plaintext listener (inside the VPC, security-group
    restricted) because the kgrag contract has no Kafka TLS setting yet; switch to TLS when it has.
  EOT
  type        = string
  default     = "TLS_PLAINTEXT"

  validation {
    condition     = contains(["TLS", "TLS_PLAINTEXT"], var.kafka_client_broker_encryption)
    error_message = "kafka_client_broker_encryption must be TLS or TLS_PLAINTEXT."
  }
}

variable "topic_partitions" {
  description = "Partitions per kgrag topic; the chart keeps every consumer's replicas and HPA maximum at or below it."
  type        = number
  default     = 12

  validation {
    condition     = var.topic_partitions >= 1 && var.topic_partitions <= 1000
    error_message = "topic_partitions must be between 1 and 1000."
  }
}

variable "s3_bucket_name" {
  description = "Bucket for raw documents; null derives one from name, region and account."
  type        = string
  default     = null
}

variable "neo4j" {
  description = <<-EOT
    Graph store. in_cluster = true installs Neo4j 5.26 Community (one instance) from its chart into the
    cluster; false uses an external server at uri (e.g. a managed Neo4j) with user and neo4j_password.
  EOT
  type = object({
    in_cluster    = bool
    chart_version = optional(string, "5.26.20")
    storage_size  = optional(string, "50Gi")
    uri           = optional(string)
    user          = optional(string, "neo4j")
  })
  default = { in_cluster = true }

  validation {
    condition     = var.neo4j.in_cluster || can(regex("^(bolt|neo4j)(\\+s|\\+ssc)?://", var.neo4j.uri))
    error_message = "With neo4j.in_cluster = false, neo4j.uri must be a bolt:// or neo4j:// URI."
  }
}

variable "neo4j_password" {
  description = "Password of the external Neo4j (only with neo4j.in_cluster = false; generated otherwise)."
  type        = string
  default     = null
  sensitive   = true
}

variable "kgrag_image" {
  description = "kgrag image (built from the repository's Dockerfile and pushed to your registry)."
  type = object({
    repository = string
    tag        = string
  })

  validation {
    condition     = length(var.kgrag_image.repository) > 0 && length(var.kgrag_image.tag) > 0
    error_message = "kgrag_image needs a repository and a tag."
  }
}

variable "auth" {
  description = "Token issuer and audience the HTTP services accept (KGRAG_AUTH_ISSUER / KGRAG_AUTH_AUDIENCE)."
  type = object({
    issuer   = string
    audience = string
  })
  default = {
    issuer   = "kgrag"
    audience = "kgrag"
  }
}

variable "llm" {
  description = "Optional OpenAI-compatible chat endpoint for generated answers (extractive answers without it)."
  type = object({
    base_url = optional(string)
    model    = optional(string)
  })
  default = {}
}

variable "llm_api_key" {
  description = "API key of the LLM endpoint (KGRAG_LLM_API_KEY)."
  type        = string
  default     = null
  sensitive   = true
}

variable "production" {
  description = "Production safety switches: deletion protection on RDS, no force-destroy on the bucket."
  type        = bool
  default     = true
}

variable "tags" {
  description = "Tags added to every AWS resource."
  type        = map(string)
  default     = {}
}
