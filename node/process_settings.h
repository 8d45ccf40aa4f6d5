// Process-wide settings for a process whose main job is the node, as `devmgr serve` is. They
// change the whole process (the allocator, Abseil's mutex checks), so the node never applies
// them itself: an agent that embeds the node decides for its own process. docs/PERFORMANCE.md
// has the measurements behind each.
#pragma once

namespace devmgr::node {

// LimitMallocArenas: glibc gives every thread that allocates at once an arena of its own (up to
// 8 per core) and keeps what is freed in each, so the transient buffers of admissions on gRPC's
// threads stay resident long after the work. Two arenas, and a fixed mmap threshold (buffers of
// 1 MiB and more, such as a large checkpoint's bytes, go back to the kernel when freed), keep
// the resident memory near what the heap uses. Smaller buffers, which a node with many claims
// encodes at every write, come from the heap, whose top keeps up to 2 MiB free between the heap
// trimmer's passes: a fresh mapping would be faulted in page by page each time. Does nothing
// when the user tunes malloc (GLIBC_TUNABLES or MALLOC_ARENA_MAX set). Call before any thread
// starts.
void LimitMallocArenas();

// IgnoreLockOrderCycles: Abseil's Mutex (gRPC's locks and ours) checks the order of every
// acquisition against a graph of all mutexes ever locked when Abseil is built without NDEBUG,
// as Debian's package is, and aborts on a cycle. The graph costs memory that grows with the
// number of plugins and is consulted under one global lock. A debugging aid: the tests keep it,
// the daemon turns it off.
void IgnoreLockOrderCycles();

// RaiseOpenFileLimit: the soft limit on open files up to the hard one, as Go's runtime does at
// the start of every Go program, the kubelet among them. Every plugin, driver and PodResources
// client holds a descriptor of the daemon's; at systemd's soft default of 1,024, a client that
// keeps connections open took them all, and admissions and registrations then failed. Nothing
// in the process uses select(), which the soft limit protects.
void RaiseOpenFileLimit();

}  // namespace devmgr::node
