//! [`compile`]: a [`LabSpec`] and the device's limits in, a [`LabPlan`] out, or the first
//! problem found, at the lab file's line.

use super::{
    ArgPlan, BufferPlan, CheckPlan, CounterPlan, DeviceCopyOp, Direction, GemmOp, GemmPrecision,
    HostCopyOp, KernelBuild, KernelOp, LabPlan, LaunchPlan, OpPlan, PythonOp, ReferencePlan,
    Target, TensorMapPlan, TimingPlan, TransposeOp, VariantPlan,
};
use crate::references::{self, Comparison};
use kernelbook_core::expr::{Expr, Params};
use kernelbook_core::results::{VariantParams, Work};
use kernelbook_core::spec::{
    ArgShape, ArgSpec, ArgValue, Builtin, BuiltinCheck, BytesMoved, CheckKind, CheckSpec,
    CompareRule, DeviceParams, ElemType, Fill, LabError, LabSpec, LaunchSpec, PythonCheck,
    ScalarType, VariantSpec, compile_flags,
};
use kernelbook_core::stats::StoppingRule;
use kernelbook_core::{KernelSource, Language};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod pipeline;

/// The runner's own measuring settings, which a lab's `[timing]` may override.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    pub rule: StoppingRule,
    /// Untimed runs of each variant before sampling.
    pub warmup_runs: usize,
}

impl Default for Measurement {
    fn default() -> Self {
        Measurement {
            rule: StoppingRule::default(),
            warmup_runs: 3,
        }
    }
}

/// The longest time limit a lab may set: a day. Longer is a typo, and an `Instant` past it
/// could overflow.
const MAX_TIMEOUT_S: u64 = 24 * 60 * 60;

/// Compiles `lab` for `target`. `kernels` holds the book's kernel blocks by name; a kernel the
/// lab names that is not there is an error at the line naming it.
pub fn compile(
    lab: &LabSpec,
    kernels: &BTreeMap<String, KernelSource>,
    target: &Target,
    measurement: &Measurement,
) -> Result<LabPlan, LabError> {
    let mut compiler = PlanCompiler {
        lab,
        kernels,
        target,
        builds: Vec::new(),
        checks: Vec::new(),
        tensor_maps: Vec::new(),
    };
    let buffers = compiler.buffers()?;
    compiler.tensor_maps = lab
        .tensor_maps
        .iter()
        .map(|spec| super::hardware::tensor_map(lab, spec, &buffers, &compiler.env(None)))
        .collect::<Result<Vec<_>, _>>()?;
    let variants = lab
        .variants
        .iter()
        .map(|variant| compiler.variant(variant, &buffers))
        .collect::<Result<Vec<_>, _>>()?;
    let timeout_s = lab.timeout_s.unwrap_or(120);
    if !(1..=MAX_TIMEOUT_S).contains(&timeout_s) {
        return Err(lab.error_at(
            "timeout_s",
            format!("timeout_s = {timeout_s} must be between 1 and {MAX_TIMEOUT_S} seconds"),
        ));
    }
    Ok(LabPlan {
        lab: lab.name.clone(),
        params: lab.params.clone(),
        target: target.clone(),
        ceiling: lab.ceiling.clone(),
        profile: lab.profile,
        timeout_s,
        timing: TimingPlan {
            rule: lab.stopping_rule(&measurement.rule),
            warmup_runs: measurement.warmup_runs,
        },
        buffers,
        tensor_maps: compiler.tensor_maps,
        builds: compiler.builds,
        checks: compiler.checks,
        variants,
    })
}

/// The state of one compilation: builds and checks are shared between variants, so they are
/// collected as the variants are compiled.
struct PlanCompiler<'a> {
    lab: &'a LabSpec,
    kernels: &'a BTreeMap<String, KernelSource>,
    target: &'a Target,
    builds: Vec<KernelBuild>,
    checks: Vec<CheckPlan>,
    tensor_maps: Vec<TensorMapPlan>,
}

