output "bucket_name" {
  description = "Bucket name (KGRAG_S3_BUCKET)."
  value       = aws_s3_bucket.this.bucket
}

output "bucket_arn" {
  description = "Bucket ARN."
  value       = aws_s3_bucket.this.arn
}

output "bucket_regional_domain_name" {
  description = "Regional endpoint host of the bucket."
  value       = aws_s3_bucket.this.bucket_regional_domain_name
}

output "region" {
  description = "Region of the bucket."
  value       = data.aws_region.current.region
}

output "kms_key_arn" {
  description = "KMS key encrypting the objects."
  value       = local.kms_key_arn
}

output "app_policy_json" {
  description = "IAM policy granting the kgrag services read/write access (attach it elsewhere if you do not use pod_identity)."
  value       = data.aws_iam_policy_document.app.json
}

output "app_role_arn" {
  description = "IAM role the kgrag pods assume through EKS Pod Identity (null without pod_identity)."
  value       = one(aws_iam_role.app[*].arn)
}
