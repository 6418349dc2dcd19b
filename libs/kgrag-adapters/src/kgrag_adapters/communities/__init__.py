"""Community detection libraries behind `kgrag_core.communities.ports.CommunityDetector`."""
