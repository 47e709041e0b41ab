//! cuBLAS for the library peers ([`Op::Transpose`](crate::backend::Op): `geam` with A
//! transposed; `Op::Gemm`: `sgemm`, or `cublasGemmEx` on BF16), loaded on first use because the
//! library is hundreds of megabytes.

use super::result;
use crate::backend::{DeviceError, DeviceErrorKind};
use cudarc::cublas::{result as cublas_result, sys as cublas_sys};
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use std::ffi::c_int;
use std::sync::Arc;

/// What a cuBLAS status means for the caller.
fn classify(status: cublas_sys::cublasStatus_t) -> DeviceErrorKind {
    use cublas_sys::cublasStatus_t::*;
    match status {
        CUBLAS_STATUS_ALLOC_FAILED => DeviceErrorKind::OutOfMemory,
        CUBLAS_STATUS_INVALID_VALUE => DeviceErrorKind::Invalid,
        CUBLAS_STATUS_NOT_INITIALIZED
        | CUBLAS_STATUS_ARCH_MISMATCH
        | CUBLAS_STATUS_NOT_SUPPORTED
        | CUBLAS_STATUS_LICENSE_ERROR => DeviceErrorKind::Unavailable,
        _ => DeviceErrorKind::Other,
    }
}

fn error(operation: &'static str, what: &str, error: cublas_result::CublasError) -> DeviceError {
    DeviceError::of_kind(classify(error.0), operation, format!("{what}{error:?}"))
}

/// Starts opening the library on another thread, so that the first transpose does not wait.
pub(super) fn start_loading() {
    // SAFETY: only opens the shared library (cuBLAS and cuBLASLt, hundreds of MB) once,
    // behind a lock; no cuBLAS function is called.
    std::thread::spawn(|| unsafe { cublas_sys::is_culib_present() });
}

/// A cuBLAS handle bound to the device's stream, destroyed with the device.
#[derive(Debug)]
pub(super) struct Cublas {
    handle: cublas_sys::cublasHandle_t,
    stream: Arc<CudaStream>,
}

// SAFETY: cuBLAS handles may be used from any host thread as long as no two threads use one at
// the same time; the handle lives inside the CUDA device, whose every use goes through
// `&mut self` or the runner's mutex.
unsafe impl Send for Cublas {}

impl Drop for Cublas {
    fn drop(&mut self) {
        // SAFETY: the handle was created by `cublasCreate` and is destroyed once, here.
        let _ = unsafe { cublas_result::destroy_handle(self.handle) };
    }
}

impl Cublas {
    /// Loads cuBLAS and creates a handle on `stream`; an [`Unavailable`](DeviceErrorKind)
    /// error if the library is not installed.
    pub(super) fn create(ctx: &CudaContext, stream: &Arc<CudaStream>) -> Result<Self, DeviceError> {
        const OPERATION: &str = "cuBLAS";
        // SAFETY: only tries to open the library; a missing one is reported, not loaded.
        if !unsafe { cublas_sys::is_culib_present() } {
            return Err(DeviceError::of_kind(
                DeviceErrorKind::Unavailable,
                OPERATION,
                "cuBLAS (libcublas.so.13) could not be loaded",
            ));
        }
        ctx.bind_to_thread()
            .map_err(|e| result::error_about(OPERATION, "cuBLAS", e))?;
        let handle = Cublas {
            handle: cublas_result::create_handle()
                .map_err(|e| error(OPERATION, "cuBLAS could not start: ", e))?,
            stream: Arc::clone(stream),
        };
        // SAFETY: a live handle and this device's live stream.
        unsafe { cublas_result::set_stream(handle.handle, stream.cu_stream() as _) }
            .map_err(|e| error(OPERATION, "cuBLAS could not use the stream: ", e))?;
        Ok(handle)
    }

    /// e.g. "cuBLAS 13.0 geam".
    pub(super) fn name(&self) -> String {
        format!("{} geam", self.version())
    }

    /// e.g. "cuBLAS 13.1".
    pub(super) fn version(&self) -> String {
        let mut version: c_int = 0;
        // SAFETY: a live handle; cuBLAS writes one int through a pointer to a local.
        let _ = unsafe { cublas_sys::cublasGetVersion_v2(self.handle, &mut version) };
        format!("cuBLAS {}.{}", version / 10000, (version % 10000) / 100)
    }

