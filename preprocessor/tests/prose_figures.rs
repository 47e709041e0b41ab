//! Every figure the runner measures is rendered by a directive (`{{#value}}`, `{{#ratio}}`),
//! never typed: a typed number goes stale when the labs are re-recorded and is wrong on a
//! reader's GPU. This scans every chapter (outside code blocks and inline code) for a number next
//! to "GB/s", "TB/s", "FLOP/s", "FLOP/byte", "µs", "ns", "cycles" or "×", any percentage (of a
//! peak, a ceiling or anything else), a count of registers, blocks per SM or spilled bytes (the compile
//! results), or an amount in MiB, MB, KiB or KB — in prose and inside `$…$` math alike (read as the reader sees it: `\text{GB/s}`
//! as "GB/s", `\times` as "×", `4160 \times 10^{9}\ \text{B/s}` as one figure) — and fails on
//! any not in the allow-list below, where each typed figure says whose it is.

use std::path::{Path, PathBuf};

/// Datasheet figures the book cites by name wherever they appear: (the figure as typed, whose).
const CITED: &[(&str, &str)] = &[
    (
        "3.35 TB/s",
        "NVIDIA H100 datasheet: HBM3 bandwidth of the H100 SXM5",
    ),
    (
        "3.35×10^12 B/s",
        "NVIDIA H100 datasheet: HBM3 bandwidth of the H100 SXM5",
    ),
    (
        "990 TFLOP/s",
        "NVIDIA H100 datasheet: dense BF16/FP16 tensor-core rate",
    ),
    (
        "990×10^12 FLOP/s",
        "NVIDIA H100 datasheet: dense BF16/FP16 tensor-core rate",
    ),
    (
        "295 FLOP/byte",
        "arithmetic on the H100 datasheet: 990 TFLOP/s over 3.35 TB/s",
    ),
    ("4.8 TB/s", "NVIDIA H200 datasheet: HBM3e bandwidth"),
    (
        "228 KB",
        "CUDA C++ Programming Guide, compute capability 9.0 / the Hopper whitepaper: shared memory per SM",
    ),
    (
        "227 KB",
        "CUDA C++ Programming Guide, compute capability 9.0: shared memory per block",
    ),
    (
        "48 KB",
        "CUDA C++ Programming Guide: static shared memory per block without opt-in",
    ),
    (
        "1 KB",
        "CUDA C++ Programming Guide: shared memory the driver reserves per block",
    ),
    (
        "256 KB",
        "the Hopper whitepaper and CUDA C++ Programming Guide: the L1/shared array and the register file per SM",
    ),
    ("50 MB", "NVIDIA H100 datasheet: the L2 of H100 SXM5"),
    (
        "65,536 registers",
        "CUDA C++ Programming Guide, compute capability 9.0: 64 K 32-bit registers per SM",
    ),
    (
        "255 registers",
        "CUDA C++ Programming Guide, compute capability 9.0: the most registers per thread",
    ),
    (
        "32 resident blocks",
        "CUDA C++ Programming Guide, compute capability 9.0: the most resident blocks per SM",
    ),
    (
        "32 blocks per SM",
        "CUDA C++ Programming Guide, compute capability 9.0: the most resident blocks per SM",
    ),
    ("5.3 TB/s", "AMD MI300X datasheet: HBM3 bandwidth"),
];

