// Tangled by `kernelbook tangle` from book/src/practice/llm-connection.md:91 (sha256 e15b5466d4c7e8f8). Edit the book, not this file.
// Unfused, stage 2 of 3: GELU, tanh approximation.
extern "C" __global__ void gelu_act(float *__restrict__ y, const float *__restrict__ x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
    }
}
