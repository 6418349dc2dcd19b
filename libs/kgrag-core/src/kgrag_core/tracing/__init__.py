"""Query traces and feedback: what produced an answer, as ids, hashes, counts and timings (no document text)."""
