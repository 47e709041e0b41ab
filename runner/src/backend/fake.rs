//! A CPU stand-in for a GPU, for testing the measurement loop without one. Kernels are
//! recognised by name: `copy*` copies its second argument into its first, `transpose*` transposes
//! an `n × n` f32 matrix (third argument), a name ending in `skip_last` leaves the last element
//! unwritten, anything else writes nothing. A kernel whose name contains `fault` fails its
//! launch with a sticky error, `invalid` with a harmless one, and `shared` uses 32 KiB of
//! static shared memory. A tensor-map argument stands for the buffer it views. A test may give a kernel name CPU code of its own
//! ([`FakeDevice::define`]): the stand-in for a kernel of a fixture book.
//!
//! It can stand in for a host of several GPUs, for the tests of `--devices` and of the Slurm jobs:
//! `KERNELBOOK_FAKE_DEVICES=N` makes N fake GPUs, of which `CUDA_VISIBLE_DEVICES` (indices or
//! UUIDs, as Slurm sets it for a job's GPUs) leaves some visible, renumbered from 0 as the CUDA
//! driver does. Fake GPU `k` has the UUID `GPU-fake-k` (`GPU-fake` for GPU 0) and takes
//! `1 + k` times as long as GPU 0, so that hosts' columns differ; `KERNELBOOK_FAKE_BUSY`
//! (indices) makes those GPUs refuse to open, as a GPU another process holds does.

use super::*;
use kernelbook_core::results::DeviceInfo;

/// CPU code standing in for a kernel: every buffer of the device, and the launch's arguments.
pub type HostKernel = fn(&mut [Vec<u8>], &[KernelArg]) -> Result<(), String>;

#[derive(Debug)]
pub struct FakeDevice {
    /// Kernels a test defined, by name.
    pub host_kernels: std::collections::BTreeMap<String, HostKernel>,
    pub info: DeviceInfo,
    pub buffers: Vec<Vec<u8>>,
    pub kernels: Vec<String>,
    /// The buffer of each tensor map made; a built-in kernel reads a tensor-map argument as
    /// that buffer.
    pub tensor_maps: Vec<BufferId>,
    pub flushes: usize,
    pub timed: usize,
    pub launches: usize,
    /// The host staging buffer.
    pub host: Vec<u8>,
    /// Which fake GPU of the host this is: its times are `1 + index` times GPU 0's.
    pub index: usize,
    /// The pipeline timed last and its simulated event times ([`pipeline::simulate`]).
    pub last_pipeline: Option<(pipeline::Pipeline, Vec<f64>)>,
    /// Every L2 request made, in order, and the L2 controls now in force.
    pub l2_requests: Vec<l2::L2Request>,
    pub l2: l2::L2Report,
    /// Refuse L2 controls as a backend without them does (HIP's).
    pub no_l2_controls: bool,
}

/// Written in a kernel's source, it makes the fake device leave the output's last element
/// unwritten, whatever the kernel is called.
pub const FAKE_SKIP_LAST: &str = "fake: skip_last";

/// How many fake GPUs the host has (default 1).
pub const DEVICES_ENV: &str = "KERNELBOOK_FAKE_DEVICES";
/// Fake GPUs (host indices) that refuse to open, as a GPU in another process's hands does.
pub const BUSY_ENV: &str = "KERNELBOOK_FAKE_BUSY";

/// The UUID of fake GPU `index` of the host.
pub fn fake_uuid(index: usize) -> String {
    if index == 0 {
        "GPU-fake".into()
    } else {
        format!("GPU-fake-{index}")
    }
}

/// The host indices of the fake GPUs a process sees, in the order it numbers them: all of the
/// `count` the host has, or those `visible` names (`CUDA_VISIBLE_DEVICES`: indices or UUIDs,
/// comma-separated; as the CUDA driver does, the list ends at the first entry that names no GPU).
pub fn visible_indices(count: usize, visible: Option<&str>) -> Vec<usize> {
    let Some(visible) = visible else {
        return (0..count).collect();
    };
    let mut seen = Vec::new();
    for entry in visible.split(',').map(str::trim) {
        let index = entry
            .parse::<usize>()
            .ok()
            .or_else(|| (0..count).find(|&i| fake_uuid(i) == entry));
        match index {
            Some(index) if index < count && !seen.contains(&index) => seen.push(index),
            _ => break,
        }
    }
    seen
}

