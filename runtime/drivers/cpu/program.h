//===- program.h - Compiled kernel programs of the CPU driver -*- C++ -*-===//
//
// A KernelProgram (from the JIT for an MLIR program, or from a 'CGKP' part for
// a compute pipeline) turned into kernels once, at creation: an anchor
// (convolution, matmul, gemm) and the elementwise ops that follow it are
// fused when the intermediate is a temporary nobody else reads. Running a
// program resolves every operand (binding address + offset, or a temporary in
// scratch memory private to that run) and runs the steps in order.
//
// The temporaries share that per-run memory by lifetime: each is live from
// the first to the last step that reads or writes it (a fused step accesses
// its operands at its own position; the intermediates inside it are never
// stored), and two temporaries live at the same step never share a byte
// (planning::planTemporaries, planning/temporaries.h). A run takes its block from a pool every program
// shares (RunMemory), so a model's dispatches, which run one after another,
// reuse one block. The JIT turns the bind points only its partition touches
// (`internal`) into temporaries, so the model's scratch pages behind them
// are never touched.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_PROGRAM_H
#define CGC_CPU_PROGRAM_H

#include "cgc/kernel_program.h"
#include "prepared.h"
#include "config.h"
#include "kernels.h"
#include "planning/temporaries.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace cgc::cpu {

/// Per-run memory shared by the programs of the process: a run takes a
/// block at least as large as its program's plan and gives it back when it
/// ends. Programs that run one after another (a model's dispatches) thus
/// reuse one block instead of each keeping its own; runs in flight at the
/// same time hold different blocks. A request no free block can hold
/// replaces the free blocks (all smaller) with one of its size, so the pool
/// holds at most as many blocks as there were runs in flight at once, each
/// at most the largest plan. Blocks are anonymous mappings (pages.h). The
/// pool lives as long as a program holds it.
class RunMemory {
public:
  struct Block {
    uint8_t *data = nullptr;
    uint64_t bytes = 0;
  };
  /// The pool every CompiledProgram uses (created on first need, freed with
  /// the last program).
  static std::shared_ptr<RunMemory> shared();

  RunMemory() = default;
  RunMemory(const RunMemory &) = delete;
  RunMemory &operator=(const RunMemory &) = delete;
  ~RunMemory();

  /// A block of at least `bytes` (> 0), 64-byte aligned, for one run;
  /// throws std::bad_alloc when the system has no memory for it.
  Block acquire(uint64_t bytes);
  void release(Block block);
  /// Bytes of the blocks the pool holds, free or in use.
  uint64_t heldBytes() const;
  size_t heldBlocks() const;

private:
  mutable std::mutex mutex_;
  std::vector<Block> free_;
  uint64_t held_ = 0;
  size_t blocks_ = 0;
};

class CompiledProgram {
public:
  struct Step {
    std::unique_ptr<Kernel> kernel;
    /// Inputs in KernelArgs order (a fused kernel's extra operands last).
    std::vector<std::optional<KernelOperand>> inputs;
    std::vector<KernelOperand> outputs;
    /// Indices into the program's kernels this step computes.
    std::vector<size_t> kernels;
    /// For an anchor that runs without the elementwise op after it: that op
    /// and why the kernel library refused the fusion (shown in the profile);
    /// else empty.
    std::string declined;
  };

  /// Creates the kernels of `program`. Returns null with a message naming
  /// the kernel that failed.
  static std::shared_ptr<CompiledProgram> create(KernelProgram program, std::string &error);
  /// The same, choosing kernels with `config` (the device's), which the
  /// program keeps for its runs.
  static std::shared_ptr<CompiledProgram> create(KernelProgram program, const KernelConfig &config,
                                                 std::string &error);
  const KernelConfig &config() const { return config_; }
  /// Prints the step profile (CGC_CPU_PROFILE) if one was kept.
  ~CompiledProgram();

  /// Runs the program with binding i at `bindings[i]`.
  void run(const std::vector<uint8_t *> &bindings, ThreadPool &pool) const;

  /// Prepares what the kernels keep per constant address (packed weights,
  /// transformed filters, oneDNN's reordered weights and primitives) for
  /// the constant bindings of `bindings` (the others are ignored; their
  /// entries may be null), whose bytes the caller declares final, so that
  /// the first run does no lazy work: one run with every constant binding
  /// at its address and every other binding in private zeroed memory, so
  /// nothing the application or the runtime can see is written. Once per
  /// set of constant addresses; nothing for a program without constants,
  /// with `prepare-constants=0`, or on the reference evaluator. A run a
  /// kernel refuses (an operand value it checks, zeros here) leaves the
  /// rest to the first run and is shown in the profile. Returns whether it
  /// ran.
  bool prepareConstants(const std::vector<uint8_t *> &bindings, ThreadPool &pool) const;
  /// The same while `context` lives (its ranges the constant bindings with
  /// their content digests, prepared.h): sites take their blocks from it
  /// (replay) or hand it what they computed (record).
  bool prepareConstants(const std::vector<uint8_t *> &bindings, ThreadPool &pool,
                        prepared::Context *context) const;
  /// What decides this program's prepared layouts besides its kernel
  /// program: prepared::signature of its configuration on `threads`.
  std::string preparedSignature(size_t threads) const;
  /// How many sets of constant addresses prepareConstants prepared.
  size_t preparedConstantSets() const;

  const KernelProgram &program() const { return program_; }
  const std::vector<Step> &steps() const { return steps_; }
  /// How many of the program's kernels were fused into an anchor's kernel.
  size_t fusedCount() const;

