# RocksDB in-tree plugin description of rocksdb-dlcbf (read by RocksDB's
# Makefile, and regex-read by RocksDB's CMakeLists.txt).
#
# Layout inside a RocksDB tree (tools/run.sh rocksdb-source creates it; see
# tools/rocksdb_plugin/README.md to do it by hand):
#   <rocksdb>/plugin/dlcbf/dlcbf.mk          this file (copied)
#   <rocksdb>/plugin/dlcbf/CMakeLists.txt    per-source flags for CMake (copied)
#   <rocksdb>/plugin/dlcbf/dlcbf_repo        symlink to the rocksdb-dlcbf checkout
# Source paths are relative to <rocksdb>/plugin/dlcbf/ and go through the
# symlink, so they resolve inside RocksDB's tree for make and CMake alike.
#
# CMake reads only three lines of this file, each with a regular expression
# that takes the first match in the file: the source list, the registration
# function and the library list. Keep each of them on ONE line, and do not
# write those variable names followed by " = " anywhere above them.
# The registration function has C linkage (filter_policy/rocksdb/plugin.cc);
# RocksDB calls it with each ObjectLibrary it builds for its built-in
# plugins, and it registers every dlcbf id (filter policy dlcbf[:<bits>],
# memtable factory dlcbf_index[:...]).

dlcbf_SOURCES = dlcbf_repo/filter_policy/core/dleft_counting_bloom_filter.cc dlcbf_repo/filter_policy/core/dleft_serialize.cc dlcbf_repo/filter_policy/core/counting_bloom_filter.cc dlcbf_repo/filter_policy/core/autoscaling_bloom_filter.cc dlcbf_repo/filter_policy/core/elastic_filter.cc dlcbf_repo/filter_policy/core/elastic_options.cc dlcbf_repo/filter_policy/core/fast_dleft_filter.cc dlcbf_repo/filter_policy/core/fast_dleft_serialize.cc dlcbf_repo/filter_policy/core/status.cc dlcbf_repo/filter_policy/core/cpu.cc dlcbf_repo/filter_policy/core/dense_dleft_filter.cc dlcbf_repo/filter_policy/core/dense_dleft_serialize.cc dlcbf_repo/filter_policy/model/abf_model.cc dlcbf_repo/filter_policy/model/dleft_fluid_limit.cc dlcbf_repo/filter_policy/rocksdb/sst_filter/block_format.cc dlcbf_repo/filter_policy/rocksdb/sst_filter/blocked_table.cc dlcbf_repo/filter_policy/rocksdb/sst_filter/packed_table.cc dlcbf_repo/filter_policy/rocksdb/sst_filter/planner.cc dlcbf_repo/filter_policy/rocksdb/sst_filter/builder.cc dlcbf_repo/filter_policy/rocksdb/sst_filter/reader.cc dlcbf_repo/filter_policy/rocksdb/sst_filter/filter_policy.cc dlcbf_repo/filter_policy/rocksdb/memtable_index/key_comparator.cc dlcbf_repo/filter_policy/rocksdb/memtable_index/options.cc dlcbf_repo/filter_policy/rocksdb/memtable_index/rep.cc dlcbf_repo/filter_policy/rocksdb/memtable_index/factory.cc dlcbf_repo/filter_policy/rocksdb/live_key_db/live_key_db.cc dlcbf_repo/filter_policy/rocksdb/live_key_db/reads.cc dlcbf_repo/filter_policy/rocksdb/live_key_db/options.cc dlcbf_repo/filter_policy/rocksdb/live_key_db/rebuild.cc dlcbf_repo/filter_policy/rocksdb/live_key_db/persistence.cc dlcbf_repo/filter_policy/rocksdb/live_key_db/index_load.cc dlcbf_repo/filter_policy/rocksdb/live_key_db/live_iterator.cc dlcbf_repo/filter_policy/rocksdb/live_key_db/write_batch.cc dlcbf_repo/filter_policy/rocksdb/live_key_db/ingest.cc dlcbf_repo/filter_policy/rocksdb/live_key_db/column_families.cc dlcbf_repo/filter_policy/rocksdb/live_key_db/checker.cc dlcbf_repo/filter_policy/rocksdb/live_key_db/checkpoint.cc dlcbf_repo/filter_policy/rocksdb/live_key_db/background.cc dlcbf_repo/filter_policy/rocksdb/live_key_db/world_watch.cc dlcbf_repo/filter_policy/rocksdb/live_key_db/compaction_filter_guard.cc dlcbf_repo/filter_policy/rocksdb/live_key_db/transactions.cc dlcbf_repo/filter_policy/rocksdb/live_key_db/transaction_db.cc dlcbf_repo/filter_policy/rocksdb/live_key_db/stats.cc dlcbf_repo/filter_policy/rocksdb/live_key_db/testing_hooks.cc dlcbf_repo/filter_policy/rocksdb/registration.cc dlcbf_repo/filter_policy/rocksdb/common/option_string.cc dlcbf_repo/filter_policy/rocksdb/common/reader_sections.cc dlcbf_repo/filter_policy/rocksdb/plugin.cc
dlcbf_FUNC = dlcbf_register_all
dlcbf_LIBS = 

# make only (CMake takes these from plugin/dlcbf/CMakeLists.txt). RocksDB's
# Makefile adds them to every object it compiles; the define only changes
# our headers, and our include directories hold no header RocksDB includes.
# xxHash is header-only (libxxhash-dev, /usr/include/xxhash.h).
dlcbf_CXXFLAGS = -DDLCBF_ROCKSDB_IN_TREE=1 -I./plugin/dlcbf/dlcbf_repo/include -I./plugin/dlcbf/dlcbf_repo