/// The fake GPUs this process sees (host indices), from [`DEVICES_ENV`] and
/// `CUDA_VISIBLE_DEVICES`.
pub fn visible_from_env() -> Vec<usize> {
    let count = std::env::var(DEVICES_ENV)
        .ok()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(1);
    visible_indices(count, std::env::var("CUDA_VISIBLE_DEVICES").ok().as_deref())
}

/// Whether [`BUSY_ENV`] names fake GPU `index` of the host.
pub fn busy(index: usize) -> bool {
    std::env::var(BUSY_ENV).is_ok_and(|list| {
        list.split(',')
            .any(|entry| entry.trim().parse() == Ok(index))
    })
}

/// The fake GPU's L2 controls before any is set: a 64-byte fill, no set-aside, no window, and
/// limits of 512 KiB persisting (half its L2) and 1 MiB windows, to which it clamps requests
/// as a driver does.
pub const FAKE_L2_DEFAULTS: l2::L2Report = l2::L2Report {
    fetch_granularity: 64,
    persisting_bytes: 0,
    window: None,
    max_persisting_bytes: Some(512 << 10),
    max_window_bytes: Some(1 << 20),
};

impl Default for FakeDevice {
    fn default() -> Self {
        FakeDevice {
            host_kernels: Default::default(),
            info: DeviceInfo {
                backend: kernelbook_core::results::DeviceApi::Fake,
                name: "Fake GPU".into(),
                uuid: "GPU-fake".into(),
                arch: "sm_90".into(),
                compute_capability: (9, 0),
                sm_count: 4,
                l2_bytes: 1 << 20,
                memory_bytes: 1 << 30,
                memory_clock_khz: 1_000_000,
                bus_width_bits: 256,
                sm_clock_khz: 1_000_000,
                max_threads_per_sm: 2048,
                max_shared_bytes_per_block: 49152,
                warp_size: 32,
                registers_per_sm: Some(65_536),
                shared_bytes_per_sm: Some(65_536),
            },
            buffers: Vec::new(),
            kernels: Vec::new(),
            tensor_maps: Vec::new(),
            flushes: 0,
            timed: 0,
            launches: 0,
            host: Vec::new(),
            index: 0,
            last_pipeline: None,
            l2_requests: Vec::new(),
            l2: FAKE_L2_DEFAULTS,
            no_l2_controls: false,
        }
    }
}

impl FakeDevice {
    pub fn new() -> Self {
        Self::default()
    }

    /// Each chunk in turn: its bytes of the staging memory into the input, the kernel, its
    /// bytes of the output back into the staging memory.
    fn run_pipeline(&mut self, pipeline: &pipeline::Pipeline) -> Result<(), DeviceError> {
        let step = pipeline.chunk_bytes;
        for (chunk, launch) in pipeline.chunks.iter().enumerate() {
            let range = chunk * step..(chunk + 1) * step;
            let data = self
                .host
                .get(range.clone())
                .ok_or_else(|| DeviceError::invalid("pipeline", "nothing staged"))?
                .to_vec();
            self.buffers[pipeline.input.0][range.clone()].copy_from_slice(&data);
            self.run(&Op::Launch {
                kernel: launch.kernel,
                shape: launch.shape,
                args: &launch.args,
            })?;
            let out = self.buffers[pipeline.output.0][range.clone()].to_vec();
            self.host[range].copy_from_slice(&out);
        }
        Ok(())
    }

    /// Fake GPU `index` of the host (see the module documentation).
    pub fn gpu(index: usize) -> Self {
        let mut device = FakeDevice {
            index,
            ..Self::default()
        };
        device.info.uuid = fake_uuid(index);
        device
    }

    /// Runs `kernel` whenever a kernel named `name` is launched.
    pub fn define(&mut self, name: &str, kernel: HostKernel) {
        self.host_kernels.insert(name.to_string(), kernel);
    }

    fn buffer_arg(&self, args: &[KernelArg], i: usize) -> Result<usize, DeviceError> {
        let buffer = match args.get(i) {
            Some(KernelArg::TensorMap(map)) => self.tensor_maps.get(map.0),
            Some(KernelArg::Buffer(buffer)) => Some(buffer),
            _ => None,
        };
        match buffer {
            Some(BufferId(id)) if *id < self.buffers.len() => Ok(*id),
            _ => Err(DeviceError::new(
                "launch",
                format!("argument {i} is not a buffer"),
            )),
        }
    }
}

