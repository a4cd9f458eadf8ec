// The process allocator's settings (docs/scale.md, "Allocator"), compiled into every executable that links
// paraproof_core when jemalloc is linked (not under the sanitizers, which bring their own allocator).
// Verification builds and drops millions of small nodes and graph copies: jemalloc's size classes and
// transparent huge pages take about a quarter off L3far (fewer page faults, no per-page zeroing storms).
// jemalloc reads this symbol once, at its first allocation.
extern "C" {
[[gnu::used]] const char* malloc_conf = "thp:always,metadata_thp:auto";
}
