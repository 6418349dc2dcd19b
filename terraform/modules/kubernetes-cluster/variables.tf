variable "name" {
  description = "Cluster name; also the prefix of its IAM roles and KMS alias."
  type        = string

  validation {
    condition     = can(regex("^[a-zA-Z][a-zA-Z0-9-]{1,62}$", var.name))
    error_message = "name must start with a letter and contain only letters, digits and hyphens (2-63 characters)."
  }
}

variable "kubernetes_version" {
  description = "EKS Kubernetes minor version, e.g. \"1.33\". The kgrag chart needs 1.27 or later."
  type        = string
  default     = "1.33"

  validation {
    condition     = can(regex("^1\\.(2[7-9]|[3-9][0-9])$", var.kubernetes_version))
    error_message = "kubernetes_version must look like 1.NN with NN >= 27."
  }
}

variable "vpc_id" {
  description = "VPC the cluster runs in."
  type        = string

  validation {
    condition     = can(regex("^vpc-[0-9a-f]+$", var.vpc_id))
    error_message = "vpc_id must be a VPC ID (vpc-...)."
  }
}

variable "subnet_ids" {
  description = "Private subnets (at least two, in different availability zones) for the control plane ENIs and the nodes."
  type        = list(string)

  validation {
    condition     = length(var.subnet_ids) >= 2 && alltrue([for s in var.subnet_ids : can(regex("^subnet-[0-9a-f]+$", s))])
    error_message = "subnet_ids needs at least two subnet IDs (subnet-...)."
  }
}

variable "endpoint_public_access" {
  description = "Expose the Kubernetes API endpoint publicly (restricted to public_access_cidrs). The private endpoint is always on."
  type        = bool
  default     = false
}

variable "public_access_cidrs" {
  description = "CIDR blocks allowed to reach the public API endpoint when endpoint_public_access is true."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for c in var.public_access_cidrs : can(cidrhost(c, 0))])
    error_message = "public_access_cidrs must contain valid CIDR blocks."
  }
}

variable "node_pools" {
  description = <<-EOT
    Managed node groups, keyed by pool name. Size the default pool for the kgrag services
    (query-api, connector-gateway, three consumers) plus in-cluster Qdrant (and Neo4j if enabled).
  EOT
  type = map(object({
    instance_types = list(string)
    capacity_type  = optional(string, "ON_DEMAND")
    ami_type       = optional(string, "AL2023_x86_64_STANDARD")
    min_size       = number
    max_size       = number
    desired_size   = number
    disk_size_gb   = optional(number, 50)
    labels         = optional(map(string), {})
    taints = optional(list(object({
      key    = string
      value  = optional(string)
      effect = string
    })), [])
  }))
  default = {
    default = {
      instance_types = ["m7i.xlarge"]
      min_size       = 3
      max_size       = 9
      desired_size   = 3
    }
  }

  validation {
    condition     = length(var.node_pools) > 0
    error_message = "node_pools needs at least one pool."
  }

  validation {
    condition = alltrue([
      for p in values(var.node_pools) : p.min_size >= 0 && p.min_size <= p.desired_size && p.desired_size <= p.max_size && p.max_size >= 1
    ])
    error_message = "Every node pool needs 0 <= min_size <= desired_size <= max_size and max_size >= 1."
  }

  validation {
    condition     = alltrue([for p in values(var.node_pools) : contains(["ON_DEMAND", "SPOT"], p.capacity_type)])
    error_message = "capacity_type must be ON_DEMAND or SPOT."
  }

  validation {
    condition = alltrue(flatten([
      for p in values(var.node_pools) : [for t in p.taints : contains(["NO_SCHEDULE", "NO_EXECUTE", "PREFER_NO_SCHEDULE"], t.effect)]
    ]))
    error_message = "Taint effect must be NO_SCHEDULE, NO_EXECUTE or PREFER_NO_SCHEDULE."
  }

  validation {
    condition     = alltrue([for p in values(var.node_pools) : length(p.instance_types) > 0 && p.disk_size_gb >= 20])
    error_message = "Every node pool needs at least one instance type and disk_size_gb >= 20."
  }
}

variable "addons" {
  description = "EKS add-ons to install (name => version; null picks the default version for the cluster)."
  type        = map(string)
  default = {
    "vpc-cni"                = null
    "coredns"                = null
    "kube-proxy"             = null
    "eks-pod-identity-agent" = null
    "aws-ebs-csi-driver"     = null
  }
}

variable "addon_configuration_values" {
  description = "JSON configuration per add-on (name => JSON). The default lets the VPC CNI enforce NetworkPolicies (the kgrag chart's networkPolicy.enabled)."
  type        = map(string)
  default = {
    "vpc-cni" = "{\"enableNetworkPolicy\":\"true\"}"
  }

  validation {
    condition     = alltrue([for v in values(var.addon_configuration_values) : can(jsondecode(v))])
    error_message = "Every addon_configuration_values entry must be a JSON document."
  }
}

variable "cluster_log_types" {
  description = "Control plane log types sent to CloudWatch."
  type        = list(string)
  default     = ["api", "audit", "authenticator"]

  validation {
    condition     = alltrue([for t in var.cluster_log_types : contains(["api", "audit", "authenticator", "controllerManager", "scheduler"], t)])
    error_message = "cluster_log_types may contain api, audit, authenticator, controllerManager and scheduler."
  }
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