impl Device for FakeDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Keeps the request and reports it back clamped to [`FAKE_L2_DEFAULTS`]' limits.
    fn set_l2(&mut self, request: &l2::L2Request) -> Result<l2::L2Report, DeviceError> {
        if self.no_l2_controls {
            return Err(l2::unsupported());
        }
        self.l2_requests.push(*request);
        let max = |limit: Option<u64>| limit.unwrap_or(u64::MAX);
        if let Some(bytes) = request.fetch_granularity {
            self.l2.fetch_granularity = bytes.min(128);
        }
        if let Some(bytes) = request.persisting_bytes {
            self.l2.persisting_bytes = bytes.min(max(self.l2.max_persisting_bytes));
        }
        self.l2.window = match request.window {
            Some(window) if window.buffer.0 >= self.buffers.len() => {
                return Err(DeviceError::invalid("L2 controls", "no such buffer"));
            }
            Some(window) => Some((
                (window.bytes as u64).min(max(self.l2.max_window_bytes)),
                window.hit_ratio,
            )),
            None => None,
        };
        Ok(self.l2)
    }
    fn driver_version(&self) -> String {
        "fake 1.0".into()
    }
    fn memory(&self) -> Result<(u64, u64), DeviceError> {
        let used: u64 = self.buffers.iter().map(|b| b.len() as u64).sum();
        Ok((self.info.memory_bytes - used, self.info.memory_bytes))
    }
    fn alloc(&mut self, bytes: usize) -> Result<BufferId, DeviceError> {
        self.buffers.push(vec![0; bytes]);
        Ok(BufferId(self.buffers.len() - 1))
    }
    /// Addresses as a driver hands them out: from a fixed base, each buffer 2 MiB-aligned
    /// after the one before.
    fn address(&self, buffer: BufferId) -> Option<u64> {
        const BASE: u64 = 0x7f00_0000_0000;
        const ALIGN: u64 = 2 << 20;
        let before = self.buffers.get(..buffer.0)?;
        self.buffers.get(buffer.0)?;
        Some(before.iter().fold(BASE, |at, b| {
            at + (b.len() as u64).div_ceil(ALIGN).max(1) * ALIGN
        }))
    }
    fn upload(&mut self, buffer: BufferId, data: &[u8]) -> Result<(), DeviceError> {
        self.buffers[buffer.0][..data.len()].copy_from_slice(data);
        Ok(())
    }
    fn download(&mut self, buffer: BufferId, out: &mut [u8]) -> Result<(), DeviceError> {
        out.copy_from_slice(&self.buffers[buffer.0][..out.len()]);
        Ok(())
    }
    fn read_back(&mut self, buffer: BufferId, bytes: usize) -> Result<&[u8], DeviceError> {
        self.buffers[buffer.0]
            .get(..bytes)
            .ok_or_else(|| DeviceError::invalid("read back", "range out of bounds"))
    }
    fn fill(&mut self, buffer: BufferId, byte: u8) -> Result<(), DeviceError> {
        self.buffers[buffer.0].fill(byte);
        Ok(())
    }
    fn load(&mut self, kernel: &CompiledKernel) -> Result<(KernelId, LoadedKernel), DeviceError> {
        // A source that says `fake: skip_last` (the fake compiler keeps the source as the
        // image) behaves as a kernel whose name ends so: a learner's wrong kernel keeps the
        // starter's name.
        let skips_last =
            std::str::from_utf8(&kernel.image).is_ok_and(|s| s.contains(FAKE_SKIP_LAST));
        let name = if skips_last {
            format!("{}_skip_last", kernel.name)
        } else {
            kernel.name.clone()
        };
        self.kernels.push(name);
        Ok((
            KernelId(self.kernels.len() - 1),
            LoadedKernel {
                registers: 16,
                local_bytes: 0,
                shared_bytes: if kernel.name.contains("shared") {
                    32 << 10
                } else {
                    0
                },
            },
        ))
    }
    fn tensor_map(&mut self, request: &TensorMapRequest<'_>) -> Result<TensorMapId, DeviceError> {
        if request.buffer.0 >= self.buffers.len() {
            return Err(DeviceError::invalid("tensor map", "no such buffer"));
        }
        self.tensor_maps.push(request.buffer);
        Ok(TensorMapId(self.tensor_maps.len() - 1))
    }
    fn blocks_per_sm(&self, _: KernelId, block_threads: u32, _: u32) -> Result<u32, DeviceError> {
        Ok((2048 / block_threads.max(1)).min(32))
    }
    fn transpose_library(&mut self) -> Result<String, DeviceError> {
        Ok("fake BLAS".into())
    }
    fn gemm_library(&mut self, precision: GemmPrecision) -> Result<String, DeviceError> {
        Ok(match precision {
            GemmPrecision::F32 => "fake BLAS sgemm".into(),
            GemmPrecision::Bf16 => "fake BLAS gemm bf16".into(),
        })
    }
    fn stage_host(&mut self, _pinned: bool, data: &[u8]) -> Result<(), DeviceError> {
        self.host = data.to_vec();
        Ok(())
    }
    fn read_host(&mut self, _pinned: bool, out: &mut [u8]) -> Result<(), DeviceError> {
        let staged = self
            .host
            .get(..out.len())
            .ok_or_else(|| DeviceError::new("read host", "too small"))?;
        out.copy_from_slice(staged);
        Ok(())
    }
    fn run(&mut self, op: &Op<'_>) -> Result<(), DeviceError> {
        self.launches += 1;
        match *op {
            Op::Sequence(ops) => {
                for op in ops {
                    self.run(op)?;
                }
            }
            Op::Pipeline(pipeline) => self.run_pipeline(pipeline)?,
            Op::HostToDevice { dst, bytes, .. } => {
                let data = self.host[..bytes].to_vec();
                self.buffers[dst.0][..bytes].copy_from_slice(&data);
            }
            Op::DeviceToHost { src, bytes, .. } => {
                self.host = self.buffers[src.0][..bytes].to_vec();
            }
            Op::Transpose {
                dst,
                src,
                rows,
                cols,
            } => {
                let data = self.buffers[src.0].clone();
                self.buffers[dst.0] = crate::references::transpose::transpose(&data, rows, cols, 4);
            }
            Op::Gemm {
                c,
                a,
                b,
                m,
                n,
                k,
                precision,
            } => {
                let input = |id: BufferId| match precision {
                    GemmPrecision::F32 => self.buffers[id.0].clone(),
                    // BF16 is the top half of an f32's bits.
                    GemmPrecision::Bf16 => self.buffers[id.0]
                        .chunks_exact(2)
                        .flat_map(|h| [0, 0, h[0], h[1]])
                        .collect(),
                };
                let product = matmul(&input(a), &input(b), [m, n, k]);
                self.buffers[c.0][..product.len()].copy_from_slice(&product);
            }
            Op::Copy { dst, src, bytes } => {
                let data = self.buffers[src.0][..bytes].to_vec();
                self.buffers[dst.0][..bytes].copy_from_slice(&data);
            }
            Op::Launch { kernel, args, .. } => {
                let name = self.kernels[kernel.0].clone();
                if let Some(host) = self.host_kernels.get(&name) {
                    return host(&mut self.buffers, args)
                        .map_err(|message| DeviceError::new("launch", message));
                }
                if name.contains("fault") {
                    return Err(DeviceError::sticky("launch", "an illegal address (fake)"));
                }
                if name.contains("invalid") {
                    return Err(DeviceError::invalid("launch", "an invalid argument (fake)"));
                }
                let (dst, src) = (self.buffer_arg(args, 0)?, self.buffer_arg(args, 1)?);
                let data = self.buffers[src].clone();
                let before = self.buffers[dst].clone();
                if name.starts_with("copy") {
                    self.buffers[dst].copy_from_slice(&data);
                } else if name.starts_with("transpose") {
                    let Some(KernelArg::I32(n)) = args.get(2) else {
                        return Err(DeviceError::new("launch", "transpose needs n"));
                    };
                    let n = *n as usize;
                    self.buffers[dst] = crate::references::transpose::transpose(&data, n, n, 4);
                }
                if name.ends_with("skip_last") {
                    let end = before.len() - 4;
                    self.buffers[dst][end..].copy_from_slice(&before[end..]);
                }
            }
        }
        Ok(())
    }
    fn time(&mut self, op: &Op<'_>) -> Result<f64, DeviceError> {
        self.run(op)?;
        self.timed += 1;
        if let Op::Pipeline(pipeline) = op {
            // Each part 1 ms per chunk, times the GPU's slowness.
            let part = (1 + self.index) as f64;
            let (marks, total) = pipeline::simulate(pipeline, [part; 3]);
            self.last_pipeline = Some(((*pipeline).clone(), marks));
            return Ok(total);
        }
        // A steady 1 ms with a little deterministic jitter; slower on the host's later GPUs.
        Ok((1.0 + 0.001 * (self.timed % 3) as f64) * (1 + self.index) as f64)
    }
    fn pipeline_spans(
        &mut self,
    ) -> Result<Vec<kernelbook_core::results::timeline::Span>, DeviceError> {
        let (pipeline, marks) = self
            .last_pipeline
            .as_ref()
            .ok_or_else(|| DeviceError::invalid("pipeline", "no pipeline was timed"))?;
        pipeline.spans(marks)
    }
    fn flush_l2(&mut self) -> Result<(), DeviceError> {
        self.flushes += 1;
        Ok(())
    }
    fn release_lab(&mut self) -> Result<(), DeviceError> {
        self.tensor_maps.clear();
        self.buffers.clear();
        self.kernels.clear();
        self.host.clear();
        Ok(())
    }

    fn synchronize(&mut self) -> Result<(), DeviceError> {
        Ok(())
    }
}

