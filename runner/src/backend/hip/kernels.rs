//! Kernels on a [`HipDevice`]: loading a code object as a module, its resources and occupancy,
//! and launches with arguments checked against the code object's metadata.

use super::device::HipDevice;
use super::ffi::*;
use super::metadata::{is_amdgpu_elf, kernel_metadata};
use super::probe::to_u32;
use crate::backend::{BufferId, CompiledKernel, DeviceError, KernelArg, KernelId, LoadedKernel};
use kernelbook_core::results::LaunchShape;
use std::ffi::{CString, c_int, c_void};
use std::ptr;

#[derive(Debug)]
pub(super) struct Kernel {
    name: String,
    pub(super) module: HipModule,
    function: HipFunction,
    /// Byte size of each explicit parameter, from the code object's metadata.
    param_sizes: Vec<usize>,
    /// The code object the module was loaded from, kept for the module's lifetime (the runtime
    /// may read it after `hipModuleLoadData` returns).
    _image: Vec<u8>,
}

impl HipDevice {
    fn kernel(&self, id: KernelId) -> Result<&Kernel, DeviceError> {
        self.kernels
            .get(id.0)
            .ok_or_else(|| DeviceError::invalid("kernel", format!("no kernel {}", id.0)))
    }

    /// Loads `kernel`'s code object, finds its entry point and reads its resources; on any
    /// failure the module is unloaded again.
    pub(super) fn load_kernel(
        &mut self,
        kernel: &CompiledKernel,
    ) -> Result<(KernelId, LoadedKernel), DeviceError> {
        // `hipModuleLoadData` takes a bare pointer and parses what it finds there, so only
        // hand it an AMDGPU ELF code object (what hiprtc produces).
        if !is_amdgpu_elf(&kernel.image) {
            return Err(DeviceError::invalid(
                "load",
                format!(
                    "the image of `{}` is not an AMDGPU code object",
                    kernel.name
                ),
            ));
        }
        let name = CString::new(kernel.name.as_str())
            .map_err(|_| DeviceError::invalid("load", "the kernel name contains a NUL byte"))?;
        self.select("load")?;
        let image = kernel.image.clone();
        let mut module: HipModule = ptr::null_mut();
        // SAFETY: `image` is a complete ELF code object (checked above) in a heap buffer that is
        // stored with the module and so outlives it; the runtime writes one handle to a local.
        self.check("load", unsafe {
            (self.rt.module_load_data)(&mut module, image.as_ptr().cast::<c_void>())
        })?;
        match self.describe_module(module, &name, kernel, &image) {
            Ok((function, param_sizes, loaded)) => {
                self.kernels.push(Kernel {
                    name: kernel.name.clone(),
                    module,
                    function,
                    param_sizes,
                    _image: image,
                });
                Ok((KernelId(self.kernels.len() - 1), loaded))
            }
            Err(e) => {
                // SAFETY: the module was loaded just above and is not stored anywhere.
                let _ = unsafe { (self.rt.module_unload)(module) };
                Err(e)
            }
        }
    }

    /// The entry point of a just-loaded module, its parameter sizes and its resources.
    fn describe_module(
        &self,
        module: HipModule,
        name: &CString,
        kernel: &CompiledKernel,
        image: &[u8],
    ) -> Result<(HipFunction, Vec<usize>, LoadedKernel), DeviceError> {
        let mut function: HipFunction = ptr::null_mut();
        // SAFETY: the module is live and `name` is NUL-terminated; the runtime writes one
        // handle to a local.
        let found = unsafe { (self.rt.module_get_function)(&mut function, module, name.as_ptr()) };
        self.rt.check(found).map_err(|e| {
            DeviceError::of_kind(
                e.kind(),
                "load",
                format!(
                    "no kernel `{}` in the image (is it declared extern \"C\" __global__?): {e}",
                    kernel.name
                ),
            )
        })?;
        let metadata = kernel_metadata(image, &kernel.name).ok_or_else(|| {
            DeviceError::invalid(
                "load",
                format!(
                    "the code object of `{}` has no metadata kernelbook can read (code object \
                     v3 or newer expected), so its arguments cannot be checked",
                    kernel.name
                ),
            )
        })?;
        let loaded = self.resources(function)?;
        Ok((function, metadata.arg_sizes, loaded))
    }