/// (chapter under book/src, the figure as typed, why it stays typed).
const ALLOWED: &[(&str, &str, &str)] = &[
    (
        "labs/reduction.md",
        "2.3×",
        "Harris's measurement between his first two kernels (Optimizing Parallel Reduction in CUDA), cited as his",
    ),
    (
        "references.md",
        "30×",
        "Harris's measurement over his seven reduction kernels, in the reference list",
    ),
    (
        "labs/reduction.md",
        "30×",
        "Harris's measurement over his seven kernels on the 8800 GTX, cited as his",
    ),
    (
        "labs/lab1-bandwidth-ceiling.md",
        "100 %",
        "not a figure: the whole of the theoretical peak, which no copy reaches",
    ),
    (
        "labs/lab4-reuse.md",
        "683 FLOP/byte",
        "arithmetic: n / 6 for the lab's n = 4096 (the compulsory bytes of an n³ product)",
    ),
    (
        "labs/lab4-reuse.md",
        "4 FLOP/byte",
        "arithmetic: the tiled rung's model, TILE / 4 for TILE = 16",
    ),
    (
        "labs/lab4-reuse.md",
        "32 FLOP/byte",
        "arithmetic: the register-tiled rung's model for its 128 × 128 block tile",
    ),
    (
        "labs/lab4-reuse.md",
        "2×",
        "a prediction's bound, not a measurement: double buffering should gain well under 2×, which a {{#claim}} beside the result checks",
    ),
    (
        "practice/memory-wall.md",
        "67 TFLOP/s",
        "NVIDIA's H100 SXM datasheet FP32 rate, cited as such",
    ),
    (
        "exercises/practice-problems.md",
        "0.42 TB/s",
        "arithmetic: the sector model's 1/8 of the H100 datasheet's 3.35 TB/s",
    ),
    (
        "hierarchy/coalescing.md",
        "0.42 TB/s",
        "arithmetic: the sector model's 1/8 of the H100 datasheet's 3.35 TB/s",
    ),
    (
        "hierarchy/coalescing.md",
        "15 %",
        "the A02 lesson's MI300X figures",
    ),
    (
        "exercises/self-assessment.md",
        "90 %",
        "a hypothetical kernel in the drill's question",
    ),
    (
        "exercises/stretch-triton.md",
        "2 µs",
        "the repeat recording in labs/recorded/experiments/, not a row of a lab",
    ),
    (
        "exercises/stretch-triton.md",
        "302.7 µs",
        "the repeat recording in labs/recorded/experiments/, not a row of a lab",
    ),
    (
        "hierarchy/levels.md",
        "19 TB/s",
        "the Learn lesson's H100 figure (Luo et al.'s microbenchmarks)",
    ),
    (
        "hierarchy/levels.md",
        "25 GB/s",
        "arithmetic: the H100 datasheet's 3.35 TB/s over its 132 SMs",
    ),
    (
        "hierarchy/why.md",
        "0.08 FLOP/byte",
        "arithmetic: a vector add's intensity, 1 FLOP per 12 bytes",
    ),
    (
        "practice/llm-connection.md",
        "64 FLOP/byte",
        "arithmetic: a 128-wide GEMM tile's intensity in BF16",
    ),
    (
        "practice/memory-wall.md",
        "0.25 FLOP/byte",
        "arithmetic: the quiz kernel's intensity",
    ),
    (
        "practice/memory-wall.md",
        "0.25–2.5 FLOP/byte",
        "arithmetic: the elementwise intensities of the LLM chapter",
    ),
    (
        "practice/memory-wall.md",
        "560 FLOP/byte",
        "datasheet/whitepaper figures of past GPUs (memory-wall table)",
    ),
    (
        "practice/memory-wall.md",
        "335 TFLOP/s",
        "arithmetic on the H100 datasheet (100 FLOP/byte × 3.35 TB/s)",
    ),
    (
        "practice/memory-wall.md",
        "34 %",
        "arithmetic on the H100 datasheet (335 of 990 TFLOP/s)",
    ),
    (
        "practice/memory-wall.md",
        "21 TFLOP/s",
        "datasheet/whitepaper figures of past GPUs (memory-wall table)",
    ),
    (
        "practice/memory-wall.md",
        "21.2 TFLOP/s",
        "datasheet/whitepaper figures of past GPUs (memory-wall table)",
    ),
    (
        "practice/memory-wall.md",
        "125 TFLOP/s",
        "datasheet/whitepaper figures of past GPUs (memory-wall table)",
    ),
    (
        "practice/memory-wall.md",
        "312 TFLOP/s",
        "datasheet/whitepaper figures of past GPUs (memory-wall table)",
    ),
    (
        "practice/memory-wall.md",
        "2250 TFLOP/s",
        "datasheet/whitepaper figures of past GPUs (memory-wall table)",
    ),
    (
        "practice/memory-wall.md",
        "2.0 TB/s",
        "datasheet/whitepaper figures of past GPUs (memory-wall table)",
    ),
    (
        "practice/memory-wall.md",
        "8 TB/s",
        "datasheet/whitepaper figures of past GPUs (memory-wall table)",
    ),
    (
        "references.md",
        "989–990 TFLOP/s",
        "datasheet/whitepaper figures of the cited documents",
    ),
    (
        "references.md",
        "21.2 TFLOP/s",
        "datasheet/whitepaper figures of the cited documents",
    ),
    (
        "references.md",
        "125 TFLOP/s",
        "datasheet/whitepaper figures of the cited documents",
    ),
    (
        "references.md",
        "312 TFLOP/s",
        "datasheet/whitepaper figures of the cited documents",
    ),
    (
        "references.md",
        "2.0 TB/s",
        "datasheet/whitepaper figures of the cited documents",
    ),
    (
        "references.md",
        "8 TB/s",
        "datasheet/whitepaper figures of the cited documents",
    ),
    (
        "exercises/drill-bank-conflict.md",
        "2×",
        "the checker's pass bar, a threshold of the check",
    ),
    (
        "exercises/drill-bank-conflict.md",
        "32×",
        "the bank model's arithmetic: 32 passes instead of one",
    ),
    (
        "exercises/drill-coalesce.md",
        "8×",
        "the sector model's arithmetic: 32 sectors per request against 4",
    ),
    (
        "exercises/drill-coalesce.md",
        "1.5×",
        "the checker's pass bar, a threshold of the check",
    ),
    (
        "exercises/padded-transpose.md",
        "2600 GB/s",
        "the A02 lesson's MI300X figures (n = 4096)",
    ),
    (
        "exercises/padded-transpose.md",
        "3400 GB/s",
        "the A02 lesson's MI300X figures (n = 4096)",
    ),
    (
        "exercises/padded-transpose.md",
        "1.3×",
        "the A02 lesson's MI300X figures (n = 4096)",
    ),
    (
        "exercises/padded-transpose.md",
        "1.5×",
        "the checker's bar, `min_speedup` in labs/padded_transpose.toml",
    ),
    (
        "exercises/stretch-tile-sweep.md",
        "450–800 cycles",
        "the Learn lesson's HBM latency",
    ),
    (
        "exercises/stretch-tile-sweep.md",
        "230–400 ns",
        "arithmetic: the Learn lesson's HBM latency at the H200's 1.98 GHz SM clock",
    ),
    (
        "exercises/stretch-triton.md",
        "133.2 µs",
        "an experiment recording in labs/recorded/experiments/, not a row of a lab",
    ),
    (
        "exercises/stretch-triton.md",
        "3395 GB/s",
        "an experiment recording in labs/recorded/experiments/, not a row of a lab",
    ),
    (
        "exercises/stretch-triton.md",
        "3701 GB/s",
        "an experiment recording in labs/recorded/experiments/, not a row of a lab",
    ),
    (
        "exercises/stretch-triton.md",
        "133 µs",
        "order of magnitude of the kernel beside a launch, in the narrative of the earlier harness",
    ),
    (
        "exercises/stretch-triton.md",
        "1167 GB/s",
        "an experiment recording in labs/recorded/experiments/, not a row of a lab",
    ),
    (
        "glossary.md",
        "47×",
        "datasheet figures (H100, PCIe 5.0, P100→H100 growth)",
    ),
    (
        "glossary.md",
        "4.6×",
        "datasheet figures (H100, PCIe 5.0, P100→H100 growth)",
    ),
    (
        "glossary.md",
        "900 GB/s",
        "datasheet figures (H100, PCIe 5.0, P100→H100 growth)",
    ),
    (
        "glossary.md",
        "64 GB/s",
        "datasheet figures (H100, PCIe 5.0, P100→H100 growth)",
    ),
    (
        "hierarchy/coalescing.md",
        "500 cycles",
        "H100 order of magnitude (datasheet/lesson)",
    ),
    (
        "hierarchy/coalescing.md",
        "32×",
        "quoting the course's claim that the chapter corrects",
    ),
    (
        "hierarchy/coalescing.md",
        "700 GB/s",
        "the A02 lesson's MI300X figures",
    ),
    (
        "hierarchy/coalescing.md",
        "4800 GB/s",
        "the A02 lesson's MI300X figures",
    ),
    (
        "hierarchy/coalescing.md",
        "2600 GB/s",
        "the A02 lesson's MI300X figures",
    ),
    (
        "hierarchy/coalescing.md",
        "3.7×",
        "the A02 lesson's MI300X figures",
    ),
    (
        "hierarchy/levels.md",
        "1 cycle",
        "the Learn lesson's H100 figures / datasheets",
    ),
    (
        "hierarchy/levels.md",
        "20–30 cycles",
        "the Learn lesson's H100 figures / datasheets",
    ),
    (
        "hierarchy/levels.md",
        "150–250 cycles",
        "the Learn lesson's H100 figures / datasheets",
    ),
    (
        "hierarchy/levels.md",
        "450–800 cycles",
        "the Learn lesson's H100 figures / datasheets",
    ),
    (
        "hierarchy/levels.md",
        "64 GB/s",
        "the Learn lesson's H100 figures / datasheets",
    ),
    (
        "hierarchy/levels.md",
        "900 GB/s",
        "the Learn lesson's H100 figures / datasheets",
    ),
    (
        "hierarchy/levels.md",
        "150×",
        "the Learn lesson's H100 figures / datasheets",
    ),
    (
        "hierarchy/shared-memory.md",
        "20–30 cycles",
        "Luo et al. (2024)'s microbenchmark figure, cited in the table",
    ),
    (
        "hierarchy/shared-memory.md",
        "2600 GB/s",
        "the A02 lesson's MI300X figures (n = 4096)",
    ),
    (
        "hierarchy/shared-memory.md",
        "3400 GB/s",
        "the A02 lesson's MI300X figures (n = 4096)",
    ),
    (
        "hierarchy/shared-memory.md",
        "1.3×",
        "the A02 lesson's MI300X figures (n = 4096)",
    ),
    (
        "hierarchy/shared-memory.md",
        "32×",
        "the bank model's arithmetic: 32 passes instead of one",
    ),
    (
        "hierarchy/why.md",
        "100–1000×",
        "the Learn lesson's H100 figures / datasheets",
    ),
    (
        "hierarchy/why.md",
        "500 cycles",
        "the Learn lesson's H100 figures / datasheets",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "500 cycles",
        "the H100 lesson's ~500-cycle HBM latency, converted at 1.98 GHz (arithmetic)",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "250 ns",
        "the H100 lesson's ~500-cycle HBM latency, converted at 1.98 GHz (arithmetic)",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "1 cycle",
        "the Learn lesson's H100 figures",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "20–30 cycles",
        "the Learn lesson's H100 figures",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "150–250 cycles",
        "the Learn lesson's H100 figures",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "450–800 cycles",
        "the Learn lesson's H100 figures",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "20–30×",
        "the Learn lesson's H100 figures",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "20–40×",
        "the Learn lesson's H100 figures",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "150×",
        "the Learn lesson's H100 figures",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "150 ns",
        "arithmetic on the H200 recording: the 256 KiB time over 16,384 passes",
    ),
    (
        "labs/host-device.md",
        "450–800 cycles",
        "PCIe 5.0 / NVLink 4 nominal rates (datasheets)",
    ),
    (
        "labs/host-device.md",
        "64 GB/s",
        "PCIe 5.0 / NVLink 4 nominal rates (datasheets)",
    ),
    (
        "labs/host-device.md",
        "900 GB/s",
        "PCIe 5.0 / NVLink 4 nominal rates (datasheets)",
    ),
    (
        "labs/host-device.md",
        "128 GB/s",
        "PCIe 5.0 / NVLink 4 nominal rates (datasheets)",
    ),
    (
        "labs/lab2-transpose.md",
        "4800 GB/s",
        "the A02 lesson's MI300X figures (n = 4096)",
    ),
    (
        "labs/lab2-transpose.md",
        "700 GB/s",
        "the A02 lesson's MI300X figures (n = 4096)",
    ),
    (
        "labs/lab2-transpose.md",
        "2600 GB/s",
        "the A02 lesson's MI300X figures (n = 4096)",
    ),
    (
        "labs/lab2-transpose.md",
        "3400 GB/s",
        "the A02 lesson's MI300X figures (n = 4096)",
    ),
    (
        "labs/lab2-transpose.md",
        "5×",
        "the A02 lesson's MI300X figures (n = 4096)",
    ),
    (
        "labs/lab2-transpose.md",
        "3.7×",
        "the A02 lesson's MI300X figures (n = 4096)",
    ),
    (
        "labs/lab2-transpose.md",
        "1.3×",
        "the A02 lesson's MI300X figures (n = 4096)",
    ),
    (
        "labs/lab2-transpose.md",
        "4.9×",
        "the A02 lesson's MI300X figures (n = 4096)",
    ),
    (
        "labs/lab3-profiling.md",
        "8×",
        "arithmetic (32 against 4 sectors per request) and Nsight Compute's 2048 against 256 MiB of L1 → L2 writes (the profile in profile_transpose.json, which no directive renders)",
    ),
    (
        "methodology.md",
        "130 µs",
        "order of magnitude of a transpose kernel beside a Triton launch",
    ),
    (
        "practice/llm-connection.md",
        "3×",
        "arithmetic: the traffic cut the fusion predicts, or the FlashAttention paper's speedup",
    ),
    (
        "practice/llm-connection.md",
        "2.4×",
        "the FlashAttention paper's speedups",
    ),
    (
        "practice/memory-wall.md",
        "720 GB/s",
        "datasheet/whitepaper figures of past GPUs (memory-wall table)",
    ),
    (
        "practice/memory-wall.md",
        "900 GB/s",
        "datasheet/whitepaper figures of past GPUs (memory-wall table)",
    ),
    (
        "practice/memory-wall.md",
        "47×",
        "datasheet/whitepaper figures of past GPUs (memory-wall table)",
    ),
    (
        "practice/memory-wall.md",
        "4.6×",
        "datasheet/whitepaper figures of past GPUs (memory-wall table)",
    ),
    (
        "practice/memory-wall.md",
        "107×",
        "datasheet/whitepaper figures of past GPUs (memory-wall table)",
    ),
    (
        "practice/memory-wall.md",
        "11×",
        "datasheet/whitepaper figures of past GPUs (memory-wall table)",
    ),
    (
        "practice/memory-wall.md",
        "100–1000×",
        "datasheet/whitepaper figures of past GPUs (memory-wall table)",
    ),
    (
        "practice/memory-wall.md",
        "3×",
        "arithmetic: the traffic cut the fusion predicts, or the FlashAttention paper's speedup",
    ),
    (
        "practice/pitfalls.md",
        "2,600 GB/s",
        "the A02 lesson's MI300X figures",
    ),
    (
        "practice/pitfalls.md",
        "3,400 GB/s",
        "the A02 lesson's MI300X figures",
    ),
    (
        "practice/pitfalls.md",
        "1.3×",
        "the A02 lesson's MI300X figures",
    ),
    (
        "references.md",
        "900 GB/s",
        "datasheet/whitepaper figures of the cited documents",
    ),
    (
        "references.md",
        "720 GB/s",
        "datasheet/whitepaper figures of the cited documents",
    ),
    (
        "exercises/drill-hierarchy-sizing.md",
        "32 registers",
        "the drill's model: R(T) = 32 + T²/256 starts from 32 registers of addresses and counters",
    ),
    (
        "exercises/drill-hierarchy-sizing.md",
        "128 registers",
        "arithmetic: 65,536 registers over two blocks of 256 threads",
    ),
    (
        "exercises/drill-hierarchy-sizing.md",
        "232 registers",
        "the drill's model at T = 224, rounded up to a multiple of 8",
    ),
    (
        "exercises/drill-hierarchy-sizing.md",
        "288 registers",
        "the drill's model at T = 256",
    ),
    (
        "exercises/register-pressure.md",
        "256 registers",
        "arithmetic: the allocation formula for a 256-thread block (256 is the block size)",
    ),
    (
        "exercises/self-assessment.md",
        "96 registers",
        "a hypothetical kernel in the drill's question (the registers chapter's quiz)",
    ),
    (
        "hierarchy/registers.md",
        "256 registers",
        "the CUDA occupancy calculator's allocation unit: registers per warp come in chunks of 256",
    ),
    (
        "hierarchy/registers.md",
        "64 registers",
        "arithmetic: 65,536 registers over 4 blocks of 256 threads, and the quiz's answer",
    ),
    (
        "hierarchy/registers.md",
        "96 registers",
        "a hypothetical kernel in the chapter's quiz",
    ),
    (
        "hierarchy/registers.md",
        "40 registers",
        "a hypothetical kernel in the chapter's second quiz",
    ),
    (
        "labs/lab1-bandwidth-ceiling.md",
        "8 blocks per SM",
        "a launch parameter: the grid-stride rows' grid, set in labs/bandwidth.toml",
    ),
    (
        "labs/lab1-bandwidth-ceiling.md",
        "16 blocks per SM",
        "a launch parameter: the grid-stride rows' grid, set in labs/bandwidth.toml",
    ),
    (
        "labs/lab1-bandwidth-ceiling.md",
        "4 blocks per SM",
        "a launch parameter: ring_8x4's grid, set in labs/bulk_copy_sweep.toml",
    ),
    (
        "labs/lab4-reuse.md",
        "64 registers",
        "arithmetic: the register tile's 8 × 8 accumulators",
    ),
    (
        "exercises/drill-hierarchy-sizing.md",
        "34,816 registers",
        "arithmetic: the drill's model, 256 threads × 136 registers",
    ),
    (
        "exercises/drill-hierarchy-sizing.md",
        "29,696 registers",
        "arithmetic: the drill's model, 128 threads × 232 registers",
    ),
    (
        "exercises/drill-hierarchy-sizing.md",
        "42,240 registers",
        "arithmetic on the recording: T = 160's registers (rendered above) × 256 threads; stale if a re-recording changes them",
    ),
    (
        "hierarchy/levels.md",
        "16,384 registers",
        "arithmetic: 256 VGPRs × 64 lanes of an AMD wavefront (AMD's specifications, as the note says)",
    ),
    (
        "hierarchy/registers.md",
        "49,152 registers",
        "arithmetic: the quiz's 96 registers × 512 threads",
    ),
    (
        "hierarchy/registers.md",
        "98,304 registers",
        "arithmetic: two of the quiz's blocks",
    ),
    (
        "hierarchy/registers.md",
        "32,768 registers",
        "arithmetic: the quiz's answer, 64 registers × 512 threads",
    ),
    (
        "hierarchy/registers.md",
        "10,240 registers",
        "arithmetic: the second quiz's 40 registers × 256 threads",
    ),
    (
        "exercises/drill-coalesce.md",
        "256 MiB",
        "the buffer size the lab sets: 2^26 floats, or an 8192 × 8192 fp32 matrix (its parameters)",
    ),
    (
        "exercises/drill-hierarchy-sizing.md",
        "100.6 KB",
        "arithmetic: the drill's tile bytes at T = 128",
    ),
    (
        "exercises/drill-hierarchy-sizing.md",
        "722 MB",
        "arithmetic: the drill's matrix size (its parameters)",
    ),
    (
        "exercises/padded-transpose.md",
        "256 MiB",
        "the buffer size the lab sets: 2^26 floats, or an 8192 × 8192 fp32 matrix (its parameters)",
    ),
    (
        "exercises/stretch-tile-sweep.md",
        "16 KiB",
        "arithmetic: blocks × TILE² × 4 bytes of tile per SM, or TILE² × 4 per block, for the sweep's tiles",
    ),
    (
        "exercises/stretch-tile-sweep.md",
        "256 MiB",
        "the buffer size the lab sets: 2^26 floats, or an 8192 × 8192 fp32 matrix (its parameters)",
    ),
    (
        "exercises/stretch-tile-sweep.md",
        "32 KiB",
        "arithmetic: blocks × TILE² × 4 bytes of tile per SM, or TILE² × 4 per block, for the sweep's tiles",
    ),
    (
        "exercises/stretch-tile-sweep.md",
        "64 KiB",
        "arithmetic: blocks × TILE² × 4 bytes of tile per SM, or TILE² × 4 per block, for the sweep's tiles",
    ),
    (
        "exercises/stretch-tile-sweep.md",
        "8 KiB",
        "arithmetic: blocks × TILE² × 4 bytes of tile per SM, or TILE² × 4 per block, for the sweep's tiles",
    ),
    (
        "exercises/stretch-tile-sweep.md",
        "8–15 KB",
        "arithmetic: Little's law on the Learn lesson's HBM latency and bandwidth",
    ),
    (
        "exercises/strided-sweep.md",
        "128 MiB",
        "a working set of the hierarchy lab (its parameters)",
    ),
    (
        "exercises/strided-sweep.md",
        "256 MiB",
        "the buffer size the lab sets: 2^26 floats, or an 8192 × 8192 fp32 matrix (its parameters)",
    ),
    (
        "exercises/strided-sweep.md",
        "64 MiB",
        "arithmetic: 2^24 floats, the sweep's former size",
    ),
    (
        "exercises/strided-sweep.md",
        "8 KiB",
        "arithmetic: 32 lanes × the largest stride's 256 bytes",
    ),
    (
        "glossary.md",
        "64 KB",
        "AMD CDNA3 ISA / MI300 specifications: 64 KB of LDS per CU",
    ),
    (
        "hierarchy/coalescing.md",
        "256 MiB",
        "the buffer size the lab sets: 2^26 floats, or an 8192 × 8192 fp32 matrix (its parameters)",
    ),
    (
        "hierarchy/levels.md",
        "256 KiB",
        "a working set the hierarchy labs sweep (their parameters)",
    ),
    (
        "hierarchy/levels.md",
        "256 MiB",
        "AMD's MI300 specifications: 256 MiB of Infinity Cache",
    ),
    (
        "hierarchy/levels.md",
        "32 MiB",
        "a working set the hierarchy lab sweeps, where the recorded latency (rendered in its lab) climbs",
    ),
    (
        "hierarchy/levels.md",
        "4 MiB",
        "AMD's MI300 specifications: 4 MiB of L2 per XCD",
    ),
    (
        "hierarchy/levels.md",
        "512 KiB",
        "AMD's MI300 specifications: a 512 KiB VGPR file per CU",
    ),
    (
        "hierarchy/levels.md",
        "64 KiB",
        "AMD's MI300 specifications: 64 KiB of LDS per CU, and 256 VGPRs × 64 lanes × 4 B",
    ),
    (
        "hierarchy/levels.md",
        "8 KiB",
        "a working set the hierarchy labs sweep (their parameters)",
    ),
    (
        "hierarchy/shared-memory.md",
        "16 KiB",
        "arithmetic: the kernel's 64 × 64 fp32 tile",
    ),
    (
        "hierarchy/shared-memory.md",
        "28 KB",
        "arithmetic: the Hopper whitepaper's 256 KB less its 228 KB of shared memory",
    ),
    (
        "hierarchy/shared-memory.md",
        "4.2 KB",
        "arithmetic: a 32 × 33 fp32 tile, 4,224 bytes",
    ),
    (
        "hierarchy/shared-memory.md",
        "64 KB",
        "AMD CDNA3 ISA / MI300 specifications: 64 KB of LDS per CU",
    ),
    (
        "hierarchy/why.md",
        "512 KiB",
        "AMD's MI300 specifications: a 512 KiB VGPR file per CU",
    ),
    (
        "hierarchy/why.md",
        "64 KiB",
        "AMD's MI300 specifications: 64 KiB of LDS per CU",
    ),
    (
        "hierarchy/why.md",
        "64–164 KB",
        "quoting the course's figure that the note corrects",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "0.84 MB",
        "arithmetic: Little's law on the H100 datasheet's 3.35 TB/s and the lesson's 250 ns",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "1 MiB",
        "a working set the hierarchy labs sweep (the ws_* rows, their parameters)",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "128 KiB",
        "a working set the hierarchy labs sweep (the ws_* rows, their parameters)",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "128 MiB",
        "a working set the hierarchy labs sweep (the ws_* rows, their parameters)",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "16 MiB",
        "a working set the hierarchy labs sweep (the ws_* rows, their parameters)",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "2 KiB",
        "arithmetic: 128 MiB over the chase's 65,536 slots",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "200 KiB",
        "the Hopper whitepaper's 256 KB L1/shared array, less a shared-memory carve-out (an estimate)",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "256 KiB",
        "a working set the hierarchy labs sweep (the ws_* rows, their parameters)",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "256 MiB",
        "a working set the hierarchy labs sweep (the ws_* rows, their parameters)",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "264 MiB",
        "arithmetic: 1056 resident blocks × 256 KiB",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "32 KiB",
        "arithmetic: a working set over the lab's 4096 blocks",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "32 MiB",
        "a working set the hierarchy labs sweep (the ws_* rows, their parameters)",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "33 MiB",
        "arithmetic: 1056 resident blocks × 32 KiB",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "4 MiB",
        "a working set the hierarchy labs sweep (the ws_* rows, their parameters)",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "48 MiB",
        "a working set the hierarchy labs sweep (the ws_* rows, their parameters)",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "512 KiB",
        "a working set the hierarchy labs sweep (the ws_* rows, their parameters)",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "64 KiB",
        "a working set the hierarchy labs sweep (the ws_* rows, their parameters)",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "64 MiB",
        "a working set the hierarchy labs sweep (the ws_* rows, their parameters)",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "66 MiB",
        "arithmetic: 1056 resident blocks × 64 KiB",
    ),
    (
        "labs/hierarchy-on-your-gpu.md",
        "8 KiB",
        "a working set the hierarchy labs sweep (the ws_* rows, their parameters)",
    ),
    (
        "labs/host-device.md",
        "256 MiB",
        "the buffer size the lab sets: 2^26 floats, or an 8192 × 8192 fp32 matrix (its parameters)",
    ),
    (
        "labs/lab1-bandwidth-ceiling.md",
        "256 MiB",
        "the buffer size the lab sets: 2^26 floats, or an 8192 × 8192 fp32 matrix (its parameters)",
    ),
    (
        "labs/lab1-bandwidth-ceiling.md",
        "32 KiB",
        "a chunk size the bulk-copy sweep sets (labs/bulk_copy_sweep.toml)",
    ),
    (
        "labs/lab1-bandwidth-ceiling.md",
        "4 KiB",
        "a chunk size the bulk-copy rows set (labs/bandwidth.toml, labs/bulk_copy_sweep.toml)",
    ),
    (
        "labs/lab1-bandwidth-ceiling.md",
        "64 MiB",
        "the strided sweep's former size, 2^24 floats (its parameters)",
    ),
    (
        "labs/lab2-transpose.md",
        "16 KiB",
        "arithmetic: a 64 × 64 fp32 tile",
    ),
    (
        "labs/lab2-transpose.md",
        "256 MiB",
        "the buffer size the lab sets: 2^26 floats, or an 8192 × 8192 fp32 matrix (its parameters)",
    ),
    (
        "labs/lab2-transpose.md",
        "32 KiB",
        "arithmetic: n = 8192 floats of a row",
    ),
    (
        "labs/lab2-transpose.md",
        "4 KiB",
        "arithmetic: a 32 × 32 fp32 tile or box",
    ),
    (
        "labs/lab2-transpose.md",
        "64 KiB",
        "arithmetic: sixteen 32 × 32 fp32 boxes",
    ),
    (
        "labs/lab3-profiling.md",
        "256 MiB",
        "the buffer size the lab sets: 2^26 floats, or an 8192 × 8192 fp32 matrix (its parameters)",
    ),
    (
        "labs/lab3-profiling.md",
        "268 MB",
        "arithmetic: n² × 4 bytes at n = 8192",
    ),
    (
        "labs/lab3-profiling.md",
        "64 MiB",
        "arithmetic: a 4096 × 4096 fp32 matrix",
    ),
    (
        "labs/lab4-reuse.md",
        "128 MiB",
        "arithmetic: A and B at n = 4096, fp32",
    ),
    (
        "labs/lab4-reuse.md",
        "16 KiB",
        "arithmetic: two of the register-tiled rung's 8 KiB slices",
    ),
    (
        "labs/lab4-reuse.md",
        "192 MiB",
        "arithmetic: the compulsory bytes of A, B and C at n = 4096, fp32",
    ),
    (
        "labs/lab4-reuse.md",
        "64 MiB",
        "arithmetic: one 4096 × 4096 fp32 matrix",
    ),
    (
        "labs/lab4-reuse.md",
        "8 KiB",
        "arithmetic: 128 × 8 floats of A and as many of B",
    ),
    (
        "labs/layout.md",
        "256 MiB",
        "the buffer size the lab sets: 2^26 floats, or an 8192 × 8192 fp32 matrix (its parameters)",
    ),
    (
        "labs/layout.md",
        "32 MiB",
        "arithmetic: the lab's x field alone, one float per structure (its parameters)",
    ),
    (
        "labs/layout.md",
        "96 MiB",
        "arithmetic: the three fields the kernel reads, 3 × 32 MiB",
    ),
    (
        "labs/reduction.md",
        "256 MiB",
        "the buffer size the lab sets: 2^26 floats, or an 8192 × 8192 fp32 matrix (its parameters)",
    ),
    (
        "labs/reduction.md",
        "268 MB",
        "arithmetic: the input's 2^28 bytes, in MB as Nsight Compute's counters print them",
    ),
    (
        "methodology.md",
        "128 MiB",
        "a working set of the hierarchy lab (its parameters)",
    ),
    (
        "methodology.md",
        "256 MiB",
        "the runner's L2 flush size on AMD, a rule of the runner",
    ),
    (
        "methodology.md",
        "64 MiB",
        "the runner's L2 flush size and the hierarchy lab's warm-up limit, rules of the runner",
    ),
    (
        "methodology.md",
        "8 MiB",
        "arithmetic: 65,536 slots × 128-byte lines",
    ),
    (
        "practice/llm-connection.md",
        "100 KB",
        "an illustration's round figure, as the sentence says",
    ),
    (
        "practice/llm-connection.md",
        "256 MiB",
        "the buffer size the lab sets: 2^26 floats, or an 8192 × 8192 fp32 matrix (its parameters)",
    ),
    (
        "practice/llm-connection.md",
        "512 MiB",
        "arithmetic: the fused kernel's 256 MiB read and 256 MiB written",
    ),
    (
        "practice/memory-wall.md",
        "1 MB",
        "Horowitz, ISSCC 2014: the energy of a read from an 8 KB, 32 KB and 1 MB SRAM",
    ),
    (
        "practice/memory-wall.md",
        "256 MiB",
        "the buffer size the lab sets: 2^26 floats, or an 8192 × 8192 fp32 matrix (its parameters)",
    ),
    (
        "practice/memory-wall.md",
        "32 KB",
        "Horowitz, ISSCC 2014: the energy of a read from an 8 KB, 32 KB and 1 MB SRAM",
    ),
    (
        "practice/memory-wall.md",
        "8 KB",
        "Horowitz, ISSCC 2014: the energy of a read from an 8 KB, 32 KB and 1 MB SRAM",
    ),
    (
        "practice/pitfalls.md",
        "4.2 KB",
        "arithmetic: a 32 × 33 fp32 tile, 4,224 bytes",
    ),
    (
        "exercises/drill-bank-conflict.md",
        "5 %",
        "the stopping rule's noisy-spread threshold, a rule of the runner",
    ),
    (
        "exercises/drill-coalesce.md",
        "12.5 %",
        "arithmetic: the sector model's useful bytes over fetched bytes (4 of 32 bytes)",
    ),
    (
        "exercises/drill-coalesce.md",
        "100 %",
        "arithmetic: the sector model's useful bytes over fetched bytes: every byte used",
    ),
    (
        "exercises/drill-hierarchy-sizing.md",
        "25 %",
        "arithmetic: the occupancy example's resident threads over 2048",
    ),
    (
        "exercises/drill-hierarchy-sizing.md",
        "12.5 %",
        "arithmetic: the occupancy example's resident threads over 2048",
    ),
    (
        "exercises/practice-problems.md",
        "12.5 %",
        "arithmetic: the sector model's useful bytes over fetched bytes (128 of 1024 B)",
    ),
    (
        "exercises/practice-problems.md",
        "87.5 %",
        "arithmetic: the sector model's useful bytes over fetched bytes: the 7/8 wasted",
    ),
    (
        "exercises/profiler-deep-dive.md",
        "100 %",
        "the metric's scale: 100 % is a perfect score in Nsight Compute",
    ),
    (
        "exercises/profiler-deep-dive.md",
        "90 %",
        "a hypothetical kernel in the chapter's example",
    ),
    (
        "exercises/profiler-deep-dive.md",
        "12.5 %",
        "arithmetic: the sector model's useful bytes over fetched bytes (the hypothetical kernel's)",
    ),
    (
        "exercises/self-assessment.md",
        "50 %",
        "arithmetic: the sector model's useful bytes over fetched bytes (128 of 256 B)",
    ),
    (
        "exercises/self-assessment.md",
        "15 %",
        "a hypothetical kernel in the drill's question",
    ),
    (
        "exercises/stretch-triton.md",
        "9.1 %",
        "an experiment recording in labs/recorded/experiments/, not a row of a lab",
    ),
    (
        "exercises/stretch-triton.md",
        "8.4 %",
        "an experiment recording in labs/recorded/experiments/, not a row of a lab",
    ),
    (
        "exercises/stretch-triton.md",
        "0.3 %",
        "an experiment recording in labs/recorded/experiments/, not a row of a lab",
    ),
    (
        "exercises/stretch-triton.md",
        "7.9 %",
        "an experiment recording in labs/recorded/experiments/, not a row of a lab",
    ),
    (
        "exercises/strided-sweep.md",
        "100 %",
        "arithmetic: the sector and line models' predictions, the table's columns",
    ),
    (
        "exercises/strided-sweep.md",
        "50 %",
        "arithmetic: the sector and line models' predictions, the table's columns",
    ),
    (
        "exercises/strided-sweep.md",
        "67 %",
        "arithmetic: the sector and line models' predictions, the table's columns",
    ),
    (
        "exercises/strided-sweep.md",
        "25 %",
        "arithmetic: the sector and line models' predictions, the table's columns",
    ),
    (
        "exercises/strided-sweep.md",
        "40 %",
        "arithmetic: the sector and line models' predictions, the table's columns",
    ),
    (
        "exercises/strided-sweep.md",
        "12.5 %",
        "arithmetic: the sector and line models' predictions, the table's columns",
    ),
    (
        "exercises/strided-sweep.md",
        "22 %",
        "arithmetic: the sector and line models' predictions, the table's columns",
    ),
    (
        "exercises/strided-sweep.md",
        "6.25 %",
        "arithmetic: the sector and line models' predictions, the table's columns",
    ),
    (
        "exercises/strided-sweep.md",
        "12 %",
        "arithmetic: the sector and line models' predictions, the table's columns",
    ),
    (
        "exercises/strided-sweep.md",
        "6 %",
        "arithmetic: the sector and line models' predictions, the table's columns",
    ),
    (
        "hierarchy/coalescing.md",
        "100 %",
        "arithmetic: the sector model's useful bytes over fetched bytes, the table's columns",
    ),
    (
        "hierarchy/coalescing.md",
        "50 %",
        "arithmetic: the sector model's useful bytes over fetched bytes, the table's columns",
    ),
    (
        "hierarchy/coalescing.md",
        "25 %",
        "arithmetic: the sector model's useful bytes over fetched bytes, the table's columns",
    ),
    (
        "hierarchy/coalescing.md",
        "12.5 %",
        "arithmetic: the sector model's useful bytes over fetched bytes, the table's columns",
    ),
    (
        "hierarchy/coalescing.md",
        "6.25 %",
        "arithmetic: the sector model's useful bytes over fetched bytes, the table's columns",
    ),
    (
        "hierarchy/coalescing.md",
        "3.1 %",
        "arithmetic: the sector model's useful bytes over fetched bytes, the table's columns",
    ),
    (
        "hierarchy/coalescing.md",
        "80 %",
        "arithmetic: the sector model's useful bytes over fetched bytes (128 of 160 B)",
    ),
    (
        "hierarchy/coalescing.md",
        "22 %",
        "arithmetic: the model's 2/9",
    ),
    (
        "hierarchy/coalescing.md",
        "6.1 %",
        "arithmetic: the line model's 2/33",
    ),
    (
        "hierarchy/registers.md",
        "100 %",
        "arithmetic: the occupancy example's resident threads over 2048, the table's column",
    ),
    (
        "hierarchy/registers.md",
        "50 %",
        "arithmetic: the occupancy example's resident threads over 2048, the table's column and the quiz's answer",
    ),
    (
        "hierarchy/registers.md",
        "25 %",
        "arithmetic: the occupancy example's resident threads over 2048, the table's column and the quiz's answer",
    ),
    (
        "hierarchy/registers.md",
        "75 %",
        "arithmetic: the occupancy example's resident threads over 2048 (1536 of 2048)",
    ),
    (
        "hierarchy/registers.md",
        "80 %",
        "arithmetic: the per-thread bound, 1638 of 2048 threads",
    ),
    (
        "hierarchy/registers.md",
        "5 %",
        "arithmetic: 80 % less the 75 % the allocation granularity allows",
    ),
    (
        "introduction.md",
        "5 %",
        "the stopping rule's noisy-spread threshold, a rule of the runner",
    ),
    (
        "labs/host-device.md",
        "2 %",
        "the lab's precision target, a rule of the runner",
    ),
    (
        "labs/host-device.md",
        "0.5 %",
        "the stopping rule's usual precision target, a rule of the runner",
    ),
    (
        "labs/lab2-transpose.md",
        "100 %",
        "not a figure: a kernel with no arithmetic is wholly memory-bound",
    ),
    (
        "labs/lab2-transpose.md",
        "15 %",
        "the A02 lesson's MI300X figures (n = 4096)",
    ),
    (
        "labs/lab2-transpose.md",
        "54 %",
        "the A02 lesson's MI300X figures (n = 4096)",
    ),
    (
        "labs/lab2-transpose.md",
        "71 %",
        "the A02 lesson's MI300X figures (n = 4096)",
    ),
    (
        "labs/lab4-reuse.md",
        "13 %",
        "Boehm's SGEMM worklog on an RTX A6000, cited as his",
    ),
    (
        "labs/lab4-reuse.md",
        "69 %",
        "Boehm's SGEMM worklog on an RTX A6000, cited as his",
    ),
    (
        "labs/layout.md",
        "80 %",
        "arithmetic: the sector model's useful bytes over fetched bytes (128 of 160 B)",
    ),
    (
        "labs/layout.md",
        "20 %",
        "arithmetic: the sector model's cost of a 4-byte shift, in the question",
    ),
    (
        "methodology.md",
        "0.5 %",
        "the stopping rule's precision target, a rule of the runner",
    ),
    (
        "methodology.md",
        "2 %",
        "the stopping rule's looser target, a rule of the runner",
    ),
    (
        "methodology.md",
        "5 %",
        "the stopping rule's noisy-spread threshold, a rule of the runner",
    ),
    (
        "practice/llm-connection.md",
        "15 %",
        "the FlashAttention paper's BERT-large speedup, cited as its",
    ),
    (
        "practice/memory-wall.md",
        "85–90 %",
        "a prediction's range, written before the result (what Lab 1's copies suggest), checked against the table below",
    ),
    (
        "practice/pitfalls.md",
        "37.5 %",
        "arithmetic: the occupancy example's resident threads over 2048 (768 of 2048)",
    ),
    (
        "results-format.md",
        "100 %",
        "not a figure: the ceiling row is by definition the lab's 100 %",
    ),
];