    /// Queues the row-major fp32 product `c = a · b`, `a` of `m × k` and `b` of `k × n` floats,
    /// in cuBLAS's default math mode (true fp32: no TF32 unless the handle's math mode or
    /// NVIDIA_TF32_OVERRIDE asks for it, and neither is set here).
    pub(super) fn sgemm(
        &self,
        c: &mut CudaSlice<u8>,
        a: &CudaSlice<u8>,
        b: &CudaSlice<u8>,
        [m, n, k]: [usize; 3],
    ) -> Result<(), DeviceError> {
        const OPERATION: &str = "cuBLAS sgemm";
        let [m, n, k] = product_shape(OPERATION, [m, n, k], [(a, 4), (b, 4), (c, 4)])?;
        let (a_ptr, _a_sync) = a.device_ptr(&self.stream);
        let (b_ptr, _b_sync) = b.device_ptr(&self.stream);
        let (c_ptr, _c_sync) = c.device_ptr_mut(&self.stream);
        let (alpha, beta) = (1.0f32, 0.0f32);
        // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: cuBLAS sees B (n × k, ld n) times
        // A (k × m, ld k) into C (n × m, ld n), none transposed.
        // SAFETY: the three pointers are live allocations holding their matrices (checked
        // above), on the stream the handle is bound to; alpha and beta are host locals.
        unsafe {
            cublas_sys::cublasSgemm_v2(
                self.handle,
                cublas_sys::cublasOperation_t::CUBLAS_OP_N,
                cublas_sys::cublasOperation_t::CUBLAS_OP_N,
                n,
                m,
                k,
                &alpha,
                b_ptr as *const f32,
                n,
                a_ptr as *const f32,
                k,
                &beta,
                c_ptr as *mut f32,
                n,
            )
        }
        .result()
        .map_err(|e| error(OPERATION, "", e))
    }

    /// Queues the row-major product `c = a · b` of BF16 matrices (`a` of `m × k`, `b` of
    /// `k × n`) into fp32 `c` on the tensor cores: `cublasGemmEx` with BF16 inputs and fp32
    /// compute and accumulation.
    pub(super) fn gemm_bf16(
        &self,
        c: &mut CudaSlice<u8>,
        a: &CudaSlice<u8>,
        b: &CudaSlice<u8>,
        [m, n, k]: [usize; 3],
    ) -> Result<(), DeviceError> {
        use cublas_sys::{cublasComputeType_t, cublasGemmAlgo_t, cudaDataType};
        const OPERATION: &str = "cuBLAS gemmEx";
        let [m, n, k] = product_shape(OPERATION, [m, n, k], [(a, 2), (b, 2), (c, 4)])?;
        let (a_ptr, _a_sync) = a.device_ptr(&self.stream);
        let (b_ptr, _b_sync) = b.device_ptr(&self.stream);
        let (c_ptr, _c_sync) = c.device_ptr_mut(&self.stream);
        let (alpha, beta) = (1.0f32, 0.0f32);
        // As in `sgemm`: row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ.
        // SAFETY: the three pointers are live allocations holding their matrices (checked
        // above), on the stream the handle is bound to; alpha and beta are fp32 host locals,
        // as CUBLAS_COMPUTE_32F requires.
        unsafe {
            cublas_sys::cublasGemmEx(
                self.handle,
                cublas_sys::cublasOperation_t::CUBLAS_OP_N,
                cublas_sys::cublasOperation_t::CUBLAS_OP_N,
                n,
                m,
                k,
                (&alpha as *const f32).cast(),
                b_ptr as *const std::ffi::c_void,
                cudaDataType::CUDA_R_16BF,
                n,
                a_ptr as *const std::ffi::c_void,
                cudaDataType::CUDA_R_16BF,
                k,
                (&beta as *const f32).cast(),
                c_ptr as *mut std::ffi::c_void,
                cudaDataType::CUDA_R_32F,
                n,
                cublasComputeType_t::CUBLAS_COMPUTE_32F,
                cublasGemmAlgo_t::CUBLAS_GEMM_DFALT,
            )
        }
        .result()
        .map_err(|e| error(OPERATION, "", e))
    }

