// Tangled by `kernelbook tangle` from book/src/labs/host-device.md:210 (sha256 2715e0eb024d4c11). Edit the book, not this file.
// One chunk of a pipelined row: elements first .. first + count of `in`, each put through
// `iters` dependent multiplies by `one` (1.0 at run time: work the compiler cannot drop, whose
// result is exact) and negated into `out`.
extern "C" __global__ void pipeline_work(float *__restrict__ out,
                                         const float *__restrict__ in,
                                         float one, int iters,
                                         long long first, int count) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    float x = in[first + i];
    for (int k = 0; k < iters; ++k) x *= one;
    out[first + i] = -x;
}
