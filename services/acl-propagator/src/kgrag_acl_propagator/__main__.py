"""`python -m kgrag_acl_propagator`: apply acl.changed events, failing closed (settings from KGRAG_*)."""

from kgrag_core.handlers.acl_propagator import AclPropagatorHandler
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.worker import run_worker

SERVICE = "acl-propagator"


def main() -> None:
    settings = KgragSettings()
    run_worker(SERVICE, lambda s: AclPropagatorHandler(s.indexer(settings), name=SERVICE), settings)


if __name__ == "__main__":
    main()
