//! The bookkeeping on a vendor that records the primitives it is asked for.

use super::*;
use std::cell::RefCell;
use std::rc::Rc;

#[derive(Debug)]
struct Bytes(Vec<u8>);

impl DeviceMemory for Bytes {
    fn len(&self) -> usize {
        self.0.len()
    }
}

impl HostMemory for Bytes {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn bytes(&self, _: &'static str) -> Result<&[u8], DeviceError> {
        Ok(&self.0)
    }
    fn bytes_mut(&mut self, _: &'static str) -> Result<&mut [u8], DeviceError> {
        Ok(&mut self.0)
    }
}

/// Performs each primitive on the host and writes down its name.
#[derive(Debug, Default)]
struct Recorder {
    calls: Rc<RefCell<Vec<String>>>,
}

impl Recorder {
    fn note(&self, call: impl Into<String>) {
        self.calls.borrow_mut().push(call.into());
    }
}

impl Vendor for Recorder {
    type Buffer = Bytes;
    type Function = ();
    type Pinned = Bytes;

    fn memory(&self) -> Result<(u64, u64), DeviceError> {
        Ok((1, 2))
    }
    fn alloc_zeroed(&self, operation: &'static str, bytes: usize) -> Result<Bytes, DeviceError> {
        self.note(format!("alloc {bytes} ({operation})"));
        Ok(Bytes(vec![0; bytes]))
    }
    fn memset(&self, operation: &'static str, b: &mut Bytes, byte: u8) -> Result<(), DeviceError> {
        self.note(format!("memset {byte:#x} ({operation})"));
        b.0.fill(byte);
        Ok(())
    }
    fn copy_from_host(
        &self,
        _: &'static str,
        dst: &mut Bytes,
        src: &[u8],
    ) -> Result<(), DeviceError> {
        self.note("htod");
        dst.0[..src.len()].copy_from_slice(src);
        Ok(())
    }
    fn copy_to_host(
        &self,
        _: &'static str,
        dst: &mut [u8],
        src: &Bytes,
    ) -> Result<(), DeviceError> {
        self.note("dtoh");
        dst.copy_from_slice(&src.0[..dst.len()]);
        Ok(())
    }
    fn copy_from_pinned(
        &self,
        _: &'static str,
        dst: &mut Bytes,
        src: &Bytes,
    ) -> Result<(), DeviceError> {
        self.note("pinned htod");
        dst.0[..src.0.len()].copy_from_slice(&src.0);
        Ok(())
    }
    fn copy_to_pinned(
        &self,
        _: &'static str,
        dst: &mut Bytes,
        src: &Bytes,
    ) -> Result<(), DeviceError> {
        self.note("pinned dtoh");
        let n = dst.0.len();
        dst.0.copy_from_slice(&src.0[..n]);
        Ok(())
    }
    fn copy_device(
        &self,
        _: &'static str,
        dst: &mut Bytes,
        src: &Bytes,
        bytes: usize,
    ) -> Result<(), DeviceError> {
        self.note("dtod");
        dst.0[..bytes].copy_from_slice(&src.0[..bytes]);
        Ok(())
    }
    fn alloc_pinned(&self, _: &'static str, bytes: usize) -> Result<Bytes, DeviceError> {
        self.note(format!("pinned alloc {bytes}"));
        Ok(Bytes(vec![0; bytes]))
    }
    fn load(&self, kernel: &CompiledKernel) -> Result<(Kernel<()>, LoadedKernel), DeviceError> {
        self.note("load");
        let kernel = Kernel {
            name: kernel.name.clone(),
            param_sizes: Some(vec![8, 4]),
            function: (),
        };
        Ok((kernel, LoadedKernel::default()))
    }
    fn blocks_per_sm(&self, _: &Kernel<()>, _: u32, _: u32) -> Result<u32, DeviceError> {
        Ok(1)
    }
    fn launch(
        &self,
        kernel: &Kernel<()>,
        _: &LaunchShape,
        args: &[LaunchArg<'_, Bytes>],
    ) -> Result<(), DeviceError> {
        self.note(format!("launch {} with {} args", kernel.name, args.len()));
        Ok(())
    }
    fn record(&self, event: TimingEvent) -> Result<(), DeviceError> {
        self.note(format!("record {event:?}"));
        Ok(())
    }
    fn elapsed_ms(&self) -> Result<f32, DeviceError> {
        self.note("elapsed");
        Ok(1.5)
    }
    fn synchronize(&self, operation: &'static str) -> Result<(), DeviceError> {
        self.note(format!("sync ({operation})"));
        Ok(())
    }
    fn open_streams(&mut self, streams: usize, marks: usize) -> Result<(), DeviceError> {
        self.note(format!("open {streams} streams, {marks} events"));
        Ok(())
    }
    fn join_stream(&self, stream: usize, fork: bool) -> Result<(), DeviceError> {
        self.note(match fork {
            true => format!("s{stream} waits for main"),
            false => format!("main waits for s{stream}"),
        });
        Ok(())
    }
    fn copy_from_pinned_on(
        &self,
        stream: usize,
        _: &Bytes,
        _: &Bytes,
        offset: usize,
        bytes: usize,
    ) -> Result<(), DeviceError> {
        self.note(format!("s{stream} htod {offset}+{bytes}"));
        Ok(())
    }
    fn copy_to_pinned_on(
        &self,
        stream: usize,
        _: &mut Bytes,
        _: &Bytes,
        offset: usize,
        bytes: usize,
    ) -> Result<(), DeviceError> {
        self.note(format!("s{stream} dtoh {offset}+{bytes}"));
        Ok(())
    }
    fn launch_on(
        &self,
        stream: usize,
        kernel: &Kernel<()>,
        _: &LaunchShape,
        args: &[LaunchArg<'_, Bytes>],
    ) -> Result<(), DeviceError> {
        self.note(format!(
            "s{stream} launch {} ({} args)",
            kernel.name,
            args.len()
        ));
        Ok(())
    }
    fn mark(&self, stream: usize, mark: usize) -> Result<(), DeviceError> {
        self.note(format!("s{stream} mark {mark}"));
        Ok(())
    }
    fn mark_ms(&self, mark: usize) -> Result<f32, DeviceError> {
        Ok(mark as f32 * 0.5)
    }
    fn flush_bytes(&self, l2_bytes: u64) -> u64 {
        l2_bytes * 2
    }
    fn gemm(
        &mut self,
        c: &mut Bytes,
        [a, b]: [&Bytes; 2],
        [m, n, k]: [usize; 3],
        _: GemmPrecision,
    ) -> Result<(), DeviceError> {
        self.note(format!(
            "gemm {m}x{n}x{k} into {} from {} and {} bytes",
            c.0.len(),
            a.0.len(),
            b.0.len()
        ));
        Ok(())
    }
    fn address(&self, buffer: &Bytes) -> u64 {
        buffer.0.as_ptr() as usize as u64
    }
    fn encode_tensor_map(
        &self,
        buffer: &Bytes,
        request: &TensorMapRequest<'_>,
    ) -> Result<TensorMapBytes, DeviceError> {
        self.note(format!(
            "tensor map over {} bytes, dims {:?}",
            buffer.0.len(),
            request.dims
        ));
        Ok(TensorMapBytes([7; crate::backend::TENSOR_MAP_BYTES]))
    }
}

fn info() -> DeviceInfo {
    DeviceInfo {
        backend: kernelbook_core::results::DeviceApi::Fake,
        name: "Test GPU".into(),
        uuid: "GPU-test".into(),
        arch: "sm_90".into(),
        compute_capability: (9, 0),
        sm_count: 1,
        l2_bytes: 16,
        memory_bytes: 1 << 20,
        memory_clock_khz: 1,
        bus_width_bits: 1,
        sm_clock_khz: 1,
        max_threads_per_sm: 1,
        max_shared_bytes_per_block: 1,
        warp_size: 32,
        registers_per_sm: None,
        shared_bytes_per_sm: None,
    }
}

fn device() -> GpuDevice<Recorder> {
    GpuDevice::new(Recorder::default(), info(), "test 1.0".into())
}

fn calls(device: &GpuDevice<Recorder>) -> Vec<String> {
    device.vendor().calls.borrow_mut().drain(..).collect()
}

fn shape() -> LaunchShape {
    LaunchShape {
        grid: [1, 1, 1],
        block: [32, 1, 1],
        shared_bytes: 0,
    }
}

fn kernel() -> CompiledKernel {
    CompiledKernel {
        name: "copy".into(),
        image: Vec::new(),
        log: String::new(),
        options: Vec::new(),
    }
}

#[test]
fn only_the_op_sits_between_the_timing_events() -> Result<(), DeviceError> {
    let mut gpu = device();
    let (dst, src) = (gpu.alloc(8)?, gpu.alloc(8)?);
    gpu.flush_l2()?;
    calls(&gpu);
    let ms = gpu.time(&Op::Copy { dst, src, bytes: 8 })?;
    assert_eq!(ms, 1.5);
    assert_eq!(
        calls(&gpu),
        ["record Start", "dtod", "record End", "elapsed"]
    );
    Ok(())
}

#[test]
fn the_flush_buffer_is_allocated_once_and_written_with_a_new_byte_each_time()
-> Result<(), DeviceError> {
    let mut gpu = device();
    gpu.flush_l2()?;
    gpu.flush_l2()?;
    assert_eq!(
        calls(&gpu),
        [
            "alloc 32 (flush L2)",
            "memset 0x5a (flush L2)",
            "memset 0xa5 (flush L2)"
        ]
    );
    gpu.release_lab()?;
    gpu.flush_l2()?;
    assert_eq!(
        calls(&gpu),
        ["sync (synchronize)", "memset 0x5a (flush L2)"]
    );
    Ok(())
}

#[test]
fn wrong_requests_are_invalid_and_queue_nothing() -> Result<(), DeviceError> {
    let mut gpu = device();
    let a = gpu.alloc(8)?;
    let (k, _) = gpu.load(&kernel())?;
    calls(&gpu);
    let errors = [
        gpu.alloc(0),
        gpu.upload(a, &[0; 9]).map(|_| a),
        gpu.upload(BufferId(7), &[0]).map(|_| a),
        gpu.run(&Op::Copy {
            dst: a,
            src: a,
            bytes: 1,
        })
        .map(|_| a),
        gpu.run(&Op::Launch {
            kernel: k,
            shape: shape(),
            args: &[KernelArg::Buffer(a)],
        })
        .map(|_| a),
        gpu.run(&Op::Launch {
            kernel: KernelId(3),
            shape: shape(),
            args: &[],
        })
        .map(|_| a),
        gpu.run(&Op::HostToDevice {
            dst: a,
            bytes: 4,
            pinned: true,
        })
        .map(|_| a),
    ];
    for error in errors {
        assert_eq!(error.map_err(|e| e.kind), Err(DeviceErrorKind::Invalid));
    }
    assert!(calls(&gpu).is_empty());
    Ok(())
}

#[test]
fn launches_resolve_buffers_after_checking_the_arguments() -> Result<(), DeviceError> {
    let mut gpu = device();
    let a = gpu.alloc(8)?;
    let (k, _) = gpu.load(&kernel())?;
    calls(&gpu);
    gpu.run(&Op::Launch {
        kernel: k,
        shape: shape(),
        args: &[KernelArg::Buffer(a), KernelArg::U32(8)],
    })?;
    let unknown = gpu.run(&Op::Launch {
        kernel: k,
        shape: shape(),
        args: &[KernelArg::Buffer(BufferId(5)), KernelArg::U32(8)],
    });
    assert_eq!(
        unknown.map_err(|e| e.to_string()),
        Err("buffer: no buffer 5".into())
    );
    assert_eq!(calls(&gpu), ["launch copy with 2 args"]);
    Ok(())
}

#[test]
fn a_double_fills_an_8_byte_parameter_and_a_float_does_not() -> Result<(), DeviceError> {
    let mut gpu = device();
    let (k, _) = gpu.load(&kernel())?;
    // The recorder's kernel takes an 8-byte and then a 4-byte parameter.
    gpu.run(&Op::Launch {
        kernel: k,
        shape: shape(),
        args: &[KernelArg::F64(0.5), KernelArg::F32(0.5)],
    })?;
    for args in [
        [KernelArg::F32(0.5), KernelArg::F32(0.5)],
        [KernelArg::F64(0.5), KernelArg::F64(0.5)],
    ] {
        let err = gpu
            .run(&Op::Launch {
                kernel: k,
                shape: shape(),
                args: &args,
            })
            .expect_err("a size mismatch");
        assert!(err.to_string().contains("bytes, the lab passes"), "{err}");
    }
    Ok(())
}

#[test]
fn host_copies_go_through_the_staging_buffer_of_their_kind() -> Result<(), DeviceError> {
    let mut gpu = device();
    let a = gpu.alloc(4)?;
    for pinned in [false, true] {
        gpu.stage_host(pinned, &[1, 2, 3, 4])?;
        gpu.run(&Op::HostToDevice {
            dst: a,
            bytes: 4,
            pinned,
        })?;
        gpu.fill(a, 9)?;
        gpu.run(&Op::DeviceToHost {
            src: a,
            bytes: 4,
            pinned,
        })?;
        let mut out = [0; 4];
        gpu.read_host(pinned, &mut out)?;
        assert_eq!(out, [9; 4]);
    }
    let mut out = [0; 4];
    gpu.download(a, &mut out)?;
    assert_eq!(out, [9; 4]);
    let calls = calls(&gpu);
    assert_eq!(
        calls[1..],
        [
            "htod",
            "memset 0x9 (fill)",
            "dtoh",
            "sync (synchronize)",
            "pinned alloc 4",
            "pinned htod",
            "memset 0x9 (fill)",
            "pinned dtoh",
            "sync (synchronize)",
            "dtoh",
            "sync (download)"
        ]
    );
    Ok(())
}

#[test]
fn release_frees_the_lab_and_drop_waits_first() -> Result<(), DeviceError> {
    let mut gpu = device();
    let a = gpu.alloc(4)?;
    gpu.release_lab()?;
    assert!(gpu.fill(a, 0).is_err());
    let log = Rc::clone(&gpu.vendor().calls);
    drop(gpu);
    assert_eq!(log.borrow().last().map(String::as_str), Some("sync (drop)"));
    Ok(())
}

#[test]
fn a_vendor_without_a_library_transpose_says_so() {
    let mut gpu = device();
    assert_eq!(
        gpu.transpose_library().map_err(|e| e.kind),
        Err(DeviceErrorKind::Unavailable)
    );
}

#[test]
fn pairs_of_distinct_buffers() {
    let mut v = vec![10, 20, 30];
    if let Some((a, b)) = pair_mut(&mut v, 2, 0) {
        assert_eq!((*a, *b), (30, 10));
        *b = 11;
    }
    assert_eq!(v, [11, 20, 30]);
    let pair = pair_mut(&mut v, 0, 1).map(|(a, b)| (*a, *b));
    assert_eq!(pair, Some((11, 20)));
    assert!(pair_mut(&mut v, 1, 1).is_none());
    assert!(pair_mut(&mut v, 0, 3).is_none());
}

#[test]
fn a_library_product_reaches_the_vendor_only_with_matrices_that_fit() -> Result<(), DeviceError> {
    let mut gpu = device();
    let (c, a, b) = (gpu.alloc(4 * 6)?, gpu.alloc(4 * 8)?, gpu.alloc(4 * 12)?);
    calls(&gpu);
    // c (2 × 3) = a (2 × 4) · b (4 × 3)
    gpu.run(&Op::Gemm {
        c,
        a,
        b,
        m: 2,
        n: 3,
        k: 4,
        precision: GemmPrecision::F32,
    })?;
    assert_eq!(calls(&gpu), ["gemm 2x3x4 into 24 from 32 and 48 bytes"]);
    let too_big = gpu.run(&Op::Gemm {
        c,
        a,
        b,
        m: 3,
        n: 3,
        k: 4,
        precision: GemmPrecision::F32,
    });
    assert_eq!(too_big.map_err(|e| e.kind), Err(DeviceErrorKind::Invalid));
    let in_place = gpu.run(&Op::Gemm {
        c: a,
        a,
        b,
        m: 1,
        n: 1,
        k: 1,
        precision: GemmPrecision::F32,
    });
    assert_eq!(in_place.map_err(|e| e.kind), Err(DeviceErrorKind::Invalid));
    // a · a, both operands one buffer, is allowed.
    gpu.run(&Op::Gemm {
        c,
        a: b,
        b,
        m: 1,
        n: 1,
        k: 1,
        precision: GemmPrecision::F32,
    })?;
    assert_eq!(calls(&gpu), ["gemm 1x1x1 into 24 from 48 and 48 bytes"]);
    Ok(())
}

#[test]
fn a_tensor_map_must_lie_inside_its_buffer_and_is_passed_by_value() -> Result<(), DeviceError> {
    let mut gpu = device();
    let buffer = gpu.alloc(64 * 4)?;
    calls(&gpu);
    let request = |dims: &'static [u64], strides: &'static [u64]| TensorMapRequest {
        buffer,
        elem: kernelbook_core::spec::ElemType::F32,
        dims,
        strides,
        box_dims: &[8, 8],
        swizzle: kernelbook_core::spec::Swizzle::None,
    };
    let map = gpu.tensor_map(&request(&[8, 8], &[32]))?;
    assert_eq!(calls(&gpu), ["tensor map over 256 bytes, dims [8, 8]"]);
    // 8 rows of 8 floats with a 64-byte stride end at 7 × 64 + 32 bytes: past the buffer.
    let outside = gpu.tensor_map(&request(&[8, 8], &[64]));
    assert_eq!(outside.map_err(|e| e.kind), Err(DeviceErrorKind::Invalid));
    assert!(calls(&gpu).is_empty(), "the vendor never saw it");
    assert_eq!(
        super::resolve(&gpu.buffers, &gpu.tensor_maps, &KernelArg::TensorMap(map))
            .map(|arg| matches!(arg, LaunchArg::TensorMap(bytes) if bytes.0[0] == 7)),
        Ok(true)
    );
    Ok(())
}

#[test]
fn a_pipeline_issues_each_chunk_on_its_stream_between_the_timing_events() -> Result<(), DeviceError>
{
    use crate::backend::pipeline::{ChunkLaunch, Pipeline};
    let mut gpu = device();
    let (input, output) = (gpu.alloc(16)?, gpu.alloc(16)?);
    let (k, _) = gpu.load(&kernel())?;
    let chunk = |first| ChunkLaunch {
        kernel: k,
        shape: shape(),
        args: vec![KernelArg::Buffer(output), KernelArg::U32(first)],
    };
    let pipeline = Pipeline {
        streams: 2,
        input,
        output,
        chunk_bytes: 8,
        chunks: vec![chunk(0), chunk(2)],
    };
    // Nothing staged: refused before anything is queued.
    calls(&gpu);
    assert!(gpu.run(&Op::Pipeline(&pipeline)).is_err());
    gpu.stage_host(true, &[1; 16])?;
    calls(&gpu);
    gpu.time(&Op::Pipeline(&pipeline))?;
    assert_eq!(
        calls(&gpu),
        [
            "record Start",
            "open 2 streams, 12 events",
            "s0 waits for main",
            "s1 waits for main",
            "s0 mark 0",
            "s0 htod 0+8",
            "s0 mark 1",
            "s0 mark 2",
            "s0 launch copy (2 args)",
            "s0 mark 3",
            "s0 mark 4",
            "s0 dtoh 0+8",
            "s0 mark 5",
            "s1 mark 6",
            "s1 htod 8+8",
            "s1 mark 7",
            "s1 mark 8",
            "s1 launch copy (2 args)",
            "s1 mark 9",
            "s1 mark 10",
            "s1 dtoh 8+8",
            "s1 mark 11",
            "main waits for s0",
            "main waits for s1",
            "record End",
            "elapsed",
        ]
    );
    let spans = gpu.pipeline_spans()?;
    assert_eq!(spans.len(), 6);
    assert_eq!((spans[3].stream, spans[3].chunk), (1, 1));
    assert_eq!((spans[3].start_ms, spans[3].end_ms), (3.0, 3.5));
    Ok(())
}