/// Row-major f32 `a · b` (`m × k` by `k × n`) as little-endian bytes, summed in k's order.
fn matmul(a: &[u8], b: &[u8], [m, n, k]: [usize; 3]) -> Vec<u8> {
    let at = |bytes: &[u8], i: usize| {
        f32::from_le_bytes([
            bytes[4 * i],
            bytes[4 * i + 1],
            bytes[4 * i + 2],
            bytes[4 * i + 3],
        ])
    };
    (0..m * n)
        .flat_map(|cell| {
            let (row, col) = (cell / n, cell % n);
            let sum: f32 = (0..k)
                .map(|i| at(a, row * k + i) * at(b, i * n + col))
                .sum();
            sum.to_le_bytes()
        })
        .collect()
}

/// Compiles anything, except sources containing `#error`, which it rejects with that line.
#[derive(Debug, Default)]
pub struct FakeCompiler;

impl Compiler for FakeCompiler {
    fn version(&self) -> String {
        "fake compiler".into()
    }
    fn compile(&self, request: &CompileRequest<'_>) -> Result<CompiledKernel, CompileError> {
        if let Some((line, text)) = request
            .source
            .lines()
            .enumerate()
            .find(|(_, l)| l.contains("#error"))
        {
            return Err(CompileError::Rejected {
                log: format!("{}.cu({}): error: {}", request.name, line + 1, text.trim()),
                options: vec![],
            });
        }
        Ok(CompiledKernel {
            name: request.name.to_string(),
            image: request.source.as_bytes().to_vec(),
            log: format!(
                "ptxas info    : Function properties for {}\n    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n",
                request.name
            ),
            options: vec![],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As the CUDA driver reads `CUDA_VISIBLE_DEVICES`: indices or UUIDs, renumbered from 0 in
    /// the order given, the list cut at the first entry that names no GPU.
    #[test]
    fn visible_devices_are_read_as_the_cuda_driver_reads_them() {
        assert_eq!(visible_indices(2, None), vec![0, 1]);
        assert_eq!(visible_indices(3, Some("2,0")), vec![2, 0]);
        assert_eq!(visible_indices(2, Some("GPU-fake-1")), vec![1]);
        assert_eq!(visible_indices(2, Some("1,7,0")), vec![1]);
        assert_eq!(visible_indices(2, Some("")), Vec::<usize>::new());
        assert_eq!(visible_indices(2, Some("0,0")), vec![0]);
    }

    #[test]
    fn later_gpus_of_the_host_are_slower_and_named_apart() {
        let (mut first, mut second) = (FakeDevice::gpu(0), FakeDevice::gpu(1));
        assert_eq!(first.info.uuid, "GPU-fake");
        assert_eq!(second.info.uuid, "GPU-fake-1");
        let (a, b) = (first.alloc(4).expect("a"), second.alloc(4).expect("b"));
        let one = first
            .time(&Op::Copy {
                dst: a,
                src: a,
                bytes: 4,
            })
            .expect("time");
        let two = second
            .time(&Op::Copy {
                dst: b,
                src: b,
                bytes: 4,
            })
            .expect("time");
        assert!((two / one - 2.0).abs() < 1e-9, "{one} {two}");
    }
}
