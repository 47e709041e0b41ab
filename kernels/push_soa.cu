// Tangled by `kernelbook tangle` from book/src/labs/layout.md:140 (sha256 38847c72458c23a9). Edit the book, not this file.
// A structure of arrays: field f of particle i at soa[f * n + i]; each field read is a
// coalesced stream, lanes 4 bytes apart.
extern "C" __global__ void push_soa(float *__restrict__ x_out, const float *__restrict__ soa,
                                    int n, float dt, float e) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float *x = soa, *vx = soa + 3 * (size_t)n, *q = soa + 7 * (size_t)n;
    if (i < n) x_out[i] = x[i] + dt * (vx[i] + dt * q[i] * e);
}
