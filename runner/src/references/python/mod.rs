//! TEMPORARY stub of the helper's API (replaced on merge).
use crate::references::HostBuffer;
use kernelbook_core::KernelSource;
use kernelbook_core::spec::ElemType;
use std::collections::BTreeMap;
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct JobId(pub u64);

pub struct ReferenceJob<'a> {
    pub block: &'a KernelSource,
    pub inputs: Vec<HostBuffer<'a>>,
    pub params: &'a BTreeMap<String, f64>,
    pub output: &'a str,
    pub output_elem: ElemType,
    pub output_len: usize,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PythonReferenceError {
    #[error("{0}")]
    Unavailable(String),
    #[error("{traceback}")]
    Raised { traceback: String },
}

#[derive(Debug, Default)]
pub struct PythonReferences;
impl PythonReferences {
    pub fn new() -> Self { PythonReferences }
    pub fn with_python(_: &str) -> Self { PythonReferences }
    pub fn submit(&mut self, _job: &ReferenceJob<'_>) -> Result<JobId, PythonReferenceError> { Err(PythonReferenceError::Unavailable("stub".into())) }
    pub fn wait(&mut self, _id: JobId, _deadline: Instant) -> Result<Vec<u8>, PythonReferenceError> { Err(PythonReferenceError::Unavailable("stub".into())) }
}
