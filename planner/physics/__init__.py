"""Cost physics: memory, compute, energy, reliability, storage. Each formula cites its source."""
