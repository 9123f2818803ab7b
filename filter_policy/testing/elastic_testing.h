// Test-only fault injection for ElasticFilter's incremental migration and
// its chunked copies' hand-off to writers. Compiled only
// into the test builds of the library (DLCBF_TESTING); never installed.
//
// During an incremental migration (ElasticOptions::incremental_migration)
// every insert or erase the dlCBF accepts is mirrored into the ABF being
// built when its block has already been copied; without that, the published
// ABF would lack those keys (false negatives after the switch). The tests
// in tests/elastic_filter_test.cc must be able to catch that; their
// negative control sets the fault below to prove it. Never set outside
// tests.
#pragma once

#ifndef DLCBF_TESTING
#error "elastic_testing.h is for test builds (DLCBF_TESTING) only: shipped libraries carry no hooks"
#endif

#include <cstdint>

namespace dlcbf {
namespace internal {

// Process-wide; thread-safe (an atomic). true: ElasticFilter skips the
// mirroring of inserts and erases during incremental migrations.
void SetElasticSkipMirrorForTesting(bool skip);
// Process-wide; thread-safe (atomics). on = false: a chunked copy
// (SerializeKernelInChunks, CopyChangedKernelBlocks) takes the writers' lock
// back between chunks without letting waiting writers in first
// (ElasticFilter::LetWaitingWritersIn), as before that hand-off existed.
// ElasticChunkedCopyConcurrency.AWaitingWriterGoesBeforeTheNextChunk run
// with it off fails (10 runs of 10, by hand, 2026-11-28); not every run
// would, so no suite runs it off.
// max_micros > 0: the hand-off waits up to that long instead of
// ElasticFilter::kChunkHandoffMicros (a test on a loaded machine).
void SetElasticChunkHandoffForTesting(bool on, uint64_t max_micros = 0);
// Called by a writer that found the writers' lock taken, once it counts
// itself as waiting and before it blocks (nullptr: none).
void SetElasticWriterWaitsHookForTesting(void (*hook)());

}  // namespace internal
}  // namespace dlcbf
