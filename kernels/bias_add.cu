// Tangled by `kernelbook tangle` from book/src/practice/llm-connection.md:82 (sha256 51b195707f392a0e). Edit the book, not this file.
// Unfused, stage 1 of 3: y = x + bias (bias per column). Reads and writes the whole tensor.
extern "C" __global__ void bias_add(float *__restrict__ y, const float *__restrict__ x,
                                    const float *__restrict__ bias, int n, int cols) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + bias[i % cols];
}
