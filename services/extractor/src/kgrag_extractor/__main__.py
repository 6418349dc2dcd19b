"""`python -m kgrag_extractor`: tiered extraction of every changed document's chunks (settings from KGRAG_*)."""

from kgrag_core.handlers.composite import CompositeHandler
from kgrag_core.handlers.extractor import ExtractorHandler
from kgrag_core.handlers.protocol import Handler
from kgrag_runtime.distributed import DistributedStores
from kgrag_runtime.extraction import build_extractor, usage_observer
from kgrag_runtime.kafka.metrics import RunnerMetrics
from kgrag_runtime.quality_metrics import ExtractionUsageMetrics, TextGraphMetrics
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.text_graph import build_text_graph_handler
from kgrag_runtime.wiring import build_extraction_llm
from kgrag_runtime.worker import run_worker

SERVICE = "extractor"


def main() -> None:
    settings = KgragSettings()
    metrics = RunnerMetrics(SERVICE)
    usage = ExtractionUsageMetrics(metrics.registry)  # served on the ops port's /metrics with the runner's
    text_graph = TextGraphMetrics(metrics.registry)

    def build(stores: DistributedStores) -> Handler:
        extractor = build_extractor(settings, store=stores.extraction, llm=build_extraction_llm(settings))
        handler = ExtractorHandler(stores.store, extractor, name=SERVICE, on_report=usage_observer(settings, usage))
        if not settings.text_graph:
            return handler
        # The text graph is built from the same chunks.changed stream, in the same consumer group.
        return CompositeHandler(SERVICE, [handler, build_text_graph_handler(settings, stores.store, text_graph)])

    run_worker(SERVICE, build, settings, metrics=metrics)


if __name__ == "__main__":
    main()
