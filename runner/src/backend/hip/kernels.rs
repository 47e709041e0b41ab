//! Kernels on [`Hip`]: loading a code object as a module, its resources and occupancy, and
//! launches (the arguments were checked against the code object's metadata by `GpuDevice`).

use super::device::{Buffer, Hip};
use super::ffi::*;
use super::loader::Runtime;
use super::metadata::{is_amdgpu_elf, kernel_metadata};
use super::probe::to_u32;
use crate::backend::gpu::{Kernel, LaunchArg};
use crate::backend::{CompiledKernel, DeviceError, LoadedKernel};
use kernelbook_core::results::LaunchShape;
use std::ffi::{CString, c_int, c_void};
use std::ptr;

/// A loaded module, unloaded when dropped.
#[derive(Debug)]
struct Module {
    rt: &'static Runtime,
    handle: HipModule,
    /// The code object the module was loaded from, freed after the module is unloaded (the
    /// runtime may read it after `hipModuleLoadData` returns).
    _image: Vec<u8>,
}

impl Drop for Module {
    fn drop(&mut self) {
        // SAFETY: the module came from `hipModuleLoadData` and is unloaded exactly once, here.
        // No queued work uses its functions any more: `GpuDevice` drops kernels only after a
        // synchronize, and a module that failed to load fully was never launched.
        let _ = unsafe { (self.rt.module_unload)(self.handle) };
    }
}

/// A kernel's entry point together with the module that keeps it loaded.
#[derive(Debug)]
pub struct Function {
    function: HipFunction,
    _module: Module,
}

// SAFETY: the module and function handles are owned by this value alone and HIP allows them to
// be used from any host thread.
unsafe impl Send for Function {}

impl Hip {
    /// Loads `kernel`'s code object, finds its entry point and reads its resources; on any
    /// failure the module is unloaded again.
    pub(super) fn load_kernel(
        &self,
        kernel: &CompiledKernel,
    ) -> Result<(Kernel<Function>, LoadedKernel), DeviceError> {
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
        let mut handle: HipModule = ptr::null_mut();
        // SAFETY: `image` is a complete ELF code object (checked above) in a heap buffer that is
        // stored with the module and so outlives it; the runtime writes one handle to a local.
        self.check("load", unsafe {
            (self.rt.module_load_data)(&mut handle, image.as_ptr().cast::<c_void>())
        })?;
        let module = Module {
            rt: self.rt,
            handle,
            _image: image,
        };
        let (function, param_sizes, loaded) = self.describe_module(&module, &name, kernel)?;
        let kernel = Kernel {
            name: kernel.name.clone(),
            param_sizes: Some(param_sizes),
            function: Function {
                function,
                _module: module,
            },
        };
        Ok((kernel, loaded))
    }

    /// The entry point of a just-loaded module, its parameter sizes and its resources.
    fn describe_module(
        &self,
        module: &Module,
        name: &CString,
        kernel: &CompiledKernel,
    ) -> Result<(HipFunction, Vec<usize>, LoadedKernel), DeviceError> {
        let mut function: HipFunction = ptr::null_mut();
        // SAFETY: the module is live and `name` is NUL-terminated; the runtime writes one
        // handle to a local.
        let found =
            unsafe { (self.rt.module_get_function)(&mut function, module.handle, name.as_ptr()) };
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
        let metadata = kernel_metadata(&kernel.image, &kernel.name).ok_or_else(|| {
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
        kernel: &Kernel<Function>,
        block_threads: u32,
        dynamic_shared_bytes: u32,
    ) -> Result<u32, DeviceError> {
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
        // SAFETY: the function handle is live while its module is (held by `kernel`); the
        // runtime writes one int to a local.
        self.check("occupancy", unsafe {
            (self.rt.occupancy)(&mut blocks, kernel.function.function, threads, shared)
        })?;
        Ok(to_u32(blocks))
    }

    pub(super) fn launch_kernel(
        &self,
        kernel: &Kernel<Function>,
        shape: &LaunchShape,
        args: &[LaunchArg<'_, Buffer>],
    ) -> Result<(), DeviceError> {
        check_shape(shape)?;
        let mut slots = argument_slots(args)?;
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
        // `params` and copies that parameter's size from behind it. `GpuDevice` matched the
        // number of arguments and each one's size against the code object's metadata, so every
        // read stays inside `slots`, which outlives the call (the runtime copies the values when
        // the launch is queued). The function handle (its module held by `kernel`) and the
        // stream are live. That the arguments mean what the kernel expects, and that it stays
        // inside the buffers, is the lab author's responsibility; the buffers outlive the launch
        // because `GpuDevice` frees them only after a synchronize.
        let status = unsafe {
            (self.rt.module_launch_kernel)(
                kernel.function.function,
                gx,
                gy,
                gz,
                bx,
                by,
                bz,
                shape.shared_bytes,
                self.stream.handle,
                params_ptr,
                ptr::null_mut(),
            )
        };
        self.rt.check(status).map_err(|e| {
            DeviceError::of_kind(e.kind(), "launch", format!("kernel `{}`: {e}", kernel.name))
        })
    }
}

/// Each argument's bytes at the start of an 8-byte slot, in the kernel's byte order (the host's);
/// `check_kernel_args` made sure each parameter is exactly that argument's size. HIP makes no
/// tensor maps, so none can be passed.
fn argument_slots(args: &[LaunchArg<'_, Buffer>]) -> Result<Vec<[u8; 8]>, DeviceError> {
    args.iter()
        .map(|arg| {
            let mut slot = [0u8; 8];
            match *arg {
                LaunchArg::Buffer(buffer) => slot = (buffer.ptr as usize as u64).to_ne_bytes(),
                LaunchArg::TensorMap(_) => {
                    return Err(DeviceError::of_kind(
                        crate::backend::DeviceErrorKind::Unavailable,
                        "launch",
                        "HIP has no tensor maps",
                    ));
                }
                LaunchArg::I32(v) => slot[..4].copy_from_slice(&v.to_ne_bytes()),
                LaunchArg::U32(v) => slot[..4].copy_from_slice(&v.to_ne_bytes()),
                LaunchArg::I64(v) => slot = v.to_ne_bytes(),
                LaunchArg::U64(v) => slot = v.to_ne_bytes(),
                LaunchArg::F32(v) => slot[..4].copy_from_slice(&v.to_ne_bytes()),
                LaunchArg::F64(v) => slot = v.to_ne_bytes(),
            }
            Ok(slot)
        })
        .collect()
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
    use crate::backend::{BufferId, DeviceErrorKind, KernelArg};

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
