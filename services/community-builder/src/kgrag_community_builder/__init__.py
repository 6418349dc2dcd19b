"""community-builder: keeps communities over the entity graph current (docs/communities.md)."""
