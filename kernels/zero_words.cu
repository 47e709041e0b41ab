// Tangled by `kernelbook tangle` from book/src/labs/hierarchy-on-your-gpu.md:233 (sha256 f1a48cf87a088f6c). Edit the book, not this file.
// Clears the sum before the checked run (setup, untimed).
extern "C" __global__ void zero_words(unsigned *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 0;
}
