variable "release_name" {
  description = "Helm release name; also the Service name (it contains \"qdrant\", so the chart uses it as is)."
  type        = string
  default     = "qdrant"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,52}$", var.release_name)) && strcontains(var.release_name, "qdrant")
    error_message = "release_name must be a DNS label (max 53) that contains \"qdrant\"."
  }
}

variable "namespace" {
  description = "Namespace to install into (created when missing)."
  type        = string
  default     = "qdrant"
}

variable "chart_repository" {
  description = "Helm repository of the official Qdrant chart (or your mirror of it)."
  type        = string
  default     = "https://qdrant.github.io/qdrant-helm"
}

variable "chart_version" {
  description = "Qdrant chart version."
  type        = string
  default     = "1.15.5"
}

variable "image_tag" {
  description = "Qdrant server image tag; kgrag is built and tested against Qdrant 1.15."
  type        = string
  default     = "v1.15.5"

  validation {
    condition     = can(regex("^v1\\.[0-9]+\\.[0-9]+$", var.image_tag))
    error_message = "image_tag must look like v1.15.5."
  }
}

variable "replicas" {
  description = "Qdrant nodes. More than one turns on distributed mode (use collection replication_factor >= 2 for HA)."
  type        = number
  default     = 3

  validation {
    condition     = var.replicas >= 1 && floor(var.replicas) == var.replicas
    error_message = "replicas must be a whole number >= 1."
  }
}

variable "storage_size" {
  description = "PersistentVolume size per node."
  type        = string
  default     = "100Gi"

  validation {
    condition     = can(regex("^[0-9]+(Mi|Gi|Ti)$", var.storage_size))
    error_message = "storage_size must be a Kubernetes quantity like 100Gi."
  }
}

variable "storage_class" {
  description = "StorageClass of the volumes (null: the cluster default)."
  type        = string
  default     = null
}

variable "resources" {
  description = "Container resources of each Qdrant node."
  type = object({
    requests = map(string)
    limits   = map(string)
  })
  default = {
    requests = { cpu = "1", memory = "4Gi" }
    limits   = { memory = "8Gi" }
  }
}

variable "api_key" {
  description = "API key clients must send (KGRAG_QDRANT_API_KEY); generated when null."
  type        = string
  default     = null
  sensitive   = true
}

variable "node_selector" {
  description = "Node labels the Qdrant pods must match."
  type        = map(string)
  default     = {}
}
