// Tangled by `kernelbook tangle` from book/src/labs/reduction.md:305 (sha256 c8fb19866b0113d6). Edit the book, not this file.
// Clears the total before the checked run of the atomic rung (setup, untimed).
extern "C" __global__ void zero_floats(float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 0.0f;
}