    /// Queues the transpose of the row-major `rows × cols` f32 matrix in `src` into `dst`.
    pub(super) fn transpose(
        &self,
        dst: &mut CudaSlice<u8>,
        src: &CudaSlice<u8>,
        rows: usize,
        cols: usize,
    ) -> Result<(), DeviceError> {
        const OPERATION: &str = "cuBLAS transpose";
        let bytes = rows
            .checked_mul(cols)
            .and_then(|n| n.checked_mul(4))
            .ok_or_else(|| DeviceError::invalid(OPERATION, "the matrix is too large"))?;
        let dims = |v: usize| {
            c_int::try_from(v)
                .map_err(|_| DeviceError::invalid(OPERATION, format!("{v} does not fit an int")))
        };
        let (m, n) = (dims(rows)?, dims(cols)?);
        if bytes > src.len() || bytes > dst.len() {
            return Err(DeviceError::invalid(
                OPERATION,
                format!("{rows} × {cols} floats do not fit the buffers"),
            ));
        }
        let (src_ptr, _src_sync) = src.device_ptr(&self.stream);
        let (dst_ptr, _dst_sync) = dst.device_ptr_mut(&self.stream);
        let (alpha, beta) = (1.0f32, 0.0f32);
        // Row-major rows × cols input is column-major A (cols × rows, lda = cols); the output
        // is column-major rows × cols (ldc = rows): C = alpha·Aᵀ + beta·B with beta = 0 and B
        // aliasing C, which cuBLAS allows when ldb = ldc and B is not transposed.
        // SAFETY: both pointers are live allocations of at least rows·cols floats (checked
        // above), on the stream the handle is bound to; alpha and beta are host locals.
        unsafe {
            cublas_sys::cublasSgeam(
                self.handle,
                cublas_sys::cublasOperation_t::CUBLAS_OP_T,
                cublas_sys::cublasOperation_t::CUBLAS_OP_N,
                m,
                n,
                &alpha,
                src_ptr as *const f32,
                n,
                &beta,
                dst_ptr as *const f32,
                m,
                dst_ptr as *mut f32,
                m,
            )
        }
        .result()
        .map_err(|e| error(OPERATION, "", e))
    }
}

/// cuBLAS, loaded on first use and kept (with the reason, if it could not be).
#[derive(Debug, Default)]
pub(super) struct Library(Option<Result<Cublas, DeviceError>>);

impl Library {
    pub(super) fn is_loaded(&self) -> bool {
        self.0.is_some()
    }

    /// The handle, created on first use.
    pub(super) fn get(
        &mut self,
        ctx: &CudaContext,
        stream: &Arc<CudaStream>,
    ) -> Result<&Cublas, DeviceError> {
        match self.0.get_or_insert_with(|| Cublas::create(ctx, stream)) {
            Ok(cublas) => Ok(cublas),
            Err(why) => Err(why.clone()),
        }
    }
}

/// The `[m, n, k]` of a row-major product `c = a · b` as cuBLAS's ints, once each buffer is
/// checked to hold its matrix (`a` of `m × k`, `b` of `k × n`, `c` of `m × n` elements, each of
/// the byte size beside it).
fn product_shape(
    operation: &'static str,
    [m, n, k]: [usize; 3],
    [(a, a_size), (b, b_size), (c, c_size)]: [(&CudaSlice<u8>, usize); 3],
) -> Result<[c_int; 3], DeviceError> {
    let fits = |buffer: &CudaSlice<u8>, rows: usize, cols: usize, size: usize| {
        rows.checked_mul(cols)
            .and_then(|elements| elements.checked_mul(size))
            .is_some_and(|bytes| bytes <= buffer.len())
    };
    if !(fits(a, m, k, a_size) && fits(b, k, n, b_size) && fits(c, m, n, c_size)) {
        return Err(DeviceError::invalid(
            operation,
            format!("an {m} × {n} × {k} product does not fit the buffers"),
        ));
    }
    let dim = |v: usize| {
        c_int::try_from(v)
            .map_err(|_| DeviceError::invalid(operation, format!("{v} does not fit an int")))
    };
    Ok([dim(m)?, dim(n)?, dim(k)?])
}

#[cfg(test)]
mod tests {
    use super::*;
    use cublas_sys::cublasStatus_t::*;

    #[test]
    fn cublas_statuses_have_kinds() {
        assert_eq!(
            classify(CUBLAS_STATUS_ALLOC_FAILED),
            DeviceErrorKind::OutOfMemory
        );
        assert_eq!(
            classify(CUBLAS_STATUS_INVALID_VALUE),
            DeviceErrorKind::Invalid
        );
        assert_eq!(
            classify(CUBLAS_STATUS_NOT_SUPPORTED),
            DeviceErrorKind::Unavailable
        );
        assert_eq!(
            classify(CUBLAS_STATUS_EXECUTION_FAILED),
            DeviceErrorKind::Other
        );
    }

    #[test]
    fn errors_read_as_before() {
        let e = error(
            "cuBLAS",
            "cuBLAS could not start: ",
            cublas_result::CublasError(CUBLAS_STATUS_NOT_INITIALIZED),
        );
        assert_eq!(
            e.message,
            "cuBLAS could not start: CublasError(CUBLAS_STATUS_NOT_INITIALIZED)"
        );
        assert_eq!(e.kind, DeviceErrorKind::Unavailable);
    }
}
