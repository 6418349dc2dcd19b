# kgrag on AWS: EKS + MSK + OpenSearch + RDS PostgreSQL + ElastiCache + S3, Qdrant (and optionally
# Neo4j) in the cluster, and the kgrag chart wired to all of them. Credentials go into one Kubernetes
# Secret that the chart uses as secrets.existingSecret; S3 access comes from EKS Pod Identity.

data "aws_caller_identity" "current" {}

locals {
  tags = merge({ project = "kgrag", environment = var.name, managed-by = "terraform" }, var.tags)

  namespace     = "kgrag"
  release       = "kgrag"
  bucket_name   = coalesce(var.s3_bucket_name, "${var.name}-${var.region}-${data.aws_caller_identity.current.account_id}-docs")
  data_store_sg = [module.cluster.cluster_security_group_id]

  neo4j_password = var.neo4j.in_cluster ? random_password.neo4j[0].result : var.neo4j_password
  neo4j_uri      = var.neo4j.in_cluster ? "bolt://neo4j.${local.namespace}.svc.cluster.local:7687" : var.neo4j.uri
}

# ---------------------------------------------------------------------------------------------------
# Platform
# ---------------------------------------------------------------------------------------------------
module "cluster" {
  source = "../../modules/kubernetes-cluster"

  name                   = var.name
  kubernetes_version     = var.kubernetes_version
  vpc_id                 = var.vpc_id
  subnet_ids             = var.private_subnet_ids
  endpoint_public_access = length(var.api_public_access_cidrs) > 0
  public_access_cidrs    = var.api_public_access_cidrs
  node_pools             = var.node_pools
  tags                   = local.tags
}

module "kafka" {
  source = "../../modules/kafka"

  name                       = "${var.name}-kafka"
  vpc_id                     = var.vpc_id
  subnet_ids                 = var.private_subnet_ids
  broker_count               = 3
  default_partitions         = var.topic_partitions
  replication_factor         = 3
  client_broker_encryption   = var.kafka_client_broker_encryption
  allowed_security_group_ids = local.data_store_sg
  tags                       = local.tags
}

module "opensearch" {
  source = "../../modules/opensearch"

  domain_name                = "${var.name}-search"
  vpc_id                     = var.vpc_id
  subnet_ids                 = var.private_subnet_ids
  instance_count             = 3
  allowed_security_group_ids = local.data_store_sg
  tags                       = local.tags
}

module "postgres" {
  source = "../../modules/postgres"

  identifier                 = "${var.name}-pg"
  vpc_id                     = var.vpc_id
  subnet_ids                 = var.private_subnet_ids
  allowed_security_group_ids = local.data_store_sg
  deletion_protection        = var.production
  tags                       = local.tags
}

module "redis" {
  source = "../../modules/redis"

  name                       = "${var.name}-cache"
  vpc_id                     = var.vpc_id
  subnet_ids                 = var.private_subnet_ids
  allowed_security_group_ids = local.data_store_sg
  tags                       = local.tags
}

module "object_storage" {
  source = "../../modules/object-storage"

  bucket_name   = local.bucket_name
  force_destroy = !var.production
  pod_identity = {
    cluster_name = module.cluster.cluster_name
    namespace    = local.namespace
    # the services' ServiceAccount and the init hook's (see helm/kgrag/templates/migrations-job.yaml)
    service_accounts = [local.release, "${local.release}-init"]
  }
  tags = local.tags
}

module "qdrant" {
  source = "../../modules/qdrant"

  namespace = local.namespace
  replicas  = 3

  depends_on = [module.cluster, kubernetes_namespace_v1.kgrag]
}

# ---------------------------------------------------------------------------------------------------
# Neo4j 5.26 Community in the cluster (optional)
# ---------------------------------------------------------------------------------------------------
resource "random_password" "neo4j" {
  count   = var.neo4j.in_cluster ? 1 : 0
  length  = 32
  special = false
}

