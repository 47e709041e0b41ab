// Tangled by `kernelbook tangle` from book/src/labs/hierarchy-on-your-gpu.md:207 (sha256 ee675e3f1612713d). Edit the book, not this file.
extern "C" __global__ void read_sum(unsigned *out, const uint4 *in,
                                    unsigned long long n4, int reps) {
    unsigned sum = 0;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
#pragma unroll 1
    for (int r = 0; r < reps; ++r) {
        // Pass r: this block reads the slice block (b + r) mod G read in pass 0.
        unsigned long long slice = (blockIdx.x + r) % gridDim.x;
        for (unsigned long long i = slice * blockDim.x + threadIdx.x; i < n4; i += stride) {
            uint4 v = in[i];
            sum += v.x + v.y + v.z + v.w;
        }
    }
    // Block-wide sum in shared memory (blocks of 256 threads), then one atomic per block.
    __shared__ unsigned partial[256];
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int half = 128; half > 0; half >>= 1) {
        if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(out, partial[0]);
}