  struct MemoryStats {
    /// The memory a run of this program takes from RunMemory for the
    /// temporaries.
    uint64_t perRunBytes = 0;
    uint64_t lowerBound = 0;     // max over steps of the live temporary bytes
    uint64_t unplannedBytes = 0; // every temporary one after another
    size_t temporaries = 0;      // stored in per-run memory
    /// Bind points marked internal that no step touches (the JIT made them
    /// temporaries): their bytes in the caller's memory are never read or
    /// written.
    size_t untouchedInternalBindings = 0;
    uint64_t untouchedInternalBytes = 0;
    /// Temporaries that live in their internal binding's bytes (where the
    /// compiler placed them) when the bound ranges allow it, and their bytes.
    size_t boundTemporaries = 0;
    uint64_t boundBytes = 0;
  };
  const MemoryStats &memoryStats() const { return memoryStats_; }

  /// Where the temporaries of a run with a given set of binding addresses
  /// live. A temporary that lives in its internal binding (`binding` >= 0)
  /// stays there unless, in this program's order of steps, its bound bytes
  /// would hold another value at the same time (the driver's rewrites and
  /// fusions can lengthen a value's life past the compiler's view of it, an
  /// accumulation in place for one): then it moves to per-run memory
  /// ("evicted"), planned with the temporaries that have no binding.
  ///
  /// Bind points of one dispatch may also share bytes: the compiler places
  /// a partition's values by its order of invocations, a value read only by
  /// the first one where the last one writes another. Where this program's
  /// steps would access two such bind points in another order (or at one
  /// step, other than an elementwise step's in-place operands), one of them
  /// is shadowed: its steps use a copy in per-run memory, filled from the
  /// binding before the first step and written back after the last.
  struct Shadow {
    uint32_t binding = 0;
    uint64_t bytes = 0;
    uint64_t offset = 0;  // in per-run memory
    bool copyIn = false;  // not internal: carries a value in
    bool copyOut = false; // not internal and written: carries one out
  };
  struct Layout {
    std::vector<uint8_t *> key;     // the binding addresses it is for
    bool temporariesInBindings = false;
    std::vector<uint64_t> offsets;  // per temporary; kInBinding: in its binding
    uint64_t perRunBytes = 0;       // per-run memory a run takes
    size_t evicted = 0;             // temporaries moved out of their binding
    uint64_t evictedBytes = 0;
    std::vector<Shadow> shadows;
    std::vector<int32_t> shadowOf;  // per binding: its shadow, or -1
    uint64_t shadowedBytes = 0;
  };
  static constexpr uint64_t kInBinding = UINT64_MAX;
  /// The layout for `bindings` (computed once per set of addresses; the
  /// last few are kept): the shadows it needs and, with
  /// `keepTemporariesInBindings`, the temporaries that stay in their
  /// binding. Throws std::invalid_argument when two bind points the
  /// dispatch writes are bound to common bytes.
  std::shared_ptr<const Layout> layoutFor(const std::vector<uint8_t *> &bindings,
                                          bool keepTemporariesInBindings = true) const;
  /// True if two bind points the steps access are bound to common bytes and
  /// a step writes one of them: only then can a run need shadows.
  bool sharesWrittenBytes(const std::vector<uint8_t *> &bindings) const;
  /// Where temporary `index` lies in a run's memory.
  uint64_t temporaryOffset(uint32_t index) const { return temporaryOffsets_[index]; }

private:
  /// Wall time of one step over every run (CGC_CPU_PROFILE); runs may
  /// be concurrent, hence atomics.
  struct StepTime {
    std::atomic<uint64_t> firstNs{0}; // the first call
    std::atomic<uint64_t> ns{0};      // every later call
    std::atomic<uint64_t> calls{0};
  };
  void printProfile() const;
  /// run(), its steps timed in the profile only with `profiled`.
  void execute(const std::vector<uint8_t *> &bindings, ThreadPool &pool, bool profiled) const;

  KernelProgram program_;
  KernelConfig config_;
  std::vector<Step> steps_;
  /// One per step when profiling, else empty.
  std::unique_ptr<StepTime[]> profile_;
  /// Where the profile goes: "-" for stderr, else a file appended to.
  std::string profilePath_;
  std::vector<uint64_t> temporaryOffsets_;
  uint64_t scratchBytes_ = 0;
  /// Every temporary's size and lifetime over the steps (planning::planTemporaries'
  /// input), for the layouts of temporaries that live in bindings.
  std::vector<planning::TemporaryBlock> blocks_;
  /// Bindings the steps access directly, and per binding the steps that
  /// access it (first > last: none) and whether one writes it.
  std::vector<uint32_t> touchedBindings_;
  struct BindingAccess {
    int64_t first = 0, last = -1;
    bool writes = false;
    bool touched() const { return first <= last; }
  };
  std::vector<BindingAccess> bindingAccess_;
  mutable std::mutex layoutMutex_;
  mutable std::vector<std::shared_ptr<const Layout>> layouts_; // most recent last
  MemoryStats memoryStats_;
  std::shared_ptr<RunMemory> memory_;
  /// The sets of constant addresses prepareConstants prepared, and why a
  /// preparation stopped (for the profile).
  mutable std::mutex prepareMutex_;
  mutable std::vector<std::vector<uint8_t *>> prepared_;
  mutable std::string prepareError_;
};

} // namespace cgc::cpu

#endif // CGC_CPU_PROGRAM_H