fn chapters(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("book/src is readable") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            chapters(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

/// Removes inline code and directives from a line.
fn prose(line: &str) -> String {
    let mut text = String::new();
    let mut in_code = false;
    for part in line.split('`') {
        if !in_code {
            text.push_str(part);
        }
        in_code = !in_code;
    }
    while let Some(start) = text.find("{{#") {
        let end = text[start..]
            .find("}}")
            .map_or(text.len(), |e| start + e + 2);
        text.replace_range(start..end, " ");
    }
    text
}

/// TeX read as plain text: `\text{GB/s}` as "GB/s", `\times` as "×", `\%` as "%", spacing
/// commands, braces and `$` as spaces, runs of spaces as one.
fn untex(line: &str) -> String {
    let mut text = line.to_string();
    for (tex, plain) in [
        // A thousands separator, `34{,}816`, is one number.
        ("{,}", ","),
        ("\\times", "×"),
        ("\\approx", "≈"),
        ("\\%", "%"),
        ("\\text", " "),
        ("\\mathrm", " "),
        ("\\tfrac", " "),
        ("\\dfrac", " "),
        ("\\frac", " "),
        ("\\,", " "),
        ("\\;", " "),
        ("\\ ", " "),
        ("~", " "),
        ("{", " "),
        ("}", " "),
        ("$", " "),
    ] {
        text = text.replace(tex, plain);
    }
    let words: Vec<&str> = text.split(' ').filter(|w| !w.is_empty()).collect();
    words.join(" ")
}

const UNITS: [&str; 20] = [
    " GB/s",
    " TB/s",
    " B/s",
    " GFLOP/s",
    " TFLOP/s",
    " FLOP/s",
    " FLOP/byte",
    " µs",
    " ns",
    " cycles",
    " cycle",
    // Compile results: the compiler's and the occupancy calculator's.
    " registers",
    " register",
    " blocks per SM",
    " resident blocks",
    " bytes of spill",
    // Amounts of memory: a counter's bytes, or a size whose the chapter must say.
    " MiB",
    " MB",
    " KiB",
    " KB",
];

/// The power of ten at the start of `rest` (" × 10^9", "×10^ 12"), as "×10^9", and its length
/// in bytes; `None` if there is none.
fn power_of_ten(rest: &str) -> Option<(String, usize)> {
    let after = rest.trim_start().strip_prefix('×')?.trim_start();
    let after = after
        .strip_prefix("10")?
        .trim_start()
        .strip_prefix('^')?
        .trim_start();
    let digits = after
        .find(|c: char| !(c.is_ascii_digit() || c == '-'))
        .unwrap_or(after.len());
    (digits > 0).then(|| {
        let end = rest.len() - after.len() + digits;
        (format!("×10^{}", &after[..digits]), end)
    })
}

/// The unit right after a number (past a power of ten), if it is one of [`UNITS`], and how many
/// bytes of `rest` the figure takes.
fn unit_after(rest: &str) -> Option<(String, usize)> {
    let (power, skipped) = power_of_ten(rest).unwrap_or_default();
    let rest = &rest[skipped..];
    UNITS.iter().find_map(|unit| {
        let after = rest.strip_prefix(unit)?;
        (!after.chars().next().is_some_and(char::is_alphanumeric))
            .then(|| (format!("{power}{unit}"), skipped + unit.len()))
    })
}

/// Whether `rest` starts with a percentage sign ("60 % of the copy ceiling", "51% of peak", "a
/// 12.5 % efficiency"): every percentage is a figure someone measured or worked out.
fn percent(rest: &str) -> bool {
    rest.starts_with(" %") || rest.starts_with('%')
}

/// The typed figures of one line: a number (digits, commas, a decimal part, an en-dash range)
/// followed by one of [`UNITS`] (perhaps past a power of ten), directly by "×", or by "%".
fn figures(line: &str) -> Vec<String> {
    let line = untex(line);
    let chars: Vec<char> = line.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts = chars[i].is_ascii_digit()
            && (i == 0
                || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '.' || chars[i - 1] == '_'));
        if !starts {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < chars.len()
            && (chars[j].is_ascii_digit()
                || ((chars[j] == ',' || chars[j] == '.' || chars[j] == '–')
                    && chars.get(j + 1).is_some_and(|c| c.is_ascii_digit())))
        {
            j += 1;
        }
        let number: String = chars[i..j].iter().collect();
        let rest: String = chars[j..].iter().collect();
        if let Some((unit, len)) = unit_after(&rest) {
            found.push(format!("{number}{unit}"));
            j += rest[..len].chars().count();
        } else if rest.starts_with('×') {
            found.push(format!("{number}×"));
        } else if percent(&rest) {
            found.push(format!("{number} %"));
        }
        i = j.max(i + 1);
    }
    found
}

#[test]
fn measured_figures_in_prose_are_directives() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../book/src");
    let mut files = Vec::new();
    chapters(&root, &mut files);
    files.sort();
    let mut typed = Vec::new();
    let mut used = vec![false; ALLOWED.len()];
    for file in &files {
        let name = file
            .strip_prefix(&root)
            .expect("under book/src")
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(file).expect("chapter is readable");
        let mut fenced = false;
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                continue;
            }
            if fenced {
                continue;
            }
            for figure in figures(&prose(line)) {
                let allowed = ALLOWED
                    .iter()
                    .position(|(f, t, _)| *f == name && *t == figure);
                match allowed {
                    Some(entry) => used[entry] = true,
                    None if CITED.iter().any(|(t, _)| *t == figure) => {}
                    None => typed.push(format!("{name}:{}: `{figure}`", n + 1)),
                }
            }
        }
    }
    assert!(
        typed.is_empty(),
        "typed figures in prose — render them with {{{{#value}}}}/{{{{#ratio}}}}, or add them to ALLOWED with whose figure they are:\n{}",
        typed.join("\n")
    );
    let stale: Vec<String> = ALLOWED
        .iter()
        .zip(&used)
        .filter(|(_, used)| !**used)
        .map(|((chapter, figure, _), _)| format!("{chapter}: `{figure}`"))
        .collect();
    assert!(
        stale.is_empty(),
        "ALLOWED entries no chapter types any more — remove them:\n{}",
        stale.join("\n")
    );
}

