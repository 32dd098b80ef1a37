#!/usr/bin/env python3
"""memory-spill: an opportunistic job's memory moves to the host when a
production job grows, and comes back with its data intact.

Memory oversubscription (design.md roadmap 7, issue 11) is not built yet:
the interposer refuses an allocation over the limit but never spills. Until
it lands this check reports "not-built"; when it does, this file becomes
the check (an opportunistic gpushare-workload --alloc managed holding most
of the GPU, a production one growing past what is left, both checksums
verified).
"""
import gpucheck

ctx = gpucheck.Context("memory-spill")
ctx.finish("not-built", "memory spill to host is not built yet (design.md roadmap 7)")
