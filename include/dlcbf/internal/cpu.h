// What this CPU runs well, decided once per process for the kernel
// instances chosen at run time (the dense kernel's instance sets, the v3
// SST probe). Internal: never installed.
//
// PDEP (BMI2) turns select-the-j-th-one-bit into two instructions, but AMD
// Zen 1 and 2 microcode it (hundreds of cycles); a CPU list would have to
// know every such CPU. PdepIsFast measures instead: it times a dependent
// chain of selects with PDEP against the portable byte-table select
// (filter_policy/core/dense_dleft_block.h), 5 interleaved rounds of 2048
// each, about 0.1 ms at the first call, and says yes only where the CPU
// has BMI2 and PDEP was not slower. Thread-safe (a function-local static).
#pragma once

namespace dlcbf {
namespace internal {

bool PdepIsFast();

}  // namespace internal
}  // namespace dlcbf
