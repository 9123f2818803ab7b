// LiveKeyDB's test hooks (filter_policy/testing/live_key_db_testing.h):
// the process-wide fault switch, pauses and callbacks the oracle, the
// exactness tests and livekey_stress use to widen or reverse the orderings
// LiveKeyDB relies on. Compiled only into test builds (DLCBF_TESTING):
// shipped libraries carry no hooks.
#ifdef DLCBF_TESTING
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <utility>

#include "filter_policy/testing/live_key_db_testing.h"

namespace dlcbf {

namespace internal {
namespace {
std::atomic<int> g_fault{0};
std::atomic<bool> g_check_pause{false};
std::atomic<bool> g_busy_writers{false};
std::atomic<bool> g_rebuild_pause{false};
std::atomic<bool> g_rebuild_waiting{false};
}  // namespace
void SetLiveKeyFaultForTesting(LiveKeyFault fault) { g_fault.store(static_cast<int>(fault)); }
LiveKeyFault GetLiveKeyFaultForTesting() { return static_cast<LiveKeyFault>(g_fault.load()); }
void SetLiveKeyBusyWritersForTesting(bool busy) { g_busy_writers.store(busy); }
bool GetLiveKeyBusyWritersForTesting() { return g_busy_writers.load(); }
void SetLiveKeyCheckPauseForTesting(bool paused) { g_check_pause.store(paused); }
bool GetLiveKeyCheckPauseForTesting() { return g_check_pause.load(); }
void SetLiveKeyRebuildPauseForTesting(bool paused) { g_rebuild_pause.store(paused); }
bool GetLiveKeyRebuildPauseForTesting() { return g_rebuild_pause.load(); }
void SetLiveKeyRebuildWaitingForTesting(bool waiting) { g_rebuild_waiting.store(waiting); }
bool GetLiveKeyRebuildWaitingForTesting() { return g_rebuild_waiting.load(); }
namespace {
std::mutex g_chunk_hook_mu;
std::function<void(uint64_t)> g_chunk_hook;
}  // namespace
namespace {
std::mutex g_world_hook_mu;
std::function<void(LiveKeyWorldPoint)> g_world_hook;
std::atomic<bool> g_world_hook_set{false};
}  // namespace
void SetLiveKeyWorldHookForTesting(std::function<void(LiveKeyWorldPoint)> hook) {
  std::lock_guard<std::mutex> l(g_world_hook_mu);
  g_world_hook_set.store(static_cast<bool>(hook));
  g_world_hook = std::move(hook);
}
void RunLiveKeyWorldHookForTesting(LiveKeyWorldPoint point) {
  if (!g_world_hook_set.load()) return;
  std::function<void(LiveKeyWorldPoint)> hook;
  {
    std::lock_guard<std::mutex> l(g_world_hook_mu);
    hook = g_world_hook;
  }
  if (hook) hook(point);
}
std::mutex g_nowal_hook_mu;
std::function<void()> g_nowal_hook;
std::atomic<bool> g_nowal_hook_set{false};
void SetLiveKeyNoWalWriteHookForTesting(std::function<void()> hook) {
  std::lock_guard<std::mutex> l(g_nowal_hook_mu);
  g_nowal_hook_set.store(static_cast<bool>(hook));
  g_nowal_hook = std::move(hook);
}
void RunLiveKeyNoWalWriteHookForTesting() {
  if (!g_nowal_hook_set.load()) return;
  std::function<void()> hook;
  {
    std::lock_guard<std::mutex> l(g_nowal_hook_mu);
    hook = g_nowal_hook;
  }
  if (hook) hook();
}
std::atomic<uint64_t> g_chunk_blocks{0};
void SetLiveKeyCheckpointChunkBlocksForTesting(uint64_t blocks) { g_chunk_blocks.store(blocks); }
uint64_t GetLiveKeyCheckpointChunkBlocksForTesting() { return g_chunk_blocks.load(); }
void SetLiveKeyCheckpointChunkHookForTesting(std::function<void(uint64_t)> hook) {
  std::lock_guard<std::mutex> l(g_chunk_hook_mu);
  g_chunk_hook = std::move(hook);
}
void RunLiveKeyCheckpointChunkHookForTesting(uint64_t blocks) {
  std::function<void(uint64_t)> hook;
  {
    std::lock_guard<std::mutex> l(g_chunk_hook_mu);
    hook = g_chunk_hook;
  }
  if (hook) hook(blocks);
}
}  // namespace internal

}  // namespace dlcbf
#endif  // DLCBF_TESTING
