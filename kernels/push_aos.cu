// Tangled by `kernelbook tangle` from book/src/labs/layout.md:110 (sha256 a5c6d59f810ad20c). Edit the book, not this file.
// An array of 32-byte structures: lane i reads three fields of particle i, 32 bytes from its
// neighbours' (stride 8 in floats).
struct Particle {
    float x, y, z, vx, vy, vz, m, q;
};

extern "C" __global__ void push_aos(float *__restrict__ x_out, const Particle *__restrict__ p,
                                    int n, float dt, float e) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x_out[i] = p[i].x + dt * (p[i].vx + dt * p[i].q * e);
}
