terraform {
  required_version = ">= 1.6.0"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 6.0"
    }
    helm = {
      source  = "hashicorp/helm"
      version = "~> 3.0"
    }
    kubernetes = {
      source  = "hashicorp/kubernetes"
      version = "~> 2.38"
    }
    random = {
      source  = "hashicorp/random"
      version = "~> 3.7"
    }
  }

  # No backend here on purpose (validation runs with -backend=false). For real use add one, e.g.
  #   backend "s3" { bucket = "my-tf-state" key = "kgrag/example.tfstate" region = "eu-west-1" use_lockfile = true }
}
