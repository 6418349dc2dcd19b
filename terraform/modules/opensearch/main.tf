# Amazon OpenSearch Service domain in the VPC: encrypted at rest and in transit, HTTPS only,
# fine-grained access control with an internal master user (the kgrag services' credentials).

data "aws_region" "current" {}
data "aws_caller_identity" "current" {}
data "aws_partition" "current" {}

resource "random_password" "master" {
  count            = var.master_user_password == null ? 1 : 0
  length           = 32
  special          = true
  override_special = "-_.~"
  min_upper        = 1
  min_lower        = 1
  min_numeric      = 1
  min_special      = 1
}

locals {
  master_password = var.master_user_password != null ? var.master_user_password : random_password.master[0].result
  zone_count      = min(length(var.subnet_ids), 3)
  zone_aware      = local.zone_count > 1
}

resource "aws_iam_service_linked_role" "opensearch" {
  count            = var.create_service_linked_role ? 1 : 0
  aws_service_name = "opensearchservice.amazonaws.com"
}

resource "aws_security_group" "this" {
  name        = "${var.domain_name}-opensearch"
  description = "OpenSearch domain ${var.domain_name}"
  vpc_id      = var.vpc_id
  tags        = merge(var.tags, { Name = "${var.domain_name}-opensearch" })
}

resource "aws_vpc_security_group_ingress_rule" "https" {
  for_each = toset(var.allowed_security_group_ids)

  security_group_id            = aws_security_group.this.id
  referenced_security_group_id = each.value
  ip_protocol                  = "tcp"
  from_port                    = 443
  to_port                      = 443
  description                  = "HTTPS from kgrag"
}

resource "aws_cloudwatch_log_group" "this" {
  name              = "/aws/opensearch/${var.domain_name}"
  retention_in_days = 14
  tags              = var.tags
}

data "aws_iam_policy_document" "logs" {
  statement {
    actions   = ["logs:PutLogEvents", "logs:CreateLogStream"]
    resources = ["${aws_cloudwatch_log_group.this.arn}:*"]
    principals {
      type        = "Service"
      identifiers = ["es.amazonaws.com"]
    }
  }
}

resource "aws_cloudwatch_log_resource_policy" "this" {
  policy_name     = "${var.domain_name}-opensearch-logs"
  policy_document = data.aws_iam_policy_document.logs.json
}

data "aws_iam_policy_document" "access" {
  # Access is decided by fine-grained access control; the network boundary is the security group.
  statement {
    actions   = ["es:ESHttp*"]
    resources = ["arn:${data.aws_partition.current.partition}:es:${data.aws_region.current.region}:${data.aws_caller_identity.current.account_id}:domain/${var.domain_name}/*"]
    principals {
      type        = "AWS"
      identifiers = ["*"]
    }
  }
}

resource "aws_opensearch_domain" "this" {
  domain_name     = var.domain_name
  engine_version  = var.engine_version
  access_policies = data.aws_iam_policy_document.access.json

  cluster_config {
    instance_type            = var.instance_type
    instance_count           = var.instance_count
    zone_awareness_enabled   = local.zone_aware
    dedicated_master_enabled = var.dedicated_master != null
    dedicated_master_type    = var.dedicated_master
    dedicated_master_count   = var.dedicated_master != null ? 3 : null

    dynamic "zone_awareness_config" {
      for_each = local.zone_aware ? [1] : []
      content {
        availability_zone_count = local.zone_count
      }
    }
  }

  ebs_options {
    ebs_enabled = true
    volume_type = "gp3"
    volume_size = var.volume_size_gb
  }

  vpc_options {
    subnet_ids         = slice(var.subnet_ids, 0, local.zone_count)
    security_group_ids = [aws_security_group.this.id]
  }

  encrypt_at_rest {
    enabled = true
  }

  node_to_node_encryption {
    enabled = true
  }

  domain_endpoint_options {
    enforce_https       = true
    tls_security_policy = "Policy-Min-TLS-1-2-2019-07"
  }

  advanced_security_options {
    enabled                        = true
    internal_user_database_enabled = true
    master_user_options {
      master_user_name     = var.master_user_name
      master_user_password = local.master_password
    }
  }

  log_publishing_options {
    log_type                 = "ES_APPLICATION_LOGS"
    cloudwatch_log_group_arn = aws_cloudwatch_log_group.this.arn
  }

  tags = var.tags

  lifecycle {
    precondition {
      condition     = var.instance_count % local.zone_count == 0
      error_message = "instance_count must be a multiple of the number of subnets (availability zones)."
    }
  }

  depends_on = [aws_iam_service_linked_role.opensearch, aws_cloudwatch_log_resource_policy.this]
}