    /// Registers (VGPRs), scratch and static LDS of a loaded function.
    fn resources(&self, function: HipFunction) -> Result<LoadedKernel, DeviceError> {
        let attribute = |which: c_int| -> Result<u32, DeviceError> {
            let mut value: c_int = 0;
            // SAFETY: the function handle is live while its module is (the caller has just
            // loaded it); the runtime writes one int to a local.
            self.check("load", unsafe {
                (self.rt.func_get_attribute)(&mut value, which, function)
            })?;
            Ok(to_u32(value))
        };
        Ok(LoadedKernel {
            registers: attribute(func_attr::NUM_REGS)?,
            local_bytes: attribute(func_attr::LOCAL_SIZE_BYTES)?,
            shared_bytes: attribute(func_attr::SHARED_SIZE_BYTES)?,
        })
    }

    /// Resident blocks per CU (`hipModuleOccupancyMaxActiveBlocksPerMultiprocessor`).
    pub(super) fn occupancy(
        &self,
        kernel: KernelId,
        block_threads: u32,
        dynamic_shared_bytes: u32,
    ) -> Result<u32, DeviceError> {
        let kernel = self.kernel(kernel)?;
        let threads = c_int::try_from(block_threads).map_err(|_| {
            DeviceError::invalid("occupancy", format!("{block_threads} threads is too many"))
        })?;
        let shared = usize::try_from(dynamic_shared_bytes).map_err(|_| {
            DeviceError::invalid(
                "occupancy",
                format!("{dynamic_shared_bytes} bytes is too many"),
            )
        })?;
        self.select("occupancy")?;
        let mut blocks: c_int = 0;
        // SAFETY: the function handle is live while its module is; the runtime writes one int
        // to a local.
        self.check("occupancy", unsafe {
            (self.rt.occupancy)(&mut blocks, kernel.function, threads, shared)
        })?;
        Ok(to_u32(blocks))
    }

    /// Each argument's bytes at the start of an 8-byte slot, in the kernel's byte order (the
    /// host's); `check_kernel_args` made sure each parameter is exactly that argument's size.
    fn argument_slots(&self, args: &[KernelArg]) -> Result<Vec<[u8; 8]>, DeviceError> {
        let mut slots = Vec::with_capacity(args.len());
        for arg in args {
            let mut slot = [0u8; 8];
            match *arg {
                KernelArg::Buffer(id) => {
                    let address = self.buffer_ptr("launch", id)? as usize as u64;
                    slot = address.to_ne_bytes();
                }
                KernelArg::I32(v) => slot[..4].copy_from_slice(&v.to_ne_bytes()),
                KernelArg::U32(v) => slot[..4].copy_from_slice(&v.to_ne_bytes()),
                KernelArg::I64(v) => slot = v.to_ne_bytes(),
                KernelArg::U64(v) => slot = v.to_ne_bytes(),
                KernelArg::F32(v) => slot[..4].copy_from_slice(&v.to_ne_bytes()),
            }
            slots.push(slot);
        }
        Ok(slots)
    }

