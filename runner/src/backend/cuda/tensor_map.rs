//! Tensor maps through the driver's `cuTensorMapEncodeTiled`, loaded at run time with the rest
//! of the driver: the descriptor the bulk tensor copy engine reads a buffer's tiles through.

use super::result;
use crate::backend::{DeviceError, TENSOR_MAP_BYTES, TensorMapBytes, TensorMapRequest};
use cudarc::driver::sys::{
    self as cu, CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave,
    CUtensorMapL2promotion, CUtensorMapSwizzle,
};
use kernelbook_core::spec::{ElemType, Swizzle};

/// The driver's element type for a buffer's.
fn data_type(elem: ElemType) -> CUtensorMapDataType {
    match elem {
        ElemType::F32 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        ElemType::F64 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
        ElemType::I32 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_INT32,
        ElemType::U32 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT32,
        ElemType::U64 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT64,
    }
}

fn swizzle(swizzle: Swizzle) -> CUtensorMapSwizzle {
    match swizzle {
        Swizzle::None => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
        Swizzle::B32 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
        Swizzle::B64 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
        Swizzle::B128 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
    }
}

/// Encodes `request` over the device memory at `address`, which the caller has checked holds
/// the whole tensor.
pub(super) fn encode(
    address: cu::CUdeviceptr,
    request: &TensorMapRequest<'_>,
) -> Result<TensorMapBytes, DeviceError> {
    let rank = request.dims.len();
    if rank == 0
        || rank > kernelbook_core::spec::MAX_TENSOR_RANK
        || request.box_dims.len() != rank
        || request.strides.len() + 1 != rank
    {
        return Err(DeviceError::invalid(
            "tensor map",
            format!(
                "{rank} dimensions, {} box sizes and {} strides do not describe a tensor",
                request.box_dims.len(),
                request.strides.len()
            ),
        ));
    }
    let element_strides = vec![1u32; rank];
    let mut map = cu::CUtensorMap {
        opaque: [0; TENSOR_MAP_BYTES / 8],
    };
    // SAFETY: every array the driver reads has the length it is told (`rank` entries for the
    // sizes, box and element strides, `rank - 1` for the strides, checked above), the map is a
    // live local of the driver's own type, and `address` is device memory that holds the whole
    // tensor (checked by `GpuDevice::tensor_map`). The driver only encodes; nothing is read
    // from the device here.
    let status = unsafe {
        cu::cuTensorMapEncodeTiled(
            &mut map,
            data_type(request.elem),
            rank as u32,
            address as *mut std::ffi::c_void,
            request.dims.as_ptr(),
            request.strides.as_ptr(),
            request.box_dims.as_ptr(),
            element_strides.as_ptr(),
            CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            swizzle(request.swizzle),
            CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_NONE,
            CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    status
        .result()
        .map_err(|e| result::error("tensor map", e))?;
    let mut bytes = TensorMapBytes([0; TENSOR_MAP_BYTES]);
    for (chunk, word) in bytes.0.chunks_exact_mut(8).zip(map.opaque) {
        chunk.copy_from_slice(&word.to_ne_bytes());
    }
    Ok(bytes)
}