#[test]
fn the_scanner_finds_typed_figures_and_skips_directives() {
    assert_eq!(
        figures("533 → 1634 GB/s, 3.1× and 20–30 cycles"),
        ["1634 GB/s", "3.1×", "20–30 cycles"]
    );
    assert_eq!(
        figures("60 % of the copy ceiling, 51% of peak, 87.5 % of the bytes, 56.2 TFLOP/s"),
        ["60 %", "51 %", "87.5 %", "56.2 TFLOP/s"]
    );
    assert_eq!(
        figures(
            "chose 121 registers, $34{,}816$ registers, 8 blocks per SM, 4 resident blocks, 184 bytes of spill stores"
        ),
        [
            "121 registers",
            "34,816 registers",
            "8 blocks per SM",
            "4 resident blocks",
            "184 bytes of spill"
        ]
    );
    assert_eq!(
        figures("2048 MiB of L1 → L2 writes, 290 MB, 16 KiB and 4.2 KB, not 4 GiB or 32 B"),
        ["2048 MiB", "290 MB", "16 KiB", "4.2 KB"]
    );
    assert_eq!(
        figures(
            "$$ \\frac{56.2 \\times 10^{12}\\ \\text{FLOP/s}}{4160 \\times 10^{9}\\ \\text{B/s}} \\approx 13.5\\ \\text{FLOP/byte} $$"
        ),
        ["56.2×10^12 FLOP/s", "4160×10^9 B/s", "13.5 FLOP/byte"]
    );
    assert_eq!(
        figures(
            "is $4166 / 32 \\approx 130$ GB/s, $\\approx 6\\times$, $34\\,\\%\\ \\text{of the peak}$"
        ),
        ["130 GB/s", "6×", "34 %"]
    );
    assert!(
        figures(&prose(
            "{{#value transpose.naive.gbs}} GB/s, `32 GB/s`, 32 × 32"
        ))
        .is_empty()
    );
}
