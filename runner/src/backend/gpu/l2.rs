//! [`Device::set_l2`](crate::backend::Device::set_l2) for every GPU backend: the window's
//! buffer found and its span checked, then the vendor's call.

use super::{GpuDevice, Vendor, buffer};
use crate::backend::DeviceError;
use crate::backend::l2::{L2Report, L2Request, VendorWindow};

impl<V: Vendor> GpuDevice<V> {
    pub(super) fn set_l2_controls(&mut self, request: &L2Request) -> Result<L2Report, DeviceError> {
        let operation = "L2 controls";
        let window = match &request.window {
            Some(window) => {
                let memory = buffer(operation, &self.buffers, window.buffer)?;
                if window.bytes == 0 || window.bytes > super::DeviceMemory::len(memory) {
                    return Err(DeviceError::invalid(
                        operation,
                        format!(
                            "an access-policy window of {} bytes over a {}-byte buffer",
                            window.bytes,
                            super::DeviceMemory::len(memory)
                        ),
                    ));
                }
                Some(VendorWindow {
                    buffer: memory,
                    bytes: window.bytes,
                    hit_ratio: window.hit_ratio,
                })
            }
            None => None,
        };
        self.vendor.set_l2(request, window)
    }
}
