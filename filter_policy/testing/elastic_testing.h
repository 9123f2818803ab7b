// Test-only fault injection for ElasticFilter's incremental migration. Compiled only
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

namespace dlcbf {
namespace internal {

// Process-wide; thread-safe (an atomic). true: ElasticFilter skips the
// mirroring of inserts and erases during incremental migrations.
void SetElasticSkipMirrorForTesting(bool skip);

}  // namespace internal
}  // namespace dlcbf
