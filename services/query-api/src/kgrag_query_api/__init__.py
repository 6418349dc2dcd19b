"""kgrag_query_api."""
