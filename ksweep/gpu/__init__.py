"""What ksweep knows of GPUs, in one place (all pure, the bottom layer): ``limits`` (the
resource limits of each architecture, MAX_<KEY> in expressions), ``peaks`` (peak
throughput per data type and DRAM bandwidth per GPU model), ``occupancy`` (the CUDA
occupancy calculation from the limits) and ``physics`` (the physics gate: the least time a
run's work can take on a GPU's peaks)."""