impl PlanCompiler<'_> {
    /// What the expressions of `variant` (or, for `None`, the lab's buffers) are evaluated
    /// with: the target's device properties and the lab's parameters, with the variant's own.
    fn env(&self, variant: Option<&VariantSpec>) -> Params {
        let params = variant.map_or_else(|| self.lab.params.clone(), |v| self.lab.params_for(v));
        self.target.device_params().bind(&params)
    }

    /// Evaluates `expr` over `env`; an error names the line it is written on and what it is.
    fn eval(&self, expr: &Expr, what: &str, env: &Params) -> Result<i64, LabError> {
        expr.eval(env)
            .map_err(|err| self.lab.expr_error(expr, format!("{what}: {err}")))
    }

    /// Evaluates `expr` into the unsigned type `T`, refusing negative or too large values.
    fn eval_into<T: TryFrom<i64>>(
        &self,
        expr: &Expr,
        what: &str,
        env: &Params,
    ) -> Result<T, LabError> {
        let value = self.eval(expr, what, env)?;
        T::try_from(value).map_err(|_| {
            self.lab.expr_error(
                expr,
                format!(
                    "{what} `{expr}` is {value}, out of range (at most {})",
                    std::any::type_name::<T>()
                ),
            )
        })
    }

    fn buffers(&self) -> Result<Vec<BufferPlan>, LabError> {
        let env = self.env(None);
        self.lab
            .buffers
            .iter()
            .map(|spec| {
                let what = format!("buffer `{}` length", spec.name);
                let len: usize = self.eval_into(&spec.len, &what, &env)?;
                let bytes = len.checked_mul(spec.elem.size()).ok_or_else(|| {
                    self.lab.error_at(
                        spec.len.as_str(),
                        format!("buffer `{}` is too large to address", spec.name),
                    )
                })?;
                Ok(BufferPlan {
                    name: spec.name.clone(),
                    elem: spec.elem,
                    len,
                    bytes,
                    fill: spec.fill,
                })
            })
            .collect()
    }

    fn buffer_index(&self, name: &str, near: &str) -> Result<usize, LabError> {
        self.lab
            .buffers
            .iter()
            .position(|b| b.name == name)
            .ok_or_else(|| {
                self.lab.error_at(
                    near,
                    format!("`{name}` is not a buffer of lab `{}`", self.lab.name),
                )
            })
    }

    fn variant(
        &mut self,
        variant: &VariantSpec,
        buffers: &[BufferPlan],
    ) -> Result<VariantPlan, LabError> {
        let lab = self.lab;
        let env = self.env(Some(variant));
        let check_spec = lab.check_for(variant);
        let check = self.check(variant, check_spec, buffers, &env)?;
        let work = match lab.work_for(variant) {
            Some(spec) => Some(Work {
                count: self.eval_into(&spec.count, "work.count", &env)?,
                unit: spec.unit.clone(),
            }),
            None => None,
        };
        let counter = match lab.counter_for(variant) {
            Some(spec) => Some(CounterPlan {
                buffer: self.buffer_index(&spec.buffer, &spec.buffer)?,
                per: self
                    .eval_into::<u64>(&spec.per, "counter.per", &env)?
                    .max(1),
                unit: spec.unit.clone(),
            }),
            None => None,
        };
        let writes = lab
            .writes_for(variant)
            .into_iter()
            .map(|name| self.buffer_index(name, &variant.anchor()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(VariantPlan {
            name: variant.name.clone(),
            bytes_moved: self.bytes_moved(variant, buffers, &env)?,
            check,
            flush_l2: variant.flush_l2.unwrap_or(lab.flush_l2),
            work,
            counter,
            op: self.op(variant, check_spec, buffers, &env)?,
            writes,
            unsupported: variant
                .required_capability()
                .and_then(|required| super::hardware::unsupported_on(self.target, required)),
            params: VariantParams {
                own: variant.params.clone(),
                sweep: variant.sweep_origin.clone(),
            },
            l2: super::l2::resolve(lab, variant, buffers, &env)?,
        })
    }

    /// The bytes `variant` must move ([`LabSpec::bytes_for`]): a `bytes` expression, or the
    /// elements of its `reads` and `writes` times their element sizes.
    fn bytes_moved(
        &self,
        variant: &VariantSpec,
        buffers: &[BufferPlan],
        env: &Params,
    ) -> Result<u64, LabError> {
        let here = variant.anchor();
        let traffic = match self.lab.bytes_for(variant) {
            Some(BytesMoved::Expr(bytes)) => return self.eval_into(bytes, "bytes", env),
            Some(traffic) => traffic,
            None => {
                return Err(self.lab.variant_error(
                    variant,
                    format!(
                        "variant `{}` moves no bytes the lab knows of: give it or the lab \
                         `bytes`, or `reads` and `writes`",
                        variant.name
                    ),
                ));
            }
        };
        let too_many = || {
            self.lab.variant_error(
                variant,
                format!(
                    "variant `{}`: the bytes it reads and writes overflow",
                    variant.name
                ),
            )
        };
        let mut total = 0u64;
        for (name, count) in traffic.entries() {
            let buffer = &buffers[self.buffer_index(name, &here)?];
            let elements: u64 = match count {
                Some(count) => self.eval_into(count, &format!("elements of `{name}`"), env)?,
                None => buffer.len as u64,
            };
            let bytes = elements
                .checked_mul(buffer.elem.size() as u64)
                .ok_or_else(too_many)?;
            total = total.checked_add(bytes).ok_or_else(too_many)?;
        }
        Ok(total)
    }

    /// The index of `variant`'s check (`spec`), compiling it the first time it is seen. Its
    /// expressions are evaluated over `env`, the variant's.
    fn check(
        &mut self,
        variant: &VariantSpec,
        spec: &CheckSpec,
        buffers: &[BufferPlan],
        env: &Params,
    ) -> Result<usize, LabError> {
        let near = format!("\"{}\"", spec.output());
        let output = self.buffer_index(spec.output(), &near)?;
        let (reference, inputs, default) = match &spec.kind {
            CheckKind::Builtin(builtin) => self.builtin_reference(builtin, &near, env)?,
            CheckKind::Python(python) => self.python_reference(python, buffers, env)?,
            CheckKind::Against(against) if against.against == variant.name => {
                (ReferencePlan::Trusted, Vec::new(), Comparison::EXACT)
            }
            CheckKind::Against(against) => {
                let here = format!("\"{}\"", against.against);
                let trusted = self.lab.variant(&against.against).ok_or_else(|| {
                    self.lab.error_at(
                        &here,
                        format!("no variant `{}` to check against", against.against),
                    )
                })?;
                // Checks go round in no circle (the lab file's validation), so this ends.
                let compiled = self.variant(trusted, buffers)?;
                let reference = ReferencePlan::Variant {
                    name: trusted.name.clone(),
                    variant: Box::new(compiled),
                };
                (reference, Vec::new(), Comparison::EXACT)
            }
        };
        let comparison = match &spec.compare {
            Some(compare) => Comparison {
                rule: compare.rule,
                sample_stride: match &compare.every {
                    Some(every) => self.eval_into(every, "compare.every", env)?,
                    None => 1,
                },
            },
            None => default,
        };
        let plan = CheckPlan {
            reference,
            inputs,
            output,
            comparison,
        };
        Ok(match self.checks.iter().position(|c| *c == plan) {
            Some(index) => index,
            None => {
                self.checks.push(plan);
                self.checks.len() - 1
            }
        })
    }

    /// A built-in reference: its inputs, its evaluated size arguments, its own comparison.
    fn builtin_reference(
        &self,
        builtin: &BuiltinCheck,
        near: &str,
        env: &Params,
    ) -> Result<(ReferencePlan, Vec<usize>, Comparison), LabError> {
        let name = builtin.reference_name();
        let reference = references::find(name).ok_or_else(|| {
            self.lab
                .error_at(near, format!("no reference named `{name}`"))
        })?;
        let inputs = builtin
            .inputs()
            .iter()
            .map(|name| self.buffer_index(name, &format!("\"{name}\"")))
            .collect::<Result<Vec<_>, _>>()?;
        let mut args = Params::new();
        for (name, expr) in builtin.exprs() {
            args.insert(
                name.to_string(),
                self.eval(expr, &format!("check.{name}"), env)?,
            );
        }
        let comparison = reference.comparison(&args);
        let reference = ReferencePlan::Builtin {
            name: reference.name().to_string(),
            args,
        };
        Ok((reference, inputs, comparison))
    }

    /// A NumPy reference: its block, its inputs (every filled buffer unless the check names
    /// them) and the values it receives; bit for bit unless the check says otherwise.
    fn python_reference(
        &self,
        python: &PythonCheck,
        buffers: &[BufferPlan],
        env: &Params,
    ) -> Result<(ReferencePlan, Vec<usize>, Comparison), LabError> {
        let here = format!("\"{}\"", python.python);
        let block = self.kernels.get(&python.python).ok_or_else(|| {
            self.lab.error_at(
                &here,
                format!(
                    "the check's reference `{0}` is not in the book (no ```python reference={0} block)",
                    python.python
                ),
            )
        })?;
        if block.language != Language::PythonReference {
            return Err(self.lab.error_at(
                &here,
                format!(
                    "`{}` is a kernel, not a ```python reference= block",
                    python.python
                ),
            ));
        }
        let inputs = match &python.inputs {
            Some(names) => names
                .iter()
                .map(|name| self.buffer_index(name, &format!("\"{name}\"")))
                .collect::<Result<Vec<_>, _>>()?,
            None => (0..buffers.len())
                .filter(|&i| buffers[i].fill != Fill::Poison)
                .collect(),
        };
        // The lab's and the variant's parameters (not the device's properties: a reference
        // computes what the kernel must, whatever GPU runs it).
        let mut params: BTreeMap<String, f64> = env
            .iter()
            .filter(|(name, _)| !DeviceParams::is_name(name))
            .map(|(name, value)| (name.clone(), *value as f64))
            .collect();
        for (name, value) in &python.args {
            let value = match value {
                ArgValue::Number(number) => *number,
                ArgValue::Expr(expr) => self.eval(expr, &format!("check.args.{name}"), env)? as f64,
            };
            params.insert(name.clone(), value);
        }
        let reference = ReferencePlan::Python {
            block: block.clone(),
            params,
        };
        Ok((reference, inputs, Comparison::EXACT))
    }

    fn op(
        &mut self,
        variant: &VariantSpec,
        check: &CheckSpec,
        buffers: &[BufferPlan],
        env: &Params,
    ) -> Result<OpPlan, LabError> {
        let here = variant.anchor();
        let (Some(builtin), None) = (variant.builtin, &variant.kernel) else {
            let op = self.kernel_op(variant, env)?;
            return self
                .pipelined(op, variant, check, buffers)
                .map(OpPlan::Kernel);
        };
        // The lab's validation checked the arguments against the builtin's descriptor.
        if let Some(precision) = GemmPrecision::of(builtin) {
            return self
                .gemm(variant, buffers, env, precision)
                .map(OpPlan::LibrarySgemm);
        }
        let [dst, src] = match variant.args.as_slice() {
            [dst, src] => [
                self.buffer_index(dst, &here)?,
                self.buffer_index(src, &here)?,
            ],
            _ => {
                let takes = builtin.descriptor().args.words();
                return Err(self
                    .lab
                    .error_at(&here, format!("this builtin takes {takes}")));
            }
        };
        // A copy moves the check's input, whole: the reference's expected output is that input.
        let copied = || -> Result<usize, LabError> {
            let input = check
                .as_builtin()
                .and_then(|builtin| builtin.inputs().first().copied())
                .unwrap_or(check.output());
            Ok(buffers[self.buffer_index(input, &here)?].bytes)
        };
        let host = |direction, pinned| -> Result<OpPlan, LabError> {
            Ok(OpPlan::HostCopy(HostCopyOp {
                direction,
                pinned,
                dst,
                src,
                bytes: copied()?,
            }))
        };
        match builtin {
            Builtin::Memcpy => Ok(OpPlan::DeviceCopy(DeviceCopyOp {
                dst,
                src,
                bytes: copied()?,
            })),
            Builtin::HostToDevicePageable => host(Direction::HostToDevice, false),
            Builtin::HostToDevicePinned => host(Direction::HostToDevice, true),
            Builtin::DeviceToHostPageable => host(Direction::DeviceToHost, false),
            Builtin::DeviceToHostPinned => host(Direction::DeviceToHost, true),
            Builtin::LibrarySgemm | Builtin::LibraryGemmBf16 => Err(self
                .lab
                .error_at(&here, "a matrix product takes `args = [c, a, b, m, n, k]`")),
            Builtin::TorchSum => self
                .sum(check, &buffers[src], &here)
                .map(|params| OpPlan::Python(PythonOp::job(builtin, params, None))),
            Builtin::LibraryTranspose => {
                let (rows, cols) = self.transpose_shape(check, &here, env)?;
                Ok(OpPlan::LibraryTranspose(TransposeOp {
                    dst,
                    src,
                    rows,
                    cols,
                }))
            }
            Builtin::TorchTranspose | Builtin::PythonTranspose => {
                let (rows, cols) = self.transpose_shape(check, &here, env)?;
                let script = match &variant.script {
                    Some(name) => Some(self.source(name.get_ref(), name.get_ref())?.clone()),
                    None => None,
                };
                let params = [("rows", rows as f64), ("cols", cols as f64)];
                Ok(OpPlan::Python(PythonOp::job(builtin, params, script)))
            }
        }
    }

    /// `torch.sum` of a vector as long as `src` (f32), within the tolerance of the check.
    fn sum(
        &self,
        check: &CheckSpec,
        src: &BufferPlan,
        near: &str,
    ) -> Result<[(&'static str, f64); 3], LabError> {
        if src.elem != ElemType::F32 {
            return Err(self.lab.error_at(
                near,
                format!(
                    "torch_sum sums f32: buffer `{}` holds {:?}",
                    src.name, src.elem
                ),
            ));
        }
        let (rtol, atol) = match check.compare.as_ref().map(|compare| compare.rule) {
            Some(CompareRule::Close { rtol, atol }) => (rtol, atol),
            _ => (0.0, 0.0),
        };
        Ok([("n", src.len as f64), ("rtol", rtol), ("atol", atol)])
    }

    /// `args = [c, a, b, m, n, k]`, evaluated, with each buffer holding its matrix.
    fn gemm(
        &self,
        variant: &VariantSpec,
        buffers: &[BufferPlan],
        env: &Params,
        precision: GemmPrecision,
    ) -> Result<GemmOp, LabError> {
        let here = variant.anchor();
        let name = variant.builtin.map_or("a matrix product", Builtin::name);
        let [c, a, b, m, n, k] = variant.args.as_slice() else {
            let takes = ArgShape::Gemm.words();
            return Err(self
                .lab
                .variant_error(variant, format!("{name} takes {takes}")));
        };
        let size = |text: &String| -> Result<usize, LabError> {
            self.eval_into(&Expr::new(text.as_str()), &format!("{name} size"), env)
        };
        let op = GemmOp {
            c: self.buffer_index(c, &here)?,
            a: self.buffer_index(a, &here)?,
            b: self.buffer_index(b, &here)?,
            m: size(m)?,
            n: size(n)?,
            k: size(k)?,
            precision,
        };
        let needs = [
            (op.c, op.m * op.n),
            (op.a, op.m * op.k),
            (op.b, op.k * op.n),
        ];
        for (index, floats) in needs {
            let buffer = &buffers[index];
            if buffer.elem != ElemType::F32 || buffer.len < floats {
                return Err(self.lab.variant_error(
                    variant,
                    format!(
                        "{name}: buffer `{}` must hold {floats} f32 elements; it has {} {:?}",
                        buffer.name, buffer.len, buffer.elem
                    ),
                ));
            }
        }
        Ok(op)
    }

    fn transpose_shape(
        &self,
        check: &CheckSpec,
        near: &str,
        env: &Params,
    ) -> Result<(usize, usize), LabError> {
        match check.as_builtin() {
            Some(BuiltinCheck::Transpose { rows, cols, .. }) => Ok((
                self.eval_into(rows, "check.rows", env)?,
                self.eval_into(cols, "check.cols", env)?,
            )),
            _ => Err(self.lab.error_at(
                near,
                "this builtin needs a transpose check, which gives the matrix's shape",
            )),
        }
    }

    fn source(&self, name: &str, near: &str) -> Result<&KernelSource, LabError> {
        self.kernels.get(name).ok_or_else(|| {
            self.lab.error_at(
                &format!("\"{near}\""),
                format!("kernel `{name}` is not in the book (no ```cuda kernel={name} block)"),
            )
        })
    }

    fn kernel_op(&mut self, variant: &VariantSpec, env: &Params) -> Result<KernelOp, LabError> {
        let Some(kernel) = variant.kernel.as_ref() else {
            return Err(self.lab.variant_error(
                variant,
                format!(
                    "variant `{}` needs `kernel = \"...\"` or a builtin",
                    variant.name
                ),
            ));
        };
        let main = Launch {
            kernel: kernel.get_ref(),
            grid: &variant.grid,
            block: &variant.block,
            shared_bytes: variant.shared_bytes.as_ref(),
            args: &variant.args,
            defines: &variant.defines,
        };
        let launches = |this: &mut Self, list: &[LaunchSpec]| {
            list.iter()
                .map(|l| this.launch(&Launch::of(l), variant, env))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(KernelOp {
            setup: launches(self, &variant.setup)?,
            main: self.launch(&main, variant, env)?,
            then: launches(self, &variant.then)?,
            pipeline: None,
        })
    }

    fn launch(
        &mut self,
        launch: &Launch<'_>,
        spec: &VariantSpec,
        env: &Params,
    ) -> Result<LaunchPlan, LabError> {
        let source = self.source(launch.kernel, launch.kernel)?.clone();
        let build = KernelBuild {
            key: launch.kernel.to_string(),
            source,
            flags: compile_flags(&self.lab.compile_flags, launch.defines),
        };
        let build = match self.builds.iter().position(|b| *b == build) {
            Some(index) => index,
            None => {
                self.builds.push(build);
                self.builds.len() - 1
            }
        };
        let grid = self.dims(launch.grid, "grid", spec, &self.target.max_grid, env)?;
        let max_block = [self.target.max_threads_per_block, 1024, 64];
        let block = self.dims(launch.block, "block", spec, &max_block, env)?;
        let threads: u64 = block.iter().map(|&d| u64::from(d)).product();
        let variant = &spec.name;
        if threads > u64::from(self.target.max_threads_per_block) {
            return Err(self.lab.variant_error(
                spec,
                format!(
                    "variant `{variant}`: a block of {threads} threads is more than the {} a block may have",
                    self.target.max_threads_per_block
                ),
            ));
        }
        let shared_bytes: u32 = match launch.shared_bytes {
            Some(expr) => self.eval_into(expr, "shared_bytes", env)?,
            None => 0,
        };
        if u64::from(shared_bytes) > self.target.max_shared_bytes_per_block {
            return Err(self.lab.variant_error(
                spec,
                format!(
                    "variant `{variant}`: {shared_bytes} bytes of dynamic shared memory per block; \
                     the device allows at most {}",
                    self.target.max_shared_bytes_per_block
                ),
            ));
        }
        Ok(LaunchPlan {
            build,
            grid,
            block,
            shared_bytes,
            args: self.args(launch.args, env)?,
        })
    }

    fn dims(
        &self,
        exprs: &[Expr],
        what: &str,
        spec: &VariantSpec,
        limits: &[u32; 3],
        env: &Params,
    ) -> Result<[u32; 3], LabError> {
        let variant = &spec.name;
        if exprs.is_empty() || exprs.len() > 3 {
            return Err(self.lab.variant_error(
                spec,
                format!("variant `{variant}`: `{what}` needs 1 to 3 dimensions"),
            ));
        }
        let mut out = [1u32; 3];
        for ((slot, expr), limit) in out.iter_mut().zip(exprs).zip(limits) {
            let value = self.eval(expr, &format!("variant `{variant}`: {what}"), env)?;
            if value < 1 || value > i64::from(*limit) {
                return Err(self.lab.variant_error(
                    spec,
                    format!(
                        "variant `{variant}`: {what} dimension `{expr}` is {value}; the device allows 1 to {limit}"
                    ),
                ));
            }
            *slot = value as u32;
        }
        Ok(out)
    }

    fn args(&self, args: &[String], env: &Params) -> Result<Vec<ArgPlan>, LabError> {
        self.lab
            .parse_args(args)?
            .iter()
            .map(|arg| match arg {
                ArgSpec::Buffer(name) => Ok(ArgPlan::Buffer(self.buffer_index(name, name)?)),
                ArgSpec::TensorMap(name) => self
                    .tensor_maps
                    .iter()
                    .position(|map| &map.name == name)
                    .map(ArgPlan::TensorMap)
                    .ok_or_else(|| self.lab.error_at(name, format!("no tensor map `{name}`"))),
                ArgSpec::Scalar { expr, ty } => self.scalar(expr, *ty, env),
                // A literal's value was rounded to its type once, when the lab was parsed.
                ArgSpec::Float { value, ty } => Ok(match ty {
                    ScalarType::F32 => ArgPlan::F32(*value as f32),
                    _ => ArgPlan::F64(*value),
                }),
            })
            .collect()
    }

    fn scalar(&self, expr: &Expr, ty: ScalarType, env: &Params) -> Result<ArgPlan, LabError> {
        let what = "argument";
        // Integers up to 2^24 are exact in f32 (2^53 in f64); past that the kernel would get
        // another number than the lab file says.
        let exact = |bits: u32, name: &str| -> Result<i64, LabError> {
            let value = self.eval(expr, what, env)?;
            if value.unsigned_abs() > 1 << bits {
                return Err(self.lab.expr_error(
                    expr,
                    format!("argument `{expr}` = {value} is not exact as an {name}"),
                ));
            }
            Ok(value)
        };
        Ok(match ty {
            ScalarType::I32 => ArgPlan::I32(self.eval_into(expr, what, env)?),
            ScalarType::I64 => ArgPlan::I64(self.eval(expr, what, env)?),
            ScalarType::U32 => ArgPlan::U32(self.eval_into(expr, what, env)?),
            ScalarType::U64 => ArgPlan::U64(self.eval_into(expr, what, env)?),
            ScalarType::F32 => ArgPlan::F32(exact(24, "f32")? as f32),
            ScalarType::F64 => ArgPlan::F64(exact(53, "f64")? as f64),
        })
    }
}

/// One launch as the lab file writes it: a variant's own, or a `setup`/`then` entry.
struct Launch<'a> {
    kernel: &'a str,
    grid: &'a [Expr],
    block: &'a [Expr],
    shared_bytes: Option<&'a Expr>,
    args: &'a [String],
    defines: &'a BTreeMap<String, String>,
}

impl<'a> Launch<'a> {
    fn of(launch: &'a LaunchSpec) -> Launch<'a> {
        Launch {
            kernel: launch.kernel_name(),
            grid: &launch.grid,
            block: &launch.block,
            shared_bytes: launch.shared_bytes.as_ref(),
            args: &launch.args,
            defines: &launch.defines,
        }
    }
}
