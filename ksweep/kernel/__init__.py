"""Kernel mode: tune a bare __global__ kernel with no harness of your own.

ksweep builds one cubin per config (nvcc -cubin, through the same cache and ptxas
parsing as program mode), and a persistent worker process per GPU loads each cubin,
checks its outputs against a reference on fresh inputs and times it with CUDA events.
"""
