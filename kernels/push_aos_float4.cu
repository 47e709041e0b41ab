// Tangled by `kernelbook tangle` from book/src/labs/layout.md:126 (sha256 a2706cba8e72da53). Edit the book, not this file.
// The array of structures read whole: two float4 loads per particle, (x, y, z, vx) and
// (vy, vz, m, q).
extern "C" __global__ void push_aos_float4(float *__restrict__ x_out,
                                           const float4 *__restrict__ p, int n, float dt,
                                           float e) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float4 lo = p[2 * (size_t)i], hi = p[2 * (size_t)i + 1];
        x_out[i] = lo.x + dt * (lo.w + dt * hi.w * e);
    }
}
