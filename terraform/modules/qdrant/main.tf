# Qdrant server (vector projection) in the cluster from the official chart: persistent volumes,
# API key, a PodDisruptionBudget and distributed mode when more than one node runs.

resource "random_password" "api_key" {
  count   = var.api_key == null ? 1 : 0
  length  = 48
  special = false
}

locals {
  api_key = var.api_key != null ? var.api_key : random_password.api_key[0].result
}

resource "helm_release" "qdrant" {
  name             = var.release_name
  namespace        = var.namespace
  create_namespace = true
  repository       = var.chart_repository
  chart            = "qdrant"
  version          = var.chart_version
  wait             = true
  timeout          = 900
  atomic           = true

  values = [yamlencode({
    replicaCount = var.replicas
    image = {
      tag = var.image_tag
    }
    config = {
      cluster = {
        enabled = var.replicas > 1
      }
      telemetry_disabled = true
    }
    persistence = merge(
      { size = var.storage_size },
      var.storage_class == null ? {} : { storageClassName = var.storage_class },
    )
    resources    = var.resources
    nodeSelector = var.node_selector
    podDisruptionBudget = {
      enabled        = var.replicas > 1
      maxUnavailable = 1
    }
  })]

  set_sensitive = [
    {
      name  = "apiKey"
      value = local.api_key
    },
  ]
}
