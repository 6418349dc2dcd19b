variable "bucket_name" {
  description = "S3 bucket name (globally unique; KGRAG_S3_BUCKET)."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.bucket_name)) && !strcontains(var.bucket_name, "..")
    error_message = "bucket_name must be 3-63 characters of lowercase letters, digits, dots and hyphens."
  }
}

variable "kms_key_arn" {
  description = "KMS key for SSE-KMS; null uses a key created here."
  type        = string
  default     = null
}

variable "noncurrent_version_expiration_days" {
  description = "Days a replaced or deleted object version is kept before it is removed for good (deletion compliance bound)."
  type        = number
  default     = 30

  validation {
    condition     = var.noncurrent_version_expiration_days >= 1
    error_message = "noncurrent_version_expiration_days must be at least 1."
  }
}

variable "transition_to_ia_days" {
  description = "Days after which current objects move to STANDARD_IA (null: never)."
  type        = number
  default     = 90

  validation {
    condition     = var.transition_to_ia_days == null || coalesce(var.transition_to_ia_days, 30) >= 30
    error_message = "S3 requires at least 30 days before a transition to STANDARD_IA."
  }
}

variable "force_destroy" {
  description = "Allow destroying a non-empty bucket (never in production)."
  type        = bool
  default     = false
}

variable "pod_identity" {
  description = "Give these Kubernetes service accounts read/write access through EKS Pod Identity (null: no role)."
  type = object({
    cluster_name     = string
    namespace        = string
    service_accounts = list(string)
  })
  default = null
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