resource "helm_release" "neo4j" {
  count = var.neo4j.in_cluster ? 1 : 0

  name       = "neo4j"
  namespace  = kubernetes_namespace_v1.kgrag.metadata[0].name
  repository = "https://helm.neo4j.com/neo4j"
  chart      = "neo4j"
  version    = var.neo4j.chart_version
  wait       = true
  timeout    = 900

  values = [yamlencode({
    neo4j = {
      name    = "neo4j"
      edition = "community"
      resources = {
        cpu    = "1"
        memory = "4Gi"
      }
    }
    volumes = {
      data = {
        mode = "defaultStorageClass"
        defaultStorageClass = {
          requests = { storage = var.neo4j.storage_size }
        }
      }
    }
    services = {
      # no public LoadBalancer: the kgrag services reach it through the ClusterIP service
      neo4j = { enabled = false }
    }
  })]

  set_sensitive = [
    {
      name  = "neo4j.password"
      value = local.neo4j_password
    },
  ]

  depends_on = [module.cluster]
}

# ---------------------------------------------------------------------------------------------------
# kgrag
# ---------------------------------------------------------------------------------------------------
resource "kubernetes_namespace_v1" "kgrag" {
  metadata {
    name = local.namespace
    labels = {
      "pod-security.kubernetes.io/enforce" = "baseline"
      "pod-security.kubernetes.io/warn"    = "restricted"
    }
  }

  depends_on = [module.cluster]
}

resource "random_password" "auth_secret" {
  length  = 64
  special = false
}

resource "kubernetes_secret_v1" "kgrag" {
  metadata {
    name      = "${local.release}-engines"
    namespace = kubernetes_namespace_v1.kgrag.metadata[0].name
  }

  type = "Opaque"

  data = merge(
    {
      KGRAG_PG_DSN              = module.postgres.dsn
      KGRAG_OPENSEARCH_USER     = module.opensearch.master_user_name
      KGRAG_OPENSEARCH_PASSWORD = module.opensearch.master_user_password
      KGRAG_QDRANT_API_KEY      = module.qdrant.api_key
      KGRAG_NEO4J_USER          = var.neo4j.user
      KGRAG_NEO4J_PASSWORD      = local.neo4j_password
      KGRAG_REDIS_URL           = module.redis.url
      KGRAG_AUTH_SECRET         = random_password.auth_secret.result
    },
    var.llm_api_key == null ? {} : { KGRAG_LLM_API_KEY = var.llm_api_key },
  )

  lifecycle {
    precondition {
      condition     = var.neo4j.in_cluster || (var.neo4j.uri != null && var.neo4j_password != null)
      error_message = "With neo4j.in_cluster = false, set neo4j.uri and neo4j_password."
    }
  }
}

locals {
  kgrag_values = {
    image = {
      repository = var.kgrag_image.repository
      tag        = var.kgrag_image.tag
    }
    serviceAccount = {
      create = true
      name   = local.release
    }
    config = {
      kafka = {
        bootstrap         = module.kafka.bootstrap
        topicPartitions   = module.kafka.default_partitions
        replicationFactor = module.kafka.replication_factor
      }
      opensearch = { url = module.opensearch.endpoint }
      qdrant     = { url = module.qdrant.url }
      neo4j      = { uri = local.neo4j_uri }
      s3 = {
        endpoint = ""
        bucket   = module.object_storage.bucket_name
        region   = module.object_storage.region
      }
      auth = {
        issuer   = var.auth.issuer
        audience = var.auth.audience
      }
      llm = {
        baseUrl = var.llm.base_url != null ? var.llm.base_url : ""
        model   = var.llm.model != null ? var.llm.model : ""
      }
    }
    secrets = {
      existingSecret = kubernetes_secret_v1.kgrag.metadata[0].name
    }
  }
}

resource "helm_release" "kgrag" {
  name      = local.release
  namespace = kubernetes_namespace_v1.kgrag.metadata[0].name
  chart     = "${path.module}/../../../helm/kgrag"
  wait      = true
  timeout   = 1200
  atomic    = true

  values = [yamlencode(local.kgrag_values)]

  depends_on = [
    module.qdrant,
    helm_release.neo4j,
    module.object_storage,
    kubernetes_secret_v1.kgrag,
  ]
}