    pub(super) fn launch(
        &self,
        kernel: KernelId,
        shape: &LaunchShape,
        args: &[KernelArg],
    ) -> Result<(), DeviceError> {
        let kernel = self.kernel(kernel)?;
        crate::backend::check_kernel_args(&kernel.name, &kernel.param_sizes, args)?;
        check_shape(shape)?;
        let mut slots = self.argument_slots(args)?;
        let mut params: Vec<*mut c_void> = slots
            .iter_mut()
            .map(|slot| slot.as_mut_ptr().cast::<c_void>())
            .collect();
        let params_ptr = if params.is_empty() {
            ptr::null_mut()
        } else {
            params.as_mut_ptr()
        };
        let [gx, gy, gz] = shape.grid;
        let [bx, by, bz] = shape.block;
        // SAFETY: `hipModuleLaunchKernel` reads one pointer per explicit kernel parameter from
        // `params` and copies that parameter's size from behind it. `check_kernel_args` matched
        // the number of arguments and each one's size against the code object's metadata, so
        // every read stays inside `slots`, which outlives the call (the runtime copies the
        // values when the launch is queued). The function handle and stream are live. That the
        // arguments mean what the kernel expects, and that it stays inside the buffers, is the
        // lab author's responsibility; the buffers outlive the launch because they are only
        // freed after a synchronize.
        let status = unsafe {
            (self.rt.module_launch_kernel)(
                kernel.function,
                gx,
                gy,
                gz,
                bx,
                by,
                bz,
                shape.shared_bytes,
                self.stream,
                params_ptr,
                ptr::null_mut(),
            )
        };
        self.rt.check(status).map_err(|e| {
            DeviceError::of_kind(e.kind(), "launch", format!("kernel `{}`: {e}", kernel.name))
        })
    }

    /// The device pointer of a buffer, for a kernel argument.
    fn buffer_ptr(
        &self,
        operation: &'static str,
        id: BufferId,
    ) -> Result<*mut c_void, DeviceError> {
        self.buffer(operation, id).map(|buffer| buffer.ptr)
    }
}

/// Refuses launches HIP cannot run, before the runtime answers a bare "invalid value": HIP
/// requires grid × block < 2³² in each dimension.
pub(super) fn check_shape(shape: &LaunchShape) -> Result<(), DeviceError> {
    for (axis, (&grid, &block)) in ["x", "y", "z"]
        .iter()
        .zip(shape.grid.iter().zip(shape.block.iter()))
    {
        if u64::from(grid) * u64::from(block) >= 1 << 32 {
            return Err(DeviceError::invalid(
                "launch",
                format!(
                    "{grid} blocks of {block} threads in {axis} make 2^32 or more work-items, \
                     which HIP cannot launch"
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::DeviceErrorKind;

    #[test]
    fn launches_past_two_to_the_32_work_items_are_refused() {
        let shape = |grid, block| LaunchShape {
            grid: [grid, 1, 1],
            block: [block, 1, 1],
            shared_bytes: 0,
        };
        assert!(check_shape(&shape(65536, 256)).is_ok());
        let refused = check_shape(&shape(1 << 22, 1024));
        assert_eq!(refused.map_err(|e| e.kind), Err(DeviceErrorKind::Invalid));
        assert!(check_shape(&shape((1 << 22) - 1, 1024)).is_ok());
    }

    #[test]
    fn arguments_are_checked_against_the_metadata() {
        let sizes = [8, 8, 4];
        let good = [
            KernelArg::Buffer(BufferId(0)),
            KernelArg::Buffer(BufferId(1)),
            KernelArg::I32(5),
        ];
        assert!(crate::backend::check_kernel_args("k", &sizes, &good).is_ok());
        let error = crate::backend::check_kernel_args("k", &sizes, &good[..2])
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            error.as_deref(),
            Some("launch: kernel `k` takes 3 parameters, the lab passes 2")
        );
        let wrong = [
            KernelArg::Buffer(BufferId(0)),
            KernelArg::Buffer(BufferId(1)),
            KernelArg::I64(5),
        ];
        let error = crate::backend::check_kernel_args("k", &sizes, &wrong)
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            error.as_deref(),
            Some("launch: parameter 3 of kernel `k` is 4 bytes, the lab passes an i64 (8 bytes)")
        );
        assert!(crate::backend::check_kernel_args("k", &[], &[]).is_ok());
    }
}
